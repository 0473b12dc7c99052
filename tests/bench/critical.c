/*
 * The critical section of scripts/bench.sh: reads a counter from a file, works for a while,
 * writes the counter back one higher, and appends "<start ns> <end ns>" (CLOCK_MONOTONIC, the
 * same clock in every process) to a log. Two of these running at once lose an increment, so
 * the final count proves mutual exclusion.
 *
 *   critical COUNTER-FILE LOG-FILE MICROSECONDS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int
main(int argc, char *argv[])
{
	long long start = now_ns(), end;
	char buf[64] = "";
	long count;
	int counter, log;
	ssize_t n;

	if (argc != 4) {
		fprintf(stderr, "usage: critical COUNTER-FILE LOG-FILE MICROSECONDS\n");
		return 2;
	}
	counter = open(argv[1], O_RDWR | O_CREAT, 0644);
	log = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (counter < 0 || log < 0) {
		perror("critical");
		return 1;
	}
	n = pread(counter, buf, sizeof(buf) - 1, 0);
	count = n > 0 ? strtol(buf, NULL, 10) : 0;
	long us = strtol(argv[3], NULL, 10);
	struct timespec work = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&work, NULL);
	n = snprintf(buf, sizeof(buf), "%ld\n", count + 1);
	if (pwrite(counter, buf, (size_t)n, 0) != n || ftruncate(counter, n) < 0) {
		perror("critical");
		return 1;
	}
	end = now_ns();
	n = snprintf(buf, sizeof(buf), "%lld %lld\n", start, end);
	if (write(log, buf, (size_t)n) != n) {
		perror("critical");
		return 1;
	}
	return 0;
}
