/* What /proc says of a process on this host. */
#ifndef REDLOCK_PROC_H
#define REDLOCK_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Process pid's state letter (R, S, T, Z...), parent and process group: 0, or -1 when it
 * cannot be read (gone, or /proc hidden). */
int proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp);

/* Whether a terminal's stop (Ctrl-Z, SIGTSTP) reached process pid that it cannot take: it waits
 * in the kernel (state D), the stop pending, on a child of its in process group pgid that the
 * stop did stop (T). A shell whose vfork child was stopped before it could exec waits so,
 * until that child is continued. False when it cannot be told. */
bool proc_held_by_stopped_child(pid_t pid, pid_t pgid);

#endif
