/*
 * redlock-run: flock(1) for a fleet. The whole life of a run, top to bottom: parse, take the
 * lock, start the command, supervise it while the watchdog renews the lease, release, exit
 * with the command's status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "config.h"
#include "conn.h"
#include "duration.h"
#include "exitstatus.h"
#include "lock.h"
#include "msg.h"
#include "nodes.h"
#include "opts.h"
#include "query.h"
#include "signals.h"
#include "supervise.h"
#include "util.h"
#include "watchdog.h"

static _Noreturn void
fatal_errno(int status, const char *what)
{
	char buf[128];

	msg_fatal(status, "%s: %s", what, msg_strerror(errno, buf, sizeof(buf)));
}

/* What went to stdout (--help, --version, --status, --list) got there whole, or the run fails
 * with 71, as flock's does: a monitoring check must not take a cut answer for the answer. */
static int
output_written(int status)
{
	char buf[128];

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return status;
	msg_error("cannot write the output: %s",
		  msg_strerror(errno ? errno : EIO, buf, sizeof(buf)));
	return STATUS_OSERR;
}

/* With -v: which nodes granted the lock, and how much of its validity is left; without, a server
 * that refused it for good. */
static void
tell_quorum(const struct lock *l, const struct nodes *ns)
{
	char list[1024] = "", left[32];
	size_t n = 0, len = 0;

	for (size_t i = 0; i < nodes_count(ns); i++) {
		if (!nodes_holds(ns, i))
			continue;
		len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0,
					"%s%s", n++ ? ", " : "", nodes_address(ns, i));
		len = len < sizeof(list) ? len : sizeof(list);
	}
	msg_info("granted by %zu of %zu nodes (a quorum is %zu): %s; valid for %s more", n,
		 nodes_count(ns), nodes_quorum(ns), list,
		 duration_format(l->valid_until - clock_now(), left, sizeof(left)));
	/* A server down or restarted is an outage the others ride out, said under -v; one that
	 * refused (a certificate, a password) is a mistake to mend before the next one comes. A
	 * refusal that came after the quorum decided is not waited for: said by the next run. */
	for (size_t i = 0; i < nodes_count(ns); i++)
		if (!nodes_holds(ns, i) && nodes_refused(ns, i))
			msg_warn(
				"%s (the lock is held on a quorum without it; it refuses every run "
				"until that is mended)",
				nodes_error(ns, i));
}

/* Whether the waiter first in line, in l->holder, ran on this host and is gone now: killed
 * outright, it could not leave the line; or woken as the answer came (by a pass over the dead
 * before it, say), it has had its turn since. */
static bool
first_gone(const struct lock *l)
{
	char here[256] = "";
	const char *process;

	if (gethostname(here, sizeof(here) - 1) < 0)
		return false;
	process = lock_value_process(l->holder, here);
	return process && strcmp(process, "gone") == 0;
}

/* Takes the lock, or exits: 75 (or -E) when it is held, 69 when Redis cannot be used (71
 * when what failed was ours: out of file descriptors), 128+N by signal N while waiting. The guard
 * readied for the command is sent away first. */
static void
acquire(struct lock *l, struct nodes *ns, const struct opts *o, const struct signals *sig,
	struct child *ch)
{
	int64_t start = clock_now(), waited;
	char holder[LOCK_HOLDER_MAX], buf[32];
	char hint[96] = "";

	for (;;) {
		int64_t wait = o->wait;
		if (wait > 0)
			wait = time_max(0, time_add(start, o->wait) - clock_now());
		switch (lock_acquire(l, ns, wait, sig->stop_fd)) {
		case LOCK_ACQUIRED:
			waited = clock_now() - start;
			/* (Over several servers, the next line names those that granted it.) */
			msg_info("acquired %s%s%s after %s, fence %lld", l->key,
				 nodes_count(ns) == 1 ? " on " : "",
				 nodes_count(ns) == 1 ? nodes_address(ns, 0) : "",
				 duration_format(waited, buf, sizeof(buf)), l->fence);
			if (nodes_count(ns) > 1)
				tell_quorum(l, ns);
			return;
		case LOCK_BUSY:
			duration_format(clock_now() - start, buf, sizeof(buf));
			if (l->holder[0] && l->holder_waits)
				msg_info("%s is free, but %s is in line for it first%s; "
					 "giving up after %s",
					 l->key,
					 lock_describe_holder(l->holder, holder, sizeof(holder)),
					 msg_verbose() && first_gone(l)
						 ? " (gone: if killed outright, it could not "
						   "leave the line, and loses its turn within a "
						   "second; else it has had its turn since)"
						 : "",
					 buf);
			else if (l->holder[0])
				msg_info("%s is held by %s; giving up after %s", l->key,
					 lock_describe_holder(l->holder, holder, sizeof(holder)),
					 buf);
			else
				msg_info("%s; giving up after %s", l->error, buf);
			child_free(ch);
			exit(o->conflict_status);
		case LOCK_SUPERSEDED:
			/* Said even without -v (the run never will have its turn), but not with -q:
			 * an outcome, as a busy lock is, not an error. */
			msg_warn("%s", l->error);
			msg_info("%s: gave up its place in line after waiting %s; exit status %d",
				 l->key, duration_format(clock_now() - start, buf, sizeof(buf)),
				 o->conflict_status);
			child_free(ch);
			exit(o->conflict_status);
		case LOCK_UNAVAILABLE:
			child_free(ch);
			/* "redlock-run KEY --queue latest -- cmd" runs "--queue", and a refusal of
			 * this run's options would name options it was never given. */
			if (l->mismatched && o->command[0][0] == '-')
				snprintf(hint, sizeof(hint),
					 " (options go before KEY: '%.40s' was taken for COMMAND)",
					 o->command[0]);
			msg_fatal(nodes_unavailable_status(ns), "%s%s", l->error, hint);
		case LOCK_INTERRUPTED: {
			int s = signals_take_stop(sig);
			if (s == SIGTSTP) {
				/* Out of the line first: a stopped waiter's place would hold back
				 * each waiter behind it for a lease. Continued, it takes a place at
				 * the back, its -w running on. */
				msg_info("stopping while waiting for %s (SIGTSTP), with no place "
					 "kept "
					 "in line",
					 l->key);
				signals_stop_self(false);
				break;
			}
			if (s) {
				child_free(ch);
				signals_die(s);
			}
			break; /* taken by nobody else: nothing to stop for */
		}
		}
	}
}

/* A release that found the lock broken with --break (see lock_broken_by): says so, and the
 * run is one that lost the lock (76). */
static bool
lost_to_break(const struct lock *l, struct outcome *out)
{
	char by[LOCK_HOLDER_MAX];

	if (!lock_broken_by(l->holder, by, sizeof(by)))
		return false;
	msg_error("lost the lock on %s: it was broken by %s (redlock-run --break) before the "
		  "command ended",
		  l->key, by);
	*out = (struct outcome){ .status = STATUS_LOST, .lost = true };
	return true;
}

/* A Sentinel failover seen in this run ("the master of 'm' moved from ... to ..."), or NULL. */
static const char *
failover(const struct nodes *ns)
{
	for (size_t i = 0; i < nodes_count(ns); i++)
		if (nodes_failover(ns, i))
			return nodes_failover(ns, i);
	return NULL;
}

/*
 * Gives the lock back once nothing of the command is left running, and adjusts the
 * outcome. Signals no longer cut anything short here: a release takes one round trip, or
 * at worst the request timeout; once the lease is lost it is only a courtesy, and a server
 * that does not answer at once is not waited for.
 *
 * 76 says the command did not hold the lock throughout, and nothing else: a key found gone
 * is a loss only when the answer came while the lease was still ours. Later, it may merely
 * have expired while the server stalled; after a lost reply, our own release most likely
 * deleted it. The command ended inside its lease either way (supervise saw to that).
 */
static void
release(struct lock *l, struct nodes *ns, struct outcome *out)
{
	int64_t patience = out->lost ? LOCK_LAST_ANSWER : l->io_timeout;
	char ttl[32];

	l->valid_until = out->lost ? 0 : out->lease_end; /* as the last renewal left it */

	int64_t left = lock_hold_left(l, clock_now());

	switch (lock_release(l, ns, clock_now() + patience, -1)) {
	case LOCK_RELEASED:
		if (left > 0)
			msg_info("released %s, which stays taken for %s more (--min-hold)", l->key,
				 duration_format(left, ttl, sizeof(ttl)));
		else
			msg_info("released %s", l->key);
		break;
	case LOCK_RELEASE_GONE:
		if (out->lost) {
			/* Lost otherwise first (stopped past its lease, say): a break meanwhile is
			 * what the people on call look for in its log. */
			char by[LOCK_HOLDER_MAX];
			if (!out->told_break && lock_broken_by(l->holder, by, sizeof(by)))
				msg_error("the lock on %s had been broken by %s "
					  "(redlock-run --break) meanwhile",
					  l->key, by);
			break;
		}
		if (lost_to_break(l, out))
			break;
		if (l->answered_at >= out->lease_end) {
			msg_warn("released %s late: the server answered after the lease had run "
				 "out, and the key was gone (expired meanwhile, most likely); the "
				 "command held the lock throughout",
				 l->key);
			break;
		}
		msg_error("lost the lock on %s: it was gone when the command ended%s%s", l->key,
			  failover(ns) ? "; " : "", failover(ns) ? failover(ns) : "");
		*out = (struct outcome){ .status = STATUS_LOST, .lost = true };
		break;
	case LOCK_RELEASE_LOST_DATA:
		if (out->lost)
			break;
		/* A new master that lacks the fence counter too never had them: no restart. */
		if (failover(ns))
			msg_error("lost the lock on %s: it was gone when the command ended; %s",
				  l->key, failover(ns));
		else
			msg_error("lost the lock on %s: %s", l->key, l->error);
		*out = (struct outcome){ .status = STATUS_LOST, .lost = true };
		break;
	case LOCK_RELEASE_UNCONFIRMED:
		/* A release asked again that finds the lock broken: the break came first. */
		if (!out->lost && lost_to_break(l, out))
			break;
		if (!out->lost)
			msg_warn("released %s, most likely: the reply was lost, and asked again "
				 "the key was no longer ours",
				 l->key);
		break;
	case LOCK_RELEASE_FAILED: {
		/* No answer: whether the lock was still ours (not broken, not lost) cannot be
		 * told, and the command's status stands. What is left of the lease is. */
		int64_t rest = out->lease_end - clock_now();
		if (rest > 0)
			msg_warn("cannot release %s: %s; it expires at the end of its lease, in "
				 "about %s",
				 l->key, l->error, duration_format(rest, ttl, sizeof(ttl)));
		else
			msg_warn("cannot release %s: %s; its lease has run out by now", l->key,
				 l->error);
		break;
	}
	}
}

/* The command's environment: ours, plus REDLOCK_KEY, REDLOCK_TOKEN and REDLOCK_FENCE, for a
 * semaphore or shared lock REDLOCK_HOLDERS, and REDLOCK_PREFIX, whose strings are
 * left in vars (for the caller to free, as the array returned). REDLOCK_KEY is KEY as given and
 * REDLOCK_PREFIX the prefix beside it, so that a redlock-run inside the command names the same
 * lock with "$REDLOCK_KEY" (and its own locks in the same namespace). */
static char **
command_environment(const struct lock *l, const struct opts *o, char *vars[5])
{
	int n = 3;
	bool ok = asprintf(&vars[0], "REDLOCK_KEY=%s", o->name) >= 0 &&
		  asprintf(&vars[1], "REDLOCK_TOKEN=%s", l->value) >= 0 &&
		  asprintf(&vars[2], "REDLOCK_FENCE=%lld", l->fence) >= 0;

	if (ok && (l->limit > 1 || l->shared))
		ok = asprintf(&vars[n++], "REDLOCK_HOLDERS=%lld", l->holders) >= 0;
	/* (Empty when there is none: an inherited one may not be what this run used.) */
	if (ok)
		ok = asprintf(&vars[n++], "REDLOCK_PREFIX=%s", o->prefix ? o->prefix : "") >= 0;
	return ok ? child_environment(environ, vars, n) : NULL;
}

/* Nothing can run under the lock (no memory, thread or process): give it back and exit. */
static _Noreturn void
abandon(struct lock *l, struct nodes *ns, struct watchdog *wd, struct child *ch, const char *what)
{
	int err = errno;

	watchdog_free(wd);
	child_free(ch);
	lock_release(l, ns, clock_now() + l->io_timeout, -1);
	errno = err;
	fatal_errno(STATUS_OSERR, what);
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct signals sig;
	struct lock lock;
	struct nodes *nodes;
	struct child child;
	struct watchdog *wd;
	struct outcome out;
	char err[512], asked[320], **env, *vars[5] = { NULL };

	switch (opts_parse(&o, argc, argv, err, sizeof(err))) {
	case OPTS_HELP:
		opts_print_help(stdout);
		return output_written(0);
	case OPTS_VERSION:
		printf("redlock-run %s (TLS: %s)\n", REDLOCK_VERSION,
		       conn_has_tls() ? "yes" : "no");
		conn_print_libraries(stdout);
		return output_written(0);
	case OPTS_USAGE_ERROR:
		msg_error("%s", err);
		fputs("Try 'redlock-run --help' for more information.\n", stderr);
		return STATUS_USAGE;
	case OPTS_RUN:
		break;
	}
	msg_set_level(o.verbosity);
	/* TLS is set up before anything connects, so that a certificate or key it cannot use
	 * is a usage error; a plain run never loads OpenSSL, whatever TLS options the
	 * environment sets. */
	if (opts_use_tls(&o) && conn_has_tls()) {
		int setup = conn_setup_tls(&o.tls, err, sizeof(err));
		if (setup < 0) {
			msg_error("%s", err);
			opts_free(&o);
			return setup == -1 ? STATUS_USAGE : STATUS_UNAVAILABLE;
		}
		if (o.tls.insecure)
			msg_info("--insecure: the server's certificate is not verified");
	}
	if (o.status || o.brk || o.list) {
		int status = o.list ? query_list(&o) : o.brk ? query_break(&o) : query_status(&o);
		int written = output_written(status);
		/* A break is done whatever became of its report: its status stays (71 might be
		 * retried, and break the next holder). */
		if (o.brk)
			written = status;
		opts_free(&o);
		return written;
	}
	if (signals_init(&sig) < 0)
		fatal_errno(STATUS_OSERR, "cannot set up signal handling");
	/* The guard is forked now, while we are small: later, with the connection and its
	 * buffers, the fork took twice as long, and so did every page we wrote after it. A
	 * failure is child_spawn's to report. */
	child_init(&child);
	child_prepare(&child, argv);
	if (lock_init(&lock, o.key, o.ttl) < 0)
		fatal_errno(STATUS_OSERR, "cannot make a lock token");
	if (!(nodes = nodes_new(o.urls, o.nurls)))
		fatal_errno(STATUS_OSERR, "cannot set up a connection");
	lock.min_hold = o.min_hold;
	lock.connect_timeout = o.connect_timeout;
	lock.limit = o.limit;
	lock.shared = o.shared;
	lock_set_discipline(&lock, o.latest, o.cancel_running);
	if (o.replicas) {
		lock.replicas = o.replicas;
		lock.replicas_timeout = o.replicas_timeout;
		nodes_replicas(nodes, o.replicas, (long long)(o.replicas_timeout / NS_PER_MS));
	}

	acquire(&lock, nodes, &o, &sig, &child);

	if (nodes_count(nodes) == 1)
		snprintf(asked, sizeof(asked), "%s", nodes_address(nodes, 0));
	else
		snprintf(asked, sizeof(asked), "a quorum of the %zu servers", nodes_count(nodes));
	env = command_environment(&lock, &o, vars);
	wd = env ? watchdog_new(&lock, nodes) : NULL;
	struct supervision sv = {
		.child = &child,
		.watchdog = wd,
		.nodes = nodes,
		.lock = &lock,
		.signals = &sig,
		.on_lost = o.on_lost,
		.grace = o.grace,
		.max_hold = o.max_hold,
		.asked = asked,
	};
	/* (The guard knows it before the command can run.) */
	child_guard_until(&child, supervise_guard_deadline(&sv));
	if (!wd || signals_consume_tstp(&sig) < 0 || child_spawn(&child, o.command, env, &sig) < 0)
		abandon(&lock, nodes, wd, &child, "cannot start the command");

	out = supervise(&sv);
	msg_info("done after %s: exit status %d",
		 duration_format(clock_now() - lock.held_since, err, sizeof(err)), out.status);
	child_finish(&child, out.forwarded ? 0 : out.signal);
	/* The watchdog gives the connections back (a renewal in flight is interrupted; the
	 * server takes the release after it). */
	watchdog_free(wd);
	release(&lock, nodes, &out);
	child_free(&child);

	nodes_free(nodes);
	lock_free(&lock);
	free(env);
	for (size_t i = 0; i < ARRAY_LEN(vars); i++)
		free(vars[i]);
	opts_free(&o);
	if (out.signal)
		signals_die(out.signal);
	return out.status;
}
