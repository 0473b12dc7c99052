/* What /proc says of a process on this host. */
#ifndef REDLOCK_PROC_H
#define REDLOCK_PROC_H

#include <sys/types.h>

/* Process pid's state letter (R, S, T, Z...), parent and process group: 0, or -1 when it
 * cannot be read (gone, or /proc hidden). */
int proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp);

#endif
