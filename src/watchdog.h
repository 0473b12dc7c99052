/*
 * The watchdog: the one extra thread. It renews the lease every TTL/3 (every second at most
 * with --cancel-running) on the connections the lock was taken on, which are its own while it
 * runs (it starts only when the first renewal is due, or when the server closes the connection;
 * over several servers, at once), retries soon after a failure, and reports what happens as
 * events on a pipe. It never signals the command: deciding what a failure means is supervise's
 * job.
 */
#ifndef REDLOCK_WATCHDOG_H
#define REDLOCK_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"

struct watchdog;

enum watchdog_event_type {
	WATCHDOG_RENEWED,   /* sent: when the renewing requests went out; lease_end: when the lease
			     * now ends on a quorum; detail: a note, or "" */
	WATCHDOG_NOTE,      /* detail: what a minority of nodes did (a node that did not answer) */
	WATCHDOG_WARN,      /* detail: a server that may evict locks (said once per run) */
	WATCHDOG_FAILED,    /* detail: why; it keeps trying until the lease runs out */
	WATCHDOG_CANCELLED, /* a newer run cancelled ours (--cancel-running), whose lease the
			     * watchdog keeps renewing while the command stops; detail: who,
			     * "HOST:PID". Said once, after the renewal that found it */
	WATCHDOG_LOST,      /* how: what became of the lock; detail: the new holder, if any;
			     * cause: a failover that explains it, or for LOCK_GONE_WITH_DATA
			     * which server lost its data, or "" */
};

struct watchdog_event {
	enum watchdog_event_type type;
	enum lock_renewal how;
	int64_t sent;
	int64_t lease_end;
	char detail[512]; /* the size of lock.error */
	char cause[512];
};

/* A watchdog for the lock l (already acquired on ns), which it copies. No thread runs yet, so a
 * command that ends before its first renewal is due never pays for one. Once it runs, ns is
 * the thread's until watchdog_free returns: nothing else may touch it meanwhile. (Renewals on
 * the connections the lock was taken on cost no new connection, and keep going when the server
 * takes no more clients or the password changed.) NULL with errno set when out of resources. */
struct watchdog *watchdog_new(const struct lock *l, struct nodes *ns);

/* When the thread must be running to make the first renewal (TTL/3 after the lock was
 * taken): TIME_NEVER once watchdog_start was called. */
int64_t watchdog_due(const struct watchdog *w);

/* Makes the first renewal due now, when the thread has not started (else false: it watches the
 * connections itself): a server closed the connection the lock was taken on (a restart, most
 * likely, which may have lost the lock). */
bool watchdog_hurry(struct watchdog *w);

/* Starts the thread. 0, or -1 with errno set: then nothing renews the lease. */
int watchdog_start(struct watchdog *w);

/* Readable when an event is waiting. */
int watchdog_fd(const struct watchdog *w);

/* Takes one event: 1, or 0 when there is none. */
int watchdog_take(struct watchdog *w, struct watchdog_event *ev);

/* Stops the thread, interrupting a renewal in flight (its answers are dropped as they come:
 * the next request on those connections goes out at once), waits for it, and frees w. The
 * nodes are the caller's again. */
void watchdog_free(struct watchdog *w);

#endif
