/* watchdog: renews on its own connection every TTL/3, reports what happens as events, and
 * stops at once, even with a renewal stuck on a frozen server. */
#include <poll.h>
#include <stdlib.h>

#include "check.h"
#include "clock.h"
#include "lock.h"
#include "redis_fixture.h"
#include "watchdog.h"

/* The next event, waited for until deadline; its type, or -1 when none came. */
static int
next_event(struct watchdog *w, struct watchdog_event *ev, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { watchdog_fd(w), POLLIN, 0 };
		int64_t left = deadline - clock_now();
		struct timespec ts;

		if (watchdog_take(w, ev))
			return (int)ev->type;
		if (left <= 0)
			return -1;
		ts = clock_timespec(left);
		ppoll(&p, 1, &ts, NULL);
	}
}

int
main(void)
{
	struct redis_fixture server;
	struct redis_url url;
	struct lock l;
	struct nodes *c;
	struct conn *admin;
	struct watchdog *w;
	struct watchdog_event ev;
	int64_t t0;

	redis_fixture_start(&server, NULL);
	url = (struct redis_url){ .scheme = URL_UNIX, .path = server.socket };
	c = nodes_new(&url, 1);
	admin = conn_new(&url);
	CHECK_INT(lock_init(&l, "job", 600 * NS_PER_MS), 0);
	CHECK_INT(lock_acquire(&l, c, 0, -1), LOCK_ACQUIRED);

	/* No thread before the first renewal is due. */
	w = watchdog_new(&l, c);
	CHECK(w != NULL);
	CHECK_INT(watchdog_due(w), l.acquired_at + 200 * NS_PER_MS);
	CHECK_INT(watchdog_start(w), 0);
	CHECK_INT(watchdog_due(w), TIME_NEVER);

	/* Renewals every TTL/3, each reported with when it was sent and the lease's new end. */
	CHECK_INT(next_event(w, &ev, clock_now() + NS_PER_S), WATCHDOG_RENEWED);
	CHECK(ev.sent >= l.acquired_at + 200 * NS_PER_MS);
	/* (the request went out once the watchdog's own connection was open) */
	CHECK(ev.lease_end >= lock_lease_deadline(&l, ev.sent));
	CHECK(ev.lease_end <= lock_lease_deadline(&l, clock_now()));
	t0 = ev.sent;
	CHECK_INT(next_event(w, &ev, clock_now() + NS_PER_S), WATCHDOG_RENEWED);
	CHECK(ev.sent - t0 >= 190 * NS_PER_MS && ev.sent - t0 < 400 * NS_PER_MS);
	CHECK(atoi(redis_fixture_call(admin, "PTTL", "job", NULL)) > 300);

	/* A key deleted behind its back: lost, said once, and no more renewals. */
	CHECK_STR(redis_fixture_call(admin, "DEL", "job", NULL), "1");
	CHECK_INT(next_event(w, &ev, clock_now() + NS_PER_S), WATCHDOG_LOST);
	CHECK_INT(ev.how, LOCK_GONE);
	CHECK_INT(next_event(w, &ev, clock_now() + 500 * NS_PER_MS), -1);
	CHECK_STR(redis_fixture_call(admin, "EXISTS", "job", NULL), "0"); /* never re-created */
	watchdog_free(w);

	/* A frozen server: failures are reported, and stopping does not wait for the
	 * renewal stuck in flight. */
	CHECK_INT(lock_acquire(&l, c, 0, -1), LOCK_ACQUIRED);
	w = watchdog_new(&l, c);
	CHECK_INT(watchdog_start(w), 0);
	CHECK_INT(next_event(w, &ev, clock_now() + NS_PER_S), WATCHDOG_RENEWED);
	redis_fixture_freeze(&server);
	CHECK_INT(next_event(w, &ev, clock_now() + NS_PER_S), WATCHDOG_FAILED);
	CHECK(strstr(ev.detail, "no reply from") != NULL);
	t0 = clock_now();
	watchdog_free(w);
	CHECK(clock_now() - t0 < 100 * NS_PER_MS);
	redis_fixture_thaw(&server);

	/* A watchdog never started frees cleanly too. */
	w = watchdog_new(&l, c);
	watchdog_free(w);

	lock_free(&l);
	nodes_free(c);
	conn_free(admin);
	redis_fixture_stop(&server);
	return check_done("watchdog");
}
