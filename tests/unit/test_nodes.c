/* nodes: one request to several servers at once, the answers as they come, and the quorum's
 * arithmetic, with a server that answers, one that is frozen and one that is not there. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "nodes.h"
#include "redis_fixture.h"

static const char *ping[] = { "PING" };
static const size_t ping_len[] = { 4 };

static void
send_cmd(struct nodes *ns, size_t i, int argc, const char **argv, const size_t *lens,
	 int64_t deadline)
{
	struct command cmd = { .argc = argc, .argv = argv, .lens = lens };

	nodes_send(ns, i, &cmd, deadline, -1);
}

int
main(void)
{
	struct redis_fixture live, frozen;
	struct redis_url urls[3];
	struct nodes *ns;
	struct answer a;
	int64_t t0;

	redis_fixture_start(&live, NULL);
	redis_fixture_start(&frozen, NULL);
	urls[0] = (struct redis_url){ .scheme = URL_UNIX, .path = live.socket };
	urls[1] = (struct redis_url){ .scheme = URL_UNIX, .path = frozen.socket };
	urls[2] = (struct redis_url){ .scheme = URL_UNIX, .path = "/nonexistent/redis.sock" };
	ns = nodes_new(urls, 3);
	CHECK(ns != NULL);
	CHECK_INT(nodes_count(ns), 3);
	CHECK_INT(nodes_quorum(ns), 2);

	/* The quorum's arithmetic: 2 of 3. */
	CHECK_INT(nodes_verdict(ns, 1, 1), VERDICT_OPEN);
	CHECK_INT(nodes_verdict(ns, 2, 1), VERDICT_YES);
	CHECK_INT(nodes_verdict(ns, 0, 2), VERDICT_NO);
	CHECK_INT(nodes_quorum_until(ns, (int64_t[]){ 30, 10, 20 }, 3), 20);
	CHECK_INT(nodes_quorum_until(ns, (int64_t[]){ 30 }, 1), 0);
	/* two held: free once the first runs out; three held: once the second does */
	CHECK_INT(nodes_free_at(ns, (int64_t[]){ 30, 10 }, 2, 0), 10);
	CHECK_INT(nodes_free_at(ns, (int64_t[]){ 30, 10, 20 }, 3, 0), 20);
	CHECK_INT(nodes_free_at(ns, (int64_t[]){ 30 }, 1, 0), 0);
	/* A node down: the other two must both be free. */
	CHECK_INT(nodes_free_at(ns, (int64_t[]){ 30 }, 1, 2), 30);
	CHECK_INT(nodes_free_at(ns, (int64_t[]){ 30, 10 }, 2, 2), 30);
	CHECK_INT(nodes_lease_end(ns), 0);
	nodes_hold(ns, 0, 100);
	CHECK_INT(nodes_lease_end(ns), 0); /* one node is not a quorum */
	nodes_hold(ns, 1, 300);
	nodes_hold(ns, 2, 200);
	CHECK_INT(nodes_lease_end(ns), 200);
	nodes_drop(ns, 1);
	CHECK(!nodes_holds(ns, 1));
	CHECK_INT(nodes_lease_end(ns), 100);

	/* One request to all three: the live one answers, the missing one fails at once, and
	 * the frozen one is given up on at its deadline, not before, without holding up the
	 * others. */
	redis_fixture_freeze(&frozen);
	t0 = clock_now();
	for (size_t i = 0; i < 3; i++)
		send_cmd(ns, i, 1, ping, ping_len, t0 + 300 * NS_PER_MS);
	bool seen[3] = { false };
	for (int k = 0; k < 3; k++) {
		CHECK_INT(nodes_next(ns, TIME_NEVER, -1, &a), CONN_OK);
		seen[a.node] = true;
		if (a.node == 0) {
			CHECK_INT(a.result, CONN_OK);
			CHECK_STR(reply_string(a.reply, NULL), "PONG");
			CHECK(clock_now() - t0 < 200 * NS_PER_MS);
			reply_free(a.reply);
		} else if (a.node == 2) {
			CHECK_INT(a.result, CONN_FAILED);
			CHECK(!a.maybe_landed);
			CHECK(strstr(nodes_error(ns, 2), "/nonexistent/redis.sock") != NULL);
		} else {
			CHECK_INT(a.result, CONN_TIMEOUT);
			CHECK(a.maybe_landed);
			CHECK(clock_now() - t0 >= 300 * NS_PER_MS);
			CHECK(strstr(nodes_error(ns, 1), "no reply from ") != NULL);
		}
	}
	CHECK(seen[0] && seen[1] && seen[2]);
	CHECK_INT(nodes_next(ns, TIME_NEVER, -1, &a), CONN_FAILED); /* nothing outstanding */

	/* Answers forgotten are dropped as they come: the next request on that connection
	 * gets its own answer, not the one before. */
	redis_fixture_thaw(&frozen);
	send_cmd(ns, 1, 2, (const char *[]){ "ECHO", "first" }, (size_t[]){ 4, 5 },
		 clock_now() + NS_PER_S);
	nodes_forget(ns);
	CHECK(!nodes_outstanding(ns, 1));
	send_cmd(ns, 1, 2, (const char *[]){ "ECHO", "second" }, (size_t[]){ 4, 6 },
		 clock_now() + NS_PER_S);
	CHECK_INT(nodes_next(ns, TIME_NEVER, -1, &a), CONN_OK);
	CHECK_INT(a.result, CONN_OK);
	CHECK_STR(reply_string(a.reply, NULL), "second");
	reply_free(a.reply);

	/* A request taken back (a blocked BLPOP) closes its connection; an interruption
	 * comes back at once. */
	send_cmd(ns, 0, 3, (const char *[]){ "BLPOP", "nothing", "5" }, (size_t[]){ 5, 7, 1 },
		 TIME_NEVER);
	int intr[2];
	CHECK_INT(pipe(intr), 0);
	CHECK_INT(write(intr[1], "x", 1), 1);
	t0 = clock_now();
	CHECK_INT(nodes_next(ns, TIME_NEVER, intr[0], &a), CONN_INTERRUPTED);
	CHECK(clock_now() - t0 < 100 * NS_PER_MS);
	CHECK(nodes_outstanding(ns, 0));
	nodes_cancel(ns);
	CHECK(!nodes_outstanding(ns, 0));

	/* What each node holds. */
	CHECK_INT(nodes_lease_end(ns), 100);
	CHECK(!nodes_hold_all(ns));
	nodes_hold(ns, 1, 300);
	CHECK(nodes_hold_all(ns));

	/* Watching the idle connections, opened again: a server that closes one (as a restart
	 * does) is told at once; otherwise the watch lasts until its end, or an interruption. */
	nodes_open(ns, clock_now() + NS_PER_S, -1);
	size_t broke = 99;
	t0 = clock_now();
	CHECK_INT(nodes_watch(ns, t0 + 200 * NS_PER_MS, -1, &broke), CONN_TIMEOUT);
	CHECK(clock_now() - t0 >= 200 * NS_PER_MS);
	CHECK_INT(broke, 99);
	struct conn *admin = conn_new(&urls[0]);
	CHECK(admin != NULL);
	CHECK_INT(conn_open(admin, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK_STR(redis_fixture_call(admin, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes",
				     NULL),
		  "1");
	t0 = clock_now();
	CHECK_INT(nodes_watch(ns, t0 + 5 * NS_PER_S, -1, &broke), CONN_OK);
	CHECK_INT(broke, 0);
	CHECK_INT(nodes_watch(ns, clock_now() + 5 * NS_PER_S, intr[0], &broke), CONN_INTERRUPTED);
	conn_free(admin);

	nodes_free(ns);
	redis_fixture_stop(&live);
	redis_fixture_stop(&frozen);
	return check_done("nodes");
}
