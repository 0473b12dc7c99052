#include "scripts.h"

#include <string.h>

#include "sha1.h"
#include "util.h"

/* The acquire scripts' end when the lock is held: with `handoff` ms (ARGV[3]) > 0, ARGV[1]
 * is registered in KEYS[4], the waiters, until that long after the `pttl` ms left of the
 * holder's lease, so that the release wakes it; otherwise it leaves that line. */
#define WAIT_IN_LINE                                                                               \
	"if handoff > 0 then\n"                                                                    \
	"  local t = redis.call('TIME')\n"                                                         \
	"  local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"                                    \
	"  local life = math.max(pttl, 0) + handoff\n"                                             \
	"  redis.call('ZADD', KEYS[4], now + life, ARGV[1])\n"                                     \
	"  if redis.call('PTTL', KEYS[4]) < life then\n"                                           \
	"    redis.call('PEXPIRE', KEYS[4], life)\n"                                               \
	"  end\n"                                                                                  \
	"else\n"                                                                                   \
	"  redis.call('ZREM', KEYS[4], ARGV[1])\n"                                                 \
	"end\n"

/*
 * KEYS[1] the lock, KEYS[2] its fence counter, KEYS[3] the wake list, KEYS[4] the waiters;
 * ARGV[1] our value, ARGV[2] the TTL in ms, ARGV[3] the handoff allowance in ms if we will
 * wait when it is held, else 0. (Ten arguments in all: Redis answers a longer command from
 * a client that has not authenticated with a protocol error instead of NOAUTH.)
 *
 * Returns {1, fence} when the lock is ours: taken now (the counter grows, and wake-ups
 * meant for an earlier release are cleared), or taken by an earlier request with the same
 * value whose reply was lost (its lease is refreshed and its fence returned).
 * Otherwise {0, the holder's PTTL, the holder's value}; a waiter is then registered, by
 * value, until shortly after the holder's lease would end, so that the release wakes it.
 */
static struct script script_acquire = {
	.writes = true,
	.text = "local holder = redis.call('GET', KEYS[1])\n"
		"if holder == ARGV[1] then\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
		"  redis.call('ZREM', KEYS[4], ARGV[1])\n"
		"  local fence = redis.call('GET', KEYS[2])\n"
		"  return {1, tonumber(fence) or redis.call('INCR', KEYS[2])}\n"
		"end\n"
		"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
		"  redis.call('ZREM', KEYS[4], ARGV[1])\n"
		"  redis.call('DEL', KEYS[3])\n"
		"  return {1, redis.call('INCR', KEYS[2])}\n"
		"end\n"
		"local pttl = redis.call('PTTL', KEYS[1])\n"
		"local handoff = tonumber(ARGV[3])\n" WAIT_IN_LINE "return {0, pttl, holder}\n",
};

/*
 * KEYS[1] the lock, KEYS[2] its fence counter; ARGV[1] our value, ARGV[2] the TTL in ms.
 * Returns 1 when the lease was extended; otherwise says what became of the lock: the new
 * holder's value, 0 if KEY is gone, -1 if the fence counter is gone as well.
 */
static struct script script_renew = {
	.writes = true,
	.text = "local holder = redis.call('GET', KEYS[1])\n"
		"if holder == ARGV[1] then\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
		"  return 1\n"
		"end\n"
		"if holder then return holder end\n"
		"if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end\n"
		"return -1\n",
};

/* The release scripts' end: the waiters whose time is over (KEYS[3], as of `now`) leave the
 * line, and if anyone is left, one wake-up goes on the wake list (KEYS[2]) for ARGV[2] ms. */
#define WAKE_ONE                                                                                   \
	"redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)\n"                                   \
	"if redis.call('EXISTS', KEYS[3]) == 1 then\n"                                             \
	"  redis.call('RPUSH', KEYS[2], 1)\n"                                                      \
	"  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"                                              \
	"end\n"

/*
 * KEYS[1] the lock, KEYS[2] the wake list, KEYS[3] the waiters, KEYS[4] the fence counter;
 * ARGV[1] our value, ARGV[2] the handoff allowance in ms, ARGV[3] how long the lock must stay
 * taken still, in ms (--min-hold), or 0. Returns 1 when deleted (or left to expire then);
 * when not ours, 0, or -1 if the fence counter is gone as well (the server lost its data).
 *
 * Deleting wakes the longest-blocked waiter, if any is registered and still within its
 * time: one element on the wake list, which BLPOP hands to exactly one client. Left to
 * expire, the lock wakes one too, which then blocks only until it expires.
 */
static struct script script_release = {
	.text = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
		"  if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end\n"
		"  return -1\n"
		"end\n"
		"if tonumber(ARGV[3]) > 0 then\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
		"else\n"
		"  redis.call('DEL', KEYS[1])\n"
		"end\n"
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n" WAKE_ONE "return 1\n",
};

/*
 * A semaphore (--limit N) is a sorted set at KEY: each holder's value, scored by when its lease
 * ends (server time, ms), and the member "limit:N", scored -1, that says which N the holders
 * agreed on. The key lives as long as its last holder. The scripts take the same KEYS as the
 * lock's, and answer in the same shapes.
 *
 * Acquire: ARGV[1] our value, ARGV[2] the TTL in ms, ARGV[3] "HANDOFF:N" (two numbers in one
 * argument: ten in all). {1, fence, holders} when a place is ours; {0, ms until the first
 * lease ends, its holder} when all N are taken (a waiter is registered as for the lock);
 * an error "LIMIT …" when KEY is held with another N.
 */
static struct script script_sem_acquire = {
	.writes = true,
	.text = "local handoff, limit = string.match(ARGV[3], '^(%d+):(%d+)$')\n"
		"handoff, limit = tonumber(handoff), tonumber(limit)\n"
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"local tag = 'limit:' .. limit\n"
		"redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now)\n"
		"local old = redis.call('ZRANGEBYSCORE', KEYS[1], -1, -1)[1]\n"
		"local count = redis.call('ZCARD', KEYS[1]) - (old and 1 or 0)\n"
		"if old and old ~= tag and count > 0 then\n"
		"  return redis.error_reply('LIMIT ' .. KEYS[1] .. ' is held with --limit ' ..\n"
		"    string.sub(old, 7) .. ', not ' .. limit)\n"
		"end\n"
		"local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
		"if mine or count < limit then\n"
		"  if old and old ~= tag then redis.call('ZREM', KEYS[1], old) end\n"
		"  redis.call('ZADD', KEYS[1], -1, tag, now + tonumber(ARGV[2]), ARGV[1])\n"
		"  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		"  redis.call('PEXPIREAT', KEYS[1], last[2])\n"
		"  redis.call('ZREM', KEYS[4], ARGV[1])\n"
		"  local fence = mine and tonumber(redis.call('GET', KEYS[2]))\n"
		"  return {1, fence or redis.call('INCR', KEYS[2]), mine and count or count + 1}\n"
		"end\n"
		"local first = redis.call('ZRANGEBYSCORE', KEYS[1], 0, '+inf', 'WITHSCORES', "
		"'LIMIT', 0, 1)\n"
		"local pttl = first[2] - now\n" WAIT_IN_LINE "return {0, pttl, first[1]}\n",
};

/* A semaphore's renewal: as the lock's (1, 0 or -1), our place extended to a full TTL. */
static struct script script_sem_renew = {
	.writes = true,
	.text = "local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"local score = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
		"if score and tonumber(score) > now then\n"
		"  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
		"  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		"  redis.call('PEXPIREAT', KEYS[1], last[2])\n"
		"  return 1\n"
		"end\n"
		"if score then redis.call('ZREM', KEYS[1], ARGV[1]) end\n"
		"if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end\n"
		"return -1\n",
};

/* A semaphore's release: as the lock's, for our place; the key goes with its last holder. */
static struct script script_sem_release = {
	.text = "local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"local score = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
		"if not score or tonumber(score) <= now then\n"
		"  if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end\n"
		"  return -1\n"
		"end\n"
		"if tonumber(ARGV[3]) > 0 then\n"
		"  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])\n"
		"else\n"
		"  redis.call('ZREM', KEYS[1], ARGV[1])\n"
		"end\n"
		"if redis.call('ZCOUNT', KEYS[1], now + 1, '+inf') == 0 then\n"
		"  redis.call('DEL', KEYS[1])\n"
		"else\n"
		"  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		"  redis.call('PEXPIREAT', KEYS[1], last[2])\n"
		"end\n" WAKE_ONE "return 1\n",
};

/* KEYS[1] the lock, KEYS[2] its fence counter. Returns {value, PTTL, fence}, with false for
 * a value or fence that is not there; for a semaphore, {-1, "limit:N", fence, then each live
 * holder's value and ms left, the first to end first, 16 at most}. Reads only. */
struct script script_query = {
	.text = "if redis.call('TYPE', KEYS[1]).ok == 'zset' then\n"
		"  local t = redis.call('TIME')\n"
		"  local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"  local out = {-1, redis.call('ZRANGEBYSCORE', KEYS[1], -1, -1)[1] or false,\n"
		"               redis.call('GET', KEYS[2])}\n"
		"  local h = redis.call('ZRANGEBYSCORE', KEYS[1], now + 1, '+inf', 'WITHSCORES',\n"
		"                       'LIMIT', 0, 16)\n"
		"  for i = 1, #h, 2 do\n"
		"    out[#out + 1] = h[i]\n"
		"    out[#out + 1] = h[i + 1] - now\n"
		"  end\n"
		"  out[#out + 1] = redis.call('ZCOUNT', KEYS[1], now + 1, '+inf')\n"
		"  return out\n"
		"end\n"
		"return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),\n"
		"        redis.call('GET', KEYS[2])}\n",
};

/* KEYS[1] a fence counter; ARGV[1] a fence. Raises the counter to the fence if it is lower,
 * never lowers it. Returns 1. */
struct script script_fence = {
	.writes = true,
	.text = "local f = tonumber(ARGV[1])\n"
		"if (tonumber(redis.call('GET', KEYS[1])) or 0) < f then\n"
		"  redis.call('SET', KEYS[1], ARGV[1])\n"
		"end\n"
		"return 1\n",
};

static struct script *const scripts[] = {
	&script_acquire, &script_renew,       &script_release,   &script_query,
	&script_fence,   &script_sem_acquire, &script_sem_renew, &script_sem_release,
};

const struct kind kind_exclusive = { &script_acquire, &script_renew, &script_release };
const struct kind kind_semaphore = { &script_sem_acquire, &script_sem_renew, &script_sem_release };

void
scripts_init(void)
{
	for (size_t i = 0; i < ARRAY_LEN(scripts); i++)
		if (!scripts[i]->sha[0])
			sha1_hex(scripts[i]->text, strlen(scripts[i]->text), scripts[i]->sha);
}
