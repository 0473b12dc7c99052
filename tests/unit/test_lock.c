/* lock: the protocol against a real redis-server: tokens, fencing, idempotent acquire,
 * renew and release by the owner only, and a lost reply settled without abandoning a lock. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "acquisition.h"
#include "check.h"
#include "clock.h"
#include "conn.h"
#include "lock.h"
#include "redis_fixture.h"

static struct redis_fixture server;
static struct redis_url url;

static void
check_aux_key(const char *key, const char *expected)
{
	char *name = lock_aux_key(key, ":fence");

	CHECK_STR(name, expected);
	free(name);
}

/* Releases l on c at `at`, noting first how many waiters are registered. */
struct release_later {
	struct lock *l;
	struct nodes *n;
	struct conn *admin;
	int64_t at;
	char waiters[16];
};

static void *
release_later(void *arg)
{
	struct release_later *r = arg;

	clock_sleep_until(r->at, -1);
	snprintf(r->waiters, sizeof(r->waiters), "%s",
		 redis_fixture_call(r->admin, "ZCARD", "{job}:waiting", NULL));
	lock_release(r->l, r->n, clock_now() + NS_PER_S, -1);
	return NULL;
}

struct thaw_later {
	int64_t at;
};

static void *
thaw_later(void *arg)
{
	clock_sleep_until(((struct thaw_later *)arg)->at, -1);
	redis_fixture_thaw(&server);
	return NULL;
}

/* What refusal() makes of the error text (RESP, without its "-" and CRLF). */
static const char *
refused(const char *error, char *buf, size_t size)
{
	char resp[512];
	struct reply *r;

	snprintf(resp, sizeof(resp), "-%s\r\n", error);
	r = reply_parse(resp, strlen(resp));
	refusal(r, buf, size);
	reply_free(r);
	return buf;
}

/* A refusal loses the script's location Redis adds, and a command the ACL refused inside a
 * script, in Redis 7.0's words or Valkey's, gets the advice a NOPERM does. */
static void
check_refusals(void)
{
	char buf[512];

	CHECK_STR(refused("NOPERM this user has no permissions to access one of the keys used as "
			  "arguments",
			  buf, sizeof(buf)),
		  "NOPERM this user has no permissions to access one of the keys used as "
		  "arguments; see LEAST PRIVILEGE in redlock-run(1)");
	CHECK_STR(refused("ERR The user executing the script can't run this command or "
			  "subcommand script: fd758d1589d044dd850a6f05d52f2eefd27f033f, on "
			  "@user_script:1.",
			  buf, sizeof(buf)),
		  "ERR The user executing the script can't run this command or subcommand; "
		  "see LEAST PRIVILEGE in redlock-run(1)");
	CHECK_STR(refused("ERR ACL failure in script: User q has no permissions to run the 'get' "
			  "command script: fd758d1589d044dd850a6f05d52f2eefd27f033f, on "
			  "@user_script:1.",
			  buf, sizeof(buf)),
		  "ERR ACL failure in script: User q has no permissions to run the 'get' "
		  "command; see LEAST PRIVILEGE in redlock-run(1)");
	CHECK_STR(refused("OOM command not allowed when used memory > 'maxmemory'. script: "
			  "fd758d1589d044dd850a6f05d52f2eefd27f033f, on @user_script:3.",
			  buf, sizeof(buf)),
		  "OOM command not allowed when used memory > 'maxmemory'");
}

/* A fence is the server's clock in µs, or just above: this one is from 2026. */
#define FENCE_2026 1767225600000000LL

int
main(void)
{
	struct lock a, b;
	struct nodes *ca, *cb;
	struct conn *admin;
	struct lock_state node[1];
	char pttl[32];
	int intr[2];
	int64_t t0;
	long long fence; /* the last one handed out */

	/* Helper keys share KEY's Redis Cluster hash slot. */
	check_aux_key("nightly", "{nightly}:fence");
	check_aux_key("{deploy}:prod", "{deploy}:prod:fence");
	check_aux_key("a{b", "{a{b}:fence");
	check_aux_key("a{}b", "a{}b:fence");
	check_aux_key("a}b", "a}b:fence");

	check_refusals();
	redis_fixture_start(&server, NULL);
	url = (struct redis_url){ .scheme = URL_UNIX, .path = server.socket };
	ca = nodes_new(&url, 1);
	cb = nodes_new(&url, 1);
	admin = conn_new(&url);

	/* The token: "<uuid>:<host>:<pid>", fresh each time. */
	CHECK_INT(lock_init(&a, "job", 10 * NS_PER_S), 0);
	CHECK_INT(lock_init(&b, "job", 10 * NS_PER_S), 0);
	CHECK(strcmp(a.value, b.value) != 0);
	CHECK_INT(strlen(a.value) > 38 && a.value[36] == ':' && a.value[14] == '4', 1);
	CHECK_STR(a.fence_key, "{job}:fence");
	CHECK_STR(a.wake_key, "{job}:wake");
	CHECK_STR(a.waiting_key, "{job}:waiting");

	/* A grant counts while two thirds of its lease are ahead: its answer came within
	 * TTL/3 of the request. */
	CHECK(lock_grant_in_time(&a, lock_lease_deadline(&a, 0), 3333 * NS_PER_MS));
	CHECK(!lock_grant_in_time(&a, lock_lease_deadline(&a, 0), 3334 * NS_PER_MS));
	CHECK(!lock_grant_in_time(&a, lock_lease_deadline(&a, 0), 11 * NS_PER_S));

	/* Who holds it, asked without touching it. */
	struct lock_state st;
	CHECK_INT(lock_query(&b, cb, clock_now() + NS_PER_S, NULL, node, &st), 0);
	CHECK(!st.held);
	CHECK_INT(st.fence, -1);

	/* Taking a free lock: the value is stored with the TTL; the fence starts at the server's
	 * clock in µs, below 2^53, and its counter is kept for an hour. */
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_ACQUIRED);
	CHECK(a.fence > FENCE_2026 && a.fence < (1LL << 53));
	fence = a.fence;
	CHECK(atoi(redis_fixture_call(admin, "PTTL", "{job}:fence", NULL)) > 3590000);
	CHECK(a.acquired_at > 0);
	CHECK(a.held_since >= a.acquired_at);
	CHECK_STR(redis_fixture_call(admin, "GET", "job", NULL), a.value);
	snprintf(pttl, sizeof(pttl), "%s", redis_fixture_call(admin, "PTTL", "job", NULL));
	CHECK(atoi(pttl) > 9000 && atoi(pttl) <= 10000);

	CHECK_INT(lock_query(&b, cb, clock_now() + NS_PER_S, NULL, node, &st), 0);
	CHECK(st.held);
	CHECK_STR(st.value, a.value);
	CHECK(st.ttl > 9 * NS_PER_S && st.ttl <= 10 * NS_PER_S);
	CHECK_INT(st.fence, fence);
	char host_only[300];
	long pid = 0;
	CHECK_INT(lock_parse_holder(a.value, host_only, sizeof(host_only), &pid), 0);
	CHECK_INT(pid, getpid());
	CHECK_INT(lock_parse_holder("by hand", host_only, sizeof(host_only), &pid), -1);
	CHECK_INT(lock_parse_holder("00000000-0000-4000-8000-000000000000:h:x", host_only,
				    sizeof(host_only), &pid),
		  -1);

	/* Another token finds it held, and learns by whom and for how long. */
	CHECK_INT(lock_acquire(&b, cb, 0, -1), LOCK_BUSY);
	CHECK_STR(b.holder, a.value);
	CHECK(b.holder_ttl > 9 * NS_PER_S);
	char who[LOCK_HOLDER_MAX], host[300];
	gethostname(host, sizeof(host));
	snprintf(host + strlen(host), sizeof(host) - strlen(host), ":%d", (int)getpid());
	CHECK_STR(lock_describe_holder(b.holder, who, sizeof(who)), host);
	CHECK_STR(lock_describe_holder("by\nhand", who, sizeof(who)), "by\\x0ahand");

	/* Asking again with the same token (a reply that was lost) settles it: still ours,
	 * same fence, lease refreshed. */
	CHECK_STR(redis_fixture_call(admin, "PEXPIRE", "job", "3000", NULL), "1");
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_ACQUIRED);
	CHECK_INT(a.fence, fence);
	CHECK(atoi(redis_fixture_call(admin, "PTTL", "job", NULL)) > 9000);
	CHECK_INT(atoll(redis_fixture_call(admin, "GET", "{job}:fence", NULL)), fence);

	/* Renewing: only the owner's value is extended, and the fence counter with it; loss is
	 * told apart. */
	CHECK_STR(redis_fixture_call(admin, "PEXPIRE", "job", "3000", NULL), "1");
	CHECK_STR(redis_fixture_call(admin, "PEXPIRE", "{job}:fence", "3000", NULL), "1");
	CHECK_INT(lock_renew(&a, ca, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_RENEWED);
	CHECK(atoi(redis_fixture_call(admin, "PTTL", "job", NULL)) > 9000);
	CHECK(atoi(redis_fixture_call(admin, "PTTL", "{job}:fence", NULL)) > 3590000);
	CHECK_INT(lock_renew(&b, cb, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_TAKEN);
	CHECK_STR(b.holder, a.value);
	CHECK_STR(redis_fixture_call(admin, "DEL", "job", NULL), "1");
	CHECK_INT(lock_renew(&a, ca, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_GONE);
	CHECK_STR(redis_fixture_call(admin, "EXISTS", "job", NULL), "0"); /* never re-created */
	CHECK_STR(redis_fixture_call(admin, "SET", "job", "someone-else", NULL), "OK");
	CHECK_INT(lock_renew(&a, ca, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_TAKEN);
	CHECK_STR(a.holder, "someone-else");
	CHECK_STR(redis_fixture_call(admin, "FLUSHALL", NULL), "OK");
	CHECK_INT(lock_renew(&a, ca, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_GONE_WITH_DATA);

	/* The server lost its data (FLUSHALL): the fence does not go back. */
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_ACQUIRED);
	CHECK(a.fence > fence);
	fence = a.fence;

	/* Releasing: only the owner's value is deleted. The fence keeps growing. */
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASE_GONE);
	CHECK_STR(redis_fixture_call(admin, "GET", "job", NULL), a.value);
	CHECK_INT(lock_release(&a, ca, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_STR(redis_fixture_call(admin, "EXISTS", "job", NULL), "0");
	CHECK_INT(lock_release(&a, ca, clock_now() + NS_PER_S, -1), LOCK_RELEASE_GONE);
	CHECK(a.answered_at > 0 && a.answered_at <= clock_now());
	/* A connection the server closed while idle is noticed before anything is sent on it:
	 * the release is not left unsure. */
	CHECK_STR(redis_fixture_call(admin, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes",
				     NULL),
		  "2");
	CHECK_INT(lock_release(&a, ca, clock_now() + NS_PER_S, -1), LOCK_RELEASE_GONE);
	CHECK_INT(lock_acquire(&b, cb, 0, -1), LOCK_ACQUIRED);
	CHECK(b.fence > fence);
	fence = b.fence;
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASED);

	/* One above the counter while it is ahead of the clock (acquisitions within a µs, or a
	 * clock behind another server's); the clock once a counter from before (an earlier
	 * release's, or by hand) is behind it. */
	snprintf(pttl, sizeof(pttl), "%lld", fence + 1000000000);
	CHECK_STR(redis_fixture_call(admin, "SET", "{job}:fence", pttl, NULL), "OK");
	CHECK_INT(lock_acquire(&b, cb, 0, -1), LOCK_ACQUIRED);
	CHECK_INT(b.fence, fence + 1000000001);
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_STR(redis_fixture_call(admin, "SET", "{job}:fence", "455", NULL), "OK");
	CHECK_INT(lock_acquire(&b, cb, 0, -1), LOCK_ACQUIRED);
	CHECK(b.fence > FENCE_2026 && b.fence < fence + 1000000000);
	CHECK(atoi(redis_fixture_call(admin, "PTTL", "{job}:fence", NULL)) > 3590000);
	fence = b.fence;
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASED);

	/* A server that forgot its scripts (restart, SCRIPT FLUSH) gets them again. */
	CHECK_STR(redis_fixture_call(admin, "SCRIPT", "FLUSH", NULL), "OK");
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_ACQUIRED);
	CHECK(a.fence > fence);
	fence = a.fence;

	/* Waiting: a waiter registers while it waits, and the release wakes it at once, long
	 * before the holder's lease (a minute) would have run out. */
	CHECK_STR(redis_fixture_call(admin, "PEXPIRE", "job", "60000", NULL), "1");
	struct release_later later = { &a, ca, admin, clock_now() + 300 * NS_PER_MS, "" };
	pthread_t releaser;
	pthread_create(&releaser, NULL, release_later, &later);
	t0 = clock_now();
	CHECK_INT(lock_acquire(&b, cb, WAIT_FOREVER, -1), LOCK_ACQUIRED);
	CHECK(clock_now() - t0 < 800 * NS_PER_MS);
	pthread_join(releaser, NULL);
	CHECK_STR(later.waiters, "1");
	CHECK_STR(redis_fixture_call(admin, "EXISTS", "{job}:waiting", "{job}:wake", NULL), "0");
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_ACQUIRED);

	/* A bounded wait ends BUSY when it runs out... */
	t0 = clock_now();
	CHECK_INT(lock_acquire(&b, cb, 300 * NS_PER_MS, -1), LOCK_BUSY);
	CHECK(clock_now() - t0 >= 300 * NS_PER_MS && clock_now() - t0 < 1500 * NS_PER_MS);
	/* ...an interruption ends it at once... */
	CHECK_INT(pipe(intr), 0);
	CHECK_INT(write(intr[1], "x", 1), 1);
	CHECK_INT(lock_acquire(&b, cb, WAIT_FOREVER, intr[0]), LOCK_INTERRUPTED);
	CHECK_STR(redis_fixture_call(admin, "GET", "job", NULL), a.value);
	/* ...and a lease that runs out hands the lock over. */
	CHECK_STR(redis_fixture_call(admin, "PEXPIRE", "job", "200", NULL), "1");
	CHECK_INT(lock_acquire(&b, cb, 5 * NS_PER_S, -1), LOCK_ACQUIRED);
	CHECK(b.fence > fence);
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASED);

	/* A reply that never comes: the server is frozen while our requests pile up, each
	 * timing out. When it thaws, the first one takes the lock and its reply is lost; the
	 * one asked again with the same token is told the lock is ours. One acquisition, one
	 * fence, no self-inflicted conflict. */
	lock_free(&a);
	CHECK_INT(lock_init(&a, "frozen", 10 * NS_PER_S), 0);
	a.io_timeout = 150 * NS_PER_MS;
	CHECK_INT(lock_query(&a, ca, clock_now() + NS_PER_S, NULL, node, &st), 0); /* connected */
	redis_fixture_freeze(&server);
	struct thaw_later when = { clock_now() + 500 * NS_PER_MS };
	pthread_t thawer;
	pthread_create(&thawer, NULL, thaw_later, &when);
	CHECK_INT(lock_acquire(&a, ca, WAIT_FOREVER, -1), LOCK_ACQUIRED);
	pthread_join(thawer, NULL);
	CHECK(a.fence > FENCE_2026);
	CHECK_INT(atoll(redis_fixture_call(admin, "GET", "{frozen}:fence", NULL)), a.fence);
	CHECK_STR(redis_fixture_call(admin, "GET", "frozen", NULL), a.value);

	/* With -n, a server that stays frozen is given up on after one request timeout. */
	lock_free(&b);
	CHECK_INT(lock_init(&b, "frozen-for-good", 10 * NS_PER_S), 0);
	b.io_timeout = 150 * NS_PER_MS;
	redis_fixture_freeze(&server);
	t0 = clock_now();
	CHECK_INT(lock_acquire(&b, cb, 0, -1), LOCK_UNAVAILABLE);
	CHECK(clock_now() - t0 < 30 * NS_PER_S); /* not ridden out as an outage (a minute) */
	CHECK(strstr(b.error, "if the lock was taken, it expires within 10s") != NULL);
	redis_fixture_thaw(&server);

	/* A semaphore (--limit 2): two holders, each with its own fence; a third finds it full,
	 * with the first lease to end; renewals and releases are each holder's own; another N,
	 * or the same key as a lock, is refused. */
	struct lock c;
	struct nodes *cc = nodes_new(&url, 1);
	struct lock_state sem, one[1];
	CHECK(cc != NULL);
	CHECK_INT(lock_init(&c, "sem", 10 * NS_PER_S), 0);
	lock_free(&a);
	lock_free(&b);
	CHECK_INT(lock_init(&a, "sem", 10 * NS_PER_S), 0);
	CHECK_INT(lock_init(&b, "sem", 10 * NS_PER_S), 0);
	a.limit = b.limit = c.limit = 2;
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_ACQUIRED);
	CHECK_INT(a.holders, 1);
	CHECK_INT(lock_acquire(&b, cb, 0, -1), LOCK_ACQUIRED);
	CHECK_INT(b.holders, 2);
	CHECK(b.fence > a.fence);
	CHECK_INT(lock_acquire(&c, cc, 0, -1), LOCK_BUSY);
	CHECK(strcmp(c.holder, a.value) == 0 || strcmp(c.holder, b.value) == 0); /* same ms */
	CHECK_INT(lock_query(&c, cc, clock_now() + NS_PER_S, NULL, one, &sem), 0);
	CHECK(sem.held);
	CHECK_INT(sem.limit, 2);
	CHECK_INT(sem.holders, 2);
	CHECK_STR(sem.holder[0].value, c.holder); /* the first lease to end */
	CHECK(sem.holder[1].ttl > 9 * NS_PER_S);
	CHECK_INT(lock_renew(&a, ca, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_RENEWED);
	CHECK_INT(lock_release(&a, ca, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_INT(lock_renew(&a, ca, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_GONE);
	CHECK_INT(lock_renew(&b, cb, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_RENEWED);
	c.limit = 3;
	CHECK_INT(lock_acquire(&c, cc, 0, -1), LOCK_UNAVAILABLE);
	CHECK(strstr(c.error,
		     "refused to take sem: sem is held with --limit 2, not with --limit 3") !=
	      NULL);
	c.limit = 1;
	CHECK_INT(lock_acquire(&c, cc, 0, -1), LOCK_UNAVAILABLE);
	CHECK(strstr(c.error, "refused to take sem: sem is held with --limit 2, not as a lock") !=
	      NULL);
	c.shared = true;
	CHECK_INT(lock_acquire(&c, cc, 0, -1), LOCK_UNAVAILABLE);
	CHECK(strstr(c.error, "refused to take sem: sem is held with --limit 2, not shared") !=
	      NULL);
	c.shared = false;
	c.limit = 2;
	CHECK_INT(lock_acquire(&c, cc, 0, -1), LOCK_ACQUIRED);
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_INT(lock_release(&c, cc, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_STR(redis_fixture_call(admin, "EXISTS", "sem", NULL), "0"); /* gone with its last */
	lock_free(&c);

	/* Shared (--shared): two shared holders; an exclusive one finds them, with the lease
	 * that ends last, and is registered; a shared newcomer then waits behind it; the last
	 * shared release wakes it, on its own list. */
	lock_free(&a);
	lock_free(&b);
	CHECK_INT(lock_init(&a, "rw", 10 * NS_PER_S), 0);
	CHECK_INT(lock_init(&b, "rw", 10 * NS_PER_S), 0);
	CHECK_INT(lock_init(&c, "rw", 10 * NS_PER_S), 0);
	a.shared = b.shared = true;
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_ACQUIRED);
	CHECK_INT(lock_acquire(&b, cb, 0, -1), LOCK_ACQUIRED);
	CHECK_INT(b.holders, 2);
	CHECK_INT(lock_query(&c, cc, clock_now() + NS_PER_S, NULL, one, &sem), 0);
	CHECK(sem.held && sem.shared && sem.limit == 0);
	CHECK_INT(sem.holders, 2);
	c.shared = true;
	CHECK_INT(lock_query(&c, cc, clock_now() + NS_PER_S, NULL, one, &sem), 0);
	CHECK(!sem.held); /* a shared one could get in */
	c.shared = false;
	CHECK_INT(lock_acquire(&c, cc, 0, -1), LOCK_BUSY);
	CHECK(strcmp(c.holder, a.value) == 0 || strcmp(c.holder, b.value) == 0);
	redis_fixture_call(admin, "ZADD", "{rw}:waiting", "9999999999999", c.value, NULL);
	CHECK_INT(lock_release(&a, ca, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	/* c is woken, and would wait again for b (a shared release cannot tell a holder that
	 * stays from a place that --min-hold keeps). */
	CHECK_STR(redis_fixture_call(admin, "LLEN", "{rw}:wake", NULL), "1");
	redis_fixture_call(admin, "DEL", "{rw}:wake", NULL);
	lock_free(&a);
	CHECK_INT(lock_init(&a, "rw", 10 * NS_PER_S), 0);
	a.shared = true;
	CHECK_INT(lock_acquire(&a, ca, 0, -1), LOCK_BUSY);
	CHECK_STR(a.holder, c.value); /* behind the exclusive waiter */
	CHECK_INT(lock_renew(&b, cb, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_RENEWED);
	CHECK_INT(lock_release(&b, cb, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_STR(redis_fixture_call(admin, "LLEN", "{rw}:wake", NULL), "1");
	CHECK_STR(redis_fixture_call(admin, "EXISTS", "rw", NULL), "0");
	/* (c was put in line by hand: its own attempts leave the line only when they put it
	 * there.) */
	redis_fixture_call(admin, "ZREM", "{rw}:waiting", c.value, NULL);
	CHECK_INT(lock_acquire(&c, cc, 0, -1), LOCK_ACQUIRED);
	/* The exclusive release wakes the shared waiter on its list; a shared renewal finds
	 * the exclusive holder. */
	/* (A shared waiter's place is scored by the negation of its end.) */
	redis_fixture_call(admin, "ZADD", "{rw}:waiting", "-9999999999999", "s:someone-shared",
			   NULL);
	CHECK_INT(lock_renew(&b, cb, clock_now() + NS_PER_S, -1, NULL, NULL), LOCK_TAKEN);
	CHECK_STR(b.holder, c.value);
	CHECK_INT(lock_release(&c, cc, clock_now() + NS_PER_S, -1), LOCK_RELEASED);
	CHECK_STR(redis_fixture_call(admin, "LLEN", "{rw}:wake-shared", NULL), "1");
	lock_free(&c);
	nodes_free(cc);

	lock_free(&a);
	lock_free(&b);
	nodes_free(ca);
	nodes_free(cb);
	conn_free(admin);
	redis_fixture_stop(&server);
	return check_done("lock");
}
