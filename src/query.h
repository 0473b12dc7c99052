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

/*
 * --break: ends o->key's lock on purpose (see lock_break), once confirmed: with --yes, or, on a
 * terminal, by the user's "y" after its --status. Says what it broke on standard output.
 * Returns 0 (broken, or nothing to break), 1 when the user said no, 64 without --yes where
 * nobody can be asked, 69 when Redis cannot be asked or KEY is not a lock.
 */
int query_break(const struct opts *o);

/* --list: every lock whose name matches the pattern o->key, on standard output (see list.c).
 * Returns 0, or 69 when the servers cannot be asked. */
int query_list(const struct opts *o);

/* What the server's INFO says about evicting keys: a lock key has a TTL, so any policy but
 * noeviction may delete it under memory pressure. */
struct eviction {
	char policy[32];      /* maxmemory-policy; empty when INFO was refused */
	long long limit;      /* maxmemory in bytes; 0: none, so nothing is evicted */
	char replica_of[300]; /* the server said it is a replica (ROLE): of which master, or
			       * "" */
};

/* Whether locks on the server can be evicted: a limit and a policy that evicts. */
bool query_evictable(const struct eviction *ev);

/*
 * Asks every node for its eviction settings (INFO memory), answered by deadline: true with a
 * warning in buf ("127.0.0.1:6379 may evict locks under memory pressure (maxmemory-policy
 * allkeys-lru): set it to noeviction") when any may evict locks; false otherwise, or when INFO
 * is refused, or the wait for it is interrupted (intr_fd readable: the command ended). For a
 * run's watchdog, once: the uncontended path never pays for it.
 */
bool query_eviction_warning(struct nodes *ns, int64_t deadline, int intr_fd, char *buf,
			    size_t size);

/* What --status found: each node's view, and the quorum's. */
struct status {
	const char *key;
	size_t count, quorum;
	bool decided;          /* whether the quorum's view could be told */
	struct lock_state all; /* the quorum's view, when decided */
	struct {
		const char *address;
		const char *role;     /* "the master", "the owner of its slot", or NULL (see
				       * nodes_role) */
		struct lock_state st; /* st.answered, else st.error says why */
		struct eviction ev;
	} node[NODES_MAX];
};

/* Asks every node who holds l's lock (lock_query) into *s, by connect_timeout for a server that
 * has not answered yet, but those with skip[i] (skip may be NULL): whether any node answered
 * (s->decided: whether the quorum's view could be told). */
bool query_ask(struct status *s, struct lock *l, struct nodes *ns, int64_t connect_timeout,
	       const bool *skip);

/* Reads the eviction settings of every node of s that answered from INFO memory, and whether it
 * is a replica from ROLE, into s; leaves a node's empty when it refuses (managed services and
 * ACL users often may not run them). */
void query_ask_eviction(struct nodes *ns, struct status *s);

/*
 * The JSON object of --status --json: {"key", "held", "host", "pid", "token", "ttl_ms", "fence",
 * "maxmemory_policy", "evictable", "quorum", "nodes"}. The first fields are the quorum's view:
 * the holder's fields null when free, host and pid null for a value redlock-run did not write,
 * ttl_ms -1 for a key without expiry, fence null for a lock never taken, the eviction fields
 * null when no server would answer INFO (or true when any may evict). "nodes" holds each
 * node's view in the same fields, with its "address" and "reachable", or why it did not
 * answer ("error"), and "replica_of", the master of a node that said it is a replica (what it
 * says may be behind), or null. "held" is null when the quorum's view cannot be told. When no
 * node answered at all, the object is {"key", "held": null, "error"}.
 */
void query_print_json(FILE *out, const struct status *s);
/* " (gone)" or " (stopped)" after a holder or a waiter on this host, as lock_value_process
 * tells of its process; "" otherwise. */
const char *query_process_mark(const char *process);
/* There is room for the first in line that is not gone (*next; those before it were killed
 * outright): the lock is free, a semaphore has a free place, or it and the holders are shared;
 * and it was not woken (a release gives the one it wakes a handoff's time): it takes the lock
 * when it looks again, within the time this returns; -1 when the line is not held back so. */
int64_t query_stalled(const struct lock_state *st, size_t *next);
/* The sentence of --status, with one line per node when there are several, and a warning line
 * for each server that can evict locks. */
void query_print_text(FILE *out, const struct status *s);

#endif
