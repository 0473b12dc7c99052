/* What /proc says of a process on this host. */
#ifndef REDLOCK_PROC_H
#define REDLOCK_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Process pid's state letter (R, S, T, Z...), parent and process group: 0, or -1 when it
 * cannot be read (gone, or /proc hidden). */
int proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp);

/* Whether process pid waits in the kernel (state D) on a child of its that is stopped (T): a
 * shell whose vfork child was stopped before it could exec waits so, and stops only once that
 * child is continued. False when it cannot be told. */
bool proc_held_by_stopped_child(pid_t pid);

#endif
