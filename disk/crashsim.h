/*
 * crashsim.h — the disk images a power cut could leave, built from a base image and a
 * recdisk log: which writes reached the medium at a crash point, and in what order. Pure
 * functions over memory: no I/O, no clock, reproducible from a seed. Checking an image
 * (mount, fsck) is the caller's business.
 */
#ifndef AVFS_CRASHSIM_H
#define AVFS_CRASHSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recdisk.h"

/* A crash point: the log prefix [0, upto) had completed. Writes before the last FLUSH in
 * that prefix are durable. The writes after it are "in flight": a FUA write among them is
 * durable by itself and always applied; each other one is independently dropped or applied
 * (probability 1/2, from seed), and the applied ones land in a seeded random order.
 * upto just after a FLUSH (or 0) therefore gives the clean prefix, and so does any upto
 * with all_inflight_applied. */
struct avfs_crash_point {
	size_t upto;			/* log entries [0, upto) completed; above nlog means nlog */
	uint64_t seed;			/* drives the drop choices and the order */
	bool all_inflight_applied;	/* drop nothing, log order: no power cut at all */
};

/* Write the crash image for pt into out (size bytes; may not alias base): a copy of base,
 * then the durable writes in log order, then the in-flight ones as pt says. The order of
 * the applied in-flight writes is shuffled only between FUA writes: an in-flight write never lands
 * after a FUA write logged after it, nor before one logged before it, so a FUA write is
 * overwritten only by a later write to the same bytes. Write entries that do not fit in
 * size bytes are skipped. Returns the number of in-flight writes dropped. */
size_t avfs_crash_image(const uint8_t *base, uint64_t size, const struct avfs_rec_entry *log,
			size_t nlog, const struct avfs_crash_point *pt, uint8_t *out);

/* Crash points for a log, sorted by upto: 0, every index just after a FLUSH, and nlog
 * (each once), plus up to random_per_gap distinct random cuts strictly inside each gap
 * between consecutive ones (all of the gap's inner indexes if it has no more than that).
 * Each point gets its own seed derived from seed; all_inflight_applied is false.
 * Returns a malloc'ed array (caller frees) and its count in *n, or NULL and *n = 0 when
 * out of memory. */
struct avfs_crash_point *avfs_crash_points(const struct avfs_rec_entry *log, size_t nlog,
					   unsigned random_per_gap, uint64_t seed, size_t *n);

#endif
