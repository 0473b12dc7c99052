/*
 * Where Redis is: redis://[user[:password]@]host[:port][/db], rediss://… (TLS), or
 * unix://[user[:password]@]/path/to/redis.sock[?db=N]; or the master that Sentinels name,
 * redis+sentinel://[user[:password]@]host[:port][,host[:port]…]/MASTER[/db] and
 * rediss+sentinel://… (TLS to the Sentinels and to the master); or a Redis Cluster through its
 * seeds, redis+cluster://[user[:password]@]host[:port][,host[:port]…][/0] and
 * rediss+cluster://…. User and password may be
 * percent-encoded; they are the server's (the master's), never the Sentinels'.
 */
#ifndef REDLOCK_URL_H
#define REDLOCK_URL_H

#include <stdbool.h>
#include <stdbool.h>
#include <stddef.h>

enum url_scheme {
	URL_TCP,
	URL_TLS,
	URL_UNIX,
};

/* One Sentinel. */
struct url_host {
	char *host;
	unsigned port;
};

struct redis_url {
	enum url_scheme scheme; /* how the server is reached (and a Sentinel URL's Sentinels) */
	char *host;             /* TCP and TLS: a name or an address literal, without brackets */
	unsigned port;          /* TCP and TLS */
	char *path;             /* UNIX: the socket's path */
	char *user;             /* ACL user, or NULL */
	char *password;         /* or NULL */
	int db;                 /* 0 unless the URL selects another */
	/* A Sentinel URL: host and port above are unset, and the server is the master that the
	 * Sentinels in hosts name. A cluster URL: hosts are its seeds, host and port above the
	 * first of them. */
	char *master; /* the master's name; NULL but for a Sentinel URL */
	bool cluster;
	struct url_host *hosts;
	size_t nhosts;
	char *sentinel_user, *sentinel_password; /* set by the caller, or NULL */
	/* Where password came from, when not from the URL ("$REDLOCK_PASSWORD", "--password-file
	 * /run/secret"), for a message that says which one a server refused; or NULL. */
	const char *password_from;
};

#define URL_DEFAULT "redis://127.0.0.1:6379"
/* The most servers one lock may live on (a Redlock quorum), and what separates their URLs in
 * one string. */
#define URL_LIST_MAX 16
#define URL_BLANKS " \t\n"
#define URL_DEFAULT_PORT 6379
#define URL_SENTINEL_PORT 26379
#define URL_HOSTS_MAX 16

/*
 * Parses s into *url, whose strings are then owned by it (url_free). On failure returns -1
 * with a message for "invalid Redis URL '…': <message>" in err, and leaves *url empty.
 */
int url_parse(const char *s, struct redis_url *url, char *err, size_t errsize);
void url_free(struct redis_url *url);

/* Writes where the URL points, for messages: "127.0.0.1:6379", "[::1]:6380",
 * "/run/redis.sock", "master 'mymaster' (Sentinels 10.0.0.1:26379,10.0.0.2:26379)". Never the
 * password. */
const char *url_address(const struct redis_url *url, char *buf, size_t size);

#endif
