/*
 * --list: every lock whose name matches a pattern, found with SCAN on every server (each node
 * of a quorum, a Sentinel's master, every master of a cluster), told from other keys by its
 * shape (see script_query), and said as --status says it: a table, or one JSON object a line.
 */
#include "query.h"

#include <fnmatch.h>
#include <limits.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "duration.h"
#include "exitstatus.h"
#include "msg.h"
#include "names.h"
#include "util.h"

/* The names found (several servers may hold one: sorted and made unique at the end). */
struct names {
	char **name;
	size_t count, size;
};

static int
names_add(struct names *n, const char *s, size_t len)
{
	char **grown;

	if (n->count == n->size) {
		size_t size = n->size ? 2 * n->size : 64;
		if (!(grown = realloc(n->name, size * sizeof(*grown))))
			return -1;
		n->name = grown;
		n->size = size;
	}
	if (!(n->name[n->count] = strndup(s, len)))
		return -1;
	n->count++;
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The answer to one command on node i, by deadline: NULL (error says why, and *refused whether
 * the server refused the command) or a reply to free. */
static struct reply *
ask(struct nodes *ns, size_t i, int argc, const char **argv, int64_t deadline, char *error,
    size_t size, bool *refused)
{
	size_t lens[NODES_ARGS_MAX];
	struct command cmd = { .argc = argc, .argv = argv, .lens = lens };
	struct answer a;

	for (int k = 0; k < argc; k++)
		lens[k] = strlen(argv[k]);
	*refused = false;
	nodes_send(ns, i, &cmd, deadline, -1);
	if (nodes_next(ns, deadline, -1, &a) != CONN_OK || a.result != CONN_OK) {
		snprintf(error, size, "%s", nodes_error(ns, i));
		nodes_cancel(ns);
		return NULL;
	}
	if (reply_type(a.reply) == REPLY_ERROR) {
		const char *e = reply_string(a.reply, NULL);
		*refused = true;
		snprintf(error, size, "%s refused %s: %.*s%s", nodes_address(ns, i), argv[0],
			 msg_quoted_len(e, strlen(e)), e, lock_refusal_advice(e));
		reply_free(a.reply);
		return NULL;
	}
	return a.reply;
}

/* Whether a string that starts with value (len bytes of it, read up to LOCK_VALUE_MAX) may be a
 * lock's token: of a token's shape, and no longer than redlock-run writes one (a large value,
 * which the query's script would copy whole, is passed over here). */
static bool
may_be_token(const char *value, size_t len)
{
	char host[LOCK_HOLDER_MAX], token[LOCK_VALUE_MAX];
	long pid;

	if (len >= LOCK_VALUE_MAX)
		return false;
	memcpy(token, value, len);
	token[len] = '\0';
	return lock_parse_holder(token, host, sizeof(host), &pid) == 0;
}

/*
 * Adds to *n those of keys (a page of SCAN's strings on node i) whose values may be tokens: a
 * Redis that locks share with a cache holds many other strings, and asking each one's query
 * cost a round trip and a script. GETRANGE reads a byte more of a value than a token can be,
 * and NODES_ASKS_MAX of them are out at a time. Only what cannot be a token is passed over. 0, or
 * -1 with error set.
 */
static int
add_tokens(struct nodes *ns, size_t i, const struct reply *keys, int64_t timeout, struct names *n,
	   char *error, size_t size)
{
	size_t count = reply_count(keys), sent = 0, read = 0;
	char last[24];

	snprintf(last, sizeof(last), "%d", LOCK_VALUE_MAX - 1);
	while (read < count) {
		struct answer a;
		size_t len;
		const char *value;
		for (; sent < count && sent - read < NODES_ASKS_MAX; sent++) {
			const char *argv[] = { "GETRANGE", NULL, "0", last };
			size_t lens[] = { 8, 0, 1, strlen(last) };
			struct command cmd = { .argc = 4, .argv = argv, .lens = lens };
			argv[1] = reply_string(reply_element(keys, sent), &lens[1]);
			if (!argv[1])
				argv[1] = "";
			nodes_send(ns, i, &cmd, clock_now() + timeout, -1);
		}
		if (nodes_next(ns, clock_now() + timeout, -1, &a) != CONN_OK ||
		    a.result != CONN_OK) {
			snprintf(error, size, "%s", nodes_error(ns, i));
			nodes_cancel(ns);
			return -1;
		}
		/* In order: the answer for keys[read]. A refusal (a user not allowed GETRANGE, a
		 * key that changed type since) leaves the key to the query. */
		if (reply_type(a.reply) != REPLY_STRING ||
		    ((value = reply_string(a.reply, &len)) && may_be_token(value, len))) {
			const char *key = reply_string(reply_element(keys, read), &len);
			if (key && names_add(n, key, len) < 0)
				msg_fatal(STATUS_OSERR, "out of memory");
		}
		reply_free(a.reply);
		read++;
	}
	return 0;
}

/*
 * The lock whose line a key of len bytes is ("{x}:waiting" is x's, "{t}x:waiting" {t}x's), into
 * buf when its name matches pattern; false otherwise.
 */
static bool
line_of(const char *key, size_t len, const char *pattern, char *buf, size_t size)
{
	size_t end = strlen(NAME_WAITING);

	if (len <= end || len - end >= size || memcmp(key + len - end, NAME_WAITING, end) != 0 ||
	    memchr(key, '\0', len))
		return false;
	len -= end;
	/* Braces around a whole name without a '}' are the tag lock_aux_key gave it. */
	bool braced =
		len > 2 && key[0] == '{' && key[len - 1] == '}' && !memchr(key + 1, '}', len - 2);
	snprintf(buf, size, "%.*s", (int)(braced ? len - 2 : len), key + braced);
	return fnmatch(pattern, buf, 0) == 0;
}

/*
 * Adds the names on node i that match pattern to *n: SCAN, never KEYS, which would block the
 * server for as long as it reads them all; only strings that may be tokens (add_tokens), and
 * sorted sets, the types of a lock; then the locks whose lines wait (a free lock may have one,
 * whose next waiter was not woken). 0, or -1 with error set.
 */
static int
scan(struct nodes *ns, size_t i, const char *pattern, int64_t timeout, struct names *n, char *error,
     size_t size)
{
	/* The passes: the strings and sorted sets that match pattern (match ""), then the
	 * waiting lines, whose locks' names are matched here (see line_of). With every name
	 * asked for, the sorted sets' pass reads the lines too, and the last is not needed. */
	static const struct {
		const char *type, *match;
	} passes[] = { { "string", "" }, { "zset", "" }, { "zset", "*" NAME_WAITING } };
	bool every = strcmp(pattern, "*") == 0;
	size_t count = every ? ARRAY_LEN(passes) - 1 : ARRAY_LEN(passes);
	char at[300] = ""; /* the server the cursor is of, once it answered */

	for (size_t t = 0; t < count; t++) {
		bool strings = strcmp(passes[t].type, "string") == 0, lines = *passes[t].match;
		char cursor[32] = "0";
		do {
			const char *argv[] = { "SCAN",  cursor,
					       "MATCH", lines ? passes[t].match : pattern,
					       "COUNT", "1000",
					       "TYPE",  passes[t].type };
			bool refused;
			/* Each page in its own time: a large keyspace takes many. */
			struct reply *r =
				ask(ns, i, 8, argv, clock_now() + timeout, error, size, &refused);
			const struct reply *keys;
			if (!r)
				return -1;
			if (reply_type(r) != REPLY_ARRAY || reply_count(r) != 2 ||
			    reply_type(reply_element(r, 0)) != REPLY_STRING ||
			    reply_type(keys = reply_element(r, 1)) != REPLY_ARRAY) {
				snprintf(error, size, "unexpected reply from %s to SCAN",
					 nodes_address(ns, i));
				reply_free(r);
				return -1;
			}
			snprintf(cursor, sizeof(cursor), "%s",
				 reply_string(reply_element(r, 0), NULL));
			if (!at[0])
				snprintf(at, sizeof(at), "%s", nodes_address(ns, i));
			if (strings && add_tokens(ns, i, keys, timeout, n, error, size) < 0) {
				reply_free(r);
				return -1;
			}
			/* A cursor is one server's: one that moved on (a -MOVED to a GETRANGE, a
			 * Sentinel's failover) would read another's keyspace with it. */
			if (strcmp(at, nodes_address(ns, i)) != 0) {
				snprintf(error, size,
					 "moved from %s to %s while its keys were read (a slot "
					 "moved, or the master failed over): list again",
					 at, nodes_address(ns, i));
				reply_free(r);
				return -1;
			}
			for (size_t k = 0; !strings && k < reply_count(keys); k++) {
				size_t len;
				const char *key = reply_string(reply_element(keys, k), &len);
				/* (A lock's name is shorter than its line's key: names of
				 * 128 KiB with their prefix, too.) */
				char *name = key && (lines || every) ? malloc(len + 1) : NULL;
				bool line = name && line_of(key, len, pattern, name, len + 1);
				if ((key && (lines || every) && !name) ||
				    (key && !lines && names_add(n, key, len) < 0) ||
				    (line && names_add(n, name, strlen(name)) < 0))
					msg_fatal(STATUS_OSERR, "out of memory");
				free(name);
			}
			reply_free(r);
		} while (strcmp(cursor, "0") != 0);
	}
	return 0;
}

/*
 * A cluster's masters, from CLUSTER SLOTS asked of node 0 (a cluster's seed, or a server that
 * may be a cluster's node): each one's URL, the node's own with that master's address, into m
 * (at most max). How many: 0 when the server is not in a cluster (it refuses CLUSTER), or -1
 * when it did not answer, or when a cluster's node refused (a user not allowed CLUSTER SLOTS:
 * the node's keys alone would be a list silently short of the others'); error says why.
 */
static int
masters(struct nodes *ns, const struct redis_url *cluster, struct redis_url *m, size_t max,
	int64_t deadline, char *error, size_t size)
{
	const char *argv[] = { "CLUSTER", "SLOTS" };
	bool refused;
	struct reply *r = ask(ns, 0, 2, argv, deadline, error, size, &refused);
	size_t count = 0;

	if (!r && refused && !cluster->cluster) {
		/* Refused through a plain URL: not a cluster, unless the server says it is one
		 * (a user not allowed CLUSTER SLOTS on a cluster's node: its keys alone would be a
		 * list short of the others'). */
		const char *info[] = { "INFO", "cluster" };
		char why[400];
		bool denied;
		struct reply *ri = ask(ns, 0, 2, info, deadline, why, sizeof(why), &denied);
		const char *text = ri ? reply_string(ri, NULL) : NULL;
		bool node = text && strstr(text, "cluster_enabled:1");
		reply_free(ri);
		return node ? -1 : 0;
	}
	if (!r)
		return -1;
	for (size_t s = 0; reply_type(r) == REPLY_ARRAY && s < reply_count(r); s++) {
		const struct reply *range = reply_element(r, s), *owner;
		const char *host;
		unsigned port;
		bool known = false;
		if (reply_type(range) != REPLY_ARRAY || reply_count(range) < 3 ||
		    reply_type(owner = reply_element(range, 2)) != REPLY_ARRAY ||
		    reply_count(owner) < 2 ||
		    !(host = reply_string(reply_element(owner, 0), NULL)) ||
		    reply_type(reply_element(owner, 1)) != REPLY_INTEGER)
			continue;
		port = (unsigned)reply_integer(reply_element(owner, 1));
		for (size_t k = 0; k < count; k++)
			known = known || (m[k].port == port && strcmp(m[k].host, host) == 0);
		if (known || count == max)
			continue;
		m[count] = *cluster;
		m[count].cluster = false;
		m[count].hosts = NULL;
		m[count].nhosts = 0;
		m[count].port = port;
		if (!(m[count].host = strdup(host)))
			msg_fatal(STATUS_OSERR, "out of memory");
		count++;
	}
	reply_free(r);
	return (int)count;
}

/* The columns that the character of UTF-8 at s takes on a terminal, and its length in *len:
 * two for a wide one (CJK, most emoji), none for a combining mark, one for a byte that is not
 * UTF-8 (or for anything, where the C library has no UTF-8 locale). Whatever the user's locale:
 * the names are Redis's bytes, and the terminal's are UTF-8 nearly everywhere. */
static int
columns(const char *s, size_t *len)
{
	static locale_t utf8;
	locale_t was;
	mbstate_t state = { 0 };
	wchar_t wc;
	int w = -1;

	*len = 1;
	if (!((unsigned char)*s & 0x80))
		return 1;
	if (!utf8 && !(utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0)))
		return ((unsigned char)*s & 0xc0) != 0x80; /* a character, not a continuation */
	was = uselocale(utf8);
	size_t n = mbrtowc(&wc, s, strnlen(s, MB_LEN_MAX), &state);
	if (n != (size_t)-1 && n != (size_t)-2 && n != 0) {
		*len = n;
		w = wcwidth(wc);
	}
	uselocale(was);
	return w < 0 ? 1 : w;
}

/* s, padded to width columns, a control character (a newline, an escape) as '?': one row a
 * lock, whatever the names Redis holds, and nothing of them sent to the terminal as a command. */
static void
put_column(FILE *out, const char *s, int width)
{
	int n = 0;
	size_t len;

	for (; *s; s += len) {
		n += columns(s, &len);
		if (len == 1)
			fputc(msg_is_control(*s) ? '?' : *s, out);
		else
			fwrite(s, 1, len, out);
	}
	for (; n < width; n++)
		fputc(' ', out);
}

/* What --status says of the holder, in a word after it: kept by --min-hold, cancelled by a newer
 * run, or, on this host, its process gone (the lease runs out by itself) or stopped (it renews
 * nothing). */
static const char *
holder_mark(const struct lock_state *st)
{
	return lock_value_kept(st->value) ? " (kept)"
	       : st->cancelled_by[0]      ? " (cancelled)"
					  : query_process_mark(st->process);
}

/* One line of the table: KEY MODE HOLDER TAKEN LEFT FENCE WAITING. */
static void
text_row(FILE *out, const char *key, const struct lock_state *st)
{
	char who[LOCK_HOLDER_MAX + 32], holder[LOCK_HOLDER_MAX], taken[32] = "-", left[32] = "-";
	char mode[32], fence[24] = "-";
	size_t next;

	if (st->shared)
		snprintf(mode, sizeof(mode), "shared");
	else if (!st->value[0]) /* free: the mode goes with its holders, and it has none */
		snprintf(mode, sizeof(mode), "-");
	else if (st->limit)
		snprintf(mode, sizeof(mode), "limit %d", st->limit);
	else /* a lock whose line lets only the newest wait says so (--queue latest) */
		snprintf(mode, sizeof(mode), "%s",
			 strcmp(lock_discipline_of(st->value), "latest") == 0 ? "latest"
									      : "exclusive");
	lock_describe_holder(st->value, holder, sizeof(holder));
	/* A free lock is listed for its line: one held back, its next waiter not woken, says so. */
	snprintf(who, sizeof(who), "%s%s",
		 st->value[0]                   ? holder
		 : query_stalled(st, &next) < 0 ? "(free)"
						: "(free, next not woken)",
		 holder_mark(st));
	if ((st->shared || st->limit) && st->holders > 1)
		snprintf(who + strlen(who), sizeof(who) - strlen(who), " +%zu", st->holders - 1);
	if (st->held_for >= 0)
		duration_format(st->held_for, taken, sizeof(taken));
	if (st->ttl >= 0)
		duration_format(st->ttl, left, sizeof(left));
	if (st->fence >= 0)
		snprintf(fence, sizeof(fence), "%lld", st->fence);
	put_column(out, key, 24);
	fprintf(out, " %-10s ", mode);
	put_column(out, who, 24);
	fprintf(out, " %8s %8s %16s %7lld\n", taken, left, fence, st->waiting);
}

/* Whether a state read from a key is one of redlock-run's locks, held: a token with an expiry,
 * or a semaphore's or shared lock's holders; or, free, one that a line waits for. */
static bool
a_lock(const struct lock_state *st)
{
	char host[LOCK_HOLDER_MAX];
	long pid;

	if (st->limit || st->shared)
		return st->holders > 0 || st->waiting > 0;
	return (st->held && st->ttl >= 0 &&
		lock_parse_holder(st->value, host, sizeof(host), &pid) == 0) ||
	       (!st->value[0] && st->waiting > 0);
}

/* Whether a server said that the key holds something redlock-run did not write (one of a
 * lock's helper keys, say): no lock, whatever the others said; or, `denied`, whether one refused
 * to say, as the user may not read the key (ACL key patterns): a listing passes it over (SCAN
 * names every key, whoever may read it). */
static bool
somewhere(const struct status *s, bool denied)
{
	for (size_t i = 0; i < s->count; i++)
		if (denied ? s->node[i].st.denied : s->node[i].st.foreign)
			return true;
	return false;
}

/* The servers' eviction settings into s, as --status --json gives them: asked of each server
 * the first time it answers a listing's query (asked[i]), and copied from ev[i] after that. */
static void
eviction(struct nodes *ns, struct status *s, struct eviction *ev, bool *asked)
{
	bool ask = false;

	for (size_t i = 0; i < s->count; i++)
		ask = ask || (s->node[i].st.answered && !asked[i]);
	if (ask) {
		query_ask_eviction(ns, s);
		for (size_t i = 0; i < s->count; i++) {
			if (s->node[i].st.answered && !asked[i]) {
				ev[i] = s->node[i].ev;
				asked[i] = true;
			}
		}
	}
	for (size_t i = 0; i < s->count; i++)
		if (asked[i] && s->node[i].st.answered)
			s->node[i].ev = ev[i];
}

int
query_list(const struct opts *o)
{
	struct nodes *ns = nodes_new(o->urls, o->nurls), *master;
	struct redis_url m[64];
	struct names n = { 0 };
	struct eviction ev[NODES_MAX];
	bool asked[NODES_MAX] = { false }, silent[NODES_MAX] = { false };
	char error[400] = "", failed[NODES_MAX][400] = { "" };
	int64_t timeout = o->connect_timeout; /* for each reply, as --status waits */
	size_t listed = 0, unique = 0, denied = 0;
	int status = 0, count;

	if (!ns)
		msg_fatal(STATUS_OSERR, "cannot set up the list");
	/* Every server's names: a cluster's from each of its masters, asked of the one server
	 * named (a seed). */
	count = o->nurls == 1 && !o->urls[0].master
			? masters(ns, &o->urls[0], m, ARRAY_LEN(m), clock_now() + timeout, error,
				  sizeof(error))
			: 0;
	if (count < 0) {
		msg_error("cannot list the locks: %s", error);
		status = STATUS_UNAVAILABLE;
		goto done;
	}
	/* A server that does not answer is said so, and the others' locks are listed all the
	 * same; the run then ends with 69: the list may lack some. */
	if (count > 0) {
		for (int k = 0; k < count; k++) {
			if (!(master = nodes_new(&m[k], 1)))
				msg_fatal(STATUS_OSERR, "cannot set up the list");
			if (scan(master, 0, o->key, timeout, &n, error, sizeof(error)) < 0) {
				/* (The error names the server.) */
				msg_error("cannot list the locks: %s", error);
				status = nodes_unavailable_status(master);
			}
			nodes_free(master);
			free(m[k].host);
		}
	} else {
		size_t answered = 0;
		/* One that fails is not asked about each lock either: waited for once. */
		for (size_t i = 0; i < nodes_count(ns); i++) {
			if (scan(ns, i, o->key, timeout, &n, failed[i], sizeof(failed[i])) == 0)
				answered++;
			else
				silent[i] = true;
		}
		/* Over a quorum, the servers that answered must be able to hold a lock: the
		 * locks are listed from them. */
		for (size_t i = 0; i < nodes_count(ns); i++)
			if (failed[i][0] && answered >= nodes_quorum(ns))
				msg_error("%s (the locks are listed from the other servers)",
					  failed[i]);
			else if (failed[i][0])
				msg_error("cannot list the locks: %s", failed[i]);
		if (answered < nodes_quorum(ns)) {
			status = nodes_unavailable_status(ns);
			goto done;
		}
	}
	if (n.count) /* (qsort takes no null array, even of nothing) */
		qsort(n.name, n.count, sizeof(*n.name), by_name);
	for (size_t k = 0; k < n.count; k++) {
		if (unique && strcmp(n.name[unique - 1], n.name[k]) == 0)
			free(n.name[k]);
		else
			n.name[unique++] = n.name[k];
	}
	n.count = unique;
	if (!o->json)
		fprintf(stdout, "%-24s %-10s %-24s %8s %8s %16s %7s\n", "KEY", "MODE", "HOLDER",
			"TAKEN", "LEFT", "FENCE", "WAITING");
	for (size_t k = 0; k < n.count; k++) {
		struct status *s = calloc(1, sizeof(*s));
		struct lock l;
		if (!s || lock_init(&l, n.name[k], o->ttl) < 0)
			msg_fatal(STATUS_OSERR, "cannot set up the list");
		query_ask(s, &l, ns, o->connect_timeout, silent);
		/* A server that sat on one query (frozen) is not waited for again: each lock
		 * would cost the whole timeout. One that failed the listing says why. */
		for (size_t i = 0; i < s->count; i++) {
			silent[i] = silent[i] || s->node[i].st.silent;
			if (failed[i][0])
				snprintf(s->node[i].st.error, sizeof(s->node[i].st.error), "%.299s",
					 failed[i]);
		}
		if (!s->decided && somewhere(s, true)) {
			denied++;
		} else if (!s->decided && !somewhere(s, false)) {
			/* It may be held: said, and the list is not the whole truth (69). */
			msg_error("%s", l.error);
			status = nodes_unavailable_status(ns);
			if (o->json) {
				eviction(ns, s, ev, asked);
				query_print_json(stdout, s);
			}
		} else if (s->decided && a_lock(&s->all)) {
			listed++;
			if (o->json) {
				eviction(ns, s, ev, asked);
				query_print_json(stdout, s);
			} else {
				text_row(stdout, n.name[k], &s->all);
			}
		}
		lock_free(&l);
		free(s);
	}
	if (denied)
		msg_warn("passed over %zu key%s that this Redis user may not read (NOPERM)", denied,
			 denied == 1 ? "" : "s");
	/* (A list that lacks a lock it could not tell is not "none".) The prefix is literal and
	 * the pattern a glob: each is named apart. */
	if (!o->json && !listed && status == 0 && !denied) {
		fputs("(no locks held", stdout);
		if (strcmp(o->name, "*"))
			fprintf(stdout, " matching %s", o->name);
		if (o->prefix && *o->prefix)
			fprintf(stdout, " under the prefix %s", o->prefix);
		fputs(")\n", stdout);
	}
done:
	for (size_t k = 0; k < n.count; k++)
		free(n.name[k]);
	free(n.name);
	nodes_free(ns);
	return status;
}
