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

#include "acquisition.h"
#include "duration.h"
#include "line.h"
#include "msg.h"
#include "nodes.h"
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
	if (!(l->fence_key = lock_aux_key(key, ":fence")) ||
	    !(l->wake_key = lock_aux_key(key, ":wake")) ||
	    !(l->waiting_key = lock_aux_key(key, ":waiting")) ||
	    !(l->shared_wake_key = lock_aux_key(key, ":wake-shared")) ||
	    !(l->queue_key = lock_aux_key(key, ":queue")) ||
	    !(l->own_wake_key = malloc(strlen(l->wake_key) + sizeof(l->value) + 1)) ||
	    !(l->broken_key = lock_aux_key(key, ":broken")))
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

	snprintf(call->arg, sizeof(call->arg), "%lld:%d:%d:%d:%d:%d:%s",
		 (long long)(l->ttl / NS_PER_MS), waiting ? LOCK_HANDOFF_MS : 0,
		 l->limit > 1 ? l->limit : 1, in_line, age, l->ordered, l->value);
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
	struct command cmd = { call->argc, argv, lens, call->script->writes };

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

/* When a request to node i must be answered, for one otherwise due by deadline: by
 * --connect-timeout when the node never answered this run, connecting included. */
static int64_t
due_from(const struct lock *l, const struct nodes *ns, size_t i, int64_t deadline)
{
	return nodes_reached(ns, i) ? deadline
				    : time_min(deadline, time_add(clock_now(), l->connect_timeout));
}

/* The call, to every node. */
static void
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

/*
 * The next answer to call from any node, waited for until `until`; a node that did not know
 * the script is sent its text and asked again, due by `due`. What nodes_next returns.
 */
static enum conn_result
next_answer(struct nodes *ns, const struct call *call, int64_t until, int64_t due, int intr_fd,
	    struct answer *a)
{
	enum conn_result res;

	while ((res = nodes_next(ns, until, intr_fd, a)) == CONN_OK && noscript(a))
		call_send(ns, a->node, call, due, intr_fd, true);
	return res;
}

/*
 * Whether what answer a says was written reached enough replicas (--wait-replicas): always,
 * without it. Otherwise why says how many acknowledged what, or why WAIT could not tell.
 */
static bool
replicated(const struct lock *l, const struct nodes *ns, const struct answer *a, const char *what,
	   char *why, size_t size)
{
	char within[32];

	if (l->replicas == 0 || a->replicas >= l->replicas)
		return true;
	if (a->replicas < 0)
		snprintf(why, size, "%s", nodes_error(ns, a->node));
	else
		snprintf(why, size,
			 "only %lld of the %d replicas asked for acknowledged %s on %s within %s",
			 a->replicas, l->replicas, what, nodes_address(ns, a->node),
			 duration_format(l->replicas_timeout, within, sizeof(within)));
	return false;
}

static void
failures_add(struct failures *f, const char *why)
{
	size_t len = strlen(f->text);

	if (len < sizeof(f->text) - 1)
		snprintf(f->text + len, sizeof(f->text) - len, "%s%s", f->count ? "; " : "", why);
	f->count++;
}

/* l->error for a request that fewer than a quorum could grant: what the failing nodes said,
 * and with several nodes, how many a quorum needed. */
static void
set_quorum_error(struct lock *l, const struct nodes *ns, const struct failures *f)
{
	if (nodes_count(ns) == 1)
		snprintf(l->error, sizeof(l->error), "%s", f->text);
	else
		snprintf(l->error, sizeof(l->error), "no quorum (%zu of %zu nodes): %.440s",
			 nodes_quorum(ns), nodes_count(ns), f->text);
}

static void
ttl_ms(const struct lock *l, char *buf, size_t size)
{
	snprintf(buf, size, "%lld", (long long)(l->ttl / NS_PER_MS));
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

/*
 * What a server said when it refused a script, for a message: its error without the script's
 * internals Redis adds ("... script: 59e8..., on @user_script:20."), which name nothing a user
 * wrote; "unexpected reply" for anything but an error. Returns buf.
 */
static const char *
refusal(const struct reply *r, char *buf, size_t size)
{
	const char *e, *at;
	size_t len;

	if (reply_type(r) != REPLY_ERROR)
		return "unexpected reply";
	e = reply_string(r, NULL);
	len = strlen(e);
	if ((at = strstr(e, " script: ")) && strstr(at, "@user_script:"))
		len = (size_t)(at - e);
	while (len > 0 && (e[len - 1] == '.' || e[len - 1] == ' '))
		len--;
	snprintf(buf, size, "%.*s", (int)len, e);
	return buf;
}

/* Whether a script said that KEY is not a lock ("FOREIGN what", see ALIEN in scripts.c): then
 * l->error says what KEY holds on the server at address, and `advice` follows. */
static bool
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
	len = strcspn(e, " "); /* "DISCIPLINE VALUE" */
	set_error(l,
		  "%s is used with --queue %.*s by %s, and this run has --queue %s: every run on "
		  "one KEY must use the same discipline",
		  l->key, (int)len, e,
		  lock_describe_holder(e[len] ? e + len + 1 : "", who, sizeof(who)),
		  lock_discipline_of(l->value));
	return true;
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

/* Reads the acquire script's reply from the server at address into l; a grant's *age, how
 * long that server has run (s), or -1 when it did not say, and its run id into run_id (41
 * bytes), or "". */
static enum acquire_reply
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
		set_error(l, "%s refused to take %s: %s%s", address, l->key,
			  refusal(r, said, sizeof(said)),
			  strncmp(e, "NOPERM", 6) == 0 ? "; see LEAST PRIVILEGE in redlock-run(1)"
			  : strncmp(e, "WRONGTYPE", 9) != 0 ? ""
			  : l->limit > 1 ? "; it is used as a lock (without --limit) elsewhere"
					 : "; it holds another type of value, not redlock-run's");
		return not_now(e) ? REPLY_NOT_NOW : REPLY_REFUSED;
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
	if (reply_count(r) > 2 && reply_type(reply_element(r, 2)) == REPLY_STRING) {
		size_t len;
		const char *v = reply_string(reply_element(r, 2), &len);
		snprintf(l->holder, sizeof(l->holder), "%.*s", (int)len, v);
	}
	return REPLY_HELD;
}

enum attempt_outcome {
	ATTEMPT_ACQUIRED,
	ATTEMPT_HELD,        /* others hold it on so many nodes that no quorum is free */
	ATTEMPT_SPLIT,       /* contenders split the nodes between them: nobody has it; we gave
			      * back what we took */
	ATTEMPT_LATE,        /* granted, but too late to count: given back, l->error says so */
	ATTEMPT_RENEW,       /* granted by a request queued behind a BLPOP, whose lease counts
			      * from when it was queued: ours, to renew at once by asking again */
	ATTEMPT_NO_QUORUM,   /* too few nodes answered: l->error says why */
	ATTEMPT_REFUSED,     /* so many refused that no quorum ever can: l->error says why */
	ATTEMPT_INTERRUPTED, /* nothing taken was left behind */
};

bool
lock_grant_in_time(const struct lock *l, int64_t valid_until, int64_t now)
{
	return valid_until - now >= lock_lease_deadline(l, 0) - l->ttl / 3;
}

/* Records why we stopped with a request unanswered: a lock it took expires by itself. */
static void
set_unsure_error(struct lock *l, const char *why)
{
	set_error(l, "%s; if the lock was taken, it expires within %lldms", why,
		  (long long)(l->ttl / NS_PER_MS));
}

void
unsure_mark(struct acquisition *q, size_t i, int64_t sent)
{
	if (q->unsure_at[i] >= 0)
		return;
	q->unsure_at[i] = sent;
	if (q->unsure_since < 0 || sent < q->unsure_since)
		q->unsure_since = sent;
}

static void
unsure_clear(struct acquisition *q, size_t i)
{
	q->unsure_at[i] = -1;
	q->unsure_since = -1;
	for (size_t j = 0; j < NODES_MAX; j++)
		if (q->unsure_at[j] >= 0 &&
		    (q->unsure_since < 0 || q->unsure_at[j] < q->unsure_since))
			q->unsure_since = q->unsure_at[j];
}

/*
 * Sends the release wherever an attempt that failed may have taken the lock: on the nodes that
 * granted it, and on those still to answer (it queues behind the request there). Found held, a
 * node took nothing. The text of the script goes, as its answer may not be read.
 */
static void
send_give_back(struct lock *l, struct nodes *ns, const struct round *rd)
{
	struct call call;

	release_call(l, 0, &call);
	for (size_t i = 0; i < nodes_count(ns); i++)
		if (rd->granted[i] || rd->unreplicated[i] || nodes_outstanding(ns, i))
			call_send(ns, i, &call, clock_now() + l->io_timeout, -1, true);
}

/* Gives back what a failed attempt may have taken, without waiting for the answers. */
static void
give_back(struct lock *l, struct nodes *ns, const struct round *rd)
{
	send_give_back(l, ns, rd);
	nodes_forget(ns);
}

/*
 * The attempt's requests are in flight and we must stop (a signal). Their answers come within
 * a round trip unless a server is stuck: a lock they took is given back, and we wait that long
 * for it to be.
 */
static void
settle_interrupted(struct lock *l, struct nodes *ns, struct round *rd)
{
	int64_t deadline = clock_now() + time_min(l->io_timeout, NS_PER_S);
	struct answer a;
	bool unsure = false;

	send_give_back(l, ns, rd);
	while (nodes_next(ns, deadline, -1, &a) == CONN_OK) {
		if (a.result != CONN_OK)
			unsure = unsure || a.maybe_landed;
		else
			reply_free(a.reply);
	}
	for (size_t i = 0; i < nodes_count(ns); i++)
		unsure = unsure || nodes_outstanding(ns, i);
	nodes_cancel(ns);
	if (unsure) {
		set_unsure_error(l, "no answer to the last attempt");
		msg_warn("%s", l->error);
	}
}

/* The fence script's call, raising KEY's fence counter to `fence` where it is lower; both
 * strings (the lease in ms in ttl) must outlive the call. */
static void
fence_call(struct lock *l, const char *fence, const char *ttl, struct call *call)
{
	const char *args[3] = { l->fence_key, fence, ttl };

	call_init(call, &script_fence, 1, 3, args);
}

/*
 * The fence l->fence, once a quorum holds it, goes to every other node that answered or is
 * still to (behind its request there), its answer not waited for: a node that granted late,
 * or lower, or found KEY held, would otherwise keep a lower counter, and with it a quorum
 * that a node restarted empty joins later could count from below this fence.
 */
static void
raise_the_rest(struct lock *l, struct nodes *ns, const struct round *rd)
{
	char fence[24], ttl[24];
	struct call call;

	snprintf(fence, sizeof(fence), "%lld", l->fence);
	ttl_ms(l, ttl, sizeof(ttl));
	fence_call(l, fence, ttl, &call);
	for (size_t i = 0; i < nodes_count(ns); i++)
		if (!(rd->granted[i] && rd->fence[i] == l->fence) &&
		    (rd->granted[i] || rd->waiting[i] || nodes_outstanding(ns, i)))
			call_send(ns, i, &call, clock_now() + l->io_timeout, -1, true);
}

/* "3s", or "less than 1s": a server's uptime in whole seconds, up, as a time ago. */
static const char *
uptime_ago(long long up, char *buf, size_t size)
{
	if (up <= 0)
		return "less than 1s";
	return duration_format(up > INT64_MAX / NS_PER_S ? TIME_NEVER : up * NS_PER_S, buf, size);
}

/*
 * Whether a grant from a server that has run for age seconds (-1: it did not say) is young: over
 * several nodes, a server whose data is younger than a lease may have lost in a restart a key
 * that another holder's lease still counts on, and does not count towards a new quorum until it
 * is older (DESIGN §3b). This assumes that every run on KEY uses a lease no longer than ours, and
 * that a server starts empty (a server restarted with its data waits all the same).
 */
static bool
young(const struct lock *l, const struct nodes *ns, long long age)
{
	return nodes_count(ns) > 1 && age >= 0 && age <= l->ttl / NS_PER_S &&
	       age * NS_PER_S < l->ttl;
}

/* Reads one node's answer to the acquire request into the round. */
static void
count_answer(struct lock *l, struct nodes *ns, struct acquisition *q, struct round *rd,
	     const struct answer *a, int64_t answered)
{
	size_t i = a->node;
	long long age;
	char ran[32], counts[32], run_id[41];

	if (a->result != CONN_OK) {
		/* A request may have landed unanswered on a server that answered before; one that
		 * never did (a wrong address, a TLS port, something else listening) took nothing
		 * that its answer would not have said. */
		if (a->maybe_landed && nodes_reached(ns, i))
			unsure_mark(q, i, nodes_sent(ns, i));
		rd->reached += nodes_reached(ns, i); /* an outage, not a wrong address */
		if (a->result == CONN_TIMEOUT && !nodes_reached(ns, i) &&
		    strncmp(nodes_error(ns, i), "no reply from ", 14) == 0) {
			char line[400], within[32];
			snprintf(line, sizeof(line), "%s (--connect-timeout %s)", nodes_error(ns, i),
				 duration_format(l->connect_timeout, within, sizeof(within)));
			failures_add(&rd->why, line);
		} else {
			failures_add(&rd->why, nodes_error(ns, i));
		}
		if (a->result == CONN_REFUSED)
			rd->refused++;
		else
			rd->failed++;
		return;
	}
	/* An answer for our value settles every request before it: the script is
	 * idempotent. */
	unsure_clear(q, i);
	rd->answered++;
	switch (parse_acquire(l, nodes_address(ns, i), a->reply, &age, run_id)) {
	case REPLY_ACQUIRED:
		/* Two URLs of one quorum that reach the same server would count it twice. */
		for (size_t j = 0; run_id[0] && j < nodes_count(ns); j++) {
			if (j != i && strcmp(rd->run_id[j], run_id) == 0 && !rd->twice) {
				rd->twice = true;
				set_error(l,
					  "%s and %s are the same Redis server (run id %.12s...): a "
					  "quorum needs independent ones",
					  nodes_address(ns, j), nodes_address(ns, i), run_id);
			}
		}
		snprintf(rd->run_id[i], sizeof(rd->run_id[i]), "%s", run_id);
		if (!replicated(l, ns, a, "the lock", l->error, sizeof(l->error))) {
			/* Not now: a replica down, or a failover under way. */
			rd->unreplicated[i] = true;
			failures_add(&rd->why, l->error);
			rd->failed++;
			break;
		}
		rd->granted[i] = true;
		rd->fence[i] = l->fence;
		/* From when the request went out, or (queued behind a BLPOP that the server
		 * timed out) the earliest it can have run. */
		rd->lease[i] = lock_lease_deadline(l, time_max(nodes_sent(ns, i), rd->start));
		if (young(l, ns, age)) {
			/* It holds our key, and counts for sure once it is a lease old (its
			 * uptime is in whole seconds: one more to be sure). */
			int64_t wait = l->ttl - age * NS_PER_S + NS_PER_S;
			rd->young_at[i] = true;
			rd->young++;
			rd->counts_at[i] = time_add(answered, wait);
			if (!rd->young_why[0])
				snprintf(rd->young_why, sizeof(rd->young_why),
					 "%s restarted %s ago, less than a lease ago: it counts "
					 "towards a quorum in %s",
					 nodes_address(ns, i), uptime_ago(age, ran, sizeof(ran)),
					 duration_format(wait, counts, sizeof(counts)));
			break;
		}
		rd->yes++;
		break;
	case REPLY_HELD:
		rd->waiting[i] = true;
		rd->held_until[rd->held++] =
			l->holder_ttl >= 0 ? time_add(answered, l->holder_ttl) : TIME_NEVER;
		break;
	case REPLY_NOT_NOW:
		failures_add(&rd->why, l->error);
		rd->failed++;
		break;
	case REPLY_REFUSED:
		failures_add(&rd->why, l->error);
		rd->refused++;
		break;
	}
}

/*
 * Whether the attempt is decided: yes once a quorum granted it. A young node's grant counts only
 * when no other holder can still count on a key it lost. A holder keeps its key on the nodes
 * that did not restart, which we find held by it, or cannot hear from: young grants count when
 * those nodes are too few to make a quorum with the young ones; or when every node answered
 * and none is held by another, so that only a majority restart could have hidden a holder
 * (which no lease lock survives: see the man page; a new set of servers is young too). No once a
 * quorum can no longer say yes, or every node has answered.
 */
static int
earlier_first(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static enum verdict
verdict(const struct nodes *ns, struct round *rd)
{
	size_t n = nodes_count(ns), q = nodes_quorum(ns), pending = 0, foreign;

	for (size_t i = 0; i < n; i++)
		pending += nodes_outstanding(ns, i);
	foreign = rd->held + rd->refused + rd->failed + pending;
	if (rd->yes < q && rd->young && rd->yes + rd->young >= q &&
	    (foreign == 0 || foreign + rd->young < q)) {
		for (size_t i = 0; i < n; i++)
			rd->young_at[i] = false;
		rd->yes += rd->young;
		rd->young = 0;
	}
	if (rd->yes >= q)
		return VERDICT_YES;
	if (rd->held + rd->refused + rd->failed > n - q || !pending)
		return VERDICT_NO;
	return VERDICT_OPEN;
}

/* Until when the counted grants hold on a quorum: the quorum-th latest of their lease ends. */
static int64_t
round_valid(const struct nodes *ns, const struct round *rd)
{
	int64_t until[NODES_MAX];
	size_t k = 0;

	for (size_t i = 0; i < nodes_count(ns); i++)
		if (rd->granted[i] && !rd->young_at[i])
			until[k++] = rd->lease[i];
	return nodes_quorum_until(ns, until, k);
}

/*
 * A quorum granted the lock. Its fence is the highest counter among the granting nodes; each
 * granting node with a lower one is raised to it (never lowered), and it counts once a quorum
 * holds it at least that high: any later quorum shares a node with this one, and counts past it.
 * Meanwhile, and for a moment after (twice what the quorum took, LOCK_LAST_ANSWER at most), the
 * other nodes' answers to the acquire are read as they come, so that we hold the lock on every
 * node that gives it: a late grant is kept and raised like the others (a young node's too: it
 * holds our key, though it did not count); a node found held is raised as the attempt ends
 * (raise_the_rest). 0; -1 when too few acknowledged the fence (l->error says why); -2 when
 * interrupted.
 */
static int
settle(struct lock *l, struct nodes *ns, struct acquisition *q, struct round *rd,
       const struct call *acquire, int64_t deadline, int intr_fd)
{
	size_t n = nodes_count(ns), acked = 0, no = 0;
	bool raising[NODES_MAX] = { false };
	int64_t now = clock_now();
	int64_t grace = now + time_min(LOCK_LAST_ANSWER, time_max(NS_PER_MS, 2 * (now - rd->start)));
	long long top = -1;
	char fence[24], ttl[24];
	struct call raise;
	struct answer a;
	enum conn_result res = CONN_OK;

	for (size_t i = 0; i < n; i++)
		if (rd->granted[i] && rd->fence[i] > top)
			top = rd->fence[i];
	snprintf(fence, sizeof(fence), "%lld", top);
	ttl_ms(l, ttl, sizeof(ttl));
	fence_call(l, fence, ttl, &raise);
	for (size_t i = 0; i < n; i++) {
		if (rd->granted[i] && rd->fence[i] < top) {
			/* By its text: NOSCRIPT is then always the acquire's (next_answer). */
			call_send(ns, i, &raise, deadline, intr_fd, true);
			raising[i] = true;
			rd->fence[i] = top; /* on its way: raise_the_rest leaves it */
		} else if (rd->granted[i]) {
			acked++;
		} else if (!nodes_outstanding(ns, i)) {
			no++;
		}
	}
	for (;;) {
		enum verdict v = nodes_verdict(ns, acked, no);
		bool late = false;
		size_t i;

		for (i = 0; i < n; i++)
			late = late || (nodes_outstanding(ns, i) && !raising[i]);
		if (v == VERDICT_NO || (v == VERDICT_YES && !late))
			break;
		res = next_answer(ns, acquire, v == VERDICT_OPEN ? TIME_NEVER : grace, deadline,
				  intr_fd, &a);
		if (res != CONN_OK)
			break;
		i = a.node;
		if (raising[i]) {
			char why[400];
			raising[i] = false;
			if (a.result == CONN_OK && reply_type(a.reply) == REPLY_INTEGER &&
			    replicated(l, ns, &a, "the fence", why, sizeof(why))) {
				acked++;
			} else {
				no++;
				failures_add(&rd->why,
					     a.result != CONN_OK ? nodes_error(ns, i)
					     : reply_type(a.reply) == REPLY_INTEGER
						     ? why
						     : "unexpected reply to the fence script");
			}
		} else {
			count_answer(l, ns, q, rd, &a, clock_now());
			if (!rd->granted[i]) {
				no++;
			} else if (rd->fence[i] < top) {
				call_send(ns, i, &raise, deadline, intr_fd, true);
				raising[i] = true;
				rd->fence[i] = top;
			} else {
				acked++;
			}
		}
		if (a.result == CONN_OK)
			reply_free(a.reply);
	}
	l->fence = top;
	if (nodes_verdict(ns, acked, no) == VERDICT_YES)
		return 0;
	if (res == CONN_INTERRUPTED)
		return -2;
	set_error(l, "too few nodes acknowledged fence %lld: %s", top, rd->why.text);
	return -1;
}

/*
 * One attempt: the acquire request to every node at once, decided as soon as a quorum granted it
 * or can no longer grant it. Taken, it holds on the quorum until the quorum-th latest of the
 * granting nodes' lease ends, and counts only while two thirds of that are ahead
 * (lock_grant_in_time). Not taken, whatever was taken is given back.
 */
static enum attempt_outcome
attempt(struct lock *l, struct nodes *ns, struct acquisition *q, struct round *rd, int intr_fd)
{
	size_t n = nodes_count(ns), none = n - nodes_quorum(ns);
	char took[32], lease[32];
	struct call call;
	struct answer a;
	int64_t deadline, valid;
	int fenced;
	bool waiting;

	memset(rd, 0, sizeof(*rd));
	rd->start = q->pipelined ? q->pipelined_at : clock_now();
	rd->pipelined = q->pipelined;
	/* WAIT may take its whole timeout on top. */
	deadline = time_add(time_min(clock_now() + l->io_timeout, q->io_cap), l->replicas_timeout);
	/* The last attempt, as the wait runs out, does not stay registered as a waiter. */
	/* (A pipelined attempt went out as a waiter's: see pipeline_attempt in line.c.) */
	waiting = q->pipelined || (q->wait != 0 && rd->start < q->wait_deadline);
	acquire_call(l, waiting, q->in_line, nodes_count(ns) > 1, &call);
	q->in_line = q->in_line || waiting;
	rd->in_line = waiting;
	if (q->pipelined)
		nodes_due(ns, 0, deadline); /* it went out already; its answer is due from now */
	else
		for (size_t i = 0; i < n; i++)
			call_send(ns, i, &call, due_from(l, ns, i, deadline), intr_fd, false);
	q->pipelined = false;
	while (!rd->twice && verdict(ns, rd) == VERDICT_OPEN) {
		enum conn_result res = next_answer(ns, &call, TIME_NEVER, deadline, intr_fd, &a);
		if (res == CONN_INTERRUPTED) {
			settle_interrupted(l, ns, rd);
			return ATTEMPT_INTERRUPTED;
		}
		if (res != CONN_OK)
			break; /* not while undecided: every node answers, or fails by its deadline
				*/
		count_answer(l, ns, q, rd, &a, clock_now());
		if (a.result == CONN_OK)
			reply_free(a.reply);
	}
	if (rd->twice) {
		give_back(l, ns, rd);
		return ATTEMPT_REFUSED;
	}
	if (verdict(ns, rd) == VERDICT_YES) {
		valid = round_valid(ns, rd);
		fenced = settle(l, ns, q, rd, &call, deadline, intr_fd);
		if (fenced == -2) {
			settle_interrupted(l, ns, rd);
			return ATTEMPT_INTERRUPTED;
		}
		if (rd->twice) { /* found out from a late answer */
			give_back(l, ns, rd);
			return ATTEMPT_REFUSED;
		}
		if (fenced == 0 && !lock_grant_in_time(l, valid, clock_now()) && rd->pipelined) {
			/* Ours since the BLPOP returned, most likely a moment ago; but all we know
			 * is when the request was queued. Asked again, it renews from now. */
			nodes_forget(ns);
			return ATTEMPT_RENEW;
		}
		if (fenced == 0 && lock_grant_in_time(l, valid, clock_now())) {
			/* Where KEY was still held (its holder's release not there yet), this
			 * attempt put us in line: we leave it, or that release would wake nobody
			 * and leave its wake-up and our place behind. */
			if (rd->in_line)
				line_send_leaves(l, ns, rd);
			raise_the_rest(l, ns, rd);
			nodes_let_go(ns);
			for (size_t i = 0; i < n; i++)
				if (rd->granted[i])
					nodes_hold(ns, i, rd->lease[i]);
			l->valid_until = valid;
			l->acquired_at = rd->start;
			return ATTEMPT_ACQUIRED;
		}
		give_back(l, ns, rd);
		if (fenced < 0)
			return ATTEMPT_NO_QUORUM;
		set_error(l,
			  "the grant of %s came %s after the request, too late for a lease of %s",
			  l->key, duration_format(clock_now() - rd->start, took, sizeof(took)),
			  duration_format(l->ttl, lease, sizeof(lease)));
		l->holder[0] = '\0';
		msg_info("%s; gave it back", l->error);
		return ATTEMPT_LATE;
	}
	give_back(l, ns, rd);
	if (rd->refused > none) {
		set_quorum_error(l, ns, &rd->why);
		return ATTEMPT_REFUSED;
	}
	if (rd->young && rd->yes + rd->young >= nodes_quorum(ns)) {
		/* Young nodes alone stood in the way: they are waited for as a holder's lease
		 * is (with -n too, the lock may well be held). */
		int64_t ready[NODES_MAX];
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (rd->young_at[i])
				ready[k++] = rd->held_until[rd->held++] = rd->counts_at[i];
		/* A quorum is ready once the (quorum - yes)-th young node counts, whatever the
		 * others do: waited for at least that long. */
		qsort(ready, k, sizeof(ready[0]), earlier_first);
		rd->young_ready = ready[time_min((int64_t)(nodes_quorum(ns) - rd->yes), (int64_t)k) - 1];
		set_error(l, "%s", rd->young_why);
		if (rd->young == rd->held)
			l->holder[0] = '\0'; /* nobody else was seen */
		return ATTEMPT_HELD;
	}
	if (rd->held + rd->refused > none)
		return rd->yes ? ATTEMPT_SPLIT : ATTEMPT_HELD;
	set_quorum_error(l, ns, &rd->why);
	return ATTEMPT_NO_QUORUM;
}

/*
 * How long to keep trying servers that do not answer. While waiting with -w: until the wait
 * ends. While waiting without end, once a quorum has answered: LOCK_OUTAGE after its last
 * answer, long enough for a restart or a failover. Otherwise (-n, or servers that never
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
 * Too few nodes answered (l->error says how), or said "not now": pauses, 10ms at first and
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
			 q->wait > 0                          ? " until the wait ends"
			 : q->wait == 0 || q->answered_at < 0 ? ""
							      : " for up to a minute");
	q->pause = q->pause ? time_min(2 * q->pause,
				       time_min(time_max(l->ttl / 10, 10 * NS_PER_MS), NS_PER_S))
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
 * Contenders split the nodes between them: each gave back what it took, and tries again after
 * a random pause, so that they do not collide again. LOCK_ACQUIRED means "try again".
 */
static enum lock_result
pause_randomly(const struct lock *l, const struct acquisition *q, int intr_fd)
{
	int64_t span = time_max(5 * NS_PER_MS, time_min(l->ttl / 30, 50 * NS_PER_MS));
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)clock_now();
	if (clock_sleep_until(
		    time_min(clock_now() + (int64_t)(r % (uint64_t)span), q->wait_deadline),
		    intr_fd) < 0)
		return LOCK_INTERRUPTED;
	return LOCK_ACQUIRED;
}

enum lock_result
lock_acquire(struct lock *l, struct nodes *ns, int64_t wait, int intr_fd)
{
	struct acquisition q = {
		.wait = wait,
		.wait_deadline = wait == WAIT_FOREVER ? TIME_NEVER : time_add(clock_now(), wait),
		.unsure_since = -1,
		.answered_at = -1,
	};
	enum lock_result out = LOCK_ACQUIRED;

	for (size_t i = 0; i < NODES_MAX; i++)
		q.unsure_at[i] = -1;
	l->ordered = nodes_count(ns) == 1;
	/* With -w, Redis may take a little longer than the wait to answer the last attempt,
	 * made as the wait runs out; no more. */
	q.io_cap = wait > 0 ? time_add(q.wait_deadline, LOCK_LAST_ANSWER) : TIME_NEVER;
	while (out == LOCK_ACQUIRED) {
		struct round rd;
		enum attempt_outcome a = attempt(l, ns, &q, &rd, intr_fd);

		if (a == ATTEMPT_INTERRUPTED) {
			if (q.unsure_since >= 0) {
				set_unsure_error(l, "interrupted");
				msg_warn("%s", l->error);
			}
			out = LOCK_INTERRUPTED;
			break;
		}
		if (a == ATTEMPT_REFUSED) { /* AUTH, SELECT or the script: no point asking again */
			if (q.unsure_since >= 0) { /* an earlier request stays unsettled */
				char why[sizeof(l->error)];
				snprintf(why, sizeof(why), "%s", l->error);
				set_unsure_error(l, why);
			}
			out = l->superseded ? LOCK_SUPERSEDED : LOCK_UNAVAILABLE;
			break;
		}
		if (a == ATTEMPT_NO_QUORUM) {
			q.seen_held = q.seen_held || rd.held > 0;
			/* Servers that answer, but not yet (a restart loading its data, replicas
			 * that did not acknowledge: a failover under way), are ridden out as a
			 * silence is, never taken for a wrong address; so are servers that
			 * answered earlier in this run, or do not answer while the lock is seen
			 * held on others, from the first time on (LOCK_OUTAGE counts from then). */
			if (nodes_verdict(ns, rd.answered, 0) == VERDICT_YES ||
			    (q.answered_at < 0 &&
			     (nodes_verdict(ns, rd.answered + rd.reached, 0) == VERDICT_YES || rd.held)))
				q.answered_at = clock_now();
			out = retry_later(l, &q, intr_fd);
			continue;
		}
		if (q.pause)
			msg_info("%s answer%s again",
				 nodes_count(ns) == 1 ? nodes_address(ns, 0) : "enough nodes",
				 nodes_count(ns) == 1 ? "s" : "");
		q.answered_at = clock_now();
		q.pause = 0;
		if (a == ATTEMPT_ACQUIRED)
			break;
		if (a == ATTEMPT_RENEW)
			continue; /* whatever the wait: the lock is ours */
		q.seen_held = q.seen_held || a == ATTEMPT_HELD;
		if (wait == 0 || clock_now() >= q.wait_deadline) {
			/* An attempt sent before the wait ran out may have put us in line. */
			if (rd.in_line)
				line_leave(l, ns, &rd);
			out = LOCK_BUSY;
		} else if (a == ATTEMPT_HELD)
			out = line_wait(l, ns, &q, &rd, intr_fd);
		else if (a == ATTEMPT_SPLIT)
			out = pause_randomly(l, &q, intr_fd);
		/* A grant that came too late: straight on to the next attempt. */
	}
	msg_progress_end();
	return out;
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
	if (reply_type(r) == REPLY_INTEGER)
		return reply_integer(r) == 1 ? 1 : reply_integer(r) == 0 ? 0 : -1;
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
	if (up >= 0 && sent - span - NS_PER_S > l->acquired_at && clock_now() - span < before) {
		set_error(l, "%s lost its data: it restarted %s ago, while the command ran", address,
			  uptime_ago(up, ago, sizeof(ago)));
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
	if (reply_type(r) == REPLY_ERROR &&
	    strncmp(reply_string(r, NULL), "CANCELLED ", 10) == 0) {
		/* Renewed, by a run that a newer one cancelled (see script_renew). */
		snprintf(l->cancelled_by, sizeof(l->cancelled_by), "%s",
			 reply_string(r, NULL) + 10);
		return LOCK_RENEWED;
	}
	if ((got = released(l, r, &up)) > -2)
		return got == 1                       ? LOCK_RENEWED
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

enum lock_renewal
lock_renew(struct lock *l, struct nodes *ns, int64_t deadline, int intr_fd,
	   void (*renewed)(void *, int64_t), void *arg)
{
	size_t yes = 0, others = 0, gone = 0, missing = 0;
	size_t none = nodes_count(ns) - nodes_quorum(ns);
	/* The lease as it stands: a node that lost our key may be given it again before it ends. */
	int64_t valid = nodes_lease_end(ns);
	bool taking[NODES_MAX] = { false }, raising[NODES_MAX] = { false };
	bool told = false, data_gone = true;
	char lost[sizeof(l->error)] = "";
	long long ours = l->fence;
	char ttl[24], fence[24], holder[LOCK_HOLDER_MAX] = "";
	const char *args[7] = { l->key, l->fence_key, l->broken_key, l->value, ttl };
	struct call call, take, raise;
	struct failures why = { 0 };
	struct answer a;
	enum conn_result res;

	ttl_ms(l, ttl, sizeof(ttl));
	snprintf(fence, sizeof(fence), "%lld", ours);
	call_init(&call, kind_of(l)->renew, 3, 5, args);
	/* Where we do not hold it, we take it: the run may have been in line there (a grant
	 * takes it out). */
	acquire_call(l, false, true, false, &take);
	fence_call(l, fence, ttl, &raise);
	for (size_t i = 0; i < nodes_count(ns); i++)
		missing += !nodes_holds(ns, i);
	for (size_t i = 0; i < nodes_count(ns); i++) {
		taking[i] = !nodes_holds(ns, i) && missing <= none && valid > clock_now();
		call_send(ns, i, taking[i] ? &take : &call, deadline, intr_fd, false);
	}
	while ((res = nodes_next(ns, TIME_NEVER, intr_fd, &a)) == CONN_OK) {
		size_t i = a.node;
		long long age;

		if (noscript(&a)) {
			call_send(ns, i, taking[i] ? &take : &call, deadline, intr_fd, true);
			continue;
		}
		if (raising[i] || a.result != CONN_OK) {
			if (a.result != CONN_OK)
				failures_add(&why, nodes_error(ns, i));
			raising[i] = taking[i] = false;
			reply_free(a.reply);
			continue;
		}
		if (taking[i]) {
			/* While the lease holds on a quorum without them, a minority of nodes that
			 * do not hold it are given it: one that lost the key (restarted empty, most
			 * likely), or never had it (a late answer, a server that was down). It
			 * counts from the next renewal on, never for this one. */
			taking[i] = false;
			char run_id[41];
			switch (parse_acquire(l, nodes_address(ns, i), a.reply, &age, run_id)) {
			case REPLY_ACQUIRED:
				if (!replicated(l, ns, &a, "the lock", l->error,
						sizeof(l->error))) {
					failures_add(&why, l->error);
					break;
				}
				msg_info("%s has %s now; it counts from the next renewal",
					 nodes_address(ns, i), l->key);
				nodes_hold(ns, i, lock_lease_deadline(l, nodes_sent(ns, i)));
				if (l->fence < ours) {
					/* Our fence goes there too (see raise_the_rest). */
					call_send(ns, i, &raise, deadline, intr_fd, true);
					raising[i] = true;
				}
				break;
			case REPLY_HELD:
				snprintf(holder, sizeof(holder), "%s", l->holder);
				others++;
				break;
			default:
				failures_add(&why, l->error);
				break;
			}
			l->fence = ours;
			reply_free(a.reply);
		} else {
			enum lock_renewal r =
				read_renewal(l, nodes_address(ns, i), a.reply, nodes_sent(ns, i));
			switch (r) {
			case LOCK_RENEWED:
				/* Not acknowledged by the replicas, the lease is not extended there:
				 * a replica promoted now would not know of it. */
				if (!replicated(l, ns, &a, "the renewal", l->error,
						sizeof(l->error))) {
					failures_add(&why, l->error);
					break;
				}
				nodes_hold(ns, i, lock_lease_deadline(l, nodes_sent(ns, i)));
				yes++;
				break;
			case LOCK_RENEW_FAILED:
				renew_failed(l, ns, i, &why);
				break;
			case LOCK_TAKEN:
				snprintf(holder, sizeof(holder), "%s", l->holder);
				nodes_drop(ns, i);
				others++;
				break;
			default:
				/* The first that lost its data says so (l->error), if all did. */
				if (r != LOCK_GONE_WITH_DATA)
					data_gone = false;
				else if (!lost[0])
					snprintf(lost, sizeof(lost), "%s", l->error);
				nodes_drop(ns, i);
				/* A minority that lost it is given it again while the lease, as it
				 * stood, holds (a young server counts for nobody else meanwhile). */
				if (++gone <= none && valid > clock_now()) {
					msg_info("%s no longer has %s; taking it there again",
						 nodes_address(ns, i), l->key);
					call_send(ns, i, &take, deadline, intr_fd, false);
					taking[i] = true;
				}
				break;
			}
			reply_free(a.reply);
		}
		if (others > none || gone > none) {
			/* Another holder, or servers that lost our key, on so many nodes that we
			 * cannot hold a quorum: lost. */
			nodes_forget(ns);
			snprintf(l->holder, sizeof(l->holder), "%s", holder);
			explain_loss(l, ns);
			if (others > none)
				return LOCK_TAKEN;
			if (!data_gone || l->error[0]) /* (a failover explains it) */
				return LOCK_GONE;
			snprintf(l->error, sizeof(l->error), "%s", lost);
			return LOCK_GONE_WITH_DATA;
		}
		if (!told && nodes_verdict(ns, yes, 0) == VERDICT_YES) {
			told = true;
			if (renewed)
				renewed(arg, nodes_lease_end(ns));
		}
	}
	if (res == CONN_INTERRUPTED) {
		nodes_cancel(ns);
		return LOCK_RENEW_INTERRUPTED;
	}
	if (told) {
		/* A minority that did not answer changes nothing but this note. */
		snprintf(l->error, sizeof(l->error), "%s", why.count ? why.text : "");
		return LOCK_RENEWED;
	}
	set_quorum_error(l, ns, &why);
	return LOCK_RENEW_FAILED;
}

int64_t
lock_hold_left(const struct lock *l, int64_t now)
{
	return l->min_hold ? time_max(0, time_add(l->acquired_at, l->min_hold) - now) : 0;
}

enum lock_release_result
lock_release(struct lock *l, struct nodes *ns, int64_t deadline, int intr_fd)
{
	size_t yes = 0, unconfirmed = 0, lost = 0, answered = 0;
	bool retried[NODES_MAX] = { false };
	char lost_why[sizeof(l->error)] = "";
	char ttl[32];
	struct call call;
	struct failures why = { 0 };
	struct answer a;
	enum conn_result res;
	int64_t start = clock_now(), left = lock_hold_left(l, start);

	l->holder[0] = '\0'; /* (a --break's mark, should a node answer with one) */
	/* A request whose server is gone (a cluster's owner, a Sentinel's master, killed) is
	 * asked again where it went, for as long as a failover takes: within the lease, and a
	 * minute at most (the holder's exit waits for it). */
	int64_t due = time_max(deadline, time_min(l->valid_until, time_add(start, LOCK_OUTAGE)));

	/* Rounded up: never shorter than --min-hold. */
	release_call(l, (long long)((left + NS_PER_MS - 1) / NS_PER_MS), &call);
	call_send_all(ns, &call, due, intr_fd);
	for (;;) {
		res = next_answer(ns, &call, deadline, due, intr_fd, &a);
		if (res == CONN_TIMEOUT && deadline < due && answered < nodes_quorum(ns) &&
		    nodes_moving(ns)) {
			deadline = due;
			continue;
		}
		if (res != CONN_OK)
			break;
		size_t i = a.node;
		long long up, got;

		/* The connection may have sat idle for as long as the command ran: one that
		 * broke while the request was out is worth one more try on a fresh one (the
		 * release is idempotent). */
		if (a.result == CONN_FAILED && !retried[i]) {
			retried[i] = true;
			call_send(ns, i, &call, due, intr_fd, false);
			continue;
		}
		if (a.result != CONN_OK) {
			failures_add(&why, nodes_error(ns, i));
			continue;
		}
		if ((got = released(l, a.reply, &up)) > -2) {
			/* Not ours: lost with the server's data while the command ran, or, after a
			 * request that may have landed, most likely deleted by that request. */
			if (nodes_holds(ns, i) &&
			    lost_with_data(l, nodes_address(ns, i), got, up, nodes_sent(ns, i), start,
					   retried[i])) {
				lost++;
				snprintf(lost_why, sizeof(lost_why), "%s", l->error);
			} else {
				yes += got == 1;
				unconfirmed += retried[i] && got <= 0;
			}
			/* Once a quorum answered, the rest get a moment (twice what the quorum
			 * took), not the whole deadline: one frozen node does not hold up the
			 * exit. */
			if (++answered == nodes_quorum(ns)) {
				l->answered_at = clock_now();
				deadline = time_min(
					deadline,
					l->answered_at +
						time_min(LOCK_LAST_ANSWER,
							 time_max(10 * NS_PER_MS,
								  2 * (l->answered_at - start))));
			}
		} else {
			char said[400];
			set_error(l, "%s refused to release %s: %s", nodes_address(ns, i), l->key,
				  refusal(a.reply, said, sizeof(said)));
			failures_add(&why, l->error);
		}
		reply_free(a.reply);
	}
	for (size_t i = 0; i < nodes_count(ns); i++) {
		char line[320];
		if (!nodes_outstanding(ns, i))
			continue;
		snprintf(line, sizeof(line),
			 res == CONN_INTERRUPTED ? "interrupted" : "no reply from %s in time",
			 nodes_address(ns, i));
		failures_add(&why, line);
	}
	nodes_forget(ns);
	if (nodes_verdict(ns, yes, 0) == VERDICT_YES) {
		if (why.count)
			msg_info("not released everywhere (%s); it expires there within %s",
				 why.text, duration_format(l->ttl, ttl, sizeof(ttl)));
		return LOCK_RELEASED;
	}
	if (lost && answered >= nodes_quorum(ns) &&
	    nodes_verdict(ns, yes + unconfirmed, 0) != VERDICT_YES) {
		snprintf(l->error, sizeof(l->error), "%s", lost_why);
		return LOCK_RELEASE_LOST_DATA;
	}
	if (nodes_verdict(ns, yes + unconfirmed, 0) == VERDICT_YES)
		return LOCK_RELEASE_UNCONFIRMED;
	if (answered >= nodes_quorum(ns))
		return LOCK_RELEASE_GONE;
	set_quorum_error(l, ns, &why);
	return LOCK_RELEASE_FAILED;
}

/* A semaphore's or shared lock's state from the query script's {-1, "limit:N" or "shared",
 * fence, value, ms, …, count}. */
static int
read_semaphore(struct lock *l, const char *address, const struct reply *r, struct lock_state *st)
{
	size_t n = reply_count(r), len;
	const struct reply *tag = reply_element(r, 1), *fence = reply_element(r, 2);
	const struct reply *count = reply_element(r, n - 1);
	const char *t = reply_string(tag, &len);

	if (reply_integer(reply_element(r, 0)) != -1 || reply_type(count) != REPLY_INTEGER ||
	    n % 2 != 0) {
		set_error(l, "unexpected reply from %s to the query script", address);
		return -1;
	}
	st->answered = true;
	st->limit = reply_type(tag) == REPLY_STRING && len > 6 && strncmp(t, "limit:", 6) == 0
			    ? atoi(t + 6)
			    : 0;
	st->shared = reply_type(tag) == REPLY_STRING && len == 6 && strncmp(t, "shared", 6) == 0;
	st->fence = reply_type(fence) == REPLY_STRING ? atoll(reply_string(fence, NULL)) : -1;
	st->holders = (size_t)time_max(0, reply_integer(count));
	for (size_t i = 3, k = 0; i + 1 < n - 1 && k < LOCK_STATE_HOLDERS; i += 2, k++) {
		const char *v = reply_string(reply_element(r, i), &len);
		snprintf(st->holder[k].value, sizeof(st->holder[k].value), "%.*s", (int)len, v);
		st->holder[k].ttl = reply_type(reply_element(r, i + 1)) == REPLY_INTEGER
					    ? ttl_ns(reply_integer(reply_element(r, i + 1)))
					    : -1;
	}
	st->held = st->shared ? st->holders > 0 && !l->shared
			      : st->limit > 0 && st->holders >= (size_t)st->limit;
	if (st->holders) {
		snprintf(st->value, sizeof(st->value), "%s", st->holder[0].value);
		st->ttl = st->holder[0].ttl;
	}
	return 0;
}

/* Reads the line's part of the query script's reply into *st (see script_query). */
static void
read_line(const struct reply *line, struct lock_state *st)
{
	size_t n = reply_count(line);
	long long now;
	size_t len;

	if (n < 3 || reply_type(reply_element(line, 0)) != REPLY_INTEGER)
		return;
	now = reply_integer(reply_element(line, 0));
	st->waiting_shared = reply_integer(reply_element(line, 2));
	st->waiting = reply_integer(reply_element(line, 1)) + st->waiting_shared;
	for (size_t i = 3; i + 1 < n && st->nwaiters < LOCK_STATE_WAITERS; i += 2) {
		const char *v = reply_string(reply_element(line, i), &len);
		bool shared = v && len > 2 && strncmp(v, "s:", 2) == 0;
		if (!v)
			continue;
		if (shared)
			v += 2, len -= 2;
		snprintf(st->waiter[st->nwaiters].value, sizeof(st->waiter[0].value), "%.*s",
			 (int)len, v);
		st->waiter[st->nwaiters].shared = shared;
		st->waiter[st->nwaiters].waited = ttl_ns(reply_integer(reply_element(line, i + 1)));
		st->ordered = st->waiter[st->nwaiters].waited >= 0;
		st->nwaiters++;
	}
	/* A lock's fence is its holder's, which was the server's clock in µs when it took it
	 * (DESIGN §3), unless fences came faster than the clock: then a little after. */
	if (st->held && !st->limit && !st->shared && st->fence > 0 && st->fence / 1000 <= now &&
	    st->fence > 1000000000000000LL)
		st->held_for = (int64_t)(now - st->fence / 1000) * NS_PER_MS;
}

/* Reads the query script's reply from the server at address into *st: 0, or -1 with l->error
 * set. */
static int
read_state(struct lock *l, const char *address, const struct reply *r, struct lock_state *st)
{
	const struct reply *value, *pttl, *fence;
	size_t len;

	st->held_for = -1;
	if (reply_type(r) == REPLY_ARRAY && reply_count(r) == 2 &&
	    reply_type(reply_element(r, 0)) == REPLY_ARRAY) {
		int out = read_state(l, address, reply_element(r, 0), st);
		if (out == 0)
			read_line(reply_element(r, 1), st);
		return out;
	}
	if (foreign(l, address, r, ""))
		return -1;
	if (reply_type(r) == REPLY_ARRAY && reply_count(r) >= 4 &&
	    reply_type(reply_element(r, 0)) == REPLY_INTEGER)
		return read_semaphore(l, address, r, st);
	if (reply_type(r) != REPLY_ARRAY || reply_count(r) != 3 ||
	    reply_type(pttl = reply_element(r, 1)) != REPLY_INTEGER) {
		char said[400];
		set_error(l, "%s refused to say who holds %s: %s", address, l->key,
			  refusal(r, said, sizeof(said)));
		return -1;
	}
	value = reply_element(r, 0);
	fence = reply_element(r, 2);
	st->answered = true;
	st->held = reply_type(value) == REPLY_STRING;
	if (st->held) {
		const char *v = reply_string(value, &len);
		snprintf(st->value, sizeof(st->value), "%.*s", (int)len, v);
	}
	st->ttl = ttl_ns(reply_integer(pttl));
	st->fence = reply_type(fence) == REPLY_STRING ? atoll(reply_string(fence, NULL)) : -1;
	len = strlen(st->value);
	st->kept = st->held && len > 5 && strcmp(st->value + len - 5, ":kept") == 0;
	return 0;
}

/*
 * The quorum's view from the nodes' (n of them): held when a quorum has one holder, for as long
 * as it keeps a quorum; free when no holder can have one, even with the nodes that did not
 * answer. 0, or -1 with l->error set when that cannot be told.
 */
static int
quorum_view(struct lock *l, const struct nodes *ns, const struct lock_state *node,
	    struct lock_state *st)
{
	size_t n = nodes_count(ns), q = nodes_quorum(ns), answered = 0, best = 0;
	struct failures why = { 0 };

	memset(st, 0, sizeof(*st));
	st->fence = -1;
	st->held_for = -1;
	for (size_t i = 0; i < n; i++) {
		if (!node[i].answered) {
			failures_add(&why, node[i].error);
			continue;
		}
		answered++;
		if (node[i].fence > st->fence)
			st->fence = node[i].fence;
		/* The line: the longest any node has (a waiter is in line where it found the lock
		 * held). */
		if (node[i].waiting > st->waiting) {
			st->waiting = node[i].waiting;
			st->waiting_shared = node[i].waiting_shared;
			st->nwaiters = node[i].nwaiters;
			st->ordered = node[i].ordered;
			memcpy(st->waiter, node[i].waiter, sizeof(st->waiter));
		}
	}
	for (size_t i = 0; i < n; i++) {
		int64_t ends[NODES_MAX];
		size_t same = 0;
		if (!node[i].answered || !node[i].held)
			continue;
		for (size_t j = 0; j < n; j++)
			if (node[j].answered && node[j].held &&
			    strcmp(node[j].value, node[i].value) == 0)
				ends[same++] = node[j].ttl < 0 ? TIME_NEVER : node[j].ttl;
		if (same > best) {
			best = same;
			st->held = same >= q;
			snprintf(st->value, sizeof(st->value), "%s", node[i].value);
			st->kept = node[i].kept;
			st->held_for = node[i].held_for;
			st->ttl = nodes_quorum_until(ns, ends, same);
			st->ttl = st->ttl == TIME_NEVER ? -1 : st->ttl;
		}
	}
	if (st->held || best + (n - answered) < q)
		return 0;
	st->held = false;
	if (answered < q)
		set_quorum_error(l, ns, &why);
	else
		set_error(l,
			  "cannot tell whether %s is held: it is on %zu of the %zu nodes that "
			  "answered, and %zu did not (%s)",
			  l->key, best, answered, n - answered, why.text);
	return -1;
}

int
lock_query(struct lock *l, struct nodes *ns, int64_t deadline, struct lock_state *node,
	   struct lock_state *st)
{
	const char *args[4] = { l->key, l->fence_key, l->waiting_key, l->queue_key };
	struct call call;
	struct answer a;

	for (size_t i = 0; i < nodes_count(ns); i++) {
		memset(&node[i], 0, sizeof(node[i]));
		node[i].fence = -1;
		node[i].held_for = -1;
		snprintf(node[i].error, sizeof(node[i].error), "no answer from %s in time",
			 nodes_address(ns, i));
	}
	call_init(&call, &script_query, 4, 4, args);
	call_send_all(ns, &call, deadline, -1);
	while (next_answer(ns, &call, deadline, deadline, -1, &a) == CONN_OK) {
		struct lock_state *s = &node[a.node];
		if (a.result != CONN_OK) {
			snprintf(s->error, sizeof(s->error), "%s", nodes_error(ns, a.node));
			continue;
		}
		if (read_state(l, nodes_address(ns, a.node), a.reply, s) < 0)
			snprintf(s->error, sizeof(s->error), "%.299s", l->error);
		reply_free(a.reply);
	}
	nodes_cancel(ns);
	if (nodes_count(ns) == 1 && node[0].answered) {
		*st = node[0]; /* a semaphore's holders too */
		return 0;
	}
	return quorum_view(l, ns, node, st);
}

/* Reads the break script's reply (see script_break) into *b: 0, or -1 with l->error set. */
static int
read_breaking(struct lock *l, const char *address, const struct reply *r,
	      struct lock_breaking *b)
{
	size_t n = reply_count(r), len;
	const struct reply *before;
	char said[400];

	if (foreign(l, address, r, ""))
		return -1;
	if (reply_type(r) != REPLY_ARRAY || n < 1 ||
	    reply_type(reply_element(r, 0)) != REPLY_INTEGER ||
	    (reply_integer(reply_element(r, 0)) == 1 &&
	     (n < 5 || reply_type(reply_element(r, 1)) != REPLY_STRING ||
	      reply_type(reply_element(r, 3)) != REPLY_INTEGER ||
	      reply_type(reply_element(r, 4)) != REPLY_INTEGER))) {
		set_error(l, "%s refused to break %s: %s", address, l->key,
			  refusal(r, said, sizeof(said)));
		return -1;
	}
	b->answered = true;
	b->before = b->fence = -1;
	if (!(b->broke = reply_integer(reply_element(r, 0)) == 1))
		return 0;
	b->fence = atoll(reply_string(reply_element(r, 1), NULL));
	before = reply_element(r, 2);
	b->before = reply_type(before) == REPLY_STRING ? atoll(reply_string(before, NULL)) : -1;
	b->left = ttl_ns(reply_integer(reply_element(r, 3)));
	b->holders = (size_t)time_max(reply_integer(reply_element(r, 4)), 0);
	if (n > 5 && reply_type(reply_element(r, 5)) == REPLY_STRING) {
		const char *v = reply_string(reply_element(r, 5), &len);
		snprintf(b->holder, sizeof(b->holder), "%.*s", (int)len, v);
	}
	return 0;
}

int
lock_break(struct lock *l, struct nodes *ns, const char *by, int64_t deadline,
	   struct lock_breaking *node)
{
	const char *args[7] = { LINE_KEYS(l), by };
	size_t answered = 0;
	struct failures why = { 0 };
	struct call call;
	struct answer a;

	for (size_t i = 0; i < nodes_count(ns); i++) {
		memset(&node[i], 0, sizeof(node[i]));
		snprintf(node[i].error, sizeof(node[i].error), "no answer from %s in time",
			 nodes_address(ns, i));
	}
	call_init(&call, &script_break, 6, 7, args);
	call_send_all(ns, &call, deadline, -1);
	while (next_answer(ns, &call, deadline, deadline, -1, &a) == CONN_OK) {
		struct lock_breaking *b = &node[a.node];
		if (a.result != CONN_OK)
			snprintf(b->error, sizeof(b->error), "%s", nodes_error(ns, a.node));
		else if (read_breaking(l, nodes_address(ns, a.node), a.reply, b) < 0)
			snprintf(b->error, sizeof(b->error), "%.299s", l->error);
		answered += b->answered;
		if (a.result == CONN_OK)
			reply_free(a.reply);
	}
	nodes_cancel(ns);
	if (answered >= nodes_quorum(ns))
		return 0;
	for (size_t i = 0; i < nodes_count(ns); i++)
		if (!node[i].answered)
			failures_add(&why, node[i].error);
	set_quorum_error(l, ns, &why);
	return -1;
}
