#include "conn.h"

#include <arpa/inet.h>
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
#include "msg.h"
#include "tls.h"

/* How long to wait before knocking again on a Unix socket whose backlog is full. */
#define BACKLOG_PAUSE (10 * NS_PER_MS)

struct conn {
	const struct redis_url *url;
	int fd;
	redisReader *reader;
	void *pending; /* a reply conn_wait found ready, for conn_recv to hand out */
	char *out;     /* formatted commands not yet written */
	size_t out_len, out_sent;
	struct tls *tls;       /* for rediss://, once connected */
	size_t tls_unsent;     /* a TLS write waiting to be tried again: that many bytes */
	bool read_wants_write; /* a TLS read needs the socket writable first */
	bool received;         /* anything came from the server on this connection */
	struct sockaddr_storage last; /* the TCP address that worked last */
	socklen_t last_len;
	char address[300];
	char error[512];
};

/* No reply of ours has more than a few elements: an array header that announces more is
 * refused before hiredis allocates room for them (a server, or anything posing as one, that
 * says *2000000000 would otherwise cost gigabytes; found by fuzz/fuzz_reply). */
#define REPLY_MAX_ELEMENTS 1024

#if HIREDIS_MAJOR >= 1
typedef size_t array_size;
#else
typedef int array_size;
#endif

static void *(*hiredis_array)(const redisReadTask *, array_size);
static redisReplyObjectFunctions bounded;
static pthread_once_t bounded_once = PTHREAD_ONCE_INIT;

static void *
bounded_array(const redisReadTask *task, array_size elements)
{
	return elements > REPLY_MAX_ELEMENTS ? NULL : hiredis_array(task, elements);
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

/* A reply parser with hiredis's own reply objects, but bounded arrays. */
static redisReader *
new_reader(void)
{
	redisReader *r;

	pthread_once(&bounded_once, make_bounded);
	if ((r = redisReaderCreate()) && hiredis_array)
		r->fn = &bounded;
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

struct conn *
conn_new_like(const struct conn *c)
{
	struct conn *n = conn_new(c->url);

	if (n) {
		n->last = c->last;
		n->last_len = c->last_len;
	}
	return n;
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
	return c->fd >= 0;
}

static enum conn_result read_some(struct conn *c);

bool
conn_check(struct conn *c)
{
	struct pollfd p = { c->fd, POLLIN, 0 };

	/* On an idle connection nothing is due: anything readable is the end of it; over TLS,
	 * unless it is TLS's own (a session ticket), which reading takes in. */
	if (c->fd >= 0 && !c->out_len && poll(&p, 1, 0) > 0 &&
	    (!c->tls || read_some(c) != CONN_OK || c->pending ||
	     redisReaderGetReply(c->reader, &c->pending) != REDIS_OK || c->pending))
		conn_close(c);
	return c->fd >= 0;
}

void
conn_close(struct conn *c)
{
	tls_free(c->tls);
	c->tls = NULL;
	c->tls_unsent = 0;
	c->read_wants_write = c->received = false;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
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

const char *
conn_error(const struct conn *c)
{
	return c->error;
}

const char *
conn_address(const struct conn *c)
{
	return c->address;
}

static enum conn_result fail(struct conn *c, enum conn_result result, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records why the connection failed, closes it and returns result. */
static enum conn_result
fail(struct conn *c, enum conn_result result, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	conn_close(c);
	return result;
}

static enum conn_result
fail_errno(struct conn *c, const char *what, int err)
{
	char buf[128];

	/* A TLS port resets a plain client that spoke first. */
	return fail(c, CONN_FAILED, "%s %s: %s%s", what, c->address,
		    msg_strerror(err, buf, sizeof(buf)),
		    err == ECONNRESET && !c->received && c->url->scheme == URL_TCP
			    ? " (a TLS port? use rediss://)"
			    : "");
}

/* Waits until fd is ready for events, the deadline passes, or intr_fd is readable. */
static enum conn_result
wait_fd(int fd, short events, int64_t deadline, int intr_fd, short *revents)
{
	for (;;) {
		struct pollfd p[2] = { { fd, events, 0 }, { intr_fd, POLLIN, 0 } };
		int64_t left = deadline - clock_now();
		struct timespec ts;
		int n;

		if (left <= 0)
			return CONN_TIMEOUT;
		ts = clock_timespec(left);
		n = ppoll(p, intr_fd >= 0 ? 2 : 1, &ts, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return CONN_FAILED;
		if (p[0].revents) {
			*revents = p[0].revents;
			return CONN_OK;
		}
		if (p[1].revents)
			return CONN_INTERRUPTED;
	}
}

/* Connects fd to addr (non-blocking) by the deadline, unless intr_fd becomes readable
 * first; 0, or -1 with errno set (EINTR when interrupted). */
static int
connect_by(int fd, const struct sockaddr *addr, socklen_t len, int64_t deadline, int intr_fd)
{
	int err = 0;
	socklen_t errlen = sizeof(err);
	short revents;

	if (connect(fd, addr, len) == 0)
		return 0;
	/* Only TCP is ever in progress: a Unix socket whose listener's backlog is full says
	 * EAGAIN, and is not connected. */
	if (errno != EINPROGRESS)
		return -1;
	switch (wait_fd(fd, POLLOUT, deadline, intr_fd, &revents)) {
	case CONN_OK:
		break;
	case CONN_TIMEOUT:
		errno = ETIMEDOUT;
		return -1;
	case CONN_INTERRUPTED:
		errno = EINTR;
		return -1;
	default:
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen) < 0)
		return -1;
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* The outcome of a connect that failed with errno. */
static enum conn_result
connect_failed(struct conn *c, int err)
{
	if (err == EINTR)
		return fail(c, CONN_INTERRUPTED, "interrupted while connecting to %s", c->address);
	return fail_errno(c, "cannot connect to", err);
}

static enum conn_result
connect_unix(struct conn *c, int64_t deadline, int intr_fd)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return connect_failed(c, errno);
	/* url_parse made sure the path fits. */
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", c->url->path);
	/* A full backlog (EAGAIN) is a busy server, not a missing one: try again shortly,
	 * until the deadline. */
	while (connect_by(fd, (struct sockaddr *)&sun, sizeof(sun), deadline, intr_fd) < 0) {
		int err = errno;
		if (err == EAGAIN && clock_now() + BACKLOG_PAUSE < deadline) {
			if (clock_sleep_until(clock_now() + BACKLOG_PAUSE, intr_fd) == 0)
				continue;
			err = EINTR;
		}
		close(fd);
		return connect_failed(c, err);
	}
	c->fd = fd;
	return CONN_OK;
}

/* A TCP connection to addr, remembered as the one to try first next time; the fd, or -1
 * with errno set. */
static int
connect_tcp_addr(struct conn *c, const struct sockaddr *addr, socklen_t len, int64_t deadline,
		 int intr_fd)
{
	int one = 1, fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect_by(fd, addr, len, deadline, intr_fd) < 0) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	/* Requests are small and each waits for its reply: never let Nagle hold one back. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (addr != (struct sockaddr *)&c->last && len <= sizeof(c->last)) {
		memcpy(&c->last, addr, len);
		c->last_len = len;
	}
	return fd;
}

static enum conn_result
connect_tcp(struct conn *c, int64_t deadline, int intr_fd)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(c->url->port) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(c->url->port) };
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *list;
	char port[8];
	int fd = -1, gai;

	/* The address that worked last time comes first: reconnecting, or the watchdog's
	 * connection (see conn_new_like), needs no resolver. It gets half the time, and is
	 * forgotten when it fails: the name may point elsewhere by now. */
	if (c->last_len > 0) {
		int64_t half = clock_now() + (deadline - clock_now()) / 2;
		fd = connect_tcp_addr(c, (struct sockaddr *)&c->last, c->last_len, half, intr_fd);
		if (fd < 0 && errno == EINTR)
			return connect_failed(c, errno);
		if (fd < 0)
			c->last_len = 0;
	}
	/* An address literal needs no resolver either: no NSS, no DNS, no /etc/hosts. */
	if (fd < 0 && inet_pton(AF_INET, c->url->host, &in4.sin_addr) == 1)
		fd = connect_tcp_addr(c, (struct sockaddr *)&in4, sizeof(in4), deadline, intr_fd);
	else if (fd < 0 && inet_pton(AF_INET6, c->url->host, &in6.sin6_addr) == 1)
		fd = connect_tcp_addr(c, (struct sockaddr *)&in6, sizeof(in6), deadline, intr_fd);
	else if (fd < 0) {
		snprintf(port, sizeof(port), "%u", c->url->port);
		gai = getaddrinfo(c->url->host, port, &hints, &list);
		if (gai != 0) {
			char buf[128];
			return fail(c, CONN_FAILED, "cannot resolve %s: %s", c->url->host,
				    gai == EAI_SYSTEM ? msg_strerror(errno, buf, sizeof(buf))
						      : gai_strerror(gai));
		}
		for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
			fd = connect_tcp_addr(c, ai->ai_addr, ai->ai_addrlen, deadline, intr_fd);
			if (fd < 0 && (errno == ETIMEDOUT || errno == EINTR))
				break;
		}
		gai = errno;
		freeaddrinfo(list);
		errno = gai;
	}
	if (fd < 0)
		return connect_failed(c, errno);
	c->fd = fd;
	return CONN_OK;
}

/*
 * The TLS handshake on the connected socket, within the same deadline as the connect and as
 * interruptible. A certificate that is not accepted, or a server that does not speak TLS,
 * is CONN_REFUSED: asking again would not change the answer.
 */
static enum conn_result
handshake(struct conn *c, int64_t deadline, int intr_fd)
{
	char why[400];

	if (!(c->tls = tls_new(c->fd, c->url->host, c->url->port, why, sizeof(why))))
		return fail(c, CONN_REFUSED, "cannot connect to %s: %s", c->address, why);
	for (;;) {
		short revents;
		enum conn_result res;

		switch (tls_handshake(c->tls, why, sizeof(why))) {
		case TLS_DONE:
			return CONN_OK;
		case TLS_WANT_READ:
			res = wait_fd(c->fd, POLLIN, deadline, intr_fd, &revents);
			break;
		case TLS_WANT_WRITE:
			res = wait_fd(c->fd, POLLOUT, deadline, intr_fd, &revents);
			break;
		case TLS_CLOSED:
			return fail(c, CONN_FAILED, "%s closed the connection during the TLS handshake",
				    c->address);
		default:
			return fail(c, CONN_REFUSED, "TLS with %s refused: %s", c->address, why);
		}
		/* A plain server takes the TLS hello for the start of an inline command, and
		 * waits for the rest of it. */
		if (res == CONN_TIMEOUT)
			return fail(c, res, "no TLS handshake with %s in time (a plain port? use "
					    "redis://)",
				    c->address);
		if (res == CONN_INTERRUPTED)
			return fail(c, res, "interrupted while connecting to %s", c->address);
		if (res != CONN_OK)
			return fail_errno(c, "lost the connection to", errno);
	}
}

/* Checks one handshake reply; what names the step for the message. */
static enum conn_result
expect_ok(struct conn *c, int64_t deadline, int intr_fd, const char *what)
{
	struct reply *r;
	enum conn_result res = conn_recv(c, &r, deadline, intr_fd);

	if (res == CONN_INTERRUPTED)
		return fail(c, res, "interrupted while connecting to %s", c->address);
	if (res != CONN_OK)
		return res;
	if (reply_type(r) == REPLY_ERROR) {
		fail(c, CONN_REFUSED, "%s %s: %s", what, c->address, reply_string(r, NULL));
		reply_free(r);
		return CONN_REFUSED;
	}
	reply_free(r);
	return CONN_OK;
}

enum conn_result
conn_open(struct conn *c, int64_t deadline, int intr_fd)
{
	const struct redis_url *u = c->url;
	enum conn_result res;
	char what[300];

	conn_close(c);
	if (u->scheme == URL_TLS && !tls_available())
		return fail(c, CONN_REFUSED, "cannot connect to %s: this build has no TLS support",
			    c->address);
	res = u->scheme == URL_UNIX ? connect_unix(c, deadline, intr_fd)
				    : connect_tcp(c, deadline, intr_fd);
	if (res == CONN_OK && u->scheme == URL_TLS)
		res = handshake(c, deadline, intr_fd);
	if (res != CONN_OK)
		return res;
	if (!(c->reader = new_reader()))
		return fail(c, CONN_FAILED, "cannot connect to %s: out of memory", c->address);

	/* AUTH and SELECT go out together: both are answered before conn_open returns, and
	 * nothing else is sent until they are. A user without a password still authenticates
	 * (as an ACL user with nopass would). */
	if (u->user || u->password) {
		const char *password = u->password ? u->password : "";
		const char *argv[3] = { "AUTH" };
		size_t lens[3] = { 4 };
		int argc = 1;
		if (u->user) {
			argv[argc] = u->user;
			lens[argc++] = strlen(u->user);
		}
		argv[argc] = password;
		lens[argc++] = strlen(password);
		if (conn_send(c, argc, argv, lens) < 0)
			return CONN_FAILED;
	}
	if (u->db) {
		char db[16];
		snprintf(db, sizeof(db), "%d", u->db);
		if (conn_send(c, 2, (const char *[]){ "SELECT", db }, (size_t[]){ 6, strlen(db) }) <
		    0)
			return CONN_FAILED;
	}
	if (u->user || u->password) {
		if (u->user)
			snprintf(what, sizeof(what), "authentication as '%s' refused by", u->user);
		else
			snprintf(what, sizeof(what), "authentication refused by");
		if ((res = expect_ok(c, deadline, intr_fd, what)) != CONN_OK)
			return res;
	}
	if (u->db) {
		snprintf(what, sizeof(what), "cannot select db %d on", u->db);
		if ((res = expect_ok(c, deadline, intr_fd, what)) != CONN_OK)
			return res;
	}
	return CONN_OK;
}

/* Writes what it can of the queued commands without blocking: CONN_OK, or CONN_FAILED (the
 * connection is closed then, with the reason). */
static enum conn_result
write_some(struct conn *c)
{
	ssize_t n;

	if (c->tls) {
		size_t put, size = c->tls_unsent ? c->tls_unsent : c->out_len - c->out_sent;
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
			return fail(c, CONN_FAILED, "%s closed the connection", c->address);
		default:
			return fail(c, CONN_FAILED, "lost the connection to %s: %s", c->address,
				    why);
		}
	} else if ((n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent,
			     MSG_NOSIGNAL | MSG_DONTWAIT)) < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return CONN_OK;
		return fail_errno(c, "lost the connection to", errno);
	}
	c->out_sent += (size_t)n;
	if (c->out_sent == c->out_len) {
		free(c->out);
		c->out = NULL;
		c->out_len = c->out_sent = 0;
	}
	return 0;
}

int
conn_send(struct conn *c, int argc, const char **argv, const size_t *argvlen)
{
	char *cmd;
	int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
	char *grown;

	if (len < 0) {
		fail(c, CONN_FAILED, "cannot send to %s: out of memory", c->address);
		return -1;
	}
	grown = realloc(c->out, c->out_len + (size_t)len);
	if (!grown) {
		redisFreeCommand(cmd);
		fail(c, CONN_FAILED, "cannot send to %s: out of memory", c->address);
		return -1;
	}
	memcpy(grown + c->out_len, cmd, (size_t)len);
	c->out = grown;
	c->out_len += (size_t)len;
	redisFreeCommand(cmd);
	/* Out at once, so that it is on its way while the caller does other work; what does
	 * not fit is left to conn_recv. */
	return write_some(c) == CONN_OK ? 0 : -1;
}

static enum conn_result
closed_by_server(struct conn *c)
{
	return fail(c, CONN_FAILED, "%s closed the connection", c->address);
}

/* Feeds what arrived to the reply parser. */
static enum conn_result
feed(struct conn *c, const char *buf, size_t n)
{
	/* 0x15 and 0x16 begin TLS alert and handshake records: no RESP reply does. */
	if (!c->received && !c->tls && (buf[0] == 0x15 || buf[0] == 0x16))
		return fail(c, CONN_REFUSED, "%s speaks TLS: use rediss://", c->address);
	c->received = true;
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

enum conn_result
conn_wait(struct conn *c, int64_t deadline, int intr_fd)
{
	if (c->fd < 0)
		return fail(c, CONN_FAILED, "not connected to %s", c->address);
	while (!c->pending) {
		enum conn_result res;
		short revents = 0;

		if (redisReaderGetReply(c->reader, &c->pending) != REDIS_OK)
			return fail(c, CONN_FAILED, "protocol error from %s: %s", c->address,
				    c->reader->errstr);
		if (c->pending)
			break;
		res = wait_fd(c->fd,
			      (short)(POLLIN | (c->out_len || c->read_wants_write ? POLLOUT : 0)),
			      deadline, intr_fd, &revents);
		if (res == CONN_TIMEOUT)
			return res;
		if (res == CONN_FAILED)
			return fail_errno(c, "lost the connection to", errno);
		if (res == CONN_INTERRUPTED)
			return res;
		/* Over TLS a write may wait for the socket to be readable, and a read for it to
		 * be writable: both are tried whenever the socket is ready at all. */
		if (c->out_len && (revents & POLLOUT || c->tls) && (res = write_some(c)) != CONN_OK)
			return res;
		if ((revents & (POLLIN | POLLHUP | POLLERR) || c->read_wants_write) &&
		    (res = read_some(c)) != CONN_OK)
			return res;
	}
	return CONN_OK;
}

enum conn_result
conn_recv(struct conn *c, struct reply **reply, int64_t deadline, int intr_fd)
{
	enum conn_result res = conn_wait(c, deadline, intr_fd);

	/* A reply that comes after we stopped waiting would be taken for the answer to the
	 * next request: a connection that timed out is closed. */
	if (res == CONN_TIMEOUT)
		return fail(c, CONN_TIMEOUT, "no reply from %s in time", c->address);
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
	if (c->fd < 0)
		return fail(c, CONN_FAILED, "not connected to %s", c->address);
	if (conn_send(c, argc, argv, argvlen) < 0)
		return CONN_FAILED;
	return conn_recv(c, reply, deadline, intr_fd);
}

struct reply *
reply_parse(const char *buf, size_t len)
{
	redisReader *reader = new_reader();
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
