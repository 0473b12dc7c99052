/* child: wait statuses mapped as a shell maps them, the command's environment, a real
 * spawn whose exec fails, and the guard. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "clock.h"
#include "exitstatus.h"

/* The wait status of a real process that does what `how` says. */
static int
status_of(int how)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (how < 0)
			raise(-how);
		_exit(how);
	}
	waitpid(pid, &status, 0);
	return status;
}

/* Whether fd reaches end-of-file within 5s. */
static int
eof_soon(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char c;

	return poll(&p, 1, 5000) == 1 && read(fd, &c, 1) == 0;
}

/*
 * The guard of a process that dies with a command running: it kept none of that process's
 * descriptors open, and the command's group dies with it, down to a background sleep that no
 * parent-death signal reaches. We are the subreaper that its orphans come to.
 */
static void
check_guard(void)
{
	int held[2], report[2], status;
	pid_t p, pgid = 0;

	CHECK_INT(pipe(held), 0);
	CHECK_INT(pipe(report), 0);
	if ((p = fork()) == 0) {
		struct signals s;
		struct child ch;
		int started[2];
		char script[64], c;
		close(held[0]);
		close(report[0]);
		signals_init(&s);
		child_init(&ch);
		if (child_prepare(&ch, NULL) < 0 || pipe(started) < 0)
			_exit(98);
		close(held[1]); /* now only the guard could hold it */
		/* (dash takes a single digit in >&N) */
		snprintf(script, sizeof(script), "sleep 30 & echo > /dev/fd/%d; wait", started[1]);
		if (child_spawn(&ch, (char *[]){ "sh", "-c", script, NULL },
				(char *[]){ "PATH=/usr/bin:/bin", NULL }, &s) < 0)
			_exit(97);
		close(started[1]);
		if (read(started[0], &c, 1) != 1 || /* the sleep runs */
		    write(report[1], &ch.pgid, sizeof(ch.pgid)) != (ssize_t)sizeof(ch.pgid))
			_exit(96);
		raise(SIGKILL);
	}
	close(held[1]);
	close(report[1]);
	CHECK(eof_soon(held[0]));
	CHECK_INT(read(report[0], &pgid, sizeof(pgid)), sizeof(pgid));
	CHECK_INT(waitpid(p, &status, 0), p);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* The command's group, orphans now and ours to reap, is killed, not left to sleep; and
	 * the guard, which came to us too, is gone once it has done so. */
	for (int waited = 0;
	     waited < 500 && (waitpid(-1, NULL, WNOHANG) >= 0 || kill(-pgid, 0) == 0); waited++)
		usleep(10000);
	CHECK(pgid > 0 && kill(-pgid, 0) < 0 && errno == ESRCH);
	CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);
	close(held[0]);
	close(report[0]);
}

/* A process's state letter in /proc ('S' sleeping, 'Z' a zombie...), or '?' when gone. */
static char
state_of(pid_t pid)
{
	char path[64], line[512], *close_paren;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (!(f = fopen(path, "r")))
		return '?';
	close_paren = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : '?';
}

/*
 * A guard that stood down (child_finish) stays until child_free, so that its exit costs
 * nothing between the command's end and the release; and the end-of-file that sends it away
 * then takes nothing down, even what would still be in the group.
 */
static void
check_stood_down(const struct signals *s)
{
	struct child ch;
	int started[2], status;
	char script[64], state = '?';
	pid_t guard, left = 0;

	CHECK_INT(pipe(started), 0);
	child_init(&ch);
	CHECK_INT(child_prepare(&ch, NULL), 0);
	snprintf(script, sizeof(script), "sleep 30 & echo $! >&%d", started[1]);
	CHECK_INT(child_spawn(&ch, (char *[]){ "sh", "-c", script, NULL },
			      (char *[]){ "PATH=/usr/bin:/bin", NULL }, s),
		  0);
	close(started[1]);
	FILE *f = fdopen(started[0], "r");
	CHECK(f && fscanf(f, "%d", &left) == 1 && left > 0);
	if (f)
		fclose(f);
	waitpid(ch.pid, &status, 0);
	guard = ch.guard;
	child_finish(&ch, 0); /* with the sleep still in the group: only a test does that */
	/* Once it has read the byte, it waits again: asleep, not a zombie. */
	for (int tries = 0, unread = 1; tries < 500; tries++) {
		if (unread > 0 && ioctl(ch.guard_fd, FIONREAD, &unread) < 0)
			break;
		if (unread == 0 && strchr("SZ?", state = state_of(guard)))
			break;
		usleep(10000);
	}
	CHECK_INT(state, 'S');
	child_free(&ch);
	CHECK_INT(waitpid(guard, NULL, WNOHANG), -1); /* gone, and reaped */
	/* Having killed nothing: the sleep (ours to reap since its shell went) dies of the
	 * SIGTERM we send it now. A SIGKILL sent before would have decided its end already. */
	CHECK_INT(kill(left, SIGTERM), 0);
	CHECK_INT(waitpid(left, &status, 0), left);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

int
main(int argc, char *argv[])
{
	int sig;

	prctl(PR_SET_CHILD_SUBREAPER, 1);
	check_guard();

	CHECK_INT(child_exit_status(status_of(0), &sig), 0);
	CHECK_INT(sig, 0);
	CHECK_INT(child_exit_status(status_of(1), &sig), 1);
	CHECK_INT(child_exit_status(status_of(42), &sig), 42);
	CHECK_INT(child_exit_status(status_of(255), &sig), 255);
	CHECK_INT(sig, 0);
	CHECK_INT(child_exit_status(status_of(-SIGKILL), &sig), 137);
	CHECK_INT(sig, SIGKILL);
	CHECK_INT(child_exit_status(status_of(-SIGTERM), &sig), 143);
	CHECK_INT(sig, SIGTERM);
	CHECK_INT(child_exit_status(status_of(-SIGINT), &sig), 130);
	CHECK_INT(sig, SIGINT);

	char *env[] = { "PATH=/bin", "REDLOCK_KEY=stale", "HOME=/root", "REDLOCK_KEYS=other",
			NULL };
	char *add[] = { "REDLOCK_KEY=job", "REDLOCK_FENCE=7" };
	char **out = child_environment(env, add, 2);
	CHECK_STR(out[0], "PATH=/bin");
	CHECK_STR(out[1], "HOME=/root");
	CHECK_STR(out[2], "REDLOCK_KEYS=other"); /* a longer name is another variable */
	CHECK_STR(out[3], "REDLOCK_KEY=job");
	CHECK_STR(out[4], "REDLOCK_FENCE=7");
	CHECK(out[5] == NULL);
	free(out);
	out = child_environment(NULL, add, 1);
	CHECK_STR(out[0], "REDLOCK_KEY=job");
	CHECK(out[1] == NULL);
	free(out);

	/* Spawning: a command that is not there exits 127, one that cannot be executed 126,
	 * and each runs in a process group of its own. */
	struct signals s;
	struct child ch;
	int status;
	pid_t guard;
	CHECK_INT(signals_init(&s), 0);
	child_init(&ch);
	CHECK_INT(child_prepare(&ch, NULL), 0);
	CHECK_INT(child_spawn(&ch, (char *[]){ "/nonexistent/command", NULL }, env, &s), 0);
	waitpid(ch.pid, &status, 0);
	CHECK_INT(child_exit_status(status, &sig), STATUS_NOT_FOUND);
	child_finish(&ch, 0);
	child_free(&ch);
	char plain[] = "/tmp/redlock-test-plain.XXXXXX";
	close(mkstemp(plain)); /* mode 0600: not executable */
	child_init(&ch);
	CHECK_INT(child_prepare(&ch, NULL), 0);
	CHECK_INT(child_spawn(&ch, (char *[]){ plain, NULL }, env, &s), 0);
	unlink(plain);
	waitpid(ch.pid, &status, 0);
	CHECK_INT(child_exit_status(status, &sig), STATUS_CANNOT_EXEC);
	child_finish(&ch, 0);
	child_free(&ch);
	child_init(&ch);
	CHECK_INT(child_prepare(&ch, NULL), 0);
	CHECK_INT(child_spawn(&ch, (char *[]){ "sh", "-c", "exit 3", NULL },
			      (char *[]){ "PATH=/usr/bin:/bin", NULL }, &s),
		  0);
	CHECK(ch.pgid != getpgrp());
	CHECK_INT(getpgid(ch.pid) == ch.pgid || getpgid(ch.pid) < 0, 1);
	waitpid(ch.pid, &status, 0);
	CHECK_INT(child_exit_status(status, &sig), 3);
	child_finish(&ch, 0);
	guard = ch.guard;
	child_free(&ch);
	CHECK_INT(kill(-ch.pgid, 0), -1);             /* the group is empty */
	CHECK_INT(waitpid(guard, NULL, WNOHANG), -1); /* and the guard reaped */
	check_stood_down(&s);

	/* The deadline given before the command starts is the guard's from the start: with
	 * nothing said after (redlock-run stopped or starved at once), the command dies then. */
	child_init(&ch);
	CHECK_INT(child_prepare(&ch, NULL), 0);
	child_guard_until(&ch, clock_now() + 200 * NS_PER_MS);
	CHECK_INT(child_spawn(&ch, (char *[]){ "sleep", "30", NULL },
			      (char *[]){ "PATH=/usr/bin:/bin", NULL }, &s),
		  0);
	waitpid(ch.pid, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	child_finish(&ch, 0);
	child_free(&ch);

	/* A guard readied for a command that never starts goes away when told; and without
	 * a guard, no command starts. It goes by a name of its own, in ps as in pgrep. */
	child_init(&ch);
	CHECK_INT(child_prepare(&ch, argc > 0 ? argv : NULL), 0);
	CHECK_INT(child_prepare(&ch, NULL), 0); /* the second time does nothing */
	guard = ch.guard;
	char path[64], got[128] = "", want[64];
	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)guard);
	for (int tries = 0; tries < 200 && strcmp(got, "redlock-guard\n") != 0; tries++) {
		FILE *f = fopen(path, "r");
		got[0] = '\0';
		if (f) {
			if (!fgets(got, sizeof(got), f))
				got[0] = '\0';
			fclose(f);
		}
		if (strcmp(got, "redlock-guard\n") != 0)
			usleep(10000); /* a bounded poll: it names itself first thing */
	}
	CHECK_STR(got, "redlock-guard\n");
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)guard);
	snprintf(want, sizeof(want), "redlock-guard of %ld", (long)getpid());
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		size_t n = fread(got, 1, sizeof(got) - 1, f);
		got[n] = '\0';
		fclose(f);
	}
	CHECK_STR(got, want); /* one string: the rest is NUL */
	CHECK(strlen(argv[0]) > 0 && strstr(argv[0], "test_child")); /* ours is ours still */
	child_free(&ch);
	CHECK(ch.guard == 0);
	CHECK_INT(waitpid(guard, NULL, WNOHANG), -1);
	child_init(&ch);
	CHECK_INT(child_spawn(&ch, (char *[]){ "true", NULL }, env, &s), -1);

	return check_done("child");
}
