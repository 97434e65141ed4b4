/*
 * zrr.h — the data block allocator: Zone-Round-Robin (papers/001 §3.2.2, SPEC §4), ZRR in runs
 * (the default of mkfs.avfs), and the contiguous first-fit baseline, over a borrowed bitmap of
 * data-region block indexes.
 * Sans-I/O, unlocked: persisting the bitmap and last_zone and serialising calls is the fs's job.
 */
#ifndef AVFS_ZRR_H
#define AVFS_ZRR_H

#include <stdint.h>

#include "bitmap.h"

#define AVFS_ZONE_MIN_BYTES (16ull << 30)	/* papers/001 §3.2.2: zones no smaller than 16 GB */
#define AVFS_ZONES_DEFAULT_MAX 32		/* papers/001 §3.2.2: at most 32 zones */
#define AVFS_ZONES_MAX 4096			/* bound of the mkfs zone-count option (test images) */

enum avfs_alloc_policy {
	AVFS_ALLOC_ZRR = 0,	/* papers/001: one block per zone, zones in order */
	AVFS_ALLOC_CONTIG = 1,	/* first-fit (in runs) baseline for the simulator, never the
				 * default */
	AVFS_ALLOC_ZRR_RUN = 2,	/* ZRR in runs: `run` blocks per zone, zones from both ends
				 * inwards (mkfs.avfs's default; docs/DESIGN.md "Decisions") */
};

#define AVFS_ALLOC_RUN_BYTES (16ull << 20)	/* a run's size by default: mkfs takes
						 * max(1, this / block size) blocks */

/*
 * Zone count (SPEC §4). requested == 0: min(32, data bytes / 16 GiB), at least 1 (and never
 * more than nblocks). requested > 0: that count, which must be <= AVFS_ZONES_MAX and
 * <= nblocks. Returns the count (>= 1), or -EINVAL (also for nblocks or block_size 0).
 */
int avfs_alloc_zone_count(uint64_t nblocks, uint64_t block_size, uint32_t requested);

/*
 * Zone layout: with n = map->nbits blocks and z zones, zone_blocks = n / z and the first
 * zone_extra = n % z zones hold one block more. Zones are contiguous, in block order, cover
 * every block, and none is empty (z <= n); sizes differ by at most one block, so ZRR still
 * spreads a file evenly. The layout is a pure function of (n, z): the superblock need only
 * record the zone count.
 */
struct avfs_alloc {
	enum avfs_alloc_policy policy;
	struct avfs_bitmap *map;	/* data blocks, bit set = in use; borrowed, not owned */
	uint32_t nzones;
	uint64_t zone_blocks;		/* nbits / nzones: size of the zones from zone_extra on */
	uint64_t zone_extra;		/* zones [0, zone_extra) hold zone_blocks + 1 blocks */
	uint32_t last_zone;		/* zone of the most recent allocation; the file system
					 * persists it in its superblock */
	uint32_t run;			/* ZRR_RUN: blocks of a file in a zone before the next;
					 * CONTIG: a file's new run starts at a multiple of it */
};

/*
 * Set up an allocator over map. run: ZRR_RUN's blocks per zone visit, CONTIG's run alignment
 * (0 counts as 1; ZRR ignores it). 0, or -EINVAL for a null or empty map, an unknown policy,
 * nzones == 0, > AVFS_ZONES_MAX or > map->nbits, or last_zone >= nzones.
 */
int avfs_alloc_init(struct avfs_alloc *a, enum avfs_alloc_policy p, struct avfs_bitmap *map,
		    uint32_t nzones, uint32_t last_zone, uint32_t run);

/* ZRR_RUN's zone order: the zone after z. From both ends inwards — 0, n-1, 1, n-2, ... —
 * so that two runs in a row average the rates of an outer and an inner zone. */
uint32_t avfs_alloc_next_zone(const struct avfs_alloc *a, uint32_t z);

/*
 * The last_zone to record at format time so that the first allocation (a new file, which
 * goes to the zone after last_zone) lands in a zone drawn from seed with splitmix64.
 * Deterministic per seed; 0 if nzones is 0.
 */
uint32_t avfs_alloc_initial_last_zone(uint32_t nzones, uint64_t seed);

/* Zone holding block, or UINT32_MAX if block >= map->nbits. */
uint32_t avfs_alloc_zone_of(const struct avfs_alloc *a, uint64_t block);
/* First block of zone; zone >= nzones gives map->nbits. */
uint64_t avfs_alloc_zone_first(const struct avfs_alloc *a, uint32_t zone);
/* One past the last block of zone; zone >= nzones gives map->nbits. */
uint64_t avfs_alloc_zone_end(const struct avfs_alloc *a, uint32_t zone);

/*
 * Allocate one data block. prev is the data block of the file block that logically precedes
 * the new one, or UINT64_MAX when there is none (a new file, or a hole at its start).
 * ZRR: start in the zone after zone_of(prev), or after last_zone without prev; take the
 * first free block of that zone, moving on cyclically past full zones.
 * ZRR_RUN: prev + 1 while it is free, in prev's zone and inside prev's run (runs are aligned
 * to `run` blocks from the zone's start); else as ZRR over avfs_alloc_next_zone's order, taking
 * in a zone the first free block that starts a run, or failing that its first free block.
 * CONTIG: prev+1 if free; else (or without prev) the first free block that starts a run
 * (runs aligned to `run` blocks from block 0) from prev+1 (from 0 without prev), wrapping to
 * 0; failing that, the first free block from there, wrapping. With run 1: plain first-fit.
 * Both set the bit and make last_zone the zone used. Returns the block (>= 0); -ENOSPC when
 * no block is free; -EINVAL if prev is neither UINT64_MAX nor < map->nbits. On error
 * nothing changes.
 */
int64_t avfs_alloc_block(struct avfs_alloc *a, uint64_t prev);

/* Free block: 0; -EINVAL if out of range; -ENOENT if it was already free (a caller bug). */
int avfs_alloc_free(struct avfs_alloc *a, uint64_t block);

/* The policies' names, as the tools and scenario files write them: "zrr", "contig",
 * "zrr-run"; "?" for an unknown value. */
const char *avfs_alloc_policy_name(uint32_t policy);
/* The policy of a name: its value (>= 0), or -EINVAL for an unknown name. */
int avfs_alloc_policy_parse(const char *name);

#endif
