#include "signals.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "exitstatus.h"
#include "proc.h"
#include "util.h"

/* The signals that end a process by default, less those the kernel sends for a fault of the
 * receiver's own (SEGV...), SIGPIPE (see signals_init) and those rare enough to leave alone
 * (SIGPROF, SIGXCPU...). */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };

bool
signals_forwarded(int sig)
{
	for (size_t i = 0; i < ARRAY_LEN(forwarded); i++)
		if (forwarded[i] == sig)
			return true;
	return false;
}

bool
signals_ends_job(int sig)
{
	return signals_forwarded(sig) && sig != SIGUSR1 && sig != SIGUSR2;
}

/*
 * Whether a stop signal can stop us: whether our process group is not orphaned (POSIX), which
 * the first of our ancestors outside it tells by being in our session (a shell with job
 * control, a script's). The common case costs two system calls.
 */
bool
signals_job_stoppable(void)
{
	pid_t group = getpgrp(), session = getsid(0), p = getppid(), ppid, pgrp;
	char state;

	for (int up = 0; up < 16 && p > 0; up++) {
		pid_t g = getpgid(p);
		if (g < 0)
			return false;
		if (g != group)
			return getsid(p) == session;
		if (proc_stat(p, &state, &ppid, &pgrp) < 0)
			return false;
		p = ppid;
	}
	return false;
}

int
signals_init(struct signals *s)
{
	struct sigaction sa;
	sigset_t consumed, blocked;

	sigemptyset(&consumed);
	for (size_t i = 0; i < ARRAY_LEN(forwarded); i++) {
		if (sigaction(forwarded[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&consumed, forwarded[i]);
	}
	/* SIGTSTP too, where a stop can stop us: a waiter then leaves the line before it stops
	 * (see signals_stop_self). In an orphaned group (a service, a cron job), the kernel
	 * discards it, and a waiter keeps its place. */
	if (sigaction(SIGTSTP, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN &&
	    signals_job_stoppable())
		sigaddset(&consumed, SIGTSTP);
	sigaddset(&consumed, SIGCHLD);
	/* With SIGCHLD ignored, children would be reaped behind our back and their status
	 * lost; the command gets the ignored disposition back before exec. */
	s->chld_was_ignored = sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
	if (s->chld_was_ignored) {
		sa.sa_handler = SIG_DFL;
		sa.sa_flags = 0;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGCHLD, &sa, NULL);
	}
	/* Two more are blocked and never consumed: SIGTTOU, which a background process gets
	 * for handing the terminal to the command's group and taking it back, and SIGPIPE, so
	 * that a write to a reader that is gone (a guard killed with its group, a closed stderr)
	 * fails with EPIPE instead of killing us. SIGCONT is blocked too (a blocked SIGCONT still
	 * continues us), and told apart (see signals_take_cont). */
	blocked = consumed;
	sigaddset(&blocked, SIGTTOU);
	sigaddset(&blocked, SIGPIPE);
	sigaddset(&blocked, SIGCONT);
	if (sigprocmask(SIG_BLOCK, &blocked, &s->entry_mask) < 0)
		return -1;
	s->consumed = consumed;
	s->fd = signalfd(-1, &consumed, SFD_CLOEXEC | SFD_NONBLOCK);
	sigdelset(&consumed, SIGCHLD);
	s->stop_fd = signalfd(-1, &consumed, SFD_CLOEXEC | SFD_NONBLOCK);
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGCONT);
	s->cont_fd = signalfd(-1, &blocked, SFD_CLOEXEC | SFD_NONBLOCK);
	return s->fd < 0 || s->stop_fd < 0 || s->cont_fd < 0 ? -1 : 0;
}

int
signals_consume_tstp(struct signals *s)
{
	struct sigaction sa;
	sigset_t tstp;

	if (sigismember(&s->consumed, SIGTSTP) || sigaction(SIGTSTP, NULL, &sa) < 0 ||
	    sa.sa_handler == SIG_IGN)
		return 0;
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	sigaddset(&s->consumed, SIGTSTP);
	/* (The watchdog's thread blocks every signal: this one thread is the process.) */
	if (sigprocmask(SIG_BLOCK, &tstp, NULL) < 0 || signalfd(s->fd, &s->consumed, 0) < 0)
		return -1;
	return 0;
}

void
signals_stop_self(bool whole_job)
{
	struct sigaction sa;
	sigset_t tstp;

	if (sigaction(SIGTSTP, NULL, &sa) < 0 || sa.sa_handler != SIG_DFL) {
		kill(getpid(), SIGSTOP);
		return;
	}
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	kill(whole_job ? 0 : getpid(), SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &tstp, NULL); /* stopped here until continued */
	sigprocmask(SIG_BLOCK, &tstp, NULL);
}

static int
take(int fd)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

int
signals_take(const struct signals *s)
{
	return take(s->fd);
}

int
signals_take_stop(const struct signals *s)
{
	return take(s->stop_fd);
}

bool
signals_take_cont(const struct signals *s)
{
	return take(s->cont_fd) != 0;
}

void
signals_restore_entry(const struct signals *s)
{
	if (s->chld_was_ignored) {
		struct sigaction sa = { .sa_handler = SIG_IGN };
		sigaction(SIGCHLD, &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, &s->entry_mask, NULL);
}

_Noreturn void
signals_die(int sig)
{
	struct rlimit no_core = { 0, 0 };
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t set;

	setrlimit(RLIMIT_CORE, &no_core);
	sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	/* Only a signal whose default is to carry on (CHLD, CONT, WINCH…) gets here. */
	_exit(STATUS_SIGNAL_BASE + sig);
}
