/*
 * The command's side (DESIGN §4.1, §4.3, §5): it runs in a process group of its own (which
 * it leads), watched from outside by a tiny guard process whose only job is to take that
 * whole group down with SIGKILL the moment redlock-run dies, however it dies, or by when
 * redlock-run should have stopped it and did not (see child_guard_until). The command itself
 * also gets SIGKILL as its parent-death signal, in case it left the group.
 */
#ifndef REDLOCK_CHILD_H
#define REDLOCK_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "signals.h"

struct child {
	pid_t pid;           /* the command */
	pid_t pgid;          /* its process group, which it leads */
	pid_t guard;         /* the guard */
	int guard_fd;        /* our end of the guard's pipe */
	int64_t guard_until; /* the last deadline the guard was given (see child_guard_until) */
	int64_t guard_held;  /* the earliest it may still act on: the one before, until it reads */
	int tty_fd;          /* the terminal we are the foreground job of, or -1 */
	bool piped;          /* we are one command of a pipeline on that terminal */
	bool handed;         /* the command's group is to have the terminal */
	int guard_error;     /* why child_prepare failed */
};

/* Nothing started yet: what child_free may always be given. */
void child_init(struct child *ch);

/*
 * Starts the guard, before the lock is taken (and while redlock-run is small, which makes the
 * fork cheap): a waiter does not pay for it between the release it is woken by and its
 * command's start. Does nothing the second time. 0, or -1 with errno set (child_spawn then
 * fails the same way). child_free sends the guard away if no command is started.
 *
 * The guard goes by a name of its own in ps and pgrep: "redlock-guard", and with argv (our
 * main's, or NULL), the command line "redlock-guard of PID" written over ours.
 */
int child_prepare(struct child *ch, char *argv[]);

/*
 * Starts the command, watched by child_prepare's guard: argv[0] is looked up in PATH, envp is
 * its whole environment. When redlock-run is the terminal's foreground job, the command's group
 * becomes the foreground group; in a pipeline, whose other commands share our job (less, which
 * reads the terminal), only once the command asks for it (see child_claim_terminal). Returns 0
 * (also when exec fails: then the command has exited 126 or 127 and the reason was printed), or -1
 * with errno set when nothing could be started.
 */
int child_spawn(struct child *ch, char *const argv[], char *const envp[],
		const struct signals *sig);

/* Whether a stop reached the command's group and its process cannot stop: it waits on a child
 * that the stop caught before it could exec (a shell's vfork child), and stops only once that
 * child is continued. A job stopped so is a stopped job all the same. */
bool child_stop_held(const struct child *ch);

/* Sends sig to the command's whole process group. */
void child_signal(const struct child *ch, int sig);

/* Whether nothing of the command's process group is left (reaping the orphans that came
 * to us). */
bool child_group_empty(const struct child *ch);

/* The command stopped reading or writing the terminal that its group has not been handed (a
 * pipeline's member): it gets it now, and is continued; the job keeps what remains of it once
 * the command is over (child_finish). False when that is not the case. */
bool child_claim_terminal(struct child *ch);

/* The command stopped (SIGTSTP, SIGTTIN, SIGTTOU): from its terminal (Ctrl-Z), or, when asked,
 * by the SIGTSTP that redlock-run was sent and passed on to its group. Its whole group is
 * stopped, then the job that ran us (from the terminal) or redlock-run alone (asked), so that
 * nothing of the command runs while the watchdog renews nothing. Returns once redlock-run is
 * continued (true; then call child_resume), or false at once for a command that is not a job
 * of a terminal and was stopped by somebody else on purpose. */
bool child_suspend(struct child *ch, bool asked);

/* By when the guard is to take the command's group down, should redlock-run not have done it
 * itself (stopped with SIGSTOP, or starved of CPU): CLOCK_BOOTTIME ns, or TIME_NEVER. Says so to
 * the guard when it changed, and again at the next call when it could not. */
void child_guard_until(struct child *ch, int64_t deadline);
/* The command, started while we were not the terminal's foreground job, stopped reading or
 * writing it (SIGTTIN, SIGTTOU), or a redlock-run inside it stopped its job (SIGTSTP): it is
 * a job of that terminal now, stopped as any (see child_suspend), and continued with the
 * terminal by fg (see child_resume). False when we have no controlling terminal. */
bool child_adopt_terminal(struct child *ch);

/* Whether we are the foreground job of the terminal we have (see child_adopt_terminal). */
bool child_in_foreground(const struct child *ch);

/* Whether the command is stopped, as /proc says (false when it cannot be told). */
bool child_stopped(const struct child *ch);

/* Continues the command, handing it the terminal if we are in the foreground (fg), unless
 * one command of a pipeline that never asked for it. */
void child_resume(struct child *ch);

/* Once nothing of the command is left: the terminal goes back to redlock-run if the
 * command had it, and so does tty_signal, a signal that killed the command and that only
 * the terminal can have sent (not one redlock-run forwarded), to the job that ran us; the
 * guard stands down (it leaves at child_free, after the release). */
void child_finish(struct child *ch, int tty_signal);

/* Sends the guard away and reaps it: one that has not stood down takes the command's group
 * down first, if a command was started. */
void child_free(struct child *ch);

/* Maps a wait status the way a shell does: the exit code, or 128+N for signal N (then
 * *signo is N, else 0). */
int child_exit_status(int wait_status, int *signo);

/* The environment for the command: environ with each "NAME=value" of add put in (replacing
 * NAME if present). A NULL-terminated array to free(), whose strings are not copied. */
char **child_environment(char *const environ_[], char *const add[], int nadd);

#endif
