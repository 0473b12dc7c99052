/* conn: connecting, AUTH and SELECT answered before anything else, deadlines and
 * interruptions, against a real redis-server. */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "conn.h"
#include "tls.h"
#include "redis_fixture.h"

static struct redis_fixture server;

/* A URL for the fixture's socket, with optional user, password and db. */
static struct redis_url
url_for(const char *user, const char *password, int db)
{
	struct redis_url u = { .scheme = URL_UNIX, .db = db };

	u.path = server.socket;
	u.user = (char *)user;
	u.password = (char *)password;
	return u;
}

/* Runs one command; the reply as text ("OK", "3", "nil", the error) or "(failed)". */

static int
listening_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	unlink(path);
	bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	listen(fd, 0);
	return fd;
}

static int
connect_unix_nonblock(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		return fd;
	close(fd);
	return -1;
}

/* Accepts one connection on fd at `at`, freeing a place in its backlog. */
struct accept_later {
	int fd;
	int64_t at;
};

static void *
accept_later(void *arg)
{
	struct accept_later *a = arg;

	clock_sleep_until(a->at, -1);
	close(accept(a->fd, NULL, NULL));
	return NULL;
}

/* A loopback listener that never accepts: connections complete, requests go unanswered. */
static int
listening_tcp(unsigned *port)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	bind(fd, (struct sockaddr *)&in, sizeof(in));
	listen(fd, 8);
	getsockname(fd, (struct sockaddr *)&in, &len);
	*port = ntohs(in.sin_port);
	return fd;
}

static unsigned
unused_port(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	bind(fd, (struct sockaddr *)&in, sizeof(in));
	getsockname(fd, (struct sockaddr *)&in, &len);
	close(fd); /* nothing listens there now */
	return ntohs(in.sin_port);
}

/* Parses an array of n arrays of m integers each. */
static struct reply *
parse_nested(int n, int m)
{
	size_t len = (size_t)n * ((size_t)m * 4 + 16) + 16, at;
	char *text = malloc(len);
	struct reply *r;

	if (!text)
		return NULL;
	at = (size_t)snprintf(text, len, "*%d\r\n", n);
	for (int i = 0; i < n; i++) {
		at += (size_t)snprintf(text + at, len - at, "*%d\r\n", m);
		for (int j = 0; j < m; j++)
			at += (size_t)snprintf(text + at, len - at, ":%d\r\n", j % 10);
	}
	r = reply_parse(text, at);
	free(text);
	return r;
}

int
main(void)
{
	struct redis_url u;
	struct conn *c;
	struct reply *r;
	int intr[2];

	redis_fixture_start(&server, (const char *[]){ "--requirepass", "s3cret", NULL });

	/* Nobody there. */
	struct redis_url nowhere = { .scheme = URL_UNIX, .path = "/nonexistent/redis.sock" };
	c = conn_new(&nowhere);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_FAILED);
	CHECK_STR(conn_error(c), "cannot connect to /nonexistent/redis.sock: no such file or "
				 "directory");
	CHECK(!conn_is_open(c));
	conn_free(c);

	struct redis_url refused = { .scheme = URL_TCP,
				     .host = "127.0.0.1",
				     .port = unused_port() };
	c = conn_new(&refused);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_FAILED);
	CHECK(strstr(conn_error(c), "cannot connect to 127.0.0.1:") != NULL);
	CHECK(strstr(conn_error(c), ": connection refused") != NULL);
	conn_free(c);

	/* rediss:// without TLS in the build is refused as such; with it, nothing listening is
	 * what it is for plain TCP. */
	struct redis_url tls = { .scheme = URL_TLS, .host = "127.0.0.1", .port = unused_port() };
	c = conn_new(&tls);
	if (tls_available()) {
		CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_FAILED);
		CHECK(strstr(conn_error(c), ": connection refused") != NULL);
	} else {
		CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_REFUSED);
		CHECK(strstr(conn_error(c), "no TLS support") != NULL);
	}
	conn_free(c);

	/* A password is needed: without one nothing is sent at connect time, and the first
	 * command is refused; a wrong one is refused at once, and never printed. */
	u = url_for(NULL, NULL, 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK(strncmp(redis_fixture_call(c, "PING", NULL), "NOAUTH", 6) == 0);
	conn_free(c);
	u = url_for(NULL, "wrong-pass", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_REFUSED);
	CHECK(strstr(conn_error(c), "authentication refused by") != NULL);
	CHECK(strstr(conn_error(c), "wrong-pass") == NULL);
	CHECK(!conn_is_open(c));
	conn_free(c);
	u = url_for(NULL, "s3cret", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK_STR(redis_fixture_call(c, "PING", NULL), "PONG");
	CHECK_STR(redis_fixture_call(c, "ACL", "SETUSER", "alice", "on", NULL), "OK");
	CHECK_STR(redis_fixture_call(c, "ACL", "SETUSER", "alice", ">alice-pw", NULL), "OK");
	CHECK_STR(redis_fixture_call(c, "ACL", "SETUSER", "alice", "~*", NULL), "OK");
	CHECK_STR(redis_fixture_call(c, "ACL", "SETUSER", "alice", "+@all", NULL), "OK");
	CHECK_STR(redis_fixture_call(c, "SET", "where", "db0", NULL), "OK");
	conn_free(c);

	/* ACL users. */
	u = url_for("alice", "alice-pw", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK_STR(redis_fixture_call(c, "ACL", "WHOAMI", NULL), "alice");
	conn_free(c);
	u = url_for("alice", "not-alice-pw", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_REFUSED);
	CHECK(strstr(conn_error(c), "authentication as 'alice' refused by") != NULL);
	CHECK(strstr(conn_error(c), "not-alice-pw") == NULL);
	conn_free(c);

	/* SELECT: commands run in the db asked for; a db that does not exist is refused. */
	u = url_for("alice", "alice-pw", 2);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK_STR(redis_fixture_call(c, "GET", "where", NULL), "nil");
	CHECK_STR(redis_fixture_call(c, "SET", "where", "db2", NULL), "OK");
	conn_free(c);
	u = url_for(NULL, "s3cret", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK_STR(redis_fixture_call(c, "GET", "where", NULL), "db0");
	conn_free(c);
	u = url_for(NULL, "s3cret", 99);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_REFUSED);
	CHECK(strstr(conn_error(c), "cannot select db 99 on ") != NULL);
	conn_free(c);

	/* Replies of every shape. */
	u = url_for(NULL, "s3cret", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK_INT(conn_call(c, &r, clock_now() + NS_PER_S, -1, 3,
			    (const char *[]){ "EVAL", "return {1, 'two', false}", "0" },
			    (size_t[]){ 4, 24, 1 }),
		  CONN_OK);
	CHECK_INT(reply_type(r), REPLY_ARRAY);
	CHECK_INT(reply_count(r), 3);
	CHECK_INT(reply_integer(reply_element(r, 0)), 1);
	CHECK_STR(reply_string(reply_element(r, 1), NULL), "two");
	CHECK_INT(reply_type(reply_element(r, 2)), REPLY_NIL);
	reply_free(r);

	/* A server that hung up behind answers nobody wants any more (conn_forget) is found
	 * gone before another request goes out on the connection, never to be answered. */
	struct conn *admin = conn_new(&u);
	CHECK_INT(conn_open(admin, clock_now() + NS_PER_S, -1), CONN_OK);
	CHECK_INT(conn_send(c, 1, (const char *[]){ "PING" }, (size_t[]){ 4 }), 0);
	conn_forget(c);
	CHECK(conn_check(c));
	CHECK_STR(redis_fixture_call(admin, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes",
				     NULL),
		  "1");
	conn_free(admin);
	struct pollfd hung_up = { conn_fd(c), POLLRDHUP, 0 };
	CHECK_INT(poll(&hung_up, 1, 10000), 1);
	CHECK(!conn_check(c));
	CHECK(!conn_is_open(c));
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);

	/* A frozen server: the deadline holds, and an interruption leaves the request
	 * pending on a connection that stays open. */
	CHECK_INT(pipe(intr), 0);
	redis_fixture_freeze(&server);
	int64_t t0 = clock_now();
	CHECK_INT(conn_call(c, &r, t0 + 200 * NS_PER_MS, -1, 1, (const char *[]){ "PING" },
			    (size_t[]){ 4 }),
		  CONN_TIMEOUT);
	CHECK(clock_now() - t0 >= 200 * NS_PER_MS);
	CHECK(!conn_is_open(c));
	CHECK(strstr(conn_error(c), "no reply from ") != NULL);
	redis_fixture_thaw(&server);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S, -1), CONN_OK);
	redis_fixture_freeze(&server);
	CHECK_INT(write(intr[1], "x", 1), 1);
	CHECK_INT(conn_call(c, &r, clock_now() + 5 * NS_PER_S, intr[0], 2,
			    (const char *[]){ "ECHO", "late" }, (size_t[]){ 4, 4 }),
		  CONN_INTERRUPTED);
	CHECK(conn_is_open(c));
	redis_fixture_thaw(&server);
	CHECK_INT(conn_recv(c, &r, clock_now() + 2 * NS_PER_S, -1), CONN_OK);
	CHECK_STR(reply_string(r, NULL), "late");
	reply_free(r);

	/* A Unix listener whose backlog is full is busy: knocked on again until the deadline,
	 * and in as soon as a place frees up. */
	char busy_path[108];
	snprintf(busy_path, sizeof(busy_path), "%s/busy.sock", server.dir);
	int busy = listening_unix(busy_path), fillers[64], nfill = 0;
	struct redis_url busy_url = { .scheme = URL_UNIX, .path = busy_path };
	while (nfill < 64 && (fillers[nfill] = connect_unix_nonblock(busy_path)) >= 0)
		nfill++;
	CHECK(nfill < 64); /* the backlog did fill up */
	struct conn *b = conn_new(&busy_url);
	t0 = clock_now();
	CHECK_INT(conn_open(b, clock_now() + 300 * NS_PER_MS, -1), CONN_FAILED);
	CHECK(clock_now() - t0 >= 250 * NS_PER_MS);
	CHECK(strstr(conn_error(b), "resource temporarily unavailable") != NULL);
	pthread_t acceptor;
	struct accept_later later = { busy, clock_now() + 100 * NS_PER_MS };
	pthread_create(&acceptor, NULL, accept_later, &later);
	CHECK_INT(conn_open(b, clock_now() + 2 * NS_PER_S, -1), CONN_OK);
	pthread_join(acceptor, NULL);
	conn_free(b);
	for (int i = 0; i < nfill; i++)
		close(fillers[i]);
	close(busy);

	/* A server that accepts and never answers: connecting (AUTH waits for its answer)
	 * gives up as soon as it is interrupted. */
	unsigned silent_port;
	int silent = listening_tcp(&silent_port);
	struct redis_url silent_url = {
		.scheme = URL_TCP, .host = "127.0.0.1", .port = silent_port, .password = "pw"
	};
	int stop[2];
	CHECK_INT(pipe(stop), 0);
	CHECK_INT(write(stop[1], "x", 1), 1);
	struct conn *sc = conn_new(&silent_url);
	t0 = clock_now();
	CHECK_INT(conn_open(sc, clock_now() + 5 * NS_PER_S, stop[0]), CONN_INTERRUPTED);
	CHECK(clock_now() - t0 < 500 * NS_PER_MS);
	CHECK(!conn_is_open(sc));
	conn_free(sc);
	close(silent);

	/* The server goes away under an open connection. */
	redis_fixture_stop(&server);
	CHECK_STR(redis_fixture_call(c, "PING", NULL), "(failed)");
	CHECK(!conn_is_open(c));
	conn_free(c);
	/* Replies parsed from bytes: one whole reply or nothing, and no array so large that
	 * its header alone would cost gigabytes (fuzz/corpus/reply/huge-array). */
#define PARSE_REPLY(text) reply_parse(text, sizeof(text) - 1)
	struct reply *parsed = PARSE_REPLY("*2\r\n:1\r\n:7\r\n");
	CHECK(parsed && reply_type(parsed) == REPLY_ARRAY && reply_count(parsed) == 2);
	reply_free(parsed);
	CHECK(!PARSE_REPLY("*2\r\n:1\r\n"));
	CHECK(!PARSE_REPLY(":1\r\n:2\r\n"));
	CHECK(!PARSE_REPLY("*203758006\r\n:1\r\n"));
	CHECK(!PARSE_REPLY("*2000000000\r\n"));
	/* A page of SCAN may hold more keys than its COUNT; the elements are bounded all levels
	 * together, so that nesting cannot multiply them. */
	CHECK((parsed = parse_nested(1, 2048)) && reply_count(reply_element(parsed, 0)) == 2048);
	reply_free(parsed);
	CHECK((parsed = parse_nested(2, 262143)) &&
	      reply_count(reply_element(parsed, 1)) == 262143);
	reply_free(parsed);
	CHECK(!parse_nested(2, 262144));
	return check_done("conn");
}
