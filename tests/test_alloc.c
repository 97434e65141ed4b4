/*
 * test_alloc.c — the bitmap (search across words, store/load layout) and the data block
 * allocator: the zone count rule, the zone layout, every ZRR rule of papers/001 §3.2.2, ZRR
 * in runs, and the contiguous first-fit baseline. Pure computation; no device is involved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bitmap.h"
#include "zrr.h"

#define NO_PREV UINT64_MAX

/* A small data region: nzones zones of zblocks blocks each. */
struct region {
	struct avfs_bitmap map;
	struct avfs_alloc a;
};

static void region_init(struct region *r, enum avfs_alloc_policy p, uint32_t nzones,
			uint64_t zblocks, uint32_t last_zone)
{
	assert_int_equal(avfs_bitmap_init(&r->map, nzones * zblocks), 0);
	assert_int_equal(avfs_alloc_init(&r->a, p, &r->map, nzones, last_zone, 1), 0);
	assert_int_equal(r->a.zone_blocks, zblocks);
	assert_int_equal(r->a.zone_extra, 0);
}

/* The same for ZRR in runs of `run` blocks. */
static void region_init_run(struct region *r, uint32_t nzones, uint64_t zblocks,
			    uint32_t last_zone, uint32_t run)
{
	assert_int_equal(avfs_bitmap_init(&r->map, nzones * zblocks), 0);
	assert_int_equal(avfs_alloc_init(&r->a, AVFS_ALLOC_ZRR_RUN, &r->map, nzones, last_zone,
					 run), 0);
}

static void region_fini(struct region *r)
{
	avfs_bitmap_free(&r->map);
}

/* Deterministic pseudo-random bits for the tests, independent of the code under test. */
static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* set/clear/test report every misuse with its errno and keep nset exact across word edges. */
static void test_bitmap_set_clear_test(void **state)
{
	static const uint64_t edges[] = { 0, 1, 63, 64, 65, 127, 128, 129 };
	struct avfs_bitmap b;

	(void)state;
	assert_int_equal(avfs_bitmap_init(&b, 0), -EINVAL);
	assert_int_equal(avfs_bitmap_init(&b, 130), 0);
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		assert_false(avfs_bitmap_test(&b, edges[i]));
		assert_int_equal(avfs_bitmap_set(&b, edges[i]), 0);
		assert_true(avfs_bitmap_test(&b, edges[i]));
		assert_int_equal(avfs_bitmap_set(&b, edges[i]), -EEXIST);
		assert_int_equal(b.nset, i + 1);
	}
	/* Neighbours of set bits stay clear: no off-by-one in word/bit arithmetic. */
	assert_false(avfs_bitmap_test(&b, 2));
	assert_false(avfs_bitmap_test(&b, 62));
	assert_false(avfs_bitmap_test(&b, 126));
	assert_int_equal(avfs_bitmap_set(&b, 130), -EINVAL);
	assert_int_equal(avfs_bitmap_clear(&b, 130), -EINVAL);
	assert_false(avfs_bitmap_test(&b, 130));
	assert_false(avfs_bitmap_test(&b, UINT64_MAX));
	assert_int_equal(avfs_bitmap_clear(&b, 64), 0);
	assert_int_equal(avfs_bitmap_clear(&b, 64), -ENOENT);
	assert_false(avfs_bitmap_test(&b, 64));
	assert_true(avfs_bitmap_test(&b, 63));
	assert_true(avfs_bitmap_test(&b, 65));
	assert_int_equal(b.nset, 7);
	avfs_bitmap_free(&b);
	avfs_bitmap_free(&b);	/* idempotent */
}

/* find_zero/find_set cross word boundaries, honour [from, to) exactly and clamp to nbits. */
static void test_bitmap_find_across_words(void **state)
{
	struct avfs_bitmap b;

	(void)state;
	assert_int_equal(avfs_bitmap_init(&b, 130), 0);
	assert_int_equal(avfs_bitmap_find_set(&b, 0, 130), UINT64_MAX);
	assert_int_equal(avfs_bitmap_find_zero(&b, 0, 130), 0);
	assert_int_equal(avfs_bitmap_find_zero(&b, 129, 130), 129);
	assert_int_equal(avfs_bitmap_find_zero(&b, 130, 130), UINT64_MAX);
	assert_int_equal(avfs_bitmap_find_zero(&b, 5, 5), UINT64_MAX);
	assert_int_equal(avfs_bitmap_find_zero(&b, 7, 3), UINT64_MAX);

	/* Fill bits 0..128: the only clear bit is the last one, in the partial last word. */
	for (uint64_t i = 0; i < 129; i++)
		assert_int_equal(avfs_bitmap_set(&b, i), 0);
	assert_int_equal(avfs_bitmap_find_zero(&b, 0, 130), 129);
	assert_int_equal(avfs_bitmap_find_zero(&b, 0, 129), UINT64_MAX);
	/* to past nbits is clamped: the zero padding beyond bit 129 is never reported. */
	assert_int_equal(avfs_bitmap_find_zero(&b, 0, 1000), 129);
	assert_int_equal(avfs_bitmap_set(&b, 129), 0);
	assert_int_equal(avfs_bitmap_find_zero(&b, 0, UINT64_MAX), UINT64_MAX);

	/* Clear 63 and 64 (the two sides of the first boundary). */
	assert_int_equal(avfs_bitmap_clear(&b, 63), 0);
	assert_int_equal(avfs_bitmap_clear(&b, 64), 0);
	assert_int_equal(avfs_bitmap_find_zero(&b, 0, 130), 63);
	assert_int_equal(avfs_bitmap_find_zero(&b, 64, 130), 64);
	assert_int_equal(avfs_bitmap_find_zero(&b, 65, 130), UINT64_MAX);
	assert_int_equal(avfs_bitmap_find_zero(&b, 0, 63), UINT64_MAX);
	assert_int_equal(avfs_bitmap_find_set(&b, 63, 130), 65);
	assert_int_equal(avfs_bitmap_find_set(&b, 63, 65), UINT64_MAX);
	assert_int_equal(avfs_bitmap_find_set(&b, 129, 130), 129);
	avfs_bitmap_free(&b);
}

/* Both searches agree with a bit-by-bit scan for every [from, to) on a random pattern. */
static void test_bitmap_find_matches_naive(void **state)
{
	const uint64_t n = 200;
	struct avfs_bitmap b;
	uint64_t seed = 42;

	(void)state;
	assert_int_equal(avfs_bitmap_init(&b, n), 0);
	for (uint64_t i = 0; i < n; i++)
		if (lcg(&seed) % 4 != 0)	/* mostly set: long runs, some gaps */
			assert_int_equal(avfs_bitmap_set(&b, i), 0);
	for (uint64_t from = 0; from <= n + 2; from++) {
		for (uint64_t to = from; to <= n + 8; to++) {
			uint64_t want_zero = UINT64_MAX, want_set = UINT64_MAX;

			for (uint64_t i = from; i < to && i < n; i++) {
				bool v = avfs_bitmap_test(&b, i);

				if (!v && want_zero == UINT64_MAX)
					want_zero = i;
				if (v && want_set == UINT64_MAX)
					want_set = i;
			}
			assert_int_equal(avfs_bitmap_find_zero(&b, from, to), want_zero);
			assert_int_equal(avfs_bitmap_find_set(&b, from, to), want_set);
		}
	}
	avfs_bitmap_free(&b);
}

/* store writes the documented LSB-first layout with zero tails; load inverts it, fixes nset. */
static void test_bitmap_store_load_round_trip(void **state)
{
	struct avfs_bitmap a, b;
	uint8_t buf[32], buf2[32];
	uint64_t seed = 7, ones = 0;

	(void)state;
	assert_int_equal(avfs_bitmap_init(&a, 150), 0);
	assert_int_equal(avfs_bitmap_init(&b, 150), 0);

	/* Layout: bits 3, 4, 13 set; range starting at 3 puts bit 3 at byte 0 bit 0. */
	assert_int_equal(avfs_bitmap_set(&a, 3), 0);
	assert_int_equal(avfs_bitmap_set(&a, 4), 0);
	assert_int_equal(avfs_bitmap_set(&a, 13), 0);
	memset(buf, 0xa5, sizeof(buf));
	avfs_bitmap_store(&a, 3, 11, buf);	/* bits 3..13: two bytes, 5 unused high bits */
	assert_int_equal(buf[0], 0x03);
	assert_int_equal(buf[1], 0x04);		/* bit 13 = range bit 10 = byte 1 bit 2 */
	assert_int_equal(buf[2], 0xa5);		/* nothing past ceil(n/8) bytes is written */
	assert_int_equal(avfs_bitmap_clear(&a, 3), 0);
	assert_int_equal(avfs_bitmap_clear(&a, 4), 0);
	assert_int_equal(avfs_bitmap_clear(&a, 13), 0);

	/* Round trip of a random pattern over an odd, word-crossing range [61, 61+77). */
	for (uint64_t i = 0; i < 150; i++)
		if (lcg(&seed) & 1)
			assert_int_equal(avfs_bitmap_set(&a, i), 0);
	for (uint64_t i = 61; i < 61 + 77; i++)
		ones += avfs_bitmap_test(&a, i);
	avfs_bitmap_store(&a, 61, 77, buf);
	assert_int_equal(buf[9] >> 5, 0);	/* 77 = 9*8 + 5: the 3 high bits are zero */
	/* Pre-set bits inside and outside the range of b: inside are overwritten, outside kept. */
	assert_int_equal(avfs_bitmap_set(&b, 60), 0);
	assert_int_equal(avfs_bitmap_set(&b, 62), 0);
	assert_int_equal(avfs_bitmap_set(&b, 138), 0);
	assert_int_equal(avfs_bitmap_load(&b, 61, 77, buf), 0);
	for (uint64_t i = 61; i < 61 + 77; i++)
		assert_int_equal(avfs_bitmap_test(&b, i), avfs_bitmap_test(&a, i));
	assert_true(avfs_bitmap_test(&b, 60));
	assert_true(avfs_bitmap_test(&b, 138));
	assert_int_equal(b.nset, ones + 2);
	avfs_bitmap_store(&b, 61, 77, buf2);
	assert_memory_equal(buf, buf2, 10);

	/* A range running past nbits stores zeros there; loading a set bit there is corruption. */
	avfs_bitmap_store(&a, 140, 20, buf);	/* 10 real bits + 10 past the end */
	assert_int_equal(buf[1] & 0xfc, 0);
	assert_int_equal(buf[2], 0);
	assert_int_equal(avfs_bitmap_load(&b, 140, 20, buf), 0);
	buf[2] |= 0x01;				/* range bit 16 = bit 156 >= nbits */
	uint64_t before = b.nset;
	avfs_bitmap_store(&b, 0, 150, buf2);
	assert_int_equal(avfs_bitmap_load(&b, 140, 20, buf), -EUCLEAN);
	assert_int_equal(b.nset, before);
	avfs_bitmap_store(&b, 0, 150, buf);
	assert_memory_equal(buf, buf2, 19);	/* nothing changed on error */
	assert_int_equal(avfs_bitmap_load(&b, 151, 1, buf), -EINVAL);
	assert_int_equal(avfs_bitmap_load(&b, 1, UINT64_MAX, buf), -EINVAL);
	avfs_bitmap_free(&a);
	avfs_bitmap_free(&b);
}

/* SPEC §4: min(32, bytes / 16 GiB), at least 1; an explicit count is bounded by nblocks, 4096. */
static void test_zrr_zone_count_rule(void **state)
{
	const uint64_t bs = 4ull << 20;

	(void)state;
	assert_int_equal(avfs_alloc_zone_count((8ull << 30) / bs, bs, 0), 1);
	assert_int_equal(avfs_alloc_zone_count(250000000000ull / bs, bs, 0), 14);
	assert_int_equal(avfs_alloc_zone_count(2000000000000ull / bs, bs, 0), 32);
	assert_int_equal(avfs_alloc_zone_count(1, bs, 0), 1);		/* tiny: still one */
	assert_int_equal(avfs_alloc_zone_count(UINT64_MAX, 4ull << 30, 0), 32);	/* no overflow */
	/* Exactly 16 GiB makes one zone, one block less than 32 GiB still one. */
	assert_int_equal(avfs_alloc_zone_count((16ull << 30) / bs, bs, 0), 1);
	assert_int_equal(avfs_alloc_zone_count((32ull << 30) / bs - 1, bs, 0), 1);
	assert_int_equal(avfs_alloc_zone_count((32ull << 30) / bs, bs, 0), 2);
	assert_int_equal(avfs_alloc_zone_count(512, bs, 64), 64);
	assert_int_equal(avfs_alloc_zone_count(64, bs, 64), 64);
	assert_int_equal(avfs_alloc_zone_count(63, bs, 64), -EINVAL);
	assert_int_equal(avfs_alloc_zone_count(1ull << 30, bs, AVFS_ZONES_MAX), AVFS_ZONES_MAX);
	assert_int_equal(avfs_alloc_zone_count(1ull << 30, bs, AVFS_ZONES_MAX + 1), -EINVAL);
	assert_int_equal(avfs_alloc_zone_count(0, bs, 0), -EINVAL);
	assert_int_equal(avfs_alloc_zone_count(10, 0, 0), -EINVAL);
}

/* Zones are contiguous, in order, non-empty, differ by at most one block and cover everything. */
static void test_zrr_zone_layout_covers_all(void **state)
{
	static const uint64_t sizes[][2] = {	/* { nblocks, nzones } */
		{ 10, 4 }, { 9, 6 }, { 7, 7 }, { 512, 64 }, { 1000, 3 }, { 1, 1 }, { 4097, 4096 },
	};

	(void)state;
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		struct avfs_bitmap m;
		struct avfs_alloc a;
		uint64_t n = sizes[t][0], lo = UINT64_MAX, hi = 0;
		uint32_t nz = (uint32_t)sizes[t][1];

		assert_int_equal(avfs_bitmap_init(&m, n), 0);
		assert_int_equal(avfs_alloc_init(&a, AVFS_ALLOC_ZRR, &m, nz, 0, 1), 0);
		assert_int_equal(avfs_alloc_zone_first(&a, 0), 0);
		assert_int_equal(avfs_alloc_zone_end(&a, nz - 1), n);
		for (uint32_t z = 0; z < nz; z++) {
			uint64_t f = avfs_alloc_zone_first(&a, z), e = avfs_alloc_zone_end(&a, z);

			assert_true(e > f);
			if (z + 1 < nz)
				assert_int_equal(e, avfs_alloc_zone_first(&a, z + 1));
			lo = e - f < lo ? e - f : lo;
			hi = e - f > hi ? e - f : hi;
			for (uint64_t blk = f; blk < e; blk++)
				assert_int_equal(avfs_alloc_zone_of(&a, blk), z);
		}
		assert_true(hi - lo <= 1);
		assert_int_equal(avfs_alloc_zone_of(&a, n), UINT32_MAX);
		assert_int_equal(avfs_alloc_zone_first(&a, nz), n);
		assert_int_equal(avfs_alloc_zone_end(&a, nz), n);
		avfs_bitmap_free(&m);
	}
}

/* init refuses every inconsistent geometry a corrupt superblock could hand it. */
static void test_zrr_init_rejects_nonsense(void **state)
{
	struct avfs_bitmap m, empty = { 0 };
	struct avfs_alloc a;

	(void)state;
	assert_int_equal(avfs_bitmap_init(&m, 16), 0);
	assert_int_equal(avfs_alloc_init(&a, AVFS_ALLOC_ZRR, NULL, 1, 0, 1), -EINVAL);
	assert_int_equal(avfs_alloc_init(&a, AVFS_ALLOC_ZRR, &empty, 1, 0, 1), -EINVAL);
	assert_int_equal(avfs_alloc_init(&a, (enum avfs_alloc_policy)7, &m, 1, 0, 1), -EINVAL);
	assert_int_equal(avfs_alloc_init(&a, AVFS_ALLOC_ZRR, &m, 0, 0, 1), -EINVAL);
	assert_int_equal(avfs_alloc_init(&a, AVFS_ALLOC_ZRR, &m, 17, 0, 1), -EINVAL);
	assert_int_equal(avfs_alloc_init(&a, AVFS_ALLOC_ZRR, &m, 4, 4, 1), -EINVAL);
	assert_int_equal(avfs_alloc_init(&a, AVFS_ALLOC_CONTIG, &m, 16, 15, 1), 0);
	/* A prev outside the region is a caller bug, not "no prev". */
	assert_int_equal(avfs_alloc_block(&a, 16), -EINVAL);
	assert_int_equal(m.nset, 0);
	assert_int_equal(avfs_alloc_free(&a, 16), -EINVAL);
	avfs_bitmap_free(&m);
}

/* Consecutive blocks of one file come from consecutive zones, wrapping after the last zone. */
static void test_zrr_file_walks_consecutive_zones(void **state)
{
	struct region r;
	uint64_t prev = NO_PREV;

	(void)state;
	region_init(&r, AVFS_ALLOC_ZRR, 64, 8, 60);
	for (uint32_t i = 0; i < 64 * 3; i++) {
		int64_t b = avfs_alloc_block(&r.a, prev);
		uint32_t want = (61 + i) % 64;

		assert_true(b >= 0);
		assert_int_equal(avfs_alloc_zone_of(&r.a, (uint64_t)b), want);
		/* An empty region: round k through all 64 zones takes their k-th block. */
		assert_int_equal((uint64_t)b, want * 8 + i / 64);
		assert_int_equal(r.a.last_zone, want);
		prev = (uint64_t)b;
	}
	region_fini(&r);
}

/* Within the chosen zone the lowest free block is taken, including one freed below others. */
static void test_zrr_first_free_in_zone(void **state)
{
	struct region r;

	(void)state;
	region_init(&r, AVFS_ALLOC_ZRR, 64, 8, 0);
	/* Zone 10 = blocks 80..87; occupy 80, 81, 83. */
	assert_int_equal(avfs_bitmap_set(&r.map, 80), 0);
	assert_int_equal(avfs_bitmap_set(&r.map, 81), 0);
	assert_int_equal(avfs_bitmap_set(&r.map, 83), 0);
	/* prev in zone 9 -> zone 10 -> its first free block, 82. */
	assert_int_equal(avfs_alloc_block(&r.a, 9 * 8 + 5), 82);
	assert_int_equal(avfs_alloc_block(&r.a, 9 * 8 + 5), 84);
	assert_int_equal(avfs_alloc_free(&r.a, 81), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 9 * 8 + 5), 81);
	region_fini(&r);
}

/* A new file starts in the zone after the last allocation of any file, not after its own. */
static void test_zrr_new_file_after_last_zone(void **state)
{
	struct region r;
	int64_t a0, a1, b0, c0;

	(void)state;
	region_init(&r, AVFS_ALLOC_ZRR, 64, 8, 63);
	a0 = avfs_alloc_block(&r.a, NO_PREV);			/* zone 0 (wraps from 63) */
	assert_int_equal(a0, 0);
	a1 = avfs_alloc_block(&r.a, (uint64_t)a0);		/* zone 1 */
	assert_int_equal(a1, 8);
	b0 = avfs_alloc_block(&r.a, NO_PREV);			/* after zone 1: zone 2 */
	assert_int_equal(b0, 16);
	/* A file extending an old block moves last_zone backwards; the next new file follows. */
	assert_int_equal(avfs_alloc_block(&r.a, 40 * 8), 41 * 8);
	c0 = avfs_alloc_block(&r.a, NO_PREV);
	assert_int_equal(avfs_alloc_zone_of(&r.a, (uint64_t)c0), 42);
	assert_int_equal(avfs_alloc_block(&r.a, 8), 17);	/* zone 2, 16 taken -> 17 */
	assert_int_equal(r.a.last_zone, 2);
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 24);	/* zone 3 */
	region_fini(&r);
}

/* A full zone is skipped, and so is a run of full zones, wrapping past the last zone. */
static void test_zrr_full_zone_skipped(void **state)
{
	struct region r;

	(void)state;
	region_init(&r, AVFS_ALLOC_ZRR, 64, 8, 0);
	for (uint64_t i = 5 * 8; i < 6 * 8; i++)
		assert_int_equal(avfs_bitmap_set(&r.map, i), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 4 * 8), 6 * 8);	/* with prev */
	r.a.last_zone = 4;
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 6 * 8 + 1);	/* without prev */
	/* Fill zones 63, 0 and 1: from zone 62 the next free is zone 2. */
	for (uint64_t i = 63 * 8; i < 64 * 8; i++)
		assert_int_equal(avfs_bitmap_set(&r.map, i), 0);
	for (uint64_t i = 0; i < 2 * 8; i++)
		assert_int_equal(avfs_bitmap_set(&r.map, i), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 62 * 8), 2 * 8);
	assert_int_equal(r.a.last_zone, 2);
	/* Only one block left anywhere: every start zone finds it. */
	for (uint64_t i = 0; i < 512; i++)
		if (i != 300)
			avfs_bitmap_set(&r.map, i);
	assert_int_equal(avfs_alloc_block(&r.a, 301), 300);
	region_fini(&r);
}

/* The first zone after format is a function of the seed, and seeds spread over the zones. */
static void test_zrr_initial_zone_seeded(void **state)
{
	bool hit[64] = { 0 };
	unsigned distinct = 0;

	(void)state;
	assert_int_equal(avfs_alloc_initial_last_zone(1, 123), 0);
	assert_int_equal(avfs_alloc_initial_last_zone(0, 123), 0);
	for (uint64_t seed = 0; seed < 64; seed++) {
		uint32_t lz = avfs_alloc_initial_last_zone(64, seed);
		struct region r;
		int64_t b;

		assert_true(lz < 64);
		assert_int_equal(lz, avfs_alloc_initial_last_zone(64, seed));
		region_init(&r, AVFS_ALLOC_ZRR, 64, 8, lz);
		b = avfs_alloc_block(&r.a, NO_PREV);
		/* The recorded last_zone makes the very first allocation land in the drawn zone. */
		assert_int_equal(avfs_alloc_zone_of(&r.a, (uint64_t)b), (lz + 1) % 64);
		if (!hit[(lz + 1) % 64]) {
			hit[(lz + 1) % 64] = true;
			distinct++;
		}
		region_fini(&r);
	}
	/* 64 seeds over 64 zones: a fair draw hits ~40; 20 is far below any plausible outcome. */
	assert_true(distinct >= 20);
}

/* A full region gives -ENOSPC from any start and changes neither the bitmap nor last_zone. */
static void test_zrr_enospc_changes_nothing(void **state)
{
	(void)state;
	for (int p = AVFS_ALLOC_ZRR; p <= AVFS_ALLOC_CONTIG; p++) {
		struct region r;
		uint64_t prev = NO_PREV;
		uint8_t before[64], after[64];

		region_init(&r, (enum avfs_alloc_policy)p, 64, 8, 17);
		for (int i = 0; i < 512; i++) {
			int64_t b = avfs_alloc_block(&r.a, prev);

			assert_true(b >= 0);
			prev = (uint64_t)b;
		}
		assert_int_equal(r.map.nset, 512);
		uint32_t lz = r.a.last_zone;
		avfs_bitmap_store(&r.map, 0, 512, before);
		assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), -ENOSPC);
		assert_int_equal(avfs_alloc_block(&r.a, 77), -ENOSPC);
		avfs_bitmap_store(&r.map, 0, 512, after);
		assert_memory_equal(before, after, sizeof(before));
		assert_int_equal(r.a.last_zone, lz);
		assert_int_equal(r.map.nset, 512);
		/* One free block again: it is found. */
		assert_int_equal(avfs_alloc_free(&r.a, 333), 0);
		assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 333);
		region_fini(&r);
	}
}

/*
 * Three files appending in turn for 10 rounds on 64 zones x 8 blocks: the exact block/zone
 * sequence, computed here from the rules (not from the allocator) and printed.
 */
static void test_zrr_interleaved_three_files(void **state)
{
	enum { NZ = 64, ZB = 8, NF = 3, ROUNDS = 10, L0 = 58 };	/* L0 near the end: wraps */
	struct region r;
	uint64_t got[NF][ROUNDS];
	/* The model: a fill count per zone (no frees, so the first free block is zone*ZB+fill). */
	unsigned fill[NZ] = { 0 };
	uint32_t model_last = L0, model_zone[NF][ROUNDS];
	uint64_t model_block[NF][ROUNDS];

	(void)state;
	for (int rd = 0; rd < ROUNDS; rd++) {
		for (int f = 0; f < NF; f++) {
			uint32_t from = rd == 0 ? model_last : model_zone[f][rd - 1];
			uint32_t z = (from + 1) % NZ;

			model_zone[f][rd] = z;
			model_block[f][rd] = (uint64_t)z * ZB + fill[z]++;
			model_last = z;
		}
	}

	region_init(&r, AVFS_ALLOC_ZRR, NZ, ZB, L0);
	for (int rd = 0; rd < ROUNDS; rd++) {
		for (int f = 0; f < NF; f++) {
			int64_t b = avfs_alloc_block(&r.a, rd == 0 ? NO_PREV : got[f][rd - 1]);

			assert_true(b >= 0);
			got[f][rd] = (uint64_t)b;
		}
	}

	printf("ZRR, %d zones x %d blocks, last_zone after format %d: block(zone) per round\n",
	       NZ, ZB, L0);
	for (int f = 0; f < NF; f++) {
		printf("  file %c:", 'A' + f);
		for (int rd = 0; rd < ROUNDS; rd++)
			printf(" %3llu(%2u)", (unsigned long long)got[f][rd],
			       avfs_alloc_zone_of(&r.a, got[f][rd]));
		printf("\n");
	}
	for (int f = 0; f < NF; f++) {
		for (int rd = 0; rd < ROUNDS; rd++) {
			/* Closed form of the rules: file f starts in L0+1+f, then one zone per round. */
			uint32_t z = (L0 + 1 + f + rd) % NZ;

			assert_int_equal(model_zone[f][rd], z);
			assert_int_equal(avfs_alloc_zone_of(&r.a, got[f][rd]), z);
			assert_int_equal(got[f][rd], model_block[f][rd]);
		}
	}
	/* A zone shared by the three files fills in allocation order: zone 61 gets C, B, A. */
	assert_int_equal(got[2][0], 61 * ZB + 0);
	assert_int_equal(got[1][1], 61 * ZB + 1);
	assert_int_equal(got[0][2], 61 * ZB + 2);
	region_fini(&r);
}

/* Contig: a sequential file gets consecutive blocks; a new file gets the first free block. */
static void test_zrr_contig_sequential_and_new_file(void **state)
{
	struct region r;
	uint64_t prev = NO_PREV;

	(void)state;
	region_init(&r, AVFS_ALLOC_CONTIG, 64, 8, 0);
	for (uint64_t i = 0; i < 20; i++) {
		int64_t b = avfs_alloc_block(&r.a, prev);

		assert_int_equal(b, i);
		prev = (uint64_t)b;
	}
	assert_int_equal(r.a.last_zone, 19 / 8);
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 20);
	/* Holes: a new file takes the lowest hole, a growing file the block after its own. */
	assert_int_equal(avfs_alloc_free(&r.a, 5), 0);
	assert_int_equal(avfs_alloc_free(&r.a, 6), 0);
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 5);
	assert_int_equal(avfs_alloc_block(&r.a, 5), 6);
	assert_int_equal(avfs_alloc_block(&r.a, 6), 21);	/* 7.. taken: first free after */
	assert_int_equal(avfs_alloc_block(&r.a, 2), 22);
	/* Wrapping: nothing free after prev, so the first free block from 0. */
	for (uint64_t i = 23; i < 512; i++)
		assert_int_equal(avfs_bitmap_set(&r.map, i), 0);
	assert_int_equal(avfs_alloc_free(&r.a, 3), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 500), 3);
	assert_int_equal(r.a.last_zone, 0);
	region_fini(&r);
}

/* Contig with three interleaved files, run 1 (plain first-fit, images made before runs):
 * every file fragments, A 0,3,6..., B 1,4,..., C 2,5,... */
static void test_zrr_contig_interleaved_fragments(void **state)
{
	enum { NF = 3, ROUNDS = 10 };
	struct region r;
	uint64_t got[NF][ROUNDS];

	(void)state;
	region_init(&r, AVFS_ALLOC_CONTIG, 64, 8, 0);
	for (int rd = 0; rd < ROUNDS; rd++) {
		for (int f = 0; f < NF; f++) {
			int64_t b = avfs_alloc_block(&r.a, rd == 0 ? NO_PREV : got[f][rd - 1]);

			assert_true(b >= 0);
			got[f][rd] = (uint64_t)b;
		}
	}
	printf("CONTIG, three interleaved files:\n");
	for (int f = 0; f < NF; f++) {
		printf("  file %c:", 'A' + f);
		for (int rd = 0; rd < ROUNDS; rd++)
			printf(" %3llu", (unsigned long long)got[f][rd]);
		printf("\n");
	}
	for (int f = 0; f < NF; f++) {
		for (int rd = 0; rd < ROUNDS; rd++) {
			assert_int_equal(got[f][rd], (uint64_t)(NF * rd + f));
			if (rd > 0)
				assert_true(got[f][rd] != got[f][rd - 1] + 1);
		}
	}
	region_fini(&r);
}

/*
 * Contig in runs of 4: two files written block by block in turn each get runs of their own
 * (A 0-3, B 4-7, A 8-11, ...) and go on where they end while that is free; a new file starts
 * at a free run boundary; a file whose next block is taken skips to the next free boundary
 * after it, past a run whose boundary block is used, and wraps to 0; with no boundary block
 * free anywhere it takes the first free block after it.
 */
static void test_zrr_contig_runs(void **state)
{
	enum { ROUNDS = 12 };
	struct region r;
	uint64_t a = NO_PREV, b = NO_PREV;

	(void)state;
	assert_int_equal(avfs_bitmap_init(&r.map, 64), 0);
	assert_int_equal(avfs_alloc_init(&r.a, AVFS_ALLOC_CONTIG, &r.map, 8, 0, 4), 0);
	for (int rd = 0; rd < ROUNDS; rd++) {
		int64_t x = avfs_alloc_block(&r.a, a), y = avfs_alloc_block(&r.a, b);

		/* round rd: block rd % 4 of the (rd / 4)-th run of each file */
		assert_int_equal(x, (rd / 4) * 8 + rd % 4);
		assert_int_equal(y, (rd / 4) * 8 + 4 + rd % 4);
		a = (uint64_t)x;
		b = (uint64_t)y;
	}
	/* A ends at 19 (its third run, 16-19); B took 20: A goes on at the next boundary, 24. */
	assert_int_equal(avfs_alloc_block(&r.a, a), 24);
	/* A new file: the first free boundary, 28. */
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 28);
	/* A freed block that is not a boundary is taken only by the file that ends before it. */
	assert_int_equal(avfs_alloc_free(&r.a, 9), 0);
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 32);
	assert_int_equal(avfs_alloc_block(&r.a, 8), 9);
	/* Boundary 36 used, 37 free: a file ending at 33 whose 34 is taken skips to 40. */
	assert_int_equal(avfs_bitmap_set(&r.map, 33), 0);
	assert_int_equal(avfs_bitmap_set(&r.map, 34), 0);
	assert_int_equal(avfs_bitmap_set(&r.map, 36), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 33), 40);
	/* Wrapping: nothing free on a boundary after 60, so the free boundary 4 (freed). */
	for (uint64_t i = 41; i < 64; i++)
		assert_int_equal(avfs_bitmap_set(&r.map, i), 0);
	assert_int_equal(avfs_alloc_free(&r.a, 4), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 60), 4);
	/* No free boundary at all: the first free block after prev (31, used: 35), then
	 * wrapping (from 51: 25). */
	assert_int_equal(avfs_bitmap_set(&r.map, 31), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 31), 35);
	assert_int_equal(avfs_alloc_block(&r.a, 50), 25);
	avfs_bitmap_free(&r.map);
}

/* A freed block is reused by the next allocation that reaches it; a double free is -ENOENT. */
static void test_zrr_free_and_reuse(void **state)
{
	struct region r;
	int64_t b;

	(void)state;
	region_init(&r, AVFS_ALLOC_ZRR, 64, 8, 9);
	b = avfs_alloc_block(&r.a, NO_PREV);
	assert_int_equal(b, 80);
	assert_int_equal(r.map.nset, 1);
	assert_int_equal(avfs_alloc_free(&r.a, (uint64_t)b), 0);
	assert_int_equal(r.map.nset, 0);
	assert_int_equal(avfs_alloc_free(&r.a, (uint64_t)b), -ENOENT);
	assert_int_equal(avfs_alloc_free(&r.a, 81), -ENOENT);
	assert_int_equal(r.map.nset, 0);
	/* The file's previous block is in zone 9: zone 10 again, and 80 is its first free. */
	assert_int_equal(avfs_alloc_block(&r.a, 9 * 8), 80);
	assert_int_equal(r.map.nset, 1);
	region_fini(&r);
}

/* ZRR in runs visits zones from both ends inwards, every zone once a cycle, for any count;
 * with one zone it stays there. */
static void test_zrr_run_zone_order(void **state)
{
	static const uint32_t want14[] = { 0, 13, 1, 12, 2, 11, 3, 10, 4, 9, 5, 8, 6, 7 };
	struct avfs_alloc a = { .nzones = 14 };
	uint32_t z = 0;

	(void)state;
	for (unsigned i = 0; i < 14; i++) {
		assert_int_equal(z, want14[i]);
		z = avfs_alloc_next_zone(&a, z);
	}
	assert_int_equal(z, 0);
	for (uint32_t n = 1; n <= 33; n++) {
		uint64_t seen = 0;

		a.nzones = n;
		z = 0;
		for (uint32_t i = 0; i < n; i++) {
			assert_true(z < n);
			assert_false(seen >> z & 1);
			seen |= 1ull << z;
			z = avfs_alloc_next_zone(&a, z);
		}
		assert_int_equal(z, 0);	/* back where it began after exactly n steps */
	}
}

/* A file takes `run` consecutive blocks of a zone, then the next zone in the order, starting a
 * run at a run boundary of an empty zone: with 8 zones of 16 blocks and runs of 4, blocks
 * 0..3 (zone 0), 7*16..7*16+3 (zone 7), 16..19 (zone 1), ... and after a whole cycle the
 * second run of zone 0. */
static void test_zrr_run_file_takes_runs(void **state)
{
	static const uint32_t order[8] = { 0, 7, 1, 6, 2, 5, 3, 4 };
	struct region r;
	uint64_t prev = NO_PREV;

	(void)state;
	region_init_run(&r, 8, 16, 4, 4);	/* after zone 4 comes zone 0 */
	for (uint32_t i = 0; i < 8 * 4 * 2; i++) {
		int64_t b = avfs_alloc_block(&r.a, prev);
		uint32_t z = order[(i / 4) % 8];

		assert_true(b >= 0);
		assert_int_equal((uint64_t)b, z * 16 + (i / 32) * 4 + i % 4);
		assert_int_equal(r.a.last_zone, z);
		prev = (uint64_t)b;
	}
	region_fini(&r);
}

/* Two files written a block each in turn (as the simulator's recordings are) keep their runs
 * whole, and over a cycle of zones each file has the same number of blocks in every zone. */
static void test_zrr_run_two_files_balanced(void **state)
{
	struct region r;
	uint64_t prev[2] = { NO_PREV, NO_PREV };
	unsigned per_zone[2][8] = { { 0 } };

	(void)state;
	region_init_run(&r, 8, 64, 7, 4);
	for (uint32_t i = 0; i < 2 * 8 * 4 * 2; i++) {
		unsigned f = i % 2;
		int64_t b = avfs_alloc_block(&r.a, prev[f]);

		assert_true(b >= 0);
		if (prev[f] != NO_PREV && (i / 2) % 4)	/* inside a run: the next block */
			assert_int_equal((uint64_t)b, prev[f] + 1);
		per_zone[f][avfs_alloc_zone_of(&r.a, (uint64_t)b)]++;
		prev[f] = (uint64_t)b;
	}
	for (unsigned f = 0; f < 2; f++)
		for (unsigned z = 0; z < 8; z++)
			assert_int_equal(per_zone[f][z], 8);	/* two runs of 4 in every zone */
	region_fini(&r);
}

/* A run ends early at a used block (the file moves on to the next zone), a zone without a free
 * run start gives its first free block, a full zone is skipped, and a full region is -ENOSPC. */
static void test_zrr_run_holes_and_full_zones(void **state)
{
	struct region r;

	(void)state;
	region_init_run(&r, 4, 8, 0, 4);	/* order 0, 3, 1, 2; after zone 0 comes 3 */
	/* zone 3 = blocks 24..31: 24 and 26 used, so its first run start (28) is taken */
	assert_int_equal(avfs_bitmap_set(&r.map, 24), 0);
	assert_int_equal(avfs_bitmap_set(&r.map, 26), 0);
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), 28);
	assert_int_equal(avfs_alloc_block(&r.a, 28), 29);
	assert_int_equal(avfs_bitmap_set(&r.map, 30), 0);	/* the run meets a used block */
	assert_int_equal(avfs_alloc_block(&r.a, 29), 8);	/* zone 1's first run */
	/* zone 2 (blocks 16..23): both run starts used -> its first free block, 17 */
	assert_int_equal(avfs_bitmap_set(&r.map, 16), 0);
	assert_int_equal(avfs_bitmap_set(&r.map, 20), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 11), 17);
	/* fill zone 0 entirely: a file in zone 2 skips it and goes on to zone 3's free block */
	for (uint64_t b = 0; b < 8; b++)
		assert_int_equal(avfs_bitmap_set(&r.map, b), 0);
	assert_int_equal(avfs_alloc_block(&r.a, 19), 25);
	while (avfs_alloc_block(&r.a, NO_PREV) >= 0)
		;
	assert_int_equal(r.map.nset, r.map.nbits);
	assert_int_equal(avfs_alloc_block(&r.a, NO_PREV), -ENOSPC);
	region_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bitmap_set_clear_test),
		cmocka_unit_test(test_bitmap_find_across_words),
		cmocka_unit_test(test_bitmap_find_matches_naive),
		cmocka_unit_test(test_bitmap_store_load_round_trip),
		cmocka_unit_test(test_zrr_zone_count_rule),
		cmocka_unit_test(test_zrr_zone_layout_covers_all),
		cmocka_unit_test(test_zrr_init_rejects_nonsense),
		cmocka_unit_test(test_zrr_file_walks_consecutive_zones),
		cmocka_unit_test(test_zrr_first_free_in_zone),
		cmocka_unit_test(test_zrr_new_file_after_last_zone),
		cmocka_unit_test(test_zrr_full_zone_skipped),
		cmocka_unit_test(test_zrr_initial_zone_seeded),
		cmocka_unit_test(test_zrr_enospc_changes_nothing),
		cmocka_unit_test(test_zrr_interleaved_three_files),
		cmocka_unit_test(test_zrr_contig_sequential_and_new_file),
		cmocka_unit_test(test_zrr_contig_interleaved_fragments),
		cmocka_unit_test(test_zrr_contig_runs),
		cmocka_unit_test(test_zrr_free_and_reuse),
		cmocka_unit_test(test_zrr_run_zone_order),
		cmocka_unit_test(test_zrr_run_file_takes_runs),
		cmocka_unit_test(test_zrr_run_two_files_balanced),
		cmocka_unit_test(test_zrr_run_holes_and_full_zones),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
