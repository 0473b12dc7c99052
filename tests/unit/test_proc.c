/* proc: a process's state, parent and group, as /proc says; a zombie is 'Z'. */
#include <signal.h>
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
	return check_done("proc");
}
