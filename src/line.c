#include "line.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition.h"
#include "duration.h"
#include "msg.h"
#include "nodes.h"
#include "scripts.h"

/* Sends our leave from the line on node i (script_leave), by its text, due by `due`:
 * LEAVE_DUE, unless it opens the connection the next attempt goes on. */
#define LEAVE_DUE(l) (clock_now() + time_min((l)->io_timeout, NS_PER_S))
static void
send_leave(struct lock *l, struct nodes *ns, size_t i, int64_t due, int intr_fd)
{
	struct call call;
	const char *args[7] = { LINE_KEYS(l), call.arg };

	snprintf(call.arg, sizeof(call.arg), "%s%s", l->shared ? "s:" : "", l->value);
	call_init(&call, &script_leave, 6, 7, args);
	call_send(ns, i, &call, due, intr_fd, true);
}

/* The progress line of a wait: who holds the lock, and how much of their lease is left; or,
 * when no holder was found (young nodes only), what we wait for (l->error). A holder that is
 * the redlock-run whose command started us (nested on the same KEY, which flock(1) would wait
 * for as well) is named even without -v: a wait that may never end is not left silent. */
static void
show_wait(struct lock *l, struct acquisition *q, int64_t left)
{
	char holder[LOCK_HOLDER_MAX], buf[32];
	const char *ours = getenv("REDLOCK_TOKEN");

	if (l->holder[0] && ours && strcmp(l->holder, ours) == 0 && strcmp(q->shown, ours) != 0)
		msg_warn("%s is held by the redlock-run whose command started this one (its "
			 "REDLOCK_TOKEN): this waits until that command ends (for ever, if it "
			 "waits for this one)",
			 l->key);
	if (!l->holder[0]) {
		msg_progress("waiting for %s (%s)", l->key, l->error);
		snprintf(q->shown, sizeof(q->shown), "%s", l->error);
		return;
	}
	msg_progress("waiting for %s (%s %s, %s left)", l->key,
		     l->holder_waits ? "behind" : "held by",
		     lock_describe_holder(l->holder, holder, sizeof(holder)),
		     left >= 0 ? duration_format(left, buf, sizeof(buf)) : "no expiry");
	snprintf(q->shown, sizeof(q->shown), "%s", l->holder);
}

/* The progress line while a server sits on our wait past its end (frozen, or busy with a long
 * script): the first that still owes an answer, and for how long it has, since `due`. */
static void
show_silence(struct lock *l, struct nodes *ns, struct acquisition *q, int64_t due)
{
	char buf[32];

	for (size_t i = 0; i < nodes_count(ns); i++) {
		if (!nodes_outstanding(ns, i))
			continue;
		msg_progress("waiting for %s (%s has not answered for %s)", l->key,
			     nodes_address(ns, i),
			     duration_format(time_max(clock_now() - due, 0), buf, sizeof(buf)));
		q->shown[0] = '\0'; /* the holder is said again once it answers */
		return;
	}
}

void
line_send_leaves(struct lock *l, struct nodes *ns, const struct round *rd)
{
	for (size_t i = 0; i < nodes_count(ns); i++)
		if (rd->waiting[i])
			send_leave(l, ns, i, LEAVE_DUE(l), -1);
}

void
line_follow_up(struct lock *l, struct nodes *ns, int intr_fd)
{
	const char *args[6] = { LINE_KEYS(l) };
	int64_t due = LEAVE_DUE(l);
	struct call call;
	struct answer a;

	call_init(&call, &script_follow_up, 6, 6, args);
	call_send(ns, 0, &call, due, intr_fd, false);
	if (next_answer(ns, &call, due, due, intr_fd, &a) == CONN_OK && a.result == CONN_OK) {
		if (reply_type(a.reply) == REPLY_INTEGER && reply_integer(a.reply) > 0)
			msg_info("the first waiter in line did not come for its turn: the next "
				 "ones were woken");
		reply_free(a.reply);
	}
	nodes_cancel(ns);
}

void
line_leave(struct lock *l, struct nodes *ns, const struct round *rd)
{
	int64_t deadline = clock_now() + time_min(l->io_timeout, NS_PER_S);
	struct answer a;

	line_send_leaves(l, ns, rd);
	while (nodes_next(ns, deadline, -1, &a) == CONN_OK)
		if (a.result == CONN_OK)
			reply_free(a.reply);
	nodes_cancel(ns);
}

/* Sends the next attempt's request now, to run behind the BLPOP just sent (see line_wait);
 * attempt() in acquire.c then only reads its answer. It stays in line if KEY is still held, as it
 * runs before the wait ends (or as it does): lock_acquire leaves the line when the wait is
 * over. */
static void
pipeline_attempt(struct lock *l, struct nodes *ns, struct acquisition *q, int64_t due, int intr_fd)
{
	struct call call;

	acquire_call(l, true, q->in_line, false, &call);
	q->pipelined = true;
	q->pipelined_at = clock_now();
	/* Due with the BLPOP, until it has returned: then attempt() says by when (nodes_due). */
	call_send(ns, 0, &call, due, intr_fd, false);
}

/* Replaces our token with a new one, which what went out with the old one cannot touch: -1
 * (l->error says why) if none can be drawn. */
static int
retire_token(struct lock *l)
{
	char buf[128];

	if (make_token(l) == 0)
		return 0;
	set_error(l, "cannot draw a new token: %s", msg_strerror(errno, buf, sizeof(buf)));
	return -1;
}

/*
 * The pipelined attempt will not be read (a signal, a refusal, or the wait's end on our clock):
 * a release and a leave go out behind it on the same connection, which is then closed. On
 * that connection, Redis runs all three or none (a blocked client's commands wait with it,
 * and are dropped with its connection). But the release may reach Redis late (a lost segment
 * is sent again only later), and run after a request of ours on another connection: when the
 * wait goes on, the next attempt uses a new token (see line_wait), which the late release
 * cannot delete. What the attempt took is then given back by that release, or, should it
 * never come (the connection reset as we closed it), expires by itself.
 */
static void
abandon_pipelined(struct lock *l, struct nodes *ns, struct acquisition *q)
{
	struct call call;

	release_call(l, 0, &call);
	call_send(ns, 0, &call, TIME_NEVER, -1, true);
	send_leave(l, ns, 0, LEAVE_DUE(l), -1);
	q->pipelined = false;
}

/*
 * How long after the end of the lease it waits out a waiter's next attempt runs, at the
 * earliest (see line_wait): the drift allowance of a lease that long (DESIGN §3), and a few ms
 * more for the holder's SIGKILL to have done its work.
 */
static int64_t
wait_margin(int64_t lease)
{
	return 10 * NS_PER_MS + lease / 100;
}

/* A waiter looks again once a day at least, however long the lease it waits out (one may last
 * 292 years): the times it counts from its block stay far from where int64_t ends. */
#define BLOCK_MAX ((int64_t)24 * 3600 * NS_PER_S)

/*
 * A lease about to end sooner than a server would time a BLPOP out, or one that nobody's
 * release can wake us from (young nodes only): it is waited out here, until `end` (a pause at
 * least), and the next attempt follows.
 */
static enum lock_result
wait_here(struct lock *l, struct nodes *ns, const struct round *rd, int64_t end, int intr_fd)
{
	if (clock_sleep_until(end, intr_fd) == 0)
		return LOCK_ACQUIRED;
	line_leave(l, ns, rd); /* a place taken meanwhile goes, as after a BLPOP */
	return LOCK_INTERRUPTED;
}

/* One block in line (see line_wait): when it was asked, for how long, until when we wait for
 * it, and what it came to. */
struct block {
	int64_t start;
	int64_t length;    /* what the servers are asked to block for, in whole ms */
	int64_t end;       /* ours: the wait's end, or a server that does not answer in time */
	int64_t timed_out; /* when a server first timed it out (a nil); -1 until one does */
	bool woken;        /* a release woke us (or, pipelined, the server timed the block out) */
	bool refused;      /* a server refused to block */
};

/*
 * Sends the BLPOP on our wake lists to each node we wait on: our own (an ordered line wakes
 * each waiter on a list of its own, see LINE in scripts.c) and the shared one (which still
 * wakes the waiters a line without order has, and a release of 0.2.0).
 *
 * One plain server: the next attempt goes out behind the BLPOP, and runs as a release wakes
 * us, or as the server times the BLPOP out, a margin after the lease it waits out has ended:
 * never at the very moment it does, with none of our own latency to add to the margin by which
 * the holder must have stopped its command. (Its answer is due by the end all the same, and a
 * while after, for a request a cluster's -ASK sends elsewhere.)
 *
 * BLPOP takes seconds with a fraction (Redis 6 and later).
 */
static void
send_block(struct lock *l, struct nodes *ns, struct acquisition *q, const struct round *rd,
	   const struct block *b, int intr_fd)
{
	const char *argv[4] = { "BLPOP" };
	size_t lens[4];
	struct command blpop = { .argc = 1, .argv = argv, .lens = lens };
	bool pipeline = nodes_count(ns) == 1 && rd->waiting[0] && nodes_plain(ns, 0);
	int64_t due = pipeline ? time_add(b->end, l->io_timeout) : TIME_NEVER;
	char seconds[32];

	snprintf(seconds, sizeof(seconds), "%.3f", (double)(b->length / NS_PER_MS) / 1e3);
	if (l->ordered)
		argv[blpop.argc++] = l->own_wake_key;
	argv[blpop.argc++] = l->shared ? l->shared_wake_key : l->wake_key;
	argv[blpop.argc++] = seconds;
	for (int i = 0; i < blpop.argc; i++)
		lens[i] = strlen(argv[i]);
	blpop.blocks_until = b->start + b->length;
	for (size_t i = 0; i < nodes_count(ns); i++)
		if (rd->waiting[i])
			nodes_send(ns, i, &blpop, due, intr_fd);
	if (pipeline)
		pipeline_attempt(l, ns, q, due, intr_fd);
}

/*
 * Reads what the block comes to: woken, timed out (by every server, or at b->end), refused,
 * interrupted, or no node left waiting. Meanwhile, the progress line, and servers that owe an
 * answer nudged (and, with -v, said to be silent).
 */
static enum conn_result
read_block(struct lock *l, struct nodes *ns, struct acquisition *q, const struct round *rd,
	   struct block *b, int intr_fd)
{
	/* A server times a blocked client out at its next tick (100 ms apart by default), or
	 * as soon as anything wakes it: a millisecond after its timeout, and more often until it
	 * answers, it is nudged (see conn_nudge). */
	int64_t nudge_at = b->start + b->length + NS_PER_MS, step = NS_PER_MS;
	/* A second past that, a server that has not answered is said to be silent (-v). */
	int64_t overdue = b->start + b->length + NS_PER_S;
	int64_t silent_at = msg_verbose() ? overdue : TIME_NEVER;
	bool silence = false;
	char said[400];
	struct answer a;
	enum conn_result res;

	for (;;) {
		int64_t until =
			b->timed_out >= 0 ? time_min(b->end, b->timed_out + LOCK_TICK) : b->end;

		res = nodes_next(
			ns,
			time_min(time_min(until, nudge_at),
				 time_min(silent_at, msg_progress_live() ? clock_now() + NS_PER_S
									 : TIME_NEVER)),
			intr_fd, &a);
		if (res == CONN_TIMEOUT) {
			int64_t t = clock_now();
			if (t >= until)
				return res;
			if (t >= silent_at) {
				/* Once in a log; every second, as the rest, on a terminal. */
				show_silence(l, ns, q, b->start + b->length);
				silent_at = msg_progress_live() ? t + NS_PER_S : TIME_NEVER;
				silence = true;
			}
			if (t >= nudge_at) {
				for (size_t i = 0; i < nodes_count(ns); i++)
					if (rd->waiting[i])
						nodes_nudge(ns, i);
				step = time_min(2 * step, LOCK_TICK / 4);
				nudge_at = t + step;
				continue;
			}
			if (t < overdue)
				show_wait(l, q,
					  l->holder_ttl >= 0
						  ? time_max(l->holder_ttl - (t - b->start), 0)
						  : -1);
			continue;
		}
		if (res != CONN_OK)
			return res; /* interrupted, or no node is left waiting */
		if (a.result != CONN_OK)
			continue; /* that node's connection broke; the others still wait */
		if (silence) {
			msg_info("%s answers again", nodes_address(ns, a.node));
			silence = false;
		}
		if (reply_type(a.reply) == REPLY_NIL && !q->pipelined) {
			/* Timed out by that server: the others, due at the same time, are given a
			 * tick to say so too, and keep their connections. */
			reply_free(a.reply);
			if (b->timed_out < 0)
				b->timed_out = clock_now();
			continue;
		}
		if (reply_type(a.reply) != REPLY_ERROR) {
			/* A lease granted by the queued attempt counts from when it was queued,
			 * even when the server timed the BLPOP out: a nil comes early too (CLIENT
			 * UNBLOCK, a server clock stepped on), so that is all we know. One that
			 * leaves too little is renewed at once (ATTEMPT_RENEW). */
			reply_free(a.reply);
			b->woken = true;
			return res; /* woken (or, pipelined, timed out by the server) */
		}
		b->refused = true;
		set_error(l, "%s refused to wait on %s: %s", nodes_address(ns, a.node), l->wake_key,
			  refusal(a.reply, said, sizeof(said)));
		reply_free(a.reply);
		if (q->pipelined)
			return CONN_FAILED; /* the only node refused */
	}
}

enum lock_result
line_wait(struct lock *l, struct nodes *ns, struct acquisition *q, const struct round *rd,
	  int intr_fd)
{
	int64_t now = clock_now();
	int64_t free_at =
		time_max(nodes_free_at(ns, rd->held_until, rd->held, rd->usable), rd->young_ready);
	struct block b = { .start = now, .timed_out = -1 };
	bool blocks = false, retire = false;
	enum conn_result res;

	l->holder_ttl = free_at == TIME_NEVER ? -1 : time_max(free_at - now, 0);
	if (msg_progress_live() || strcmp(q->shown, l->holder[0] ? l->holder : l->error) != 0)
		show_wait(l, q, l->holder_ttl);
	if (q->wait_deadline - now < NS_PER_MS)
		return LOCK_ACQUIRED; /* about to end anyway: just try again */
	b.length =
		l->holder_ttl >= 0
			? time_min(time_add(l->holder_ttl, wait_margin(l->holder_ttl)), BLOCK_MAX)
			: LOCK_HANDOFF / 2;
	for (size_t i = 0; i < nodes_count(ns); i++)
		blocks = blocks || rd->waiting[i];
	if (!blocks || b.length < LOCK_TICK / 4) {
		int64_t pause = time_max(b.length, 10 * NS_PER_MS);
		return wait_here(l, ns, rd, time_min(now + pause, q->wait_deadline), intr_fd);
	}
	/* The servers' timeouts end the block; ours, only the wait, or a server that does not
	 * answer in time. */
	b.end = time_min(q->wait_deadline, time_add(now + b.length, l->io_timeout));
	b.length = time_add(b.length, NS_PER_MS - 1) / NS_PER_MS * NS_PER_MS; /* whole ms */
	send_block(l, ns, q, rd, &b, intr_fd);
	res = read_block(l, ns, q, rd, &b, intr_fd);
	if (res == CONN_INTERRUPTED) {
		bool abandoned = q->pipelined;
		if (abandoned)
			abandon_pipelined(l, ns, q);
		nodes_cancel(ns);
		/* (What the pipelined attempt would have left runs only if the BLPOP returned;
		 * the place taken before it is left now. A caller that asks again after a signal
		 * it ignores does so with a new token.) */
		line_leave(l, ns, rd);
		if (abandoned && retire_token(l) < 0)
			return LOCK_UNAVAILABLE;
		return LOCK_INTERRUPTED;
	}
	if (q->pipelined) {
		/* Its answer is next on the connection: the attempt reads it. */
		if (b.woken)
			return LOCK_ACQUIRED;
		if (res == CONN_TIMEOUT || b.refused) {
			abandon_pipelined(l, ns, q);
			retire = !b.refused;
		} else {
			/* The connection broke with it queued: it may have run. The next attempt,
			 * with the same token, settles that. */
			q->pipelined = false;
			unsure_mark(q, 0, q->pipelined_at);
		}
	}
	nodes_cancel(ns);
	/* The leave sent behind the abandoned attempt was dropped with its connection if the
	 * BLPOP still blocked: the place in line goes now, before its token does, ahead of the
	 * next attempt on the new connection (its answer is not waited for). */
	if (retire) {
		send_leave(l, ns, 0, clock_now() + l->io_timeout, -1);
		nodes_forget(ns);
		if (retire_token(l) < 0)
			return LOCK_UNAVAILABLE;
	}
	/* Refused everywhere it asked: no point asking again. */
	return b.refused && res == CONN_FAILED ? LOCK_UNAVAILABLE : LOCK_ACQUIRED;
}
