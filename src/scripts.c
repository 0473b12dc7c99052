#include "scripts.h"

#include <string.h>

/* The scripts are Lua text, some of them longer than the 4095 characters that C guarantees a
 * string literal (-Woverlength-strings): GCC and Clang, which build redlock-run, take literals
 * of any length. */
#pragma GCC diagnostic ignored "-Woverlength-strings"

#include "lock.h"
#include "util.h"

#define STRINGIFY(x) #x
#define STR(x) STRINGIFY(x)
#define HANDOFF_MS STR(LOCK_HANDOFF_MS)

/* The scripts are Lua, laid out as Lua is read, not as clang-format would. */
/* clang-format off */

/* Server time in ms, as `now`. */
#define NOW                                                                                        \
	"local t = redis.call('TIME')\n"                                                           \
	"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"

/* `clock()`: the same, asked of the server once, the first time a script needs it (a grant on
 * a free lock never does); `now_us` then holds it in µs. */
#define CLOCK                                                                                      \
	"local now, now_us\n"                                                                      \
	"local function clock()\n"                                                                 \
	"  if not now then\n"                                                                      \
	"    local t = redis.call('TIME')\n"                                                       \
	"    now_us = t[1] * 1000000 + t[2]\n"                                                     \
	"    now = math.floor(now_us / 1000)\n"                                                    \
	"  end\n"                                                                                  \
	"  return now\n"                                                                           \
	"end\n"

/* How long a fence counter outlives the last acquisition or renewal, at least (ms): an unused
 * lock leaves nothing behind for longer (DESIGN §3). */
#define FENCE_KEEP_MS "3600000"

/* How long a broken holder's mark outlives the lease it broke (ms): a release that a failover or
 * a frozen server delays past that lease (by LOCK_OUTAGE at most) still learns of the break. */
#define BROKEN_KEEP_MS "60000"

/* `counter(v)`: a stored fence counter, or nil for what no fence can be (written by something
 * else: not a whole number below 2^53 - 1), which counts as lost. */
#define COUNTER                                                                                    \
	"local function counter(v)\n"                                                              \
	"  local n = tonumber(v)\n"                                                                \
	"  return n and n >= 0 and n < 9007199254740991 and n == math.floor(n) and n or nil\n"    \
	"end\n"

/*
 * `fence()`: this acquisition's fence, max(the stored one + 1, the server's clock in µs),
 * stored back in KEYS[2] for FENCE_KEEP_MS, or the lease (`ttl`) when that is longer. It grows
 * by one per acquisition while the server keeps its data, and with the clock once the counter
 * is gone (lost in a restart, expired, or short of increments a failover lost): never the same
 * twice, never back, as long as the server's clock does not step back by more than that. It
 * stays below 2^53 (until the year 2255), which JSON readers keep exact, and is formatted whole
 * ('%.0f': Lua's numbers are doubles). SET ... GET reads and writes it in one command; a server
 * older than 6.2 refuses that, and takes GET and SET. A counter that no fence can be (see
 * COUNTER) counts as gone; a key of another type there is left as it is, and the fence is the
 * clock's. Returns the fence, and the counter it found (nil when none).
 */
#define FENCE                                                                                      \
	COUNTER                                                                                    \
	"local function fence()\n"                                                                \
	"  local t = redis.call('TIME')\n"                                                         \
	"  local now, keep = t[1] * 1000000 + t[2], math.max(ttl, " FENCE_KEEP_MS ")\n"            \
	"  local old = redis.pcall('SET', KEYS[2], string.format('%.0f', now), 'PX', keep, 'GET')\n" \
	"  local stored = type(old) ~= 'table'\n"                                                  \
	"  if not stored and string.find(old.err or '', 'WRONGTYPE', 1, true) then\n"              \
	"    return now\n"                                                                          \
	"  end\n"                                                                                   \
	"  if not stored then old = redis.call('GET', KEYS[2]) end\n"                             \
	"  local f = math.max((counter(old) or 0) + 1, now)\n"                                     \
	"  if f ~= now or not stored then\n"                                                       \
	"    redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', keep)\n"                    \
	"  end\n"                                                                                   \
	"  return f, counter(old)\n"                                                                \
	"end\n"

/* `data_age()`: how long the server has run, in seconds, and its run id, when `age` (see ARGS)
 * asks; -1 when it does not, or when INFO is refused. Without persistence, a server's data is
 * that old: one that restarted empty less than a lease ago may not count towards a new quorum
 * (DESIGN §3b); and two URLs of one quorum that reach the same server have one run id. (Last in
 * a table, both values go in it.) */
#define AGE                                                                                        \
	"local function data_age()\n"                                                             \
	"  if not age then return -1 end\n"                                                        \
	"  local info = redis.pcall('INFO', 'server')\n"                                           \
	"  if type(info) ~= 'string' then return -1 end\n"                                         \
	"  return tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or -1,\n"                \
	"    string.match(info, 'run_id:(%x+)') or ''\n"                                           \
	"end\n"

/* A renewal's or release's answer when KEY is not ours: {0, or -1 when its fence counter (a key)
 * is gone as well, how long the server has run (s; -1 when INFO is refused), and who broke the
 * lock from under us with --break ("HOST:PID", from `broken`, a key: see script_break), if
 * anyone did}. The uptime tells a key lost in a restart while the command ran from one that
 * expired, or that our own earlier request deleted. */
/* `broken_by(broken, me)`: who broke our lock with --break (the hash `broken`, see
 * script_break), or false; false too for a user not allowed HGET (an ACL made for 0.2.0), who
 * then hears that the lock went, as before. The same hash tells runs of a deploy queue what
 * others did to them, "superseded by HOST:PID" or "cancelled by HOST:PID" (see QUEUE_RULES): a
 * fate with a space in it is not a break. */
#define BROKEN_BY                                                                                  \
	"local function broken_by(broken, me)\n"                                                   \
	"  local by = redis.pcall('HGET', broken, me)\n"                                           \
	"  return type(by) == 'string' and not string.find(by, ' ', 1, true) and by\n"             \
	"end\n"

/* `cancelled_by(fates, v)`: who cancelled the holder v ("HOST:PID", see QUEUE_RULES), or false;
 * only a value that consented to it (":latest:cancel") pays for asking. */
#define CANCELLED_BY                                                                               \
	"local function cancelled_by(fates, v)\n"                                                 \
	"  if not string.find(v, ':%d+:latest:cancel') then return false end\n"                   \
	"  local fate = redis.pcall('HGET', fates, v)\n"                                          \
	"  return type(fate) == 'string' and string.sub(fate, 1, 13) == 'cancelled by ' and\n"   \
	"    string.sub(fate, 14)\n"                                                              \
	"end\n"

#define NOT_OURS(fence, broken, me)                                                                \
	"  local info = redis.pcall('INFO', 'server')\n"                                           \
	"  return {redis.call('EXISTS', " fence ") == 1 and 0 or -1, type(info) == 'string' and\n" \
	"    tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or -1,\n"                    \
	"    broken_by(" broken ", " me ")}\n"

/* The acquire scripts' ARGV[1], "TTL:HANDOFF:N:IN_LINE:AGE:ORDERED:ARRIVED:VALUE", in one
 * argument (which leaves room for six keys within ten arguments): the lease `ttl` in ms,
 * `handoff` (see WAIT_IN_LINE), `limit` (a semaphore's N; 1 otherwise), `in_line`, true when an
 * earlier attempt may have put us in line, which a grant then takes us out of (LEAVE_LINE),
 * `age`, true when a grant must say how old the server's data is (see AGE), `ordered`, true when
 * the line keeps arrival order (one node: see LINE), `arrived`, when a --queue latest run first
 * took its place in line (server µs, as the script said; 0 before, see QUEUE_RULES), and our
 * `value`, the token. A first attempt on one server, the common case, pays for none of it. */
/*
 * `alien()`: what KEY holds when redlock-run did not write it, or nil when it did (or KEY is
 * gone): a string that is not a token ("<uuid>:<host>:<pid>", and ":kept" once released with
 * --min-hold), a token or a sorted set that
 * never expires (redlock-run's always do), a sorted set without a tag (see the semaphore's
 * scripts), or another type. `foreign()`: the error reply that says so, "FOREIGN what". Only
 * called where KEY is already found to be out of the ordinary: the common paths pay nothing.
 */
#define TOKEN_PATTERN "'^%x+%-%x+%-%x+%-%x+%-%x+:.*:%d+[:%a]*$'"
#define ALIEN                                                                                      \
	"local function alien()\n"                                                                 \
	"local kind = redis.call('TYPE', KEYS[1]).ok\n"                                            \
	"if kind == 'string' then\n"                                                               \
	"local v = redis.call('GET', KEYS[1])\n"                                                   \
	"if not string.match(v, " TOKEN_PATTERN ") then\n"                                         \
	"return 'holds the string \"' .. string.gsub(string.sub(v, 1, 40), '[^%w%p ]', '?') .. '\"'\n" \
	"end\n"                                                                                    \
	"if redis.call('PTTL', KEYS[1]) < 0 then return 'holds a token that never expires' end\n"  \
	"elseif kind == 'zset' then\n"                                                             \
	"local tag = redis.call('ZRANGEBYSCORE', KEYS[1], -1, -1)[1]\n"                            \
	"if tag ~= 'shared' and not (tag and string.match(tag, '^limit:%d+$')) then\n"             \
	"return 'holds a sorted set with no shared or limit:N member at -1'\n"                     \
	"end\n"                                                                                    \
	"if redis.call('PTTL', KEYS[1]) < 0 then return 'holds a sorted set that never expires' end\n" \
	"elseif kind ~= 'none' then return 'holds a ' .. kind end\n"                               \
	"end\n"                                                                                    \
	"local function foreign(what)\n"                                                           \
	"return redis.error_reply('FOREIGN ' .. (what or alien() or 'changed as it was read'))\n"  \
	"end\n"

/*
 * `permitted(places)`: before a first attempt changes anything, whether this Redis user may run
 * the commands that the run's scripts will need (its renewals and release included; INFO and
 * HGET, asked with pcall, they do without): a lock's; the line's, and BLPOP, which the run sends
 * itself, unless it never waits (-n: a fleet that only ever runs -n may leave those out); a
 * semaphore's or shared lock's too when `places`; HGET and HSET for --queue latest. An error
 * reply naming the first it may not, else nil. Without it, a command left out of the ACL is
 * refused only where a script runs it: at a renewal or the release, or halfway through a
 * script, which keeps what it changed before. Keys need no such check: every key a script
 * touches is declared, and the server checks those first. Redis 7.0 and later (and Valkey) can
 * tell; an older server cannot, and is not asked, nor about a command it does not know
 * (renamed away: the check raises an error). A waiter's looks, the handoff among them, pay
 * nothing; a first attempt, 4 µs. Each command is asked with the arguments it takes, on the
 * keys it would touch (Redis 7.0 crashes on a GET asked without its key).
 */
#define PERMITTED                                                                                  \
	"local function permitted(places)\n"                                                       \
	"  if in_line or not redis.acl_check_cmd then return end\n"                                \
	"  local k, w, p, f = KEYS[1], KEYS[3], KEYS[4], KEYS[6]\n"                                \
	"  local function no(c, ...)\n"                                                            \
	"    local known, yes = pcall(redis.acl_check_cmd, c, ...)\n"                              \
	"    if known and not yes then return c end\n"                                             \
	"  end\n"                                                                                  \
	"  local c = no('GET', k) or no('SET', k, '0') or no('DEL', k) or no('EXISTS', k) or\n"    \
	"    no('PEXPIRE', k, '1') or no('PTTL', k) or no('TIME') or no('ZREM', p, '0') or\n"      \
	"    (handoff > 0 or places) and (no('TYPE', k) or no('ZADD', p, '0', '0') or\n"           \
	"      no('ZRANGE', p, '0', '0') or no('ZSCORE', p, '0') or\n"                             \
	"      no('ZRANGEBYSCORE', p, '0', '0') or no('ZREMRANGEBYSCORE', p, '0', '0') or\n"       \
	"      no('ZCOUNT', p, '0', '0') or no('RPUSH', w, '0')) or\n"                             \
	"    handoff > 0 and no('BLPOP', w, '0') or\n"                                             \
	"    places and (no('ZCARD', k) or no('PEXPIREAT', k, '0')) or\n"                          \
	"    discipline(value) == 'latest' and (no('HGET', f, '0') or no('HSET', f, '0', '0'))\n"  \
	"  if c then\n"                                                                            \
	"    return redis.error_reply(\"NOPERM this user has no permissions to run the '\" ..\n"   \
	"      string.lower(c) .. \"' command, which a run with these options needs\")\n"          \
	"  end\n"                                                                                  \
	"end\n"

#define ARGS                                                                                       \
	"local ttl, handoff, limit, in_line, age, ordered, arrived, value =\n"                     \
	"  string.match(ARGV[1], '^(%d+):(%d+):(%d+):([01]):([01]):([01]):(%d+):(.+)$')\n"        \
	"ttl, handoff, limit = tonumber(ttl), tonumber(handoff), tonumber(limit)\n"                \
	"arrived = tonumber(arrived)\n"                                                            \
	"in_line, age, ordered = in_line == '1', age == '1', ordered == '1'\n"                     \
	CLOCK FENCE AGE ALIEN LINE QUEUE_RULES PERMITTED
/* A grant takes us out of the line we may be in, and clears the wake-ups meant for us. */
#define LEAVE_LINE                                                                                 \
	"if in_line then\n"                                                                        \
	"  redis.call('ZREM', places, me)\n"                                                       \
	"  redis.call('ZREM', queue_of(me), me)\n"                                                 \
	"  redis.call('DEL', list_of(me), wake)\n"                                                 \
	"end\n"

/*
 * The line. The scripts that touch it take the same keys: KEYS[1] the lock, KEYS[2] its fence
 * counter, KEYS[3] `wake`, KEYS[4] `places`, KEYS[5] `queue`, KEYS[6] `fates` (see BROKEN_BY).
 *
 * `places` is a sorted set of waiters, each scored by when its place ends: shortly after the
 * lease it waits out (server time, ms). An exclusive waiter (or a semaphore's) is its value,
 * scored by that time; a shared one is "s:" and its value, scored by the time's negation. So
 * every place that is over, of either kind, lies in [-now, now], and each kind is counted with
 * one ZCOUNT.
 *
 * Arrival order is kept in `queue` (exclusive and semaphore waiters) and `queue`-shared (shared
 * ones): sorted sets of the same members, scored by when each first took its place (server
 * time, µs). The first of them whose place lasts goes first; those whose places are over leave
 * both sets as they are met at the front (`firsts`), so no script reads the whole line, and a
 * handoff costs the same whatever its length (DESIGN §3). A release wakes whoever is next on a
 * wake list of their own, `wake`:VALUE (`list_of`), which only they block on, and leaves an
 * exclusive one a handoff allowance to take its turn (its place then ends; woken again by a
 * later release, it is given no more: one killed in a semaphore's line, where releases keep
 * coming, would keep a place for ever). One killed at the front would hold the others back
 * until their next look, at most the lease they wait out: the releaser asks a round trip later
 * whether it came (script_follow_up), which costs a handoff a small script, where waking the one
 * after it too would cost a look, and doubled what a handoff costs the server. A line over a
 * Redlock quorum keeps no order (`ordered` is false: each server would see arrivals in an
 * order of its own, and keeping each one's could leave every contender with a minority), nor
 * do waiters of redlock-run 0.2.0: they are woken on the shared lists `wake` and `wake`-shared,
 * as before.
 *
 * (A release cannot name in KEYS the waiter it will wake: the wake lists are named here, from
 * KEYS[3], in KEY's hash slot like every other key.)
 *
 * `wake_up(w)`: pushes to w's wake list, and leaves w a handoff's time to come (its place ends
 * then, unless it comes or looks again). `wake_shared_before(at)`: wakes the shared waiters that
 * came before `at` (µs; all of them when nil), and says how many.
 *
 * `pass(w)`: a contender that finds a place free but waiter w before it wakes w and leaves it a
 * handoff's time to come, as a release does (one killed is so passed over a second later, rather
 * than holding back everyone behind it for as long as its place lasts); returns what w's place
 * has left, at most that. `pass_shared(at)`: so for every shared waiter that came before `at`
 * (µs; before the first exclusive waiter when nil), who would all go together (several killed
 * together, a CI job cancelled whole, are passed over in one handoff, not one each).
 *
 * `lengthen(key, ms, made)`: key lives ms more, unless it has longer. PEXPIRE GT does it in one
 * command (Redis 7.0 and later); a key without expiry counts as endless there, so a key that
 * may have just been `made` is asked its PTTL and given one. An older server asks PTTL first.
 */
#define LINE                                                                                       \
	"local wake, places, queue, fates = KEYS[3], KEYS[4], KEYS[5], KEYS[6]\n"                  \
	"local function queue_of(w)\n"                                                             \
	"  return string.sub(w, 1, 2) == 's:' and queue .. '-shared' or queue\n"                  \
	"end\n"                                                                                    \
	"local function list_of(w)\n"                                                              \
	"  return wake .. ':' .. (string.sub(w, 1, 2) == 's:' and string.sub(w, 3) or w)\n"        \
	"end\n"                                                                                    \
	"local function push(list)\n"                                                              \
	"  redis.call('RPUSH', list, 1)\n"                                                         \
	"  redis.call('PEXPIRE', list, " HANDOFF_MS ")\n"                                          \
	"end\n"                                                                                    \
	"local function lengthen(key, ms, made)\n"                                                 \
	"  local longer = redis.pcall('PEXPIRE', key, ms, 'GT')\n"                                 \
	"  if type(longer) == 'table' and redis.call('PTTL', key) < ms or\n"                       \
	"     longer == 0 and made and redis.call('PTTL', key) == -1 then\n"                       \
	"    redis.call('PEXPIRE', key, ms)\n"                                                     \
	"  end\n"                                                                                  \
	"end\n"                                                                                    \
	"local ends = {}\n"                                                                        \
	"local function firsts(q, n)\n"                                                            \
	"  local out, from = {}, 0\n"                                                              \
	"  while #out < 2 * n do\n"                                                                \
	"    local h = redis.call('ZRANGE', q, from, from + n - 1 - #out / 2, 'WITHSCORES')\n"     \
	"    if #h == 0 then break end\n"                                                          \
	"    for i = 1, #h, 2 do\n"                                                                \
	"      local s = redis.call('ZSCORE', places, h[i])\n"                                     \
	"      if s and math.abs(tonumber(s)) > clock() then\n"                                    \
	"        ends[h[i]] = math.abs(tonumber(s))\n"                                             \
	"        out[#out + 1] = h[i]\n"                                                           \
	"        out[#out + 1] = tonumber(h[i + 1])\n"                                             \
	"        from = from + 1\n"                                                                \
	"      else\n"                                                                             \
	"        redis.call('ZREM', q, h[i])\n"                                                    \
	"        if s then redis.call('ZREM', places, h[i]) end\n"                                 \
	"      end\n"                                                                              \
	"    end\n"                                                                                \
	"  end\n"                                                                                  \
	"  return out\n"                                                                           \
	"end\n"                                                                                    \
	"local function place_left(w)\n"                                                           \
	"  return (ends[w] or math.abs(tonumber(redis.call('ZSCORE', places, w)))) - clock()\n"    \
	"end\n"                                                                                    \
	"local function pass(w)\n"                                                                 \
	"  push(list_of(w))\n"                                                                     \
	"  local left = place_left(w)\n"                                                           \
	"  if left <= " HANDOFF_MS " then return left end\n"                                        \
	"  local sign = string.sub(w, 1, 2) == 's:' and -1 or 1\n"                                 \
	"  redis.call('ZADD', places, 'XX', sign * (clock() + " HANDOFF_MS "), w)\n"               \
	"  return " HANDOFF_MS "\n"                                                                \
	"end\n"                                                                                    \
	"local function shared_before(at)\n"                                                        \
	"  return redis.call('ZRANGEBYSCORE', queue .. '-shared', '-inf',\n"                      \
	"    at and '(' .. string.format('%.0f', at) or '+inf')\n"                                 \
	"end\n"                                                                                    \
	"local function pass_shared(at)\n"                                                          \
	"  local left = " HANDOFF_MS "\n"                                                           \
	"  for _, w in ipairs(shared_before(at or firsts(queue, 1)[2])) do\n"                      \
	"    local s = redis.call('ZSCORE', places, w)\n"                                          \
	"    if s and math.abs(tonumber(s)) > clock() then left = math.min(left, pass(w)) end\n"   \
	"  end\n"                                                                                  \
	"  return left\n"                                                                           \
	"end\n"                                                                                    \
	"local function wake_up(w)\n"                                                              \
	"  push(list_of(w))\n"                                                                     \
	"  if ends[w] > clock() + " HANDOFF_MS " then\n"                                           \
	"    redis.call('ZADD', places, 'XX', clock() + " HANDOFF_MS ", w)\n"                       \
	"  end\n"                                                                                  \
	"end\n"                                                                                    \
	"local function wake_shared_before(at)\n"                                                  \
	"  local ws = shared_before(at)\n"                                                         \
	"  for _, w in ipairs(ws) do push(list_of(w)) end\n"                                       \
	"  return #ws\n"                                                                           \
	"end\n"                                                                                    \
	"local function wake_next(room)\n"                                                         \
	"  if redis.call('EXISTS', places) == 0 then return end\n"                                 \
	"  local x, s = firsts(queue, room + 1), firsts(queue .. '-shared', 1)\n"                  \
	"  if x[1] and not (s[1] and s[2] < x[2]) then\n"                                          \
	"    for i = 1, math.min(#x, 2 * room), 2 do\n"                                            \
	"      if s[1] and s[2] < x[i + 1] then break end\n"                                       \
	"      wake_up(x[i])\n"                                                                    \
	"    end\n"                                                                                \
	"    return x[2 * room + 1] ~= nil or s[1] ~= nil\n"                                       \
	"  elseif s[1] then\n"                                                                     \
	"    wake_shared_before(x[2])\n"                                                           \
	"    return x[1] ~= nil\n"                                                                 \
	"  else\n"                                                                                 \
	"    local t = clock()\n"                                                                   \
	"    redis.call('ZREMRANGEBYSCORE', places, -t, t)\n"                                      \
	"    if redis.call('ZCOUNT', places, '(' .. t, '+inf') > 0 then\n"                         \
	"      push(wake)\n"                                                                       \
	"    else\n"                                                                               \
	"      local shared = redis.call('ZCOUNT', places, '-inf', '(' .. -t)\n"                   \
	"      for _ = 1, shared do redis.call('RPUSH', wake .. '-shared', 1) end\n"               \
	"      if shared > 0 then redis.call('PEXPIRE', wake .. '-shared', " HANDOFF_MS ") end\n"  \
	"    end\n"                                                                                \
	"  end\n"                                                                                  \
	"end\n"

/*
 * The line's discipline (--queue), written in each run's value: "<uuid>:<host>:<pid>" keeps
 * arrival order (fifo), ":latest" after it lets only the newest wait, and ":latest:cancel" also
 * consents to be stopped by a newer run that asks for it. Every run on a KEY must agree; a
 * script finding another discipline answers "QUEUE theirs THEIR_VALUE".
 *
 * `supersede()`: a newcomer with --queue latest takes the places of every waiter before it:
 * each learns why from `fates` ("superseded by HOST:PID") when it looks again, which a wake-up
 * makes it do at once, or, paused meanwhile, within the hour the mark lasts (one that found no
 * mark would take its turn again, after the newer run); not a waiter that holds KEY already (its
 * grant came too late to count, and it asks again: the waiters behind it are newer).
 * `arrive()`: a run that may wait records in `fates`, as ":newest" (a field no token can be),
 * "ARRIVED VALUE", when it arrived (server µs: now for a newcomer, or just after the newest
 * recorded, should the clock have stepped back; `arrived` for one that asks again) and who it
 * is, unless a later arrival is recorded; for an hour. A run in line that is
 * not the newest is superseded by the newest (`superseded()`), though none found it in line to
 * mark it: it was out of the line meanwhile (stopped, or its place lapsed), and the newer run
 * may hold KEY by now or be done. A newer run whose record a failover lost writes it again at
 * its next look.
 * `cancel(holder)`: a newcomer with --cancel-running marks the holder "cancelled by HOST:PID" in
 * `fates`, if it consented; its next renewal finds it (see script_renew), for as long as the
 * holder's lease may last.
 * `withdraw(w)`: a canceller that leaves the line (a signal, the end of its -w, a newer run
 * that supersedes it) takes its mark back, unless the holder saw it already: the holder then
 * runs on, as nobody would run after it.
 */
#define FATES                                                                                      \
	"local function discipline(v)\n"                                                           \
	"  return string.find(v, ':%d+:latest') and 'latest' or 'fifo'\n"                          \
	"end\n"                                                                                    \
	"local function cancellable(v)\n"                                                          \
	"  return type(v) == 'string' and string.find(v, ':%d+:latest:cancel') ~= nil\n"           \
	"end\n"                                                                                    \
	"local function keep_fates(life)\n"                                                        \
	"  if redis.call('PTTL', fates) < life then redis.call('PEXPIRE', fates, life) end\n"      \
	"end\n"                                                                                    \
	"local function who(v) return string.match(v, '^[^:]*:([^:]*:%d+)') or v end\n"           \
	"local function withdraw(w)\n"                                                             \
	"  if not cancellable(w) then return end\n"                                                \
	"  local holder = redis.pcall('GET', KEYS[1])\n"                                           \
	"  if type(holder) == 'string' and\n"                                                      \
	"     redis.call('HGET', fates, holder) == 'cancelled by ' .. who(w) then\n"               \
	"    redis.call('HSET', fates, holder, 'cancel withdrawn by ' .. who(w))\n"                \
	"  end\n"                                                                                  \
	"end\n"
#define QUEUE_RULES                                                                                \
	FATES                                                                                      \
	"local function disagree(theirs)\n"                                                        \
	"  return redis.error_reply('QUEUE ' .. discipline(theirs) .. ' ' .. theirs)\n"            \
	"end\n"                                                                                    \
	"local function supersede(me)\n"                                                           \
	"  if redis.call('EXISTS', queue) == 0 then return end\n"                                  \
	"  local life = 0\n"                                                                       \
	"  for _ = 1, 64 do\n"                                                                     \
	"    local f = firsts(queue, 2)\n"                                                         \
	"    local o = f[1]\n"                                                                     \
	"    if o == me then o = f[3] end\n"                                                       \
	"    if not o then break end\n"                                                            \
	"    if discipline(o) ~= 'latest' then return disagree(o) end\n"                           \
	"    life = math.max(life, place_left(o))\n"                                               \
	"    redis.call('ZREM', queue, o)\n"                                                       \
	"    redis.call('ZREM', places, o)\n"                                                      \
	"    redis.call('HSET', fates, o, 'superseded by ' .. who(me))\n"                          \
	"    withdraw(o)\n"                                                                        \
	"    push(list_of(o))\n"                                                                   \
	"  end\n"                                                                                  \
	"  if life > 0 then keep_fates(math.max(life, " FENCE_KEEP_MS ")) end\n"                   \
	"end\n"                                                                                    \
	"local function cancel(me, holder, life)\n"                                                \
	"  if cancellable(me) and cancellable(holder) then\n"                                      \
	"    redis.call('HSET', fates, holder, 'cancelled by ' .. who(me))\n"                      \
	"    keep_fates(life)\n"                                                                   \
	"  end\n"                                                                                  \
	"end\n"                                                                                    \
	"local newest_at, newest\n"                                                                 \
	"local function read_newest()\n"                                                           \
	"  local n = redis.pcall('HGET', fates, ':newest')\n"                                      \
	"  local at, v\n"                                                                          \
	"  if type(n) == 'string' then at, v = string.match(n, '^(%d+) (.+)$') end\n"             \
	"  newest_at, newest = tonumber(at) or 0, v\n"                                             \
	"end\n"                                                                                    \
	"local function superseded(me)\n"                                                          \
	"  if not in_line or discipline(me) ~= 'latest' then return end\n"                         \
	"  local fate, by = redis.pcall('HGET', fates, me), nil\n"                                 \
	"  if type(fate) == 'string' and string.sub(fate, 1, 14) == 'superseded by ' then\n"       \
	"    by = string.sub(fate, 15)\n"                                                          \
	"  elseif arrived > 0 then\n"                                                              \
	"    read_newest()\n"                                                                      \
	"    if newest_at > arrived and redis.pcall('GET', KEYS[1]) ~= me then\n"                  \
	"      by = who(newest)\n"                                                                 \
	"      withdraw(me)\n"                                                                     \
	"    end\n"                                                                                \
	"  end\n"                                                                                  \
	"  if by then\n"                                                                           \
	"    redis.call('ZREM', places, me)\n"                                                     \
	"    redis.call('ZREM', queue, me)\n"                                                      \
	"    return redis.error_reply('SUPERSEDED ' .. by)\n"                                      \
	"  end\n"                                                                                  \
	"end\n"                                                                                    \
	"local function arrive(me)\n"                                                              \
	"  if not newest_at then read_newest() end\n"                                              \
	"  local at = arrived > 0 and arrived or math.max(clock() and now_us, newest_at + 1)\n"    \
	"  if at > newest_at then\n"                                                               \
	"    redis.call('HSET', fates, ':newest', string.format('%.0f', at) .. ' ' .. me)\n"       \
	"    keep_fates(" FENCE_KEEP_MS ")\n"                                                      \
	"  end\n"                                                                                  \
	"  return at\n"                                                                            \
	"end\n"

/*
 * The acquire scripts' end when the lock is held: with `handoff` ms (see ARGS) > 0, the waiter
 * `me` takes its place in `places` (see LINE; `side` is 1, or -1 for a shared one) until that
 * long after the `pttl` ms left of what it waits for, as of `now`, and 2% of that more (the
 * waiter looks again 1% after it, see wait_margin in line.c: its place must outlast that, or it
 * would lose its turn), so that the release wakes it;
 * a newcomer to an ordered line also takes its turn in the queue of its kind, and each look
 * keeps that queue for an hour, or the wait if longer (a line whose waiters all wait longer
 * than an hour for one holder keeps its order too). Otherwise it leaves that line.
 *
 * The places' key lives as long as the latest place, and the queue as long as the longest of
 * those lives: each look lengthens them (see `lengthen` in LINE), never shortens them. A place
 * can be short (behind what --min-hold keeps of a lease, a front waiter's handoff, a holder
 * with a short lease), and the key's end would take every longer place with it: the line would
 * wake nobody and lose its order.
 */
#define WAIT_IN_LINE                                                                               \
	"if handoff > 0 then\n"                                                                    \
	"  local life = math.max(pttl, 0) + math.floor(math.max(pttl, 0) / 50) + handoff\n"        \
	"  local new = redis.call('ZADD', places, side * (clock() + life), me) == 1\n"             \
	"  lengthen(places, life, new)\n"                                                          \
	"  if ordered then\n"                                                                      \
	"    if new then\n"                                                                        \
	"      redis.call('ZADD', queue_of(me), 'NX', string.format('%.0f', now_us), me)\n"        \
	"    end\n"                                                                                \
	"    lengthen(queue_of(me), math.max(life, " FENCE_KEEP_MS "), new)\n"                    \
	"  end\n"                                                                                  \
	"else\n"                                                                                   \
	"  redis.call('ZREM', places, me)\n"                                                       \
	"  if in_line then redis.call('ZREM', queue_of(me), me) end\n"                             \
	"end\n"

/*
 * `ahead(mine)`: in an ordered line, the waiter who goes before an exclusive newcomer (`mine`
 * nil) or before us, who took our turn at `mine`: the first of either queue, unless it is us.
 * Nil when nobody does.
 */
#define AHEAD                                                                                      \
	"local function ahead(mine)\n"                                                             \
	"  local x, s = firsts(queue, 1), firsts(queue .. '-shared', 1)\n"                         \
	"  local w, at = x[1], x[2]\n"                                                             \
	"  if s[1] and (not w or s[2] < at) then w, at = s[1], s[2] end\n"                         \
	"  if w and w ~= me and not (mine and mine < at) then return w end\n"                      \
	"end\n"

/*
 * `take()`: SET KEY our value NX PX ttl, and what KEY held when it was not free: false when we
 * took it, the holder's value, or an error reply when KEY is not a string (a shared lock's or a
 * semaphore's holders). One command where the server takes NX with GET (Redis 7.0 and later);
 * SET, then GET, where it does not.
 */
#define TAKE                                                                                       \
	"local function take()\n"                                                                  \
	"  local old = redis.pcall('SET', KEYS[1], me, 'NX', 'PX', ttl, 'GET')\n"                  \
	"  if type(old) == 'table' and not string.find(old.err or '', 'WRONGTYPE', 1, true) then\n" \
	"    if redis.call('SET', KEYS[1], me, 'NX', 'PX', ttl) then return false end\n"           \
	"    old = redis.pcall('GET', KEYS[1])\n"                                                  \
	"  end\n"                                                                                  \
	"  return old\n"                                                                           \
	"end\n"

/*
 * The lock is a string at KEY, the holder's value. KEY may also be a sorted set (see the
 * semaphore's scripts below): shared holders, whom an exclusive one waits for, or a
 * semaphore's, which it refuses to mix with.
 *
 * KEYS as LINE says; ARGV[1] as ARGS says. (Ten arguments at most: Redis answers a longer
 * command from a client that has not authenticated with a protocol error instead of NOAUTH.)
 *
 * Returns {1, fence, 1, data_age()} when the lock is ours: taken now (the common case; taken by a
 * waiter, the wake-ups meant for it are cleared), or taken by an earlier request with the same
 * value whose reply was lost (its lease is refreshed and its fence returned). Otherwise {0, the
 * holder's PTTL, the holder's value} (the shared holder whose lease ends last), or, when KEY is
 * free but an ordered line has a waiter who goes first, {0, what that waiter's place has left,
 * its value}: that waiter is woken, and given a handoff's time to come, as a release gives the
 * one it wakes (one killed outright is so passed over, rather than holding the line back until
 * the lease it waited out ends); a waiter is then registered until shortly after that, so that
 * the release wakes it. An error "LIMIT …" when KEY is a semaphore, "QUEUE …" when its holder
 * uses another discipline, "SUPERSEDED HOST:PID" when a newer run took our place (see
 * QUEUE_RULES). A
 * waiter looking again while the holder keeps the lock costs the server seven commands, this call
 * included; a first attempt on a free lock, two more than SET alone (TIME, and EXISTS for the
 * line that may be in front of it).
 */
static struct script script_acquire = {
	.writes = true,
	.text = ARGS "local me, side = value, 1\n" TAKE AHEAD
	"local first, holder, readers, pttl, at\n"
	"local e = permitted(false) or superseded(me)\n"
	"if e then return e end\n"
	"if handoff > 0 and discipline(me) == 'latest' and\n"
	"   not (in_line and redis.pcall('GET', KEYS[1]) == me) then\n"
	"  e = supersede(me)\n"
	"  if e then return e end\n"
	"end\n"
	"local newer = handoff > 0 and discipline(me) == 'latest'\n"
	"if ordered and not in_line and redis.call('EXISTS', queue, queue .. '-shared') > 0 and\n"
	"   redis.call('EXISTS', KEYS[1]) == 0 then\n"
	"  first = ahead(nil)\n"
	"end\n"
	"if not first then\n"
	"  holder = take()\n"
	"  if not holder and ordered and in_line then\n"
	"    at = tonumber(redis.call('ZSCORE', queue, me))\n"
	"    first = ahead(at)\n"
	"    if first then redis.call('DEL', KEYS[1]) end\n"
	"  end\n"
	"end\n"
	"if not first and not holder then\n" LEAVE_LINE
	"  if newer then arrive(me) end\n"
	"  return {1, fence(), 1, data_age()}\n"
	"end\n"
	"if first then\n"
	"  holder = string.gsub(first, '^s:', '')\n"
	"  if discipline(holder) ~= discipline(me) then return disagree(holder) end\n"
	"  pttl = string.sub(first, 1, 2) == 's:' and pass_shared(at) or pass(first)\n"
	"else\n"
	"  if holder == me then\n"
	"    redis.call('PEXPIRE', KEYS[1], ttl)\n" LEAVE_LINE
	"    return {1, counter(redis.pcall('GET', KEYS[2])) or fence(), 1, data_age()}\n"
	"  end\n"
	"  readers, pttl = type(holder) == 'table', redis.call('PTTL', KEYS[1])\n"
	"  if readers then\n"
	"    local tag = redis.pcall('ZRANGEBYSCORE', KEYS[1], -1, -1)[1]\n"
	"    if pttl < 0 or tag ~= 'shared' and not (tag and string.match(tag, '^limit:%d+$')) then\n"
	"      return foreign()\n"
	"    end\n"
	"    if tag ~= 'shared' then\n"
	"      return redis.error_reply('LIMIT ' .. KEYS[1] .. ' is held with --limit ' ..\n"
	"        string.sub(tag, 7) .. ', not as a lock')\n"
	"    end\n"
	"    holder = redis.call('ZRANGE', KEYS[1], -1, -1)[1]\n"
	"  elseif pttl < 0 or not string.match(holder, " TOKEN_PATTERN ") then\n"
	"    return foreign()\n"
	"  end\n"
	"end\n"
	"if discipline(holder) ~= discipline(me) then return disagree(holder) end\n"
	"if handoff > 0 and not first then cancel(me, holder, math.max(pttl, 0) + handoff) end\n"
	WAIT_IN_LINE
	"if handoff == 0 and in_line then withdraw(me) end\n"
	"if readers and handoff == 0 and in_line then wake_next(1) end\n"
	"if newer then return {0, pttl, holder, first and 1 or 0, arrive(me)} end\n"
	"return {0, pttl, holder, first and 1 or 0}\n",
};

/* A renewal keeps the fence counter (KEYS[2]) as long as the lock, at least: so a key found
 * gone with its counter says that the server lost its data (see FENCE). */
#define KEEP_FENCE                                                                                 \
	"  redis.call('PEXPIRE', KEYS[2], math.max(tonumber(ARGV[2]), " FENCE_KEEP_MS "))\n"

/*
 * KEYS[1] the lock, KEYS[2] its fence counter, KEYS[3] the breakers (see script_break); ARGV[1]
 * our value, ARGV[2] the TTL in ms. Returns 1 when the lease was extended, or, extended still,
 * an error "CANCELLED HOST:PID" once a newer run cancelled ours (--cancel-running, see
 * QUEUE_RULES: only a value that consented pays for asking); otherwise says what became of the
 * lock: the new holder's value (a shared one's, if shared holders took it), or as NOT_OURS says
 * (always, when it was broken).
 */
static struct script script_renew = {
	.writes = true,
	.text = BROKEN_BY CANCELLED_BY "local holder = redis.pcall('GET', KEYS[1])\n"
		"if holder == ARGV[1] then\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n" KEEP_FENCE
		"  local by = cancelled_by(KEYS[3], ARGV[1])\n"
		"  if by then return redis.error_reply('CANCELLED ' .. by) end\n"
		"  return 1\n"
		"end\n"
		"if not broken_by(KEYS[3], ARGV[1]) then\n"
		"  if type(holder) == 'table' then return redis.call('ZRANGE', KEYS[1], -1, -1)[1] end\n"
		"  if holder then return holder end\n"
		"end\n" NOT_OURS("KEYS[2]", "KEYS[3]", "ARGV[1]"),
};

/*
 * KEYS as LINE says; ARGV[1] "KEEP:VALUE": how long the lock must stay taken still, in ms
 * (--min-hold), or 0, and our value (one argument: with six keys, a call stays within ten
 * arguments, see ARGS). Returns 1 when deleted, or left to expire then as our value and ":kept"
 * (which says that the command has finished: --status tells it, and a release asked again finds
 * it ours), 2 when deleted, with the first of an ordered line's waiters woken and others behind
 * it (script_follow_up is then due); when not ours, as NOT_OURS says.
 *
 * Deleting wakes whoever is next in line (wake_next: true when it woke the first of an ordered
 * line, with others behind those it woke). Left to expire, the lock wakes them too,
 * and they then block only until it expires.
 */
#define RELEASE_ARGS                                                                               \
	"local keep, me = string.match(ARGV[1], '^(%d+):(.*)$')\n"                                 \
	"keep = tonumber(keep)\n" CLOCK LINE

static struct script script_release = {
	.gives_back = true,
	.text = RELEASE_ARGS BROKEN_BY "local v = redis.pcall('GET', KEYS[1])\n"
			     "if v ~= me and v ~= me .. ':kept' then\n" NOT_OURS(
				     "KEYS[2]", "fates", "me") "end\n"
		"if keep > 0 then\n"
		"  redis.call('SET', KEYS[1], me .. ':kept', 'PX', keep)\n"
		"else\n"
		"  redis.call('DEL', KEYS[1])\n"
		"end\n"
		"return wake_next(1) and 2 or 1\n",
};

/*
 * `head(now)`: a semaphore's or shared lock's tag (see below; nil when there is none), and the
 * holder whose lease ends first, with that end; when that end is past (a holder that stopped
 * renewing), the holders whose leases are over leave KEY first (never from a sorted set without
 * a tag: not ours). In the common case, one command reads all three: the tag, scored -1, comes
 * first. A fourth value is true when KEY is not a sorted set.
 */
#define HEAD                                                                                       \
	"local function head(now)\n"                                                               \
	"  local function read()\n"                                                                \
	"    local h = redis.pcall('ZRANGE', KEYS[1], 0, 1, 'WITHSCORES')\n"                       \
	"    if h.err then return nil, nil, nil, true end\n"                                       \
	"    local tag = h[2] and tonumber(h[2]) < 0 and h[1] or nil\n"                            \
	"    return tag, h[tag and 3 or 1], tonumber(h[tag and 4 or 2])\n"                         \
	"  end\n"                                                                                  \
	"  local tag, first, ends, wrong = read()\n"                                               \
	"  if tag and ends and ends <= now then\n"                                                 \
	"    redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now)\n"                                    \
	"    tag, first, ends = read()\n"                                                          \
	"  end\n"                                                                                  \
	"  return tag, first, ends, wrong\n"                                                       \
	"end\n"

/*
 * A semaphore (--limit N) is a sorted set at KEY: each holder's value, scored by when its lease
 * ends (server time, ms), and the member "limit:N", scored -1, that says which N the holders
 * agreed on. A shared lock (--shared) is the same with the member "shared", and no N. The key
 * lives as long as its last holder. The scripts take the same KEYS and ARGV as the lock's,
 * and answer in the same shapes.
 *
 * Acquire: KEYS and ARGV as the lock's. {1, fence, holders, data_age()} when a place is ours
 * (a new fence when an earlier request with our value took it and its reply was lost: other
 * holders may have had fences since, so the counter's is no longer ours); {0, ms until the first
 * lease ends, its holder} when all N are taken (a waiter is registered as for the lock), or {0,
 * what their places have left, the first of them} when the free places are for waiters before
 * us in an ordered line (each is passed, see LINE); an error "LIMIT …" when KEY is held with
 * another N, or shared.
 */
static struct script script_sem_acquire = {
	.writes = true,
	.text = ARGS HEAD
	"local me, side, tag = value, 1, 'limit:' .. limit\n"
	"local e = permitted(true)\n"
	"if e then return e end\n"
	"local old, first, ends, wrong = head(clock())\n"
	"if wrong then\n"
	"  local what = alien()\n"
	"  if what then return foreign(what) end\n"
	"  return redis.error_reply('LIMIT ' .. KEYS[1] .. ' is held as a lock, not with --limit ' ..\n"
	"    limit)\n"
	"end\n"
	"local count = redis.call('ZCARD', KEYS[1]) - (old and 1 or 0)\n"
	"if count > 0 and not (old == 'shared' or old and string.match(old, '^limit:%d+$')) then\n"
	"  return foreign()\n"
	"end\n"
	"if old and old ~= tag and count > 0 then\n"
	"  return redis.error_reply('LIMIT ' .. KEYS[1] .. ' is held ' ..\n"
	"    (old == 'shared' and 'shared' or 'with --limit ' .. string.sub(old, 7)) ..\n"
	"    ', not with --limit ' .. limit)\n"
	"end\n"
	"local mine, queued = redis.call('ZSCORE', KEYS[1], me), nil\n"
	"if not mine and count < limit and ordered and\n"
	"   (in_line or redis.call('EXISTS', queue) == 1) then\n"
	"  local room = limit - count\n"
	"  local f = firsts(queue, room)\n"
	"  queued = #f == 2 * room and f\n"
	"  for i = 1, #f, 2 do\n"
	"    if f[i] == me then queued = nil end\n"
	"  end\n"
	"end\n"
	"if (mine or count < limit) and not queued then\n"
	"  if old and old ~= tag then redis.call('ZREM', KEYS[1], old) end\n"
	"  redis.call('ZADD', KEYS[1], -1, tag, now + ttl, me)\n"
	"  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
	"  redis.call('PEXPIREAT', KEYS[1], last[2])\n" LEAVE_LINE
	"  return {1, fence(), mine and count or count + 1, data_age()}\n"
	"end\n"
	"local pttl = ends and ends - now or 0\n"
	"if queued then\n"
	"  first, pttl = queued[1], " HANDOFF_MS "\n"
	"  for i = 1, #queued, 2 do pttl = math.min(pttl, pass(queued[i])) end\n"
	"end\n" WAIT_IN_LINE
	"return {0, pttl, first, queued and 1 or 0}\n",
};

/*
 * A shared holder's acquire: as the semaphore's (N is not used).
 * A place is ours unless an exclusive holder has KEY, or an exclusive waiter is in line before
 * us (it goes first: a stream of shared holders never starves it): for a newcomer, any, and for
 * a waiter with its turn in an ordered line, one that came before it; we then wait for the one
 * that holds it, or for the time that waiter's place in line lasts (in an ordered line with no
 * shared holder left, that waiter is passed: see LINE).
 */
static struct script script_shared_acquire = {
	.writes = true,
	.text = ARGS HEAD
	"local me, side = 's:' .. value, -1\n"
	"local e = permitted(true)\n"
	"if e then return e end\n"
	"local holder, pttl = redis.pcall('GET', KEYS[1]), nil\n"
	"local mine, count = false, 0\n"
	"if type(holder) == 'string' then\n"
	"  pttl = redis.call('PTTL', KEYS[1])\n"
	"  if pttl < 0 or not string.match(holder, " TOKEN_PATTERN ") then return foreign() end\n"
	"  if discipline(holder) ~= 'fifo' then return disagree(holder) end\n"
	"elseif holder then\n"
	"  local tag, _, _, wrong = head(clock())\n"
	"  if wrong or not (tag == 'shared' or tag and string.match(tag, '^limit:%d+$')) then\n"
	"    return foreign()\n"
	"  end\n"
	"  if tag ~= 'shared' then\n"
	"    return redis.error_reply('LIMIT ' .. KEYS[1] .. ' is held with --limit ' ..\n"
	"      string.sub(tag, 7) .. ', not shared')\n"
	"  end\n"
	"  mine = redis.call('ZSCORE', KEYS[1], value)\n"
	"  count = redis.call('ZCARD', KEYS[1]) - 1\n"
	"end\n"
	"local at = not pttl and not mine and ordered and in_line and\n"
	"  tonumber(redis.call('ZSCORE', queue .. '-shared', me))\n"
	"local waits = pttl and 0 or 1\n"
	"if at then\n"
	"  local x = firsts(queue, 1)\n"
	"  if x[1] and x[2] < at then\n"
	"    holder, pttl = x[1], count == 0 and pass(x[1]) or place_left(x[1])\n"
	"  end\n"
	"elseif not pttl and not mine then\n"
	"  local first = redis.call('ZRANGEBYSCORE', places, '(' .. clock(), '+inf', 'WITHSCORES',\n"
	"                           'LIMIT', 0, 1)\n"
	"  if first[1] then holder, pttl = first[1], first[2] - now end\n"
	"  if first[1] and ordered and count == 0 then pttl = pass(first[1]) end\n"
	"end\n"
	"if pttl then\n" WAIT_IN_LINE "  return {0, pttl, holder, waits}\n"
	"end\n"
	"redis.call('ZADD', KEYS[1], -1, 'shared', clock() + ttl, value)\n"
	"local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
	"redis.call('PEXPIREAT', KEYS[1], last[2])\n" LEAVE_LINE
	"return {1, fence(), mine and count or count + 1, data_age()}\n",
};

/*
 * A semaphore's or shared holder's renewal: as the lock's (1, 0, -1 or the new holder's
 * value), our place extended to a full TTL.
 */
static struct script script_sem_renew = {
	.writes = true,
	.text = BROKEN_BY NOW "local score = redis.pcall('ZSCORE', KEYS[1], ARGV[1])\n"
		    "local broken = broken_by(KEYS[3], ARGV[1])\n"
		    "if type(score) == 'table' and not broken then return redis.call('GET', KEYS[1]) end\n"
		    "if broken then score = nil end\n"
		    "if score and tonumber(score) > now then\n"
		    "  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
		    "  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		    "  redis.call('PEXPIREAT', KEYS[1], last[2])\n" KEEP_FENCE
		    "  return 1\n"
		    "end\n"
		    "if type(score) == 'string' then redis.call('ZREM', KEYS[1], ARGV[1]) end\n"
		    NOT_OURS("KEYS[2]", "KEYS[3]", "ARGV[1]"),
};

/*
 * A semaphore's or shared holder's release of its place, which stays to its end with --min-hold
 * as our value and ":kept", as a lock's does (--status tells it; a release asked again finds it
 * ours, and has nothing left to do); the key goes with its last holder.
 */
#define LEAVE_PLACE                                                                                \
	RELEASE_ARGS BROKEN_BY "local score = redis.pcall('ZSCORE', KEYS[1], me)\n"                \
	    "if type(score) ~= 'string' or tonumber(score) <= clock() then\n"                      \
	    "  if type(redis.pcall('ZSCORE', KEYS[1], me .. ':kept')) == 'string' then\n"           \
	    "    return 1\n"                                                                       \
	    "  end\n"                                                                              \
	    NOT_OURS("KEYS[2]", "fates", "me") "end\n"                                             \
	    "local n = tonumber(string.match(redis.call('ZRANGEBYSCORE', KEYS[1], -1, -1)[1] or '',\n" \
	    "                                '^limit:(%d+)$'))\n"                                  \
	    "redis.call('ZREM', KEYS[1], me)\n"                                                    \
	    "if keep > 0 then\n"                                                                   \
	    "  redis.call('ZADD', KEYS[1], now + keep, me .. ':kept')\n"                           \
	    "end\n"                                                                                \
	    "local live = redis.call('ZCOUNT', KEYS[1], now + 1, '+inf')\n"                        \
	    "if live == 0 then\n"                                                                  \
	    "  redis.call('DEL', KEYS[1])\n"                                                       \
	    "else\n"                                                                               \
	    "  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"                 \
	    "  redis.call('PEXPIREAT', KEYS[1], last[2])\n"                                        \
	    "end\n"

/*
 * A semaphore's or shared holder's release wakes whoever is next whenever a place frees: as
 * many of a semaphore's waiters as there are free places. A shared holder's may wake an
 * exclusive waiter while other shared holders remain: it then waits again, for the lease that
 * ends last. (The line cannot tell holders from places kept by --min-hold: waking only when
 * none is left would leave a waiter blocked on a place kept after the last holder went.)
 * Returns 1, or 2 as the lock's release does, but not where shared holders remain (the waiter
 * woken does not take its turn then, dead or alive).
 */
static struct script script_sem_release = {
	.gives_back = true,
	.text = LEAVE_PLACE
	"local woke = wake_next(n and math.max(n - live, 1) or 1)\n"
	"return woke and (n or live == 0) and 2 or 1\n",
};

/*
 * After a release that woke the first of an ordered line's waiters (it answered 2), a round trip
 * later. KEYS as LINE says; no ARGV. That waiter, blocked, took its wake-up as the release ended
 * (and on one plain server its turn too: its attempt waits behind its BLPOP, see line_wait in
 * line.c). Its wake-up still there, and it still first, with no more than a handoff's time left
 * to its place, it did not (killed outright, most likely; or not blocked at that moment). The
 * three waiters after it, each blocked until the lease it waited out would have ended, are woken
 * now, and given a handoff's time as it was (see wake_up in LINE), and so are the shared
 * waiters that came before the next of them: the first of them that lives passes it and the
 * others killed with it (a CI job cancelled whole) a handoff later. Returns how many it woke.
 * (Where the first came, three commands: the first in line, its wake-up gone, and no shared
 * waiter before it. Its place over meanwhile, the next ones are woken, it left the line.) Where
 * the release woke shared waiters, the first of them that did not take its wake-up has the
 * exclusive waiters after them woken: the first of those that lives passes it a handoff later.
 */
struct script script_follow_up = {
	.text = CLOCK LINE "local x = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')\n"
			   "local first = x[1]\n"
			   "if not (first and redis.call('EXISTS', list_of(first)) == 1) then\n"
			   "  local s = redis.call('ZRANGE', queue .. '-shared', 0, 0, 'WITHSCORES')\n"
			   "  if not (first and s[1] and tonumber(s[2]) < tonumber(x[2]) and\n"
			   "          redis.call('EXISTS', list_of(s[1])) == 1) then\n"
			   "    return 0\n"
			   "  end\n"
			   "  first = nil\n"
			   "end\n"
			   "local f = firsts(queue, 4)\n"
			   "local from = first and f[1] == first and 3 or 1\n"
			   "if from == 3 and ends[first] > clock() + " HANDOFF_MS " then return 0 end\n"
			   "for i = from, #f, 2 do wake_up(f[i]) end\n"
			   "return (#f - from + 1) / 2 + wake_shared_before(f[from + 1])\n",
};

/*
 * A waiter that stops waiting (a signal) leaves the line. KEYS as LINE says; ARGV[1] the
 * waiter, as WAIT_IN_LINE names it. An exclusive one that leaves while nobody holds KEY
 * exclusively wakes whoever is next (it may have been woken itself, or the shared waiters behind
 * it may go now). Returns 1.
 */
struct script script_leave = {
	.writes = true,
	.text = CLOCK LINE FATES "redis.call('ZREM', places, ARGV[1])\n"
			   "redis.call('ZREM', queue_of(ARGV[1]), ARGV[1])\n"
			   "withdraw(ARGV[1])\n"
			   "if string.sub(ARGV[1], 1, 2) ~= 's:' and\n"
			   "   redis.call('TYPE', KEYS[1]).ok ~= 'string' then\n"
			   "  wake_next(1)\n"
			   "end\n"
			   "return 1\n",
};

/*
 * KEYS[1] the lock, KEYS[2] its fence counter, KEYS[3] its places, KEYS[4] its queue, KEYS[5] the
 * fates (see LINE). Returns {state, line, canceller}. The state: {value, PTTL, fence}, with false
 * for a value or fence that is not there; for a semaphore or a shared lock, {-1, "limit:N" or
 * "shared", fence, then each live holder's value and ms left, the first to end first, 16 at most,
 * then how many there are}. The line: {the server's time (ms), how many exclusive waiters, how many
 * shared ones, then 16 at most, each with how long it has waited (ms) and how long its place lasts
 * (ms: when it looks again at the latest, unless a release wakes it)}: the first 16 of the queues,
 * in arrival order; or, when nobody is queued (a line that keeps no order), 8 of each kind, with -1
 * for the time waited. The canceller: "HOST:PID" of the newer run that cancelled the holder
 * (--cancel-running, see FATES), or false. An error "FOREIGN what" for a KEY that is not a lock, as
 * a run finds it (see ALIEN: a lock's token is told by what was read already; a sorted set is
 * asked). Reads only: the places that are over are skipped, not removed.
 */
struct script script_query = {
	.text = ALIEN COUNTER CANCELLED_BY
		"local function last_fence()\n"
		"  local n = counter(redis.pcall('GET', KEYS[2]))\n"
		"  return n and string.format('%.0f', n) or false\n"
		"end\n"
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"local kind, out = redis.call('TYPE', KEYS[1]).ok, nil\n"
		"if kind == 'zset' then\n"
		"  out = {-1, redis.call('ZRANGEBYSCORE', KEYS[1], -1, -1)[1] or false, last_fence()}\n"
		"  local h = redis.call('ZRANGEBYSCORE', KEYS[1], now + 1, '+inf', 'WITHSCORES',\n"
		"                       'LIMIT', 0, 16)\n"
		"  for i = 1, #h, 2 do\n"
		"    out[#out + 1] = h[i]\n"
		"    out[#out + 1] = h[i + 1] - now\n"
		"  end\n"
		"  out[#out + 1] = redis.call('ZCOUNT', KEYS[1], now + 1, '+inf')\n"
		"elseif kind == 'string' or kind == 'none' then\n"
		"  out = {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), last_fence()}\n"
		"else\n"
		"  return foreign()\n"
		"end\n"
		"if (kind == 'string' and (out[2] < 0 or not string.match(out[1], " TOKEN_PATTERN ")))\n"
		"   or (kind == 'zset' and alien()) then\n"
		"  return foreign()\n"
		"end\n"
		"local canceller = kind == 'string' and cancelled_by(KEYS[5], out[1])\n"
		"local line = {now, redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf'),\n"
		"              redis.call('ZCOUNT', KEYS[3], '-inf', '(' .. -now)}\n"
		"local queued = {}\n"
		"for _, q in ipairs({KEYS[4], KEYS[4] .. '-shared'}) do\n"
		"  local h = redis.call('ZRANGE', q, 0, 31, 'WITHSCORES')\n"
		"  for i = 1, #h, 2 do\n"
		"    local s = redis.call('ZSCORE', KEYS[3], h[i])\n"
		"    if s and math.abs(tonumber(s)) > now then\n"
		"      queued[#queued + 1] = {tonumber(h[i + 1]), h[i], math.abs(tonumber(s)) - now}\n"
		"    end\n"
		"  end\n"
		"end\n"
		"table.sort(queued, function(a, b) return a[1] < b[1] end)\n"
		"for i = 1, math.min(#queued, 16) do\n"
		"  line[#line + 1] = queued[i][2]\n"
		"  line[#line + 1] = math.max(now - math.floor(queued[i][1] / 1000), 0)\n"
		"  line[#line + 1] = queued[i][3]\n"
		"end\n"
		"if #queued > 0 then return {out, line, canceller} end\n"
		"for _, w in ipairs({\n"
		"    redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 8),\n"
		"    redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. -now, 'WITHSCORES', 'LIMIT', 0,\n"
		"               8)}) do\n"
		"  for i = 1, #w, 2 do\n"
		"    line[#line + 1] = w[i]\n"
		"    line[#line + 1] = -1\n"
		"    line[#line + 1] = math.abs(tonumber(w[i + 1])) - now\n"
		"  end\n"
		"end\n"
		"return {out, line, canceller}\n",
};

/*
 * --break: ends a lock on purpose. KEYS as LINE says; ARGV[1] who breaks it, "HOST:PID", and
 * after a space the holder the user was shown and said yes to, if any (one argument: a call
 * stays within ten, see script_acquire); without it, whoever holds the lock is broken.
 *
 * KEY goes, and each of its holders' values is recorded in `fates` (KEYS[6]) with who broke the
 * lock, for as long as their leases could last and a minute more (BROKEN_KEEP_MS): their renewals
 * and releases find it there and say so (see NOT_OURS). The fence moves on, past the broken
 * holders', by the acquisitions' fence() (kept as long as the broken lease, at least), so that a
 * fenced resource refuses what they still send; and the line is woken, as by a release, and 15
 * waiters more: each looks again, and the first that is alive takes the lock at once, or, behind
 * waiters that were killed, once the handoff's time given to them is over (a release wakes only
 * those it makes room for: a waiter killed at the front holds the others back until they look
 * again, see LINE; a line that keeps no order is woken as a release wakes it). Returns {1, the new
 * fence, the fence before, the ms the broken leases had left, how many held it, 1 for a lock held
 * exclusively (0: a semaphore or shared lock, whose fence before may be a later holder's), then
 * their values (16 at most)}; {0} when nobody holds KEY (the line is woken all the same: a free
 * lock whose next waiter was not woken is a stuck line); {2, a holder} when the holder shown is
 * not among them any more, nor kept by --min-hold (it finished, and someone else took the lock):
 * nothing is broken; an error "FOREIGN what" when KEY is not a lock (see ALIEN).
 */
struct script script_break = {
	.writes = true,
	.text = CLOCK ALIEN LINE "local ttl -- the broken lease (see FENCE)\n" FENCE
		"local kind, holders = redis.call('TYPE', KEYS[1]).ok, {}\n"
		"if kind == 'none' then\n"
		"  wake_next(16)\n"
		"  return {0}\n"
		"end\n"
		"local what = alien()\n"
		"if what then return foreign(what) end\n"
		"local by, shown = string.match(ARGV[1], '^(%S+) ?(.*)$')\n"
		"shown = shown ~= '' and shown\n"
		"local function holds(v)\n"
		"  if kind == 'string' then return holders[1] == v end\n"
		"  return (tonumber(redis.call('ZSCORE', KEYS[1], v)) or 0) > clock()\n"
		"end\n"
		"if kind == 'string' then\n"
		"  holders[1] = redis.call('GET', KEYS[1])\n"
		"else\n"
		"  holders = redis.call('ZRANGEBYSCORE', KEYS[1], clock() + 1, '+inf')\n"
		"  if #holders == 0 then\n"
		"    wake_next(16)\n"
		"    return {0}\n"
		"  end\n"
		"end\n"
		"if shown and not holds(shown) and not holds(shown .. ':kept') then\n"
		"  return {2, holders[1]}\n"
		"end\n"
		"ttl = math.max(redis.call('PTTL', KEYS[1]), 1)\n"
		"redis.call('DEL', KEYS[1])\n"
		"for _, h in ipairs(holders) do redis.call('HSET', KEYS[6], h, by) end\n"
		"local keep = ttl + " BROKEN_KEEP_MS "\n"
		"if redis.call('PTTL', KEYS[6]) < keep then redis.call('PEXPIRE', KEYS[6], keep) end\n"
		"local f, before = fence()\n"
		"wake_next(math.max(#holders, 1) + 15)\n"
		"local out = {1, string.format('%.0f', f), before and string.format('%.0f', before) or false,\n"
		"             ttl, #holders, kind == 'string' and 1 or 0}\n"
		"for i = 1, math.min(#holders, 16) do out[#out + 1] = holders[i] end\n"
		"return out\n",
};

/* KEYS[1] a fence counter; ARGV[1] a fence, ARGV[2] the lease in ms. Raises the counter to the
 * fence if it is lower, never lowers it, and keeps it as an acquisition does (see FENCE).
 * Returns 1. */
struct script script_fence = {
	.writes = true,
	.text = "local f = tonumber(ARGV[1])\n"
		"if (tonumber(redis.call('GET', KEYS[1])) or 0) < f then\n"
		"  redis.call('SET', KEYS[1], ARGV[1], 'PX', math.max(tonumber(ARGV[2]), " FENCE_KEEP_MS
		"))\n"
		"end\n"
		"return 1\n",
};

/* clang-format on */

static struct script *const scripts[] = {
	&script_acquire,   &script_renew,       &script_release, &script_sem_acquire,
	&script_sem_renew, &script_sem_release, &script_query,   &script_shared_acquire,
	&script_leave,     &script_fence,       &script_break,   &script_follow_up,
};

const struct kind kind_exclusive = { &script_acquire, &script_renew, &script_release };
const struct kind kind_semaphore = { &script_sem_acquire, &script_sem_renew, &script_sem_release };
const struct kind kind_shared = { &script_shared_acquire, &script_sem_renew, &script_sem_release };

size_t
scripts_count(void)
{
	return ARRAY_LEN(scripts);
}

struct script *
scripts_get(size_t i)
{
	return i < ARRAY_LEN(scripts) ? scripts[i] : NULL;
}

#ifndef SCRIPTS_WITHOUT_DIGESTS
/* The digests of scripts[], in its order, computed when redlock-run is built
 * (tools/script_digests.c): a run has nothing to hash. */
#include "script_digests.h"

void
scripts_init(void)
{
	for (size_t i = 0; i < ARRAY_LEN(scripts); i++)
		memcpy(scripts[i]->sha, script_digests[i], SHA1_HEX_SIZE);
}
#endif
