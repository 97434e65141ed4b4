/*
 * small.c — small-file extents: files up to AVFS_SMALL_MAX bytes live in runs of 4 KiB units
 * packed inside shared data blocks ("pool blocks", each with a unit map in a metadata block
 * of type AVFS_MT_SMALL, format.h); allocated next-fit, freed units reusable only once the
 * transaction that freed them is on disk. Not the I/O of a move (dataplan.c copies the pages)
 * nor which file is small (dataplan.c decides).
 */
#include "fs_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define UNIT AVFS_PAGE
/* a freed run, as kept until its transaction is on disk: pool block, first unit, count */
#define FS_SRUN(b, u, n) ((uint64_t)(b) << 32 | (uint64_t)(u) << 16 | (uint64_t)(n))

static bool bit(const uint8_t *map, uint32_t u)
{
	return map[u / 8] >> (u % 8) & 1;
}

static void bits_set(uint8_t *map, uint32_t u, uint32_t n, bool on)
{
	for (uint32_t i = u; i < u + n; i++) {
		if (on)
			map[i / 8] |= (uint8_t)(1u << (i % 8));
		else
			map[i / 8] &= (uint8_t)~(1u << (i % 8));
	}
}

uint64_t fs_small_max(const struct avfs_fs *fs)
{
	return fs->sb.block_shift <= AVFS_SMALL_MAX_SHIFT ? AVFS_SMALL_MAX(avfs_fs_block_size(fs)) : 0;
}

static uint32_t units_of(const struct avfs_fs *fs)
{
	return (uint32_t)(avfs_fs_block_size(fs) / UNIT);
}

uint64_t fs_small_dev(const struct avfs_fs *fs, const struct avfs_dinode *di)
{
	return fs->sb.data_off + (uint64_t)(di->direct[0].block - 1) * avfs_fs_block_size(fs) +
	       (uint64_t)di->small_unit * UNIT;
}

static struct avfs_sblock *pool_map(struct avfs_fs *fs, const struct fs_pool *p)
{
	return (struct avfs_sblock *)fs->blocks[p->m];
}

/* The pool of data block b, or NULL. */
static struct fs_pool *pool_find(struct avfs_fs *fs, uint32_t b, size_t *at)
{
	size_t lo = 0, hi = fs->npools;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fs->pools[mid].block < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (at)
		*at = lo;
	return lo < fs->npools && fs->pools[lo].block == b ? &fs->pools[lo] : NULL;
}

/* Room for one more pool in the array. 0 or -ENOMEM. */
static int pool_room(struct avfs_fs *fs)
{
	struct fs_pool *v;
	size_t cap = fs->cappools ? 2 * fs->cappools : 16;

	if (fs->npools < fs->cappools)
		return 0;
	if (!(v = realloc(fs->pools, cap * sizeof(*v))))
		return -ENOMEM;
	fs->pools = v;
	fs->cappools = cap;
	return 0;
}

static int pool_add(struct avfs_fs *fs, uint32_t b, uint32_t m)
{
	size_t at;
	uint8_t *pend = calloc(1, units_of(fs) / 8 + 1);

	if (!pend || pool_room(fs)) {
		free(pend);
		return -ENOMEM;
	}
	pool_find(fs, b, &at);
	memmove(&fs->pools[at + 1], &fs->pools[at], (fs->npools - at) * sizeof(*fs->pools));
	fs->pools[at] = (struct fs_pool){ .block = b, .m = m, .pend = pend };
	fs->npools++;
	return 0;
}

static void pool_drop(struct avfs_fs *fs, struct fs_pool *p)
{
	size_t at = (size_t)(p - fs->pools);

	free(p->pend);
	memmove(p, p + 1, (fs->npools - at - 1) * sizeof(*p));
	fs->npools--;
}

/* A run of n units free on disk and not pending, from the cursor on (then from 0). */
static bool pool_fit(struct avfs_fs *fs, struct fs_pool *p, uint32_t n, uint32_t *unit)
{
	const struct avfs_sblock *sb = pool_map(fs, p);
	uint32_t units = sb->units;

	if ((uint32_t)(units - sb->used) < n)
		return false;
	for (int pass = 0; pass < 2; pass++) {
		uint32_t from = pass ? 0 : p->cursor, to = pass ? p->cursor + n : units, run = 0;

		to = to < units ? to : units;
		for (uint32_t u = from; u < to; u++) {
			if (!(u % 8) && u + 8 <= to && (sb->map[u / 8] | p->pend[u / 8]) == 0xff) {
				run = 0;
				u += 7;
				continue;
			}
			run = bit(sb->map, u) || bit(p->pend, u) ? 0 : run + 1;
			if (run == n) {
				*unit = u + 1 - n;
				return true;
			}
		}
	}
	return false;
}

static void take(struct avfs_fs *fs, struct fs_pool *p, uint32_t u, uint32_t n)
{
	struct avfs_sblock *sb = pool_map(fs, p);

	bits_set(sb->map, u, n, true);
	sb->used = (uint16_t)(sb->used + n);
	fs->small_free -= n;
	p->cursor = u + n;
	fs_dirty(fs, p->m);
}

/* A new pool block: a data block (ZRR) and its map. 0, -ENOSPC. */
static int pool_new(struct avfs_fs *fs, struct fs_pool **out)
{
	uint32_t b;
	uint64_t m;
	struct avfs_sblock *sb;
	int err;

	if (!fs_data_avail(fs))
		return -ENOSPC;
	if ((err = pool_room(fs)))
		return err;
	if ((err = fs_meta_alloc(fs, AVFS_MT_SMALL, &m)))
		return err;
	if ((err = fs_data_alloc(fs, UINT64_MAX, &b))) {
		fs_meta_free(fs, m);
		return err;
	}
	if ((err = pool_add(fs, b, (uint32_t)m))) {
		fs_data_free(fs, b);
		fs_meta_free(fs, m);
		return err;
	}
	sb = (struct avfs_sblock *)fs->blocks[m];
	sb->block = b;
	sb->units = (uint16_t)units_of(fs);
	fs->small_free += sb->units;
	*out = pool_find(fs, b, NULL);
	return 0;
}

/* n units somewhere: the last pool used first, then any, then a new one. */
static int extent_alloc(struct avfs_fs *fs, uint32_t n, struct fs_pool **pp, uint32_t *unit)
{
	struct fs_pool *p = pool_find(fs, fs->pool_hint, NULL);
	int err;

	if (p && pool_fit(fs, p, n, unit))
		goto found;
	for (size_t i = 0; i < fs->npools; i++) {
		if (&fs->pools[i] != p && pool_fit(fs, &fs->pools[i], n, unit)) {
			p = &fs->pools[i];
			goto found;
		}
	}
	if ((err = pool_new(fs, &p)))
		return err;
	*unit = 0;
found:
	fs->pool_hint = p->block;
	*pp = p;
	return 0;
}

static void version_up(struct avfs_fs *fs)
{
	if (fs->sb.version < AVFS_FORMAT_VERSION_SMALL) {
		/* the image now holds what only version 3 readers know (format.h) */
		fs->sb.version = fs_sb(fs)->version = AVFS_FORMAT_VERSION_SMALL;
		fs_dirty(fs, 0);
	}
}

int fs_small_make(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint32_t units)
{
	struct fs_pool *p;
	uint32_t u;
	int err;

	if (!units || (uint64_t)units * UNIT > fs_small_max(fs))
		return -EINVAL;
	if ((err = extent_alloc(fs, units, &p, &u)))
		return err;
	take(fs, p, u, units);
	di->direct[0] = (struct avfs_bptr){ .block = p->block + 1, .valid = 0 };
	di->small_unit = (uint16_t)u;
	di->small_units = (uint16_t)units;
	di->nblocks = 1;
	version_up(fs);
	fs_ino_dirty(fs, ino);
	return 0;
}

/* Free n units from u of pool block b: off the disk map now, reusable after the commit. */
static void extent_free(struct avfs_fs *fs, uint32_t b, uint32_t u, uint32_t n)
{
	struct fs_pool *p = pool_find(fs, b, NULL);
	struct avfs_sblock *sb;

	if (!p || !n)
		return;	/* a pool left out at mount (fsck's) */
	sb = pool_map(fs, p);
	if (u + n > sb->units)
		return;
	for (uint32_t i = u; i < u + n; i++) {
		if (!bit(sb->map, i))
			continue;	/* not in use: damage, fsck's */
		sb->map[i / 8] &= (uint8_t)~(1u << (i % 8));
		sb->used--;
		fs->small_free++;
	}
	fs_dirty(fs, p->m);
	if (!sb->used) {
		/* the last extent: the pool goes (its data block reusable after the commit, as
		 * any freed block; freed runs of it still pending find no pool and are dropped) */
		fs->small_free -= sb->units;
		fs_meta_free(fs, p->m);
		fs_data_free(fs, b);
		pool_drop(fs, p);
		return;
	}
	bits_set(p->pend, u, n, true);
	if (fs->nspend == fs->capspend) {
		size_t cap = fs->capspend ? 2 * fs->capspend : 64;
		uint64_t *v = realloc(fs->spend, cap * sizeof(*v));

		if (!v)
			return;	/* the run stays pending (unused) until remount: space, not safety */
		fs->spend = v;
		fs->capspend = cap;
	}
	fs->spend[fs->nspend++] = FS_SRUN(b, u, n);
}

void fs_small_release(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di)
{
	if (!di->small_units)
		return;
	if (di->direct[0].block && di->direct[0].block <= fs->sb.data_blocks)
		extent_free(fs, di->direct[0].block - 1, di->small_unit, di->small_units);
	di->direct[0] = (struct avfs_bptr){ 0 };
	di->small_unit = di->small_units = 0;
	di->nblocks = 0;
	fs_ino_dirty(fs, ino);
}

int fs_small_grow(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint32_t units,
		  uint64_t *src)
{
	struct fs_pool *p = pool_find(fs, di->direct[0].block - 1, NULL), *q;
	uint32_t u0 = di->small_unit, n0 = di->small_units, u, b, valid = di->direct[0].valid;
	int err;

	*src = 0;
	if (!p || (uint64_t)units * UNIT > fs_small_max(fs))
		return -EUCLEAN;
	if (units <= n0)
		return 0;
	if (u0 + units <= pool_map(fs, p)->units) {
		bool fits = true;

		for (uint32_t i = u0 + n0; i < u0 + units && fits; i++)
			fits = !bit(pool_map(fs, p)->map, i) && !bit(p->pend, i);
		if (fits) {
			take(fs, p, u0 + n0, units - n0);
			di->small_units = (uint16_t)units;
			fs_ino_dirty(fs, ino);
			return 0;
		}
	}
	*src = fs_small_dev(fs, di);
	if ((err = extent_alloc(fs, units, &q, &u)))
		return err;
	take(fs, q, u, units);
	b = q->block;	/* (pool pointers move when a pool goes) */
	extent_free(fs, di->direct[0].block - 1, u0, n0);
	di->direct[0] = (struct avfs_bptr){ .block = b + 1, .valid = valid };
	di->small_unit = (uint16_t)u;
	di->small_units = (uint16_t)units;
	fs_ino_dirty(fs, ino);
	return 0;
}

int fs_small_promote(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t *src)
{
	uint32_t valid = di->direct[0].valid, b;
	int err = fs_data_alloc(fs, UINT64_MAX, &b);

	if (err)
		return err;
	*src = fs_small_dev(fs, di);
	fs_small_release(fs, ino, di);
	di->direct[0] = (struct avfs_bptr){ .block = b + 1, .valid = valid };
	di->nblocks = 1;
	fs_ino_dirty(fs, ino);
	return 0;
}

int fs_small_load(struct avfs_fs *fs)
{
	uint32_t units = units_of(fs);

	if (!fs_small_max(fs))
		return 0;
	for (uint64_t m = fs->sb.dyn_start; m < fs->nmeta; m++) {
		const struct avfs_sblock *sb = (const struct avfs_sblock *)fs->blocks[m];
		uint32_t used = 0;

		if (!sb || sb->hdr.type != AVFS_MT_SMALL || !avfs_fs_block_live(fs, m))
			continue;
		for (uint32_t u = 0; u < units && sb->units == units; u++)
			used += bit(sb->map, u);
		if (sb->units != units || sb->used != used || !used || sb->block >= fs->sb.data_blocks ||
		    !avfs_bitmap_test(&fs->dmap, sb->block) || pool_find(fs, sb->block, NULL))
			continue;	/* unsound: left out, for fsck */
		if (pool_add(fs, sb->block, (uint32_t)m))
			return -ENOMEM;
		fs->small_free += units - used;
	}
	return 0;
}

void fs_small_close(struct avfs_fs *fs)
{
	for (size_t i = 0; i < fs->npools; i++)
		free(fs->pools[i].pend);
	free(fs->pools);
	free(fs->spend);
	fs->pools = NULL;
	fs->spend = NULL;
	fs->npools = fs->cappools = fs->nspend = fs->capspend = 0;
}

void fs_small_commit(struct avfs_fs *fs, struct avfs_plan *p)
{
	if (!fs->nspend)
		return;
	p->sfreed = fs->spend;
	p->nsfreed = fs->nspend;
	fs->spend = NULL;
	fs->nspend = fs->capspend = 0;
}

void fs_small_done(struct avfs_fs *fs, struct avfs_plan *p)
{
	for (size_t i = 0; i < p->nsfreed; i++) {
		uint64_t r = p->sfreed[i];
		struct fs_pool *pool = pool_find(fs, (uint32_t)(r >> 32), NULL);
		uint32_t u = (uint32_t)(r >> 16 & 0xffff), n = (uint32_t)(r & 0xffff);

		if (pool && u + n <= units_of(fs))
			bits_set(pool->pend, u, n, false);
	}
	p->nsfreed = 0;
}
