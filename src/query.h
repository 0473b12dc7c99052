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
 * The JSON object of --status --json: {"key", "held", "host", "pid", "token", "ttl_ms",
 * "fence"}, the holder's fields null when free, host and pid null for a value redlock-run
 * did not write, ttl_ms -1 for a key without expiry, fence null for a lock never taken.
 */
void query_print_json(FILE *out, const char *key, const struct lock_state *st);
void query_print_text(FILE *out, const char *key, const struct lock_state *st);

#endif
