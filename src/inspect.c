/*
 * The lock seen from outside, for operators (DESIGN §2): lock_query reads KEY's state on every
 * node (holder, lease, fence, line) and says what a quorum of them agrees on, for --status and
 * --list; lock_break takes a lock from whoever holds it, for --break. query.c words what these
 * find.
 */
#include "lock.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acquisition.h"
#include "nodes.h"
#include "scripts.h"
#include "util.h"

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
		st->kept = st->held && lock_value_kept(st->value); /* of the first, as its value */
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
	for (size_t i = 3; i + 2 < n && st->nwaiters < LOCK_STATE_WAITERS; i += 3) {
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
		st->waiter[st->nwaiters].place = ttl_ns(reply_integer(reply_element(line, i + 2)));
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
	if (reply_type(r) == REPLY_ARRAY && reply_count(r) == 3 &&
	    reply_type(reply_element(r, 0)) == REPLY_ARRAY) {
		const struct reply *canceller = reply_element(r, 2);
		int out = read_state(l, address, reply_element(r, 0), st);
		if (out == 0)
			read_line(reply_element(r, 1), st);
		if (out == 0 && reply_type(canceller) == REPLY_STRING)
			snprintf(st->cancelled_by, sizeof(st->cancelled_by), "%s",
				 reply_string(canceller, NULL));
		return out;
	}
	if ((st->foreign = foreign(l, address, r, "")))
		return -1;
	if (reply_type(r) == REPLY_ARRAY && reply_count(r) >= 4 &&
	    reply_type(reply_element(r, 0)) == REPLY_INTEGER)
		return read_semaphore(l, address, r, st);
	if (reply_type(r) != REPLY_ARRAY || reply_count(r) != 3 ||
	    reply_type(pttl = reply_element(r, 1)) != REPLY_INTEGER) {
		char said[400];
		/* (Of the keys, not of the commands: "... access one of the keys ...".) */
		st->denied = reply_type(r) == REPLY_ERROR &&
			     strncmp(reply_string(r, NULL), "NOPERM", 6) == 0 &&
			     strstr(reply_string(r, NULL), " key") != NULL;
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
	st->kept = st->held && lock_value_kept(st->value);
	return 0;
}

/*
 * The holder's fence, and so when it took the lock, among the nodes that hold it: the one most
 * of them have. Its acquisition set them all to it (the highest of its grants); a node it
 * granted again after the server restarted empty moved on to that server's clock, a fence
 * that was never the holder's and is higher: ties go to the lower.
 */
static void
holder_fence(const struct nodes *ns, const struct lock_state *node, struct lock_state *st)
{
	size_t n = nodes_count(ns), best = 0;

	for (size_t i = 0; i < n; i++) {
		size_t same = 0;
		if (!node[i].answered || !node[i].held || strcmp(node[i].value, st->value) != 0)
			continue;
		for (size_t j = 0; j < n; j++)
			same += node[j].answered && node[j].held &&
				node[j].fence == node[i].fence &&
				strcmp(node[j].value, st->value) == 0;
		if (same > best || (same == best && node[i].fence < st->fence)) {
			best = same;
			st->fence = node[i].fence;
			st->held_for = node[i].held_for;
		}
	}
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
			st->process = node[i].process;
			st->kept = node[i].kept;
			st->held_for = node[i].held_for;
			st->ttl = nodes_quorum_until(ns, ends, same);
			st->ttl = st->ttl == TIME_NEVER ? -1 : st->ttl;
		}
	}
	/* Cancelled where any node says so: the holder's renewal acts on the first it finds. */
	for (size_t i = 0; i < n && st->held && !st->cancelled_by[0]; i++)
		if (node[i].answered && strcmp(node[i].value, st->value) == 0)
			memcpy(st->cancelled_by, node[i].cancelled_by, sizeof(st->cancelled_by));
	if (st->held)
		holder_fence(ns, node, st);
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

/* Whether the processes named in *st run, as its answer came: a holder that released while a
 * slower node was waited for has not "gone without releasing". */
static void
note_processes(struct lock_state *st)
{
	char here[256] = "";

	if (gethostname(here, sizeof(here) - 1) < 0)
		return; /* nothing can be told */
	if (st->held || st->holders)
		st->process = lock_value_process(st->value, here);
	for (size_t i = 0; i < st->holders && i < LOCK_STATE_HOLDERS; i++)
		st->holder[i].process = lock_value_process(st->holder[i].value, here);
	for (size_t i = 0; i < st->nwaiters; i++)
		st->waiter[i].process = lock_value_process(st->waiter[i].value, here);
}

int
lock_query(struct lock *l, struct nodes *ns, int64_t deadline, const bool *skip,
	   struct lock_state *node, struct lock_state *st)
{
	const char *args[5] = { l->key, l->fence_key, l->waiting_key, l->queue_key, l->broken_key };
	struct call call;
	struct answer a;

	call_init(&call, &script_query, 5, 5, args);
	for (size_t i = 0; i < nodes_count(ns); i++) {
		memset(&node[i], 0, sizeof(node[i]));
		node[i].fence = -1;
		node[i].held_for = -1;
		node[i].silent = true;
		snprintf(node[i].error, sizeof(node[i].error), "no answer from %s in time%s",
			 nodes_address(ns, i), skip && skip[i] ? " (nor before)" : "");
		if (!skip || !skip[i])
			call_send(ns, i, &call, deadline, -1, false);
	}
	while (next_answer(ns, &call, deadline, deadline, -1, &a) == CONN_OK) {
		struct lock_state *s = &node[a.node];
		s->silent = a.result == CONN_TIMEOUT;
		if (a.result != CONN_OK) {
			snprintf(s->error, sizeof(s->error), "%s", nodes_error(ns, a.node));
			continue;
		}
		if (read_state(l, nodes_address(ns, a.node), a.reply, s) < 0)
			snprintf(s->error, sizeof(s->error), "%.299s", l->error);
		else
			note_processes(s);
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
read_breaking(struct lock *l, const char *address, const struct reply *r, struct lock_breaking *b)
{
	size_t n = reply_count(r), len;
	const struct reply *before;
	char said[400];

	if (foreign(l, address, r, ""))
		return -1;
	if (reply_type(r) == REPLY_ARRAY && n == 2 &&
	    reply_type(reply_element(r, 0)) == REPLY_INTEGER &&
	    reply_integer(reply_element(r, 0)) == 2) {
		/* The holder shown is gone: who holds it now, if anyone does. */
		b->answered = b->changed = true;
		b->before = b->fence = -1;
		if (reply_type(reply_element(r, 1)) == REPLY_STRING) {
			const char *v = reply_string(reply_element(r, 1), &len);
			snprintf(b->holder, sizeof(b->holder), "%.*s", (int)len, v);
		}
		return 0;
	}
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
	b->exclusive = n > 5 && reply_type(reply_element(r, 5)) == REPLY_INTEGER &&
		       reply_integer(reply_element(r, 5)) == 1;
	if (n > 6 && reply_type(reply_element(r, 6)) == REPLY_STRING) {
		const char *v = reply_string(reply_element(r, 6), &len);
		snprintf(b->holder, sizeof(b->holder), "%.*s", (int)len, v);
	}
	return 0;
}

int
lock_break(struct lock *l, struct nodes *ns, const char *by, const char *shown, int64_t deadline,
	   struct lock_breaking *node)
{
	char who[LOCK_VALUE_MAX + 300];
	const char *args[7] = { LINE_KEYS(l), who };
	size_t answered = 0;
	struct failures why = { 0 };
	struct call call;
	struct answer a;

	for (size_t i = 0; i < nodes_count(ns); i++) {
		memset(&node[i], 0, sizeof(node[i]));
		snprintf(node[i].error, sizeof(node[i].error), "no answer from %s in time",
			 nodes_address(ns, i));
	}
	snprintf(who, sizeof(who), "%s%s%s", by, shown ? " " : "", shown ? shown : "");
	call_init(&call, &script_break, 6, 7, args);
	/* By its text: a server that sits on the break (frozen, or busy) carries out the same
	 * break when it comes back whether or not it knew the script, rather than a NOSCRIPT
	 * that nobody reads. A break is rare: its few hundred bytes more cost nothing. */
	for (size_t i = 0; i < nodes_count(ns); i++)
		call_send(ns, i, &call, deadline, -1, true);
	while (next_answer(ns, &call, deadline, deadline, -1, &a) == CONN_OK) {
		struct lock_breaking *b = &node[a.node];
		/* One that sat on it until the deadline may carry it out later, and one that
		 * hung up may have; what answered garbage is not Redis, and carries nothing out. */
		b->unheard = a.maybe_landed &&
			     (a.result == CONN_TIMEOUT ||
			      (a.result == CONN_FAILED &&
			       strncmp(nodes_error(ns, a.node), "protocol error ", 15) != 0));
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
