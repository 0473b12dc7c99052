#include "conn.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "duration.h"
#include "msg.h"
#include "tls.h"
#include "util.h"

/* How long to wait before knocking again on a Unix socket whose backlog is full. */
#define BACKLOG_PAUSE (10 * NS_PER_MS)

/* How far a connection has come. Until it is open, commands are queued, not sent. */
enum phase {
	PHASE_CLOSED,
	PHASE_CONNECTING, /* a connect is in flight on fd; or, with fd < 0, a Unix socket whose
			   * backlog was full is knocked on again at `until` */
	PHASE_HANDSHAKE,  /* TLS */
	PHASE_HELLO,      /* AUTH and SELECT are out, and nothing else until they are answered */
	PHASE_OPEN,
};

/* Where the next TCP address to try comes from. */
enum source {
	FROM_LAST,     /* the address that worked last time */
	FROM_LITERAL,  /* the host is an address literal */
	FROM_RESOLVER, /* what the host name resolves to */
	FROM_NOWHERE,  /* nothing is left to try */
};

struct conn {
	const struct redis_url *url;
	int fd;
	enum phase phase;
	enum conn_result failure; /* why it was closed, for a wait to report */
	int64_t open_deadline;    /* the opening's; TIME_NEVER once open */
	int64_t open_started;     /* when the opening began */
	int64_t opened_at;        /* when it last became open */
	/* While connecting over TCP: */
	int64_t until;               /* when the address being tried is given up */
	enum source next;            /* where the next address to try comes from */
	bool trying_last;            /* the address being tried is the remembered one */
	struct sockaddr_storage try; /* the address being tried */
	socklen_t try_len;
	struct addrinfo *resolved, *next_resolved;
	int connect_err;               /* why the last address failed */
	short tls_wants;               /* what the TLS handshake waits for */
	bool hello_auth, hello_select; /* answers still due to AUTH and SELECT */
	size_t gate;       /* until open, only this much of out goes out (AUTH, SELECT) */
	unsigned due;      /* replies still to come for commands sent */
	unsigned unwanted; /* how many of those are dropped as they come */
	redisReader *reader;
	size_t reply_left; /* the reader's count (see bounded_array) */
	void *pending;     /* a reply that has arrived, for conn_recv to hand out */
	char *out;         /* formatted commands not yet written */
	size_t out_len, out_sent;
	struct tls *tls;              /* for rediss://, once connected */
	size_t tls_unsent;            /* a TLS write waiting to be tried again: that many bytes */
	bool read_wants_write;        /* a TLS read needs the socket writable first */
	bool received;                /* anything came from the server on this connection */
	bool received_ever;           /* on any opening of this connection: it is no TLS port */
	bool spoke;                   /* a whole reply came on this opening: it speaks RESP */
	bool failed_here;             /* the last failure was this process's own */
	bool for_good;                /* it was a refusal that asking again would not change */
	bool not_now;                 /* the server answered AUTH or SELECT "not now" */
	struct sockaddr_storage last; /* the TCP address that worked last */
	socklen_t last_len;
	char address[300];
	char error[512];
};

/* A reply's arrays, all levels together, have at most this many elements: more are refused
 * before hiredis allocates room for them (a server, or anything posing as one, that says
 * *2000000000 would otherwise cost gigabytes; found by fuzz/fuzz_reply). Ours are small but two:
 * a SCAN page, whose COUNT is only a hint (a page may hold more keys), and CLUSTER SLOTS of a
 * cluster whose slots lie in many ranges (16384 at most, each 3 elements and an array of 4 or
 * so for each of its nodes: 13 with one replica). 4 MiB of pointers at most. */
#define REPLY_MAX_ELEMENTS (16384 * 32)

#if HIREDIS_MAJOR >= 1
typedef size_t array_size;
#else
typedef int array_size;
#endif

static void *(*hiredis_array)(const redisReadTask *, array_size);
static redisReplyObjectFunctions bounded;
static pthread_once_t bounded_once = PTHREAD_ONCE_INIT;

/* The elements a reply's arrays may still have: in the reader's privdata, set anew by each
 * reply's outermost array (its own elements come first, its inner arrays after). */
static void *
bounded_array(const redisReadTask *task, array_size elements)
{
	size_t *left = task->privdata;

	if (!task->parent)
		*left = REPLY_MAX_ELEMENTS;
	if ((size_t)elements > *left)
		return NULL;
	*left -= (size_t)elements;
	return hiredis_array(task, elements);
}

/* hiredis's own table of reply functions, with the array one bounded. */
static void
make_bounded(void)
{
	redisReader *r = redisReaderCreate();

	if (r && r->fn) {
		bounded = *r->fn;
		hiredis_array = r->fn->createArray;
		bounded.createArray = bounded_array;
	}
	if (r)
		redisReaderFree(r);
}

/* A reply parser with hiredis's own reply objects, but bounded arrays, which count what is
 * left of a reply's elements in *left. */
static redisReader *
new_reader(size_t *left)
{
	redisReader *r;

	pthread_once(&bounded_once, make_bounded);
	if ((r = redisReaderCreate()) && hiredis_array) {
		r->fn = &bounded;
		r->privdata = left;
	}
	return r;
}

/*
 * struct reply is hiredis's redisReply under a name of ours: the pointer is converted back
 * and forth, never dereferenced outside this file.
 */
static const redisReply *
as_redis(const struct reply *r)
{
	return (const redisReply *)(const void *)r;
}

int
conn_setup_tls(const struct tls_config *cfg, char *err, size_t size)
{
	return tls_configure(cfg, err, size);
}

bool
conn_has_tls(void)
{
	return tls_available();
}

void
conn_print_libraries(FILE *out)
{
	char err[256];
	const char *openssl = tls_library_version(err, sizeof(err));

	/* hiredis has no run-time version call; its soname changes with every minor version,
	 * so the headers' version is the one that runs. */
	fprintf(out, "hiredis %d.%d.%d\n", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
	if (openssl)
		fprintf(out, "%s (loaded only when a connection uses TLS)\n", openssl);
	else
		fprintf(out, "OpenSSL: %s\n", err);
}

struct conn *
conn_new(const struct redis_url *url)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->url = url;
	c->fd = -1;
	url_address(url, c->address, sizeof(c->address));
	return c;
}

void
conn_free(struct conn *c)
{
	if (!c)
		return;
	conn_close(c);
	free(c);
}

void
conn_reset(struct conn *c)
{
	conn_close(c);
	c->last_len = 0;
}

bool
conn_is_open(const struct conn *c)
{
	return c->phase != PHASE_CLOSED;
}

int
conn_fd(const struct conn *c)
{
	return c->phase == PHASE_OPEN ? c->fd : -1;
}

bool
conn_is_ready(const struct conn *c)
{
	return c->phase == PHASE_OPEN;
}

static enum conn_result read_some(struct conn *c);

bool
conn_check(struct conn *c)
{
	struct pollfd p = { c->fd, POLLIN | POLLRDHUP, 0 };

	if (c->phase != PHASE_OPEN || c->out_len || c->due > c->unwanted || poll(&p, 1, 0) <= 0)
		return c->phase != PHASE_CLOSED;
	/* No answer we want is due. On an idle connection, anything readable is the end of it
	 * (over TLS, unless it is TLS's own: a session ticket, which reading takes in); behind
	 * answers we no longer want, a hang-up is: what went out now would never be answered. */
	if (c->due ? p.revents & (POLLRDHUP | POLLHUP | POLLERR)
		   : !c->tls || read_some(c) != CONN_OK || c->pending ||
			     redisReaderGetReply(c->reader, &c->pending) != REDIS_OK || c->pending)
		conn_close(c);
	return c->phase != PHASE_CLOSED;
}

void
conn_close(struct conn *c)
{
	tls_free(c->tls);
	c->tls = NULL;
	c->tls_unsent = 0;
	c->read_wants_write = c->received = c->spoke = false;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->phase = PHASE_CLOSED;
	if (c->resolved)
		freeaddrinfo(c->resolved);
	c->resolved = c->next_resolved = NULL;
	c->hello_auth = c->hello_select = false;
	c->failed_here = c->for_good = c->not_now = false;
	c->gate = 0;
	c->due = c->unwanted = 0;
	if (c->reader)
		redisReaderFree(c->reader);
	c->reader = NULL;
	if (c->pending)
		freeReplyObject(c->pending);
	c->pending = NULL;
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_sent = 0;
}

bool
conn_tls_resumed(const struct conn *c)
{
	return c->tls && tls_resumed(c->tls);
}

bool
conn_error_not_now(const char *error)
{
	static const char *const prefixes[] = { "LOADING ", "BUSY ", "MASTERDOWN ",
						"ERR max number of clients" };

	for (size_t i = 0; i < ARRAY_LEN(prefixes); i++)
		if (strncmp(error, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

bool
conn_not_now(const struct conn *c)
{
	return c->phase == PHASE_CLOSED && c->failure == CONN_FAILED && c->not_now;
}

bool
conn_refused(const struct conn *c)
{
	return c->phase == PHASE_CLOSED && c->failure == CONN_REFUSED && c->for_good;
}

const char *
conn_error(const struct conn *c)
{
	return c->error;
}

bool
conn_failed_here(const struct conn *c)
{
	return c->failed_here;
}

const char *
conn_address(const struct conn *c)
{
	return c->address;
}

int64_t
conn_opened_at(const struct conn *c)
{
	return c->opened_at;
}

unsigned
conn_due(const struct conn *c)
{
	return c->due - c->unwanted;
}

void
conn_forget(struct conn *c)
{
	c->unwanted = c->due;
	if (c->pending) {
		freeReplyObject(c->pending);
		c->pending = NULL;
	}
}

static enum conn_result fail(struct conn *c, enum conn_result result, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records why the connection failed, closes it and returns result, which a wait on it
 * reports until it is opened again. */
static enum conn_result
fail(struct conn *c, enum conn_result result, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	conn_close(c);
	c->failure = result;
	return result;
}

static enum conn_result
fail_errno(struct conn *c, const char *what, int err)
{
	char buf[128];
	/* Out of descriptors or memory as it connected: the server was never asked
	 * (conn_failed_here). */
	bool here = c->phase == PHASE_CONNECTING &&
		    (err == EMFILE || err == ENFILE || err == ENOMEM || err == ENOBUFS);

	/* A TLS port resets a plain client that spoke first; so does a server killed then. */
	fail(c, CONN_FAILED, "%s %s: %s%s", what, c->address, msg_strerror(err, buf, sizeof(buf)),
	     err == ECONNRESET && !c->received_ever && c->url->scheme == URL_TCP
		     ? " (a TLS port? use rediss://; else the server went away)"
		     : "");
	c->failed_here = here;
	return CONN_FAILED;
}

/* The message for an opening that ran out of time, by how far it had come. */
static enum conn_result
open_timed_out(struct conn *c)
{
	switch (c->phase) {
	case PHASE_CONNECTING: {
		/* How long it had: a request whose time was nearly up when it came to connecting
		 * (after a failover's pauses) is not a server that does not answer. */
		char within[32], buf[128];
		int64_t had = c->open_deadline - c->open_started;
		/* (A Unix socket whose backlog stayed full was knocked on until then: busy.) */
		int err = c->fd < 0 && c->connect_err == EAGAIN ? EAGAIN : ETIMEDOUT;
		if (had < NS_PER_MS)
			return fail(c, CONN_FAILED,
				    "no time was left to connect to %s (the request's time ran out "
				    "before)",
				    c->address);
		return fail(c, CONN_FAILED, "cannot connect to %s within %s: %s", c->address,
			    duration_format(had, within, sizeof(within)),
			    msg_strerror(err, buf, sizeof(buf)));
	}
	case PHASE_HANDSHAKE:
		/* A plain server takes the TLS hello for the start of an inline command, and
		 * waits for the rest of it; one that spoke TLS to us before is no plain port. */
		return fail(c, CONN_TIMEOUT, "no TLS handshake with %s in time (%s)", c->address,
			    c->received_ever ? "the server is frozen or overloaded"
					     : "a plain port? use redis://; else the server is "
					       "frozen or overloaded");
	default:
		return fail(c, CONN_TIMEOUT, "no reply from %s in time", c->address);
	}
}

static enum conn_result write_some(struct conn *c);

/* Formats a command onto the queue: at its end, or at its front (AUTH and SELECT, which
 * must go out before anything queued while connecting). -1 when out of memory. */
static int
queue(struct conn *c, int argc, const char **argv, const size_t *argvlen, bool front)
{
	char *cmd, *grown;
	int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);

	if (len < 0)
		return -1;
	if (!(grown = realloc(c->out, c->out_len + (size_t)len))) {
		redisFreeCommand(cmd);
		return -1;
	}
	c->out = grown;
	if (front) {
		memmove(c->out + c->out_sent + len, c->out + c->out_sent, c->out_len - c->out_sent);
		memcpy(c->out + c->out_sent, cmd, (size_t)len);
		c->gate += (size_t)len;
	} else {
		memcpy(c->out + c->out_len, cmd, (size_t)len);
	}
	c->out_len += (size_t)len;
	redisFreeCommand(cmd);
	return 0;
}

/* Open for business: what was queued while connecting goes out now. */
static void
open_up(struct conn *c)
{
	c->phase = PHASE_OPEN;
	c->opened_at = clock_now();
	c->open_deadline = TIME_NEVER;
	if (c->out_len)
		write_some(c);
}

/*
 * Authenticates and selects the db when the URL asks for them. Both go out together, ahead of
 * anything queued, and are answered before anything else is sent, so that nothing can run as
 * the wrong user or in the wrong db. A user without a password still authenticates (as an
 * ACL user with nopass would).
 */
static void
greet(struct conn *c)
{
	const struct redis_url *u = c->url;
	const char *argv[3] = { "AUTH" };
	size_t lens[3] = { 4 };
	int argc = 1;
	char db[16];

	if (!(c->reader = new_reader(&c->reply_left))) {
		fail(c, CONN_FAILED, "cannot connect to %s: out of memory", c->address);
		return;
	}
	c->gate = 0;
	if (u->db) {
		snprintf(db, sizeof(db), "%d", u->db);
		if (queue(c, 2, (const char *[]){ "SELECT", db }, (size_t[]){ 6, strlen(db) },
			  true) < 0) {
			fail(c, CONN_FAILED, "cannot connect to %s: out of memory", c->address);
			return;
		}
		c->hello_select = true;
	}
	if (u->user || u->password) {
		if (u->user) {
			argv[argc] = u->user;
			lens[argc++] = strlen(u->user);
		}
		argv[argc] = u->password ? u->password : "";
		lens[argc] = strlen(argv[argc]);
		argc++;
		if (queue(c, argc, argv, lens, true) < 0) {
			fail(c, CONN_FAILED, "cannot connect to %s: out of memory", c->address);
			return;
		}
		c->hello_auth = true;
	}
	if (!c->hello_auth && !c->hello_select) {
		open_up(c);
		return;
	}
	c->phase = PHASE_HELLO;
	write_some(c);
}

/* The server said "not now" (conn_error_not_now) as c opened: asking again may well do, an
 * outage rather than a refusal. */
static void
fail_not_now(struct conn *c, const char *error)
{
	fail(c, CONN_FAILED, "%s cannot take a client now: %.*s", c->address,
	     msg_quoted_len(error, strlen(error)), error);
	c->not_now = true;
}

/* Checks the answer to AUTH or SELECT (in that order); a refusal closes the connection. */
static void
hello_answer(struct conn *c, const redisReply *r)
{
	bool auth = c->hello_auth;

	if (auth)
		c->hello_auth = false;
	else
		c->hello_select = false;
	if (r->type == REDIS_REPLY_ERROR && conn_error_not_now(r->str)) {
		fail_not_now(c, r->str);
		return;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		/* Where the password came from, or that there was none (a user alone). */
		const char *whence = c->url->password_from ? "; the password came from " : "",
			   *from = c->url->password_from ? c->url->password_from : "";
		if (!c->url->password)
			whence = "; no password was given (redis://USER:PASSWORD@HOST, or "
				 "--password-file)";
		if (!auth)
			fail(c, CONN_REFUSED, "cannot select db %d on %s: %s", c->url->db,
			     c->address, r->str);
		else if (c->url->user && !c->url->password)
			/* Not named: redis-cli reads redis://SECRET@HOST as a password alone. */
			fail(c, CONN_REFUSED,
			     "authentication as the URL's user, with no password, refused by %s: "
			     "%.*s; a password goes after the user (redis://USER:PASSWORD@HOST, or "
			     "--password-file), or alone: redis://:PASSWORD@HOST",
			     c->address, msg_quoted_len(r->str, strlen(r->str)), r->str);
		else if (c->url->user)
			fail(c, CONN_REFUSED, "authentication as '%s' refused by %s: %.*s%s%s",
			     c->url->user, c->address, msg_quoted_len(r->str, strlen(r->str)),
			     r->str, whence, from);
		else
			fail(c, CONN_REFUSED, "authentication refused by %s: %.*s%s%s", c->address,
			     msg_quoted_len(r->str, strlen(r->str)), r->str, whence, from);
		c->for_good = true;
		return;
	}
	if (!c->hello_auth && !c->hello_select)
		open_up(c);
}

/*
 * The TLS handshake, a step further. A certificate that is not accepted, or a server that does
 * not speak TLS, is CONN_REFUSED: asking again would not change the answer.
 */
static void
shake(struct conn *c)
{
	char why[400];

	switch (tls_handshake(c->tls, why, sizeof(why))) {
	case TLS_DONE:
		greet(c);
		return;
	case TLS_WANT_READ:
		c->tls_wants = POLLIN;
		return;
	case TLS_WANT_WRITE:
		c->tls_wants = POLLOUT;
		return;
	case TLS_CLOSED:
		fail(c, CONN_FAILED, "%s closed the connection during the TLS handshake%s",
		     c->address, tls_closed_hint(c->tls));
		return;
	default:
		fail(c, CONN_REFUSED, "TLS with %s refused: %s", c->address, why);
		c->for_good = true;
		return;
	}
}

/* The socket is connected: on to TLS, or straight to the greeting. */
static void
connected(struct conn *c)
{
	char why[400];
	int one = 1;

	if (c->url->scheme != URL_UNIX) {
		/* Requests are small and each waits for its reply: never let Nagle hold one
		 * back. */
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		memcpy(&c->last, &c->try, c->try_len);
		c->last_len = c->try_len;
	}
	if (c->resolved)
		freeaddrinfo(c->resolved);
	c->resolved = c->next_resolved = NULL;
	if (c->url->scheme != URL_TLS) {
		greet(c);
		return;
	}
	if (!(c->tls = tls_new(c->fd, c->url->host, c->url->port, why, sizeof(why)))) {
		fail(c, CONN_REFUSED, "cannot connect to %s: %s", c->address, why);
		return;
	}
	c->phase = PHASE_HANDSHAKE;
	shake(c);
}

/* Whether this process could open one more descriptor; false, with errno EMFILE or ENFILE, when
 * it is out of them. */
static bool
descriptor_to_spare(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd >= 0 || (errno != EMFILE && errno != ENFILE);
}

/*
 * The next TCP address to try, into c->try, in this order: the one that worked last time
 * (reconnecting needs no resolver; it gets half the time, and is
 * forgotten when it fails: the name may point elsewhere by now), an address literal (no NSS,
 * no DNS, no /etc/hosts), or what the name resolves to. 1, 0 when none is left, or -1 when the
 * name cannot be resolved (c is closed then).
 */
static int
next_address(struct conn *c, int64_t now)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(c->url->port) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(c->url->port) };
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	char port[8];
	int gai;

	c->trying_last = false;
	c->until = c->open_deadline;
	if (c->next == FROM_LAST) {
		c->next = FROM_LITERAL;
		if (c->last_len > 0) {
			memcpy(&c->try, &c->last, c->last_len);
			c->try_len = c->last_len;
			c->trying_last = true;
			c->until = now + (c->open_deadline - now) / 2;
			return 1;
		}
	}
	if (c->next == FROM_LITERAL) {
		c->next = FROM_NOWHERE;
		if (inet_pton(AF_INET, c->url->host, &in4.sin_addr) == 1) {
			memcpy(&c->try, &in4, sizeof(in4));
			c->try_len = sizeof(in4);
			return 1;
		}
		if (inet_pton(AF_INET6, c->url->host, &in6.sin6_addr) == 1) {
			memcpy(&c->try, &in6, sizeof(in6));
			c->try_len = sizeof(in6);
			return 1;
		}
		snprintf(port, sizeof(port), "%u", c->url->port);
		if ((gai = getaddrinfo(c->url->host, port, &hints, &c->resolved)) != 0) {
			char buf[128];
			int err = gai == EAI_SYSTEM ? errno : gai == EAI_MEMORY ? ENOMEM : 0;
			c->resolved = NULL;
			/* The resolver says "not known" of a name it could not look up for want
			 * of a descriptor (it opens /etc/hosts): ours, when we have none to spare.
			 */
			if (!err && !descriptor_to_spare())
				err = errno;
			fail(c, CONN_FAILED, "cannot resolve %s: %s", c->url->host,
			     err ? msg_strerror(err, buf, sizeof(buf)) : gai_strerror(gai));
			c->failed_here = err == EMFILE || err == ENFILE || err == ENOMEM;
			return -1;
		}
		c->next_resolved = c->resolved;
		c->next = FROM_RESOLVER;
	}
	while (c->next == FROM_RESOLVER && c->next_resolved) {
		struct addrinfo *ai = c->next_resolved;
		c->next_resolved = ai->ai_next;
		if (ai->ai_addrlen > sizeof(c->try))
			continue;
		memcpy(&c->try, ai->ai_addr, ai->ai_addrlen);
		c->try_len = ai->ai_addrlen;
		return 1;
	}
	c->next = FROM_NOWHERE;
	return 0;
}

/* The address being tried failed with err: forget it if it was the remembered one. */
static void
address_failed(struct conn *c, int err)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->connect_err = err;
	if (c->trying_last)
		c->last_len = 0;
}

/*
 * Starts a connect without waiting for it: c is then CONNECTING with the connect in flight,
 * or further along when it connected at once, or closed with the reason when no address
 * takes it. A Unix listener whose backlog is full (EAGAIN) is a busy server, not a missing
 * one: it is knocked on again shortly, until the deadline.
 */
static void
try_connect(struct conn *c)
{
	c->phase = PHASE_CONNECTING;
	for (;;) {
		int64_t now = clock_now();
		int fd;

		if (c->url->scheme == URL_UNIX) {
			struct sockaddr_un sun = { .sun_family = AF_UNIX };
			/* url_parse made sure the path fits. */
			snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", c->url->path);
			if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) <
			    0) {
				fail_errno(c, "cannot connect to", errno);
				return;
			}
			if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
				c->fd = fd;
				connected(c);
				return;
			}
			c->connect_err = errno;
			close(fd);
			if (c->connect_err == EAGAIN && now + BACKLOG_PAUSE < c->open_deadline) {
				c->until = now + BACKLOG_PAUSE;
				return;
			}
			fail_errno(c, "cannot connect to", c->connect_err);
			return;
		}
		switch (next_address(c, now)) {
		case -1:
			return;
		case 0:
			fail_errno(c, "cannot connect to",
				   c->connect_err ? c->connect_err : ENOENT);
			return;
		}
		fd = socket(c->try.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			address_failed(c, errno);
			continue;
		}
		c->fd = fd;
		if (connect(fd, (struct sockaddr *)&c->try, c->try_len) == 0) {
			connected(c);
			return;
		}
		if (errno == EINPROGRESS)
			return;
		address_failed(c, errno);
	}
}

/* The connect in flight has finished, one way or the other. */
static void
finish_connect(struct conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (!err) {
		connected(c);
		return;
	}
	address_failed(c, err);
	try_connect(c);
}

/* The time for the address being tried has run out (or a busy Unix socket may be knocked on
 * again). */
static void
connect_timer(struct conn *c, int64_t now)
{
	if (c->fd < 0 && now < c->open_deadline) {
		try_connect(c);
	} else if (c->trying_last && now < c->open_deadline) {
		address_failed(c, ETIMEDOUT);
		try_connect(c);
	} else {
		open_timed_out(c);
	}
}

enum conn_result
conn_start(struct conn *c, int64_t deadline)
{
	char was[sizeof(c->address)];

	conn_close(c);
	c->failure = CONN_OK;
	/* The URL may point elsewhere by now (a Sentinel named another master, a cluster's
	 * server was given up on): the address that worked for the old place is not tried. */
	memcpy(was, c->address, sizeof(was));
	url_address(c->url, c->address, sizeof(c->address));
	if (strcmp(was, c->address) != 0)
		c->last_len = 0;
	if (c->url->scheme == URL_TLS && !tls_available())
		return fail(c, CONN_REFUSED, "cannot connect to %s: this build has no TLS support",
			    c->address);
	c->open_deadline = deadline;
	c->open_started = clock_now();
	c->next = FROM_LAST;
	c->connect_err = 0;
	try_connect(c);
	return c->phase == PHASE_CLOSED ? c->failure : CONN_OK;
}

/* The server closed the connection (a TLS one may have refused our certificate). */
static enum conn_result
closed_by_server(struct conn *c)
{
	return fail(c, CONN_FAILED, "%s closed the connection%s", c->address,
		    c->tls ? tls_closed_hint(c->tls) : "");
}

/*
 * A server that closed the connection as we wrote to it may have said why first, ahead of any
 * answer (one with as many clients as it takes does): then that error, if it is there to read,
 * is the failure. True when it was (c is closed then).
 */
static bool
said_why(struct conn *c)
{
	char buf[512], *end;
	ssize_t n = c->received ? -1 : recv(c->fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	if (n < 3 || buf[0] != '-')
		return false;
	buf[n] = '\0';
	if (!(end = strstr(buf, "\r\n")))
		return false;
	*end = '\0';
	if (conn_error_not_now(buf + 1))
		fail_not_now(c, buf + 1);
	else
		fail(c, CONN_FAILED, "%s closed the connection: %.*s", c->address,
		     msg_quoted_len(buf + 1, strlen(buf + 1)), buf + 1);
	return true;
}

/* How much of the queue may go out now. */
static size_t
sendable(const struct conn *c)
{
	return c->phase == PHASE_OPEN ? c->out_len : c->phase == PHASE_HELLO ? c->gate : 0;
}

/* Writes what it can of the queued commands without blocking: CONN_OK, or CONN_FAILED (the
 * connection is closed then, with the reason). */
static enum conn_result
write_some(struct conn *c)
{
	size_t end = sendable(c);
	ssize_t n;

	if (c->out_sent >= end && !c->tls_unsent)
		return CONN_OK;
	if (c->tls) {
		size_t put, size = c->tls_unsent ? c->tls_unsent : end - c->out_sent;
		char why[400];

		switch (tls_write(c->tls, c->out + c->out_sent, size, &put, why, sizeof(why))) {
		case TLS_DONE:
			c->tls_unsent = 0;
			n = (ssize_t)put;
			break;
		case TLS_WANT_READ:
		case TLS_WANT_WRITE:
			c->tls_unsent = size; /* tried again with the same bytes */
			return CONN_OK;
		case TLS_CLOSED:
			return closed_by_server(c);
		default: /* (as a read finds it: a refusal, such as a certificate it demanded) */
			return fail(c, CONN_REFUSED, "lost the connection to %s: %s", c->address,
				    why);
		}
	} else if ((n = send(c->fd, c->out + c->out_sent, end - c->out_sent,
			     MSG_NOSIGNAL | MSG_DONTWAIT)) < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return CONN_OK;
		if ((errno == EPIPE || errno == ECONNRESET) && said_why(c))
			return c->failure;
		return fail_errno(c, "lost the connection to", errno);
	}
	c->out_sent += (size_t)n;
	if (c->out_sent == c->out_len) {
		free(c->out);
		c->out = NULL;
		c->out_len = c->out_sent = c->gate = 0;
	}
	return CONN_OK;
}

int
conn_send(struct conn *c, int argc, const char **argv, const size_t *argvlen)
{
	if (c->phase == PHASE_CLOSED) {
		fail(c, CONN_FAILED, "not connected to %s", c->address);
		return -1;
	}
	if (queue(c, argc, argv, argvlen, false) < 0) {
		fail(c, CONN_FAILED, "cannot send to %s: out of memory", c->address);
		return -1;
	}
	c->due++;
	/* Out at once, so that it is on its way while the caller does other work; what does
	 * not fit, or waits for the connection to open, goes out as the caller waits. */
	return write_some(c) == CONN_OK ? 0 : -1;
}

int
conn_nudge(struct conn *c)
{
	char *grown;

	if (c->phase != PHASE_OPEN)
		return -1;
	if (!(grown = realloc(c->out, c->out_len + 2)))
		return -1;
	c->out = grown;
	memcpy(c->out + c->out_len, "\r\n", 2);
	c->out_len += 2;
	return write_some(c) == CONN_OK ? 0 : -1;
}

/* Feeds what arrived to the reply parser. */
static enum conn_result
feed(struct conn *c, const char *buf, size_t n)
{
	/* 0x15 and 0x16 begin TLS alert and handshake records: no RESP reply does. */
	if (!c->received && !c->tls && (buf[0] == 0x15 || buf[0] == 0x16))
		return fail(c, CONN_REFUSED, "%s speaks TLS: use rediss://", c->address);
	c->received = c->received_ever = true;
	if (redisReaderFeed(c->reader, buf, n) != REDIS_OK)
		return fail(c, CONN_FAILED, "cannot read from %s: out of memory", c->address);
	return CONN_OK;
}

/* Reads what has arrived without blocking; over TLS, everything OpenSSL can decrypt, so that
 * no reply is left inside it while we wait on the socket. */
static enum conn_result
read_some(struct conn *c)
{
	char buf[16384];
	ssize_t n;

	c->read_wants_write = false;
	while (c->tls) {
		char why[400];
		size_t got;
		enum conn_result res;

		switch (tls_read(c->tls, buf, sizeof(buf), &got, why, sizeof(why))) {
		case TLS_DONE:
			if ((res = feed(c, buf, got)) != CONN_OK)
				return res;
			continue;
		case TLS_WANT_READ:
			return CONN_OK;
		case TLS_WANT_WRITE:
			c->read_wants_write = true;
			return CONN_OK;
		case TLS_CLOSED:
			return closed_by_server(c);
		default:
			return fail(c, CONN_REFUSED, "lost the connection to %s: %s", c->address,
				    why);
		}
	}
	n = recv(c->fd, buf, sizeof(buf), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return CONN_OK;
	if (n < 0)
		return fail_errno(c, "lost the connection to", errno);
	if (n == 0)
		return closed_by_server(c);
	return feed(c, buf, (size_t)n);
}

/* Takes whole replies from the parser: the greeting's are checked, unwanted ones dropped, and
 * the next one for the caller kept in pending. */
static void
take_replies(struct conn *c)
{
	while (c->phase >= PHASE_HELLO && !c->pending) {
		void *r;

		if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
			/* Before any reply: not a Redis server at all (a wrong port), which asking
			 * again would not change. */
			fail(c, c->spoke ? CONN_FAILED : CONN_REFUSED,
			     "protocol error from %s: %s (is it a Redis server?)", c->address,
			     c->reader->errstr);
			c->for_good = !c->spoke;
			return;
		}
		if (!r)
			return;
		c->spoke = true;
		if (c->phase == PHASE_HELLO) {
			hello_answer(c, r);
			freeReplyObject(r);
			continue;
		}
		if (c->due)
			c->due--;
		if (c->unwanted) {
			c->unwanted--;
			freeReplyObject(r);
			continue;
		}
		c->pending = r;
	}
}

/* What c waits for: the poll events on its fd, and (in *wake) when it must be looked at
 * whatever happens. */
static short
wants(const struct conn *c, int64_t *wake)
{
	switch (c->phase) {
	case PHASE_CLOSED:
		return 0;
	case PHASE_CONNECTING:
		*wake = time_min(*wake, c->until);
		return c->fd >= 0 ? POLLOUT : 0;
	case PHASE_HANDSHAKE:
		*wake = time_min(*wake, c->open_deadline);
		return c->tls_wants;
	default:
		*wake = time_min(*wake, c->open_deadline);
		return (short)(POLLIN |
			       (c->out_sent < sendable(c) || c->tls_unsent || c->read_wants_write
					? POLLOUT
					: 0));
	}
}

/* Takes c as far as the socket (revents) and the time allow. */
static void
step(struct conn *c, short revents, int64_t now)
{
	switch (c->phase) {
	case PHASE_CLOSED:
		return;
	case PHASE_CONNECTING:
		if (c->fd >= 0 && revents)
			finish_connect(c);
		else if (now >= c->until)
			connect_timer(c, now);
		return;
	case PHASE_HANDSHAKE:
		if (revents)
			shake(c);
		else if (now >= c->open_deadline)
			open_timed_out(c);
		return;
	default:
		/* Over TLS a write may wait for the socket to be readable, and a read for it to
		 * be writable: both are tried whenever the socket is ready at all. */
		if (revents && (revents & POLLOUT || c->tls) && write_some(c) != CONN_OK)
			return;
		if (revents && (revents & (POLLIN | POLLHUP | POLLERR) || c->read_wants_write) &&
		    read_some(c) != CONN_OK)
			return;
		take_replies(c);
		if (c->phase == PHASE_HELLO && now >= c->open_deadline)
			open_timed_out(c);
		return;
	}
}

static bool
answered(const struct conn *c)
{
	return c->pending || c->phase == PHASE_CLOSED;
}

static bool
settled(const struct conn *c)
{
	return c->phase == PHASE_OPEN || c->phase == PHASE_CLOSED;
}

/*
 * One poll loop over n connections: drives each as far as it can go until done() holds for
 * one of them (*which, the first in order), the deadline passes, or intr_fd (-1 for none) is
 * readable; what has arrived wins over an interruption.
 */
static enum conn_result
drive(struct conn *const *cs, size_t n, bool (*done)(const struct conn *), int64_t deadline,
      int intr_fd, size_t *which)
{
	struct pollfd p[CONN_WAIT_MAX + 1];
	size_t at[CONN_WAIT_MAX];
	bool interrupted = false;

	assert(n <= CONN_WAIT_MAX);
	for (;;) {
		int64_t now, wake = deadline;
		size_t np = 0;
		short revents[CONN_WAIT_MAX] = { 0 };
		int k;

		for (size_t i = 0; i < n; i++) {
			/* A read may have brought several replies: the next is taken from the
			 * parser before the socket is waited on. */
			take_replies(cs[i]);
			if (done(cs[i])) {
				*which = i;
				return CONN_OK;
			}
		}
		if (interrupted)
			return CONN_INTERRUPTED;
		now = clock_now();
		if (now >= deadline)
			return CONN_TIMEOUT;
		for (size_t i = 0; i < n; i++) {
			short ev = wants(cs[i], &wake);
			if (ev) {
				p[np] = (struct pollfd){ cs[i]->fd, ev, 0 };
				at[np++] = i;
			}
		}
		p[np] = (struct pollfd){ intr_fd, POLLIN, 0 };
		k = clock_poll(p, np + (intr_fd >= 0), time_max(wake - now, 0));
		if (k < 0 && errno != EINTR) {
			int err = errno;
			for (size_t i = 0; i < n; i++)
				fail_errno(cs[i], "lost the connection to", err);
			continue;
		}
		for (size_t j = 0; k > 0 && j < np; j++)
			revents[at[j]] = p[j].revents;
		interrupted = k > 0 && intr_fd >= 0 && p[np].revents;
		now = clock_now();
		for (size_t i = 0; i < n; i++)
			step(cs[i], revents[i], now);
	}
}

enum conn_result
conn_open(struct conn *c, int64_t deadline, int intr_fd)
{
	size_t which;
	enum conn_result res = conn_start(c, deadline);

	if (res != CONN_OK)
		return res;
	res = drive(&c, 1, settled, deadline, intr_fd, &which);
	if (res == CONN_INTERRUPTED)
		return fail(c, res, "interrupted while connecting to %s", c->address);
	if (res == CONN_TIMEOUT)
		return open_timed_out(c);
	return c->phase == PHASE_OPEN ? CONN_OK : c->failure;
}

/* What a wait reports for a closed connection. */
static enum conn_result
failure(struct conn *c)
{
	if (c->failure == CONN_OK)
		return fail(c, CONN_FAILED, "not connected to %s", c->address);
	return c->failure;
}

enum conn_result
conn_wait(struct conn *c, int64_t deadline, int intr_fd)
{
	size_t which;
	enum conn_result res = drive(&c, 1, answered, deadline, intr_fd, &which);

	if (res != CONN_OK || c->pending)
		return res;
	return failure(c);
}

enum conn_result
conn_wait_any(struct conn *const *cs, size_t n, int64_t deadline, int intr_fd, size_t *which)
{
	return drive(cs, n, answered, deadline, intr_fd, which);
}

enum conn_result
conn_recv(struct conn *c, struct reply **reply, int64_t deadline, int intr_fd)
{
	enum conn_result res = conn_wait(c, deadline, intr_fd);

	/* A reply that comes after we stopped waiting would be taken for the answer to the
	 * next request: a connection that timed out is closed. */
	if (res == CONN_TIMEOUT && c->phase != PHASE_CLOSED) /* not a timeout reported */
		return c->phase == PHASE_OPEN
			       ? fail(c, CONN_TIMEOUT, "no reply from %s in time", c->address)
			       : open_timed_out(c);
	if (res == CONN_OK) {
		*reply = c->pending;
		c->pending = NULL;
	}
	return res;
}

enum conn_result
conn_call(struct conn *c, struct reply **reply, int64_t deadline, int intr_fd, int argc,
	  const char **argv, const size_t *argvlen)
{
	if (conn_send(c, argc, argv, argvlen) < 0)
		return c->failure;
	return conn_recv(c, reply, deadline, intr_fd);
}

struct reply *
reply_parse(const char *buf, size_t len)
{
	size_t left;
	redisReader *reader = new_reader(&left);
	void *r = NULL, *more = NULL;

	if (!reader)
		return NULL;
	if (redisReaderFeed(reader, buf, len) != REDIS_OK ||
	    redisReaderGetReply(reader, &r) != REDIS_OK || !r ||
	    redisReaderGetReply(reader, &more) != REDIS_OK || more || reader->pos != reader->len) {
		if (r)
			freeReplyObject(r);
		if (more)
			freeReplyObject(more);
		r = NULL;
	}
	redisReaderFree(reader);
	return r;
}

enum reply_type
reply_type(const struct reply *r)
{
	switch (as_redis(r)->type) {
	case REDIS_REPLY_STRING:
		return REPLY_STRING;
	case REDIS_REPLY_ARRAY:
		return REPLY_ARRAY;
	case REDIS_REPLY_INTEGER:
		return REPLY_INTEGER;
	case REDIS_REPLY_NIL:
		return REPLY_NIL;
	case REDIS_REPLY_STATUS:
		return REPLY_STATUS;
	case REDIS_REPLY_ERROR:
		return REPLY_ERROR;
	default:
		return REPLY_OTHER;
	}
}

long long
reply_integer(const struct reply *r)
{
	return as_redis(r)->integer;
}

const char *
reply_string(const struct reply *r, size_t *len)
{
	const redisReply *rr = as_redis(r);

	if (len)
		*len = rr->str ? rr->len : 0;
	return rr->str ? rr->str : "";
}

size_t
reply_count(const struct reply *r)
{
	return as_redis(r)->type == REDIS_REPLY_ARRAY ? as_redis(r)->elements : 0;
}

const struct reply *
reply_element(const struct reply *r, size_t i)
{
	return (const struct reply *)(const void *)as_redis(r)->element[i];
}

void
reply_free(struct reply *r)
{
	freeReplyObject(r);
}
