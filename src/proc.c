#include "proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp)
{
	char path[32], buf[512];
	const char *after;
	long parent, group;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "PID (COMM) STATE PPID PGRP ...": COMM may hold anything, the last ')' ends it. */
	if (!(after = strrchr(buf, ')')) ||
	    sscanf(after + 1, " %c %ld %ld", state, &parent, &group) != 3)
		return -1;
	*ppid = (pid_t)parent;
	*pgrp = (pid_t)group;
	return 0;
}

bool
proc_held_by_stopped_child(pid_t pid)
{
	char path[64], buf[512], state, *p, *end;
	pid_t ppid, pgrp;
	ssize_t n;
	int fd;

	if (proc_stat(pid, &state, &ppid, &pgrp) < 0 || state != 'D')
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid, (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "PID PID ...": a shell's vfork child is among the first. */
	for (p = buf;; p = end) {
		long child = strtol(p, &end, 10);
		if (end == p)
			return false;
		if (proc_stat((pid_t)child, &state, &ppid, &pgrp) == 0 &&
		    (state == 'T' || state == 't'))
			return true;
	}
}
