#include "proc.h"

#include <fcntl.h>
#include <stdio.h>
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
