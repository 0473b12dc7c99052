#include "lock.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "duration.h"
#include "msg.h"
#include "sha1.h"
#include "util.h"

struct script {
	const char *text;
	char sha[SHA1_HEX_SIZE]; /* filled in by lock_init */
};

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
		"local handoff = tonumber(ARGV[3])\n"
		"if handoff > 0 then\n"
		"  local t = redis.call('TIME')\n"
		"  local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"  local life = math.max(pttl, 0) + handoff\n"
		"  redis.call('ZADD', KEYS[4], now + life, ARGV[1])\n"
		"  if redis.call('PTTL', KEYS[4]) < life then\n"
		"    redis.call('PEXPIRE', KEYS[4], life)\n"
		"  end\n"
		"else\n"
		"  redis.call('ZREM', KEYS[4], ARGV[1])\n"
		"end\n"
		"return {0, pttl, holder}\n",
};

/*
 * KEYS[1] the lock, KEYS[2] its fence counter; ARGV[1] our value, ARGV[2] the TTL in ms.
 * Returns 1 when the lease was extended; otherwise says what became of the lock: the new
 * holder's value, 0 if KEY is gone, -1 if the fence counter is gone as well.
 */
static struct script script_renew = {
	.text = "local holder = redis.call('GET', KEYS[1])\n"
		"if holder == ARGV[1] then\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
		"  return 1\n"
		"end\n"
		"if holder then return holder end\n"
		"if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end\n"
		"return -1\n",
};

/*
 * KEYS[1] the lock, KEYS[2] the wake list, KEYS[3] the waiters, KEYS[4] the fence counter;
 * ARGV[1] our value, ARGV[2] the handoff allowance in ms. Returns 1 when deleted; when not
 * ours, 0, or -1 if the fence counter is gone as well (the server lost its data).
 *
 * Deleting wakes the longest-blocked waiter, if any is registered and still within its
 * time: one element on the wake list, which BLPOP hands to exactly one client.
 */
static struct script script_release = {
	.text = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
		"  if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end\n"
		"  return -1\n"
		"end\n"
		"redis.call('DEL', KEYS[1])\n"
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)\n"
		"if redis.call('EXISTS', KEYS[3]) == 1 then\n"
		"  redis.call('RPUSH', KEYS[2], 1)\n"
		"  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
		"end\n"
		"return 1\n",
};

/* KEYS[1] the lock, KEYS[2] its fence counter. Returns {value, PTTL, fence}, with false for
 * a value or fence that is not there. Reads only. */
static struct script script_query = {
	.text = "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),\n"
		"        redis.call('GET', KEYS[2])}\n",
};

static struct script *const scripts[] = { &script_acquire, &script_renew, &script_release,
					  &script_query };

static void set_error(struct lock *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
set_error(struct lock *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->error, sizeof(l->error), fmt, ap);
	va_end(ap);
}

char *
lock_aux_key(const char *key, const char *suffix)
{
	const char *open = strchr(key, '{');
	const char *close = open ? strchr(open + 1, '}') : NULL;
	bool has_tag = close && close > open + 1;
	size_t len = strlen(key) + strlen(suffix) + 3;
	char *name = malloc(len);

	if (!name)
		return NULL;
	/* Redis Cluster hashes only the text between the first '{' and the next '}'. A key
	 * with such a tag keeps it under any suffix; otherwise braces around the whole key make
	 * it the tag, unless the key holds a '}' that would close the tag early. */
	if (has_tag || strchr(key, '}'))
		snprintf(name, len, "%s%s", key, suffix);
	else
		snprintf(name, len, "{%s}%s", key, suffix);
	return name;
}

static int
make_token(char *out, size_t size)
{
	unsigned char bytes[16];
	char uuid[37], host[256];
	size_t got = 0;

	while (got < sizeof(bytes)) {
		ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	/* A version 4 (random) UUID, as RFC 4122 marks one. */
	bytes[6] = (unsigned char)((bytes[6] & 0x0f) | 0x40);
	bytes[8] = (unsigned char)((bytes[8] & 0x3f) | 0x80);
	uuid_unparse_lower(bytes, uuid);
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	snprintf(out, size, "%s:%s:%ld", uuid, host, (long)getpid());
	return 0;
}

int
lock_init(struct lock *l, const char *key, int64_t ttl)
{
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->ttl = ttl;
	l->io_timeout = LOCK_IO_TIMEOUT;
	if (make_token(l->value, sizeof(l->value)) < 0)
		return -1;
	if (!(l->fence_key = lock_aux_key(key, ":fence")) ||
	    !(l->wake_key = lock_aux_key(key, ":wake")) ||
	    !(l->waiting_key = lock_aux_key(key, ":waiting")))
		return -1;
	for (size_t i = 0; i < ARRAY_LEN(scripts); i++)
		if (!scripts[i]->sha[0])
			sha1_hex(scripts[i]->text, strlen(scripts[i]->text), scripts[i]->sha);
	return 0;
}

void
lock_free(struct lock *l)
{
	free(l->fence_key);
	free(l->wake_key);
	free(l->waiting_key);
	l->fence_key = l->wake_key = l->waiting_key = NULL;
}

int64_t
lock_lease_deadline(const struct lock *l, int64_t sent)
{
	return time_add(sent, l->ttl - (l->ttl / 100 + 2 * NS_PER_MS));
}

/* A script call: EVALSHA <digest> <numkeys> <keys...> <args...>, or EVAL with the text. */
struct call {
	struct script *script;
	const char *argv[16];
	size_t lens[16];
	int argc;
	char numkeys[8];
};

static void
call_init(struct call *call, struct script *s, int nkeys, int nargs, const char *const *args)
{
	assert(nargs + 3 <= (int)ARRAY_LEN(call->argv));
	snprintf(call->numkeys, sizeof(call->numkeys), "%d", nkeys);
	call->script = s;
	call->argc = 0;
	call->argv[call->argc++] = "EVALSHA";
	call->argv[call->argc++] = s->sha;
	call->argv[call->argc++] = call->numkeys;
	for (int i = 0; i < nargs; i++)
		call->argv[call->argc++] = args[i];
	for (int i = 0; i < call->argc; i++)
		call->lens[i] = strlen(call->argv[i]);
}

/* Sends the call by the script's digest. */
static enum conn_result
call_send(struct conn *c, struct call *call)
{
	return conn_send(c, call->argc, call->argv, call->lens) < 0 ? CONN_FAILED : CONN_OK;
}

/*
 * Takes the reply to call_send, and sends the script's text when the server does not know
 * it yet (NOSCRIPT: a fresh or restarted server), which also caches it there.
 */
static enum conn_result
call_recv(struct conn *c, struct call *call, int64_t deadline, int intr_fd, struct reply **reply)
{
	enum conn_result res = conn_recv(c, reply, deadline, intr_fd);

	if (res != CONN_OK || reply_type(*reply) != REPLY_ERROR ||
	    strncmp(reply_string(*reply, NULL), "NOSCRIPT", 8) != 0)
		return res;
	reply_free(*reply);
	call->argv[0] = "EVAL";
	call->argv[1] = call->script->text;
	call->lens[0] = 4;
	call->lens[1] = strlen(call->script->text);
	return conn_call(c, reply, deadline, intr_fd, call->argc, call->argv, call->lens);
}

/* Runs a script, by digest and if need be by text; args holds the nkeys keys, then the
 * other arguments. */
static enum conn_result
eval(struct conn *c, struct script *s, int nkeys, int nargs, const char *const *args,
     int64_t deadline, int intr_fd, struct reply **reply)
{
	struct call call;

	call_init(&call, s, nkeys, nargs, args);
	if (call_send(c, &call) != CONN_OK)
		return CONN_FAILED;
	return call_recv(c, &call, deadline, intr_fd, reply);
}

static void
ttl_ms(const struct lock *l, char *buf, size_t size)
{
	snprintf(buf, size, "%lld", (long long)(l->ttl / NS_PER_MS));
}

int
lock_parse_holder(const char *value, char *host, size_t size, long *pid)
{
	const char *first = strchr(value, ':'), *last = strrchr(value, ':');
	char *end;

	/* "<36-character uuid>:<host>:<pid>" */
	if (first != value + 36 || last <= first || !last[1])
		return -1;
	errno = 0;
	*pid = strtol(last + 1, &end, 10);
	if (*end || errno || *pid <= 0)
		return -1;
	snprintf(host, size, "%.*s", (int)(last - first - 1), first + 1);
	return 0;
}

const char *
lock_describe_holder(const char *value, char *buf, size_t size)
{
	char host[LOCK_HOLDER_MAX];
	long pid;
	size_t o = 0;

	if (lock_parse_holder(value, host, sizeof(host), &pid) == 0) {
		snprintf(buf, size, "%s:%ld", host, pid);
		return buf;
	}
	for (const char *p = value; *p && o + 5 < size; p++)
		o += (size_t)snprintf(buf + o, size - o, (*p >= ' ' && *p < 127) ? "%c" : "\\x%02x",
				      (unsigned char)*p);
	buf[o] = '\0';
	return buf;
}

/* A PTTL in ms as a TTL in ns, saturating (a server may say anything): -1 for none. */
static int64_t
ttl_ns(long long ms)
{
	if (ms < 0)
		return -1;
	return ms > TIME_NEVER / NS_PER_MS ? TIME_NEVER : (int64_t)ms * NS_PER_MS;
}

enum acquire_reply {
	REPLY_ACQUIRED,
	REPLY_HELD,
	REPLY_NOT_NOW, /* the server cannot run it yet: it is loading its data, or busy */
	REPLY_REFUSED,
};

/* An error reply that says "not now" rather than "no": a restarted server still loading its
 * data, one busy with a long script, a replica that lost its master. */
static bool
not_now(const char *error)
{
	static const char *const prefixes[] = { "LOADING ", "BUSY ", "MASTERDOWN " };

	for (size_t i = 0; i < ARRAY_LEN(prefixes); i++)
		if (strncmp(error, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* Reads the acquire script's reply into l. */
static enum acquire_reply
parse_acquire(struct lock *l, struct conn *c, const struct reply *r)
{
	const struct reply *e0, *e1;

	if (reply_type(r) == REPLY_ERROR) {
		const char *e = reply_string(r, NULL);
		set_error(l, "%s refused to take %s: %s%s", conn_address(c), l->key, e,
			  strncmp(e, "NOPERM", 6) == 0 ? "; see LEAST PRIVILEGE in redlock-run(1)"
						       : "");
		return not_now(e) ? REPLY_NOT_NOW : REPLY_REFUSED;
	}
	if (reply_type(r) != REPLY_ARRAY || reply_count(r) < 2 ||
	    reply_type(e0 = reply_element(r, 0)) != REPLY_INTEGER ||
	    reply_type(e1 = reply_element(r, 1)) != REPLY_INTEGER) {
		set_error(l, "unexpected reply from %s to the acquire script", conn_address(c));
		return REPLY_REFUSED;
	}
	if (reply_integer(e0) == 1) {
		l->fence = reply_integer(e1);
		return REPLY_ACQUIRED;
	}
	l->holder_ttl = ttl_ns(reply_integer(e1));
	l->holder[0] = '\0';
	if (reply_count(r) > 2 && reply_type(reply_element(r, 2)) == REPLY_STRING) {
		size_t len;
		const char *v = reply_string(reply_element(r, 2), &len);
		snprintf(l->holder, sizeof(l->holder), "%.*s", (int)len, v);
	}
	return REPLY_HELD;
}

/* What lock_acquire carries from one attempt to the next. */
struct acquisition {
	int64_t wait;          /* as asked: 0 (-n), ns, or WAIT_FOREVER */
	int64_t wait_deadline; /* when waiting ends */
	int64_t io_cap;        /* no request may outlast this */
	int64_t unsure_since;  /* when a request whose outcome we do not know went out, or -1 */
	int64_t answered_at;   /* when the server last answered; -1: never, in this run */
	int64_t pause;         /* the pause before trying a silent server again; 0 while it
				* answers */
	bool seen_held;        /* the server said another holds the lock */
	char shown[LOCK_HOLDER_MAX]; /* the holder the last progress line named */
};

bool
lock_grant_in_time(const struct lock *l, int64_t valid_until, int64_t now)
{
	return valid_until - now >= lock_lease_deadline(l, 0) - l->ttl / 3;
}

/*
 * A grant that came too late to count is given back at once (for a moment it may still be
 * ours, and a waiter may be woken by it), and says why in l->error.
 */
static void
give_back(struct lock *l, struct conn *c, int64_t sent)
{
	int64_t now = clock_now();
	char took[32], ttl[32];

	lock_release(l, c, now + time_min(l->io_timeout, l->ttl), -1);
	set_error(l, "the grant of %s came %s after the request, too late for a lease of %s",
		  l->key, duration_format(now - sent, took, sizeof(took)),
		  duration_format(l->ttl, ttl, sizeof(ttl)));
	l->holder[0] = '\0';
	msg_info("%s; gave it back", l->error);
}

/* Records why we stopped with a request unanswered: a lock it took expires by itself. */
static void
set_unsure_error(struct lock *l, const char *why)
{
	set_error(l, "%s; if the lock was taken, it expires within %lldms", why,
		  (long long)(l->ttl / NS_PER_MS));
}

/*
 * The acquire request is in flight and we must stop (a signal). Its answer comes within a
 * round trip unless the server is stuck: wait that long, and give back a lock it took.
 */
static void
settle_interrupted(struct lock *l, struct conn *c)
{
	struct reply *r;
	int64_t deadline = clock_now() + time_min(l->io_timeout, NS_PER_S);

	if (conn_recv(c, &r, deadline, -1) != CONN_OK) {
		set_unsure_error(l, "no answer to the last attempt");
		msg_warn("%s", l->error);
		return;
	}
	if (parse_acquire(l, c, r) == REPLY_ACQUIRED)
		lock_release(l, c, deadline, -1);
	reply_free(r);
}

/*
 * How long to keep trying a server that does not answer. While waiting with -w: until the
 * wait ends. While waiting without end, once the server has answered: LOCK_OUTAGE after its
 * last answer, long enough for a restart or a failover. Otherwise (-n, or a server that never
 * answered: more likely a wrong URL than an outage) not at all, unless a request may have
 * landed: then it is asked about again until any lock it took has expired by itself, and with
 * -n no longer than one request may take.
 */
static int64_t
give_up_point(const struct lock *l, const struct acquisition *q)
{
	int64_t t;

	if (q->wait > 0)
		return q->wait_deadline;
	if (q->wait == WAIT_FOREVER && q->answered_at >= 0)
		return time_add(q->answered_at, LOCK_OUTAGE);
	if (q->unsure_since < 0)
		return 0;
	t = time_add(q->unsure_since, l->ttl);
	return q->wait == 0 ? time_min(t, q->unsure_since + l->io_timeout) : t;
}

/*
 * The server did not answer (l->error says how), or said "not now": pauses, 10ms at first and
 * twice as long each time up to a tenth of the TTL (so that a request that may have landed is
 * asked about several times within its lease) and at most a second. LOCK_ACQUIRED means "try
 * again"; otherwise, how to end: when a wait ran out, 75 if the lock was seen held, else 69.
 */
static enum lock_result
retry_later(struct lock *l, struct acquisition *q, int intr_fd)
{
	int64_t now = clock_now(), give_up = give_up_point(l, q);
	char why[sizeof(l->error)];

	if (now >= give_up) {
		if (q->unsure_since >= 0) {
			snprintf(why, sizeof(why), "%s", l->error);
			set_unsure_error(l, why);
		}
		if (q->wait > 0 && q->seen_held) {
			if (q->unsure_since >= 0)
				msg_warn("%s", l->error);
			return LOCK_BUSY;
		}
		return LOCK_UNAVAILABLE;
	}
	if (!q->pause)
		msg_info("%s; trying again%s", l->error,
			 q->wait > 0	     ? " until the wait ends"
			 : q->wait == 0 || q->answered_at < 0 ? ""
						     : " for up to a minute");
	q->pause = q->pause ? time_min(2 * q->pause, time_min(time_max(l->ttl / 10, 10 * NS_PER_MS),
							      NS_PER_S))
			    : 10 * NS_PER_MS;
	if (clock_sleep_until(time_min(now + q->pause, give_up), intr_fd) < 0) {
		if (q->unsure_since >= 0) {
			set_unsure_error(l, "interrupted");
			msg_warn("%s", l->error);
		}
		return LOCK_INTERRUPTED;
	}
	return LOCK_ACQUIRED;
}

/*
 * One attempt: (re)connects, sends the acquire script (calling *meanwhile, once, as soon as
 * it is on its way) and reads the answer into l and *a. *sent is when the request went
 * out; *sending tells whether it did (a failed connect sends nothing).
 */
static enum conn_result
attempt(struct lock *l, struct conn *c, struct acquisition *q, int intr_fd,
	void (**meanwhile)(void *), void *arg, int64_t *sent, bool *sending, enum acquire_reply *a)
{
	char ttl[24], handoff[24];
	const char *args[7] = { l->key,   l->fence_key, l->wake_key, l->waiting_key,
				l->value, ttl,          NULL };
	struct call call;
	struct reply *r;
	enum conn_result res;

	*sent = clock_now();
	*sending = false;
	if (!conn_check(c)) { /* a connection the server hung up on is not sent on */
		res = conn_open(c, time_min(*sent + l->io_timeout, q->io_cap), intr_fd);
		if (res != CONN_OK)
			return res;
		*sent = clock_now();
	}
	ttl_ms(l, ttl, sizeof(ttl));
	snprintf(handoff, sizeof(handoff), "%lld", (long long)(LOCK_HANDOFF / NS_PER_MS));
	/* The last attempt, as the wait runs out, does not stay registered as a waiter. */
	args[6] = q->wait != 0 && *sent < q->wait_deadline ? handoff : "0";
	call_init(&call, &script_acquire, 4, 7, args);
	*sending = true;
	res = call_send(c, &call);
	if (*meanwhile) {
		(*meanwhile)(arg);
		*meanwhile = NULL;
	}
	if (res == CONN_OK)
		res = call_recv(c, &call, time_min(*sent + l->io_timeout, q->io_cap), intr_fd, &r);
	if (res == CONN_OK) {
		*a = parse_acquire(l, c, r);
		reply_free(r);
	}
	return res;
}

/* The waiting line: who holds the lock, and how much of their lease is left. */
static void
show_wait(struct lock *l, struct acquisition *q, int64_t left)
{
	char holder[LOCK_HOLDER_MAX], buf[32];

	msg_progress("waiting for %s (held by %s, %s left)", l->key,
		     lock_describe_holder(l->holder, holder, sizeof(holder)),
		     left >= 0 ? duration_format(left, buf, sizeof(buf)) : "no expiry");
	snprintf(q->shown, sizeof(q->shown), "%s", l->holder);
}

/*
 * Another holds the lock: says so (a live line is redrawn every second, a log names each
 * holder once) and blocks until a release wakes us (BLPOP on the wake list), the holder's
 * lease would have run out, or the wait ends, whichever comes first: a lost wake-up or a
 * crashed holder costs at most the lease. A lock that never expires was not taken by
 * redlock-run and wakes nobody: it is looked at again twice a second.
 *
 * The end is kept on our clock, to the millisecond: the server times a blocked client out
 * only at its next tick, up to 1/hz late. Then the connection is closed. A wake-up it may
 * have been handing us meanwhile is not lost to the next waiter: the attempt that follows
 * finds the lock free and takes it. LOCK_ACQUIRED means "try again"; otherwise, how to end.
 */
static enum lock_result
wait_turn(struct lock *l, struct conn *c, struct acquisition *q, int intr_fd)
{
	int64_t now = clock_now(), block, end;
	char seconds[32];
	struct reply *r;
	enum conn_result res;

	if (msg_progress_live() || strcmp(q->shown, l->holder) != 0)
		show_wait(l, q, l->holder_ttl);
	block = time_min(q->wait_deadline - now,
			 l->holder_ttl >= 0 ? l->holder_ttl : LOCK_HANDOFF / 2);
	if (block < NS_PER_MS)
		return LOCK_ACQUIRED; /* about to end anyway: just try again */
	end = now + block;
	/* BLPOP takes seconds with a fraction (Redis 6 and later); 0 would mean forever. */
	snprintf(seconds, sizeof(seconds), "%.3f", (double)block / (double)NS_PER_S);
	if (conn_send(c, 3, (const char *[]){ "BLPOP", l->wake_key, seconds },
		      (size_t[]){ 5, strlen(l->wake_key), strlen(seconds) }) < 0)
		return LOCK_ACQUIRED; /* out of memory: closed, and the next attempt says so */
	while ((res = conn_wait(c, msg_progress_live() ? time_min(end, clock_now() + NS_PER_S) : end,
				intr_fd)) == CONN_TIMEOUT) {
		int64_t t = clock_now();
		if (t >= end) {
			conn_close(c);
			return LOCK_ACQUIRED;
		}
		show_wait(l, q, l->holder_ttl >= 0 ? time_max(l->holder_ttl - (t - now), 0) : -1);
	}
	if (res == CONN_INTERRUPTED) {
		conn_close(c); /* the only way to take back a blocked request */
		return LOCK_INTERRUPTED;
	}
	/* Woken, or the connection broke (the next attempt reconnects): try again. */
	if (res != CONN_OK || conn_recv(c, &r, end, -1) != CONN_OK)
		return LOCK_ACQUIRED;
	res = reply_type(r) == REPLY_ERROR ? CONN_REFUSED : CONN_OK;
	if (res == CONN_REFUSED)
		set_error(l, "%s refused to wait on %s: %s", conn_address(c), l->wake_key,
			  reply_string(r, NULL));
	reply_free(r);
	return res == CONN_OK ? LOCK_ACQUIRED : LOCK_UNAVAILABLE;
}

enum lock_result
lock_acquire(struct lock *l, struct conn *c, int64_t wait, int intr_fd, void (*meanwhile)(void *),
	     void *arg)
{
	struct acquisition q = {
		.wait = wait,
		.wait_deadline = wait == WAIT_FOREVER ? TIME_NEVER : time_add(clock_now(), wait),
		.unsure_since = -1,
		.answered_at = -1,
	};
	enum lock_result out = LOCK_ACQUIRED;

	/* With -w, Redis may take a little longer than the wait to answer the last attempt,
	 * made as the wait runs out; no more. */
	q.io_cap = wait > 0 ? time_add(q.wait_deadline, LOCK_LAST_ANSWER) : TIME_NEVER;
	while (out == LOCK_ACQUIRED) {
		int64_t sent;
		bool sending;
		enum acquire_reply a = REPLY_REFUSED;
		enum conn_result res =
			attempt(l, c, &q, intr_fd, &meanwhile, arg, &sent, &sending, &a);

		if (res == CONN_INTERRUPTED) {
			if (sending) {
				settle_interrupted(l, c);
			} else if (q.unsure_since >= 0) {
				set_unsure_error(l, "interrupted");
				msg_warn("%s", l->error);
			}
			out = LOCK_INTERRUPTED;
			break;
		}
		if (res != CONN_OK) {
			set_error(l, "%s", conn_error(c));
			if (sending && q.unsure_since < 0)
				q.unsure_since = sent;
		}
		if (res == CONN_REFUSED) { /* AUTH or SELECT: no point asking again */
			out = LOCK_UNAVAILABLE;
			break;
		}
		if (res != CONN_OK || a == REPLY_NOT_NOW) {
			out = retry_later(l, &q, intr_fd);
			continue;
		}
		if (q.pause)
			msg_info("%s answers again", conn_address(c));
		q.answered_at = clock_now();
		q.pause = 0;
		if (a == REPLY_REFUSED) {
			if (q.unsure_since >= 0) { /* an earlier request stays unsettled */
				char why[sizeof(l->error)];
				snprintf(why, sizeof(why), "%s", l->error);
				set_unsure_error(l, why);
			}
			out = LOCK_UNAVAILABLE;
			break;
		}
		/* An answer for our value settles every request before it: the script is
		 * idempotent. */
		q.unsure_since = -1;
		if (a == REPLY_ACQUIRED) {
			if (lock_grant_in_time(l, lock_lease_deadline(l, sent), q.answered_at)) {
				l->acquired_at = sent;
				break;
			}
			give_back(l, c, sent);
		} else {
			q.seen_held = true;
		}
		if (wait == 0 || clock_now() >= q.wait_deadline)
			out = LOCK_BUSY;
		else if (a == REPLY_HELD)
			out = wait_turn(l, c, &q, intr_fd);
	}
	msg_progress_end();
	return out;
}

/* Reads the renew script's reply into l. */
static enum lock_renewal
read_renewal(struct lock *l, struct conn *c, const struct reply *r)
{
	size_t len;
	const char *v;

	switch (reply_type(r)) {
	case REPLY_INTEGER:
		return reply_integer(r) == 1   ? LOCK_RENEWED
		       : reply_integer(r) == 0 ? LOCK_GONE
					       : LOCK_GONE_WITH_DATA;
	case REPLY_STRING:
		v = reply_string(r, &len);
		snprintf(l->holder, sizeof(l->holder), "%.*s", (int)len, v);
		return LOCK_TAKEN;
	default:
		set_error(l, "%s refused to renew %s: %s", conn_address(c), l->key,
			  reply_type(r) == REPLY_ERROR ? reply_string(r, NULL)
						       : "unexpected reply");
		return LOCK_RENEW_FAILED;
	}
}

enum lock_renewal
lock_renew(struct lock *l, struct conn *c, int64_t deadline, int intr_fd)
{
	char ttl[24];
	const char *args[4] = { l->key, l->fence_key, l->value, ttl };
	struct reply *r;
	enum conn_result res;
	enum lock_renewal out;

	res = conn_is_open(c) ? CONN_OK : conn_open(c, deadline, intr_fd);
	if (res == CONN_INTERRUPTED)
		return LOCK_RENEW_INTERRUPTED;
	if (res != CONN_OK) {
		set_error(l, "%s", conn_error(c));
		return LOCK_RENEW_FAILED;
	}
	ttl_ms(l, ttl, sizeof(ttl));
	res = eval(c, &script_renew, 2, 4, args, deadline, intr_fd, &r);
	if (res == CONN_INTERRUPTED) {
		conn_close(c);
		return LOCK_RENEW_INTERRUPTED;
	}
	if (res != CONN_OK) {
		set_error(l, "%s", conn_error(c));
		return LOCK_RENEW_FAILED;
	}
	out = read_renewal(l, c, r);
	if (out == LOCK_RENEW_FAILED)
		/* A refusal (a replica that turned read-only, a script error): the lease
		 * cannot be extended here, so it counts as a failed attempt, and the next
		 * one starts afresh, resolving the name again (a failover may have moved it). */
		conn_reset(c);
	reply_free(r);
	return out;
}

enum lock_release_result
lock_release(struct lock *l, struct conn *c, int64_t deadline, int intr_fd)
{
	char handoff[24];
	const char *args[6] = { l->key, l->wake_key, l->waiting_key, l->fence_key, l->value,
				handoff };
	struct reply *r = NULL;
	enum conn_result res = CONN_FAILED;
	enum lock_release_result out;
	bool unsure = false; /* a request went out and its reply was lost */

	snprintf(handoff, sizeof(handoff), "%lld", (long long)(LOCK_HANDOFF / NS_PER_MS));
	/* The connection may have sat idle for as long as the command ran: a server that hung
	 * up meanwhile is found out before anything is sent, and one broken while the request
	 * was out is worth one more try on a fresh one (the release is idempotent). */
	conn_check(c);
	for (int tries = 0; tries < 2 && res == CONN_FAILED; tries++) {
		if (!conn_is_open(c) && (res = conn_open(c, deadline, intr_fd)) != CONN_OK)
			break;
		res = eval(c, &script_release, 4, 6, args, deadline, intr_fd, &r);
		unsure = unsure || res == CONN_FAILED;
	}
	if (res != CONN_OK) {
		set_error(l, "%s", res == CONN_INTERRUPTED ? "interrupted" : conn_error(c));
		return LOCK_RELEASE_FAILED;
	}
	l->answered_at = clock_now();
	if (reply_type(r) == REPLY_INTEGER)
		/* Not ours, after a request that may have landed: most likely that request
		 * deleted it, unless the server lost its data (which no release does). */
		out = reply_integer(r) == 1			 ? LOCK_RELEASED
		      : unsure && reply_integer(r) == 0 ? LOCK_RELEASE_UNCONFIRMED
							 : LOCK_RELEASE_GONE;
	else {
		set_error(l, "%s refused to release %s: %s", conn_address(c), l->key,
			  reply_type(r) == REPLY_ERROR ? reply_string(r, NULL)
						       : "unexpected reply");
		out = LOCK_RELEASE_FAILED;
	}
	reply_free(r);
	return out;
}

/* Reads the query script's reply into *st: 0, or -1 with l->error set. */
static int
read_state(struct lock *l, struct conn *c, const struct reply *r, struct lock_state *st)
{
	const struct reply *value, *pttl, *fence;
	size_t len;

	if (reply_type(r) != REPLY_ARRAY || reply_count(r) != 3 ||
	    reply_type(pttl = reply_element(r, 1)) != REPLY_INTEGER) {
		set_error(l, "%s refused to say who holds %s: %s", conn_address(c), l->key,
			  reply_type(r) == REPLY_ERROR ? reply_string(r, NULL)
						       : "unexpected reply");
		return -1;
	}
	value = reply_element(r, 0);
	fence = reply_element(r, 2);
	st->held = reply_type(value) == REPLY_STRING;
	if (st->held) {
		const char *v = reply_string(value, &len);
		snprintf(st->value, sizeof(st->value), "%.*s", (int)len, v);
	}
	st->ttl = ttl_ns(reply_integer(pttl));
	st->fence = reply_type(fence) == REPLY_STRING ? atoll(reply_string(fence, NULL)) : -1;
	return 0;
}

int
lock_query(struct lock *l, struct conn *c, int64_t deadline, struct lock_state *st)
{
	const char *args[2] = { l->key, l->fence_key };
	struct reply *r;

	int out;

	memset(st, 0, sizeof(*st));
	if ((!conn_is_open(c) && conn_open(c, deadline, -1) != CONN_OK) ||
	    eval(c, &script_query, 2, 2, args, deadline, -1, &r) != CONN_OK) {
		set_error(l, "%s", conn_error(c));
		return -1;
	}
	out = read_state(l, c, r, st);
	reply_free(r);
	return out;
}
