#include "lock.h"

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
 * KEYS[1] the lock, KEYS[2] its fence counter; ARGV[1] our value, ARGV[2] the TTL in ms.
 * Returns {1, fence} when the lock is ours: taken now (the counter grows), or taken by an
 * earlier request with the same value whose reply was lost (its lease is refreshed and its
 * fence returned). Otherwise {0, the holder's PTTL, the holder's value}.
 */
static struct script script_acquire = {
	.text = "local holder = redis.call('GET', KEYS[1])\n"
		"if holder == ARGV[1] then\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
		"  local fence = redis.call('GET', KEYS[2])\n"
		"  return {1, tonumber(fence) or redis.call('INCR', KEYS[2])}\n"
		"end\n"
		"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
		"  return {1, redis.call('INCR', KEYS[2])}\n"
		"end\n"
		"return {0, redis.call('PTTL', KEYS[1]), holder}\n",
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

/* KEYS[1] the lock; ARGV[1] our value. Returns 1 when deleted, 0 when not ours. */
static struct script script_release = {
	.text = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
		"  redis.call('DEL', KEYS[1])\n"
		"  return 1\n"
		"end\n"
		"return 0\n",
};

static struct script *const scripts[] = { &script_acquire, &script_renew, &script_release };

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
	if (!(l->fence_key = lock_aux_key(key, ":fence")))
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
	l->fence_key = NULL;
}

int64_t
lock_lease_deadline(const struct lock *l, int64_t sent)
{
	return sent + l->ttl - (l->ttl / 100 + 2 * NS_PER_MS);
}

/*
 * Runs a script by its digest, and by its text when the server does not know it yet
 * (NOSCRIPT: a fresh or restarted server), which also caches it there.
 * args holds the nkeys keys, then the other arguments.
 */
static enum conn_result
eval(struct conn *c, struct script *s, int nkeys, int nargs, const char *const *args,
     int64_t deadline, int intr_fd, struct reply **reply)
{
	const char *argv[16];
	size_t lens[16];
	char numkeys[8];
	enum conn_result res;
	int argc = 0;

	snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
	argv[argc++] = "EVALSHA";
	argv[argc++] = s->sha;
	argv[argc++] = numkeys;
	for (int i = 0; i < nargs && argc < (int)ARRAY_LEN(argv); i++)
		argv[argc++] = args[i];
	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);

	res = conn_call(c, reply, deadline, intr_fd, argc, argv, lens);
	if (res != CONN_OK || reply_type(*reply) != REPLY_ERROR ||
	    strncmp(reply_string(*reply, NULL), "NOSCRIPT", 8) != 0)
		return res;
	reply_free(*reply);
	argv[0] = "EVAL";
	argv[1] = s->text;
	lens[0] = 4;
	lens[1] = strlen(s->text);
	return conn_call(c, reply, deadline, intr_fd, argc, argv, lens);
}

static void
ttl_ms(const struct lock *l, char *buf, size_t size)
{
	snprintf(buf, size, "%lld", (long long)(l->ttl / NS_PER_MS));
}

const char *
lock_describe_holder(const char *value, char *buf, size_t size)
{
	const char *host = strchr(value, ':');
	const char *pid = strrchr(value, ':');
	size_t o = 0;

	/* "<36-character uuid>:<host>:<pid>" */
	if (host == value + 36 && pid > host && pid[1] &&
	    strspn(pid + 1, "0123456789") == strlen(pid + 1)) {
		snprintf(buf, size, "%s", host + 1);
		return buf;
	}
	for (const char *p = value; *p && o + 5 < size; p++)
		o += (size_t)snprintf(buf + o, size - o, (*p >= ' ' && *p < 127) ? "%c" : "\\x%02x",
				      (unsigned char)*p);
	buf[o] = '\0';
	return buf;
}

enum acquire_reply {
	REPLY_ACQUIRED,
	REPLY_HELD,
	REPLY_REFUSED,
};

/* Reads the acquire script's reply into l. */
static enum acquire_reply
parse_acquire(struct lock *l, struct conn *c, const struct reply *r)
{
	const struct reply *e0, *e1;

	if (reply_type(r) == REPLY_ERROR) {
		set_error(l, "%s refused to take %s: %s", conn_address(c), l->key,
			  reply_string(r, NULL));
		return REPLY_REFUSED;
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
	l->holder_ttl = reply_integer(e1) >= 0 ? reply_integer(e1) * NS_PER_MS : -1;
	l->holder[0] = '\0';
	if (reply_count(r) > 2 && reply_type(reply_element(r, 2)) == REPLY_STRING) {
		size_t len;
		const char *v = reply_string(reply_element(r, 2), &len);
		snprintf(l->holder, sizeof(l->holder), "%.*s", (int)len, v);
	}
	return REPLY_HELD;
}

/* A little random jitter, so that waiters do not retry in step. */
static int64_t
jitter(int64_t max)
{
	static uint64_t state;

	if (!state) {
		state = (uint64_t)clock_now() ^ ((uint64_t)getpid() << 32);
		state |= 1;
	}
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return max > 0 ? (int64_t)(state % (uint64_t)max) : 0;
}

/*
 * The wait between two attempts while another holds the lock: randomized exponential
 * backoff, never past the holder's remaining lease (it may expire or be released sooner)
 * nor past the end of our own wait.
 */
static int
wait_for_release(struct lock *l, int attempt, int64_t wait_deadline, int intr_fd)
{
	int64_t base = (10 * NS_PER_MS) << (attempt < 6 ? attempt : 6);
	int64_t pause = base / 2 + jitter(base / 2);
	int64_t until = clock_now() + pause;

	if (l->holder_ttl >= 0)
		until = time_min(until, clock_now() + l->holder_ttl);
	return clock_sleep_until(time_min(until, wait_deadline), intr_fd);
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
		msg_warn("no answer from %s to the last attempt on %s; if it took the lock, the "
			 "lock expires within %lldms",
			 conn_address(c), l->key, (long long)(l->ttl / NS_PER_MS));
		return;
	}
	if (parse_acquire(l, c, r) == REPLY_ACQUIRED)
		lock_release(l, c, deadline, -1);
	reply_free(r);
}

/*
 * How long to keep asking about a request whose outcome we do not know: until any lock it
 * took has expired by itself, but not past the wait (-w), and with -n no longer than one
 * request may take.
 */
static int64_t
give_up_point(const struct lock *l, int64_t unsure_since, int64_t wait, int64_t wait_deadline)
{
	int64_t t = time_min(unsure_since + l->ttl, wait_deadline);

	return wait == 0 ? time_min(t, unsure_since + l->io_timeout) : t;
}

enum lock_result
lock_acquire(struct lock *l, struct conn *c, int64_t wait, int intr_fd)
{
	int64_t start = clock_now();
	int64_t wait_deadline = wait == LOCK_WAIT_FOREVER ? TIME_NEVER : start + wait;
	/* With -w, Redis may take a little longer than the wait to answer the last attempt,
	 * made as the wait runs out; no more. */
	int64_t io_deadline_cap = wait > 0 ? wait_deadline + LOCK_LAST_ANSWER : TIME_NEVER;
	int64_t unsure_since = -1; /* when a request whose outcome we do not know was sent */
	char ttl[24], holder[LOCK_HOLDER_MAX], left[32], shown[LOCK_HOLDER_MAX] = "";
	const char *args[4] = { l->key, l->fence_key, l->value, ttl };
	int attempt = 0;

	ttl_ms(l, ttl, sizeof(ttl));
	for (;;) {
		int64_t sent = clock_now();
		struct reply *r;
		enum conn_result res;
		enum acquire_reply a;

		if (!conn_is_open(c)) {
			res = conn_open(c, time_min(sent + l->io_timeout, io_deadline_cap));
			if (res != CONN_OK && unsure_since >= 0) {
				set_error(l, "%s; if the lock was taken, it expires within %lldms",
					  conn_error(c), (long long)(l->ttl / NS_PER_MS));
				return LOCK_UNAVAILABLE;
			}
			if (res != CONN_OK) {
				set_error(l, "%s", conn_error(c));
				return LOCK_UNAVAILABLE;
			}
			sent = clock_now();
		}
		res = eval(c, &script_acquire, 2, 4, args,
			   time_min(sent + l->io_timeout, io_deadline_cap), intr_fd, &r);
		if (res == CONN_INTERRUPTED) {
			settle_interrupted(l, c);
			return LOCK_INTERRUPTED;
		}
		if (res != CONN_OK) {
			/* Our request may have landed: ask again with the same value, which
			 * settles it, until any lock it took must have expired anyway. */
			if (unsure_since < 0)
				unsure_since = sent;
			if (clock_now() >= give_up_point(l, unsure_since, wait, io_deadline_cap)) {
				set_error(l, "%s; if the lock was taken, it expires within %lldms",
					  conn_error(c), (long long)(l->ttl / NS_PER_MS));
				return LOCK_UNAVAILABLE;
			}
			msg_info("%s; asking again", conn_error(c));
			continue;
		}
		unsure_since = -1;
		a = parse_acquire(l, c, r);
		reply_free(r);
		if (a == REPLY_REFUSED)
			return LOCK_UNAVAILABLE;
		if (a == REPLY_ACQUIRED) {
			l->acquired_at = sent;
			msg_progress_end();
			return LOCK_ACQUIRED;
		}
		if (wait == 0 || clock_now() >= wait_deadline) {
			msg_progress_end();
			return LOCK_BUSY;
		}
		/* A live line redraws at every attempt; a log says it once per holder. */
		if (msg_progress_live() || strcmp(shown, l->holder) != 0)
			msg_progress("waiting for %s (held by %s, %s left)", l->key,
				     lock_describe_holder(l->holder, holder, sizeof(holder)),
				     l->holder_ttl >= 0
					     ? duration_format(l->holder_ttl, left, sizeof(left))
					     : "no expiry");
		snprintf(shown, sizeof(shown), "%s", l->holder);
		if (wait_for_release(l, attempt++, wait_deadline, intr_fd) < 0) {
			msg_progress_end();
			return LOCK_INTERRUPTED;
		}
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

	if (!conn_is_open(c) && conn_open(c, deadline) != CONN_OK) {
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
	switch (reply_type(r)) {
	case REPLY_INTEGER:
		out = reply_integer(r) == 1   ? LOCK_RENEWED
		      : reply_integer(r) == 0 ? LOCK_GONE
					      : LOCK_GONE_WITH_DATA;
		break;
	case REPLY_STRING:
		snprintf(l->holder, sizeof(l->holder), "%s", reply_string(r, NULL));
		out = LOCK_TAKEN;
		break;
	default:
		/* A refusal (a replica that turned read-only, a script error): the lease
		 * cannot be extended here, so it counts as a failed attempt. */
		set_error(l, "%s refused to renew %s: %s", conn_address(c), l->key,
			  reply_type(r) == REPLY_ERROR ? reply_string(r, NULL)
						       : "unexpected reply");
		out = LOCK_RENEW_FAILED;
		break;
	}
	reply_free(r);
	return out;
}

enum lock_release_result
lock_release(struct lock *l, struct conn *c, int64_t deadline, int intr_fd)
{
	const char *args[2] = { l->key, l->value };
	struct reply *r = NULL;
	enum conn_result res = CONN_FAILED;
	enum lock_release_result out;

	/* The connection may have sat idle for as long as the command ran: when it turns
	 * out to be dead, one fresh one is worth trying (the release is idempotent). */
	for (int tries = 0; tries < 2 && res == CONN_FAILED; tries++) {
		if (!conn_is_open(c) && (res = conn_open(c, deadline)) != CONN_OK)
			break;
		res = eval(c, &script_release, 1, 2, args, deadline, intr_fd, &r);
	}
	if (res != CONN_OK) {
		set_error(l, "%s", res == CONN_INTERRUPTED ? "interrupted" : conn_error(c));
		return LOCK_RELEASE_FAILED;
	}
	if (reply_type(r) == REPLY_INTEGER)
		out = reply_integer(r) == 1 ? LOCK_RELEASED : LOCK_RELEASE_GONE;
	else {
		set_error(l, "%s refused to release %s: %s", conn_address(c), l->key,
			  reply_type(r) == REPLY_ERROR ? reply_string(r, NULL)
						       : "unexpected reply");
		out = LOCK_RELEASE_FAILED;
	}
	reply_free(r);
	return out;
}
