/*
 * clock.h — the one reading of the real clocks for the programs that run in real time (tools,
 * examples, the real-disk profiler). A library of its own, apart from units/why: the
 * scheduler and the file-system core take `now` as an argument and never link it.
 */
#ifndef AVFS_CLOCK_H
#define AVFS_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns: for intervals and deadlines. */
int64_t avfs_clock_ns(void);

/* CLOCK_REALTIME in ns since the epoch: for time stamps a user reads (file times). */
int64_t avfs_clock_realtime_ns(void);

/* Sleep until CLOCK_MONOTONIC reaches t (ns, as avfs_clock_ns), across signals; at once if
 * it has. */
void avfs_clock_sleep_until(int64_t t);

#endif
