/*
 * Signals (DESIGN §4.3). Before anything touches Redis, INT, TERM, HUP, QUIT, USR1, USR2, ALRM,
 * CHLD and (but in an orphaned group) TSTP are blocked in every thread and consumed in one
 * place, through a signalfd: no handler ever runs; while the command runs, TSTP in any case. A
 * signal that was ignored when redlock-run started (HUP under nohup, INT in a script's background
 * job) is left ignored, for redlock-run and for the command alike.
 */
#ifndef REDLOCK_SIGNALS_H
#define REDLOCK_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

struct signals {
	int fd;                /* readable while one of ours is pending */
	sigset_t consumed;     /* what fd takes */
	int stop_fd;           /* readable while one that stops us is pending (not SIGCHLD) */
	int cont_fd;           /* readable once we were continued after a stop (SIGCONT) */
	sigset_t entry_mask;   /* the mask redlock-run started with */
	bool chld_was_ignored; /* SIGCHLD was SIG_IGN on entry; we need it at SIG_DFL */
};

/* Blocks and redirects our signals; must run before any thread is created. 0, or -1 with
 * errno set. */
int signals_init(struct signals *s);

/* Once the command is about to start: SIGTSTP (unless ignored on entry) is consumed, if it was
 * not from the start (an orphaned group, see signals_init), so that a stop sent to
 * redlock-run (kill -TSTP) is passed on to the command's group and stops redlock-run only
 * once the command has stopped (see child_suspend), rather than redlock-run alone. 0, or -1
 * with errno set. */
int signals_consume_tstp(struct signals *s);

/* Stops redlock-run with SIGTSTP, so that what runs it sees "Stopped" as for any job: sent to
 * our whole process group (the job, which may be a script that ran us) or to us alone. SIGTSTP
 * is blocked (consumed): let through for that moment, it stops us as it would have. Unless
 * it was ignored on entry: then SIGSTOP. Returns once continued. */
void signals_stop_self(bool whole_job);

/* Whether a stop signal can stop our job: its process group is not orphaned (see
 * signals_init). */
bool signals_job_stoppable(void);

/* Takes one pending signal: its number, or 0 when none is pending. */
int signals_take(const struct signals *s);
/* Takes one pending signal of those that are passed on (see signals_forwarded), or SIGTSTP,
 * leaving SIGCHLD for signals_take: what ends a wait, and not a child we inherited exiting. */
int signals_take_stop(const struct signals *s);

/* Whether redlock-run was continued after a stop (SIGSTOP, or its job's) since the last call:
 * it did not run meanwhile. SIGCONT is blocked from the start, and only this takes it. */
bool signals_take_cont(const struct signals *s);

/* True for the signals that are passed on to the command: INT, TERM, HUP, QUIT, USR1, USR2 and
 * ALRM. */
bool signals_forwarded(int sig);

/* True for those of them that ask a job to end: INT, TERM, HUP, QUIT and ALRM (USR1 and USR2
 * ask a running program for something, such as reopening its logs). */
bool signals_ends_job(int sig);

/* For the command, between fork and exec (async-signal-safe): the signal mask and the
 * SIGCHLD disposition redlock-run had on entry. */
void signals_restore_entry(const struct signals *s);

/* Ends redlock-run by signal sig, so that its parent sees what the command went through
 * (as timeout(1) does); no core is dumped. */
_Noreturn void signals_die(int sig);

#endif
