#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many nodes a run remembers from redirects, to ask where a slot went when its owner and the
 * seeds cannot be reached. */
#define CLUSTER_KNOWN_MAX 8

struct cluster {
	const struct redis_url *url;
	struct redis_url target; /* url's credentials, at the owner or a seed (host owned) */
	struct redis_url ask;    /* the same, where an -ASK pointed (host owned) */
	size_t seed;             /* the place tried last: a seed, then a known node */
	bool owner_known;
	struct {
		char host[256];
		unsigned port;
	} known[CLUSTER_KNOWN_MAX]; /* nodes redirects named, the first ones */
	size_t nknown;
};

/* How many seeds the URL names: a server URL is its own. */
static size_t
seeds(const struct cluster *c)
{
	return c->url->nhosts ? c->url->nhosts : 1;
}

/* A copy of url that shares its strings but owns host: a plain server URL (TCP, or TLS as the
 * URL was), without the seeds. */
static int
aim(struct redis_url *to, const struct redis_url *url, const char *host, unsigned port)
{
	char *h = strdup(host);

	if (!h)
		return -1;
	free(to->host);
	*to = *url;
	to->scheme = url->scheme == URL_UNIX ? URL_TCP : url->scheme;
	to->path = NULL;
	to->cluster = false;
	to->hosts = NULL;
	to->nhosts = 0;
	to->host = h;
	to->port = port;
	return 0;
}

/* The place numbered i: the seed numbered i (the URL itself, for a server URL), or past them, a
 * known node. Its host (NULL for a Unix socket's URL) and *port. */
static const char *
place(const struct cluster *c, size_t i, unsigned *port)
{
	const struct redis_url *u = c->url;

	if (i >= seeds(c)) {
		*port = c->known[i - seeds(c)].port;
		return c->known[i - seeds(c)].host;
	}
	*port = u->nhosts ? u->hosts[i].port : u->port;
	return u->nhosts ? u->hosts[i].host : u->host;
}

/* The place numbered i (see place) becomes the target. */
static int
aim_at_seed(struct cluster *c, size_t i)
{
	const struct redis_url *u = c->url;
	unsigned port;
	const char *host = place(c, i, &port);

	c->seed = i;
	c->owner_known = false;
	if (i < seeds(c) && !u->nhosts && u->scheme == URL_UNIX) { /* back to the socket itself */
		free(c->target.host);
		c->target = *u;
		c->target.host = NULL;
		return 0;
	}
	return aim(&c->target, u, host, port);
}

struct cluster *
cluster_new(const struct redis_url *url)
{
	struct cluster *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->url = url;
	if (aim_at_seed(c, 0) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

void
cluster_free(struct cluster *c)
{
	if (!c)
		return;
	free(c->target.host);
	free(c->ask.host);
	free(c);
}

const struct redis_url *
cluster_target(const struct cluster *c)
{
	return &c->target;
}

/* Reads "… host:port" (the end of a -MOVED or -ASK answer) into host (an empty one or "?":
 * the one talked to now) and *port. */
static int
read_where(const struct cluster *c, const char *where, char *host, size_t size, unsigned *port)
{
	const char *space = strrchr(where, ' '), *colon;
	char *end;
	unsigned long p;
	size_t len;

	if (!space || !(colon = strrchr(space + 1, ':')))
		return -1;
	p = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || (*end && *end != ' ' && *end != '\r') || p == 0 || p > 65535)
		return -1;
	len = (size_t)(colon - (space + 1));
	if (len == 0 || (len == 1 && space[1] == '?')) {
		if (!c->target.host)
			return -1;
		len = strlen(c->target.host);
		where = c->target.host;
	} else {
		where = space + 1;
	}
	if (len >= size)
		return -1;
	memcpy(host, where, len);
	host[len] = '\0';
	*port = (unsigned)p;
	return 0;
}

int
cluster_moved(struct cluster *c, const char *where)
{
	char host[256];
	unsigned port;

	if (read_where(c, where, host, sizeof(host), &port) < 0 ||
	    aim(&c->target, c->url, host, port) < 0)
		return -1;
	c->owner_known = true;
	for (size_t i = 0; i < c->nknown; i++)
		if (c->known[i].port == port && strcmp(c->known[i].host, host) == 0)
			return 0;
	if (c->nknown < CLUSTER_KNOWN_MAX && strlen(host) < sizeof(c->known[0].host)) {
		snprintf(c->known[c->nknown].host, sizeof(c->known[0].host), "%s", host);
		c->known[c->nknown++].port = port;
	}
	return 0;
}

const struct redis_url *
cluster_asked(struct cluster *c, const char *where)
{
	char host[256];
	unsigned port;

	if (read_where(c, where, host, sizeof(host), &port) < 0 ||
	    aim(&c->ask, c->url, host, port) < 0)
		return NULL;
	return &c->ask;
}

bool
cluster_elsewhere(struct cluster *c)
{
	size_t n = seeds(c) + c->nknown;

	for (size_t k = 1; k <= n; k++) {
		size_t i = (c->seed + k) % n;
		unsigned port;
		const char *host = place(c, i, &port);
		if (host && c->target.host &&
		    (port != c->target.port || strcmp(host, c->target.host) != 0))
			return aim_at_seed(c, i) == 0;
	}
	return false;
}

bool
cluster_next_seed(struct cluster *c)
{
	size_t n = seeds(c) + c->nknown;

	if (n == 1 && !c->owner_known)
		return false;
	return aim_at_seed(c, c->owner_known ? c->seed : (c->seed + 1) % n) == 0;
}
