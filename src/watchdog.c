#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "query.h"

struct watchdog {
	struct lock lock;    /* the watchdog's own copy: its error fields are written here */
	struct nodes *nodes; /* the caller's, lent while the thread runs */
	int64_t round;       /* when the renewal in flight was sent */
	bool told;           /* whether the first renewal that resumed a TLS session was told */
	unsigned moved[NODES_MAX]; /* each node's failovers when last told (see tell_failovers) */
	bool asked_eviction;       /* whether the servers were asked if they may evict locks */
	pthread_t thread;
	int events[2]; /* the thread writes, supervise reads */
	int stop[2];   /* a byte, or our end closing, stops the thread */
	int64_t due;   /* when the thread must be running; TIME_NEVER once started */
	bool hurried;  /* its first renewal is at once (see watchdog_hurry) */
	bool running;
	bool told_cancelled; /* WATCHDOG_CANCELLED went out */
};

static void
post(struct watchdog *w, enum watchdog_event_type type, enum lock_renewal how, int64_t sent,
     int64_t lease_end, const char *detail)
{
	struct watchdog_event ev = {
		.type = type, .how = how, .sent = sent, .lease_end = lease_end
	};

	snprintf(ev.detail, sizeof(ev.detail), "%s", detail ? detail : "");
	if (type == WATCHDOG_LOST)
		snprintf(ev.cause, sizeof(ev.cause), "%s", w->lock.error);
	/* Smaller than PIPE_BUF, so it arrives whole; the pipe never fills, as supervise
	 * reads each event as it comes. */
	if (write(w->events[1], &ev, sizeof(ev)) < 0) {
		/* Nothing to report it to. */
	}
}

/* Whether any connection made resumed the first one's TLS session (said once, with -v): a
 * renewal then skips a full handshake. */
static bool
resumed(struct watchdog *w)
{
	for (size_t i = 0; i < nodes_count(w->nodes) && !w->told; i++)
		w->told = nodes_tls_resumed(w->nodes, i);
	return w->told;
}

/* Whether the thread was told to stop (watchdog_stop): no renewal goes out after that. */
static bool
told_to_stop(const struct watchdog *w)
{
	return clock_interrupted(w->stop[0]);
}

/* A failover that the renewals followed, to a master that has the lock: told once (-v). */
static void
tell_failovers(struct watchdog *w, int64_t sent)
{
	char note[sizeof(((struct watchdog_event *)0)->detail)];

	for (size_t i = 0; i < nodes_count(w->nodes); i++) {
		unsigned moved = nodes_failovers(w->nodes, i);
		if (moved == w->moved[i] || !nodes_holds(w->nodes, i))
			continue;
		w->moved[i] = moved;
		snprintf(note, sizeof(note), "%s; the new master has it",
			 nodes_failover(w->nodes, i));
		post(w, WATCHDOG_NOTE, LOCK_RENEWED, sent, 0, note);
	}
}

/* lock_renew's word that a quorum has renewed: supervise hears it at once, before the answers
 * of the slower nodes. */
static void
renewed(void *arg, int64_t lease_end)
{
	struct watchdog *w = arg;
	bool first = !w->told;

	post(w, WATCHDOG_RENEWED, LOCK_RENEWED, w->round, lease_end,
	     first && resumed(w) ? "TLS session resumed" : NULL);
}

/*
 * How often the lease is renewed: every TTL/3; a run that a newer one may cancel
 * (--cancel-running) learns it from a renewal, at least once a second.
 */
#define CANCEL_LOOK NS_PER_S
static int64_t
renewal_period(const struct lock *l)
{
	return strstr(l->token_suffix, ":cancel") ? time_min(l->ttl / 3, CANCEL_LOOK) : l->ttl / 3;
}

/*
 * The thread: a renewal every period (see renewal_period), sooner after a failure. Over
 * several nodes, connections to all of them from the start; while a node does not hold the
 * lock or did not answer (a late answer, a server down or restarted empty), a renewal every
 * tenth of the TTL, which gives it to that node as soon as it can take it (see lock_renew);
 * and one at once when a server closes our idle connection to it (a restart, most likely).
 */
static void *
run(void *arg)
{
	struct watchdog *w = arg;
	struct lock *l = &w->lock;
	const int64_t period = renewal_period(l);
	/* After a failure, try again soon rather than a whole period later. */
	const int64_t retry = time_max(10 * NS_PER_MS, time_min(l->ttl / 20, NS_PER_S));
	const int64_t settle = time_max(retry, l->ttl / 10);
	int64_t next = w->hurried ? clock_now() : l->acquired_at + period, last = 0;
	/* When a server closed our connection (before the thread ran: hurried), tries come as a
	 * waiter's do, 10ms apart at first, then twice as far each time: the server is back as
	 * soon as it restarted, and a waiter reconnects as fast to take a lock it may have lost. */
	const int64_t quick = time_min(10 * NS_PER_MS, retry);
	int64_t pause = w->hurried ? quick : retry;
	bool calm = true; /* every node answered the last round */

	if (nodes_count(w->nodes) > 1)
		nodes_open(w->nodes, time_min(clock_now() + period, nodes_lease_end(w->nodes)),
			   w->stop[0]);

	for (;;) {
		int64_t now, lease_end = nodes_lease_end(w->nodes), wake = next;
		enum lock_renewal r;
		enum conn_result watched;
		size_t broke;

		if (!calm || !nodes_hold_all(w->nodes))
			wake = time_min(wake, last + settle);
		watched = nodes_watch(w->nodes, wake, w->stop[0], &broke);
		/* (A wake that was due already returns before looking at the stop.) */
		if (watched == CONN_INTERRUPTED || told_to_stop(w))
			break;
		if (watched == CONN_OK)
			pause = quick;
		now = clock_now();
		/* Past the local deadline the lease cannot be trusted, whatever a late renewal
		 * might say; supervise has acted on it already. */
		if (now >= lease_end)
			break;
		w->round = last = now;
		r = lock_renew(l, w->nodes, time_min(now + period, lease_end), w->stop[0], renewed,
			       w);
		calm = r == LOCK_RENEWED && !l->error[0];
		if (r == LOCK_RENEWED) {
			char warning[512];
			next = now + period;
			pause = retry;
			if (l->error[0])
				post(w, WATCHDOG_NOTE, r, now, 0, l->error);
			tell_failovers(w, now);
			if (l->cancelled_by[0] && !w->told_cancelled) {
				post(w, WATCHDOG_CANCELLED, r, now, 0, l->cancelled_by);
				w->told_cancelled = true;
			}
			/* Once, after the first renewal that every node answered (a run that ends
			 * sooner never pays for it), and only until the next renewal is due: a
			 * slow server must not cost the renewals their time, nor the release
			 * (which stops us first) its own. */
			if (calm && !w->asked_eviction) {
				if (query_eviction_warning(w->nodes, time_min(next, lease_end),
							   w->stop[0], warning, sizeof(warning)))
					post(w, WATCHDOG_WARN, r, now, 0, warning);
				w->asked_eviction = true;
			}
		} else if (r == LOCK_RENEW_FAILED) {
			next = clock_now() + pause;
			pause = time_min(2 * pause, retry);
			post(w, WATCHDOG_FAILED, r, now, 0, l->error);
		} else if (r == LOCK_RENEW_INTERRUPTED) {
			break;
		} else {
			post(w, WATCHDOG_LOST, r, now, 0, l->holder);
			break;
		}
	}
	return NULL;
}

static void
close_pair(int fds[2])
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fds[0] = fds[1] = -1;
}

struct watchdog *
watchdog_new(const struct lock *l, struct nodes *ns)
{
	struct watchdog *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->lock = *l;
	/* Over several nodes it starts at once: a node that did not take the lock yet is asked,
	 * and one that restarts is noticed, before the first renewal. */
	w->due = nodes_count(ns) > 1 ? clock_now() : l->acquired_at + renewal_period(l);
	w->events[0] = w->events[1] = w->stop[0] = w->stop[1] = -1;
	w->nodes = ns;
	/* (What happened before the lock was taken is no news.) */
	for (size_t i = 0; i < nodes_count(ns); i++)
		w->moved[i] = nodes_failovers(ns, i);
	if (pipe2(w->events, O_CLOEXEC | O_NONBLOCK) == 0 && pipe2(w->stop, O_CLOEXEC) == 0)
		return w;
	err = errno;
	close_pair(w->events);
	close_pair(w->stop);
	free(w);
	errno = err;
	return NULL;
}

int64_t
watchdog_due(const struct watchdog *w)
{
	return w->due;
}

bool
watchdog_hurry(struct watchdog *w)
{
	if (w->running || w->due == TIME_NEVER)
		return false;
	w->due = clock_now();
	w->hurried = true;
	return true;
}

int
watchdog_start(struct watchdog *w)
{
	sigset_t all, old;
	pthread_attr_t attr;
	int err;

	w->due = TIME_NEVER;
	/* The thread starts with every signal blocked: they are all consumed in one place,
	 * on the main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	err = pthread_create(&w->thread, &attr, run, w);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		errno = err;
		return -1;
	}
	w->running = true;
	return 0;
}

int
watchdog_fd(const struct watchdog *w)
{
	return w->events[0];
}

int
watchdog_take(struct watchdog *w, struct watchdog_event *ev)
{
	return read(w->events[0], ev, sizeof(*ev)) == (ssize_t)sizeof(*ev);
}

static void
watchdog_stop(struct watchdog *w)
{
	if (w && w->stop[1] >= 0) {
		close(w->stop[1]);
		w->stop[1] = -1;
	}
}

void
watchdog_free(struct watchdog *w)
{
	if (!w)
		return;
	watchdog_stop(w);
	if (w->running)
		pthread_join(w->thread, NULL);
	close_pair(w->stop);
	close_pair(w->events);
	free(w);
}
