/*
 * --status: who holds a lock, said in words or as one JSON object, and an exit status that
 * says it too: 0 when free, the conflict status (75, or -E) when held, 69 when Redis cannot
 * be asked. The lock is never touched.
 */
#ifndef REDLOCK_QUERY_H
#define REDLOCK_QUERY_H

#include <stdio.h>

#include "lock.h"
#include "opts.h"

/* Answers --status for o->key on standard output; returns the exit status. */
int query_status(const struct opts *o);

/* What the server's INFO says about evicting keys: a lock key has a TTL, so any policy but
 * noeviction may delete it under memory pressure. */
struct eviction {
	char policy[32]; /* maxmemory-policy; empty when INFO was refused */
	long long limit; /* maxmemory in bytes; 0: none, so nothing is evicted */
};

/* Whether locks on the server can be evicted: a limit and a policy that evicts. */
bool query_evictable(const struct eviction *ev);

/*
 * The JSON object of --status --json: {"key", "held", "host", "pid", "token", "ttl_ms",
 * "fence", "maxmemory_policy", "evictable"}, the holder's fields null when free, host and
 * pid null for a value redlock-run did not write, ttl_ms -1 for a key without expiry, fence
 * null for a lock never taken, the last two null when the server refused INFO.
 */
void query_print_json(FILE *out, const char *key, const struct lock_state *st,
		      const struct eviction *ev);
/* The sentence of --status, and a warning line when locks can be evicted. */
void query_print_text(FILE *out, const char *key, const struct lock_state *st,
		      const struct eviction *ev);

#endif
