/*
 * Time as redlock-run measures it: nanoseconds on CLOCK_BOOTTIME, the monotonic clock that
 * keeps counting through suspend. A lease that ran out while the machine slept has run out;
 * wall-clock time is never used for a decision.
 */
#ifndef REDLOCK_CLOCK_H
#define REDLOCK_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define NS_PER_US INT64_C(1000)
#define NS_PER_MS INT64_C(1000000)
#define NS_PER_S INT64_C(1000000000)
#define TIME_NEVER INT64_MAX
/* A wait (a duration, where 0 means not at all) that has no end. */
#define WAIT_FOREVER INT64_C(-1)

static inline int64_t
clock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static inline struct timespec
clock_timespec(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S };

	return ts;
}

/* t + d, saturating at TIME_NEVER: durations go up to ~292 years, and a deadline that far
 * out simply never comes. d is never negative. */
static inline int64_t
time_add(int64_t t, int64_t d)
{
	return t > TIME_NEVER - d ? TIME_NEVER : t + d;
}

static inline int64_t
time_min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static inline int64_t
time_max(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Sleeps until deadline (CLOCK_BOOTTIME ns). Returns 0 then, or -1 as soon as intr_fd
 * (-1 for none) becomes readable. */
int clock_sleep_until(int64_t deadline, int intr_fd);
/* Whether intr_fd (-1 for none) is readable now. */
bool clock_interrupted(int intr_fd);

/*
 * poll(2) for `left` ns at most (0 or more), rounded up to a whole ms, as poll(2) counts. Not
 * ppoll(2): stopped (SIGSTOP, Ctrl-Z) and continued, a ppoll goes on for the whole time it had
 * left when it stopped, so that a wait outlasts its end by as long as the stop; the kernel
 * restarts a poll with the end it had. (Where there is no poll system call, as on arm64, glibc
 * makes it a ppoll, and a stop still stretches the wait.)
 */
struct pollfd;
int clock_poll(struct pollfd *p, unsigned long n, int64_t left);

#endif
