#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "duration.h"
#include "exitstatus.h"
#include "msg.h"
#include "util.h"

/* The longest KEY (see opts_parse). */
#define KEY_MAX 65536

enum {
	OPT_ON_LOST = CHAR_MAX + 1,
	OPT_GRACE,
	OPT_MAX_HOLD,
	OPT_STATUS,
	OPT_JSON,
	OPT_BREAK,
	OPT_YES,
	OPT_LIST,
	OPT_CACERT,
	OPT_CACERTDIR,
	OPT_CERT,
	OPT_KEY,
	OPT_SNI,
	OPT_INSECURE,
	OPT_PASSWORD_FILE,
	OPT_WAIT_REPLICAS,
	OPT_MIN_HOLD,
	OPT_CONNECT_TIMEOUT,
	OPT_PREFIX,
	OPT_QUEUE,
	OPT_CANCEL_RUNNING,
};

static const char short_options[] = "+:r:t:nw:E:c:l:sxevqhV";

static const struct option long_options[] = {
	{ "redis", required_argument, NULL, 'r' },
	{ "ttl", required_argument, NULL, 't' },
	{ "nonblock", no_argument, NULL, 'n' },
	{ "nonblocking", no_argument, NULL, 'n' },
	{ "nb", no_argument, NULL, 'n' },
	{ "wait", required_argument, NULL, 'w' },
	{ "timeout", required_argument, NULL, 'w' },
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "command", required_argument, NULL, 'c' },
	{ "shared", no_argument, NULL, 's' },
	{ "exclusive", no_argument, NULL, 'x' },
	{ "limit", required_argument, NULL, 'l' },
	{ "on-lost", required_argument, NULL, OPT_ON_LOST },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "max-hold", required_argument, NULL, OPT_MAX_HOLD },
	{ "min-hold", required_argument, NULL, OPT_MIN_HOLD },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "cancel-running", no_argument, NULL, OPT_CANCEL_RUNNING },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "break", no_argument, NULL, OPT_BREAK },
	{ "yes", no_argument, NULL, OPT_YES },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "cacert", required_argument, NULL, OPT_CACERT },
	{ "cacertdir", required_argument, NULL, OPT_CACERTDIR },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "sni", required_argument, NULL, OPT_SNI },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },
	{ "wait-replicas", required_argument, NULL, OPT_WAIT_REPLICAS },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "prefix", required_argument, NULL, OPT_PREFIX },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

void
opts_print_help(FILE *out)
{
	static const char *const lines[] = {
		"Usage:",
		"  redlock-run [options] KEY [--] COMMAND [ARG...]",
		"  redlock-run [options] KEY -c 'SHELL COMMAND'",
		"  redlock-run --status [--json] [options] KEY",
		"  redlock-run --list [--json] [options] [PATTERN]",
		"  redlock-run --break [--yes] [options] KEY",
		"",
		"Take the Redis lock KEY, run COMMAND while holding it (renewing the lease as",
		"long as COMMAND runs), release it when COMMAND exits, and exit with COMMAND's",
		"status.",
		"",
		"Options:",
		"  -r, --redis URL            the Redis server (default: $REDLOCK_URL, else",
		"                             " URL_DEFAULT "); given several times, a",
		"                             quorum of independent servers (Redlock)",
		"  -t, --ttl DURATION         the lease, renewed every TTL/3 while COMMAND runs",
		"                             (default 30s, at least 100ms)",
		"  -n, --nonblock             fail at once if KEY is held",
		"                             (also --nb, --nonblocking)",
		"  -w, --wait, --timeout DURATION",
		"                             give up after waiting DURATION for KEY (-w 0 is -n,",
		"                             -w infinity as long as it takes)",
		"  -E, --conflict-exit-code N",
		"                             exit status when the lock is not acquired (75)",
		"  -c, --command STRING       run STRING with $SHELL -c (or /bin/sh)",
		"  -s, --shared               share KEY with other shared holders; an exclusive",
		"                             one waits for them all, and newcomers for it",
		"  -x, -e, --exclusive        an exclusive lock (the default, as flock)",
		"  -l, --limit N              up to N holders of KEY at once (a semaphore);",
		"                             --limit 1 is the lock",
		"      --on-lost term|kill|ignore",
		"                             what happens to COMMAND if the lock is lost",
		"                             (term: SIGTERM, then SIGKILL after --grace)",
		"      --grace DURATION       from SIGTERM to SIGKILL when COMMAND must stop",
		"                             (default: the smaller of 5s and TTL/3)",
		"      --max-hold DURATION    stop COMMAND once it has held the lock this long",
		"      --min-hold DURATION    keep the lock taken this long after it was acquired,",
		"                             even when COMMAND ends sooner (cron clock skew)",
		"      --queue fifo|latest    the line's discipline: arrival order (fifo, the",
		"                             default), or only the newest waits (latest: an",
		"                             older waiter exits with the conflict status);",
		"                             every run on KEY must use the same",
		"      --cancel-running       with --queue latest: a newer run also stops the",
		"                             running command, if it was started with",
		"                             --cancel-running too (it then exits 77)",
		"      --prefix STRING        put STRING in front of KEY: a namespace for a team's",
		"                             locks (default $REDLOCK_PREFIX)",
		"      --status               say who holds KEY, since when, for how long, with",
		"                             which fence, and who waits; exit 0 if it is free,",
		"                             the conflict status if held",
		"      --list [PATTERN]       list every lock whose name matches PATTERN (a glob;",
		"                             default all): holders, taken when, lease left,",
		"                             fence, how many wait; runs nothing",
		"      --json                 with --status: one JSON object; with --list, one",
		"                             a line, for each lock",
		"      --break                end KEY's lock on purpose: its holders are stopped",
		"                             at their next renewal (76), its fence moves on,",
		"                             the next waiter gets it; asks first on a terminal",
		"      --yes                  with --break: do not ask",
		"      --cacert FILE          rediss://: trust the CAs in FILE, not the system's",
		"      --cacertdir DIR        rediss://: trust the CAs in DIR",
		"      --cert FILE, --key FILE",
		"                             rediss://: a client certificate and its key",
		"      --sni NAME             rediss://: the server name to send and verify",
		"      --insecure             rediss://: do not verify the server at all",
		"      --password-file FILE   the password: the first line of FILE",
		"      --connect-timeout DURATION",
		"                             a server that has not answered by then ends the",
		"                             run with 69 (default 3s)",
		"      --wait-replicas N[,TIMEOUT]",
		"                             a grant or renewal counts only once N replicas",
		"                             acknowledged it within TIMEOUT (default TTL/10)",
		"  -v, --verbose              say what happens and how long it took",
		"  -q, --quiet                print fatal errors only",
		"  -h, --help                 show this help and exit",
		"  -V, --version              show the version and exit",
		"",
		"DURATION is 250ms, 1.5s, 30s, 10min, 1h30m, 2d, or a number of seconds (90).",
		"URL is redis://[user[:password]@]host[:port][/db], rediss://... (TLS),",
		"unix://[user[:password]@]/path/to/redis.sock[?db=N], the master that",
		"Sentinels name: redis+sentinel://[user[:password]@]host[:port][,host[:port]...]",
		"/MASTER[/db] (rediss+sentinel:// for TLS; Sentinels' own credentials come from",
		"$REDLOCK_SENTINEL_USER and $REDLOCK_SENTINEL_PASSWORD), or a Redis Cluster:",
		"redis+cluster://[user[:password]@]host[:port][,host[:port]...] (any node's",
		"redis:// URL works too; rediss+cluster:// for TLS). A password that should",
		"not appear on the command line comes from --password-file FILE (its first",
		"line), $REDLOCK_PASSWORD_FILE or $REDLOCK_PASSWORD.",
		"COMMAND's environment gains REDLOCK_KEY, REDLOCK_TOKEN and REDLOCK_FENCE (and",
		"REDLOCK_HOLDERS with --limit or --shared).",
		"",
		"Exit status: COMMAND's own; 128+N if it was killed by signal N; 64 usage error;",
		"69 Redis unavailable; 71 system error; 75 lock not acquired (see -E);",
		"76 lock lost while COMMAND ran; 77 cancelled by a newer run (--cancel-running);",
		"124 --max-hold ran out;",
		"126 COMMAND not executable; 127 COMMAND not found.",
		"",
		"See redlock-run(1) for the details.",
	};

	for (size_t i = 0; i < ARRAY_LEN(lines); i++)
		fprintf(out, "%s\n", lines[i]);
}

static enum opts_action usage_error(char *err, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum opts_action
usage_error(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return OPTS_USAGE_ERROR;
}

/* The name an option was given by, for messages: "-w" or "--timeout". arg is the argv
 * element that holds it (a cluster such as "-nx" for short options). */
static const char *
option_name(const char *arg, char *buf, size_t size)
{
	if (arg[0] == '-' && arg[1] == '-')
		snprintf(buf, size, "%.*s", (int)strcspn(arg, "="), arg);
	else
		snprintf(buf, size, "-%c", optopt);
	return buf;
}

/* What to say of one of flock(1)'s options that redlock-run does not have, named as
 * option_name names it: "" for another. */
static const char *
flock_only(const char *name)
{
	if (!strcmp(name, "-o") || !strcmp(name, "--close"))
		return " (flock's: redlock-run holds no file descriptor that COMMAND could "
		       "inherit; what COMMAND leaves running in its process group is stopped "
		       "when it ends)";
	if (!strcmp(name, "-u") || !strcmp(name, "--unlock"))
		return " (flock's: the lock is released when COMMAND ends; --break ends another's)";
	if (!strcmp(name, "-F") || !strcmp(name, "--no-fork"))
		return " (flock's: redlock-run runs COMMAND as its child, to renew the lock "
		       "meanwhile)";
	if (!strcmp(name, "--fcntl"))
		return " (flock's: the lock is in Redis, not on a file)";
	return "";
}

/* s into buf as a SCAN pattern that matches s alone: each of the pattern's special characters
 * behind a backslash. */
static const char *
glob_quoted(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; *s && n + 2 < size; s++) {
		if (strchr("*?[]\\", *s))
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = '\0';
	return buf;
}

/* Parses the duration arg of an option; false with "invalid <what> '<arg>'" in err. */
static bool
take_duration(const char *what, const char *arg, int64_t *out, char *err, size_t size)
{
	enum duration_result d = duration_parse(arg, out);

	if (d == DURATION_OK)
		return true;
	usage_error(err, size, "invalid %s '%s'%s", what, arg,
		    d == DURATION_RANGE ? ": too long (292 years at most)"
					: " (durations: " DURATION_FORMS ")");
	return false;
}

/* A file or directory an option names must be readable now: a usage error, not a failed
 * connection later. */
static bool
take_path(const char *option, const char *path, bool dir, const char **out, char *err, size_t size)
{
	struct stat st;
	char why[128];

	/* (A file is no directory, whatever access says of its X bit.) */
	if (!*path || (access(path, dir ? R_OK | X_OK : R_OK) < 0 &&
		       !(dir && stat(path, &st) == 0 && !S_ISDIR(st.st_mode)))) {
		usage_error(err, size, "%s '%s': %s%s%s", option, path,
			    !*path ? "empty"
			    : dir  ? "not a readable directory"
				   : "not readable",
			    *path ? ": " : "", *path ? msg_strerror(errno, why, sizeof(why)) : "");
		return false;
	}
	if (dir && stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		usage_error(err, size, "%s '%s': not a directory%s", option, path,
			    *option == '-' ? " (a file of CA certificates goes to --cacert)"
					   : " (a file of CA certificates goes to REDLOCK_CACERT)");
		return false;
	}
	/* A directory of CA certificates given for a file of them: the other option. */
	if (!dir && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		bool cacert = strstr(option, "CACERT") || strstr(option, "cacert");
		usage_error(err, size, "%s '%s': a directory, not a file%s%s", option, path,
			    cacert ? " (a directory of CA certificates goes to " : "",
			    !cacert          ? ""
			    : *option == '-' ? "--cacertdir)"
					     : "REDLOCK_CACERTDIR)");
		return false;
	}
	*out = path;
	return true;
}

/*
 * --wait-replicas N[,TIMEOUT]: N from 0 (none) to OPTS_REPLICAS_MAX, TIMEOUT from 1ms to a third
 * of the TTL (a grant that comes later than that does not count anyway), TTL/10 by default.
 */
static enum opts_action
parse_replicas(struct opts *o, const char *name, const char *arg, char *err, size_t size)
{
	const char *comma = strchr(arg, ',');
	size_t len = comma ? (size_t)(comma - arg) : strlen(arg);
	char n[8], what[64];
	long count = -1;
	char *end;

	if (len > 0 && len < sizeof(n) && strspn(arg, "0123456789") == len) {
		memcpy(n, arg, len);
		n[len] = '\0';
		count = strtol(n, &end, 10);
	}
	if (count < 0 || count > OPTS_REPLICAS_MAX)
		return usage_error(err, size, "invalid %s '%s': N[,TIMEOUT], N from 0 to %d", name,
				   arg, OPTS_REPLICAS_MAX);
	o->replicas = (int)count;
	o->replicas_timeout = o->ttl / OPTS_REPLICAS_WAIT_SHARE;
	snprintf(what, sizeof(what), "%s timeout", name);
	if (comma && !take_duration(what, comma + 1, &o->replicas_timeout, err, size))
		return OPTS_USAGE_ERROR;
	if (o->replicas_timeout < NS_PER_MS || o->replicas_timeout > o->ttl / 3)
		return usage_error(err, size, "invalid %s '%s': from 1ms to a third of the TTL",
				   what, comma + 1);
	if (!o->replicas)
		o->replicas_timeout = 0;
	return OPTS_RUN;
}

/*
 * Whether KEY's helper keys can share its Redis Cluster hash slot, as lock_aux_key names them:
 * either KEY has a hash tag (a '{' with a '}' after it, and something between), which they
 * keep, or it has no '}', and braces around the whole of it make the tag.
 */
static bool
one_slot(const char *key)
{
	const char *open = strchr(key, '{');
	const char *close = open ? strchr(open + 1, '}') : NULL;

	return (close && close > open + 1) || !strchr(key, '}');
}

/* A count from 0 to max, all digits: 0, or -1. */
static int
parse_count(const char *s, int max, int *out)
{
	long n = 0;

	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9)
		return -1;
	n = strtol(s, NULL, 10);
	if (n > max)
		return -1;
	*out = (int)n;
	return 0;
}

/* The TLS settings that were not given as options, from REDLOCK_CACERT and the others. */
static bool
tls_from_environment(struct opts *o, char *err, size_t size)
{
	static const struct {
		const char *variable;
		bool dir;
		size_t field;
	} vars[] = {
		{ "REDLOCK_CACERT", false, offsetof(struct tls_config, cacert) },
		{ "REDLOCK_CACERTDIR", true, offsetof(struct tls_config, cacertdir) },
		{ "REDLOCK_CERT", false, offsetof(struct tls_config, cert) },
		/* Not REDLOCK_KEY: that names the lock in COMMAND's environment, where a
		 * redlock-run of its own would take it for a file. */
		{ "REDLOCK_CERT_KEY", false, offsetof(struct tls_config, key) },
	};
	const char *v;

	for (size_t i = 0; i < ARRAY_LEN(vars); i++) {
		const char **field = (const char **)(void *)((char *)&o->tls + vars[i].field);
		if (*field || !(v = getenv(vars[i].variable)) || !*v)
			continue;
		if (!take_path(vars[i].variable, v, vars[i].dir, field, err, size))
			return false;
	}
	if (!o->tls.sni && (v = getenv("REDLOCK_SNI")) && *v) {
		o->tls.sni = v;
	}
	/* A security switch takes no guess: "false" must not turn verification off. */
	if (!o->tls.insecure && (v = getenv("REDLOCK_INSECURE")) && *v) {
		if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
		    !strcasecmp(v, "on"))
			o->tls.insecure = true;
		else if (strcmp(v, "0") && strcasecmp(v, "no") && strcasecmp(v, "false") &&
			 strcasecmp(v, "off")) {
			usage_error(err, size,
				    "REDLOCK_INSECURE '%s': give 1 (yes, true, on) to verify no "
				    "certificate, or 0 (no, false, off)",
				    v);
			return false;
		}
	}
	return true;
}

static int
parse_exit_code(const char *s, int *out)
{
	long n = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		n = n * 10 + (*s - '0');
		if (n > 255)
			return -1;
	}
	*out = (int)n;
	return 0;
}

static int
parse_on_lost(const char *s, enum on_lost *out)
{
	static const struct {
		const char *name;
		enum on_lost value;
	} names[] = {
		{ "term", ON_LOST_TERM },
		{ "kill", ON_LOST_KILL },
		{ "ignore", ON_LOST_IGNORE },
	};

	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		if (strcmp(s, names[i].name) == 0) {
			*out = names[i].value;
			return 0;
		}
	}
	return -1;
}

/* Takes what follows KEY: "[--] COMMAND [ARG...]" or "-c STRING". */
static enum opts_action
parse_command(struct opts *o, char **rest, int nrest, const char *shell_string, char *err,
	      size_t size)
{
	const char *shell;

	if (nrest > 0 && (!strcmp(rest[0], "-c") || !strcmp(rest[0], "--command"))) {
		if (shell_string || nrest != 2)
			return usage_error(err, size, "%s requires exactly one command argument",
					   rest[0]);
		shell_string = rest[1];
		nrest = 0;
	} else if (nrest > 0 && !strcmp(rest[0], "--")) {
		rest++;
		nrest--;
	}
	if (shell_string && nrest > 0)
		return usage_error(err, size, "-c and a COMMAND cannot be given together");
	if (!shell_string) {
		if (nrest == 0)
			return usage_error(
				err, size, "missing COMMAND after KEY%s",
				o->key[0] && strspn(o->key, "0123456789") == strlen(o->key)
					? " (there is no file descriptor form, as flock's: "
					  "KEY is a lock's name)"
					: "");
		o->command = rest;
		return OPTS_RUN;
	}
	shell = getenv("SHELL");
	o->shell_argv[0] = (char *)(shell && *shell ? shell : "/bin/sh");
	o->shell_argv[1] = (char *)"-c";
	o->shell_argv[2] = (char *)shell_string;
	o->shell_argv[3] = NULL;
	o->command = o->shell_argv;
	return OPTS_RUN;
}

/* A password without the line ending that a secret made from a file ends with (a Kubernetes
 * Secret, systemd's LoadCredential=, echo): len is its length, which this shortens. */
static void
strip_line_end(char *password, size_t *len)
{
	while (*len > 0 && (password[*len - 1] == '\n' || password[*len - 1] == '\r'))
		password[--*len] = '\0';
}

/* A copy of a password from the environment, without its line ending: a string to free, or NULL
 * when out of memory. */
static char *
env_password(const char *value)
{
	char *p = strdup(value);
	size_t len;

	if (p) {
		len = strlen(p);
		strip_line_end(p, &len);
	}
	return p;
}

/*
 * The first line of a password file (systemd's LoadCredential=, a container's secret), without
 * its line ending: a string to free, or NULL with a usage error in err. what names the file's
 * source for the message; the password itself is never in one.
 */
static char *
read_password_file(const char *what, const char *path, char *err, size_t size)
{
	FILE *f = fopen(path, "re");
	char line[4096], *p; /* a bound: the "file" may be /dev/zero */
	size_t len;

	if (!f) {
		char why[128];
		usage_error(err, size, "%s '%s': %s", what, path,
			    msg_strerror(errno, why, sizeof(why)));
		return NULL;
	}
	if (!fgets(line, sizeof(line), f)) {
		int error = ferror(f) ? errno : 0;
		line[0] = '\0';
		if (error) { /* a directory, say */
			char why[128];
			fclose(f);
			usage_error(err, size, "%s '%s': %s", what, path,
				    msg_strerror(error, why, sizeof(why)));
			return NULL;
		}
	}
	fclose(f);
	len = strlen(line);
	strip_line_end(line, &len);
	if (len == 0) {
		usage_error(err, size, "%s '%s': no password on its first line", what, path);
		return NULL;
	}
	if (len == sizeof(line) - 1) {
		usage_error(err, size, "%s '%s': its first line is too long for a password", what,
			    path);
		return NULL;
	}
	if (!(p = strdup(line)))
		usage_error(err, size, "out of memory");
	return p;
}

/* A Sentinel URL's Sentinels authenticate with REDLOCK_SENTINEL_USER and
 * REDLOCK_SENTINEL_PASSWORD, when they are set. -1 when out of memory. */
static int
sentinel_credentials(struct redis_url *u)
{
	const char *user = getenv("REDLOCK_SENTINEL_USER");
	const char *password = getenv("REDLOCK_SENTINEL_PASSWORD");

	if (user && *user && !(u->sentinel_user = strdup(user)))
		return -1;
	if (password && *password && !(u->sentinel_password = env_password(password)))
		return -1;
	return 0;
}

/* "st", "nd", "rd" or "th", after n. */
static const char *
ordinal_suffix(size_t n)
{
	if (n % 100 / 10 == 1)
		return "th";
	return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/*
 * Parses the servers' URLs, separated by blanks in one string (REDLOCK_URL) or one per -r, and
 * gives each URL without a password the one from the first of: --password-file,
 * $REDLOCK_PASSWORD_FILE, $REDLOCK_PASSWORD. The same server may not be given twice: it would
 * count twice towards a quorum.
 */
static enum opts_action
parse_urls(struct opts *o, char *const *urls, size_t n, const char *source,
	   const char *password_file, char *err, size_t size)
{
	char why[256], *password = NULL, a[300], b[300];
	const char *env_file = getenv("REDLOCK_PASSWORD_FILE");
	const char *env_value = getenv("REDLOCK_PASSWORD");
	enum opts_action out = OPTS_RUN;

	if (password_file || (env_file && *env_file)) {
		password = read_password_file(password_file ? "--password-file"
							    : "REDLOCK_PASSWORD_FILE",
					      password_file ? password_file : env_file, err, size);
		if (!password)
			return OPTS_USAGE_ERROR;
		snprintf(o->password_from, sizeof(o->password_from), "%s %s",
			 password_file ? "--password-file" : "$REDLOCK_PASSWORD_FILE",
			 password_file ? password_file : env_file);
	} else if (env_value && *env_value) {
		if (!(password = env_password(env_value)))
			return usage_error(err, size, "out of memory");
		snprintf(o->password_from, sizeof(o->password_from), "$REDLOCK_PASSWORD");
	}
	for (o->nurls = 0; o->nurls < n; o->nurls++) {
		struct redis_url *u = &o->urls[o->nurls];
		if (url_parse(urls[o->nurls], u, why, sizeof(why)) < 0) {
			/* One string of several URLs (REDLOCK_URL) separates them by blanks. */
			bool commas = *source && strstr(urls[o->nurls], ",") &&
				      strstr(strchr(urls[o->nurls], ',') + 1, "://");
			char which[64] = ""; /* (a URL is not echoed: it may hold a password) */
			if (n > 1)
				snprintf(which, sizeof(which), " (the %zu%s of %zu)", o->nurls + 1,
					 ordinal_suffix(o->nurls + 1), n);
			out = usage_error(
				err, size, "invalid Redis URL%s%s: %s%s", which, source, why,
				commas ? "; servers are separated by spaces, not commas" : "");
			break;
		}
		url_address(u, a, sizeof(a));
		for (size_t j = 0; j < o->nurls; j++) {
			if (strcmp(a, url_address(&o->urls[j], b, sizeof(b))) == 0) {
				out = usage_error(
					err, size,
					"the same Redis server twice%s: %s: a quorum needs "
					"independent ones",
					source, a);
				break;
			}
		}
		if (out == OPTS_RUN && !u->password && password) {
			if (!(u->password = strdup(password)))
				out = usage_error(err, size, "out of memory");
			u->password_from = o->password_from;
		} else if (out == OPTS_RUN && u->password) {
			/* The URL's own goes first: a refusal says so, and what it went before. */
			snprintf(o->url_password_from, sizeof(o->url_password_from), "the URL%s%s",
				 password ? ", which goes before " : "",
				 password ? o->password_from : "");
			u->password_from = o->url_password_from;
		}
		if (out == OPTS_RUN && u->master && sentinel_credentials(u) < 0)
			out = usage_error(err, size, "out of memory");
		if (out != OPTS_RUN) {
			url_free(u);
			break;
		}
	}
	free(password);
	if (out != OPTS_RUN)
		opts_free(o);
	return out;
}

static enum opts_action
parse_options(struct opts *o, int argc, char *argv[], char *err, size_t size)
{
	const char *shell_string = NULL, *source = "", *password_file = NULL, *replicas = NULL;
	const char *connect_timeout = NULL, *prefix = NULL;
	char *urls[URL_LIST_MAX + 1], *env_urls = NULL;
	size_t nurls = 0;
	enum opts_action out;
	char name[64];
	bool nonblock = false;
	int c, at, key_at = -1, operands;

	memset(o, 0, sizeof(*o));
	o->ttl = OPTS_TTL_DEFAULT;
	o->wait = WAIT_FOREVER;
	o->connect_timeout = OPTS_CONNECT_TIMEOUT_DEFAULT;
	o->conflict_status = STATUS_CONFLICT;
	o->verbosity = MSG_NORMAL;
	o->grace = -1;

	optind = 0; /* a full reset, so that opts_parse can be called more than once */
	opterr = 0;
again:
	/* Before each call, optind names the element being taken apart (0 means 1). */
	while ((at = optind ? optind : 1),
	       (c = getopt_long(argc, argv, short_options, long_options, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (nurls == URL_LIST_MAX)
				return usage_error(err, size, "at most %d Redis servers (-r)",
						   URL_LIST_MAX);
			urls[nurls++] = optarg;
			break;
		case 't':
			if (!take_duration("TTL", optarg, &o->ttl, err, size))
				return OPTS_USAGE_ERROR;
			if (o->ttl < OPTS_TTL_MIN)
				return usage_error(err, size, "invalid TTL '%s': at least 100ms",
						   optarg);
			break;
		case 'n':
			nonblock = true;
			break;
		case 'w':
			/* (systemd's word for a time span without end, from a unit file) */
			if (strcmp(optarg, "infinity") == 0)
				o->wait = WAIT_FOREVER;
			else if (!take_duration("timeout", optarg, &o->wait, err, size))
				return OPTS_USAGE_ERROR;
			break;
		case 'E':
			if (parse_exit_code(optarg, &o->conflict_status) < 0)
				return usage_error(err, size,
						   "invalid conflict exit code '%s': 0 to 255",
						   optarg);
			break;
		case 'c':
			if (shell_string) /* as flock(1): one command runs, not the last */
				return usage_error(err, size,
						   "-c requires exactly one command argument");
			shell_string = optarg;
			break;
		case 'l':
			if (parse_count(optarg, OPTS_LIMIT_MAX, &o->limit) < 0 || o->limit < 1)
				return usage_error(err, size, "invalid --limit '%s': 1 to %d",
						   optarg, OPTS_LIMIT_MAX);
			break;
		case 's':
			o->shared = true;
			break;
		case 'x':
		case 'e':
			o->shared = false; /* as flock: the last of -s, -x and -e counts */
			break;
		case OPT_ON_LOST:
			if (parse_on_lost(optarg, &o->on_lost) < 0)
				return usage_error(err, size,
						   "invalid --on-lost '%s': term, kill or ignore",
						   optarg);
			break;
		case OPT_GRACE:
			if (!take_duration("grace period", optarg, &o->grace, err, size))
				return OPTS_USAGE_ERROR;
			break;
		case OPT_MAX_HOLD:
			if (!take_duration("--max-hold", optarg, &o->max_hold, err, size))
				return OPTS_USAGE_ERROR;
			if (o->max_hold == 0)
				return usage_error(err, size,
						   "invalid --max-hold '%s': must be more than 0",
						   optarg);
			break;
		case OPT_MIN_HOLD:
			if (!take_duration("--min-hold", optarg, &o->min_hold, err, size))
				return OPTS_USAGE_ERROR;
			break;
		case OPT_QUEUE:
			if (strcmp(optarg, "fifo") != 0 && strcmp(optarg, "latest") != 0)
				return usage_error(err, size,
						   "invalid --queue '%s' (fifo or latest)", optarg);
			o->queue_given = true;
			o->latest = strcmp(optarg, "latest") == 0;
			break;
		case OPT_CANCEL_RUNNING:
			o->cancel_running = true;
			break;
		case OPT_BREAK:
			o->brk = true;
			break;
		case OPT_YES:
			o->yes = true;
			break;
		case OPT_LIST:
			o->list = true;
			break;
		case OPT_STATUS:
			o->status = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_CACERT:
		case OPT_CACERTDIR:
		case OPT_CERT:
		case OPT_KEY: {
			const char **field = c == OPT_CACERT      ? &o->tls.cacert
					     : c == OPT_CACERTDIR ? &o->tls.cacertdir
					     : c == OPT_CERT      ? &o->tls.cert
								  : &o->tls.key;
			if (!take_path(option_name(argv[at], name, sizeof(name)), optarg,
				       c == OPT_CACERTDIR, field, err, size))
				return OPTS_USAGE_ERROR;
			break;
		}
		case OPT_SNI:
			if (!*optarg)
				return usage_error(err, size, "--sni must not be empty");
			o->tls.sni = optarg;
			break;
		case OPT_INSECURE:
			o->tls.insecure = true;
			break;
		case OPT_PASSWORD_FILE:
			password_file = optarg;
			break;
		case OPT_WAIT_REPLICAS:
			replicas = optarg;
			break;
		case OPT_CONNECT_TIMEOUT:
			connect_timeout = optarg;
			break;
		case OPT_PREFIX:
			prefix = optarg;
			break;
		case 'v':
			o->verbosity = MSG_VERBOSE;
			break;
		case 'q':
			o->verbosity = MSG_QUIET;
			break;
		case 'h':
			return OPTS_HELP;
		case 'V':
			return OPTS_VERSION;
		case ':':
			return usage_error(err, size, "option '%s' requires an argument",
					   option_name(argv[at], name, sizeof(name)));
		default:
			/* getopt names the option in optopt, except for an unknown long one. */
			if (optopt && argv[at][1] == '-')
				return usage_error(err, size,
						   "option '%s' does not take an argument",
						   option_name(argv[at], name, sizeof(name)));
			option_name(argv[at], name, sizeof(name));
			return usage_error(err, size, "unknown option '%s'%s", name,
					   flock_only(name));
		}
	}
	/* --status, --break and --list run no command: options after their KEY (or PATTERN) are
	 * taken as well, `--break KEY --yes` as an on-call hand types it. */
	if (key_at < 0 && (o->status || o->brk || o->list) && optind < argc &&
	    strcmp(argv[optind - 1], "--") != 0) {
		key_at = optind++;
		goto again;
	}
	operands = argc - optind + (key_at >= 0);
	if (key_at < 0)
		key_at = optind;
	if (nonblock)
		o->wait = 0; /* -n wins over -w */
	if (!tls_from_environment(o, err, size))
		return OPTS_USAGE_ERROR;
	if (o->grace < 0)
		o->grace = time_min(OPTS_GRACE_MAX_DEFAULT, o->ttl / 3);
	/* A value from the environment is named by its variable in a refusal: the option may
	 * be nowhere on the command line. */
	const char *replicas_name = replicas ? "--wait-replicas" : "REDLOCK_WAIT_REPLICAS";
	const char *timeout_name =
		connect_timeout ? "--connect-timeout" : "REDLOCK_CONNECT_TIMEOUT";
	if (!replicas && (replicas = getenv("REDLOCK_WAIT_REPLICAS")) && !*replicas)
		replicas = NULL;
	if (replicas && parse_replicas(o, replicas_name, replicas, err, size) != OPTS_RUN)
		return OPTS_USAGE_ERROR;
	if (!connect_timeout && (connect_timeout = getenv("REDLOCK_CONNECT_TIMEOUT")) &&
	    !*connect_timeout)
		connect_timeout = NULL;
	if (connect_timeout) {
		if (!take_duration(timeout_name, connect_timeout, &o->connect_timeout, err, size))
			return OPTS_USAGE_ERROR;
		if (o->connect_timeout == 0)
			return usage_error(err, size, "invalid %s '%s': must be more than 0",
					   timeout_name, connect_timeout);
	}

	if (o->list && (o->status || o->brk))
		return usage_error(err, size, "--list and %s: one or the other",
				   o->status ? "--status" : "--break");
	if (o->list && (shell_string || operands > 1))
		return usage_error(err, size, "--list takes a PATTERN at most, and no COMMAND");
	if (o->list && !operands)
		o->key = "*"; /* every lock */
	else if (!operands)
		return usage_error(err, size, "missing KEY");
	else
		o->key = argv[key_at];
	if (!*o->key && o->list)
		return usage_error(err, size, "PATTERN must not be empty (every lock: '*')");
	if (!*o->key)
		return usage_error(err, size, "KEY must not be empty");
	/* COMMAND's environment gets it whole (REDLOCK_KEY), and the kernel takes no string
	 * there longer than 128 KiB: found at exec, that would come after the lock was taken. */
	if (strlen(o->key) > KEY_MAX)
		return usage_error(err, size, "KEY is longer than %d bytes", KEY_MAX);
	const char *prefix_from = "--prefix";
	if (!prefix) {
		prefix = getenv("REDLOCK_PREFIX");
		prefix_from = "$REDLOCK_PREFIX";
	}
	const char *given = o->name = o->key; /* KEY as written, before the prefix */
	if (prefix && *prefix) {
		o->prefix = prefix;
		/* The name in Redis, which every message and every helper key uses; for --list, a
		 * pattern in which the prefix stands for itself, glob characters and all (each
		 * character quoted at most once: twice the room). */
		size_t room = (o->list ? 2 : 1) * strlen(prefix) + 1;
		if (strlen(prefix) > KEY_MAX)
			return usage_error(err, size, "%s is longer than %d bytes", prefix_from,
					   KEY_MAX);
		if (!(o->prefixed_key = malloc(room + strlen(o->key))))
			return usage_error(err, size, "out of memory");
		if (o->list)
			glob_quoted(prefix, o->prefixed_key, room);
		else
			memcpy(o->prefixed_key, prefix, room);
		strcat(o->prefixed_key, o->key);
		o->key = o->prefixed_key;
	}
	if (!o->list && !one_slot(o->key) && one_slot(given))
		return usage_error(
			err, size,
			"KEY '%s' (%s '%s' and '%s') has a '}' but no hash tag ({...} with "
			"something in it) before it: its helper keys could not share its Redis "
			"Cluster hash slot; give the prefix a tag of its own, such as "
			"%s'{locks}%s'",
			o->key, prefix_from, prefix, given,
			prefix_from[0] == '$' ? "REDLOCK_PREFIX=" : "--prefix ", prefix);
	if (!o->list && !one_slot(o->key))
		return usage_error(
			err, size,
			"KEY '%s' has a '}' but no hash tag ({...} with something in it) "
			"before it: its helper keys could not share its Redis Cluster hash "
			"slot; give it a tag of its own, such as '{locks}%s'",
			o->key, o->key);
	if (o->json && !o->status && !o->list)
		return usage_error(err, size, "--json goes with --status or --list");
	if (o->brk && o->status)
		return usage_error(err, size, "--break and --status: one or the other");
	if (o->yes && !o->brk)
		return usage_error(err, size, "--yes goes with --break");
	if ((o->status || o->brk) && (shell_string || operands > 1))
		return usage_error(err, size, "--%s takes a KEY and no COMMAND",
				   o->brk ? "break" : "status");
	if (!o->status && !o->brk && !o->list &&
	    parse_command(o, argv + optind + 1, argc - optind - 1, shell_string, err, size) !=
		    OPTS_RUN)
		return OPTS_USAGE_ERROR;

	if (!nurls) {
		const char *env = getenv("REDLOCK_URL");
		/* Set but empty is a CI secret or a variable that is missing: not a wish for a
		 * server on this host, where each machine would lock on its own. */
		if (env && strspn(env, URL_BLANKS) == strlen(env))
			return usage_error(err, size,
					   "REDLOCK_URL is set but names no server (a missing "
					   "secret?); unset it for the default, %s",
					   URL_DEFAULT);
		if (env) {
			/* Several URLs, separated by blanks: a quorum. */
			if (!(env_urls = strdup(env)))
				return usage_error(err, size, "out of memory");
			for (char *save, *u = strtok_r(env_urls, URL_BLANKS, &save);
			     u && nurls <= URL_LIST_MAX; u = strtok_r(NULL, URL_BLANKS, &save))
				urls[nurls++] = u;
			source = " in REDLOCK_URL";
		} else {
			urls[nurls++] = (char *)URL_DEFAULT;
		}
	}
	if (nurls > URL_LIST_MAX)
		out = usage_error(err, size, "at most %d Redis servers in REDLOCK_URL",
				  URL_LIST_MAX);
	else
		out = parse_urls(o, urls, nurls, source, password_file, err, size);
	free(env_urls);
	/* Majorities of servers that each admit N holders can admit more than N between them
	 * (with 3 servers and N = 2, three holders on {1,2}, {2,3} and {1,3}). */
	if (out == OPTS_RUN && o->shared && o->limit > 1) {
		out = usage_error(err, size,
				  "--shared and --limit %d: a semaphore's holders all count "
				  "alike; use one or the other",
				  o->limit);
	} else if (out == OPTS_RUN && o->shared && o->nurls > 1) {
		out = usage_error(
			err, size,
			"--shared with %zu servers is not supported yet; use one server (a "
			"Sentinel or a cluster URL counts as one)",
			nurls);
	} else if (out == OPTS_RUN && o->limit > 1 && o->nurls > 1) {
		out = usage_error(
			err, size,
			"--limit %d with %zu servers: a quorum of servers cannot keep the "
			"holders to %d; use one server (a Sentinel or a cluster URL counts "
			"as one)",
			o->limit, nurls, o->limit);
	} else if (out == OPTS_RUN && o->queue_given && o->nurls > 1) {
		out = usage_error(
			err, size,
			"--queue %s with %zu servers: each server of a quorum sees "
			"arrivals in an order of its own; use one server (a Sentinel or a "
			"cluster URL counts as one)%s",
			o->latest ? "latest" : "fifo", nurls,
			o->latest ? ""
				  : ", or leave --queue out: waiters then take the "
				    "lock as they come, in no order");
	} else if (out == OPTS_RUN && o->latest && (o->shared || o->limit > 1)) {
		out = usage_error(err, size, "--queue latest is for a lock: not with %s",
				  o->shared ? "--shared" : "--limit");
	} else if (out == OPTS_RUN && o->cancel_running && !o->latest) {
		out = usage_error(err, size, "--cancel-running goes with --queue latest");
	}
	return out;
}

enum opts_action
opts_parse(struct opts *o, int argc, char *argv[], char *err, size_t size)
{
	enum opts_action out = parse_options(o, argc, argv, err, size);

	/* Only a run keeps what the parse allocated. */
	if (out != OPTS_RUN)
		opts_free(o);
	return out;
}

bool
opts_use_tls(const struct opts *o)
{
	for (size_t i = 0; i < o->nurls; i++)
		if (o->urls[i].scheme == URL_TLS)
			return true;
	return false;
}

void
opts_free(struct opts *o)
{
	for (size_t i = 0; i < o->nurls; i++)
		url_free(&o->urls[i]);
	o->nurls = 0;
	free(o->prefixed_key);
	o->prefixed_key = NULL;
}
