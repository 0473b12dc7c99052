#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "exitstatus.h"
#include "msg.h"
#include "proc.h"

/* Whether our standard input or output is a pipe: we may be one command of a pipeline. */
static bool
piped(void)
{
	struct stat st;

	return (fstat(STDIN_FILENO, &st) == 0 && S_ISFIFO(st.st_mode)) ||
	       (fstat(STDOUT_FILENO, &st) == 0 && S_ISFIFO(st.st_mode));
}

/* The controlling terminal, if redlock-run is its foreground job; else -1. */
static int
foreground_tty(void)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd >= 0 && tcgetpgrp(fd) != getpgrp()) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void
close_all_but(int keep)
{
	if ((keep == 0 || close_range(0, (unsigned)keep - 1, 0) == 0) &&
	    close_range((unsigned)keep + 1, ~0U, 0) == 0)
		return;
	for (int fd = 0; fd < 1024; fd++)
		if (fd != keep)
			close(fd);
}

/* Waits until fd has something to read (the pipe's end is non-blocking). Always true. */
static bool
wait_readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	poll(&p, 1, -1);
	return true;
}

/* What the guard's pipe brings after the group's id: deadlines (see child_guard_until), and
 * this, which means "stand down". */
#define GUARD_STAND_DOWN INT64_MIN

/*
 * The guard: a tiny process beside the command's group. Its pipe brings the group's id, then
 * deadlines, then GUARD_STAND_DOWN; end-of-file before that means redlock-run is gone, however
 * it went, and the group dies with it, as it does when a deadline passes with no later one
 * given (redlock-run stopped with SIGSTOP, or starved: it did not stop the command itself as its
 * lease ended). Stood down, it leaves only at end-of-file: its exit then costs nothing between
 * the command's end and the release that hands the lock on (woken to exit at once, it took the
 * CPU from redlock-run for a tenth of a handoff). Only async-signal-safe calls: this is a fork of
 * a process that may have threads.
 */
static _Noreturn void
run_guard(int fd, char *title, size_t title_size, const char *name)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	sigset_t none;
	pid_t pgid;
	int64_t deadline = TIME_NEVER, next;
	char byte;
	ssize_t n;

	/* A process group of its own: what kills redlock-run's whole group (timeout(1), a CI
	 * runner cancelling a job, kill -9 %1) must not take the guard with it. */
	setpgid(0, 0);
	/* A name of its own, so that ps and pgrep do not count it as a second redlock-run. */
	prctl(PR_SET_NAME, "redlock-guard");
	for (size_t i = 0; i < title_size; i++) /* NUL-terminated, whatever it cuts */
		title[i] = i + 1 < title_size && *name ? *name++ : '\0';

	/* No signal may take the guard away early: not one a user sends it by mistake. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &ignore, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	close_all_but(fd);
	do
		n = read(fd, &pgid, sizeof(pgid));
	while (n < 0 && (errno == EINTR || (errno == EAGAIN && wait_readable(fd))));
	if (n != (ssize_t)sizeof(pgid))
		_exit(0); /* no command was started */
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = deadline == TIME_NEVER ? -1 : time_max(deadline - clock_now(), 0);
		int ready = poll(
			&p, 1,
			left < 0 ? -1 : (int)time_min((left + NS_PER_MS - 1) / NS_PER_MS, INT_MAX));
		if (ready == 0 && clock_now() >= deadline) {
			kill(-pgid, SIGKILL);
			deadline = TIME_NEVER;
		}
		if (ready <= 0)
			continue;
		n = read(fd, &next, sizeof(next));
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
			kill(-pgid, SIGKILL);
			_exit(0);
		}
		if (n == (ssize_t)sizeof(next) && next == GUARD_STAND_DOWN)
			break;
		if (n == (ssize_t)sizeof(next))
			deadline = next;
	}
	do /* stood down: waits for the end-of-file that child_free brings */
		n = read(fd, &byte, 1);
	while (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN) && wait_readable(fd)));
	_exit(0);
}

/*
 * The command, between vfork and exec. It shares our memory and stack (we are suspended
 * until it execs or exits): only async-signal-safe calls that touch no shared state (ch is
 * only read), and no return. An exec failure is left in *exec_errno.
 */
static _Noreturn void
run_command(char *const argv[], char *const envp[], const struct signals *sig,
	    const struct child *ch, pid_t parent, volatile int *exec_errno)
{
	pid_t group = getpid();

	setpgid(0, 0);
	/* The guard learns the group, and the deadline it is to keep, before the command can
	 * run: however early redlock-run is stopped or starved, it acts. */
	if (write(ch->guard_fd, &group, sizeof(group)) < 0 ||
	    write(ch->guard_fd, &ch->guard_until, sizeof(ch->guard_until)) < 0) {
		/* The guard is gone: nothing to tell it. */
	}
	if (ch->handed)
		tcsetpgrp(ch->tty_fd, group); /* SIGTTOU is still blocked here */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(STATUS_SIGNAL_BASE + SIGKILL); /* redlock-run died before the line above */
	signals_restore_entry(sig);
	execvpe(argv[0], argv, envp);
	*exec_errno = errno;
	_exit(errno == ENOENT ? STATUS_NOT_FOUND : STATUS_CANNOT_EXEC);
}

void
child_init(struct child *ch)
{
	memset(ch, 0, sizeof(*ch));
	ch->guard_fd = ch->tty_fd = -1;
}

/* Our command line's bytes (argv's strings, one after the other), which the guard writes its
 * own over: *size is 0 when there are none. */
static char *
title_area(char *argv[], size_t *size)
{
	char *end;

	*size = 0;
	if (!argv || !argv[0])
		return NULL;
	end = argv[0] + strlen(argv[0]) + 1;
	for (size_t i = 1; argv[i] == end; i++)
		end = argv[i] + strlen(argv[i]) + 1;
	*size = (size_t)(end - argv[0]);
	return argv[0];
}

int
child_prepare(struct child *ch, char *argv[])
{
	int fds[2];
	char name[64];
	size_t title_size;
	char *title = title_area(argv, &title_size);

	if (ch->guard > 0)
		return 0;
	snprintf(name, sizeof(name), "redlock-guard of %ld", (long)getpid());
	/* (Non-blocking: a guard that is stopped must not stop us in a write.) */
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		ch->guard_error = errno;
		return -1;
	}
	ch->guard = fork();
	if (ch->guard == 0)
		run_guard(fds[0], title, title_size, name);
	ch->guard_error = errno;
	if (ch->guard > 0)
		setpgid(ch->guard, ch->guard); /* as it does itself, whichever runs first */
	close(fds[0]);
	if (ch->guard < 0) {
		close(fds[1]);
		ch->guard = 0;
		errno = ch->guard_error;
		return -1;
	}
	ch->guard_fd = fds[1];
	ch->guard_until = ch->guard_held = TIME_NEVER;
	return 0;
}

void
child_guard_until(struct child *ch, int64_t deadline)
{
	if (ch->guard_fd < 0 || ch->guard <= 0 || deadline == ch->guard_until)
		return;
	if (ch->pgid <= 0) { /* no command yet: child_spawn gives it to the guard with the group */
		ch->guard_until = ch->guard_held = deadline;
		return;
	}
	/* (8 bytes: a pipe writes them whole or not at all.) */
	if (write(ch->guard_fd, &deadline, sizeof(deadline)) == (ssize_t)sizeof(deadline)) {
		/* A guard starved as we were may not have read it yet. */
		ch->guard_held = time_min(ch->guard_until, deadline);
		ch->guard_until = deadline;
	}
}

/*
 * Whether name (a path, or a command found in $PATH) is a file whose "#!" line names an
 * interpreter that is not there, as execve's ENOENT then says: "its interpreter INTERPRETER
 * (#!) was not found" into buf.
 */
static bool
missing_interpreter(const char *name, char *buf, size_t size)
{
	char path[PATH_MAX], line[PATH_MAX + 2];
	const char *dirs = strchr(name, '/') ? "" : getenv("PATH");
	struct stat st;
	FILE *f = NULL;

	/* The file execvp ran: name itself, or the first of $PATH's that is there. */
	for (const char *d = dirs; d && !f;) {
		size_t len = strcspn(d, ":");
		snprintf(path, sizeof(path), "%.*s%s%s", (int)len, d, len ? "/" : "", name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			f = fopen(path, "re");
		d = d[len] ? d + len + 1 : NULL;
	}
	if (!f)
		return false;
	bool script = fgets(line, sizeof(line), f) && strncmp(line, "#!", 2) == 0;
	fclose(f);
	if (!script)
		return false;
	/* "#! /usr/bin/env python3": the interpreter is the first word; one that ends in a
	 * carriage return is a file saved with Windows line endings. */
	char *start = line + 2 + strspn(line + 2, " \t");
	size_t len = strcspn(start, " \t\r\n");
	bool crlf = start[len] == '\r' && strspn(start + len, "\r\n") == strlen(start + len);
	start[len] = '\0';
	if (!*start)
		return false;
	if (crlf)
		snprintf(buf, size,
			 "its #! line ends in a carriage return (Windows line endings), so its "
			 "interpreter is \"%s\\r\", which is not there",
			 start);
	else
		snprintf(buf, size, "its interpreter %s (#!) was not found", start);
	return true;
}

int
child_spawn(struct child *ch, char *const argv[], char *const envp[], const struct signals *sig)
{
	volatile int exec_errno = 0;
	pid_t parent = getpid();
	int status;

	/* Without a guard, no command starts: one killed while we waited for the lock is a
	 * zombie until reaped here (it ignores every signal it can). */
	if (ch->guard > 0 && waitpid(ch->guard, &status, WNOHANG) == ch->guard) {
		msg_warn("the guard of the command's group (pid %ld) was killed while the lock was "
			 "awaited: the command does not start without it",
			 (long)ch->guard);
		ch->guard = 0;
		ch->guard_error = ESRCH;
	}
	if (ch->guard <= 0) {
		errno = ch->guard_error ? ch->guard_error : EAGAIN;
		return -1;
	}

	/* Orphans of the command come to us, not to init, so its group empties out through
	 * our own waitpid calls. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	ch->tty_fd = foreground_tty();
	/* A pipeline's other commands share our job, and may read the terminal (less): taking it
	 * from them would stop them. A pipe on our standard input or output says we may be one. */
	ch->piped = ch->tty_fd >= 0 && piped();
	ch->handed = ch->tty_fd >= 0 && !ch->piped;
	/* vfork: nothing to copy for a child that is about to exec, which on some machines is
	 * a tenth of a run. */
	ch->pid = vfork();
	if (ch->pid < 0) {
		int err = errno;
		if (ch->tty_fd >= 0)
			close(ch->tty_fd);
		ch->tty_fd = -1;
		errno = err;
		return -1;
	}
	if (ch->pid == 0)
		run_command(argv, envp, sig, ch, parent, &exec_errno);
	ch->pgid = ch->pid;
	setpgid(ch->pid, ch->pgid); /* as the command did itself; it may have exec'd since */
	if (ch->handed)
		tcsetpgrp(ch->tty_fd, ch->pgid);
	if (exec_errno) {
		char buf[PATH_MAX + 64];
		struct stat st;
		const char *why;
		/* As a shell says it: a directory is one, and an empty name is shown as such; a
		 * script that is there names the interpreter that is not. */
		if (exec_errno == EACCES && strchr(argv[0], '/') && stat(argv[0], &st) == 0 &&
		    S_ISDIR(st.st_mode))
			why = "is a directory";
		else if (exec_errno == ENOENT && missing_interpreter(argv[0], buf, sizeof(buf)))
			why = buf;
		else
			why = msg_strerror(exec_errno, buf, sizeof(buf));
		/* "redlock-run KEY -n -- cmd" runs "-n": options go before KEY; "redlock-run KEY --
		 * -- cmd" runs the second "--". */
		msg_error("cannot run %s: %s%s", argv[0][0] ? argv[0] : "''", why,
			  strcmp(argv[0], "--") == 0 ? " (one '--' before COMMAND is enough)"
			  : argv[0][0] == '-'        ? " (options go before KEY)"
						     : "");
	}
	return 0;
}

bool
child_stop_held(const struct child *ch)
{
	return proc_held_by_stopped_child(ch->pid, ch->pgid);
}

void
child_signal(const struct child *ch, int sig)
{
	kill(-ch->pgid, sig);
}

/* Takes the terminal back from the command's group, if that group has it (a job continued
 * with bg must not take it from the shell). True if it did. */
static bool
take_terminal_back(const struct child *ch)
{
	if (tcgetpgrp(ch->tty_fd) != ch->pgid)
		return false;
	tcsetpgrp(ch->tty_fd, getpgrp());
	return true;
}

bool
child_group_empty(const struct child *ch)
{
	/* Orphans of the command came to us (we are its subreaper): reap the ones that
	 * exited, or they would count as members. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	/* The pgid cannot be reused while a member is alive, and the next look comes within
	 * milliseconds of the last one going. */
	return kill(-ch->pgid, 0) < 0 && errno == ESRCH;
}

bool
child_claim_terminal(struct child *ch)
{
	if (!ch->piped || ch->handed || !child_in_foreground(ch))
		return false;
	ch->handed = true;
	tcsetpgrp(ch->tty_fd, ch->pgid);
	kill(-ch->pgid, SIGCONT);
	return true;
}

bool
child_suspend(struct child *ch, bool asked)
{
	if (ch->tty_fd < 0 && !asked)
		return false; /* not a job of a terminal: somebody stopped it on purpose */
	/* Nothing of it runs until we are continued: the lease is no matter meanwhile. */
	child_guard_until(ch, TIME_NEVER);
	/* The whole group first, also what ignores SIGTSTP: nothing of it may run on while
	 * we, and the watchdog with us, are stopped and renew nothing. */
	kill(-ch->pgid, SIGSTOP);
	if (ch->tty_fd >= 0)
		take_terminal_back(ch);
	/* Then the job, the way the terminal would have stopped it; or, when the stop was
	 * sent to us, ourselves (a stop sent to our job has reached the rest of it). */
	signals_stop_self(!asked);
	return true;
}

bool
child_adopt_terminal(struct child *ch)
{
	if (ch->tty_fd < 0 && (ch->tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)) >= 0)
		ch->piped = piped();
	return ch->tty_fd >= 0;
}

bool
child_in_foreground(const struct child *ch)
{
	return ch->tty_fd >= 0 && tcgetpgrp(ch->tty_fd) == getpgrp();
}

bool
child_stopped(const struct child *ch)
{
	char state;
	pid_t ppid, pgrp;

	return proc_stat(ch->pid, &state, &ppid, &pgrp) == 0 && (state == 'T' || state == 't');
}

void
child_resume(struct child *ch)
{
	/* Continued by fg, the terminal is ours to hand on (again, or for the first time to a
	 * command started in the background); by bg, it stays with the shell. */
	if ((ch->handed || !ch->piped) && child_in_foreground(ch)) {
		ch->handed = true;
		tcsetpgrp(ch->tty_fd, ch->pgid);
	}
	kill(-ch->pgid, SIGCONT);
}

void
child_finish(struct child *ch, int tty_signal)
{
	if (ch->tty_fd >= 0) {
		bool had_it = take_terminal_back(ch);
		close(ch->tty_fd);
		ch->tty_fd = -1;
		/* Ctrl-C or Ctrl-\ reached only the command's group. When we are not the
		 * job the shell started (a script that runs us is), or one command of a
		 * pipeline, the rest of that job gets it too, as it would have without a group
		 * of the command's own. */
		if (had_it && (getpgrp() != getpid() || ch->piped) &&
		    (tty_signal == SIGINT || tty_signal == SIGQUIT))
			kill(0, tty_signal);
		/* A pipeline's command that had the terminal may have stopped the others
		 * reading it: they go on. */
		if (had_it && ch->piped)
			kill(0, SIGCONT);
	}
	/* The group is empty: the guard stands down (and leaves when child_free closes its
	 * pipe, after the release). */
	if (ch->guard_fd >= 0) {
		int64_t stand_down = GUARD_STAND_DOWN;
		/* (It fails only when someone stopped the guard and its pipe filled up.) */
		if (write(ch->guard_fd, &stand_down, sizeof(stand_down)) < 0) {
			/* Then it is gone already, or takes an empty group down as it leaves. */
		}
	}
}

void
child_free(struct child *ch)
{
	if (ch->guard_fd >= 0) {
		/* End-of-file: a guard that stood down leaves; one still watching takes the
		 * command's group down, if a command was started. */
		close(ch->guard_fd);
		ch->guard_fd = -1;
	}
	if (ch->guard > 0)
		while (waitpid(ch->guard, NULL, 0) < 0 && errno == EINTR)
			;
	ch->guard = 0;
}

int
child_exit_status(int wait_status, int *signo)
{
	*signo = 0;
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status)) {
		*signo = WTERMSIG(wait_status);
		return STATUS_SIGNAL_BASE + *signo;
	}
	return STATUS_OSERR;
}

static bool
same_name(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return strncmp(a, b, n) == 0 && b[n] == '=';
}

char **
child_environment(char *const environ_[], char *const add[], int nadd)
{
	size_t n = 0, o = 0;
	char **env;

	while (environ_ && environ_[n])
		n++;
	if (!(env = calloc(n + (size_t)nadd + 1, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;
		for (int j = 0; j < nadd && !replaced; j++)
			replaced = same_name(add[j], environ_[i]);
		if (!replaced)
			env[o++] = environ_[i];
	}
	for (int j = 0; j < nadd; j++)
		env[o++] = add[j];
	env[o] = NULL;
	return env;
}
