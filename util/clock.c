/*
 * clock.c — the real clocks of clock.h. No virtual time here: the simulator's clock is
 * disk/simengine.c's, handed to the code that takes `now`.
 */
#include "clock.h"

#include <errno.h>
#include <time.h>

#define NS 1000000000

static int64_t read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);	/* cannot fail for these clocks and a valid pointer */
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

int64_t avfs_clock_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

int64_t avfs_clock_realtime_ns(void)
{
	return read_ns(CLOCK_REALTIME);
}

void avfs_clock_sleep_until(int64_t t)
{
	struct timespec ts = { .tv_sec = t / NS, .tv_nsec = t % NS };

	if (t < 0)
		return;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
