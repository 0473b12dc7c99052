/* url: which Redis URLs are accepted, what they mean, and what is refused. */
#include <stdlib.h>

#include "check.h"
#include "url.h"

static struct redis_url u;
static char err[256];

static int
parse(const char *s)
{
	url_free(&u);
	err[0] = '\0';
	return url_parse(s, &u, err, sizeof(err));
}

static void
rejects(const char *s, const char *why)
{
	CHECK_INT(parse(s), -1);
	CHECK(strstr(err, why) != NULL);
	if (!strstr(err, why))
		fprintf(stderr, "  for %s: \"%s\" does not say \"%s\"\n", s, err, why);
}

int
main(void)
{
	char buf[300];

	CHECK_INT(parse("redis://127.0.0.1:6379"), 0);
	CHECK_INT(u.scheme, URL_TCP);
	CHECK_STR(u.host, "127.0.0.1");
	CHECK_INT(u.port, 6379);
	CHECK_INT(u.db, 0);
	CHECK(u.user == NULL && u.password == NULL);
	CHECK_STR(url_address(&u, buf, sizeof(buf)), "127.0.0.1:6379");

	CHECK_INT(parse("redis://localhost"), 0);
	CHECK_STR(u.host, "localhost");
	CHECK_INT(u.port, 6379);
	/* A scheme in any case, as RFC 3986 has it. */
	CHECK_INT(parse("REDIS://localhost"), 0);
	CHECK_INT(u.scheme, URL_TCP);
	CHECK_INT(parse("Rediss://localhost"), 0);
	CHECK_INT(u.scheme, URL_TLS);
	CHECK_INT(u.port, 6379);

	CHECK_INT(parse("redis://cache.internal:6380/"), 0);
	CHECK_INT(u.port, 6380);
	CHECK_INT(u.db, 0);

	CHECK_INT(parse("redis://alice:p%40ss%2Fw@redis-1:6380/2"), 0);
	CHECK_STR(u.user, "alice");
	CHECK_STR(u.password, "p@ss/w");
	CHECK_STR(u.host, "redis-1");
	CHECK_INT(u.db, 2);
	CHECK_STR(url_address(&u, buf, sizeof(buf)), "redis-1:6380");

	CHECK_INT(parse("redis://:secret@host"), 0);
	CHECK(u.user == NULL);
	CHECK_STR(u.password, "secret");

	CHECK_INT(parse("redis://alice@host"), 0);
	CHECK_STR(u.user, "alice");
	CHECK(u.password == NULL);

	CHECK_INT(parse("redis://u:pa@ss@host"), 0); /* an unencoded '@' in a password */
	CHECK_STR(u.password, "pa@ss");
	CHECK_STR(u.host, "host");

	CHECK_INT(parse("redis://[::1]:7000/3"), 0);
	CHECK_STR(u.host, "::1");
	CHECK_INT(u.port, 7000);
	CHECK_INT(u.db, 3);
	CHECK_STR(url_address(&u, buf, sizeof(buf)), "[::1]:7000");

	CHECK_INT(parse("redis://h:65535"), 0);
	CHECK_INT(u.port, 65535);
	CHECK_INT(parse("redis://h:1"), 0);

	CHECK_INT(parse("rediss://secure.example:6390"), 0);
	CHECK_INT(u.scheme, URL_TLS);
	CHECK_INT(u.port, 6390);

	CHECK_INT(parse("unix:///run/redis/redis.sock"), 0);
	CHECK_INT(u.scheme, URL_UNIX);
	CHECK_STR(u.path, "/run/redis/redis.sock");
	CHECK_INT(u.db, 0);
	CHECK_STR(url_address(&u, buf, sizeof(buf)), "/run/redis/redis.sock");

	CHECK_INT(parse("unix:///tmp/r.sock?db=5"), 0);
	CHECK_STR(u.path, "/tmp/r.sock");
	CHECK_INT(u.db, 5);

	CHECK_INT(parse("unix://alice:pw@/tmp/r.sock"), 0);
	CHECK_STR(u.user, "alice");
	CHECK_STR(u.password, "pw");
	CHECK_STR(u.path, "/tmp/r.sock");

	rejects("http://host", "unknown scheme 'http'");
	rejects("host:6379", "'host:6379' has no scheme: did you mean redis://host:6379?");
	rejects("/run/redis.sock", "'/run/redis.sock' has no scheme: a Unix socket is "
				   "unix:///run/redis.sock");
	rejects("unix:/run/redis.sock", "'unix:/run/redis.sock': a Unix socket is "
					"unix:///run/redis.sock");
	rejects("bob:s3cret@h", "no scheme: did you mean redis://[user:password@]host...?");
	CHECK(strstr(err, "s3cret") == NULL); /* a password is never in a message */
	rejects("", "unknown scheme");
	rejects("redis://", "missing host");
	rejects("redis://:6379", "missing host");
	rejects("redis://host:0", "port must be a number from 1 to 65535");
	rejects("redis://host:65536", "port must be");
	rejects("redis://host:", "port must be");
	rejects("redis://host:12ab", "port must be");
	rejects("redis://host:-1", "port must be");
	rejects("redis://host/2x", "db must be a number");
	rejects("redis://host/2/3", "db must be a number");
	rejects("redis://host/-1", "db must be a number");
	rejects("redis://host/99999999999", "db must be a number");
	rejects("redis://host?db=1", "unexpected '?db=1'");
	rejects("redis://host#x", "unexpected '#x'");
	rejects("redis://ho st", "bad character ' '");
	rejects("redis://[::1", "missing ']'");
	rejects("redis://[zz]:1", "bad IPv6 address");
	rejects("redis://[::1]x", "unexpected 'x' after the host");
	rejects("redis://::1:6379", "an IPv6 address goes in brackets, as in redis://[::1]:6379");
	rejects("redis://fe80::1", "an IPv6 address goes in brackets");
	rejects("redis://host:1:2", "port must be a number");
	rejects("redis://u:%zz@h", "percent-encoding in the password");
	rejects("redis://u:%00@h", "percent-encoding in the password");
	rejects("redis://%4@h", "percent-encoding in the user");
	rejects("unix://", "expected unix:///path");
	rejects("unix://relative.sock", "expected unix:///path");
	rejects("unix:///", "missing socket path");
	rejects("unix:///tmp/r.sock?foo=1", "the only parameter is ?db=N");
	rejects("unix:///tmp/r.sock?db=x", "db must be a number");
	char longpath[200] = "unix:///";
	memset(longpath + 8, 'a', 150);
	rejects(longpath, "socket path is longer than");

	/* A password may hold '/', '?', '#' and '@' unencoded. */
	CHECK_INT(parse("redis://user:se/cret@127.0.0.1"), 0);
	CHECK_STR(u.password, "se/cret");
	CHECK_STR(u.host, "127.0.0.1");
	CHECK_INT(parse("redis://user:1234?top#sec@ret@h:6380/2"), 0);
	CHECK_STR(u.password, "1234?top#sec@ret");
	CHECK_STR(u.host, "h");
	CHECK_INT(u.port, 6380);
	CHECK_INT(u.db, 2);
	CHECK_INT(parse("unix://u:p/w@/tmp/r.sock?db=1"), 0);
	CHECK_STR(u.password, "p/w");
	CHECK_STR(u.path, "/tmp/r.sock");
	CHECK_INT(u.db, 1);
	CHECK_INT(parse("unix://:s3cr@/t-part2@/tmp/r.sock"), 0); /* "@/" in a password */
	CHECK_STR(u.password, "s3cr@/t-part2");
	CHECK_STR(u.path, "/tmp/r.sock");
	CHECK_INT(parse("unix:///tmp/at@sign.sock"), 0);
	CHECK(u.user == NULL);
	CHECK_STR(u.path, "/tmp/at@sign.sock");

	/* A password never shows in a message, even when the URL around it is wrong. */
	CHECK_INT(parse("redis://user:se/cret@host:0"), -1);
	CHECK(strstr(err, "cret") == NULL && strstr(err, "se/") == NULL);
	CHECK_INT(parse("redis://user:1234?topsecret@127.0.0.1:x"), -1);
	CHECK(strstr(err, "topsecret") == NULL);
	CHECK_INT(parse("redis://user:pass/word@127.0.0.1/x"), -1);
	CHECK(strstr(err, "pass") == NULL && strstr(err, "word") == NULL);
	CHECK_INT(parse("redis://bob:hunter2@host:0"), -1);
	CHECK(strstr(err, "hunter2") == NULL);
	CHECK_INT(parse("redis://bob:hunter2@ho%st"), -1);
	CHECK(strstr(err, "hunter2") == NULL);

	/* Sentinel URLs: the master's name and credentials, its Sentinels on 26379 unless they
	 * say otherwise. */
	CHECK_INT(parse("redis+sentinel://:pw@s1,s2:26380,[::1]/mymaster/2"), 0);
	CHECK_INT(u.scheme, URL_TCP);
	CHECK_STR(u.master, "mymaster");
	CHECK_STR(u.password, "pw");
	CHECK_INT(u.db, 2);
	CHECK_INT(u.nhosts, 3);
	CHECK_STR(u.hosts[0].host, "s1");
	CHECK_INT(u.hosts[0].port, 26379);
	CHECK_INT(u.hosts[1].port, 26380);
	CHECK_STR(u.hosts[2].host, "::1");
	CHECK(u.host == NULL);
	CHECK_STR(url_address(&u, buf, sizeof(buf)),
		  "master 'mymaster' (Sentinels s1:26379,s2:26380,[::1]:26379)");
	CHECK_INT(parse("rediss+sentinel://10.0.0.1/m%20one"), 0);
	CHECK_INT(u.scheme, URL_TLS);
	CHECK_STR(u.master, "m one");
	CHECK_STR(url_address(&u, buf, sizeof(buf)), "master 'm one' (Sentinel 10.0.0.1:26379)");
	rejects("redis+sentinel://s1,s2", "missing the master's name");
	rejects("redis+sentinel://s1/", "missing the master's name");
	rejects("redis+sentinel://s1,,s2/m", "missing host");
	rejects("redis+sentinel://s1:0/m", "the port must be");
	rejects("redis+sentinel://s1/m/x", "the db must be a number");
	rejects("redis+sentinel://a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q/m", "at most 16 Sentinels");

	/* Cluster URLs: seeds on 6379 unless they say otherwise, the first one as host, db 0. */
	CHECK_INT(parse("redis+cluster://u:p@c1,c2:7001/0"), 0);
	CHECK(u.cluster);
	CHECK_INT(u.scheme, URL_TCP);
	CHECK_INT(u.nhosts, 2);
	CHECK_STR(u.host, "c1");
	CHECK_INT(u.port, 6379);
	CHECK_INT(u.hosts[1].port, 7001);
	CHECK_STR(u.password, "p");
	CHECK_INT(parse("rediss+cluster://[::1]:7000"), 0);
	CHECK_INT(u.scheme, URL_TLS);
	CHECK_STR(u.host, "::1");
	rejects("redis+cluster://c1/3", "a cluster has db 0 only, not 3");
	rejects("redis+cluster://c1,/", "missing host");
	rejects("redis+cluster://c1?x", "unexpected '?x' after the seeds");
	rejects("redis+cluster://a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", "at most 16 seeds");
	rejects("redis+klaster://h", "unknown scheme 'redis+klaster'");

	url_free(&u);
	return check_done("url");
}
