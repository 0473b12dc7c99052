#include "query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
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

void
query_print_json(FILE *out, const char *key, const struct lock_state *st,
		 const struct eviction *ev)
{
	char host[LOCK_HOLDER_MAX];
	long pid;
	bool ours = st->held && lock_parse_holder(st->value, host, sizeof(host), &pid) == 0;

	fputs("{\"key\": ", out);
	json_string(out, key);
	fprintf(out, ", \"held\": %s, \"host\": ", st->held ? "true" : "false");
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
	fputs(", \"maxmemory_policy\": ", out);
	if (ev->policy[0])
		json_string(out, ev->policy);
	else
		fputs("null", out);
	fprintf(out, ", \"evictable\": %s}\n",
		!ev->policy[0] ? "null" : query_evictable(ev) ? "true" : "false");
}

void
query_print_text(FILE *out, const char *key, const struct lock_state *st,
		 const struct eviction *ev)
{
	char who[LOCK_HOLDER_MAX], left[32], fence[48] = "never taken";

	if (!st->held) {
		if (st->fence >= 0)
			snprintf(fence, sizeof(fence), "last fence %lld", st->fence);
		fprintf(out, "%s is free (%s)\n", key, fence);
	} else {
		if (st->fence >= 0)
			snprintf(fence, sizeof(fence), "fence %lld", st->fence);
		lock_describe_holder(st->value, who, sizeof(who));
		if (st->ttl >= 0)
			fprintf(out, "%s is held by %s for another %s (%s)\n", key, who,
				duration_format(st->ttl, left, sizeof(left)), fence);
		else
			fprintf(out, "%s is held by %s, with no expiry (%s)\n", key, who, fence);
	}
	if (query_evictable(ev))
		fprintf(out, "warning: this server may evict locks under memory pressure "
			     "(maxmemory-policy %s): set it to noeviction\n",
			ev->policy);
}

/* Reads the eviction settings from INFO memory; leaves ev empty when the server refuses it
 * (managed services and ACL users often may not run INFO). */
static void
ask_eviction(struct conn *c, struct eviction *ev)
{
	struct reply *r;
	const char *text, *p;

	memset(ev, 0, sizeof(*ev));
	if (conn_call(c, &r, clock_now() + LOCK_IO_TIMEOUT, -1, 2, (const char *[]){ "INFO", "memory" },
		      (size_t[]){ 4, 6 }) != CONN_OK)
		return;
	if (reply_type(r) == REPLY_STRING) {
		text = reply_string(r, NULL);
		if ((p = strstr(text, "\nmaxmemory_policy:")))
			sscanf(p + 18, "%31[a-z-]", ev->policy);
		if ((p = strstr(text, "\nmaxmemory:")))
			ev->limit = atoll(p + 11);
	}
	reply_free(r);
}

int
query_status(const struct opts *o)
{
	struct lock l;
	struct lock_state st;
	struct conn *c;
	int status;

	if (lock_init(&l, o->key, o->ttl) < 0 || !(c = conn_new(&o->url)))
		msg_fatal(STATUS_OSERR, "cannot set up the query");
	if (lock_query(&l, c, clock_now() + l.io_timeout, &st) < 0) {
		msg_error("%s", l.error);
		status = STATUS_UNAVAILABLE;
	} else {
		struct eviction ev;
		ask_eviction(c, &ev);
		if (o->json)
			query_print_json(stdout, o->key, &st, &ev);
		else
			query_print_text(stdout, o->key, &st, &ev);
		status = st.held ? o->conflict_status : 0;
	}
	conn_free(c);
	lock_free(&l);
	return status;
}
