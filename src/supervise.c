#include "supervise.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "duration.h"
#include "exitstatus.h"
#include "msg.h"

enum stop_reason {
	STOP_NONE,
	STOP_LOST,
	STOP_MAX_HOLD,
};

struct state {
	int64_t lease_end;   /* when the lease stops being ours, on our clock */
	int64_t renewed_at;  /* when the last good renewal (or the acquire) was sent */
	int64_t max_hold_at; /* TIME_NEVER without --max-hold */
	int64_t kill_at;     /* a SIGKILL is due then (TIME_NEVER: none) */
	enum stop_reason stopping;
	bool lost;
	bool gone;    /* the key is no longer ours: the lease protects nothing now */
	bool failing; /* renewals are failing right now */
	char last_error[512];
	bool exited;
	int wait_status;
};

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

/* Sends the first signal of a stop, and schedules the SIGKILL that follows it. */
static void
begin_stop(const struct supervision *s, struct state *st, enum stop_reason why, int sig,
	   int64_t kill_at)
{
	if (st->stopping == STOP_NONE) {
		st->stopping = why;
		child_signal(s->child, sig);
		/* A stopped process acts on SIGTERM only once it runs again. */
		if (sig != SIGKILL)
			child_signal(s->child, SIGCONT);
	}
	if (sig != SIGKILL)
		st->kill_at = time_min(st->kill_at, kill_at);
}

static void
on_event(const struct supervision *s, struct state *st, const struct watchdog_event *ev)
{
	const char *key = s->lock->key;
	char holder[LOCK_HOLDER_MAX], left[32];

	switch (ev->type) {
	case WATCHDOG_RENEWED:
		st->renewed_at = ev->sent;
		st->lease_end = lock_lease_deadline(s->lock, ev->sent);
		if (st->failing)
			msg_warn("renewed %s again", key);
		else
			msg_info("renewed %s", key);
		st->failing = false;
		return;
	case WATCHDOG_FAILED:
		snprintf(st->last_error, sizeof(st->last_error), "%s", ev->detail);
		if (!st->failing || msg_verbose())
			msg_warn("cannot renew %s: %s; retrying for the %s left of the lease", key,
				 ev->detail,
				 duration_format(st->lease_end - clock_now(), left, sizeof(left)));
		st->failing = true;
		return;
	case WATCHDOG_LOST:
		break;
	}
	st->lost = true;
	st->gone = true;
	switch (ev->how) {
	case LOCK_TAKEN:
		msg_error("lost the lock on %s: it is held by %s now; %s", key,
			  lock_describe_holder(ev->detail, holder, sizeof(holder)),
			  action(s->on_lost));
		break;
	case LOCK_GONE_WITH_DATA:
		msg_error("lost the lock on %s: the server no longer has it nor its fence counter "
			  "(restarted empty or flushed); %s",
			  key, action(s->on_lost));
		break;
	default:
		msg_error("lost the lock on %s: it expired or was deleted; %s", key,
			  action(s->on_lost));
		break;
	}
	if (s->on_lost == ON_LOST_KILL)
		begin_stop(s, st, STOP_LOST, SIGKILL, TIME_NEVER);
	else if (s->on_lost == ON_LOST_TERM)
		begin_stop(s, st, STOP_LOST, SIGTERM, clock_now() + s->grace);
}

/* Acts on every deadline that has come. */
static void
on_time(const struct supervision *s, struct state *st, int64_t now)
{
	/* When renewals fail, SIGTERM goes out this long before the lease ends, and SIGKILL
	 * at its end: both before the server can let the key expire. */
	int64_t lead = time_min(s->grace, s->lock->ttl / 3);
	char held[32], since[32];

	if (st->stopping == STOP_NONE && now >= st->max_hold_at) {
		msg_error("%s held for --max-hold %s; stopping the command", s->lock->key,
			  duration_format(s->max_hold, held, sizeof(held)));
		begin_stop(s, st, STOP_MAX_HOLD, SIGTERM, now + s->grace);
	}
	if (!st->lost && now >= st->lease_end - (s->on_lost == ON_LOST_IGNORE ? 0 : lead)) {
		st->lost = true;
		msg_error("lost the lock on %s: no renewal for %s (%s); %s", s->lock->key,
			  duration_format(now - st->renewed_at, since, sizeof(since)),
			  st->last_error[0] ? st->last_error : "no answer yet", action(s->on_lost));
		if (s->on_lost == ON_LOST_KILL)
			begin_stop(s, st, STOP_LOST, SIGKILL, TIME_NEVER);
		else if (s->on_lost == ON_LOST_TERM)
			begin_stop(s, st, STOP_LOST, SIGTERM, st->lease_end);
	}
	/* Whatever the reason for stopping, the command never outlives a lease that may
	 * still be ours; once the key is gone, the grace period is the user's to keep. */
	if (st->stopping != STOP_NONE && !st->gone && s->on_lost != ON_LOST_IGNORE)
		st->kill_at = time_min(st->kill_at, st->lease_end);
	if (now >= st->kill_at) {
		child_signal(s->child, SIGKILL);
		st->kill_at = TIME_NEVER;
	}
	if (now >= watchdog_due(s->watchdog) && watchdog_start(s->watchdog) < 0) {
		char buf[128];
		msg_error("cannot start renewing %s: %s", s->lock->key,
			  msg_strerror(errno, buf, sizeof(buf)));
	}
}

static int64_t
next_deadline(const struct supervision *s, const struct state *st)
{
	int64_t lead = s->on_lost == ON_LOST_IGNORE ? 0 : time_min(s->grace, s->lock->ttl / 3);
	int64_t t = time_min(st->kill_at, watchdog_due(s->watchdog));

	if (st->stopping == STOP_NONE)
		t = time_min(t, st->max_hold_at);
	if (!st->lost)
		t = time_min(t, st->lease_end - lead);
	return t;
}

/*
 * Ctrl-Z stopped the command: give the terminal back to the shell and stop as well, so
 * that the shell sees the job stopped; when it is continued, so is the command. (The
 * watchdog stops with us: a job stopped for longer than its lease loses the lock.)
 */
static void
job_stopped(const struct supervision *s)
{
	if (s->child->tty_fd < 0)
		return;
	tcsetpgrp(s->child->tty_fd, getpgrp());
	kill(getpid(), SIGSTOP);
	tcsetpgrp(s->child->tty_fd, s->child->pgid);
	child_signal(s->child, SIGCONT);
}

static void
reap(const struct supervision *s, struct state *st)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
		if (pid != s->child->pid)
			continue; /* the guard, or an orphan of the command */
		if (WIFSTOPPED(status)) {
			int sig = WSTOPSIG(status);
			if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
				job_stopped(s);
			continue;
		}
		st->exited = true;
		st->wait_status = status;
	}
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
		.renewed_at = s->lock->acquired_at,
		.lease_end = lock_lease_deadline(s->lock, s->lock->acquired_at),
		.max_hold_at = s->max_hold ? s->lock->acquired_at + s->max_hold : TIME_NEVER,
		.kill_at = TIME_NEVER,
	};
	int timer = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
	struct outcome out = { 0 };

	reap(s, &st);
	while (!st.exited) {
		struct pollfd p[3] = {
			{ s->signals->fd, POLLIN, 0 },
			{ watchdog_fd(s->watchdog), POLLIN, 0 },
			{ timer, POLLIN, 0 },
		};
		int64_t next;
		struct watchdog_event ev;
		uint64_t expirations;
		int sig;

		on_time(s, &st, clock_now());
		next = next_deadline(s, &st);
		if (timer >= 0) {
			/* An absolute CLOCK_BOOTTIME timer fires on time across a suspend; a
			 * zero value disarms it. */
			struct itimerspec its = { 0 };
			if (next != TIME_NEVER)
				its.it_value = clock_timespec(time_max(next, 1));
			timerfd_settime(timer, TFD_TIMER_ABSTIME, &its, NULL);
		}
		if (poll(p, 3, poll_timeout(timer, next)) < 0 && errno != EINTR)
			break;
		while ((sig = signals_take(s->signals)) != 0) {
			if (sig == SIGCHLD)
				reap(s, &st);
			else if (signals_forwarded(sig))
				child_signal(s->child, sig);
		}
		while (watchdog_take(s->watchdog, &ev))
			on_event(s, &st, &ev);
		if (read(timer, &expirations, sizeof(expirations)) < 0) {
			/* Not expired yet: nothing to clear. */
		}
	}
	if (timer >= 0)
		close(timer);

	out.status = child_exit_status(st.wait_status, &out.signal);
	out.lost = st.lost;
	if (st.lost) {
		out.status = STATUS_LOST;
		out.signal = 0;
	} else if (st.stopping == STOP_MAX_HOLD) {
		out.status = STATUS_MAX_HOLD;
		out.signal = 0;
	}
	return out;
}
