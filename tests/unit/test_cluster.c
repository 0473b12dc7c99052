/* cluster: where a slot's owner is, as -MOVED and -ASK answers say, and the seeds in turn. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "cluster.h"
#include "url.h"

int
main(void)
{
	struct redis_url plain, seeds;
	struct cluster *c;
	const struct redis_url *t, *ask;
	char err[256];

	CHECK_INT(url_parse("rediss://alice:pw@10.0.0.1:7000", &plain, err, sizeof(err)), 0);
	CHECK((c = cluster_new(&plain)) != NULL);
	t = cluster_target(c);
	CHECK_STR(t->host, "10.0.0.1");
	CHECK_INT(t->port, 7000);
	CHECK_INT(t->scheme, URL_TLS);
	CHECK_STR(t->user, "alice");
	CHECK_STR(t->password, "pw");
	/* One server and no owner known: nowhere else to go. */
	CHECK(!cluster_next_seed(c));

	/* -MOVED names the owner, remembered; an empty host or "?" is the same host. */
	CHECK_INT(cluster_moved(c, "MOVED 3999 10.0.0.2:7001"), 0);
	CHECK_STR(cluster_target(c)->host, "10.0.0.2");
	CHECK_INT(cluster_target(c)->port, 7001);
	CHECK_INT(cluster_moved(c, "MOVED 3999 :7002"), 0);
	CHECK_STR(cluster_target(c)->host, "10.0.0.2");
	CHECK_INT(cluster_target(c)->port, 7002);
	CHECK_INT(cluster_moved(c, "MOVED 3999 ?:7003"), 0);
	CHECK_STR(cluster_target(c)->host, "10.0.0.2");
	CHECK_INT(cluster_moved(c, "MOVED 3999 ::1:7004"), 0); /* IPv6, as Redis writes it */
	CHECK_STR(cluster_target(c)->host, "::1");
	CHECK_INT(cluster_target(c)->port, 7004);
	CHECK_INT(cluster_moved(c, "MOVED 3999 10.0.0.9:0"), -1);
	CHECK_INT(cluster_moved(c, "MOVED 3999 10.0.0.9:x"), -1);
	CHECK_INT(cluster_moved(c, "MOVED"), -1);
	CHECK_STR(cluster_target(c)->host, "::1"); /* unchanged by what could not be read */

	/* -ASK is for once: the owner stays. */
	CHECK((ask = cluster_asked(c, "ASK 3999 10.0.0.3:7005")) != NULL);
	CHECK_STR(ask->host, "10.0.0.3");
	CHECK_INT(ask->port, 7005);
	CHECK_STR(cluster_target(c)->host, "::1");
	CHECK(cluster_asked(c, "ASK 3999") == NULL);

	/* The owner unreachable: back to the URL's server; then, in turn, the nodes that the
	 * redirects named (each once), which may say where the slot went. */
	CHECK(cluster_next_seed(c));
	CHECK_STR(cluster_target(c)->host, "10.0.0.1");
	CHECK_INT(cluster_target(c)->port, 7000);
	const char *const places[] = { "10.0.0.2:7001", "10.0.0.2:7002", "10.0.0.2:7003",
				       "::1:7004", "10.0.0.1:7000" };
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		char at[64];
		CHECK(cluster_next_seed(c));
		snprintf(at, sizeof(at), "%s:%u", cluster_target(c)->host, cluster_target(c)->port);
		CHECK_STR(at, places[i]);
	}
	cluster_free(c);

	/* Seeds are tried in turn, and round again. */
	CHECK_INT(url_parse("redis+cluster://s1,s2:7001,s3", &seeds, err, sizeof(err)), 0);
	CHECK((c = cluster_new(&seeds)) != NULL);
	CHECK_STR(cluster_target(c)->host, "s1");
	CHECK(!cluster_target(c)->cluster);
	CHECK(cluster_next_seed(c));
	CHECK_STR(cluster_target(c)->host, "s2");
	CHECK_INT(cluster_target(c)->port, 7001);
	CHECK(cluster_next_seed(c));
	CHECK_STR(cluster_target(c)->host, "s3");
	CHECK(cluster_next_seed(c));
	CHECK_STR(cluster_target(c)->host, "s1");
	/* An owner that fails sends it back to the seed it came through. */
	CHECK_INT(cluster_moved(c, "MOVED 1 10.0.0.4:7000"), 0);
	CHECK(cluster_next_seed(c));
	CHECK_STR(cluster_target(c)->host, "s1");
	cluster_free(c);

	url_free(&plain);
	url_free(&seeds);
	return check_done("cluster");
}
