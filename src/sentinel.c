#include "sentinel.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

struct sentinel {
	const struct redis_url *url;
	/* The master's URL and each Sentinel's: copies of url that share its strings, but own
	 * their host (the master's) or borrow a Sentinel's. */
	struct redis_url master;
	struct redis_url *at;
	struct conn **conns; /* to each Sentinel, opened when asked */
	size_t last;         /* the Sentinel that answered last */
	bool silent;         /* none of them answered when last asked (down, frozen, cut off) */
	bool failed_here;    /* they, or the master they named, could not be reached for want of a
			      * descriptor (or memory) of ours */
	char current[300];   /* the master found last, or "" */
	unsigned moves;      /* how often it changed */
	char moved[700];     /* the last change, said */
	char error[1024];
};

static struct sentinel *
alloc_sentinel(const struct redis_url *url)
{
	struct sentinel *s = calloc(1, sizeof(*s));
	size_t n = url->nhosts;

	if (!s)
		return NULL;
	s->url = url;
	s->master = *url;
	s->master.host = NULL;
	s->at = calloc(n, sizeof(*s->at));
	s->conns = calloc(n, sizeof(*s->conns));
	if (!s->at || !s->conns) {
		sentinel_free(s);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		s->at[i] = (struct redis_url){
			.scheme = url->scheme,
			.host = url->hosts[i].host,
			.port = url->hosts[i].port,
			.user = url->sentinel_user,
			.password = url->sentinel_password,
			.password_from =
				url->sentinel_password ? "$REDLOCK_SENTINEL_PASSWORD" : NULL,
		};
		if (!(s->conns[i] = conn_new(&s->at[i]))) {
			sentinel_free(s);
			return NULL;
		}
	}
	return s;
}

struct sentinel *
sentinel_new(const struct redis_url *url)
{
	return alloc_sentinel(url);
}

void
sentinel_free(struct sentinel *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->conns && i < s->url->nhosts; i++)
		conn_free(s->conns[i]);
	free(s->conns);
	free(s->at);
	free(s->master.host);
	free(s);
}

const struct redis_url *
sentinel_master(const struct sentinel *s)
{
	return &s->master;
}

const char *
sentinel_error(const struct sentinel *s)
{
	return s->error;
}

bool
sentinel_failed_here(const struct sentinel *s)
{
	return s->failed_here;
}

bool
sentinel_answered(const struct sentinel *s)
{
	return s->master.host != NULL || s->current[0];
}

const char *
sentinel_failover(const struct sentinel *s)
{
	return s->moved[0] ? s->moved : NULL;
}

unsigned
sentinel_moves(const struct sentinel *s)
{
	return s->moves;
}

static enum conn_result fail(struct sentinel *s, enum conn_result res, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum conn_result
fail(struct sentinel *s, enum conn_result res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	return res;
}

/* Appends one Sentinel's failure to the list in why. */
static void
note(char *why, size_t size, const char *what)
{
	size_t len = strlen(why);

	if (len + 3 < size)
		snprintf(why + len, size - len, "%s%s", len ? "; " : "", what);
}

/* Reads "ip", "port" from a Sentinel's answer: 0, or -1 if it is not that. */
static int
read_address(const struct reply *r, char *host, size_t size, unsigned *port)
{
	const struct reply *h, *p;
	const char *ps;
	size_t len;
	char *end;
	unsigned long n;

	if (reply_type(r) != REPLY_ARRAY || reply_count(r) != 2 ||
	    reply_type(h = reply_element(r, 0)) != REPLY_STRING ||
	    reply_type(p = reply_element(r, 1)) != REPLY_STRING)
		return -1;
	ps = reply_string(h, &len);
	if (len == 0 || len >= size || memchr(ps, '\0', len))
		return -1;
	memcpy(host, ps, len);
	host[len] = '\0';
	n = strtoul(reply_string(p, NULL), &end, 10);
	if (*end || n == 0 || n > 65535)
		return -1;
	*port = (unsigned)n;
	return 0;
}

/*
 * Asks the Sentinels in turn, the one that answered last first, where the master is: into host
 * and *port. Each gets SENTINEL_ASK_TIMEOUT at most, and no more than its share of the time left
 * until deadline, so that one that is frozen leaves the others time to answer.
 */
static enum conn_result
ask(struct sentinel *s, int64_t deadline, int intr_fd, char *host, size_t size, unsigned *port)
{
	const char *argv[3] = { "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s->url->master };
	size_t lens[3] = { 8, 23, strlen(s->url->master) };
	size_t n = s->url->nhosts, unknown = 0, refused = 0;
	char why[768] = "", line[600];

	s->silent = true;
	s->failed_here = false;
	for (size_t k = 0; k < n; k++) {
		size_t i = (s->last + k) % n;
		struct conn *c = s->conns[i];
		int64_t now = clock_now();
		int64_t share = time_max(deadline - now, 0) / (int64_t)(n - k);
		int64_t until = time_min(deadline, now + time_min(SENTINEL_ASK_TIMEOUT, share));
		struct reply *r = NULL;
		enum conn_result res = CONN_OK;

		if (!conn_check(c))
			res = conn_open(c, until, intr_fd);
		if (res == CONN_OK)
			res = conn_call(c, &r, until, intr_fd, 3, argv, lens);
		if (res == CONN_INTERRUPTED) {
			conn_close(
				c); /* its answer is still to come: the next question's is not it */
			return fail(s, res, "interrupted while asking the Sentinels");
		}
		if (res != CONN_OK) {
			refused += res == CONN_REFUSED;
			s->failed_here = s->failed_here || conn_failed_here(c);
			note(why, sizeof(why), conn_error(c));
			continue;
		}
		s->silent = false;
		s->failed_here = false;
		if (read_address(r, host, size, port) == 0) {
			reply_free(r);
			s->last = i;
			return CONN_OK;
		}
		if (reply_type(r) == REPLY_NIL) {
			unknown++;
		} else {
			snprintf(line, sizeof(line), "Sentinel %s: %s", conn_address(c),
				 reply_type(r) == REPLY_ERROR ? reply_string(r, NULL)
							      : "unexpected reply");
			note(why, sizeof(why), line);
			refused += reply_type(r) == REPLY_ERROR;
			conn_close(c);
		}
		reply_free(r);
	}
	if (unknown)
		return fail(s, CONN_REFUSED, "no Sentinel knows a master named '%s'%s%s",
			    s->url->master, why[0] ? " (" : "", why[0] ? why : "");
	return fail(s, refused == n ? CONN_REFUSED : CONN_FAILED,
		    "no Sentinel of master '%s' could be asked: %s", s->url->master, why);
}

/* Whether the server c is open to says it is a master: ROLE answers "master" first. A server
 * that refuses ROLE (a managed one, or a user without it) is taken at the Sentinels' word,
 * when they gave it (`named`). */
static enum conn_result
confirm_master(struct sentinel *s, struct conn *c, int64_t deadline, int intr_fd, bool named,
	       bool *master)
{
	struct reply *r;
	const struct reply *role;
	enum conn_result res =
		conn_call(c, &r, deadline, intr_fd, 1, (const char *[]){ "ROLE" }, (size_t[]){ 4 });

	if (res != CONN_OK)
		return res;
	*master = (named && reply_type(r) == REPLY_ERROR) ||
		  (reply_type(r) == REPLY_ARRAY && reply_count(r) > 0 &&
		   reply_type(role = reply_element(r, 0)) == REPLY_STRING &&
		   strcmp(reply_string(role, NULL), "master") == 0);
	reply_free(r);
	return CONN_OK;
}

/* The Sentinels named host:port: c is pointed there. */
static int
retarget(struct sentinel *s, struct conn *c, const char *host, unsigned port)
{
	char *h;

	if (s->master.host && strcmp(s->master.host, host) == 0 && s->master.port == port)
		return 0;
	if (!(h = strdup(host)))
		return -1;
	free(s->master.host);
	s->master.host = h;
	s->master.port = port;
	s->master.master = NULL; /* now named by its address */
	conn_reset(c);
	return 0;
}

/* Remembers the master found, and says so when it differs from the one before. */
static void
track(struct sentinel *s)
{
	char now[300];

	url_address(&s->master, now, sizeof(now));
	if (s->current[0] && strcmp(s->current, now) != 0) {
		snprintf(s->moved, sizeof(s->moved),
			 "the master of '%s' moved from %s to %s (a Sentinel failover)",
			 s->url->master, s->current, now);
		s->moves++;
	}
	snprintf(s->current, sizeof(s->current), "%s", now);
}

enum conn_result
sentinel_connect(struct sentinel *s, struct conn *c, int64_t deadline, int intr_fd)
{
	char host[256], where[300];
	unsigned port = 0;
	enum conn_result res;
	bool master, named;

	for (;;) {
		/* With a master found before, the Sentinels get half the time: if none of them
		 * answers, that master stays counted (the man page, SENTINEL AND REPLICAS), as
		 * long as it still says it is one, and the rest of the time is for it. */
		int64_t asked =
			s->master.host ? clock_now() + (deadline - clock_now()) / 2 : deadline;
		res = ask(s, asked, intr_fd, host, sizeof(host), &port);
		named = res == CONN_OK;
		if (res != CONN_OK && res != CONN_INTERRUPTED && s->silent && s->master.host &&
		    strlen(s->master.host) < sizeof(host)) {
			snprintf(host, sizeof(host), "%s", s->master.host);
			port = s->master.port;
			res = CONN_OK;
		}
		if (res != CONN_OK)
			return res;
		if (retarget(s, c, host, port) < 0)
			return fail(s, CONN_FAILED, "out of memory");
		url_address(&s->master, where, sizeof(where));
		res = conn_open(c, deadline, intr_fd);
		if (res == CONN_OK)
			res = confirm_master(s, c, deadline, intr_fd, named, &master);
		if (res != CONN_OK) {
			s->failed_here = conn_failed_here(c); /* (which closing forgets) */
			conn_close(c);
			return fail(s, res, "%s %s as the master of '%s': %s",
				    named ? "the Sentinels name"
					  : "no Sentinel answered; they named",
				    where, s->url->master, conn_error(c));
		}
		if (master) {
			track(s);
			return CONN_OK;
		}
		conn_close(c);
		fail(s, CONN_TIMEOUT, "%s, which %s as the master of '%s', %s", where,
		     named ? "the Sentinels name" : "the Sentinels named last", s->url->master,
		     named ? "is not a master (a failover under way?)"
			   : "does not say it is one (no Sentinel answered)");
		if (clock_now() + SENTINEL_PAUSE >= deadline)
			return CONN_TIMEOUT;
		if (clock_sleep_until(clock_now() + SENTINEL_PAUSE, intr_fd) < 0)
			return fail(s, CONN_INTERRUPTED, "interrupted while asking the Sentinels");
	}
}

bool
sentinel_confirm(struct sentinel *s, struct conn *c, int64_t deadline, int intr_fd)
{
	char host[256];
	unsigned port = 0;

	if (ask(s, deadline, intr_fd, host, sizeof(host), &port) != CONN_OK)
		return false;
	if (s->master.host && strcmp(s->master.host, host) == 0 && s->master.port == port)
		return false;
	conn_close(c);
	return true;
}
