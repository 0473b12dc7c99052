/*
 * A command that cannot stop, as a shell cannot when Ctrl-Z catches the child it vforked before
 * that child could exec: its child stops its whole process group with SIGTSTP, as the terminal
 * does (or with SIGSTOP, given "STOP", as someone outside may); the child stops, and the
 * parent, waiting in vfork (in the kernel, state D), holds the stop pending until the child is
 * continued. Exits 0 then.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	int sig = argc > 1 && strcmp(argv[1], "STOP") == 0 ? SIGSTOP : SIGTSTP;
	pid_t child = vfork();

	if (child == 0) {
		kill(0, sig);
		_exit(0);
	}
	if (child < 0)
		return 1;
	while (waitpid(child, NULL, 0) < 0)
		if (errno != EINTR)
			return 1;
	return 0;
}
