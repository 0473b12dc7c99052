#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
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

/* Whether a terminal's stop signal (SIGTSTP, SIGTTIN, SIGTTOU) waits for process pid to take it,
 * as /proc/PID/status says (SigPnd, for its thread; ShdPnd, for the process). (Not SIGSTOP:
 * whoever stops a group with it continues it, not its job.) */
static bool
stop_pending(pid_t pid)
{
	const unsigned long long stops =
		1ULL << (SIGTSTP - 1) | 1ULL << (SIGTTIN - 1) | 1ULL << (SIGTTOU - 1);
	char path[32], line[128];
	unsigned long long mask;
	bool pending = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f))
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		     sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
		    (mask & stops))
			pending = true;
	fclose(f);
	return pending;
}

bool
proc_held_by_stopped_child(pid_t pid, pid_t pgid)
{
	char state;
	pid_t ppid, pgrp;
	struct dirent *e;
	bool held = false;
	DIR *d;

	/* Cheap first: most looks end here. */
	if (proc_stat(pid, &state, &ppid, &pgrp) < 0 || state != 'D' || !stop_pending(pid))
		return false;
	if (!(d = opendir("/proc")))
		return false;
	while (!held && (e = readdir(d))) {
		char *end;
		long child = strtol(e->d_name, &end, 10);
		held = *end == '\0' && child > 0 &&
		       proc_stat((pid_t)child, &state, &ppid, &pgrp) == 0 && ppid == pid &&
		       pgrp == pgid && state == 'T';
	}
	closedir(d);
	return held;
}
