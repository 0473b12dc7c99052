/* query: --status said in words and as JSON, for every state a lock can be in. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "query.h"

/* The servers of these checks: INFO refused, nothing evicted, keys with a TTL evicted. */
static const struct eviction unknown = { "", 0, "" };
static const struct eviction safe = { "noeviction", 1 << 30, "" };
static const struct eviction evicting = { "volatile-lru", 1 << 30, "" };
static const struct eviction replica = { "noeviction", 0, "10.0.0.1:6379" };

/* What print writes for key and st, found on one server that says ev. */
static const char *
printed(void (*print)(FILE *, const struct status *), const char *key, const struct lock_state *st,
	const struct eviction *ev)
{
	static char out[4096];
	static struct status s;
	FILE *f = fmemopen(out, sizeof(out), "w");

	memset(&s, 0, sizeof(s));
	s.key = key;
	s.count = s.quorum = 1;
	s.decided = true;
	s.all = *st;
	s.node[0].address = "/run/redis.sock";
	s.node[0].st = *st;
	s.node[0].st.answered = true;
	s.node[0].ev = *ev;
	print(f, &s);
	fclose(f);
	/* The quorum's view comes first; the one node's is the same. */
	if (print == query_print_json)
		*strstr(out, ", \"quorum\": 1, \"nodes\": [") = '\0';
	return out;
}

#define as_json(key, st) printed(query_print_json, key, st, &unknown)
#define as_text(key, st) printed(query_print_text, key, st, &unknown)

int
main(void)
{
	struct lock_state never = { .held = false, .fence = -1, .held_for = -1 };
	struct lock_state free_now = { .held = false, .fence = 17, .held_for = -1 };
	struct lock_state held = {
		.held = true, .ttl = 12300 * NS_PER_MS, .fence = 18, .held_for = -1
	};
	struct lock_state by_hand = { .held = true, .ttl = -1, .fence = -1, .held_for = -1 };

	snprintf(held.value, sizeof(held.value), "0f1e2d3c-4b5a-4697-8877-665544332211:web-3:4242");
	snprintf(by_hand.value, sizeof(by_hand.value), "x\"y\\z\ttab\x01\xff\xc3\xa9");

	CHECK_STR(as_text("job", &never), "job is free (never taken)\n");
	CHECK_STR(as_text("job", &free_now), "job is free (last fence 17)\n");
	CHECK_STR(as_text("job", &held),
		  "job is held by web-3:4242 for another 12.3s (fence 18)\n");
	CHECK_STR(as_text("job", &by_hand), "job is held by x\"y\\z\\x09tab\\x01\\xff\\xc3\\xa9, "
					    "with no expiry (fence unknown)\n");

	CHECK_STR(as_json("job", &never),
		  "{\"key\": \"job\", \"held\": false, \"host\": null, "
		  "\"pid\": null, \"token\": null, \"ttl_ms\": null, "
		  "\"fence\": null, "
		  "\"held_ms\": null, \"kept\": false, \"process\": null, \"cancelled_by\": null, "
		  "\"queue\": \"fifo\", "
		  "\"waiting\": 0, \"in_order\": false, \"waiters\": [], \"stalled_ms\": null, "
		  "\"mode\": \"exclusive\", \"limit\": 1, "
		  "\"holders\": [], \"maxmemory_policy\": null, \"evictable\": null");
	CHECK_STR(as_json("job", &free_now),
		  "{\"key\": \"job\", \"held\": false, \"host\": null, "
		  "\"pid\": null, \"token\": null, \"ttl_ms\": null, "
		  "\"fence\": 17, "
		  "\"held_ms\": null, \"kept\": false, \"process\": null, \"cancelled_by\": null, "
		  "\"queue\": \"fifo\", "
		  "\"waiting\": 0, \"in_order\": false, \"waiters\": [], \"stalled_ms\": null, "
		  "\"mode\": \"exclusive\", "
		  "\"limit\": 1, \"holders\": [], \"maxmemory_policy\": null, "
		  "\"evictable\": null");
	CHECK_STR(as_json("deploy:prod", &held),
		  "{\"key\": \"deploy:prod\", \"held\": true, \"host\": \"web-3\", \"pid\": 4242, "
		  "\"token\": \"0f1e2d3c-4b5a-4697-8877-665544332211:web-3:4242\", "
		  "\"ttl_ms\": 12300, \"fence\": 18, "
		  "\"held_ms\": null, \"kept\": false, \"process\": null, \"cancelled_by\": null, "
		  "\"queue\": \"fifo\", "
		  "\"waiting\": 0, \"in_order\": false, \"waiters\": [], \"stalled_ms\": null, "
		  "\"mode\": \"exclusive\", "
		  "\"limit\": 1, \"holders\": [{\"host\": \"web-3\", \"pid\": 4242, "
		  "\"token\": \"0f1e2d3c-4b5a-4697-8877-665544332211:web-3:4242\", "
		  "\"ttl_ms\": 12300, \"kept\": false, \"process\": null}], "
		  "\"maxmemory_policy\": null, "
		  "\"evictable\": null");
	/* quotes and backslashes escaped, control characters as \u, a stray byte as U+FFFD,
	 * valid UTF-8 (é) kept */
	CHECK_STR(as_json("k\"1", &by_hand),
		  "{\"key\": \"k\\\"1\", \"held\": true, \"host\": null, \"pid\": null, "
		  "\"token\": \"x\\\"y\\\\z\\u0009tab\\u0001\\ufffd\xc3\xa9\", \"ttl_ms\": -1, "
		  "\"fence\": null, "
		  "\"held_ms\": null, \"kept\": false, \"process\": null, \"cancelled_by\": null, "
		  "\"queue\": \"fifo\", "
		  "\"waiting\": 0, \"in_order\": false, \"waiters\": [], \"stalled_ms\": null, "
		  "\"mode\": \"exclusive\", \"limit\": 1, "
		  "\"holders\": [{\"host\": null, \"pid\": null, "
		  "\"token\": \"x\\\"y\\\\z\\u0009tab\\u0001\\ufffd\xc3\xa9\", \"ttl_ms\": -1, "
		  "\"kept\": false, \"process\": null}], "
		  "\"maxmemory_policy\": null, \"evictable\": null");
	/* Taken a while ago, kept by --min-hold after its command, and a line. */
	struct lock_state kept = held;
	kept.held_for = 65 * NS_PER_S;
	kept.kept = true;
	snprintf(kept.value, sizeof(kept.value),
		 "0f1e2d3c-4b5a-4697-8877-665544332211:web-3:4242:kept");
	CHECK_STR(as_text("job", &kept), "job is kept taken by --min-hold for another 12.3s: the "
					 "command of web-3:4242 (taken 1m5s ago) has finished "
					 "(fence 18)\n");
	struct lock_state line = held;
	line.held_for = 2 * NS_PER_S;
	line.waiting = 3;
	line.waiting_shared = 1;
	line.nwaiters = 2;
	snprintf(line.waiter[0].value, sizeof(line.waiter[0].value),
		 "11111111-2222-3333-4444-555555555555:web-4:77");
	line.waiter[0].waited = 13 * NS_PER_S;
	snprintf(line.waiter[1].value, sizeof(line.waiter[1].value),
		 "11111111-2222-3333-4444-555555555556:web-5:78");
	line.waiter[1].shared = true;
	line.waiter[1].waited = 4 * NS_PER_S;
	line.ordered = true;
	CHECK_STR(as_text("job", &line),
		  "job is held by web-3:4242 (taken 2s ago) for another 12.3s (fence 18)\n"
		  "  3 waiting (--queue fifo), in arrival order: web-4:77 for 13s, web-5:78 "
		  "(shared) for 4s and 1 more\n");
	CHECK(strstr(as_json("job", &line),
		     "\"held_ms\": 2000, \"kept\": false, \"process\": null, \"cancelled_by\": "
		     "null, \"queue\": \"fifo\", "
		     "\"waiting\": 3, \"in_order\": true, "
		     "\"waiters\": [{\"host\": \"web-4\", \"pid\": 77, \"token\": "
		     "\"11111111-2222-3333-4444-555555555555:web-4:77\", \"mode\": \"exclusive\", "
		     "\"waited_ms\": 13000, \"process\": null}, {\"host\": \"web-5\", \"pid\": 78, "
		     "\"token\": "
		     "\"11111111-2222-3333-4444-555555555556:web-5:78\", \"mode\": \"shared\", "
		     "\"waited_ms\": 4000, \"process\": null}]") != NULL);
	/* Free, its first waiter not woken (its place outlasts a handoff): the line is stalled
	 * until that waiter looks again. */
	struct lock_state stall = line;
	stall.held = false;
	stall.waiting = 1;
	stall.nwaiters = 1;
	stall.waiter[0].place = 20 * NS_PER_S;
	CHECK(strstr(as_text("job", &stall), "  next: web-4:77, not woken ") != NULL);
	CHECK(strstr(as_json("job", &stall), "\"waited_ms\": 13000, \"process\": null}], "
					     "\"stalled_ms\": 20000, ") != NULL);
	stall.waiter[0].place = LOCK_HANDOFF; /* just woken: on its way */
	CHECK(strstr(as_text("job", &stall), "not woken") == NULL);
	CHECK(strstr(as_json("job", &stall), "\"stalled_ms\": null") != NULL);
	/* A deploy queue's discipline comes from its holder's value; a line without order lists
	 * no times. */
	snprintf(line.value, sizeof(line.value),
		 "0f1e2d3c-4b5a-4697-8877-665544332211:web-3:4242:latest:cancel");
	line.ordered = false;
	line.waiter[0].waited = line.waiter[1].waited = -1;
	CHECK_STR(as_text("job", &line),
		  "job is held by web-3:4242 (taken 2s ago) for another 12.3s (fence 18)\n"
		  "  3 waiting (--queue latest): web-4:77, web-5:78 (shared) and 1 more\n");
	CHECK(strstr(as_json("job", &line), "\"queue\": \"latest\", \"waiting\": 3, "
					    "\"in_order\": false") != NULL);
	CHECK(strstr(as_json("job", &line), "\"waited_ms\": null, \"process\": null}") != NULL);
	CHECK(strstr(as_json("job", &kept), "\"kept\": true, \"process\": null,") != NULL);
	/* truncated and overlong sequences are not UTF-8 either */
	struct lock_state bad = { .held = true, .ttl = 0, .fence = 1, .held_for = -1 };
	snprintf(bad.value, sizeof(bad.value), "\xe2\x82|\xc0\xaf|\xf0\x9f\x98\x80");
	CHECK(strstr(as_json("k", &bad),
		     "\"token\": \"\\ufffd\\ufffd|\\ufffd\\ufffd|\xf0\x9f\x98\x80\"") != NULL);
	/* The eviction trap: said plainly when a limit and a policy can delete a lock. */
	CHECK(!query_evictable(&unknown));
	CHECK(!query_evictable(&safe));
	CHECK(query_evictable(&evicting));
	CHECK(!query_evictable(&(struct eviction){ "allkeys-lru", 0, "" })); /* no limit: none */
	CHECK_STR(printed(query_print_text, "job", &never, &safe), "job is free (never taken)\n");
	CHECK_STR(printed(query_print_text, "job", &never, &evicting),
		  "job is free (never taken)\nwarning: this server may evict locks under memory "
		  "pressure (maxmemory-policy volatile-lru): set it to noeviction\n");
	CHECK(strstr(
		printed(query_print_json, "job", &never, &evicting),
		"\"holders\": [], \"maxmemory_policy\": \"volatile-lru\", \"evictable\": true"));
	CHECK(strstr(printed(query_print_json, "job", &never, &safe),
		     "\"maxmemory_policy\": \"noeviction\", \"evictable\": false"));
	CHECK(!query_evictable(&(struct eviction){ "allkeys-lru", 0, "" }));
	/* A replica asked: what it says may be behind its master, and --status says so. */
	CHECK_STR(printed(query_print_text, "job", &never, &replica),
		  "job is free (never taken)\nnote: /run/redis.sock is a replica of "
		  "10.0.0.1:6379: what it says may be behind its master; ask the master (or use a "
		  "Sentinel URL)\n");

	/* Three nodes, one of them down: the quorum's view, then each node's. */
	static struct status three;
	char out[4096];
	FILE *f;
	three.key = "job";
	three.count = 3;
	three.quorum = 2;
	three.decided = true;
	three.all = held;
	const char *addresses[] = { "10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379" };
	for (size_t i = 0; i < 3; i++) {
		three.node[i].address = addresses[i];
		three.node[i].st = held;
		three.node[i].st.answered = i != 2;
		three.node[i].ev = safe;
	}
	three.node[1].ev = evicting;
	snprintf(three.node[2].st.error, sizeof(three.node[2].st.error),
		 "cannot connect to 10.0.0.3:6379: connection refused");
	f = fmemopen(out, sizeof(out), "w");
	query_print_text(f, &three);
	fclose(f);
	CHECK_STR(out,
		  "job is held by web-3:4242 for another 12.3s (fence 18)\n"
		  "  on 10.0.0.1:6379: job is held by web-3:4242 for another 12.3s (fence 18)\n"
		  "  on 10.0.0.2:6379: job is held by web-3:4242 for another 12.3s (fence 18)\n"
		  "  on 10.0.0.3:6379: no answer (cannot connect to 10.0.0.3:6379: connection "
		  "refused)\n"
		  "warning: 10.0.0.2:6379 may evict locks under memory pressure "
		  "(maxmemory-policy volatile-lru): set it to noeviction\n");
	f = fmemopen(out, sizeof(out), "w");
	query_print_json(f, &three);
	fclose(f);
	CHECK(strstr(out, "\"ttl_ms\": 12300, \"kept\": false, \"process\": null}], "
			  "\"maxmemory_policy\": "
			  "\"volatile-lru\", "
			  "\"evictable\": true, \"quorum\": 2, \"nodes\": [{\"address\": "
			  "\"10.0.0.1:6379\", \"reachable\": true, \"held\": true,") != NULL);
	CHECK(strstr(out, "{\"address\": \"10.0.0.3:6379\", \"reachable\": false, \"error\": "
			  "\"cannot connect to 10.0.0.3:6379: connection refused\"}]}\n") != NULL);
	/* Undecided: "held" is null. */
	three.decided = false;
	f = fmemopen(out, sizeof(out), "w");
	query_print_json(f, &three);
	fclose(f);
	CHECK(strncmp(out, "{\"key\": \"job\", \"held\": null,", 28) == 0);
	return check_done("query");
}
