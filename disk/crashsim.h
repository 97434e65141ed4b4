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
 * with all_inflight_applied.
 * Torn writes (torn_sector > 0): the power also cuts writes at a sector boundary, as a drive
 * that loses power mid-command leaves its first sectors written and the rest as they were.
 * Each applied in-flight write that is not FUA lands cut with probability 1/4, and the write
 * under way at the cut (log[upto], when it is a write, FUA or not) lands cut with probability
 * 1/2: its first k sectors, k uniform in [1, sectors - 1] (writes of one sector are never
 * cut). A cut write keeps its place in the landing order; the one under way lands last. */
struct avfs_crash_point {
	size_t upto;			/* log entries [0, upto) completed; above nlog means nlog */
	uint64_t seed;			/* drives the drop choices and the order */
	bool all_inflight_applied;	/* drop nothing, log order: no power cut at all */
	uint32_t torn_sector;		/* 0: writes land whole or not at all; else the sector
					 * size (a power of two) at which writes may be cut */
	bool torn_always;		/* with torn_sector: every in-flight write (not FUA) lands
					 * cut, none is dropped, and the one under way lands cut
					 * too (a test aiming at a few writes) */
};

/* What a crash image holds beyond the durable prefix. */
struct avfs_crash_stats {
	size_t dropped;		/* in-flight writes that did not land */
	size_t torn;		/* writes that landed cut (in flight, or under way at the cut) */
	/* the write under way at the cut (log[upto]) reads back whole: its bytes are all on the
	 * medium (cut where the lost sectors already held the same bytes, or never cut). A
	 * checker counts such a write as done: a FUA commit record then commits */
	bool cut_whole;
};

/* Write the crash image for pt into out (size bytes; may not alias base): a copy of base,
 * then the durable writes in log order, then the in-flight ones as pt says. The order of
 * the applied in-flight writes is shuffled only between FUA writes: an in-flight write never lands
 * after a FUA write logged after it, nor before one logged before it, so a FUA write is
 * overwritten only by a later write to the same bytes. Write entries that do not fit in
 * size bytes are skipped. Returns the number of in-flight writes dropped. */
size_t avfs_crash_image(const uint8_t *base, uint64_t size, const struct avfs_rec_entry *log,
			size_t nlog, const struct avfs_crash_point *pt, uint8_t *out);
/* The same, saying in *st (not NULL) what was dropped and torn. Returns st->dropped. */
size_t avfs_crash_image_stats(const uint8_t *base, uint64_t size,
			      const struct avfs_rec_entry *log, size_t nlog,
			      const struct avfs_crash_point *pt, uint8_t *out,
			      struct avfs_crash_stats *st);

/* Crash points for a log, sorted by upto: 0, every index just after a FLUSH, and nlog
 * (each once), plus up to random_per_gap distinct random cuts strictly inside each gap
 * between consecutive ones (all of the gap's inner indexes if it has no more than that).
 * Each point gets its own seed derived from seed; all_inflight_applied is false.
 * Returns a malloc'ed array (caller frees) and its count in *n, or NULL and *n = 0 when
 * out of memory. */
struct avfs_crash_point *avfs_crash_points(const struct avfs_rec_entry *log, size_t nlog,
					   unsigned random_per_gap, uint64_t seed, size_t *n);

#endif
