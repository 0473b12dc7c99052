/*
 * Taking the lock (DESIGN §3, §3b): lock_acquire's attempts, each sent to every node at once,
 * what their answers count for (grants, holders, young servers, replicas), the verdict of a
 * quorum, what a grant that does not count is given back, and how long to pause before the
 * next attempt. Between attempts, a run that found the lock held waits in line (line.c).
 */
#include "lock.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "acquisition.h"
#include "duration.h"
#include "line.h"
#include "msg.h"
#include "nodes.h"
#include "scripts.h"
#include "util.h"

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
	char ttl[32];

	set_error(l, "%s; if the lock was taken, it expires within %s", why,
		  duration_format(l->ttl, ttl, sizeof(ttl)));
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

/* Whether a request whose outcome we do not know may still take the lock. */
static bool
unsettled(const struct acquisition *q)
{
	for (size_t i = 0; i < NODES_MAX; i++)
		if (q->unheard[i])
			return true;
	return q->unsure_since >= 0;
}

/* Stopping on l->error: while an earlier request stays unsettled, it says that a lock it took
 * expires by itself. */
static void
stop_unsure(struct lock *l, const struct acquisition *q)
{
	char why[sizeof(l->error)];

	if (!unsettled(q))
		return;
	snprintf(why, sizeof(why), "%s", l->error);
	set_unsure_error(l, why);
}

static void
unsure_clear(struct acquisition *q, size_t i)
{
	q->unheard[i] = false;
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
 * for it to be. With --wait-replicas, an answer is taken without its replicas' count (WAIT may
 * take its whole timeout), and the give-back goes once the answer is in, on a new connection:
 * queued behind the WAIT, it would be dropped with the connection.
 */
static void
settle_interrupted(struct lock *l, struct nodes *ns, struct round *rd)
{
	int64_t deadline = clock_now() + time_min(l->io_timeout, NS_PER_S);
	bool owed[NODES_MAX], sent[NODES_MAX] = { false }; /* a give-back, still to go; gone */
	struct call call;
	struct answer a;
	bool unsure = false;

	nodes_hurry(ns, true);
	release_call(l, 0, &call);
	for (size_t i = 0; i < nodes_count(ns); i++)
		owed[i] = rd->granted[i] || rd->unreplicated[i] || nodes_outstanding(ns, i);
	for (;;) {
		for (size_t i = 0; i < nodes_count(ns); i++) {
			if (owed[i] && (l->replicas == 0 || !nodes_outstanding(ns, i))) {
				call_send(ns, i, &call, deadline, -1, true);
				owed[i] = false;
				sent[i] = true;
			}
		}
		if (nodes_next(ns, deadline, -1, &a) != CONN_OK)
			break;
		/* (A give-back that failed, on a connection that did not even open, leaves
		 * whatever the node granted.) */
		if (a.result != CONN_OK)
			unsure = unsure || a.maybe_landed || sent[a.node];
		else
			reply_free(a.reply);
	}
	for (size_t i = 0; i < nodes_count(ns); i++)
		unsure = unsure || owed[i] || nodes_outstanding(ns, i);
	nodes_cancel(ns);
	nodes_hurry(ns, false);
	if (unsure) {
		set_unsure_error(l, "no answer to the last attempt");
		msg_warn("%s", l->error);
	}
}

void
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

const char *
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
		/* A request may have landed unanswered on a server that answered before: it is
		 * asked about again. One that never answered (a wrong address, a TLS port,
		 * something else listening) is not waited for, but one that accepted the
		 * connection and sat on the request (frozen) may still carry it out: said. */
		if (a->maybe_landed && nodes_reached(ns, i))
			unsure_mark(q, i, nodes_sent(ns, i));
		else if (a->maybe_landed && a->result == CONN_TIMEOUT)
			q->unheard[i] = true;
		rd->reached += nodes_reached(ns, i); /* an outage, not a wrong address */
		if (a->result == CONN_TIMEOUT && !nodes_reached(ns, i) &&
		    strncmp(nodes_error(ns, i), "no reply from ", 14) == 0) {
			char line[400], within[32];
			/* Which bounded the request's time: -w, or the timeout (a server never
			 * reached is given --connect-timeout; see due_from). */
			bool waited =
				q->io_cap < time_add(nodes_sent(ns, i),
						     time_min(l->io_timeout, l->connect_timeout));
			snprintf(line, sizeof(line), "%s (%s %s)", nodes_error(ns, i),
				 waited ? "-w" : "--connect-timeout",
				 duration_format(waited ? q->wait : l->connect_timeout, within,
						 sizeof(within)));
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
				set_error(
					l,
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
			rd->not_now++;
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
		rd->not_now++;
		break;
	case REPLY_REFUSED:
		failures_add(&rd->why, l->error);
		rd->refused++;
		rd->declined++;
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

/* How many nodes have yet to answer the request. */
static size_t
outstanding(const struct nodes *ns)
{
	size_t pending = 0;

	for (size_t i = 0; i < nodes_count(ns); i++)
		pending += nodes_outstanding(ns, i);
	return pending;
}

static enum verdict
verdict(const struct nodes *ns, struct round *rd)
{
	size_t n = nodes_count(ns), q = nodes_quorum(ns), pending = outstanding(ns), foreign;

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
	int64_t grace =
		now + time_min(LOCK_LAST_ANSWER, time_max(NS_PER_MS, 2 * (now - rd->start)));
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
	/* (Interrupted as a raise's replicas were waited for, its answer is in: see nodes_hurry.)
	 */
	if (res == CONN_INTERRUPTED || (l->replicas && clock_interrupted(intr_fd)))
		return -2;
	set_error(l, "too few nodes acknowledged fence %lld: %s", top, rd->why.text);
	return -1;
}

/* How long a split round waits for the nodes still to answer, at least: LOCK_STRAGGLER, twice as
 * long after each round cut short (8 times at most), so that a node that is merely far (a
 * holder's quorum, or ours) answers in time in a round or two, while a frozen one holds a round
 * up little longer than a random pause (see pause_randomly). */
static int64_t
straggler_wait(const struct acquisition *q)
{
	return LOCK_STRAGGLER << (q->cuts < 3 ? q->cuts : 3);
}

/*
 * Whether the round is to hear more answers: while it is undecided; and, decided against us by
 * nodes found held before any grant of ours came, while nodes are still to answer, until
 * *straggle (set then, as for a split). A grant on its way makes the round a split with a
 * contender started with us, who found our key as we found theirs (with -n both would be busy
 * while neither holds the lock); their lock's answer makes it held. A node still silent then
 * is not waited for: held it is.
 */
static bool
hearing(const struct nodes *ns, const struct acquisition *q, struct round *rd, int64_t *straggle)
{
	enum verdict v = verdict(ns, rd);
	int64_t now;

	if (v != VERDICT_NO || !rd->held || rd->yes || !outstanding(ns))
		return v == VERDICT_OPEN;
	now = clock_now();
	if (*straggle == TIME_NEVER)
		*straggle = now + time_max(now - rd->start, straggler_wait(q));
	return now < *straggle;
}

/*
 * One attempt: the acquire request to every node at once, decided as soon as a quorum granted it
 * or can no longer grant it. Taken, it holds on the quorum until the quorum-th latest of the
 * granting nodes' lease ends, and counts only while two thirds of that are ahead
 * (lock_grant_in_time). Not taken, whatever was taken is given back.
 *
 * Split with another run (some nodes ours, some its), the nodes still to answer are waited for
 * no longer than the others took, twice over, and straggler_wait at least: a frozen node would
 * keep both runs waiting for it until their requests time out, and both would find the nodes
 * split again, round after round, for as long as it stays frozen (while the others could make a
 * quorum); cut short, the round is a split, and each tries again after a random pause.
 */
static enum attempt_outcome
attempt(struct lock *l, struct nodes *ns, struct acquisition *q, struct round *rd, int intr_fd)
{
	size_t n = nodes_count(ns), none = n - nodes_quorum(ns);
	char took[32], lease[32];
	struct call call;
	struct answer a;
	int64_t deadline, valid, straggle = TIME_NEVER;
	int fenced;
	bool waiting;

	memset(rd, 0, sizeof(*rd));
	l->mismatched = false; /* (said of this round's answers only) */
	rd->start = q->pipelined ? q->pipelined_at : clock_now();
	rd->pipelined = q->pipelined;
	/* WAIT may take its whole timeout on top (past the end of a wait too: a grant that
	 * is not acknowledged is given back only once its answer is in). The last attempt of a
	 * wait that outlasted its end (we were stopped) still has the last answer's allowance,
	 * for it and the leave from the line that goes out before it. */
	deadline = time_min(clock_now() + l->io_timeout,
			    q->renewing ? TIME_NEVER
					: time_max(q->io_cap, clock_now() + LOCK_LAST_ANSWER));
	q->renewing = false;
	deadline = time_add(deadline, l->replicas_timeout);
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
	while (!rd->twice && hearing(ns, q, rd, &straggle)) {
		enum conn_result res = next_answer(ns, &call, straggle, deadline, intr_fd, &a);
		int64_t now;
		if (res == CONN_INTERRUPTED) {
			settle_interrupted(l, ns, rd);
			return ATTEMPT_INTERRUPTED;
		}
		if (res != CONN_OK)
			break; /* undecided: every node answers, or fails by its deadline, but for
				* the stragglers of a split */
		now = clock_now();
		count_answer(l, ns, q, rd, &a, now);
		if (a.result == CONN_OK)
			reply_free(a.reply);
		if (straggle == TIME_NEVER && rd->yes && rd->held)
			straggle = now + time_max(now - rd->start, straggler_wait(q));
	}
	if (straggle != TIME_NEVER && outstanding(ns) && clock_now() >= straggle)
		q->cuts++;
	/* A signal that came while an answer's replicas were waited for: that answer is in
	 * (see nodes_hurry), and the interruption is not lost with the decided verdict. */
	if (l->replicas && clock_interrupted(intr_fd)) {
		settle_interrupted(l, ns, rd);
		return ATTEMPT_INTERRUPTED;
	}
	if (rd->twice) {
		give_back(l, ns, rd);
		return ATTEMPT_REFUSED;
	}
	rd->pending = outstanding(ns); /* (before give_back, which waits for none of them) */
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
			l->held_since = clock_now();
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
		/* Said once without -v: a lease too short for the server's distance looks just
		 * like a lock held by others, every time. */
		if (q->late_told)
			msg_info("%s; gave it back", l->error);
		else
			msg_warn("%s; gave it back (a server that far away needs a longer -t: ten "
				 "times that, say; one held up for a moment, frozen or busy, only "
				 "delays the lock)",
				 l->error);
		q->late_told = true;
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
		rd->young_ready =
			ready[time_min((int64_t)(nodes_quorum(ns) - rd->yes), (int64_t)k) - 1];
		set_error(l, "%s", rd->young_why);
		if (!q->young_told) {
			/* A wait of a lease (or, with -n, a busy status for a lock nobody may
			 * hold) that nothing else explains: said once, -v or not. */
			msg_warn("%s; %s", rd->young_why,
				 q->wait != 0 ? "waiting for that" : "not waiting for that (-n)");
			q->young_told = true;
		}
		if (rd->young == rd->held)
			l->holder[0] = '\0'; /* nobody else was seen */
		return ATTEMPT_HELD;
	}
	if (rd->held + rd->refused > none)
		return rd->yes ? ATTEMPT_SPLIT : ATTEMPT_HELD;
	/* A server down (or silent) and the lock held on others: had its holder let go, the
	 * servers that answered, or have yet to, could have made a quorum. It is the holder that
	 * keeps us out, not the outage: busy, and waited for in line until enough of those
	 * servers are free (or, having split them with another contender, tried again). */
	if (rd->held && rd->yes + rd->young + rd->held + rd->pending >= nodes_quorum(ns)) {
		rd->usable = rd->yes + rd->young + rd->held + rd->pending;
		return rd->yes || rd->young ? ATTEMPT_SPLIT : ATTEMPT_HELD;
	}
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

/* A wait for replicas that do not acknowledge is said once after this long (see retry_later). */
#define STILL_TRYING_AFTER (5 * NS_PER_S)

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
		if (q->wait == WAIT_FOREVER && q->answered_at >= 0) {
			/* The outage a wait rides out is over: said as such, not as the last
			 * attempt's failure alone. */
			char since[32];
			snprintf(why, sizeof(why), "%s", l->error);
			set_error(l, "gave up waiting after %s without an answer that counts: %s",
				  duration_format(now - q->answered_at, since, sizeof(since)), why);
		}
		stop_unsure(l, q);
		if (q->wait > 0 && q->seen_held) {
			if (unsettled(q))
				msg_warn("%s", l->error);
			return LOCK_BUSY;
		}
		return LOCK_UNAVAILABLE;
	}
	if (!q->pause && q->wait > 0 && q->answered_at < 0)
		/* Never answered in this run, a wrong address as likely as a restart: a -w of
		 * twenty minutes must not pass in silence. */
		msg_warn("%s; trying again until the wait ends", l->error);
	else if (!q->pause)
		msg_info("%s; trying again%s", l->error,
			 q->wait > 0                          ? " until the wait ends"
			 : q->wait == 0 || q->answered_at < 0 ? ""
							      : " for up to a minute");
	else if (q->unreplicated && !q->still_told && !msg_verbose() &&
		 !(q->wait > 0 && q->answered_at < 0) && now - q->outage_at >= STILL_TRYING_AFTER) {
		/* A failover passes in silence, however long the Sentinels or the cluster take;
		 * replicas that do not acknowledge for long (none connected: a server set up
		 * without them) are said once, not only at the end, a minute later. */
		msg_warn("%s; still trying%s", l->error,
			 q->wait > 0 ? " until the wait ends" : ", for up to a minute in all");
		q->still_told = true;
	}
	if (!q->pause)
		q->outage_at = now;
	q->pause = q->pause ? time_min(2 * q->pause,
				       time_min(time_max(l->ttl / 10, 10 * NS_PER_MS), NS_PER_S))
			    : 10 * NS_PER_MS;
	if (clock_sleep_until(time_min(now + q->pause, give_up), intr_fd) < 0) {
		if (unsettled(q)) {
			set_unsure_error(l, "interrupted");
			msg_warn("%s", l->error);
		}
		return LOCK_INTERRUPTED;
	}
	return LOCK_ACQUIRED;
}

/*
 * Contenders split the nodes between them: each gave back what it took, and tries again after
 * a random pause, so that they do not collide again. LOCK_ACQUIRED means "try again". With
 * -n, whose tries are few (LOCK_SPLITS), the pause's span doubles with each split, as
 * Ethernet's backoff does: on a loaded machine an attempt takes long enough that two pauses
 * of one span collide often, and five collisions in a row left both contenders busy while
 * neither held the lock.
 */
static enum lock_result
pause_randomly(const struct lock *l, const struct acquisition *q, int intr_fd)
{
	int64_t span = time_max(5 * NS_PER_MS, time_min(l->ttl / 30, 50 * NS_PER_MS))
		       << (q->wait == 0 && q->splits > 0 ? q->splits - 1 : 0);
	uint32_t r;

	/* Longer than a round cut short holds its nodes, five times over: another run then
	 * finds them free more often than not. */
	if (q->cuts)
		span = time_max(span, 5 * straggler_wait(q));

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)clock_now();
	/* (-n's wait ended as it began: its few pauses are not cut to nothing.) */
	if (clock_sleep_until(time_min(clock_now() + (int64_t)(r % (uint64_t)span),
				       q->wait == 0 ? TIME_NEVER : q->wait_deadline),
			      intr_fd) < 0)
		return LOCK_INTERRUPTED;
	return LOCK_ACQUIRED;
}

enum lock_result
lock_acquire(struct lock *l, struct nodes *ns, int64_t wait, int intr_fd)
{
	struct acquisition q = {
		/* Back after a stop, a --queue latest run that had its place asks as one in
		 * line, as old as it was; one that had none (its attempt never ran) is new. */
		.in_line = l->arrived > 0,
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
			if (unsettled(&q)) {
				set_unsure_error(l, "interrupted");
				msg_warn("%s", l->error);
			}
			out = LOCK_INTERRUPTED;
			break;
		}
		if (a == ATTEMPT_REFUSED) { /* AUTH, SELECT or the script: no point asking again */
			stop_unsure(l, &q);
			out = l->superseded ? LOCK_SUPERSEDED : LOCK_UNAVAILABLE;
			break;
		}
		if (a == ATTEMPT_NO_QUORUM) {
			q.seen_held = q.seen_held || rd.held > 0;
			/* Servers that answer, but not yet (a restart loading its data, replicas
			 * that did not acknowledge: a failover under way), are ridden out as a
			 * silence is, never taken for a wrong address; so are servers that
			 * answered earlier in this run, or do not answer while the lock is seen
			 * held on others, from the first time on (LOCK_OUTAGE counts from then).
			 * A server that refuses (out of memory, a read-only replica) answers, but
			 * no sooner for the waiting: it does not make the outage a new one. (A
			 * round decided before every answer came counts those still on their way:
			 * whether the run rides out an outage does not hang on which came first.)
			 */
			if (nodes_verdict(ns, rd.answered - rd.not_now - rd.declined, 0) ==
				    VERDICT_YES ||
			    (q.answered_at < 0 &&
			     (nodes_verdict(ns, rd.answered + rd.reached + rd.pending, 0) ==
				      VERDICT_YES ||
			      rd.held)))
				q.answered_at = clock_now();
			/* Out of descriptors (or memory) ourselves: no outage to ride out, and
			 * none that waiting ends. */
			if (nodes_failed_here(ns)) {
				stop_unsure(l, &q);
				out = LOCK_UNAVAILABLE;
				break;
			}
			q.unreplicated = false;
			for (size_t i = 0; i < nodes_count(ns); i++)
				q.unreplicated = q.unreplicated || rd.unreplicated[i];
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
		if (a == ATTEMPT_RENEW) {
			/* Whatever the wait: the lock is ours, and the request that renews it has
			 * its whole timeout, though -w ended meanwhile (we were stopped). */
			q.renewing = true;
			continue;
		}
		q.seen_held = q.seen_held || a == ATTEMPT_HELD;
		if (a == ATTEMPT_SPLIT && wait == 0 && q.splits < LOCK_SPLITS) {
			/* Nobody holds it: -n too tries again after a random pause, a few times,
			 * so that of contenders started together one gets it (as with flock -n). */
			q.splits++;
			out = pause_randomly(l, &q, intr_fd);
		} else if (wait == 0 || clock_now() >= q.wait_deadline) {
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
