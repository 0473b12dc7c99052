#include "url.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "util.h"

enum kind {
	SERVER,
	SENTINEL,
	CLUSTER,
};

static const struct {
	const char *prefix;
	enum url_scheme scheme;
	enum kind kind;
} schemes[] = {
	{ "redis://", URL_TCP, SERVER },
	{ "rediss://", URL_TLS, SERVER },
	{ "unix://", URL_UNIX, SERVER },
	{ "redis+sentinel://", URL_TCP, SENTINEL },
	{ "rediss+sentinel://", URL_TLS, SENTINEL },
	{ "redis+cluster://", URL_TCP, CLUSTER },
	{ "rediss+cluster://", URL_TLS, CLUSTER },
};

static int fail(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
fail(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -1;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Copies s[0..len) into a new string, decoding %XX; NULL if the encoding is bad or
 * decodes to a NUL byte. */
static char *
percent_decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		int hi = i + 2 < len ? hex_value(s[i + 1]) : -1;
		int lo = i + 2 < len ? hex_value(s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			return NULL;
		}
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*o = '\0';
	return out;
}

/* Parses "user[:password]" (either part may be empty: then it is absent). */
static int
parse_userinfo(struct redis_url *url, const char *s, size_t len, char *err, size_t size)
{
	const char *colon = memchr(s, ':', len);
	size_t user_len = colon ? (size_t)(colon - s) : len;

	if (user_len && !(url->user = percent_decode(s, user_len)))
		return fail(err, size, "bad percent-encoding in the user name");
	if (colon && len - user_len > 1 &&
	    !(url->password = percent_decode(colon + 1, len - user_len - 1)))
		return fail(err, size, "bad percent-encoding in the password");
	return 0;
}

/* Parses a decimal number of at most max; s[0..len) must be all digits. */
static int
parse_number(const char *s, size_t len, long max, long *out)
{
	long n = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		n = n * 10 + (s[i] - '0');
		if (n > max)
			return -1;
	}
	*out = n;
	return 0;
}

static int
parse_db(struct redis_url *url, const char *s, size_t len, char *err, size_t size)
{
	long db;

	if (parse_number(s, len, INT_MAX, &db) < 0)
		return fail(err, size, "the db must be a number (0 or more), not '%.*s'", (int)len,
			    s);
	url->db = (int)db;
	return 0;
}

static int
parse_host_port(struct redis_url *url, const char *s, size_t len, unsigned default_port, char *err,
		size_t size)
{
	const char *host = s, *rest;
	size_t host_len;
	long port;

	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		char addr[INET6_ADDRSTRLEN];
		struct in6_addr in6;

		if (!close)
			return fail(err, size, "missing ']' after the IPv6 address");
		host = s + 1;
		host_len = (size_t)(close - host);
		if (host_len >= sizeof(addr))
			return fail(err, size, "bad IPv6 address");
		memcpy(addr, host, host_len);
		addr[host_len] = '\0';
		if (inet_pton(AF_INET6, addr, &in6) != 1)
			return fail(err, size, "bad IPv6 address '%s'", addr);
		rest = close + 1;
	} else {
		const char *colon = memchr(s, ':', len);
		/* ("::1:6379", "fe80::1": hex digits, then a second colon) */
		if (colon && strspn(s, "0123456789abcdefABCDEF") == (size_t)(colon - s) &&
		    memchr(colon + 1, ':', (size_t)(s + len - colon - 1)))
			return fail(err, size,
				    "an IPv6 address goes in brackets, as in redis://[::1]:6379");
		host_len = colon ? (size_t)(colon - s) : len;
		for (size_t i = 0; i < host_len; i++) {
			char c = s[i];
			if (!(c == '.' || c == '-' || c == '_' || (c >= '0' && c <= '9') ||
			      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
				return fail(err, size, "bad character '%c' in the host name", c);
		}
		rest = s + host_len;
	}
	if (host_len == 0)
		return fail(err, size, "missing host");
	url->port = default_port;
	if (rest < s + len) {
		if (*rest != ':')
			return fail(err, size, "unexpected '%c' after the host", *rest);
		rest++;
		if (parse_number(rest, (size_t)(s + len - rest), 65535, &port) < 0 || port == 0)
			return fail(err, size,
				    "the port must be a number from 1 to 65535, not '%.*s'",
				    (int)(s + len - rest), rest);
		url->port = (unsigned)port;
	}
	if (!(url->host = strndup(host, host_len)))
		return fail(err, size, "out of memory");
	return 0;
}

/* redis://[user[:password]@]host[:port][/db] and rediss://… */
static int
parse_tcp(struct redis_url *url, const char *s, char *err, size_t size)
{
	/* The userinfo ends at the last '@': no host, port or db has one, and a password may
	 * hold '@', '/', '?' or '#' unencoded. Nothing before it ever appears in a message. */
	const char *at = strrchr(s, '@'), *host = at ? at + 1 : s;
	const char *path = host + strcspn(host, "/?#");

	if (at && parse_userinfo(url, s, (size_t)(at - s), err, size) < 0)
		return -1;
	if (parse_host_port(url, host, (size_t)(path - host), URL_DEFAULT_PORT, err, size) < 0)
		return -1;
	if (*path == '\0')
		return 0;
	if (*path != '/')
		return fail(err, size, "unexpected '%s' after the address", path);
	if (path[1] == '\0')
		return 0;
	return parse_db(url, path + 1, strlen(path + 1), err, size);
}

/* The Sentinels of a Sentinel URL, or the seeds of a cluster URL: "host[:port][,host[:port]…]",
 * each on default_port unless it says otherwise. */
static int
parse_hosts(struct redis_url *url, const char *s, size_t len, unsigned default_port,
	    const char *what, char *err, size_t size)
{
	size_t n = 1;

	for (size_t i = 0; i < len; i++)
		n += s[i] == ',';
	if (n > URL_HOSTS_MAX)
		return fail(err, size, "at most %d %s", URL_HOSTS_MAX, what);
	if (!(url->hosts = calloc(n, sizeof(*url->hosts))))
		return fail(err, size, "out of memory");
	for (const char *p = s, *end = s + len; url->nhosts < n; p++) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		struct redis_url one = { 0 };
		size_t piece = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (parse_host_port(&one, p, piece, default_port, err, size) < 0)
			return -1;
		url->hosts[url->nhosts].host = one.host;
		url->hosts[url->nhosts++].port = one.port;
		p += piece;
	}
	return 0;
}

/* redis+sentinel://[user[:password]@]host[:port][,host[:port]…]/MASTER[/db] and
 * rediss+sentinel://… */
static int
parse_sentinel(struct redis_url *url, const char *s, char *err, size_t size)
{
	const char *at = strrchr(s, '@'), *hosts = at ? at + 1 : s;
	const char *path = hosts + strcspn(hosts, "/?#"), *name, *slash;

	if (at && parse_userinfo(url, s, (size_t)(at - s), err, size) < 0)
		return -1;
	if (parse_hosts(url, hosts, (size_t)(path - hosts), URL_SENTINEL_PORT, "Sentinels", err,
			size) < 0)
		return -1;
	if (*path != '/' || path[1] == '\0' || path[1] == '/')
		return fail(err, size, "missing the master's name (…/MASTER after the Sentinels)");
	name = path + 1;
	slash = strchr(name, '/');
	if (!(url->master = percent_decode(name, slash ? (size_t)(slash - name) : strlen(name))))
		return fail(err, size, "bad percent-encoding in the master's name");
	if (!slash || slash[1] == '\0')
		return 0;
	return parse_db(url, slash + 1, strlen(slash + 1), err, size);
}

/* redis+cluster://[user[:password]@]host[:port][,host[:port]…][/0] and rediss+cluster://… */
static int
parse_cluster(struct redis_url *url, const char *s, char *err, size_t size)
{
	const char *at = strrchr(s, '@'), *hosts = at ? at + 1 : s;
	const char *path = hosts + strcspn(hosts, "/?#");

	url->cluster = true;
	if (at && parse_userinfo(url, s, (size_t)(at - s), err, size) < 0)
		return -1;
	if (parse_hosts(url, hosts, (size_t)(path - hosts), URL_DEFAULT_PORT, "seeds", err, size) <
	    0)
		return -1;
	if (!(url->host = strdup(url->hosts[0].host)))
		return fail(err, size, "out of memory");
	url->port = url->hosts[0].port;
	if (*path && *path != '/')
		return fail(err, size, "unexpected '%s' after the seeds", path);
	if (*path && path[1] && parse_db(url, path + 1, strlen(path + 1), err, size) < 0)
		return -1;
	if (url->db != 0)
		return fail(err, size, "a cluster has db 0 only, not %d", url->db);
	return 0;
}

/* unix://[user[:password]@]/path/to/socket[?db=N] */
static int
parse_unix(struct redis_url *url, const char *s, char *err, size_t size)
{
	/* A path right away has no userinfo (and may hold '@'); else the userinfo ends where
	 * the last "@/" starts the path: a password may hold '/' and even "@/", and nothing
	 * of it can end up in the path (which messages name). */
	const char *at = NULL;

	for (const char *p = *s == '/' ? NULL : strstr(s, "@/"); p; p = strstr(p + 1, "@/"))
		at = p;
	const char *path = at ? at + 1 : s, *query;
	size_t path_len;

	if (*path != '/')
		return fail(err, size, "expected unix:///path/to/redis.sock");
	if (at && parse_userinfo(url, s, (size_t)(at - s), err, size) < 0)
		return -1;
	query = strchr(path, '?');
	path_len = query ? (size_t)(query - path) : strlen(path);
	if (path_len < 2)
		return fail(err, size, "missing socket path");
	if (path_len >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return fail(err, size, "the socket path is longer than %zu bytes",
			    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	if (!(url->path = strndup(path, path_len)))
		return fail(err, size, "out of memory");
	if (!query)
		return 0;
	if (strncmp(query, "?db=", 4) != 0)
		return fail(err, size, "unexpected '%s' (the only parameter is ?db=N)", query);
	return parse_db(url, query + 4, strlen(query + 4), err, size);
}

int
url_parse(const char *s, struct redis_url *url, char *err, size_t size)
{
	int r = -1;

	memset(url, 0, sizeof(*url));
	for (size_t i = 0; i < ARRAY_LEN(schemes); i++) {
		size_t n = strlen(schemes[i].prefix);
		if (strncasecmp(s, schemes[i].prefix, n) != 0) /* (RFC 3986: any case) */
			continue;
		url->scheme = schemes[i].scheme;
		switch (schemes[i].kind) {
		case SENTINEL:
			r = parse_sentinel(url, s + n, err, size);
			break;
		case CLUSTER:
			r = parse_cluster(url, s + n, err, size);
			break;
		default:
			r = url->scheme == URL_UNIX ? parse_unix(url, s + n, err, size)
						    : parse_tcp(url, s + n, err, size);
			break;
		}
		if (r < 0)
			url_free(url);
		return r;
	}
	/* What people write for a server without a scheme: a socket's path, or host:port (never
	 * echoed when it may hold a password). */
	if (*s && !strstr(s, "://") && strchr(s, '@'))
		return fail(err, size, "no scheme: did you mean redis://[user:password@]host...?");
	if (*s && !strstr(s, "://") && *s == '/')
		return fail(err, size, "'%s' has no scheme: a Unix socket is unix://%s", s, s);
	if (strncmp(s, "unix:", 5) == 0 && !strstr(s, "://"))
		return fail(err, size, "'%s': a Unix socket is unix://%s", s, s + 5);
	if (*s && !strstr(s, "://"))
		return fail(err, size, "'%s' has no scheme: did you mean redis://%s?", s, s);
	return fail(err, size,
		    "unknown scheme '%.*s' (expected redis://, rediss://, unix://, "
		    "redis+sentinel:// or redis+cluster://)",
		    (int)strcspn(s, ":"), s);
}

static void
free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void
url_free(struct redis_url *url)
{
	free(url->host);
	free(url->path);
	free(url->user);
	free_secret(url->password);
	free(url->master);
	for (size_t i = 0; i < url->nhosts; i++)
		free(url->hosts[i].host);
	free(url->hosts);
	free(url->sentinel_user);
	free_secret(url->sentinel_password);
	memset(url, 0, sizeof(*url));
}

/* "host:port", with brackets around an IPv6 address. */
static size_t
host_port(char *buf, size_t size, const char *host, unsigned port)
{
	int n = snprintf(buf, size, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);

	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - (size > 0);
}

const char *
url_address(const struct redis_url *url, char *buf, size_t size)
{
	size_t len;

	if (url->master) {
		len = (size_t)snprintf(buf, size, "master '%s' (Sentinel%s ", url->master,
				       url->nhosts > 1 ? "s" : "");
		for (size_t i = 0; i < url->nhosts && len + 1 < size; i++) {
			if (i)
				buf[len++] = ',';
			len += host_port(buf + len, size - len, url->hosts[i].host,
					 url->hosts[i].port);
		}
		if (len + 1 < size)
			snprintf(buf + len, size - len, ")");
	} else if (url->scheme == URL_UNIX) {
		snprintf(buf, size, "%s", url->path);
	} else {
		host_port(buf, size, url->host, url->port);
	}
	return buf;
}
