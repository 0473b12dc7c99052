/*
 * The single place where signals, the command's exit, watchdog events and deadlines meet
 * (DESIGN §4): it passes signals on, follows the lease, and stops the command when the lease
 * can no longer be trusted or --max-hold runs out.
 */
#ifndef REDLOCK_SUPERVISE_H
#define REDLOCK_SUPERVISE_H

#include <stdbool.h>
#include <stdint.h>

#include "child.h"
#include "lock.h"
#include "nodes.h"
#include "opts.h"
#include "signals.h"
#include "watchdog.h"

struct supervision {
	struct child *child;
	struct watchdog *watchdog;
	struct nodes *nodes; /* the connections the lock was taken on: one closed by its server
			      * before the watchdog runs (a restart, which may have lost the
			      * lock) makes the first renewal come at once */
	const struct lock *lock;
	const struct signals *signals;
	enum on_lost on_lost;
	int64_t grace;     /* between SIGTERM and SIGKILL, for the command and its leftovers */
	int64_t max_hold;  /* 0: no limit */
	const char *asked; /* whom the renewals ask, for a loss before any answered: "ADDRESS",
			    * or "a quorum of the N servers" */
};

struct outcome {
	int status;        /* what redlock-run exits with */
	int signal;        /* when non-zero, end by this signal instead (the command died of it) */
	bool lost;         /* the lock was lost while the command ran */
	bool forwarded;    /* signal is one redlock-run passed on (so no terminal sent it) */
	bool told_break;   /* the loss said was a --break, and who broke it */
	int64_t lease_end; /* when the lease ended, or would have, as supervise last knew it */
};

/* The deadline the guard is to hold as the command starts (see child_guard_until): SIGKILL
 * just before the lease ends, unless --on-lost ignore. */
int64_t supervise_guard_deadline(const struct supervision *s);

/* Runs until the command has exited and nothing it left in its process group is running:
 * leftovers are stopped under the same lease. */
struct outcome supervise(const struct supervision *s);

#endif
