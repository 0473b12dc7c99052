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

struct watchdog {
	struct lock lock; /* the watchdog's own copy: its error fields are written here */
	struct conn *conn;
	pthread_t thread;
	int events[2]; /* the thread writes, supervise reads */
	int stop[2];   /* a byte, or our end closing, stops the thread */
	int64_t due;   /* when the thread must be running; TIME_NEVER once started */
	bool running;
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
	bool told = false;

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
			/* Whether the connection it made resumed the first one's TLS session
			 * (said once, with -v): a renewal then skips a full handshake. */
			post(w, WATCHDOG_RENEWED, r, now,
			     !told && (told = conn_tls_resumed(w->conn)) ? "TLS session resumed"
									: NULL);
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

static void
close_pair(int fds[2])
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fds[0] = fds[1] = -1;
}

struct watchdog *
watchdog_new(const struct lock *l, const struct conn *c)
{
	struct watchdog *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->lock = *l;
	w->due = l->acquired_at + l->ttl / 3;
	w->events[0] = w->events[1] = w->stop[0] = w->stop[1] = -1;
	if ((w->conn = conn_new_like(c)) && pipe2(w->events, O_CLOEXEC | O_NONBLOCK) == 0 &&
	    pipe2(w->stop, O_CLOEXEC) == 0)
		return w;
	err = errno;
	conn_free(w->conn);
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
	if (w->running)
		pthread_join(w->thread, NULL);
	else
		conn_free(w->conn); /* the thread frees it when it ends */
	close_pair(w->stop);
	close_pair(w->events);
	free(w);
}
