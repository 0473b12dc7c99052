/* proc: a process's state, parent and group, as /proc says; a zombie is 'Z'; a process held
 * in vfork by a stopped child. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "proc.h"

int
main(void)
{
	char state = '?';
	pid_t ppid = 0, pgrp = 0, child;

	CHECK_INT(proc_stat(getpid(), &state, &ppid, &pgrp), 0);
	CHECK(state == 'R');
	CHECK_INT(ppid, getppid());
	CHECK_INT(pgrp, getpgrp());

	/* Exited and not reaped yet: a zombie, until waited for; then nothing. */
	if ((child = fork()) == 0)
		_exit(0);
	for (int i = 0; i < 1000 && proc_stat(child, &state, &ppid, &pgrp) == 0 && state != 'Z';
	     i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	CHECK(state == 'Z');
	CHECK_INT(ppid, getpid());
	waitpid(child, NULL, 0);
	CHECK_INT(proc_stat(child, &state, &ppid, &pgrp), -1);

	/* Waiting in vfork on a child that a stop caught before it could exec: held, with the
	 * stop pending, until that child is continued (SIGCONT to the child's group, its own). */
	CHECK(!proc_held_by_stopped_child(getpid(), getpgrp()));
	if ((child = fork()) == 0) {
		setpgid(0, 0);
		pid_t grandchild = vfork();
		if (grandchild == 0) {
			kill(0, SIGTSTP); /* the group, as Ctrl-Z does: both, the parent pending */
			_exit(0);
		}
		while (waitpid(grandchild, NULL, 0) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	bool held = false;
	for (int i = 0; i < 10000 && !(held = proc_held_by_stopped_child(child, child)); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	CHECK(held);
	/* Not of another group. */
	CHECK(!proc_held_by_stopped_child(child, getpgrp()));
	kill(-child, held ? SIGCONT : SIGKILL);
	int status = -1;
	waitpid(child, &status, 0);
	CHECK(!held || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
	return check_done("proc");
}
