/* query: --status said in words and as JSON, for every state a lock can be in. */
#include <stdlib.h>

#include "check.h"
#include "clock.h"
#include "query.h"

/* The servers of these checks: INFO refused, nothing evicted, keys with a TTL evicted. */
static const struct eviction unknown = { "", 0 };
static const struct eviction safe = { "noeviction", 1 << 30 };
static const struct eviction evicting = { "volatile-lru", 1 << 30 };

/* What print writes for key and st, on a server that says ev. */
static const char *
printed(void (*print)(FILE *, const char *, const struct lock_state *, const struct eviction *),
	const char *key, const struct lock_state *st, const struct eviction *ev)
{
	static char out[2048];
	FILE *f = fmemopen(out, sizeof(out), "w");

	print(f, key, st, ev);
	fclose(f);
	return out;
}

#define as_json(key, st) printed(query_print_json, key, st, &unknown)
#define as_text(key, st) printed(query_print_text, key, st, &unknown)

int
main(void)
{
	struct lock_state never = { .held = false, .fence = -1 };
	struct lock_state free_now = { .held = false, .fence = 17 };
	struct lock_state held = { .held = true, .ttl = 12300 * NS_PER_MS, .fence = 18 };
	struct lock_state by_hand = { .held = true, .ttl = -1, .fence = -1 };

	snprintf(held.value, sizeof(held.value), "0f1e2d3c-4b5a-4697-8877-665544332211:web-3:4242");
	snprintf(by_hand.value, sizeof(by_hand.value), "x\"y\\z\ttab\x01\xff\xc3\xa9");

	CHECK_STR(as_text("job", &never), "job is free (never taken)\n");
	CHECK_STR(as_text("job", &free_now), "job is free (last fence 17)\n");
	CHECK_STR(as_text("job", &held),
		  "job is held by web-3:4242 for another 12.3s (fence 18)\n");
	CHECK_STR(as_text("job", &by_hand), "job is held by x\"y\\z\\x09tab\\x01\\xff\\xc3\\xa9, "
					    "with no expiry (never taken)\n");

	CHECK_STR(as_json("job", &never), "{\"key\": \"job\", \"held\": false, \"host\": null, "
					  "\"pid\": null, \"token\": null, \"ttl_ms\": null, "
					  "\"fence\": null, \"maxmemory_policy\": null, \"evictable\": null}\n");
	CHECK_STR(as_json("job", &free_now), "{\"key\": \"job\", \"held\": false, \"host\": null, "
					     "\"pid\": null, \"token\": null, \"ttl_ms\": null, "
					     "\"fence\": 17, \"maxmemory_policy\": null, "
					     "\"evictable\": null}\n");
	CHECK_STR(as_json("deploy:prod", &held),
		  "{\"key\": \"deploy:prod\", \"held\": true, \"host\": \"web-3\", \"pid\": 4242, "
		  "\"token\": \"0f1e2d3c-4b5a-4697-8877-665544332211:web-3:4242\", "
		  "\"ttl_ms\": 12300, \"fence\": 18, \"maxmemory_policy\": null, "
		  "\"evictable\": null}\n");
	/* quotes and backslashes escaped, control characters as \u, a stray byte as U+FFFD,
	 * valid UTF-8 (é) kept */
	CHECK_STR(as_json("k\"1", &by_hand),
		  "{\"key\": \"k\\\"1\", \"held\": true, \"host\": null, \"pid\": null, "
		  "\"token\": \"x\\\"y\\\\z\\u0009tab\\u0001\\ufffd\xc3\xa9\", \"ttl_ms\": -1, "
		  "\"fence\": null, \"maxmemory_policy\": null, \"evictable\": null}\n");
	/* truncated and overlong sequences are not UTF-8 either */
	struct lock_state bad = { .held = true, .ttl = 0, .fence = 1 };
	snprintf(bad.value, sizeof(bad.value), "\xe2\x82|\xc0\xaf|\xf0\x9f\x98\x80");
	CHECK(strstr(as_json("k", &bad),
		     "\"token\": \"\\ufffd\\ufffd|\\ufffd\\ufffd|\xf0\x9f\x98\x80\"") != NULL);
	/* The eviction trap: said plainly when a limit and a policy can delete a lock. */
	CHECK(!query_evictable(&unknown));
	CHECK(!query_evictable(&safe));
	CHECK(query_evictable(&evicting));
	CHECK(!query_evictable(&(struct eviction){ "allkeys-lru", 0 })); /* no limit: none */
	CHECK_STR(printed(query_print_text, "job", &never, &safe), "job is free (never taken)\n");
	CHECK_STR(printed(query_print_text, "job", &never, &evicting),
		  "job is free (never taken)\nwarning: this server may evict locks under memory "
		  "pressure (maxmemory-policy volatile-lru): set it to noeviction\n");
	CHECK(strstr(printed(query_print_json, "job", &never, &evicting),
		     "\"fence\": null, \"maxmemory_policy\": \"volatile-lru\", \"evictable\": true}\n"));
	CHECK(strstr(printed(query_print_json, "job", &never, &safe),
		     "\"maxmemory_policy\": \"noeviction\", \"evictable\": false}\n"));
	return check_done("query");
}
