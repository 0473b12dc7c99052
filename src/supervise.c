#include "supervise.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "duration.h"
#include "exitstatus.h"
#include "msg.h"

/* How often a sweep looks whether the command's leftovers are gone: their deaths are not
 * all reported to us (their parents may be leftovers too). */
#define SWEEP_LOOK (5 * NS_PER_MS)
/* How often a job that a stop may have reached is looked at, for a command that cannot stop
 * (see child_stop_held). */
#define STOP_LOOK (250 * NS_PER_MS)
/* A deadline seen this late says that we did not run meanwhile. */
#define SEEN_LATE (250 * NS_PER_MS)
/* How long the renewal that came due while we were stopped is waited for once we are continued,
 * at least, before the lock counts as lost (see loss_due). */
#define RENEW_AFTER_STOP NS_PER_S
/* How long after SIGKILL a sweep still looks. */
#define SWEEP_AFTER_KILL NS_PER_S

enum stop_reason {
	STOP_NONE,
	STOP_LOST,
	STOP_MAX_HOLD,
	STOP_CANCELLED, /* by a newer run (--cancel-running) */
};

struct state {
	int64_t lease_end;         /* when the lease stops being ours, on our clock */
	int64_t renewed_at;        /* when the last good renewal (or the acquire) was sent */
	int64_t max_hold_at;       /* TIME_NEVER without --max-hold */
	int64_t kill_at;           /* a SIGKILL is due then, as the grace period (or the lost
				    * lease) says (TIME_NEVER: none); see kill_time */
	enum stop_reason stopping; /* why the command is being stopped, if it is */
	bool lost;
	bool gone;       /* the key is no longer ours: the lease protects nothing now */
	bool told_break; /* the loss said was a break, named (not to be said again) */
	bool failing;    /* renewals are failing right now */
	char last_error[512];
	bool exited; /* the command was reaped */
	int wait_status;
	bool guard_killed;  /* by SIGKILL, past the deadline its guard was given */
	bool sweeping;      /* what it left in its group was told to stop */
	int64_t sweep_end;  /* when a sweep stops looking (after SIGKILL: zombies only) */
	bool resumed;       /* the job was stopped and has been continued */
	int64_t stopped_at; /* when it was last stopped (SIGTSTP), and continued: 0 if never */
	int64_t continued_at;
	int64_t woke_at;    /* when we were last continued (SIGCONT), the job with us or not */
	bool stop_passed;   /* a SIGTSTP sent to us was passed on to the command's group */
	int64_t stop_look;  /* the next look for a stop the command cannot follow */
	sigset_t forwarded; /* the signals passed on to the command */
};

/* The words for what happens to the command when the lock is lost. */
static const char *
action(enum on_lost on_lost)
{
	switch (on_lost) {
	case ON_LOST_KILL:
		return "killing the command";
	case ON_LOST_IGNORE:
		return "the command runs on without it (--on-lost ignore)";
	default:
		return "stopping the command";
	}
}

/*
 * The SIGKILL that ends a lease goes out this long before the lease's end on our clock (which
 * already allows for clock drift): the time redlock-run takes to wake on a busy machine, and
 * the kernel to run a killed process to its exit. Measured at -t 100ms with three busy loops
 * on two cores (tests/cli/margin.bats), the exit came up to 19ms after a kill due at the
 * lease's end; with the suite's other scenarios loading the machine beside those loops, once
 * 20.5ms. A third more than that: 30ms.
 */
#define KILL_ALLOWANCE (30 * NS_PER_MS)

/* When the lease's end can no longer be waited for: the SIGKILL is due. */
static int64_t
kill_deadline(const struct state *st)
{
	return st->lease_end - KILL_ALLOWANCE;
}

/* By when the guard takes the command's group down, should we not have done it ourselves
 * (stopped with SIGSTOP alone, or starved of CPU): when we would, by the lease and any grace
 * period given; by the grace period alone once the key is gone, or with --on-lost ignore. */
static int64_t
guard_deadline(const struct supervision *s, const struct state *st)
{
	if (s->on_lost == ON_LOST_IGNORE || st->gone)
		return st->kill_at;
	return time_min(st->kill_at, kill_deadline(st));
}

int64_t
supervise_guard_deadline(const struct supervision *s)
{
	struct state st = { .lease_end = s->lock->valid_until, .kill_at = TIME_NEVER };

	return guard_deadline(s, &st);
}

/* When renewals keep failing, SIGTERM goes out this long before the lease ends, and SIGKILL
 * at kill_deadline: at most TTL/3, so that a renewal that is merely due never counts as
 * failing, and no less than the kill allowance. With --on-lost ignore, nothing is sent at all,
 * and the lock counts as lost when the lease ends. */
static int64_t
stop_lead(const struct supervision *s)
{
	return s->on_lost == ON_LOST_IGNORE
		       ? 0
		       : time_max(time_min(s->grace, s->lock->ttl / 3), KILL_ALLOWANCE);
}

/* When we last ran again after a stop, ours or the job's (0: never). */
static int64_t
back_at(const struct state *st)
{
	return time_max(st->woke_at, st->continued_at);
}

/*
 * When the lock counts as lost with no renewal: stop_lead before the lease's end. But nothing
 * renews while we are stopped (SIGSTOP, or the job's stop): a renewal that came due meanwhile
 * is not a failing one, and goes out as soon as we are continued. It is given half the lead, or
 * RENEW_AFTER_STOP if that is longer, to come back, up to the kill deadline (so the command may
 * have less time to stop, should it fail).
 */
static int64_t
loss_due(const struct supervision *s, const struct state *st)
{
	int64_t due = st->lease_end - stop_lead(s);
	int64_t back = back_at(st);
	int64_t renewed_by = time_add(back, time_max(stop_lead(s) / 2, RENEW_AFTER_STOP));

	if (back && renewed_by > due)
		due = time_max(due, time_min(renewed_by, kill_deadline(st)));
	return due;
}

/*
 * Stops the command's group: SIGKILL at once, or SIGTERM now and SIGKILL at kill_at. The
 * first reason given is the one the exit status tells; a SIGKILL always goes out.
 */
static void
begin_stop(const struct supervision *s, struct state *st, enum stop_reason why, int sig,
	   int64_t kill_at)
{
	if (st->stopping == STOP_NONE)
		st->stopping = why;
	else if (sig != SIGKILL)
		return;
	child_signal(s->child, sig);
	if (sig == SIGKILL)
		return;
	/* A stopped process acts on SIGTERM only once it runs again. */
	child_signal(s->child, SIGCONT);
	st->kill_at = time_min(st->kill_at, kill_at);
}

/*
 * The lock is lost: does what --on-lost says, SIGKILL coming by kill_at at the latest; at once
 * if that has passed (the job was stopped past its lease): a SIGTERM then, with the SIGCONT it
 * needs, would let a stopped command run a moment beside the next holder.
 */
static void
act_on_loss(const struct supervision *s, struct state *st, int64_t kill_at)
{
	st->lost = true;
	if (s->on_lost == ON_LOST_KILL || (s->on_lost == ON_LOST_TERM && clock_now() >= kill_at))
		begin_stop(s, st, STOP_LOST, SIGKILL, TIME_NEVER);
	else if (s->on_lost == ON_LOST_TERM)
		begin_stop(s, st, STOP_LOST, SIGTERM, kill_at);
}

/*
 * When the SIGKILL due at kill_at goes out: then, unless what is being stopped (the command, or
 * what it left) would outlive a lease that may still be ours. The lease's end moves with every
 * renewal, so while renewals succeed the whole grace period is given; it is cut only when the
 * lease itself is about to end. Once the key is gone, the grace period is the user's to keep.
 */
static int64_t
kill_time(const struct supervision *s, const struct state *st)
{
	return st->stopping != STOP_NONE || st->sweeping ? guard_deadline(s, st) : st->kill_at;
}

/* A watchdog event. Signals go out before anything is said: a message never delays them. */
static void
on_event(const struct supervision *s, struct state *st, const struct watchdog_event *ev)
{
	const char *key = s->lock->key;
	char holder[LOCK_HOLDER_MAX], left[32];

	switch (ev->type) {
	case WATCHDOG_RENEWED:
		st->renewed_at = ev->sent;
		st->lease_end = ev->lease_end;
		if (st->failing)
			msg_warn("renewed %s again", key);
		else
			msg_info("renewed %s%s%s%s", key, ev->detail[0] ? " (" : "", ev->detail,
				 ev->detail[0] ? ")" : "");
		st->failing = false;
		return;
	case WATCHDOG_NOTE:
		msg_info("renewing %s: %s", key, ev->detail);
		return;
	case WATCHDOG_WARN:
		msg_warn("%s", ev->detail);
		return;
	case WATCHDOG_FAILED:
		snprintf(st->last_error, sizeof(st->last_error), "%s", ev->detail);
		if (st->lost) { /* a renewal that failed as the lease ran out: nothing to retry */
			msg_info("cannot renew %s: %s", key, ev->detail);
			return;
		}
		if ((!st->failing || msg_verbose()) && s->on_lost == ON_LOST_IGNORE)
			msg_warn("cannot renew %s: %s; retrying for the %s left of the lease", key,
				 ev->detail,
				 duration_format(st->lease_end - clock_now(), left, sizeof(left)));
		else if (!st->failing || msg_verbose())
			msg_warn("cannot renew %s: %s; retrying, and stopping the command in %s "
				 "unless a renewal goes through",
				 key, ev->detail,
				 duration_format(time_max(loss_due(s, st) - clock_now(), 0), left,
						 sizeof(left)));
		st->failing = true;
		return;
	case WATCHDOG_CANCELLED:
		if (st->exited || st->stopping != STOP_NONE)
			return;
		begin_stop(s, st, STOP_CANCELLED, SIGTERM, time_add(clock_now(), s->grace));
		msg_error("%s: cancelled by %s (a newer run with --cancel-running); stopping the "
			  "command",
			  key, ev->detail);
		return;
	case WATCHDOG_LOST:
		/* Lost by the clock already (we were stopped, say): a break meanwhile is said at
		 * the release, once. */
		if (st->lost && lock_broken_by(ev->detail, holder, sizeof(holder))) {
			st->gone = true;
			return;
		}
		break;
	}
	st->gone = true;
	act_on_loss(s, st, time_add(clock_now(), s->grace));
	if (ev->cause[0] && ev->how == LOCK_GONE) {
		msg_error("lost the lock on %s: %s, and the new master does not have it; %s", key,
			  ev->cause, action(s->on_lost));
		return;
	}
	switch (ev->how) {
	case LOCK_TAKEN:
		if (lock_broken_by(ev->detail, holder, sizeof(holder))) {
			msg_error("lost the lock on %s: it was broken by %s (redlock-run --break); "
				  "%s",
				  key, holder, action(s->on_lost));
			st->told_break = true;
			break;
		}
		msg_error("lost the lock on %s: it is held by %s now%s%s; %s", key,
			  lock_describe_holder(ev->detail, holder, sizeof(holder)),
			  ev->cause[0] ? ", after " : "", ev->cause, action(s->on_lost));
		break;
	case LOCK_GONE_WITH_DATA:
		msg_error("lost the lock on %s: %s (restarted empty or flushed); %s", key,
			  ev->cause, action(s->on_lost));
		break;
	default:
		msg_error("lost the lock on %s: it expired or was deleted; %s", key,
			  action(s->on_lost));
		break;
	}
}

/* Why the lock counts as lost with no renewal (see loss_due), said once it does. */
static void
say_ran_out(const struct supervision *s, const struct state *st, int64_t now)
{
	const char *key = s->lock->key, *killed = "its guard killed the command as the lease ended";
	int64_t lead = st->lease_end - stop_lead(s), end = kill_deadline(st);
	char since[32], within[32], unanswered[400];

	snprintf(unanswered, sizeof(unanswered), "no answer yet%s%.300s", s->asked ? " from " : "",
		 s->asked ? s->asked : "");
	if (s->on_lost == ON_LOST_IGNORE || now < end)
		killed = action(s->on_lost);
	/* Nothing renews while the job is stopped, nor while we are: the server is not to
	 * blame. */
	if (st->continued_at >= end)
		msg_error("lost the lock on %s: the job was stopped for %s (Ctrl-Z, SIGTSTP), past "
			  "the end of its lease; %s",
			  key,
			  duration_format(st->continued_at - st->stopped_at, since, sizeof(since)),
			  action(s->on_lost));
	else if (st->woke_at >= end)
		msg_error("lost the lock on %s: redlock-run was stopped (SIGSTOP) until past the "
			  "end of its lease; %s",
			  key, killed);
	else if (back_at(st) > lead)
		msg_error("lost the lock on %s: no renewal within %s of redlock-run being "
			  "continued after a stop (%s); %s",
			  key, duration_format(now - back_at(st), within, sizeof(within)),
			  st->last_error[0] ? st->last_error : unanswered, action(s->on_lost));
	else if (now - lead > SEEN_LATE)
		msg_error("lost the lock on %s: redlock-run saw its lease running out %s late "
			  "(it was starved of CPU, or stopped); %s",
			  key, duration_format(now - lead, since, sizeof(since)), killed);
	else
		msg_error("lost the lock on %s: no renewal for %s (%s); %s", key,
			  duration_format(now - st->renewed_at, since, sizeof(since)),
			  st->last_error[0] ? st->last_error : unanswered, action(s->on_lost));
}

/* Acts on every deadline that has come. */
static void
on_time(const struct supervision *s, struct state *st, int64_t now)
{
	char held[32], since[32];

	if (!st->exited && st->stopping == STOP_NONE && now >= st->max_hold_at) {
		begin_stop(s, st, STOP_MAX_HOLD, SIGTERM, time_add(now, s->grace));
		msg_error("%s held for --max-hold %s; stopping the command", s->lock->key,
			  duration_format(s->max_hold, held, sizeof(held)));
	}
	if (!st->lost && now >= loss_due(s, st)) {
		act_on_loss(s, st, kill_deadline(st));
		say_ran_out(s, st, now);
	}
	if (now >= kill_time(s, st)) {
		child_signal(s->child, SIGKILL);
		if (kill_time(s, st) < st->kill_at && st->kill_at != TIME_NEVER)
			msg_info("the lease of %s ends before --grace does: SIGKILL %s early",
				 s->lock->key,
				 duration_format(st->kill_at - now, since, sizeof(since)));
		st->kill_at = TIME_NEVER;
		/* What SIGKILL leaves in the group is dead: zombies whose parent left the group
		 * and never reaps them would keep a sweep waiting for ever. */
		if (st->sweeping)
			st->sweep_end = time_add(now, SWEEP_AFTER_KILL);
	}
	if (now >= watchdog_due(s->watchdog) && watchdog_start(s->watchdog) < 0) {
		char buf[128];
		msg_error("cannot start renewing %s: %s", s->lock->key,
			  msg_strerror(errno, buf, sizeof(buf)));
	}
}

/* Reads the clock: notes a continue first (see say_ran_out), then acts on every deadline that
 * has come. Returns the time read. */
static int64_t
catch_up(const struct supervision *s, struct state *st)
{
	int64_t now;

	if (signals_take_cont(s->signals))
		st->woke_at = clock_now();
	now = clock_now();
	on_time(s, st, now);
	return now;
}

/* The connection the lock was taken on became readable while the watchdog is not running yet:
 * when its server closed it (it restarted, and may have lost the lock while the command runs on
 * under it), the first renewal is made at once instead of a third of the lease later. */
static void
watch_server(const struct supervision *s)
{
	size_t i;

	/* (A few ms: what made it readable is read, however late this thread runs.) */
	if (nodes_watch(s->nodes, clock_now() + 10 * NS_PER_MS, -1, &i) == CONN_OK &&
	    watchdog_hurry(s->watchdog))
		msg_info("%s closed the connection the lock on %s was taken on: renewing it now",
			 nodes_address(s->nodes, i), s->lock->key);
}

/* Whether a stop may reach the command's group that its process cannot follow (see
 * child_stop_held): Ctrl-Z, when the group has the terminal, or a SIGTSTP passed on to it. */
static bool
may_be_stopped(const struct supervision *s, const struct state *st)
{
	return !st->exited && (s->child->tty_fd >= 0 || st->stop_passed);
}

/* The next moment on_time has something to do (TIME_NEVER: none), and while sweeping, the
 * next look at the leftovers. */
static int64_t
next_deadline(const struct supervision *s, const struct state *st, int64_t now)
{
	int64_t t = time_min(kill_time(s, st), watchdog_due(s->watchdog));

	if (!st->exited && st->stopping == STOP_NONE)
		t = time_min(t, st->max_hold_at);
	if (!st->lost)
		t = time_min(t, loss_due(s, st));
	if (st->sweeping)
		t = time_min(t, now + SWEEP_LOOK);
	if (may_be_stopped(s, st))
		t = time_min(t, st->stop_look);
	return t;
}

/* The command's job stopped: we stop with it, until it is continued. The watchdog stops with us:
 * a job stopped for longer than its lease loses the lock, which on_time finds before the
 * command is continued. */
static void
suspend(const struct supervision *s, struct state *st)
{
	int64_t at = clock_now();

	st->resumed = child_suspend(s->child, st->stop_passed);
	st->stop_passed = false;
	if (st->resumed) {
		st->stopped_at = at;
		st->continued_at = clock_now();
	}
}

/*
 * The command, started while we were not the terminal's foreground job (&), stopped at the
 * terminal (SIGTTIN, SIGTTOU), or a redlock-run inside it stopped its job so (SIGTSTP): it is a
 * job of that terminal now, which stops as flock(1)'s would, for fg to hand it the terminal.
 * Brought to the foreground already, it has the terminal at once (true). Not in an orphaned
 * group, whose stop the kernel would discard, nor without a terminal: it stays stopped, as
 * one stopped on purpose.
 */
static bool
adopted_terminal(const struct supervision *s, int sig)
{
	if (s->child->tty_fd >= 0)
		return false;
	if (!signals_job_stoppable()) {
		if (sig == SIGTSTP)
			return false;
		msg_warn("the command stopped at the terminal (%s) in a job that nothing can "
			 "continue (its shell is gone): it waits, %s held, until it is continued "
			 "or redlock-run is signalled",
			 sig == SIGTTIN ? "reading it" : "writing to it", s->lock->key);
		return false;
	}
	if (!child_adopt_terminal(s->child))
		return false;
	if (sig == SIGTSTP || !child_in_foreground(s->child))
		return false;
	child_resume(s->child);
	return true;
}

/* Collects exited children: the command's status, and the stop of its terminal job. */
static void
reap(const struct supervision *s, struct state *st)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
		if (pid == s->child->guard && !WIFSTOPPED(status)) {
			/* Killed: it ignores every signal it can. */
			s->child->guard = 0;
			msg_warn("the guard of the command's group (pid %ld) was killed: should "
				 "redlock-run be killed or stopped now, what the command started "
				 "outlives it",
				 (long)pid);
		}
		if (pid != s->child->pid)
			continue; /* an orphan of the command */
		if (WIFSTOPPED(status)) {
			int sig = WSTOPSIG(status);
			/* A pipeline's command that wants the terminal gets it. */
			if ((sig == SIGTTIN || sig == SIGTTOU) && child_claim_terminal(s->child))
				continue;
			if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
				if (adopted_terminal(s, sig))
					continue;
				suspend(s, st);
			}
			continue;
		}
		st->exited = true;
		st->wait_status = status;
		st->guard_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
				   s->child->guard > 0 && clock_now() >= s->child->guard_held;
	}
}

/*
 * After the command's exit: whatever it left in its group is told to stop (SIGTERM, and
 * SIGKILL after the grace period, but within the lease). True once the group is empty.
 */
static bool
swept(const struct supervision *s, struct state *st, int64_t now)
{
	if (child_group_empty(s->child) || now >= st->sweep_end)
		return true;
	if (!st->sweeping) {
		st->sweeping = true;
		child_signal(s->child, SIGTERM);
		child_signal(s->child, SIGCONT);
		st->kill_at = time_min(st->kill_at, time_add(now, s->grace));
		msg_info("stopping what the command left running in its process group");
	}
	return false;
}

/* Without a timer (none could be made), poll's own timeout stands in for it. */
static int
poll_timeout(int timer, int64_t next)
{
	if (timer >= 0 || next == TIME_NEVER)
		return -1;
	return (int)time_min(time_max(next - clock_now(), 0) / NS_PER_MS + 1, 1000);
}

struct outcome
supervise(const struct supervision *s)
{
	struct state st = {
		.sweep_end = TIME_NEVER,
		.renewed_at = s->lock->acquired_at,
		.lease_end = s->lock->valid_until,
		.max_hold_at =
			s->max_hold ? time_add(s->lock->held_since, s->max_hold) : TIME_NEVER,
		.kill_at = TIME_NEVER,
	};
	int timer = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
	struct outcome out = { 0 };

	sigemptyset(&st.forwarded);
	/* A continue from before the command started (a waiter stopped and continued) says
	 * nothing of the renewals to come. */
	signals_take_cont(s->signals);
	reap(s, &st);
	for (;;) {
		struct pollfd p[5] = {
			{ s->signals->fd, POLLIN, 0 },
			{ watchdog_fd(s->watchdog), POLLIN, 0 },
			{ timer, POLLIN, 0 },
			{ s->signals->cont_fd, POLLIN, 0 },
			{ -1, POLLIN, 0 },
		};
		int64_t now, next;
		struct watchdog_event ev;
		uint64_t expirations;
		int sig;

		now = catch_up(s, &st);
		child_guard_until(s->child, guard_deadline(s, &st));
		if (may_be_stopped(s, &st) && now >= st.stop_look) {
			st.stop_look = now + STOP_LOOK;
			if (child_stop_held(s->child)) {
				suspend(s, &st);
				continue; /* what came due while stopped, before the command runs */
			}
		}
		if (st.resumed) {
			st.resumed = false;
			child_resume(s->child);
		}
		if (st.exited && swept(s, &st, now))
			break;
		next = next_deadline(s, &st, now);
		if (timer >= 0) {
			/* An absolute CLOCK_BOOTTIME timer fires on time across a suspend; a
			 * zero value disarms it. */
			struct itimerspec its = { 0 };
			if (next != TIME_NEVER)
				its.it_value = clock_timespec(time_max(next, 1));
			timerfd_settime(timer, TFD_TIMER_ABSTIME, &its, NULL);
		}
		/* The connection the lock was taken on, until the watchdog has it (on_time may
		 * just have started it: from then on, only its thread touches the nodes). */
		if (watchdog_due(s->watchdog) != TIME_NEVER)
			p[4].fd = nodes_watch_fd(s->nodes);
		if (poll(p, 5, poll_timeout(timer, next)) < 0 && errno != EINTR) {
			/* Out of kernel memory, most likely: the command still runs and its
			 * lease still ends on time, so we look again a tick later, never leave
			 * with the command unreaped (its status would read 0, the lock given
			 * back under it). */
			struct timespec tick = { 0, 10 * 1000 * 1000 };
			nanosleep(&tick, NULL);
		}
		while ((sig = signals_take(s->signals)) != 0) {
			if (sig == SIGCHLD)
				reap(s, &st);
			else if (sig == SIGTSTP) {
				/* Sent to us (kill -TSTP, or to our job with no terminal): passed
				 * on, so that the command stops first (a redlock-run inside it
				 * stops its own), and we with it once it has (see reap). */
				child_signal(s->child, SIGTSTP);
				st.stop_passed = true;
			} else if (signals_forwarded(sig)) {
				child_signal(s->child, sig);
				sigaddset(&st.forwarded, sig);
				/* A stopped command could not act on it: as kill(1) on a
				 * stopped job, timeout(1) and systemd do, SIGCONT follows. */
				if (signals_ends_job(sig) && child_stopped(s->child))
					child_signal(s->child, SIGCONT);
			}
		}
		while (watchdog_take(s->watchdog, &ev)) {
			/* Continued, or fed at last, past the time to stop the command (see
			 * loss_due), we may learn of a renewal's loss in the same turn as of the
			 * stop: the clock speaks first, as when it is read first. */
			if (ev.type == WATCHDOG_LOST)
				catch_up(s, &st);
			on_event(s, &st, &ev);
		}
		if (p[4].fd >= 0 && p[4].revents)
			watch_server(s);
		if (read(timer, &expirations, sizeof(expirations)) < 0) {
			/* Not expired yet: nothing to clear. */
		}
	}
	if (timer >= 0)
		close(timer);

	out.status = child_exit_status(st.wait_status, &out.signal);
	out.forwarded = out.signal && sigismember(&st.forwarded, out.signal);
	if (st.guard_killed && !st.lost && st.stopping == STOP_NONE) {
		/* We did not run until past the lease's end as we knew it, and the guard took the
		 * command down then: renewals that we had not read yet may have kept the lock,
		 * but the command did not run to its end under it. A loss, not a signal from
		 * outside (which 128+9 would say). */
		msg_error("lost the lock on %s: redlock-run was held up past the end of its lease "
			  "(starved of CPU, or stopped), and its guard killed the command then",
			  s->lock->key);
		st.lost = true;
	}
	out.lost = st.lost;
	out.told_break = st.told_break;
	out.lease_end = st.lease_end;
	if (st.lost) {
		out.status = STATUS_LOST;
		out.signal = 0;
	} else if (st.stopping == STOP_MAX_HOLD) {
		out.status = STATUS_MAX_HOLD;
		out.signal = 0;
	} else if (st.stopping == STOP_CANCELLED) {
		out.status = STATUS_CANCELLED;
		out.signal = 0;
	}
	return out;
}
