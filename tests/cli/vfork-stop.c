/*
 * A command that cannot stop, as a shell cannot when Ctrl-Z catches the child it vforked before
 * that child could exec: its child stops itself with SIGTSTP, and the parent waits in vfork (in
 * the kernel, state D) until the child is continued, and exits. Exits 0 then.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(void)
{
	pid_t child = vfork();

	if (child == 0) {
		kill(getpid(), SIGTSTP);
		_exit(0);
	}
	if (child < 0)
		return 1;
	while (waitpid(child, NULL, 0) < 0)
		;
	return 0;
}
