#include "lock.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "acquisition.h"
#include "duration.h"
#include "line.h"
#include "msg.h"
#include "names.h"
#include "nodes.h"
#include "proc.h"
#include "scripts.h"
#include "util.h"

static const struct kind *
kind_of(const struct lock *l)
{
	return l->shared ? &kind_shared : l->limit > 1 ? &kind_semaphore : &kind_exclusive;
}

void
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

/* Names the list that wakes us (l->own_wake_key) after our value. */
static void
name_own_list(struct lock *l)
{
	snprintf(l->own_wake_key, strlen(l->wake_key) + sizeof(l->value) + 1, "%s:%s", l->wake_key,
		 l->value);
}

int
make_token(struct lock *l)
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
	snprintf(l->value, sizeof(l->value), "%s:%s:%ld%s", uuid, host, (long)getpid(),
		 l->token_suffix);
	name_own_list(l);
	return 0;
}

void
lock_set_discipline(struct lock *l, bool latest, bool cancel_running)
{
	l->token_suffix = !latest ? "" : cancel_running ? ":latest:cancel" : ":latest";
	snprintf(l->value + strlen(l->value), sizeof(l->value) - strlen(l->value), "%s",
		 l->token_suffix);
	name_own_list(l);
}

const char *
lock_discipline_of(const char *value)
{
	/* ":PID:latest", as the scripts find it (see QUEUE_RULES in scripts.c). */
	for (const char *at = strstr(value, ":latest"); at; at = strstr(at + 1, ":latest")) {
		const char *d = at;
		while (d > value && d[-1] >= '0' && d[-1] <= '9')
			d--;
		if (d < at && d > value && d[-1] == ':')
			return "latest";
	}
	return "fifo";
}

int
lock_init(struct lock *l, const char *key, int64_t ttl)
{
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->ttl = ttl;
	l->io_timeout = LOCK_IO_TIMEOUT;
	l->connect_timeout = LOCK_IO_TIMEOUT;
	l->token_suffix = "";
	if (!(l->fence_key = lock_aux_key(key, NAME_FENCE)) ||
	    !(l->wake_key = lock_aux_key(key, NAME_WAKE)) ||
	    !(l->waiting_key = lock_aux_key(key, NAME_WAITING)) ||
	    !(l->shared_wake_key = lock_aux_key(key, NAME_WAKE_SHARED)) ||
	    !(l->queue_key = lock_aux_key(key, NAME_QUEUE)) ||
	    !(l->own_wake_key = malloc(strlen(l->wake_key) + sizeof(l->value) + 1)) ||
	    !(l->broken_key = lock_aux_key(key, NAME_BROKEN)))
		return -1;
	if (make_token(l) < 0)
		return -1;
	scripts_init();
	return 0;
}

void
lock_free(struct lock *l)
{
	free(l->fence_key);
	free(l->wake_key);
	free(l->waiting_key);
	free(l->shared_wake_key);
	free(l->queue_key);
	free(l->own_wake_key);
	free(l->broken_key);
	l->fence_key = l->wake_key = l->waiting_key = l->shared_wake_key = l->queue_key = NULL;
	l->broken_key = l->own_wake_key = NULL;
}

int64_t
lock_lease_deadline(const struct lock *l, int64_t sent)
{
	return time_add(sent, l->ttl - (l->ttl / 100 + 2 * NS_PER_MS));
}

void
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

void
acquire_call(struct lock *l, bool waiting, bool in_line, bool age, struct call *call)
{
	const char *args[7] = { LINE_KEYS(l), call->arg };

	snprintf(call->arg, sizeof(call->arg), "%lld:%d:%d:%d:%d:%d:%lld:%s",
		 (long long)(l->ttl / NS_PER_MS), waiting ? LOCK_HANDOFF_MS : 0,
		 l->limit > 1 ? l->limit : 1, in_line, age, l->ordered, l->arrived, l->value);
	call_init(call, kind_of(l)->acquire, 6, 7, args);
}

void
release_call(struct lock *l, long long keep, struct call *call)
{
	const char *args[7] = { LINE_KEYS(l), call->arg };

	snprintf(call->arg, sizeof(call->arg), "%lld:%s", keep, l->value);
	call_init(call, kind_of(l)->release, 6, 7, args);
}

void
call_send(struct nodes *ns, size_t i, const struct call *call, int64_t deadline, int intr_fd,
	  bool text)
{
	const char *argv[ARRAY_LEN(call->argv)];
	size_t lens[ARRAY_LEN(call->lens)];
	struct command cmd = {
		.argc = call->argc,
		.argv = argv,
		.lens = lens,
		.replicated = call->script->writes,
		.changes = call->script->writes || call->script->gives_back,
	};

	memcpy(argv, call->argv, sizeof(argv));
	memcpy(lens, call->lens, sizeof(lens));
	if (text) {
		argv[0] = "EVAL";
		argv[1] = call->script->text;
		lens[0] = 4;
		lens[1] = strlen(call->script->text);
	}
	nodes_send(ns, i, &cmd, deadline, intr_fd);
}

int64_t
due_from(const struct lock *l, const struct nodes *ns, size_t i, int64_t deadline)
{
	/* (WAIT, behind a request that changes the lock, may take its whole timeout on top.) */
	return nodes_reached(ns, i)
		       ? deadline
		       : time_min(deadline, time_add(clock_now(), time_add(l->connect_timeout,
									   l->replicas_timeout)));
}

void
call_send_all(struct nodes *ns, const struct call *call, int64_t deadline, int intr_fd)
{
	for (size_t i = 0; i < nodes_count(ns); i++)
		call_send(ns, i, call, deadline, intr_fd, false);
}

/* An answer saying that the server does not know the script: a fresh or restarted one. */
static bool
noscript(struct answer *a)
{
	if (a->result != CONN_OK || reply_type(a->reply) != REPLY_ERROR ||
	    strncmp(reply_string(a->reply, NULL), "NOSCRIPT", 8) != 0)
		return false;
	reply_free(a->reply);
	a->reply = NULL;
	return true;
}

enum conn_result
next_answer(struct nodes *ns, const struct call *call, int64_t until, int64_t due, int intr_fd,
	    struct answer *a)
{
	enum conn_result res;

	while ((res = nodes_next(ns, until, intr_fd, a)) == CONN_OK && noscript(a))
		call_send(ns, a->node, call, due, intr_fd, true);
	return res;
}

bool
replicated(const struct lock *l, const struct nodes *ns, const struct answer *a, const char *what,
	   char *why, size_t size)
{
	char within[32];

	if (l->replicas == 0 || a->replicas >= l->replicas)
		return true;
	long long connected = nodes_replicas_connected(ns, a->node);
	char has[64] = "";

	if (a->replicas < 0) {
		snprintf(why, size, "%s", nodes_error(ns, a->node));
		return false;
	}
	/* Too few replicas connected (a server never given them, or a failover's new master
	 * that they have not reached yet), or replicas too slow: said apart. */
	if (connected >= 0 && connected < l->replicas)
		snprintf(has, sizeof(has), " (it has %lld connected)", connected);
	snprintf(why, size,
		 "only %lld of the %d replicas asked for acknowledged %s on %s within %s%s",
		 a->replicas, l->replicas, what, nodes_address(ns, a->node),
		 duration_format(l->replicas_timeout, within, sizeof(within)), has);
	return false;
}

void
failures_add(struct failures *f, const char *why)
{
	size_t len = strlen(f->text);

	if (len < sizeof(f->text) - 1)
		snprintf(f->text + len, sizeof(f->text) - len, "%s%s", f->count ? "; " : "", why);
	f->count++;
}

void
set_quorum_error(struct lock *l, const struct nodes *ns, const struct failures *f)
{
	if (nodes_count(ns) == 1)
		snprintf(l->error, sizeof(l->error), "%s", f->text);
	else
		snprintf(l->error, sizeof(l->error),
			 "no quorum (it takes %zu of %zu servers): %.430s", nodes_quorum(ns),
			 nodes_count(ns),
			 /* (Answers that do not count, as a restarted server's grant.) */
			 f->count ? f->text : "too few of them said yes");
}

void
ttl_ms(const struct lock *l, char *buf, size_t size)
{
	snprintf(buf, size, "%lld", (long long)(l->ttl / NS_PER_MS));
}

const char *
lock_value_process(const char *value, const char *here)
{
	char host[LOCK_HOLDER_MAX], state;
	long pid;
	pid_t ppid, pgrp;

	if (lock_parse_holder(value, host, sizeof(host), &pid) < 0 || strcmp(host, here) != 0)
		return NULL;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return "gone";
	if (proc_stat((pid_t)pid, &state, &ppid, &pgrp) < 0)
		return "running";
	/* Killed, and not reaped yet: a zombie holds nothing. Stopped (Ctrl-Z, SIGSTOP), it
	 * renews nothing until it is continued. (A tracer's stops, 't', come and go.) */
	return state == 'Z' ? "gone" : state == 'T' ? "stopped" : "running";
}

int
lock_parse_holder(const char *value, char *host, size_t size, long *pid)
{
	static const char *const marks[] = { ":kept", ":cancel", ":latest" };
	const char *first = strchr(value, ':'), *last;
	size_t len = strlen(value);
	char *end;

	/* "<36-character uuid>:<host>:<pid>", then the discipline (":latest", ":latest:cancel")
	 * and ":kept" once released with --min-hold */
	for (size_t i = 0; i < ARRAY_LEN(marks); i++)
		if (len > strlen(marks[i]) &&
		    strncmp(value + len - strlen(marks[i]), marks[i], strlen(marks[i])) == 0)
			len -= strlen(marks[i]);
	for (last = value + len - 1; last > value && *last != ':'; last--)
		;
	if (first != value + 36 || last <= first || !last[1])
		return -1;
	errno = 0;
	*pid = strtol(last + 1, &end, 10);
	if (end != value + len || errno || *pid <= 0)
		return -1;
	snprintf(host, size, "%.*s", (int)(last - first - 1), first + 1);
	return 0;
}

bool
lock_value_kept(const char *value)
{
	size_t len = strlen(value);

	return len > 5 && strcmp(value + len - 5, ":kept") == 0;
}

const char *
lock_describe_holder(const char *value, char *buf, size_t size)
{
	char host[LOCK_HOLDER_MAX];
	long pid;
	size_t o = 0;

	if (lock_parse_holder(value, host, sizeof(host), &pid) == 0) {
		snprintf(buf, size, "%s:%ld", host, pid);
		return msg_printable(buf); /* a host name is anything the token's writer says */
	}
	for (const char *p = value; *p && o + 5 < size; p++)
		o += (size_t)snprintf(buf + o, size - o, (*p >= ' ' && *p < 127) ? "%c" : "\\x%02x",
				      (unsigned char)*p);
	buf[o] = '\0';
	return buf;
}

int64_t
ttl_ns(long long ms)
{
	if (ms < 0)
		return -1;
	return ms > TIME_NEVER / NS_PER_MS ? TIME_NEVER : (int64_t)ms * NS_PER_MS;
}

const char *
refusal(const struct reply *r, char *buf, size_t size)
{
	const char *e, *at = NULL;
	size_t len;

	if (reply_type(r) != REPLY_ERROR)
		return "unexpected reply";
	e = reply_string(r, NULL);
	if (strncmp(e, "LIMIT ", 6) == 0)
		e += 6; /* our own script's code: the rest says it */
	len = strlen(e);
	/* The last " script: ": Valkey's own words may say it first ("ERR ACL failure in
	 * script: User u has no permissions to run the 'get' command script: 59e8..."). */
	for (const char *p = e; (p = strstr(p, " script: ")); p++)
		at = p;
	if (at && strstr(at, "@user_script:"))
		len = (size_t)(at - e);
	snprintf(buf, size, "%.*s%s", msg_quoted_len(e, len), e, lock_refusal_advice(e));
	return buf;
}

const char *
lock_refusal_advice(const char *error)
{
	/* The two refusals a user can mend. A command refused inside a script is an ERR: Redis
	 * 7.0 says "ERR The user executing the script can't run this command or subcommand",
	 * Valkey "ERR ACL failure in script: ...". */
	bool acl = strncmp(error, "NOPERM", 6) == 0 ||
		   (strncmp(error, "ERR ", 4) == 0 &&
		    (strstr(error, "can't run this command") || strstr(error, "ACL failure")));

	const char *empty = getenv("REDLOCK_PASSWORD");

	if (acl)
		return "; see LEAST PRIVILEGE in redlock-run(1)";
	/* A URL that names a replica (over Sentinel, the master moved: asked again there) */
	if (strncmp(error, "READONLY", 8) == 0)
		return "; it is a replica: give its master (redlock-run --status names it), or a "
		       "redis+sentinel:// URL";
	if (strncmp(error, "NOAUTH", 6) != 0)
		return "";
	/* (An empty one counts for none: a secret that a CI job did not get, most likely.) */
	return empty && !*empty
		       ? "; give its password with --password-file, $REDLOCK_PASSWORD "
			 "(set, but empty) or in the URL"
		       : "; give its password with --password-file, $REDLOCK_PASSWORD or in "
			 "the URL";
}

bool
foreign(struct lock *l, const char *address, const struct reply *r, const char *advice)
{
	char said[400];

	if (reply_type(r) != REPLY_ERROR || strncmp(reply_string(r, NULL), "FOREIGN ", 8) != 0)
		return false;
	set_error(l, "%s is not a lock on %s: it %s, which redlock-run did not write%s", l->key,
		  address, refusal(r, said, sizeof(said)) + 8, advice);
	return true;
}

/* Whether an acquire script's error says that the line's discipline stands in the way (see
 * QUEUE_RULES in scripts.c): a newer run took our place ("SUPERSEDED HOST:PID"), or KEY's
 * runs use another discipline ("QUEUE DISCIPLINE VALUE"). l->error (and l->holder) say which. */
static bool
queue_refusal(struct lock *l, const char *e)
{
	char who[LOCK_HOLDER_MAX];
	size_t len;

	if (strncmp(e, "SUPERSEDED ", 11) == 0) {
		l->superseded = true;
		snprintf(l->holder, sizeof(l->holder), "%s", e + 11);
		set_error(l, "%s: superseded by %s (a newer run with --queue latest)", l->key,
			  e + 11);
		return true;
	}
	if (strncmp(e, "QUEUE ", 6) != 0)
		return false;
	e += 6;
	l->mismatched = true;
	len = strcspn(e, " "); /* "DISCIPLINE VALUE" */
	set_error(l,
		  "%s is used with --queue %.*s by %s, and this run has --queue %s%s: every run on "
		  "one KEY must use the same discipline",
		  l->key, (int)len, e,
		  lock_describe_holder(e[len] ? e + len + 1 : "", who, sizeof(who)),
		  lock_discipline_of(l->value), *l->token_suffix ? "" : " (the default)");
	return true;
}

enum acquire_reply
parse_acquire(struct lock *l, const char *address, const struct reply *r, long long *age,
	      char *run_id)
{
	const struct reply *e0, *e1;

	*age = -1;
	run_id[0] = '\0';
	/* Waiting would be for ever: nothing of ours will ever free it. */
	if (foreign(l, address, r,
		    "; choose another KEY (or a --prefix), or delete it if nothing uses it"))
		return REPLY_REFUSED;
	if (reply_type(r) == REPLY_ERROR && queue_refusal(l, reply_string(r, NULL)))
		return REPLY_REFUSED;
	if (reply_type(r) == REPLY_ERROR) {
		const char *e = reply_string(r, NULL);
		char said[400];
		set_error(l,
			  conn_error_not_now(e) ? "%s cannot take %s now: %s%s"
						: "%s refused to take %s: %s%s",
			  address, l->key, refusal(r, said, sizeof(said)),
			  strncmp(e, "WRONGTYPE", 9) != 0 ? ""
			  : l->limit > 1 ? "; it is used as a lock (without --limit) elsewhere"
					 : "; it holds another type of value, not redlock-run's");
		l->mismatched = strncmp(e, "LIMIT ", 6) == 0;
		return conn_error_not_now(e) ? REPLY_NOT_NOW : REPLY_REFUSED;
	}
	if (reply_type(r) != REPLY_ARRAY || reply_count(r) < 2 ||
	    reply_type(e0 = reply_element(r, 0)) != REPLY_INTEGER ||
	    reply_type(e1 = reply_element(r, 1)) != REPLY_INTEGER) {
		set_error(l, "unexpected reply from %s to the acquire script", address);
		return REPLY_REFUSED;
	}
	if (reply_integer(e0) == 1) {
		l->fence = reply_integer(e1);
		l->holders = reply_count(r) > 2 && reply_type(reply_element(r, 2)) == REPLY_INTEGER
				     ? reply_integer(reply_element(r, 2))
				     : 1;
		if (reply_count(r) > 3 && reply_type(reply_element(r, 3)) == REPLY_INTEGER)
			*age = reply_integer(reply_element(r, 3));
		if (reply_count(r) > 4 && reply_type(reply_element(r, 4)) == REPLY_STRING)
			snprintf(run_id, 41, "%s", reply_string(reply_element(r, 4), NULL));
		return REPLY_ACQUIRED;
	}
	l->holder_ttl = ttl_ns(reply_integer(e1));
	l->holder[0] = '\0';
	l->holder_waits = reply_count(r) > 3 && reply_type(reply_element(r, 3)) == REPLY_INTEGER &&
			  reply_integer(reply_element(r, 3)) == 1;
	/* --queue latest: when we took our place, for every later look (see QUEUE_RULES). */
	if (l->arrived == 0 && reply_count(r) > 4 &&
	    reply_type(reply_element(r, 4)) == REPLY_INTEGER &&
	    reply_integer(reply_element(r, 4)) > 0)
		l->arrived = reply_integer(reply_element(r, 4));
	if (reply_count(r) > 2 && reply_type(reply_element(r, 2)) == REPLY_STRING) {
		size_t len;
		const char *v = reply_string(reply_element(r, 2), &len);
		snprintf(l->holder, sizeof(l->holder), "%.*s", (int)len, v);
	}
	return REPLY_HELD;
}

/* A renewal's or release's answer (see NOT_OURS): 1 when it renewed or released, 0 when KEY was
 * not ours, -1 when its fence counter was gone as well, -2 for anything else; *up, how long the
 * server has run (s), or -1 when it did not say. Who broke the lock with --break, when someone
 * did, goes to l->holder as "broken:HOST:PID". */
static long long
released(struct lock *l, const struct reply *r, long long *up)
{
	const struct reply *mark;
	size_t len;

	*up = -1;
	if (reply_type(r) == REPLY_INTEGER) /* (2: released, and the line's first woken) */
		return reply_integer(r) == 1 || reply_integer(r) == 2 ? 1
		       : reply_integer(r) == 0                        ? 0
								      : -1;
	if (reply_type(r) != REPLY_ARRAY || reply_count(r) < 2 || reply_count(r) > 3 ||
	    reply_type(reply_element(r, 0)) != REPLY_INTEGER ||
	    reply_type(reply_element(r, 1)) != REPLY_INTEGER)
		return -2;
	/* (An uptime below 0 is no uptime: found by fuzz/fuzz_reply.) */
	*up = reply_integer(reply_element(r, 1)) < 0 ? -1 : reply_integer(reply_element(r, 1));
	if (reply_count(r) == 3 && reply_type(mark = reply_element(r, 2)) == REPLY_STRING) {
		const char *v = reply_string(mark, &len);
		snprintf(l->holder, sizeof(l->holder), "broken:%.*s", (int)len, v);
	}
	return reply_integer(reply_element(r, 0)) == 0 ? 0 : -1;
}

bool
lock_broken_by(const char *value, char *buf, size_t size)
{
	if (strncmp(value, "broken:", 7) != 0)
		return false;
	snprintf(buf, size, "%s", value + 7);
	return true;
}

/*
 * Whether KEY, found gone (`got` and `up` from released()) on the server at address, was lost
 * with the server's data while it was ours. The request went out at `sent`, and its answer came
 * just now: the server restarted between sent - up - 1s and now - up (its uptime is in whole
 * seconds). Lost if it restarted after the lock was taken and before `before` (the release's
 * first request; TIME_NEVER for a renewal), or, when the request was asked only once, if the
 * fence counter is gone too. If so, l->error says which.
 */
static bool
lost_with_data(struct lock *l, const char *address, long long got, long long up, int64_t sent,
	       int64_t before, bool asked_again)
{
	int64_t span = up < 0 ? 0 : up > INT64_MAX / NS_PER_S ? TIME_NEVER : up * NS_PER_S;
	char ago[32];

	if (got > 0)
		return false;
	/* (Added to the other side, saturating: an uptime of centuries is no overflow.) */
	if (up >= 0 && sent > time_add(time_add(l->acquired_at, span), NS_PER_S) &&
	    clock_now() < time_add(before, span)) {
		set_error(l, "%s lost its data: it restarted %s ago, while the command ran",
			  address, uptime_ago(up, ago, sizeof(ago)));
		return true;
	}
	if (got == -1 && !asked_again)
		set_error(l, "%s lost its data: it has neither %s nor its fence counter", address,
			  l->key);
	return got == -1 && !asked_again;
}

/* Reads the renew script's reply from the server at address, to a request sent then, into l. */
static enum lock_renewal
read_renewal(struct lock *l, const char *address, const struct reply *r, int64_t sent)
{
	char said[400];
	size_t len;
	const char *v;
	long long got, up;

	l->holder[0] = '\0';
	if (reply_type(r) == REPLY_ERROR && strncmp(reply_string(r, NULL), "CANCELLED ", 10) == 0) {
		/* Renewed, by a run that a newer one cancelled (see script_renew). */
		snprintf(l->cancelled_by, sizeof(l->cancelled_by), "%s",
			 reply_string(r, NULL) + 10);
		return LOCK_RENEWED;
	}
	if ((got = released(l, r, &up)) > -2)
		return got == 1                                ? LOCK_RENEWED
		       : strncmp(l->holder, "broken:", 7) == 0 ? LOCK_TAKEN /* by the breaker */
		       : lost_with_data(l, address, got, up, sent, TIME_NEVER, false)
			       ? LOCK_GONE_WITH_DATA
			       : LOCK_GONE;
	switch (reply_type(r)) {
	case REPLY_STRING:
		v = reply_string(r, &len);
		snprintf(l->holder, sizeof(l->holder), "%.*s", (int)len, v);
		return LOCK_TAKEN;
	default:
		set_error(l, "%s refused to renew %s: %s", address, l->key,
			  refusal(r, said, sizeof(said)));
		return LOCK_RENEW_FAILED;
	}
}

/* l->error after a loss: the failover that explains it (a Sentinel's master that moved), or
 * nothing. */
static void
explain_loss(struct lock *l, const struct nodes *ns)
{
	l->error[0] = '\0';
	for (size_t i = 0; i < nodes_count(ns) && !l->error[0]; i++)
		if (!nodes_holds(ns, i) && nodes_failover(ns, i))
			snprintf(l->error, sizeof(l->error), "%s", nodes_failover(ns, i));
}

/* Why a node's renewal failed, its reply read into l->error, for the round's note. */
static void
renew_failed(struct lock *l, struct nodes *ns, size_t i, struct failures *why)
{
	failures_add(why, l->error);
	/* A refusal (a replica that turned read-only, a script error): the next request
	 * starts afresh, resolving the name again (a failover may have moved it). */
	nodes_reset(ns, i);
}

/* What a round of renewals has heard so far (see lock_renew). */
struct renewal {
	size_t yes;     /* nodes that renewed */
	size_t others;  /* nodes that another holder has */
	size_t gone;    /* nodes that lost our key */
	size_t none;    /* as many nodes as a quorum can do without */
	int64_t valid;  /* the lease as it stood: a node that lost our key may be given it again
			 * before it ends */
	long long ours; /* our fence */
	bool data_gone; /* every node that lost our key lost its data too (lost: the first says) */
	char lost[sizeof(((struct lock *)0)->error)];
	char holder[LOCK_HOLDER_MAX]; /* the other holder, the last one found */
	struct failures why;
	bool taking[NODES_MAX], raising[NODES_MAX];
	struct call call, take, raise;
	int64_t deadline;
	int intr_fd;
};

/*
 * Node a->node answers our taking the lock there. While the lease holds on a quorum without
 * them, a minority of nodes that do not hold it are given it: one that lost the key (restarted
 * empty, most likely), or never had it (a late answer, a server that was down). It counts from
 * the next renewal on, never for this one.
 */
static void
count_take(struct lock *l, struct nodes *ns, struct renewal *rn, const struct answer *a)
{
	size_t i = a->node;
	long long age;
	char run_id[41];

	rn->taking[i] = false;
	switch (parse_acquire(l, nodes_address(ns, i), a->reply, &age, run_id)) {
	case REPLY_ACQUIRED:
		if (!replicated(l, ns, a, "the lock", l->error, sizeof(l->error))) {
			failures_add(&rn->why, l->error);
			break;
		}
		msg_info("%s has %s now; it counts from the next renewal", nodes_address(ns, i),
			 l->key);
		nodes_hold(ns, i, lock_lease_deadline(l, nodes_sent(ns, i)));
		if (l->fence < rn->ours) {
			/* Our fence goes there too (see raise_the_rest in acquire.c). */
			call_send(ns, i, &rn->raise, rn->deadline, rn->intr_fd, true);
			rn->raising[i] = true;
		}
		break;
	case REPLY_HELD:
		snprintf(rn->holder, sizeof(rn->holder), "%s", l->holder);
		rn->others++;
		break;
	default:
		failures_add(&rn->why, l->error);
		break;
	}
	l->fence = rn->ours;
}

/* Node a->node answers our renewal. */
static void
count_renewal(struct lock *l, struct nodes *ns, struct renewal *rn, const struct answer *a)
{
	size_t i = a->node;
	enum lock_renewal r = read_renewal(l, nodes_address(ns, i), a->reply, nodes_sent(ns, i));

	switch (r) {
	case LOCK_RENEWED:
		/* Not acknowledged by the replicas, the lease is not extended there: a replica
		 * promoted now would not know of it. */
		if (!replicated(l, ns, a, "the renewal", l->error, sizeof(l->error))) {
			failures_add(&rn->why, l->error);
			break;
		}
		nodes_hold(ns, i, lock_lease_deadline(l, nodes_sent(ns, i)));
		rn->yes++;
		break;
	case LOCK_RENEW_FAILED:
		renew_failed(l, ns, i, &rn->why);
		break;
	case LOCK_TAKEN:
		snprintf(rn->holder, sizeof(rn->holder), "%s", l->holder);
		nodes_drop(ns, i);
		rn->others++;
		break;
	default:
		/* The first that lost its data says so (l->error), if all did. */
		if (r != LOCK_GONE_WITH_DATA)
			rn->data_gone = false;
		else if (!rn->lost[0])
			snprintf(rn->lost, sizeof(rn->lost), "%s", l->error);
		nodes_drop(ns, i);
		/* A minority that lost it is given it again while the lease, as it stood, holds
		 * (a young server counts for nobody else meanwhile). */
		if (++rn->gone <= rn->none && rn->valid > clock_now()) {
			msg_info("%s no longer has %s; taking it there again", nodes_address(ns, i),
				 l->key);
			call_send(ns, i, &rn->take, rn->deadline, rn->intr_fd, false);
			rn->taking[i] = true;
		}
		break;
	}
}

/* Another holder, or servers that lost our key, on so many nodes that we cannot hold a quorum:
 * lost, and how. */
static enum lock_renewal
quorum_lost(struct lock *l, struct nodes *ns, const struct renewal *rn)
{
	nodes_forget(ns);
	snprintf(l->holder, sizeof(l->holder), "%s", rn->holder);
	explain_loss(l, ns);
	if (rn->others > rn->none)
		return LOCK_TAKEN;
	if (!rn->data_gone || l->error[0]) /* (a failover explains it) */
		return LOCK_GONE;
	snprintf(l->error, sizeof(l->error), "%s", rn->lost);
	return LOCK_GONE_WITH_DATA;
}

enum lock_renewal
lock_renew(struct lock *l, struct nodes *ns, int64_t deadline, int intr_fd,
	   void (*renewed)(void *, int64_t), void *arg)
{
	struct renewal rn = {
		.none = nodes_count(ns) - nodes_quorum(ns),
		.valid = nodes_lease_end(ns),
		.ours = l->fence,
		.data_gone = true,
		.deadline = deadline,
		.intr_fd = intr_fd,
	};
	size_t missing = 0;
	bool told = false;
	char ttl[24], fence[24];
	const char *args[7] = { l->key, l->fence_key, l->broken_key, l->value, ttl };
	struct answer a;
	enum conn_result res;

	ttl_ms(l, ttl, sizeof(ttl));
	snprintf(fence, sizeof(fence), "%lld", rn.ours);
	call_init(&rn.call, kind_of(l)->renew, 3, 5, args);
	/* Where we do not hold it, we take it: the run may have been in line there (a grant
	 * takes it out). */
	acquire_call(l, false, true, false, &rn.take);
	fence_call(l, fence, ttl, &rn.raise);
	for (size_t i = 0; i < nodes_count(ns); i++)
		missing += !nodes_holds(ns, i);
	for (size_t i = 0; i < nodes_count(ns); i++) {
		rn.taking[i] = !nodes_holds(ns, i) && missing <= rn.none && rn.valid > clock_now();
		call_send(ns, i, rn.taking[i] ? &rn.take : &rn.call, deadline, intr_fd, false);
	}
	while ((res = nodes_next(ns, TIME_NEVER, intr_fd, &a)) == CONN_OK) {
		size_t i = a.node;

		if (noscript(&a)) {
			call_send(ns, i, rn.taking[i] ? &rn.take : &rn.call, deadline, intr_fd,
				  true);
			continue;
		}
		if (rn.raising[i] || a.result != CONN_OK) {
			if (a.result != CONN_OK)
				failures_add(&rn.why, nodes_error(ns, i));
			rn.raising[i] = rn.taking[i] = false;
			reply_free(a.reply);
			continue;
		}
		if (rn.taking[i])
			count_take(l, ns, &rn, &a);
		else
			count_renewal(l, ns, &rn, &a);
		reply_free(a.reply);
		if (rn.others > rn.none || rn.gone > rn.none)
			return quorum_lost(l, ns, &rn);
		if (!told && nodes_verdict(ns, rn.yes, 0) == VERDICT_YES) {
			told = true;
			if (renewed)
				renewed(arg, nodes_lease_end(ns));
		}
	}
	if (res == CONN_INTERRUPTED) {
		/* (The release follows on the same connections: the answers still due are
		 * dropped as they come, and the server takes the release after them.) */
		nodes_let_go(ns);
		return LOCK_RENEW_INTERRUPTED;
	}
	if (told) {
		/* A minority that did not answer changes nothing but this note. */
		snprintf(l->error, sizeof(l->error), "%s", rn.why.count ? rn.why.text : "");
		return LOCK_RENEWED;
	}
	set_quorum_error(l, ns, &rn.why);
	return LOCK_RENEW_FAILED;
}

int64_t
lock_hold_left(const struct lock *l, int64_t now)
{
	return l->min_hold ? time_max(0, time_add(l->held_since, l->min_hold) - now) : 0;
}

/* What the answers to a release have said so far (see lock_release). */
struct release_count {
	size_t yes;         /* nodes that released it */
	size_t unconfirmed; /* nodes that, asked again, no longer had it: most likely our own first
			     * request's doing */
	size_t lost;        /* nodes that lost it with their data while the command ran */
	size_t answered;
	size_t holding;  /* nodes that held it, as the acquisition and the renewals left them */
	size_t not_ours; /* of those, nodes that found it gone or another's */
	bool retried[NODES_MAX];
	bool without[NODES_MAX]; /* the node did not hold it */
	int64_t pause;           /* before asking a server that said "not now" again */
	char lost_why[sizeof(((struct lock *)0)->error)];
	struct failures why;
};

/* Node a->node answers the release, sent at start: false for a refusal (said in c->why). */
static bool
count_release(struct lock *l, struct nodes *ns, struct release_count *c, const struct answer *a,
	      int64_t start)
{
	size_t i = a->node;
	long long up, got;

	if ((got = released(l, a->reply, &up)) <= -2) {
		char said[400];
		set_error(l, "%s refused to release %s: %s", nodes_address(ns, i), l->key,
			  refusal(a->reply, said, sizeof(said)));
		failures_add(&c->why, l->error);
		return false;
	}
	/* Not ours: lost with the server's data while the command ran, or, after a request
	 * that may have landed, most likely deleted by that request. */
	if (nodes_holds(ns, i) && lost_with_data(l, nodes_address(ns, i), got, up,
						 nodes_sent(ns, i), start, c->retried[i])) {
		c->lost++;
		snprintf(c->lost_why, sizeof(c->lost_why), "%s", l->error);
	} else {
		c->yes += got == 1;
		l->handed_over = l->handed_over || (reply_type(a->reply) == REPLY_INTEGER &&
						    reply_integer(a->reply) == 2);
		c->without[i] = got <= 0 && !c->retried[i];
		c->unconfirmed += c->retried[i] && got <= 0;
		/* (A server that never held it says nothing of its loss.) */
		c->not_ours += !c->retried[i] && got <= 0 && nodes_holds(ns, i);
	}
	c->answered++;
	return true;
}

/* Whether a node that answered the release "not now" (busy with a long script, loading) is
 * asked again before deadline: after c->pause, 10ms at first, doubling up to a second. */
static bool
ask_again_later(struct release_count *c, const struct answer *a, int64_t deadline)
{
	if (reply_type(a->reply) != REPLY_ERROR ||
	    !conn_error_not_now(reply_string(a->reply, NULL)))
		return false;
	c->pause = time_min(time_max(2 * c->pause, 10 * NS_PER_MS), NS_PER_S);
	return clock_now() + c->pause < deadline;
}

/* What the release came to, once its answers are in (res: how the wait for them ended). */
static enum lock_release_result
release_verdict(struct lock *l, struct nodes *ns, struct release_count *c, enum conn_result res)
{
	char ttl[32];

	for (size_t i = 0; i < nodes_count(ns); i++) {
		char line[320];
		if (!nodes_outstanding(ns, i))
			continue;
		snprintf(line, sizeof(line),
			 res == CONN_INTERRUPTED ? "interrupted" : "no reply from %s in time",
			 nodes_address(ns, i));
		failures_add(&c->why, line);
	}
	nodes_forget(ns);
	if (nodes_verdict(ns, c->yes, 0) == VERDICT_YES) {
		if (c->why.count)
			msg_info("not released everywhere (%s); it expires there within %s",
				 c->why.text, duration_format(l->ttl, ttl, sizeof(ttl)));
		return LOCK_RELEASED;
	}
	if (c->lost && c->answered >= nodes_quorum(ns) &&
	    nodes_verdict(ns, c->yes + c->unconfirmed, 0) != VERDICT_YES) {
		snprintf(l->error, sizeof(l->error), "%s", c->lost_why);
		return LOCK_RELEASE_LOST_DATA;
	}
	if (nodes_verdict(ns, c->yes + c->unconfirmed, 0) == VERDICT_YES)
		return LOCK_RELEASE_UNCONFIRMED;
	/* Broken (--break), as a server that held it says: lost, however few answered. */
	if (strncmp(l->holder, "broken:", 7) == 0)
		return LOCK_RELEASE_GONE;
	/* Gone only when the servers that held it (as the acquisition and the renewals left
	 * them: a renewal hands it back to a server that lost it) and found it gone leave too
	 * few that may hold it still: one that did not answer (frozen, down) held it, for all we
	 * know. */
	if (c->answered >= nodes_quorum(ns) && c->holding < c->not_ours + nodes_quorum(ns))
		return LOCK_RELEASE_GONE;
	/* Why the servers that answered do not make a quorum: */
	for (size_t i = 0; i < nodes_count(ns); i++) {
		char line[320];
		if (!c->without[i])
			continue;
		snprintf(line, sizeof(line), "%s did not hold it", nodes_address(ns, i));
		failures_add(&c->why, line);
	}
	set_quorum_error(l, ns, &c->why);
	return LOCK_RELEASE_FAILED;
}

enum lock_release_result
lock_release(struct lock *l, struct nodes *ns, int64_t deadline, int intr_fd)
{
	struct release_count c = { 0 };
	enum lock_release_result verdict;
	bool decided = false;
	struct call call;
	struct answer a;
	enum conn_result res;
	int64_t start = clock_now(), left = lock_hold_left(l, start);

	/* A renewal cut short by the command's end is still answered first, on the same
	 * connection: its WAIT for replicas may take up to its own deadline. */
	deadline = time_max(deadline, nodes_queued_until(ns));
	l->holder[0] = '\0'; /* (a --break's mark, should a node answer with one) */
	l->handed_over = false;
	/* A request whose server is gone (a cluster's owner, a Sentinel's master, killed) is
	 * asked again where it went, for as long as a failover takes: within the lease, and a
	 * minute at most (the holder's exit waits for it). */
	int64_t due = time_max(deadline, time_min(l->valid_until, time_add(start, LOCK_OUTAGE)));

	for (size_t i = 0; i < nodes_count(ns); i++)
		c.holding += nodes_holds(ns, i);
	/* Rounded up: never shorter than --min-hold. */
	release_call(l, (long long)((left + NS_PER_MS - 1) / NS_PER_MS), &call);
	call_send_all(ns, &call, due, intr_fd);
	for (;;) {
		res = next_answer(ns, &call, deadline, due, intr_fd, &a);
		if (res == CONN_TIMEOUT && deadline < due && c.answered < nodes_quorum(ns) &&
		    nodes_moving(ns)) {
			deadline = due;
			continue;
		}
		if (res != CONN_OK)
			break;
		/* The connection may have sat idle for as long as the command ran: one that
		 * broke while the request was out is worth one more try on a fresh one (the
		 * release is idempotent). */
		if (a.result == CONN_FAILED && !c.retried[a.node]) {
			c.retried[a.node] = true;
			call_send(ns, a.node, &call, due, intr_fd, false);
			continue;
		}
		if (a.result != CONN_OK) {
			failures_add(&c.why, nodes_error(ns, a.node));
			continue;
		}
		if (ask_again_later(&c, &a, deadline)) {
			reply_free(a.reply);
			if (clock_sleep_until(clock_now() + c.pause, intr_fd) < 0) {
				res = CONN_INTERRUPTED;
				break;
			}
			call_send(ns, a.node, &call, due, intr_fd, false);
			continue;
		}
		/* Once the answers decided it (a quorum released it, or can no longer), the rest
		 * get a moment (twice what that took), not the whole deadline: one frozen node does
		 * not hold up the exit. A quorum that answered is not one that released it (one
		 * may never have held it): a node far away is given LOCK_LAST_ANSWER from then, a
		 * frozen one no more. */
		if (count_release(l, ns, &c, &a, start)) {
			if (c.answered == nodes_quorum(ns)) {
				l->answered_at = clock_now();
				deadline = time_min(deadline, l->answered_at + LOCK_LAST_ANSWER);
			}
			if (!decided && (c.yes >= nodes_quorum(ns) ||
					 c.answered - c.yes > nodes_count(ns) - nodes_quorum(ns))) {
				int64_t now = clock_now();
				decided = true;
				deadline = time_min(deadline,
						    now + time_min(LOCK_LAST_ANSWER,
								   time_max(10 * NS_PER_MS,
									    2 * (now - start))));
			}
		}
		reply_free(a.reply);
	}
	verdict = release_verdict(l, ns, &c, res);
	if (verdict == LOCK_RELEASED && l->handed_over && res != CONN_INTERRUPTED)
		line_follow_up(l, ns, intr_fd);
	return verdict;
}
