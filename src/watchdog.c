#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

struct watchdog {
	struct lock lock; /* the watchdog's own copy: its error fields are written here */
	struct conn *conn;
	pthread_t thread;
	int events[2]; /* the thread writes, supervise reads */
	int stop[2];   /* a byte, or our end closing, stops the thread */
};

static void
post(struct watchdog *w, enum watchdog_event_type type, enum lock_renewal how, int64_t sent,
     const char *detail)
{
	struct watchdog_event ev = { .type = type, .how = how, .sent = sent };

	snprintf(ev.detail, sizeof(ev.detail), "%s", detail ? detail : "");
	/* Smaller than PIPE_BUF, so it arrives whole; the pipe never fills, as supervise
	 * reads each event as it comes. */
	if (write(w->events[1], &ev, sizeof(ev)) < 0) {
		/* Nothing to report it to. */
	}
}

static void *
run(void *arg)
{
	struct watchdog *w = arg;
	struct lock *l = &w->lock;
	const int64_t period = l->ttl / 3;
	/* After a failure, try again soon rather than a whole period later. */
	const int64_t retry = time_max(10 * NS_PER_MS, time_min(l->ttl / 20, NS_PER_S));
	int64_t renewed = l->acquired_at, next = renewed + period;

	for (;;) {
		int64_t now, lease_end = lock_lease_deadline(l, renewed);
		enum lock_renewal r;

		if (clock_sleep_until(next, w->stop[0]) < 0)
			break;
		now = clock_now();
		/* Past the local deadline the lease cannot be trusted, whatever a late renewal
		 * might say; supervise has acted on it already. */
		if (now >= lease_end)
			break;
		r = lock_renew(l, w->conn, time_min(now + period, lease_end), w->stop[0]);
		if (r == LOCK_RENEWED) {
			renewed = now;
			next = now + period;
			post(w, WATCHDOG_RENEWED, r, now, NULL);
		} else if (r == LOCK_RENEW_FAILED) {
			next = clock_now() + retry;
			post(w, WATCHDOG_FAILED, r, now, l->error);
		} else if (r == LOCK_RENEW_INTERRUPTED) {
			break;
		} else {
			post(w, WATCHDOG_LOST, r, now, l->holder);
			break;
		}
	}
	conn_free(w->conn);
	w->conn = NULL;
	return NULL;
}

struct watchdog *
watchdog_start(const struct lock *l, const struct redis_url *url)
{
	struct watchdog *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	pthread_attr_t attr;
	int err;

	if (!w)
		return NULL;
	w->lock = *l;
	w->events[0] = w->events[1] = w->stop[0] = w->stop[1] = -1;
	if (!(w->conn = conn_new(url)) || pipe2(w->events, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(w->stop, O_CLOEXEC) < 0)
		goto fail;

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
		goto fail;
	}
	return w;

fail:
	err = errno;
	conn_free(w->conn);
	for (int i = 0; i < 2; i++) {
		if (w->events[i] >= 0)
			close(w->events[i]);
		if (w->stop[i] >= 0)
			close(w->stop[i]);
	}
	free(w);
	errno = err;
	return NULL;
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

void
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
	pthread_join(w->thread, NULL);
	close(w->stop[0]);
	close(w->events[0]);
	close(w->events[1]);
	free(w);
}
