#include "query.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "nodes.h"
#include "duration.h"
#include "exitstatus.h"
#include "msg.h"

/* A JSON string: quotes, backslashes and control characters escaped, and any byte that is
 * not part of valid UTF-8 written as U+FFFD, so that every reader accepts it. */
static void
json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	while (*p) {
		size_t n = *p < 0x80             ? 1
			   : (*p & 0xe0) == 0xc0 ? 2
			   : (*p & 0xf0) == 0xe0 ? 3
			   : (*p & 0xf8) == 0xf0 ? 4
						 : 0;
		size_t i;

		if (*p == '"' || *p == '\\') {
			fprintf(out, "\\%c", *p++);
			continue;
		}
		if (*p < 0x20) {
			fprintf(out, "\\u%04x", *p++);
			continue;
		}
		for (i = 1; i < n && (p[i] & 0xc0) == 0x80; i++)
			;
		if (n == 0 || i < n || (n == 2 && *p < 0xc2)) {
			fputs("\\ufffd", out);
			p++;
			continue;
		}
		fwrite(p, 1, n, out);
		p += n;
	}
	fputc('"', out);
}

bool
query_evictable(const struct eviction *ev)
{
	return ev->policy[0] && strcmp(ev->policy, "noeviction") != 0 && ev->limit > 0;
}

/* The start of a holder's or a waiter's object, {"host", "pid", "token", after a comma unless
 * it is the first (i = 0): host and pid null for a value redlock-run did not write. */
static void
json_who(FILE *out, size_t i, const char *value)
{
	char host[LOCK_HOLDER_MAX];
	long pid;
	bool ours = lock_parse_holder(value, host, sizeof(host), &pid) == 0;

	fputs(i ? ", {\"host\": " : "{\"host\": ", out);
	if (ours)
		json_string(out, host);
	else
		fputs("null", out);
	if (ours)
		fprintf(out, ", \"pid\": %ld", pid);
	else
		fputs(", \"pid\": null", out);
	fputs(", \"token\": ", out);
	json_string(out, value);
}

/* One holder of "holders": {"host", "pid", "token", "ttl_ms", "kept", "process"} (a holder
 * kept by --min-hold has no process left to tell of). */
static void
json_holder(FILE *out, size_t i, const char *value, int64_t ttl, const char *process)
{
	bool kept = lock_value_kept(value);

	if (kept)
		process = NULL;

	json_who(out, i, value);
	fprintf(out, ", \"ttl_ms\": %lld, \"kept\": %s, \"process\": ",
		ttl >= 0 ? (long long)(ttl / NS_PER_MS) : -1LL, kept ? "true" : "false");
	if (process)
		fprintf(out, "\"%s\"}", process);
	else
		fputs("null}", out);
}

/* The line's discipline (--queue), as its holder's value, or else its first waiter's, says. */
static const char *
discipline(const struct lock_state *st)
{
	return lock_discipline_of(st->held ? st->value : st->nwaiters ? st->waiter[0].value : "");
}

/* Whether a process, as lock_value_process tells it, is gone. */
static bool
gone(const char *process)
{
	return process && strcmp(process, "gone") == 0;
}

/* Whether it is stopped. */
static bool
stopped(const char *process)
{
	return process && strcmp(process, "stopped") == 0;
}

const char *
query_process_mark(const char *process)
{
	return gone(process) ? " (gone)" : stopped(process) ? " (stopped)" : "";
}

/* Whether the lock has room now for the i-th waiter: a free place of a semaphore, a lock no one
 * holds, or a shared waiter beside shared holders. */
static bool
room_for(const struct lock_state *st, size_t i)
{
	if (st->limit > 0)
		return st->holders < (size_t)st->limit;
	if (st->shared)
		return !st->holders || st->waiter[i].shared;
	return !st->held;
}

int64_t
query_stalled(const struct lock_state *st, size_t *next)
{
	size_t i = 0;

	while (i < st->nwaiters && gone(st->waiter[i].process))
		i++;
	*next = i;
	if (st->ordered && i < st->nwaiters && room_for(st, i) &&
	    st->waiter[i].place > LOCK_HANDOFF)
		return st->waiter[i].place;
	return -1;
}

/* The line's fields: "queue", its discipline, "waiting", how many, "in_order", whether
 * "waiters" are the first of them in arrival order (else some of them): {"host", "pid",
 * "token", "mode", "waited_ms", "process"}, and "stalled_ms" (see stalled). */
static void
json_line(FILE *out, const struct lock_state *st)
{
	size_t next;
	int64_t stall = query_stalled(st, &next);

	fprintf(out, ", \"queue\": \"%s\", \"waiting\": %lld, \"in_order\": %s, \"waiters\": [",
		discipline(st), st->waiting, st->ordered ? "true" : "false");
	for (size_t i = 0; i < st->nwaiters; i++) {
		const char *process = st->waiter[i].process;
		json_who(out, i, st->waiter[i].value);
		fprintf(out, ", \"mode\": \"%s\", \"waited_ms\": ",
			st->waiter[i].shared ? "shared" : "exclusive");
		if (st->waiter[i].waited >= 0)
			fprintf(out, "%lld", (long long)(st->waiter[i].waited / NS_PER_MS));
		else
			fputs("null", out);
		if (process)
			fprintf(out, ", \"process\": \"%s\"}", process);
		else
			fputs(", \"process\": null}", out);
	}
	if (stall >= 0)
		fprintf(out, "], \"stalled_ms\": %lld", (long long)(stall / NS_PER_MS));
	else
		fputs("], \"stalled_ms\": null", out);
}

/* A state's fields, after the opening brace and before the eviction fields. */
static void
json_state(FILE *out, const struct lock_state *st, bool decided)
{
	char host[LOCK_HOLDER_MAX];
	long pid;
	bool ours = st->held && lock_parse_holder(st->value, host, sizeof(host), &pid) == 0;
	const char *process;

	fprintf(out, "\"held\": %s, \"host\": ", !decided ? "null" : st->held ? "true" : "false");
	if (ours)
		json_string(out, host);
	else
		fputs("null", out);
	fputs(", \"pid\": ", out);
	if (ours)
		fprintf(out, "%ld", pid);
	else
		fputs("null", out);
	fputs(", \"token\": ", out);
	if (st->held)
		json_string(out, st->value);
	else
		fputs("null", out);
	fputs(", \"ttl_ms\": ", out);
	if (st->held)
		fprintf(out, "%lld", st->ttl >= 0 ? (long long)(st->ttl / NS_PER_MS) : -1LL);
	else
		fputs("null", out);
	fputs(", \"fence\": ", out);
	if (st->fence >= 0)
		fprintf(out, "%lld", st->fence);
	else
		fputs("null", out);
	fputs(", \"held_ms\": ", out);
	if (st->held && st->held_for >= 0)
		fprintf(out, "%lld", (long long)(st->held_for / NS_PER_MS));
	else
		fputs("null", out);
	/* (Of a full semaphore, or a lock held shared, its first holder's: see read_semaphore.) */
	process = st->held && !st->kept ? st->process : NULL;
	fprintf(out, ", \"kept\": %s, \"process\": ", st->kept ? "true" : "false");
	if (process)
		fprintf(out, "\"%s\"", process);
	else
		fputs("null", out);
	fputs(", \"cancelled_by\": ", out);
	if (st->held && st->cancelled_by[0])
		json_string(out, st->cancelled_by);
	else
		fputs("null", out);
	json_line(out, st);
	if (!decided)
		fputs(", \"mode\": null, \"limit\": null, \"holders\": null", out);
	else if (st->shared)
		fputs(", \"mode\": \"shared\", \"limit\": null, \"holders\": [", out);
	else
		fprintf(out, ", \"mode\": \"%s\", \"limit\": %d, \"holders\": [",
			st->limit ? "semaphore" : "exclusive", st->limit ? st->limit : 1);
	if (!decided)
		return;
	if (st->limit || st->shared)
		for (size_t i = 0; i < st->holders && i < LOCK_STATE_HOLDERS; i++)
			json_holder(out, i, st->holder[i].value, st->holder[i].ttl,
				    st->holder[i].process);
	else if (st->held)
		json_holder(out, 0, st->value, st->ttl, st->process);
	fputs("]", out);
}

static void
json_eviction(FILE *out, const struct eviction *ev)
{
	fputs(", \"maxmemory_policy\": ", out);
	if (ev->policy[0])
		json_string(out, ev->policy);
	else
		fputs("null", out);
	fprintf(out, ", \"evictable\": %s",
		!ev->policy[0]        ? "null"
		: query_evictable(ev) ? "true"
				      : "false");
}

void
query_print_json(FILE *out, const struct status *s)
{
	const struct eviction *ev = NULL;

	/* The quorum may lose locks to eviction when any of its servers may: that one is named,
	 * else the first that answered INFO. */
	for (size_t i = 0; i < s->count; i++)
		if (s->node[i].ev.policy[0] && (!ev || query_evictable(&s->node[i].ev)) &&
		    !(ev && query_evictable(ev)))
			ev = &s->node[i].ev;
	fputs("{\"key\": ", out);
	json_string(out, s->key);
	fputs(", ", out);
	json_state(out, &s->all, s->decided);
	json_eviction(out, ev ? ev : &(struct eviction){ "", 0, "" });
	fprintf(out, ", \"quorum\": %zu, \"nodes\": [", s->quorum);
	for (size_t i = 0; i < s->count; i++) {
		fputs(i ? ", {\"address\": " : "{\"address\": ", out);
		json_string(out, s->node[i].address);
		fprintf(out, ", \"reachable\": %s, ", s->node[i].st.answered ? "true" : "false");
		if (s->node[i].st.answered) {
			json_state(out, &s->node[i].st, true);
			json_eviction(out, &s->node[i].ev);
			fputs(", \"replica_of\": ", out);
			if (s->node[i].ev.replica_of[0])
				json_string(out, s->node[i].ev.replica_of);
			else
				fputs("null", out);
		} else {
			fputs("\"error\": ", out);
			json_string(out, s->node[i].st.error);
		}
		fputs("}", out);
	}
	fputs("]}\n", out);
}

/* "KEY is held by 2 of 3 (a semaphore): HOLDER for another T, … (fence F)", or "KEY is held
 * shared by 2: …", after prefix. */
static void
text_semaphore(FILE *out, const char *prefix, const char *key, const struct lock_state *st)
{
	char who[LOCK_HOLDER_MAX], left[32];

	if (st->shared)
		fprintf(out, "%s%s is held shared by %zu", prefix, key, st->holders);
	else
		fprintf(out, "%s%s is held by %zu of %d (a semaphore)", prefix, key, st->holders,
			st->limit);
	for (size_t i = 0; i < st->holders && i < LOCK_STATE_HOLDERS; i++) {
		const char *value = st->holder[i].value;
		fprintf(out, "%s %s%s for another %s", i ? "," : ":",
			lock_describe_holder(value, who, sizeof(who)),
			lock_value_kept(value) ? " (kept)"
					       : query_process_mark(st->holder[i].process),
			duration_format(st->holder[i].ttl, left, sizeof(left)));
	}
	if (st->holders > LOCK_STATE_HOLDERS)
		fprintf(out, " and %zu more", st->holders - LOCK_STATE_HOLDERS);
	if (st->fence >= 0)
		fprintf(out, " (fence %lld)", st->fence);
	fputc('\n', out);
}

/* "KEY is free (...)", "KEY is held by ... (...)", after prefix. */
static void
text_state(FILE *out, const char *prefix, const char *key, const struct lock_state *st)
{
	char who[LOCK_HOLDER_MAX], left[32], fence[48] = "never taken", held[32], since[48] = "";

	if ((st->limit || st->shared) && st->holders) {
		text_semaphore(out, prefix, key, st);
		return;
	}
	if (!st->held) {
		if (st->fence >= 0)
			snprintf(fence, sizeof(fence), "last fence %lld", st->fence);
		fprintf(out, "%s%s is free (%s)\n", prefix, key, fence);
		return;
	}
	/* (Held, with no counter to read: one lost, or another program's key in its place.) */
	if (st->fence >= 0)
		snprintf(fence, sizeof(fence), "fence %lld", st->fence);
	else
		snprintf(fence, sizeof(fence), "fence unknown");
	lock_describe_holder(st->value, who, sizeof(who));
	if (st->held_for >= 0)
		snprintf(since, sizeof(since), " (taken %s ago)",
			 duration_format(st->held_for, held, sizeof(held)));
	if (st->ttl < 0)
		fprintf(out, "%s%s is held by %s, with no expiry (%s)", prefix, key, who, fence);
	else if (st->kept)
		fprintf(out,
			"%s%s is kept taken by --min-hold for another %s: the command of %s%s "
			"has finished (%s)",
			prefix, key, duration_format(st->ttl, left, sizeof(left)), who, since,
			fence);
	else
		fprintf(out, "%s%s is held by %s%s for another %s (%s)", prefix, key, who, since,
			duration_format(st->ttl, left, sizeof(left)), fence);
	if (!st->kept && gone(st->process))
		fprintf(out, "; no such process runs on this host: it did not release, and the "
			     "lease runs out by itself");
	else if (!st->kept && stopped(st->process))
		fprintf(out, "; its process is stopped (Ctrl-Z or SIGSTOP): it renews nothing, and "
			     "the lease runs out unless it is continued");
	if (st->cancelled_by[0])
		fprintf(out,
			"; cancelled by %s (--cancel-running): its command is being stopped, "
			"or will be at its next renewal",
			st->cancelled_by);
	fputc('\n', out);
}

/* "  N waiting (--queue fifo), in arrival order: HOLDER for 3s, HOLDER (shared) for 1s, ... and M
 * more", after prefix, when any wait. */
static void
text_line(FILE *out, const char *prefix, const struct lock_state *st)
{
	char who[LOCK_HOLDER_MAX], waited[32];
	size_t next;
	int64_t stall = query_stalled(st, &next);

	if (st->waiting <= 0)
		return;
	fprintf(out, "%s%lld waiting (--queue %s)%s", prefix, st->waiting, discipline(st),
		st->ordered ? ", in arrival order" : "");
	for (size_t i = 0; i < st->nwaiters; i++) {
		fprintf(out, "%s %s%s%s%s%s", i ? "," : ":",
			lock_describe_holder(st->waiter[i].value, who, sizeof(who)),
			st->waiter[i].shared ? " (shared)" : "",
			query_process_mark(st->waiter[i].process),
			st->waiter[i].waited >= 0 ? " for " : "",
			st->waiter[i].waited >= 0
				? duration_format(st->waiter[i].waited, waited, sizeof(waited))
				: "");
	}
	if ((long long)st->nwaiters < st->waiting)
		fprintf(out, " and %lld more", st->waiting - (long long)st->nwaiters);
	fputc('\n', out);
	if (stall >= 0 && next == 0)
		fprintf(out,
			"%snext: %s, not woken (the one a release woke did not come, or the lease "
			"ran out unreleased); it takes the lock when it looks again, within %s, or "
			"at once when another run asks for it\n",
			prefix, lock_describe_holder(st->waiter[0].value, who, sizeof(who)),
			duration_format(stall, waited, sizeof(waited)));
	else if (stall >= 0)
		fprintf(out,
			"%snext: %s, not woken, behind %zu gone; it takes the lock when it looks "
			"again, within %s and a second for each gone waiter before it, or sooner "
			"when other runs ask for it (each passes a gone waiter over a second "
			"later)\n",
			prefix, lock_describe_holder(st->waiter[next].value, who, sizeof(who)),
			next, duration_format(stall, waited, sizeof(waited)));
}

void
query_print_text(FILE *out, const struct status *s)
{
	char prefix[320], *copy = strdup(s->key);
	/* The KEY as shown: its control characters as '?' (msg_printable). */
	const char *key = copy ? msg_printable(copy) : s->key;

	if (s->decided) {
		text_state(out, "", key, &s->all);
		text_line(out, "  ", &s->all);
	}
	/* With one server, where a Sentinel or a cluster sent the question is worth a line. */
	if (s->count == 1 && s->node[0].role && s->node[0].st.answered)
		fprintf(out, "  on %s, %s\n", s->node[0].address, s->node[0].role);
	for (size_t i = 0; s->count > 1 && i < s->count; i++) {
		snprintf(prefix, sizeof(prefix), "  on %s%s%s%s: ", s->node[i].address,
			 s->node[i].role ? " (" : "", s->node[i].role ? s->node[i].role : "",
			 s->node[i].role ? ")" : "");
		if (s->node[i].st.answered)
			text_state(out, prefix, key, &s->node[i].st);
		else
			fprintf(out, "%sno answer (%s)\n", prefix, s->node[i].st.error);
	}
	for (size_t i = 0; i < s->count; i++) {
		if (s->node[i].ev.replica_of[0])
			fprintf(out,
				"note: %s is a replica of %s: what it says may be behind its "
				"master; ask the master (or use a Sentinel URL)\n",
				s->node[i].address, s->node[i].ev.replica_of);
		if (!query_evictable(&s->node[i].ev))
			continue;
		if (s->count > 1)
			fprintf(out,
				"warning: %s may evict locks under memory pressure "
				"(maxmemory-policy %s): set it to noeviction\n",
				s->node[i].address, s->node[i].ev.policy);
		else
			fprintf(out,
				"warning: this server may evict locks under memory pressure "
				"(maxmemory-policy %s): set it to noeviction\n",
				s->node[i].ev.policy);
	}
	free(copy);
}

/* The settings INFO memory's text says into ev. */
static void
read_memory(const char *text, struct eviction *ev)
{
	const char *p;

	if ((p = strstr(text, "\nmaxmemory_policy:")))
		sscanf(p + 18, "%31[a-z-]", ev->policy);
	if ((p = strstr(text, "\nmaxmemory:")))
		ev->limit = atoll(p + 11);
}

bool
query_eviction_warning(struct nodes *ns, int64_t deadline, int intr_fd, char *buf, size_t size)
{
	struct command info = { .argc = 2,
				.argv = (const char *[]){ "INFO", "memory" },
				.lens = (size_t[]){ 4, 6 } };
	struct answer a;
	bool found = false;

	for (size_t i = 0; i < nodes_count(ns); i++)
		nodes_send(ns, i, &info, deadline, intr_fd);
	while (nodes_next(ns, deadline, intr_fd, &a) == CONN_OK) {
		struct eviction ev = { "", 0, "" };
		if (a.result != CONN_OK)
			continue;
		if (reply_type(a.reply) == REPLY_STRING)
			read_memory(reply_string(a.reply, NULL), &ev);
		if (!found && query_evictable(&ev)) {
			found = true;
			snprintf(buf, size,
				 "%s may evict locks under memory pressure (maxmemory-policy %s): "
				 "set it to noeviction",
				 nodes_address(ns, a.node), ev.policy);
		}
		reply_free(a.reply);
	}
	/* A server that did not answer in time may never do: the release must not queue behind
	 * it on the same connection. */
	nodes_cancel(ns);
	return found;
}

/* Reads ROLE's answer: a replica's master into ev->replica_of. */
static void
read_role(const struct reply *r, struct eviction *ev)
{
	const struct reply *role, *host, *port;

	if (reply_type(r) != REPLY_ARRAY || reply_count(r) < 3 ||
	    reply_type(role = reply_element(r, 0)) != REPLY_STRING ||
	    strcmp(reply_string(role, NULL), "slave") != 0)
		return;
	host = reply_element(r, 1);
	port = reply_element(r, 2);
	snprintf(ev->replica_of, sizeof(ev->replica_of), "%s:%lld",
		 reply_type(host) == REPLY_STRING ? reply_string(host, NULL) : "?",
		 reply_type(port) == REPLY_INTEGER ? reply_integer(port) : 0);
}

void
query_ask_eviction(struct nodes *ns, struct status *s)
{
	int64_t deadline = clock_now() + LOCK_IO_TIMEOUT;
	struct command info = { .argc = 2,
				.argv = (const char *[]){ "INFO", "memory" },
				.lens = (size_t[]){ 4, 6 } };
	struct command role = { .argc = 1,
				.argv = (const char *[]){ "ROLE" },
				.lens = (size_t[]){ 4 } };
	bool infos[NODES_MAX] = { false };
	struct answer a;

	for (size_t i = 0; i < s->count; i++) {
		if (s->node[i].st.answered) {
			nodes_send(ns, i, &info, deadline, -1);
			nodes_send(ns, i, &role, deadline, -1);
		}
	}
	while (nodes_next(ns, deadline, -1, &a) == CONN_OK) {
		struct eviction *ev = &s->node[a.node].ev;
		if (a.result != CONN_OK)
			continue;
		if (infos[a.node]) { /* the second answer: ROLE's */
			read_role(a.reply, ev);
			reply_free(a.reply);
			continue;
		}
		infos[a.node] = true;
		if (reply_type(a.reply) == REPLY_STRING)
			read_memory(reply_string(a.reply, NULL), ev);
		reply_free(a.reply);
	}
	nodes_cancel(ns);
}

bool
query_ask(struct status *s, struct lock *l, struct nodes *ns, int64_t connect_timeout,
	  const bool *skip)
{
	struct lock_state node[NODES_MAX];
	bool any = false;

	s->key = l->key;
	s->count = nodes_count(ns);
	s->quorum = nodes_quorum(ns);
	/* Nothing answered yet: a server that does not answer within --connect-timeout is not
	 * there. */
	s->decided = lock_query(l, ns, clock_now() + time_min(l->io_timeout, connect_timeout), skip,
				node, &s->all) == 0;
	for (size_t i = 0; i < s->count; i++) {
		s->node[i].address = nodes_address(ns, i);
		s->node[i].role = nodes_role(ns, i);
		s->node[i].st = node[i];
		any = any || node[i].answered;
	}
	return any;
}

/* --status's answer on standard output, and its exit status; *taken, whether anyone holds the
 * lock (a place of a semaphore that is not full, a shared holder: any), and then holder, the
 * value of the holder shown first. */
static int
report(const struct opts *o, bool *taken, char *holder, size_t size)
{
	struct lock l;
	struct nodes *ns;
	struct status *s = calloc(1, sizeof(*s));
	bool any;
	int status;

	if (!s || lock_init(&l, o->key, o->ttl) < 0 || !(ns = nodes_new(o->urls, o->nurls)))
		msg_fatal(STATUS_OSERR, "cannot set up the query");
	l.shared = o->shared; /* whether shared holders keep us out */
	any = query_ask(s, &l, ns, o->connect_timeout, NULL);
	/* What the nodes that answered said is worth showing, even when it decides nothing. */
	if (any) {
		query_ask_eviction(ns, s);
		if (o->json)
			query_print_json(stdout, s);
		else
			query_print_text(stdout, s);
	}
	*taken = s->decided && (s->all.held || s->all.holders > 0);
	if (*taken)
		snprintf(holder, size, "%s", s->all.value);
	if (s->decided) {
		/* With -s: whether a shared holder could get in, which it cannot past an
		 * exclusive waiter (newcomers wait behind it). */
		bool behind = o->shared && s->all.waiting > s->all.waiting_shared;
		status = s->all.held || behind ? o->conflict_status : 0;
	} else {
		msg_error("%s", l.error);
		status = nodes_unavailable_status(ns);
		if (!any && o->json) {
			/* A reader of the JSON gets an object all the same, saying why. */
			fputs("{\"key\": ", stdout);
			json_string(stdout, s->key);
			fputs(", \"held\": null, \"error\": ", stdout);
			json_string(stdout, l.error);
			fputs("}\n", stdout);
		}
	}
	nodes_free(ns);
	lock_free(&l);
	free(s);
	return status;
}

int
query_status(const struct opts *o)
{
	char holder[LOCK_HOLDER_MAX];
	bool taken;

	return report(o, &taken, holder, sizeof(holder));
}

/* Asks the user on the terminal whether to break the lock that --status just described. */
static bool
confirmed(const char *key)
{
	char answer[16];

	fprintf(stderr, "break %s? [y/N] ", key);
	fflush(stderr);
	if (!fgets(answer, sizeof(answer), stdin))
		return false;
	return strcmp(answer, "y\n") == 0 || strcmp(answer, "yes\n") == 0 ||
	       strcmp(answer, "Y\n") == 0;
}

/* "broke KEY, held by HOLDER (taken T ago, L of its lease left): fence F, now G", or "KEY was
 * free: nothing to break", after prefix; shown_free: it was shown free (no question asked). */
static void
text_breaking(FILE *out, const char *prefix, const char *key, const struct lock_breaking *b,
	      bool shown_free)
{
	char who[LOCK_HOLDER_MAX], left[32], held[32], since[48] = "";

	lock_describe_holder(b->holder, who, sizeof(who));
	if (b->changed && shown_free) {
		fprintf(out, "%s%s is held by %s: not broken (it was shown free)\n", prefix, key,
			who);
		return;
	}
	if (b->changed) {
		fprintf(out, "%s%s changed hands after it was shown: now held by %s; not broken\n",
			prefix, key, who);
		return;
	}
	if (!b->broke) {
		fprintf(out, "%s%s was free: nothing to break\n", prefix, key);
		return;
	}
	/* The fences are the server's clock in µs, when each was taken: held that long. (Of a
	 * semaphore or a shared lock, the last fence may be a later holder's, one that has gone
	 * since: its holders' start is not kept.) */
	if (b->exclusive && b->before > 1000000000000000LL && b->fence > b->before)
		snprintf(since, sizeof(since), "taken %s ago, ",
			 duration_format((int64_t)((b->fence - b->before) / 1000) * NS_PER_MS, held,
					 sizeof(held)));
	if (b->holders > 1)
		fprintf(out,
			"%sbroke %s, held by %s and %zu more (%sup to %s of their leases left): ",
			prefix, key, who, b->holders - 1, since,
			duration_format(b->left, left, sizeof(left)));
	else
		fprintf(out, "%sbroke %s, held by %s (%s%s of its lease left): ", prefix, key, who,
			since, duration_format(b->left, left, sizeof(left)));
	if (b->before >= 0)
		fprintf(out, "fence %lld, now %lld\n", b->before, b->fence);
	else
		fprintf(out, "fence now %lld\n", b->fence);
}

int
query_break(const struct opts *o)
{
	struct lock l;
	struct lock_breaking node[NODES_MAX];
	struct nodes *ns;
	char by[300], here[256] = "", shown_holder[LOCK_HOLDER_MAX], *key = strdup(o->key);
	/* The KEY as shown: its control characters as '?' (msg_printable). */
	const char *shown = key ? msg_printable(key) : o->key;
	int status = 0;
	bool taken, shown_free = false, unheard = false, broke = false, changed = false,
		    dead = false, halted = false;
	int64_t left = 0; /* of the broken lease, where it was longest */

	if (!o->yes) {
		if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
			msg_error("--break %s: nobody to ask here (not a terminal); add --yes to "
				  "break it",
				  o->key);
			free(key);
			return STATUS_USAGE;
		}
		/* What is about to be broken, said first, as --status says it. */
		if (report(o, &taken, shown_holder, sizeof(shown_holder)) == STATUS_UNAVAILABLE) {
			free(key);
			return STATUS_UNAVAILABLE;
		}
		/* Free: nothing to ask about, but its line is woken all the same (a stuck line is
		 * what --status sends the user here for), and one who took it meanwhile is not
		 * broken: no holder has this value. */
		shown_free = !taken;
		if (shown_free)
			snprintf(shown_holder, sizeof(shown_holder), "(free)");
		else if (!confirmed(shown)) {
			msg_error("%s: not broken", shown);
			free(key);
			return 1;
		}
	}
	if (lock_init(&l, o->key, o->ttl) < 0 || !(ns = nodes_new(o->urls, o->nurls)))
		msg_fatal(STATUS_OSERR, "cannot set up the break");
	gethostname(here, sizeof(here) - 1);
	snprintf(by, sizeof(by), "%s:%ld", here, (long)getpid());
	/* What the user said yes to is the holder shown: one that took the lock meanwhile (the
	 * one shown finished) is not broken. */
	if (lock_break(&l, ns, by, o->yes ? NULL : shown_holder,
		       clock_now() + time_min(l.io_timeout, o->connect_timeout), node) < 0) {
		msg_error("%s", l.error);
		status = nodes_unavailable_status(ns);
	}
	for (size_t i = 0; i < nodes_count(ns); i++) {
		char prefix[320] = "";
		if (nodes_count(ns) > 1)
			snprintf(prefix, sizeof(prefix), "on %s: ", nodes_address(ns, i));
		unheard = unheard || node[i].unheard;
		broke = broke || node[i].broke;
		changed = changed || node[i].changed;
		/* (A lock that --min-hold keeps has no command running, nor has a holder whose
		 * process is gone from this host.) */
		const char *process =
			node[i].holders == 1 ? lock_value_process(node[i].holder, here) : NULL;
		if (node[i].broke && (node[i].holders > 1 || !lock_value_kept(node[i].holder))) {
			if (gone(process))
				dead = true;
			else
				left = time_max(left, node[i].left);
			halted = halted || stopped(process);
		}
		if (node[i].answered)
			text_breaking(stdout, prefix, shown, &node[i], shown_free);
		else if (nodes_count(ns) > 1 || status == 0)
			fprintf(stdout, "%scannot break %s: %s%s\n", prefix, shown, node[i].error,
				node[i].unheard
					? " (the break went out: it may still be carried out "
					  "there)"
					: "");
	}
	if (dead && left == 0)
		fputs("its process is gone from this host: nothing of it runs on\n", stdout);
	if (left > 0) {
		char within[32], most[32];
		bool several = false;
		for (size_t i = 0; i < nodes_count(ns); i++)
			several = several || (node[i].broke && node[i].holders > 1);
		/* It learns at its next renewal; meanwhile the next holder may run beside it. A
		 * renewal comes every TTL/3, and the lease left is a TTL at most: within a third of
		 * it, unless renewals fail, when the lease's end stops the command. */
		duration_format(left / 3, within, sizeof(within));
		duration_format(left, most, sizeof(most));
		if (halted && !several) /* stopped, it renews nothing */
			printf("its process is stopped: continued, it stops its command (76); "
			       "stopped alone (SIGSTOP), its guard kills the command as the lease "
			       "ends, within %s\n",
			       most);
		else if (several)
			printf("their commands run on until their next renewals find the break, "
			       "within %s (%s if their renewals fail), then are stopped (76)\n",
			       within, most);
		else
			printf("its command runs on until its next renewal finds the break, within "
			       "%s (%s if its renewals fail), then is stopped (76)\n",
			       within, most);
	}
	if (status == 0 && changed && !broke && !shown_free) {
		msg_error("%s: not broken: its holder changed while you answered; see who holds it "
			  "now with --status",
			  shown);
		status = 1;
	}
	/* A server that sat on the break (frozen, or busy) may still carry it out: breaking
	 * again at once could then break whoever holds the lock next. */
	if (unheard)
		msg_error("a server did not answer the break but may still carry it out: see "
			  "--status %s before breaking it again, which would end the next holder's "
			  "lock",
			  o->key);
	nodes_free(ns);
	lock_free(&l);
	free(key);
	return status;
}
