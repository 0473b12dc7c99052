/*
 * Where Redis is: redis://[user[:password]@]host[:port][/db], rediss://… (TLS), or
 * unix://[user[:password]@]/path/to/redis.sock[?db=N]. User and password may be
 * percent-encoded.
 */
#ifndef REDLOCK_URL_H
#define REDLOCK_URL_H

#include <stdbool.h>
#include <stddef.h>

enum url_scheme {
	URL_TCP,
	URL_TLS,
	URL_UNIX,
};

struct redis_url {
	enum url_scheme scheme;
	char *host;     /* TCP and TLS: a name or an address literal, without brackets */
	unsigned port;  /* TCP and TLS */
	char *path;     /* UNIX: the socket's path */
	char *user;     /* ACL user, or NULL */
	char *password; /* or NULL */
	int db;         /* 0 unless the URL selects another */
};

#define URL_DEFAULT "redis://127.0.0.1:6379"
/* The most servers one lock may live on (a Redlock quorum), and what separates their URLs in
 * one string. */
#define URL_LIST_MAX 16
#define URL_BLANKS " \t\n"
#define URL_DEFAULT_PORT 6379

/*
 * Parses s into *url, whose strings are then owned by it (url_free). On failure returns -1
 * with a message for "invalid Redis URL '…': <message>" in err, and leaves *url empty.
 */
int url_parse(const char *s, struct redis_url *url, char *err, size_t errsize);
void url_free(struct redis_url *url);

/* Writes where the URL points, for messages: "127.0.0.1:6379", "[::1]:6380",
 * "/run/redis.sock". Never the password. */
const char *url_address(const struct redis_url *url, char *buf, size_t size);

#endif
