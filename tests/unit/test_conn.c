/* conn: connecting, AUTH and SELECT answered before anything else, deadlines and
 * interruptions, against a real redis-server. */
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "conn.h"
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
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_FAILED);
	CHECK_STR(conn_error(c), "cannot connect to /nonexistent/redis.sock: no such file or "
				 "directory");
	CHECK(!conn_is_open(c));
	conn_free(c);

	struct redis_url refused = { .scheme = URL_TCP,
				     .host = "127.0.0.1",
				     .port = unused_port() };
	c = conn_new(&refused);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_FAILED);
	CHECK(strstr(conn_error(c), "cannot connect to 127.0.0.1:") != NULL);
	CHECK(strstr(conn_error(c), ": connection refused") != NULL);
	conn_free(c);

	struct redis_url tls = { .scheme = URL_TLS, .host = "127.0.0.1", .port = 6379 };
	c = conn_new(&tls);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_REFUSED);
	CHECK(strstr(conn_error(c), "no TLS support") != NULL);
	conn_free(c);

	/* A password is needed: without one nothing is sent at connect time, and the first
	 * command is refused; a wrong one is refused at once, and never printed. */
	u = url_for(NULL, NULL, 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_OK);
	CHECK(strncmp(redis_fixture_call(c, "PING", NULL), "NOAUTH", 6) == 0);
	conn_free(c);
	u = url_for(NULL, "wrong-pass", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_REFUSED);
	CHECK(strstr(conn_error(c), "authentication refused by") != NULL);
	CHECK(strstr(conn_error(c), "wrong-pass") == NULL);
	CHECK(!conn_is_open(c));
	conn_free(c);
	u = url_for(NULL, "s3cret", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_OK);
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
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_OK);
	CHECK_STR(redis_fixture_call(c, "ACL", "WHOAMI", NULL), "alice");
	conn_free(c);
	u = url_for("alice", "not-alice-pw", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_REFUSED);
	CHECK(strstr(conn_error(c), "authentication as 'alice' refused by") != NULL);
	CHECK(strstr(conn_error(c), "not-alice-pw") == NULL);
	conn_free(c);

	/* SELECT: commands run in the db asked for; a db that does not exist is refused. */
	u = url_for("alice", "alice-pw", 2);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_OK);
	CHECK_STR(redis_fixture_call(c, "GET", "where", NULL), "nil");
	CHECK_STR(redis_fixture_call(c, "SET", "where", "db2", NULL), "OK");
	conn_free(c);
	u = url_for(NULL, "s3cret", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_OK);
	CHECK_STR(redis_fixture_call(c, "GET", "where", NULL), "db0");
	conn_free(c);
	u = url_for(NULL, "s3cret", 99);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_REFUSED);
	CHECK(strstr(conn_error(c), "cannot select db 99 on ") != NULL);
	conn_free(c);

	/* Replies of every shape. */
	u = url_for(NULL, "s3cret", 0);
	c = conn_new(&u);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_OK);
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

	/* A frozen server: the deadline holds, and an interruption leaves the request
	 * pending on a connection that stays open. */
	CHECK_INT(pipe(intr), 0);
	redis_fixture_freeze(&server);
	int64_t t0 = clock_now();
	CHECK_INT(conn_call(c, &r, t0 + 200 * NS_PER_MS, -1, 1, (const char *[]){ "PING" },
			    (size_t[]){ 4 }),
		  CONN_TIMEOUT);
	CHECK(clock_now() - t0 >= 200 * NS_PER_MS && clock_now() - t0 < 2 * NS_PER_S);
	CHECK(!conn_is_open(c));
	CHECK(strstr(conn_error(c), "no reply from ") != NULL);
	redis_fixture_thaw(&server);
	CHECK_INT(conn_open(c, clock_now() + NS_PER_S), CONN_OK);
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

	/* The server goes away under an open connection. */
	redis_fixture_stop(&server);
	CHECK_STR(redis_fixture_call(c, "PING", NULL), "(failed)");
	CHECK(!conn_is_open(c));
	conn_free(c);
	return check_done("conn");
}
