/* sentinel: the errors that tell a Sentinel deployment's failures apart, and interruption
 * (the scenarios in tests/cli/sentinel.bats run it against real Sentinels). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "conn.h"
#include "sentinel.h"
#include "url.h"

int
main(void)
{
	struct redis_url url;
	struct sentinel *s;
	struct conn *c;
	char err[256];
	int intr[2];

	/* Nothing listens on port 1: no Sentinel can be asked, and each one's reason shows. */
	CHECK_INT(url_parse("redis+sentinel://:pw@127.0.0.1:1,127.0.0.1:1/main", &url, err,
			    sizeof(err)),
		  0);
	CHECK((s = sentinel_new(&url)) != NULL);
	CHECK((c = conn_new(sentinel_master(s))) != NULL);
	CHECK_STR(conn_address(c), "master 'main' (Sentinels 127.0.0.1:1,127.0.0.1:1)");
	CHECK_INT(sentinel_connect(s, c, clock_now() + NS_PER_S, -1), CONN_FAILED);
	CHECK(strstr(sentinel_error(s), "no Sentinel of master 'main' could be asked") != NULL);
	CHECK(strstr(sentinel_error(s), "connection refused") != NULL);
	CHECK(strstr(sentinel_error(s), "pw") == NULL);
	CHECK(sentinel_failover(s) == NULL);
	CHECK(!conn_is_open(c));
	/* The Sentinels' answer is what counts, and there is none: c is left as it is. */
	CHECK(!sentinel_confirm(s, c, clock_now() + NS_PER_S, -1));

	conn_free(c);
	sentinel_free(s);
	url_free(&url);

	/* A Sentinel that never answers (a socket nobody reads) is given up on at its deadline,
	 * and an interruption ends the wait at once. */
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);
	int silent = socket(AF_INET, SOCK_STREAM, 0);
	char spec[128];
	int64_t t0;

	CHECK_INT(bind(silent, (struct sockaddr *)&addr, sizeof(addr)), 0);
	CHECK_INT(listen(silent, 8), 0);
	CHECK_INT(getsockname(silent, (struct sockaddr *)&addr, &len), 0);
	snprintf(spec, sizeof(spec), "redis+sentinel://127.0.0.1:%u/main", ntohs(addr.sin_port));
	CHECK_INT(url_parse(spec, &url, err, sizeof(err)), 0);
	CHECK((s = sentinel_new(&url)) != NULL);
	CHECK((c = conn_new(sentinel_master(s))) != NULL);
	t0 = clock_now();
	CHECK_INT(sentinel_connect(s, c, t0 + 200 * NS_PER_MS, -1), CONN_FAILED);
	CHECK(clock_now() - t0 >= 200 * NS_PER_MS);
	CHECK(strstr(sentinel_error(s), "no reply from 127.0.0.1:") != NULL);
	CHECK_INT(pipe(intr), 0);
	CHECK_INT(write(intr[1], "x", 1), 1);
	t0 = clock_now();
	CHECK_INT(sentinel_connect(s, c, TIME_NEVER, intr[0]), CONN_INTERRUPTED);
	CHECK(clock_now() - t0 < 100 * NS_PER_MS);
	CHECK(strstr(sentinel_error(s), "interrupted") != NULL);
	conn_free(c);
	sentinel_free(s);
	url_free(&url);
	close(silent);
	return check_done("sentinel");
}
