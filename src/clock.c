#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>

int
clock_poll(struct pollfd *p, unsigned long n, int64_t left)
{
	int64_t ms = left / NS_PER_MS + (left % NS_PER_MS > 0);

	return poll(p, (nfds_t)n, (int)time_min(ms, INT_MAX));
}

bool
clock_interrupted(int intr_fd)
{
	struct pollfd p = { intr_fd, POLLIN, 0 };

	return intr_fd >= 0 && poll(&p, 1, 0) > 0;
}

int
clock_sleep_until(int64_t deadline, int intr_fd)
{
	for (;;) {
		struct pollfd p = { intr_fd, POLLIN, 0 };
		int64_t left = deadline - clock_now();

		if (left <= 0)
			return 0;
		/* A negative fd is skipped by poll: then this is a plain sleep. */
		if (clock_poll(&p, 1, left) > 0)
			return -1;
	}
}
