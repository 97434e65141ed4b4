/*
 * zrr.c — Zone-Round-Robin (per block, or in runs) and contiguous first-fit (in runs) block
 * allocation
 * over a borrowed bitmap. It decides which block; it does not persist the bitmap or last_zone,
 * and it keeps no cached state about the bitmap, which the file system may change directly.
 */
#include "zrr.h"

#include <errno.h>
#include <string.h>

/* indexed by enum avfs_alloc_policy */
static const char *const policy_names[] = { "zrr", "contig", "zrr-run" };

const char *avfs_alloc_policy_name(uint32_t policy)
{
	return policy < 3 ? policy_names[policy] : "?";
}

int avfs_alloc_policy_parse(const char *name)
{
	for (int i = 0; i < 3; i++)
		if (name && !strcmp(name, policy_names[i]))
			return i;
	return -EINVAL;
}

int avfs_alloc_zone_count(uint64_t nblocks, uint64_t block_size, uint32_t requested)
{
	unsigned __int128 bytes;
	uint64_t z;

	if (nblocks == 0 || block_size == 0)
		return -EINVAL;
	if (requested > 0) {
		if (requested > AVFS_ZONES_MAX || requested > nblocks)
			return -EINVAL;
		return (int)requested;
	}
	/* 128-bit product: nblocks * block_size may exceed 2^64 for absurd geometries. */
	bytes = (unsigned __int128)nblocks * block_size;
	bytes /= AVFS_ZONE_MIN_BYTES;
	z = bytes > AVFS_ZONES_DEFAULT_MAX ? AVFS_ZONES_DEFAULT_MAX : (uint64_t)bytes;
	if (z < 1)
		z = 1;
	/* Only reachable with blocks over 16 GiB; keeps every zone non-empty regardless. */
	if (z > nblocks)
		z = nblocks;
	return (int)z;
}

int avfs_alloc_init(struct avfs_alloc *a, enum avfs_alloc_policy p, struct avfs_bitmap *map,
		    uint32_t nzones, uint32_t last_zone, uint32_t run)
{
	if (!a || !map || !map->words || map->nbits == 0)
		return -EINVAL;
	if (p != AVFS_ALLOC_ZRR && p != AVFS_ALLOC_CONTIG && p != AVFS_ALLOC_ZRR_RUN)
		return -EINVAL;
	if (nzones == 0 || nzones > AVFS_ZONES_MAX || nzones > map->nbits)
		return -EINVAL;
	if (last_zone >= nzones)
		return -EINVAL;
	a->policy = p;
	a->map = map;
	a->nzones = nzones;
	a->zone_blocks = map->nbits / nzones;
	a->zone_extra = map->nbits % nzones;
	a->last_zone = last_zone;
	a->run = run ? run : 1;
	return 0;
}

/* splitmix64 (Steele, Lea, Flood 2014): one step from state seed, well mixed for any seed. */
static uint64_t splitmix64(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint32_t avfs_alloc_initial_last_zone(uint32_t nzones, uint64_t seed)
{
	uint32_t first;

	if (nzones == 0)
		return 0;
	/* Modulo bias is below 2^-51 for nzones <= AVFS_ZONES_MAX: irrelevant here. */
	first = (uint32_t)(splitmix64(seed) % nzones);
	/* papers/001 §3.2.2: a new file starts in the zone after last_zone. */
	return (first + nzones - 1) % nzones;
}

uint32_t avfs_alloc_zone_of(const struct avfs_alloc *a, uint64_t block)
{
	uint64_t big = a->zone_extra * (a->zone_blocks + 1);	/* blocks in the larger zones */

	if (block >= a->map->nbits)
		return UINT32_MAX;
	if (block < big)
		return (uint32_t)(block / (a->zone_blocks + 1));
	return (uint32_t)(a->zone_extra + (block - big) / a->zone_blocks);
}

uint64_t avfs_alloc_zone_first(const struct avfs_alloc *a, uint32_t zone)
{
	if (zone >= a->nzones)
		return a->map->nbits;
	return (uint64_t)zone * a->zone_blocks + (zone < a->zone_extra ? zone : a->zone_extra);
}

uint64_t avfs_alloc_zone_end(const struct avfs_alloc *a, uint32_t zone)
{
	if (zone >= a->nzones)
		return a->map->nbits;
	return avfs_alloc_zone_first(a, zone + 1);
}

/*
 * papers/001 §3.2.2. No per-zone "first free" hint: the bitmap is not ours (journal replay
 * and fsck set bits directly) and a zone scan is zone_blocks/64 words — 64 words for a
 * 16 GiB zone of 4 MiB blocks — so a hint would buy little and could go stale.
 */
static uint64_t zrr_pick(const struct avfs_alloc *a, uint64_t prev)
{
	uint32_t z = prev != UINT64_MAX ? avfs_alloc_zone_of(a, prev) : a->last_zone;

	for (uint32_t k = 0; k < a->nzones; k++) {
		uint64_t b;

		z = z + 1 == a->nzones ? 0 : z + 1;
		b = avfs_bitmap_find_zero(a->map, avfs_alloc_zone_first(a, z),
					  avfs_alloc_zone_end(a, z));
		if (b != UINT64_MAX)
			return b;
	}
	return UINT64_MAX;
}

uint32_t avfs_alloc_next_zone(const struct avfs_alloc *a, uint32_t z)
{
	uint32_t n = a->nzones, i;

	/* z's place in 0, n-1, 1, n-2, ...: the even places count up from 0, the odd ones
	 * down from n-1 */
	i = 2 * z <= n - 1 ? 2 * z : 2 * (n - 1 - z) + 1;
	i = i + 1 == n ? 0 : i + 1;
	return i % 2 == 0 ? i / 2 : n - 1 - (i - 1) / 2;
}

/* The first free block in [from, end) that starts a run — base plus a multiple of run
 * blocks — or UINT64_MAX when there is none. */
static uint64_t run_start_in(const struct avfs_alloc *a, uint64_t base, uint64_t from,
			     uint64_t end)
{
	uint64_t b = avfs_bitmap_find_zero(a->map, from, end);

	while (b != UINT64_MAX && (b - base) % a->run) {
		uint64_t next = base + ((b - base) / a->run + 1) * a->run;

		b = next < end ? avfs_bitmap_find_zero(a->map, next, end) : UINT64_MAX;
	}
	return b;
}

/* ZRR_RUN in zone z: the first free block that starts a run (a multiple of run blocks from
 * the zone's start), else the first free block; UINT64_MAX when the zone is full. */
static uint64_t run_start(const struct avfs_alloc *a, uint32_t z)
{
	uint64_t first = avfs_alloc_zone_first(a, z), end = avfs_alloc_zone_end(a, z);
	uint64_t b = run_start_in(a, first, first, end);

	return b != UINT64_MAX ? b : avfs_bitmap_find_zero(a->map, first, end);
}

/*
 * ZRR in runs: a stream reading a file seeks to another zone once a run, not once a block,
 * and zone balance still holds over run x zones blocks; going from both ends inwards, two
 * runs in a row cost a reader the same as any other two.
 */
static uint64_t zrr_run_pick(const struct avfs_alloc *a, uint64_t prev)
{
	uint32_t z = prev != UINT64_MAX ? avfs_alloc_zone_of(a, prev) : a->last_zone;

	if (prev != UINT64_MAX && prev + 1 < avfs_alloc_zone_end(a, z) &&
	    (prev + 1 - avfs_alloc_zone_first(a, z)) % a->run &&
	    !avfs_bitmap_test(a->map, prev + 1))
		return prev + 1;
	for (uint32_t k = 0; k < a->nzones; k++) {
		uint64_t b;

		z = avfs_alloc_next_zone(a, z);
		b = run_start(a, z);
		if (b != UINT64_MAX)
			return b;
	}
	return UINT64_MAX;
}

/*
 * First-fit in runs: a file goes on where it ends while the block there is free; where
 * another file took it (two recordings written at once), it starts again at a free run
 * boundary after it, so that each writer gets runs of its own instead of every other block
 * (ext4's preallocation gives two such files 8-16 MiB extents; docs/DESIGN.md, "Contiguous
 * baseline in runs"). With run = 1 this is plain first-fit.
 */
static uint64_t contig_pick(const struct avfs_alloc *a, uint64_t prev)
{
	uint64_t n = a->map->nbits, from = prev == UINT64_MAX ? 0 : prev + 1, b;

	if (prev != UINT64_MAX && from < n && !avfs_bitmap_test(a->map, from))
		return from;
	b = run_start_in(a, 0, from, n);
	if (b == UINT64_MAX)
		b = run_start_in(a, 0, 0, from);
	if (b == UINT64_MAX)
		b = avfs_bitmap_find_zero(a->map, from, n);
	if (b == UINT64_MAX)
		b = avfs_bitmap_find_zero(a->map, 0, from);
	return b;
}

int64_t avfs_alloc_block(struct avfs_alloc *a, uint64_t prev)
{
	uint64_t b;
	int err;

	if (prev != UINT64_MAX && prev >= a->map->nbits)
		return -EINVAL;
	/* nset is exact, so a full map fails in O(1) instead of scanning every zone. */
	if (a->map->nset >= a->map->nbits)
		return -ENOSPC;
	b = a->policy == AVFS_ALLOC_ZRR ? zrr_pick(a, prev) :
	    a->policy == AVFS_ALLOC_ZRR_RUN ? zrr_run_pick(a, prev) : contig_pick(a, prev);
	if (b == UINT64_MAX)
		return -ENOSPC;
	err = avfs_bitmap_set(a->map, b);
	if (err)
		return err;	/* cannot happen: b was found clear */
	a->last_zone = avfs_alloc_zone_of(a, b);
	return (int64_t)b;
}

int avfs_alloc_free(struct avfs_alloc *a, uint64_t block)
{
	return avfs_bitmap_clear(a->map, block);
}
