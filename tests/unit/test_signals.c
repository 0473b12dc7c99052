/* signals: which signals are taken over, that an ignored one stays ignored, and that the
 * entry mask and SIGCHLD disposition come back for the command. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "signals.h"

/* In a child: the mask and SIGCHLD disposition after signals_restore_entry, as a bitmask
 * of facts. */
static int
restored_state(const struct signals *s)
{
	sigset_t now;
	struct sigaction sa;
	int facts = 0;

	signals_restore_entry(s);
	sigprocmask(SIG_SETMASK, NULL, &now);
	sigaction(SIGCHLD, NULL, &sa);
	facts |= sigismember(&now, SIGUSR1) ? 1 : 0;
	facts |= sigismember(&now, SIGTERM) ? 2 : 0;
	facts |= sa.sa_handler == SIG_IGN ? 4 : 0;
	return facts;
}

int
main(void)
{
	struct signals s;
	struct sigaction ignore = { .sa_handler = SIG_IGN }, sa;
	sigset_t entry, now;
	int status;

	/* Entry state: HUP ignored (nohup), USR1 blocked, CHLD ignored by a careless parent. */
	sigaction(SIGHUP, &ignore, NULL);
	sigaction(SIGCHLD, &ignore, NULL);
	sigemptyset(&entry);
	sigaddset(&entry, SIGUSR1);
	sigprocmask(SIG_SETMASK, &entry, NULL);

	CHECK_INT(signals_init(&s), 0);
	CHECK(s.fd >= 0);
	CHECK(s.chld_was_ignored);
	sigprocmask(SIG_SETMASK, NULL, &now);
	CHECK(sigismember(&now, SIGTERM) && sigismember(&now, SIGINT) &&
	      sigismember(&now, SIGQUIT) && sigismember(&now, SIGCHLD));
	CHECK(!sigismember(&now, SIGHUP)); /* ignored on entry: left alone */
	CHECK(sigismember(&now, SIGUSR1));
	sigaction(SIGCHLD, NULL, &sa);
	CHECK(sa.sa_handler == SIG_DFL); /* or children would vanish unreaped */
	sigaction(SIGHUP, NULL, &sa);
	CHECK(sa.sa_handler == SIG_IGN);

	CHECK(signals_forwarded(SIGTERM) && signals_forwarded(SIGINT) &&
	      signals_forwarded(SIGHUP) && signals_forwarded(SIGQUIT));
	CHECK(signals_forwarded(SIGUSR1) && signals_forwarded(SIGUSR2) &&
	      signals_forwarded(SIGALRM));
	CHECK(!signals_forwarded(SIGCHLD) && !signals_forwarded(SIGPIPE) &&
	      !signals_forwarded(SIGSEGV));

	/* Taken through the descriptor, one at a time, in no handler. */
	CHECK_INT(signals_take(&s), 0);
	kill(getpid(), SIGTERM);
	kill(getpid(), SIGHUP); /* ignored: never arrives */
	CHECK_INT(signals_take(&s), SIGTERM);
	CHECK_INT(signals_take(&s), 0);

	/* A child exiting is for supervise (signals_take), and never ends a wait
	 * (signals_take_stop). */
	kill(getpid(), SIGCHLD);
	CHECK_INT(signals_take_stop(&s), 0);
	kill(getpid(), SIGINT);
	CHECK_INT(signals_take_stop(&s), SIGINT);
	CHECK_INT(signals_take(&s), SIGCHLD);

	/* What the command gets back. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(restored_state(&s));
	waitpid(pid, &status, 0);
	CHECK_INT(WEXITSTATUS(status), 1 | 4); /* USR1 blocked, TERM not, CHLD ignored */
	return check_done("signals");
}
