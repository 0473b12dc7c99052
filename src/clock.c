#include "clock.h"

#include <errno.h>
#include <poll.h>

int
clock_sleep_until(int64_t deadline, int intr_fd)
{
	for (;;) {
		struct pollfd p = { intr_fd, POLLIN, 0 };
		int64_t left = deadline - clock_now();
		struct timespec ts;

		if (left <= 0)
			return 0;
		ts = clock_timespec(left);
		/* A negative fd is skipped by poll: then this is a plain sleep. */
		if (ppoll(&p, 1, &ts, NULL) > 0)
			return -1;
	}
}
