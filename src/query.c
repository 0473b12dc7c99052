#include "query.h"

#include <stdlib.h>

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

void
query_print_json(FILE *out, const char *key, const struct lock_state *st)
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
	fputs("}\n", out);
}

void
query_print_text(FILE *out, const char *key, const struct lock_state *st)
{
	char who[LOCK_HOLDER_MAX], left[32], fence[48] = "never taken";

	if (!st->held) {
		if (st->fence >= 0)
			snprintf(fence, sizeof(fence), "last fence %lld", st->fence);
		fprintf(out, "%s is free (%s)\n", key, fence);
		return;
	}
	if (st->fence >= 0)
		snprintf(fence, sizeof(fence), "fence %lld", st->fence);
	lock_describe_holder(st->value, who, sizeof(who));
	if (st->ttl >= 0)
		fprintf(out, "%s is held by %s for another %s (%s)\n", key, who,
			duration_format(st->ttl, left, sizeof(left)), fence);
	else
		fprintf(out, "%s is held by %s, with no expiry (%s)\n", key, who, fence);
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
		if (o->json)
			query_print_json(stdout, o->key, &st);
		else
			query_print_text(stdout, o->key, &st);
		status = st.held ? o->conflict_status : 0;
	}
	conn_free(c);
	lock_free(&l);
	return status;
}
