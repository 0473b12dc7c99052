/* opts: the command-line contract, without touching Redis. */
#include <stdlib.h>

#include "check.h"
#include "clock.h"
#include "exitstatus.h"
#include "opts.h"

#define ARGV(...) ((char *[]){ "redlock-run", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "redlock-run", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(...) parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static struct opts o;
static char err[512];
static enum opts_action last;

/* The argument vector outlives the call, as main's does: o points into it. */
static char *args[32];

static enum opts_action
parse(int argc, char **argv)
{
	memcpy(args, argv, (size_t)(argc + 1) * sizeof(*argv));
	err[0] = '\0';
	last = opts_parse(&o, argc, args, err, sizeof(err));
	return last;
}

/* Refused, with a message that says why. */
#define REFUSED(why, ...)                                                                          \
	do {                                                                                       \
		CHECK_INT(PARSE(__VA_ARGS__), OPTS_USAGE_ERROR);                                   \
		CHECK(strstr(err, why) != NULL);                                                   \
		if (!strstr(err, why))                                                             \
			fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err, why);              \
	} while (0)

#define DONE()                                                                                     \
	do {                                                                                       \
		if (last == OPTS_RUN)                                                              \
			opts_free(&o);                                                             \
	} while (0)

int
main(void)
{
	unsetenv("REDLOCK_URL");
	unsetenv("REDLOCK_PASSWORD");
	setenv("SHELL", "/bin/bash", 1);

	CHECK_INT(PARSE("nightly", "true"), OPTS_RUN);
	CHECK_STR(o.key, "nightly");
	CHECK_STR(o.command[0], "true");
	CHECK(o.command[1] == NULL);
	CHECK_INT(o.ttl, 30 * NS_PER_S);
	CHECK_INT(o.wait, WAIT_FOREVER);
	CHECK_INT(o.conflict_status, STATUS_CONFLICT);
	CHECK_INT(o.on_lost, ON_LOST_TERM);
	CHECK_INT(o.grace, 5 * NS_PER_S);
	CHECK_INT(o.max_hold, 0);
	CHECK_INT(o.verbosity, MSG_NORMAL);
	CHECK_INT(o.urls[0].scheme, URL_TCP);
	CHECK_STR(o.urls[0].host, "127.0.0.1");
	CHECK_INT(o.urls[0].port, 6379);
	DONE();

	/* Parsing stops at KEY: what follows belongs to COMMAND. */
	CHECK_INT(PARSE("k", "ls", "-n", "--ttl", "x"), OPTS_RUN);
	CHECK_STR(o.command[0], "ls");
	CHECK_STR(o.command[1], "-n");
	CHECK_INT(o.wait, WAIT_FOREVER);
	DONE();
	CHECK_INT(PARSE("k", "--", "ls", "-l"), OPTS_RUN);
	CHECK_STR(o.command[0], "ls");
	CHECK_STR(o.command[1], "-l");
	DONE();
	CHECK_INT(PARSE("k", "--", "-c"), OPTS_RUN); /* after --, even -c is a COMMAND */
	CHECK_STR(o.command[0], "-c");
	DONE();
	CHECK_INT(PARSE("--", "k", "cmd"), OPTS_RUN);
	CHECK_STR(o.key, "k");
	DONE();

	/* -c, after KEY as flock has it, or among the options. */
	CHECK_INT(PARSE("k", "-c", "echo hi"), OPTS_RUN);
	CHECK_STR(o.command[0], "/bin/bash");
	CHECK_STR(o.command[1], "-c");
	CHECK_STR(o.command[2], "echo hi");
	CHECK(o.command[3] == NULL);
	DONE();
	CHECK_INT(PARSE("--command", "echo hi", "k"), OPTS_RUN);
	CHECK_STR(o.command[2], "echo hi");
	DONE();
	unsetenv("SHELL");
	CHECK_INT(PARSE("k", "--command", "x"), OPTS_RUN);
	CHECK_STR(o.command[0], "/bin/sh");
	DONE();
	REFUSED("-c requires exactly one command argument", "k", "-c", "x", "y");
	REFUSED("-c requires exactly one command argument", "k", "-c");
	REFUSED("-c and a COMMAND cannot be given together", "-c", "x", "k", "y");
	REFUSED("-c requires exactly one command argument", "-c", "x", "k", "-c", "y");
	REFUSED("--list and --status: one or the other", "--status", "--list", "k");
	REFUSED("--list and --break: one or the other", "--list", "--break");
	REFUSED("-c requires exactly one command argument", "-c", "x", "-c", "y", "k");
	REFUSED("-c requires exactly one command argument", "--command", "x", "-c", "y", "k");

	/* flock's names for an exclusive lock, the only kind: accepted, alone or clustered. */
	CHECK_INT(PARSE("-x", "k", "true"), OPTS_RUN);
	CHECK_STR(o.key, "k");
	DONE();
	CHECK_INT(PARSE("-e", "--exclusive", "k", "true"), OPTS_RUN);
	CHECK_STR(o.key, "k");
	DONE();
	CHECK_INT(PARSE("-xn", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 0);
	DONE();

	/* Waiting. */
	CHECK_INT(PARSE("-n", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 0);
	DONE();
	CHECK_INT(PARSE("--nb", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 0);
	DONE();
	CHECK_INT(PARSE("--nonblocking", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 0);
	DONE();
	CHECK_INT(PARSE("-w", "2.5", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 2500 * NS_PER_MS);
	DONE();
	CHECK_INT(PARSE("--timeout=1m", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 60 * NS_PER_S);
	DONE();
	CHECK_INT(PARSE("--wait", "0", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 0);
	DONE();
	CHECK_INT(PARSE("-n", "-w", "5", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 0); /* -n wins */
	DONE();
	CHECK_INT(PARSE("-w", "5", "-w", "infinity", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, WAIT_FOREVER); /* as without -w: systemd's word */
	DONE();
	CHECK_INT(PARSE("-w", "5", "-n", "k", "true"), OPTS_RUN);
	CHECK_INT(o.wait, 0);
	DONE();
	REFUSED("invalid timeout 'abc'", "-w", "abc", "k", "true");
	REFUSED("invalid timeout '-1'", "-w", "-1", "k", "true");
	REFUSED("invalid timeout '1e99'", "--timeout", "1e99", "k", "true");

	/* The lease. */
	CHECK_INT(PARSE("-t", "100ms", "k", "true"), OPTS_RUN);
	CHECK_INT(o.ttl, 100 * NS_PER_MS);
	CHECK_INT(o.grace, 33333333); /* TTL/3 when that is under 5s */
	DONE();
	CHECK_INT(PARSE("--ttl", "2", "k", "true"), OPTS_RUN);
	CHECK_INT(o.ttl, 2 * NS_PER_S);
	DONE();
	REFUSED("invalid TTL '0': at least 100ms", "-t", "0", "k", "true");
	REFUSED("invalid TTL '99ms': at least 100ms", "-t", "99ms", "k", "true");
	REFUSED("invalid TTL '-5'", "-t", "-5", "k", "true");
	REFUSED("invalid TTL 'abc' (durations: a number and a unit, us, ms, s, m or min, h, d, w, "
		"M or y "
		"(250ms, 1.5s, 10min, 1h30m), or a number of seconds (90, 1.5))",
		"-t", "abc", "k", "true");
	/* How long a server that never answered may take: 3s, --connect-timeout, or its
	 * variable. */
	CHECK_INT(PARSE("k", "true"), OPTS_RUN);
	CHECK_INT(o.connect_timeout, 3 * NS_PER_S);
	DONE();
	setenv("REDLOCK_CONNECT_TIMEOUT", "750ms", 1);
	CHECK_INT(PARSE("k", "true"), OPTS_RUN);
	CHECK_INT(o.connect_timeout, 750 * NS_PER_MS);
	DONE();
	CHECK_INT(PARSE("--connect-timeout", "10s", "k", "true"), OPTS_RUN);
	CHECK_INT(o.connect_timeout, 10 * NS_PER_S);
	DONE();
	/* A bad value from the environment is named by its variable. */
	setenv("REDLOCK_CONNECT_TIMEOUT", "soon", 1);
	REFUSED("invalid REDLOCK_CONNECT_TIMEOUT 'soon'", "k", "true");
	setenv("REDLOCK_CONNECT_TIMEOUT", "0", 1);
	REFUSED("invalid REDLOCK_CONNECT_TIMEOUT '0': must be more than 0", "k", "true");
	unsetenv("REDLOCK_CONNECT_TIMEOUT");
	REFUSED("invalid --connect-timeout '0': must be more than 0", "--connect-timeout", "0", "k",
		"true");
	REFUSED("invalid --connect-timeout 'soon'", "--connect-timeout", "soon", "k", "true");
	/* systemd's spellings, pasted from a unit file. */
	CHECK_INT(PARSE("-t", "1h 30min", "-w", "10min", "k", "true"), OPTS_RUN);
	CHECK_INT(o.ttl, 5400 * NS_PER_S);
	CHECK_INT(o.wait, 600 * NS_PER_S);
	DONE();
	REFUSED("invalid TTL '99999999999999999999': too long (292 years at most)", "-t",
		"99999999999999999999", "k", "true");

	/* The conflict status. */
	CHECK_INT(PARSE("-E", "0", "k", "true"), OPTS_RUN);
	CHECK_INT(o.conflict_status, 0);
	DONE();
	CHECK_INT(PARSE("--conflict-exit-code", "255", "k", "true"), OPTS_RUN);
	CHECK_INT(o.conflict_status, 255);
	DONE();
	REFUSED("invalid conflict exit code '256'", "-E", "256", "k", "true");
	REFUSED("invalid conflict exit code '-1'", "-E", "-1", "k", "true");
	REFUSED("invalid conflict exit code 'x'", "-E", "x", "k", "true");
	REFUSED("invalid conflict exit code ''", "-E", "", "k", "true");

	/* Losing the lock. */
	CHECK_INT(PARSE("--on-lost", "kill", "--grace", "2s", "--max-hold", "1h", "k", "true"),
		  OPTS_RUN);
	CHECK_INT(o.on_lost, ON_LOST_KILL);
	CHECK_INT(o.grace, 2 * NS_PER_S);
	CHECK_INT(o.max_hold, 3600 * NS_PER_S);
	DONE();
	CHECK_INT(PARSE("--on-lost=ignore", "k", "true"), OPTS_RUN);
	CHECK_INT(o.on_lost, ON_LOST_IGNORE);
	DONE();
	CHECK_INT(PARSE("--grace", "0", "k", "true"), OPTS_RUN);
	CHECK_INT(o.grace, 0);
	DONE();
	REFUSED("invalid --on-lost 'stop': term, kill or ignore", "--on-lost", "stop", "k", "true");
	REFUSED("invalid grace period 'x'", "--grace", "x", "k", "true");
	REFUSED("invalid --max-hold '0': must be more than 0", "--max-hold", "0", "k", "true");

	/* --status asks and runs nothing. */
	CHECK_INT(PARSE("--status", "job"), OPTS_RUN);
	CHECK(o.status && !o.json);
	CHECK_STR(o.key, "job");
	CHECK(o.command == NULL);
	DONE();
	CHECK_INT(PARSE("--status", "--json", "-E", "3", "job"), OPTS_RUN);
	CHECK(o.status && o.json);
	CHECK_INT(o.conflict_status, 3);
	DONE();
	REFUSED("--json goes with --status", "--json", "job", "true");
	REFUSED("--status takes a KEY and no COMMAND", "--status", "job", "true");
	REFUSED("--status takes a KEY and no COMMAND", "--status", "job", "--", "true");
	REFUSED("--status takes a KEY and no COMMAND", "--status", "-c", "x", "job");
	REFUSED("missing KEY", "--status");
	/* Running nothing, they take options after KEY too; not after "--", nor a second KEY. */
	CHECK_INT(PARSE("--status", "job", "--json", "-v"), OPTS_RUN);
	CHECK(o.status && o.json && o.verbosity == MSG_VERBOSE);
	CHECK_STR(o.key, "job");
	DONE();
	REFUSED("--status takes a KEY and no COMMAND", "--status", "job", "--json", "other");
	REFUSED("--status takes a KEY and no COMMAND", "--status", "--", "job", "--json");
	REFUSED("unknown option '--bogus'", "--status", "job", "--bogus");

	/* --list takes a pattern, all by default; --break a KEY, and --yes only with it. */
	CHECK_INT(PARSE("--list"), OPTS_RUN);
	CHECK(o.list && o.command == NULL);
	CHECK_STR(o.key, "*");
	DONE();
	CHECK_INT(PARSE("--list", "--json", "--prefix", "ci:", "deploy:*"), OPTS_RUN);
	CHECK(o.list && o.json);
	CHECK_STR(o.key, "ci:deploy:*");
	DONE();
	REFUSED("--list takes a PATTERN at most, and no COMMAND", "--list", "a*", "true");
	REFUSED("--list and --status: one or the other", "--list", "--status", "a");
	CHECK_INT(PARSE("--break", "--yes", "job"), OPTS_RUN);
	CHECK(o.brk && o.yes && o.command == NULL);
	DONE();
	REFUSED("--yes goes with --break", "--yes", "job", "true");
	REFUSED("--break and --status: one or the other", "--break", "--status", "job");
	REFUSED("--break takes a KEY and no COMMAND", "--break", "job", "true");
	CHECK_INT(PARSE("--break", "job", "--yes"), OPTS_RUN);
	CHECK(o.brk && o.yes);
	CHECK_STR(o.key, "job");
	DONE();
	CHECK_INT(PARSE("--list", "deploy:*", "--json"), OPTS_RUN);
	CHECK(o.list && o.json);
	CHECK_STR(o.key, "deploy:*");
	DONE();
	/* A run's options stop at KEY, as flock's do: what follows is the command's. */
	CHECK_INT(PARSE("job", "--json"), OPTS_RUN);
	CHECK(!o.json && o.command && strcmp(o.command[0], "--json") == 0);
	DONE();
	/* A prefix is part of the name, which the rule for '}' then applies to. */
	CHECK_INT(PARSE("--prefix", "{team}:", "job", "true"), OPTS_RUN);
	CHECK_STR(o.key, "{team}:job");
	DONE();
	REFUSED("KEY 'a}job' (--prefix 'a}' and 'job') has a '}'", "--prefix", "a}", "job", "true");
	REFUSED("KEY 'a}x}' has a '}'", "--prefix", "a}", "x}", "true");
	/* With --list, the prefix is literal in the pattern. */
	CHECK_INT(PARSE("--list", "--prefix", "t[1]*:"), OPTS_RUN);
	CHECK_STR(o.key, "t\\[1\\]\\*:*");
	DONE();

	/* Verbosity: the last of -v and -q wins. */
	CHECK_INT(PARSE("-v", "k", "true"), OPTS_RUN);
	CHECK_INT(o.verbosity, MSG_VERBOSE);
	DONE();
	CHECK_INT(PARSE("-v", "--quiet", "k", "true"), OPTS_RUN);
	CHECK_INT(o.verbosity, MSG_QUIET);
	DONE();

	/* What is missing or unknown. */
	REFUSED("missing KEY", "-n");
	CHECK_INT(parse(1, (char *[]){ "redlock-run", NULL }), OPTS_USAGE_ERROR);
	CHECK_STR(err, "missing KEY");
	REFUSED("KEY must not be empty", "", "true");
	REFUSED("PATTERN must not be empty (every lock: '*')", "--list", "");
	{
		/* The longest KEY is taken, one byte more is not (REDLOCK_KEY must reach exec). */
		static char key[65538];
		memset(key, 'k', 65537);
		REFUSED("KEY is longer than 65536 bytes", key, "true");
		key[65536] = '\0';
		CHECK_INT(PARSE(key, "true"), OPTS_RUN);
		DONE();
		/* A prefix adds to it, as long as the prefix is no longer (a 1 KiB buffer took
		 * 1023 bytes of both); with --list, its characters quoted. */
		static char prefix[65538];
		memset(prefix, '*', 65536);
		CHECK_INT(PARSE("--prefix", prefix, key, "true"), OPTS_RUN);
		CHECK(strlen(o.key) == 2 * 65536 && o.key[0] == '*' && o.key[65536] == 'k');
		CHECK_STR(o.name, key);
		DONE();
		CHECK_INT(PARSE("--list", "--prefix", prefix, key), OPTS_RUN);
		CHECK(strlen(o.key) == 3 * 65536 && strncmp(o.key, "\\*\\*", 4) == 0);
		DONE();
		/* Refused after the prefixed name was made: freed all the same (LeakSanitizer). */
		REFUSED("--json goes with --status or --list", "--prefix", "p:", "--json", "k",
			"true");
		prefix[65536] = '*';
		REFUSED("--prefix is longer than 65536 bytes", "--prefix", prefix, "k", "true");
		setenv("REDLOCK_PREFIX", prefix, 1);
		REFUSED("$REDLOCK_PREFIX is longer than 65536 bytes", "k", "true");
		unsetenv("REDLOCK_PREFIX");
	}
	REFUSED("missing COMMAND after KEY", "k");
	REFUSED("missing COMMAND after KEY", "k", "--");
	REFUSED("unknown option '--bogus'", "--bogus", "k", "true");
	REFUSED("unknown option '--bogus'", "--bogus=1", "k", "true");
	/* flock's options and its file descriptor form say what stands for them here. */
	REFUSED("unknown option '-o' (flock's: redlock-run holds no file descriptor that COMMAND "
		"could inherit; what COMMAND leaves running in its process group is stopped when "
		"it "
		"ends)",
		"-o", "k", "true");
	REFUSED("unknown option '--unlock' (flock's: the lock is released when COMMAND ends; "
		"--break ends another's)",
		"--unlock", "k", "true");
	REFUSED("missing COMMAND after KEY (there is no file descriptor form, as flock's: KEY is "
		"a lock's name)",
		"9");
	REFUSED("unknown option '-y'", "-y", "k", "true");
	REFUSED("unknown option '-y'", "-ny", "k", "true");
	REFUSED("unknown option '-y'", "--nb", "-yn", "k", "true");
	REFUSED("option '-w' requires an argument", "-w");
	REFUSED("option '--ttl' requires an argument", "--ttl");
	REFUSED("option '--nb' does not take an argument", "--nb=1", "k", "true");
	CHECK_INT(PARSE("-h"), OPTS_HELP);
	CHECK_INT(PARSE("--help", "k"), OPTS_HELP);
	CHECK_INT(PARSE("-V"), OPTS_VERSION);
	CHECK_INT(PARSE("--version"), OPTS_VERSION);

	/* Where Redis is: -r, else REDLOCK_URL, else the default; passwords from
	 * REDLOCK_PASSWORD unless the URL has one. */
	CHECK_INT(PARSE("-r", "unix:///tmp/x.sock", "k", "true"), OPTS_RUN);
	CHECK_STR(o.urls[0].path, "/tmp/x.sock");
	DONE();
	setenv("REDLOCK_URL", "redis://envhost:7000/4", 1);
	CHECK_INT(PARSE("k", "true"), OPTS_RUN);
	CHECK_STR(o.urls[0].host, "envhost");
	CHECK_INT(o.urls[0].db, 4);
	DONE();
	CHECK_INT(PARSE("--redis", "redis://cli-host", "k", "true"), OPTS_RUN);
	CHECK_STR(o.urls[0].host, "cli-host");
	DONE();
	setenv("REDLOCK_URL", "redis://envhost:0", 1);
	REFUSED("invalid Redis URL in REDLOCK_URL: the port must be", "k", "true");
	unsetenv("REDLOCK_URL");
	REFUSED("invalid Redis URL: unknown scheme 'tcp'", "-r", "tcp://h", "k", "true");
	setenv("REDLOCK_URL", "redis://a:1,redis://b:2", 1);
	REFUSED("; servers are separated by spaces, not commas", "k", "true");
	unsetenv("REDLOCK_URL");
	REFUSED("invalid Redis URL: the db must be a number", "-r", "redis://h:1/0x", "k", "true");
	setenv("REDLOCK_PASSWORD", "from-env", 1);
	CHECK_INT(PARSE("-r", "redis://alice@h", "k", "true"), OPTS_RUN);
	CHECK_STR(o.urls[0].user, "alice");
	CHECK_STR(o.urls[0].password, "from-env");
	CHECK_STR(o.urls[0].password_from, "$REDLOCK_PASSWORD");
	DONE();
	CHECK_INT(PARSE("-r", "redis://:in-url@h", "k", "true"), OPTS_RUN);
	CHECK_STR(o.urls[0].password, "in-url");
	CHECK_STR(o.urls[0].password_from, "the URL, which goes before $REDLOCK_PASSWORD");
	DONE();
	/* A Kubernetes Secret made from a file ends with a line feed, which is no part of the
	 * password. */
	setenv("REDLOCK_PASSWORD", "from-a-file\r\n", 1);
	CHECK_INT(PARSE("-r", "redis://h", "k", "true"), OPTS_RUN);
	CHECK_STR(o.urls[0].password, "from-a-file");
	DONE();
	setenv("REDLOCK_PASSWORD", "", 1);
	CHECK_INT(PARSE("k", "true"), OPTS_RUN);
	CHECK(o.urls[0].password == NULL);
	DONE();

	/* A KEY whose helper keys could not share its Redis Cluster slot is refused, whatever
	 * the servers; one with a hash tag, or without '}', is fine. */
	REFUSED("give it a tag of its own, such as '{locks}a}b'", "a}b", "true");
	REFUSED("has a '}' but no hash tag", "{}b", "true");
	CHECK_INT(PARSE("{a}b", "true"), OPTS_RUN);
	DONE();
	CHECK_INT(PARSE("a{b", "true"), OPTS_RUN);
	DONE();

	/* A Sentinel URL's Sentinels get credentials of their own from the environment. */
	setenv("REDLOCK_SENTINEL_USER", "watcher", 1);
	setenv("REDLOCK_SENTINEL_PASSWORD", "s-pw\n", 1);
	CHECK_INT(PARSE("-r", "redis+sentinel://:m-pw@s1/main", "-r", "redis://h", "k", "true"),
		  OPTS_RUN);
	CHECK_STR(o.urls[0].password, "m-pw");
	CHECK_STR(o.urls[0].sentinel_user, "watcher");
	CHECK_STR(o.urls[0].sentinel_password, "s-pw");
	CHECK(o.urls[1].sentinel_user == NULL);
	DONE();
	unsetenv("REDLOCK_SENTINEL_USER");
	unsetenv("REDLOCK_SENTINEL_PASSWORD");

	/* --limit N: 1 (a lock) to OPTS_LIMIT_MAX; refused with several servers. */
	CHECK_INT(PARSE("-l", "3", "k", "true"), OPTS_RUN);
	CHECK_INT(o.limit, 3);
	DONE();
	CHECK_INT(PARSE("--limit", "1", "-r", "redis://a", "-r", "redis://b", "k", "true"),
		  OPTS_RUN);
	DONE();
	REFUSED("invalid --limit '0'", "--limit", "0", "k", "true");
	REFUSED("invalid --limit '-2'", "--limit=-2", "k", "true");
	REFUSED("invalid --limit '2x'", "-l", "2x", "k", "true");
	REFUSED("a quorum of servers cannot keep the holders to 2", "-l", "2", "-r", "redis://a",
		"-r", "redis://b", "k", "true");

	/* -s, --shared; -x and -e undo it (the last counts, as in flock); not with --limit N or
	 * several servers. */
	CHECK_INT(PARSE("-s", "k", "true"), OPTS_RUN);
	CHECK(o.shared);
	DONE();
	CHECK_INT(PARSE("--shared", "-x", "k", "true"), OPTS_RUN);
	CHECK(!o.shared);
	DONE();
	CHECK_INT(PARSE("-e", "-s", "-l", "1", "k", "true"), OPTS_RUN);
	CHECK(o.shared);
	DONE();
	REFUSED("--shared and --limit 2", "-s", "-l", "2", "k", "true");
	REFUSED("--shared with 2 servers is not supported yet", "-s", "-r", "redis://a", "-r",
		"redis://b", "k", "true");

	/* --min-hold: a duration; 0 is none. */
	CHECK_INT(PARSE("--min-hold", "10m", "k", "true"), OPTS_RUN);
	CHECK_INT(o.min_hold, 600 * NS_PER_S);
	DONE();
	CHECK_INT(PARSE("k", "true"), OPTS_RUN);
	CHECK_INT(o.min_hold, 0);
	DONE();
	REFUSED("invalid --min-hold 'x'", "--min-hold", "x", "k", "true");

	/* --queue fifo|latest and --cancel-running: a lock's, on one server. */
	CHECK_INT(PARSE("k", "true"), OPTS_RUN);
	CHECK(!o.latest && !o.cancel_running && !o.queue_given);
	DONE();
	CHECK_INT(PARSE("--queue", "latest", "--cancel-running", "k", "true"), OPTS_RUN);
	CHECK(o.latest && o.cancel_running && o.queue_given);
	DONE();
	CHECK_INT(PARSE("--queue", "latest", "--queue", "fifo", "k", "true"), OPTS_RUN);
	CHECK(!o.latest && o.queue_given);
	DONE();
	REFUSED("invalid --queue 'lifo' (fifo or latest)", "--queue", "lifo", "k", "true");
	REFUSED("--cancel-running goes with --queue latest", "--cancel-running", "k", "true");
	REFUSED("--queue latest is for a lock: not with --shared", "--queue", "latest", "-s", "k",
		"true");
	REFUSED("--queue latest is for a lock: not with --limit", "--queue", "latest", "-l", "3",
		"k", "true");
	REFUSED("--queue fifo with 2 servers", "--queue", "fifo", "-r", "redis://a", "-r",
		"redis://b", "k", "true");
	REFUSED("or leave --queue out: waiters then take the lock as they come, in no order",
		"--queue", "fifo", "-r", "redis://a", "-r", "redis://b", "k", "true");
	REFUSED("--queue latest with 2 servers", "--queue", "latest", "-r", "redis://a", "-r",
		"redis://b", "k", "true");

	/* --wait-replicas N[,TIMEOUT]: TTL/10 by default, at most a third of the TTL. */
	CHECK_INT(PARSE("--wait-replicas", "2", "-t", "10s", "k", "true"), OPTS_RUN);
	CHECK_INT(o.replicas, 2);
	CHECK_INT(o.replicas_timeout, NS_PER_S);
	DONE();
	CHECK_INT(PARSE("--wait-replicas", "1,250ms", "k", "true"), OPTS_RUN);
	CHECK_INT(o.replicas_timeout, 250 * NS_PER_MS);
	DONE();
	setenv("REDLOCK_WAIT_REPLICAS", "1", 1);
	CHECK_INT(PARSE("k", "true"), OPTS_RUN);
	CHECK_INT(o.replicas, 1);
	DONE();
	CHECK_INT(PARSE("--wait-replicas", "0", "k", "true"), OPTS_RUN); /* the option wins */
	CHECK_INT(o.replicas, 0);
	CHECK_INT(o.replicas_timeout, 0);
	DONE();
	setenv("REDLOCK_WAIT_REPLICAS", "x", 1);
	REFUSED("invalid REDLOCK_WAIT_REPLICAS 'x'", "k", "true");
	unsetenv("REDLOCK_WAIT_REPLICAS");
	REFUSED("invalid --wait-replicas 'x'", "--wait-replicas", "x", "k", "true");
	REFUSED("invalid --wait-replicas '101'", "--wait-replicas", "101", "k", "true");
	REFUSED("from 1ms to a third of the TTL", "--wait-replicas", "1,0", "k", "true");
	REFUSED("from 1ms to a third of the TTL", "-t", "3s", "--wait-replicas", "1,2s", "k",
		"true");
	REFUSED("invalid --wait-replicas timeout 'soon'", "--wait-replicas", "1,soon", "k", "true");

	return check_done("opts");
}
