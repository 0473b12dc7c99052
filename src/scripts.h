/*
 * The Lua side of the lock protocol (DESIGN §3): the scripts that run inside Redis, each with
 * its KEYS/ARGV contract and its replies. The lock's rooms (lock.c, acquire.c, line.c and
 * inspect.c) decide when each is sent and read what it answers; nothing here talks to a server.
 */
#ifndef REDLOCK_SCRIPTS_H
#define REDLOCK_SCRIPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "sha1.h"

struct script {
	const char *text;
	bool writes;             /* what it writes must reach the replicas (--wait-replicas) */
	bool gives_back;         /* a release: it changes the lock, but need not reach them */
	char sha[SHA1_HEX_SIZE]; /* its digest, filled in by scripts_init */
};

/* The three scripts of a lock's life, for one kind of lock. */
struct kind {
	struct script *acquire, *renew, *release;
};

extern const struct kind kind_exclusive; /* a lock: a string at KEY */
extern const struct kind kind_semaphore; /* --limit N: a sorted set of holders at KEY */
extern const struct kind kind_shared;    /* --shared: the same, which a lock waits for */

extern struct script script_query;     /* who holds KEY, read-only */
extern struct script script_fence;     /* raises a fence counter */
extern struct script script_leave;     /* a waiter leaves the line */
extern struct script script_break;     /* --break: ends a lock on purpose */
extern struct script script_follow_up; /* after a handoff: the next, if the first never came */

/* Fills in the scripts' digests (computed at build time). */
void scripts_init(void);

/* Every script, for the build's digest tool and the tests: scripts_get(i) for i below
 * scripts_count(), else NULL. */
size_t scripts_count(void);
struct script *scripts_get(size_t i);

#endif
