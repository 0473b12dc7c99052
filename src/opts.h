/*
 * The command line: parsed and validated without side effects (nothing printed, nothing
 * opened), so every rule here is unit-testable and bad input never reaches Redis.
 */
#ifndef REDLOCK_OPTS_H
#define REDLOCK_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "msg.h"
#include "tls.h"
#include "url.h"

#define OPTS_TTL_DEFAULT (30 * NS_PER_S)
#define OPTS_TTL_MIN (100 * NS_PER_MS)

enum on_lost {
	ON_LOST_TERM,   /* SIGTERM, then SIGKILL after the grace period */
	ON_LOST_KILL,   /* SIGKILL at once */
	ON_LOST_IGNORE, /* a warning; the command runs on (exit 76 all the same) */
};

#define OPTS_GRACE_MAX_DEFAULT (5 * NS_PER_S)
/* A server that has not answered this long after the first request ends the run (69). */
#define OPTS_CONNECT_TIMEOUT_DEFAULT (3 * NS_PER_S)
/* --wait-replicas: at most this many, waited for TTL/10 unless it says otherwise. */
#define OPTS_REPLICAS_MAX 100
#define OPTS_REPLICAS_WAIT_SHARE 10
#define OPTS_LIMIT_MAX 100000

struct opts {
	const char *key;                     /* as in Redis: with the --prefix, if any */
	const char *name;                    /* KEY as given, without it */
	const char *prefix;                  /* the prefix (--prefix, $REDLOCK_PREFIX), or NULL */
	char *prefixed_key;                  /* backs key when there is a prefix */
	char **command;                      /* COMMAND's argv, NULL-terminated */
	struct redis_url urls[URL_LIST_MAX]; /* the servers: one, or a Redlock quorum */
	size_t nurls;
	char password_from[4200];     /* where the URLs' password came from, when not from them */
	char url_password_from[4250]; /* a URL's own: "the URL", and what it went before */
	int64_t ttl;                  /* the lease, in ns */
	int64_t wait;                 /* how long to wait for the lock: ns, 0 (-n), or forever */
	int conflict_status;          /* -E */
	enum on_lost on_lost;
	int64_t grace;            /* SIGTERM to SIGKILL; default the smaller of 5s and TTL/3 */
	int64_t max_hold;         /* 0: no limit */
	int64_t min_hold;         /* the lock stays taken this long after it was acquired; 0 */
	int limit;                /* --limit: up to this many holders at once (1: a lock) */
	bool shared;              /* -s: shared with other shared holders (-x, -e: not) */
	bool queue_given;         /* --queue was given */
	bool latest;              /* --queue latest: only the newest waits (else fifo) */
	bool cancel_running;      /* --cancel-running: the newest also stops the running one */
	int64_t connect_timeout;  /* a server that has not answered by then is not there */
	int replicas;             /* --wait-replicas N: 0, or how many must acknowledge */
	int64_t replicas_timeout; /* and how long they may take (ns) */
	enum msg_level verbosity;
	bool status;           /* --status: say who holds KEY, run nothing */
	bool json;             /* --json, with --status */
	bool brk;              /* --break: end KEY's lock on purpose, run nothing */
	bool list;             /* --list: every lock whose name matches key (a pattern) */
	bool yes;              /* --yes, with --break: do not ask */
	struct tls_config tls; /* --cacert, --cert, ... or their REDLOCK_* variables */
	char *shell_argv[4];   /* backs command for -c: { $SHELL, "-c", STRING, NULL } */
};

enum opts_action {
	OPTS_RUN,
	OPTS_HELP,
	OPTS_VERSION,
	OPTS_USAGE_ERROR, /* err holds one line saying what is wrong */
};

/*
 * Parses argv (and REDLOCK_URL, REDLOCK_PASSWORD, REDLOCK_SENTINEL_USER,
 * REDLOCK_SENTINEL_PASSWORD, REDLOCK_WAIT_REPLICAS, REDLOCK_CONNECT_TIMEOUT, REDLOCK_PREFIX,
 * SHELL from the environment) into *o.
 * Option parsing stops at KEY, so COMMAND's own flags are never looked at. On
 * OPTS_USAGE_ERROR, err holds the message and nothing in *o needs freeing.
 */
enum opts_action opts_parse(struct opts *o, int argc, char *argv[], char *err, size_t errsize);
void opts_free(struct opts *o);
/* Whether any of the servers is reached over TLS (rediss://). */
bool opts_use_tls(const struct opts *o);
void opts_print_help(FILE *out);

#endif
