/*
 * data.c — file data mapping: where a regular file's data lives, block by block; blocks
 * allocated (ZRR) for writes and preallocation, initialized-page counts, sizes shrinking and
 * growing. Where the data is, not the I/O a range needs (dataplan.c).
 */
#include "fs_i.h"

#include <errno.h>
#include <sys/stat.h>

int fs_file_get(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode **out)
{
	int err = 0;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);

	if (!di)
		return err;
	if (S_ISDIR(di->mode))
		return -EISDIR;
	if (!S_ISREG(di->mode))
		return -EINVAL;
	*out = di;
	return 0;
}

static uint64_t dev_of(const struct avfs_fs *fs, uint32_t block)
{
	return fs->sb.data_off + (uint64_t)(block - 1) * (1ull << fs->sb.block_shift);
}

int fs_block_read(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		  struct avfs_bext *e)
{
	uint64_t bs = avfs_fs_block_size(fs);
	struct avfs_bptr p;
	int err = fs_bmap_get(fs, ino, di, k, &p);

	if (err)
		return err;
	if (p.block > fs->sb.data_blocks || p.valid > bs / AVFS_PAGE)
		return -EUCLEAN;
	*e = (struct avfs_bext){ .file_off = k * bs, .dev_off = p.block ? dev_of(fs, p.block) : 0,
				 .valid = p.block ? p.valid : 0, .valid_after = p.block ? p.valid : 0 };
	return 0;
}

int avfs_fs_map_read(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		     struct avfs_bext *ext, unsigned max)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end;
	unsigned n = 0;
	int err = fs_file_get(fs, ino, &di);

	if (err)
		return err;
	if (off >= di->size || !len)
		return 0;
	end = off + len < off || off + len > di->size ? di->size : off + len;
	for (uint64_t k = off / bs; k * bs < end && n < max; k++) {
		if ((err = fs_block_read(fs, ino, di, k, &ext[n])))
			return err;
		n++;
	}
	return (int)n;
}

/* The data block of the nearest mapped index below k (the ZRR "previous block"). */
static uint64_t prev_block(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k)
{
	for (uint64_t i = k; i > 0 && k - i < 64; i--) {
		struct avfs_bptr p;

		if (!fs_bmap_get(fs, ino, di, i - 1, &p) && p.block && p.block <= fs->sb.data_blocks)
			return p.block - 1;
	}
	return UINT64_MAX;
}

static int map_alloc(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		     struct avfs_bptr **slot)
{
	uint64_t m;
	uint32_t b = 0;
	int err = fs_bmap_slot(fs, ino, di, k, true, slot, &m);

	if (err)
		return err;
	if ((*slot)->block) {
		if ((*slot)->block > fs->sb.data_blocks)
			return -EUCLEAN;
		return 0;
	}
	err = fs_data_alloc(fs, prev_block(fs, ino, di, k), &b);
	if (err)
		return err;
	**slot = (struct avfs_bptr){ .block = b + 1, .valid = 0 };
	fs_dirty(fs, m);
	di->nblocks++;
	fs_ino_dirty(fs, ino);
	return 0;
}

int fs_write_check(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		   struct avfs_dinode **di)
{
	int err;

	RW_CHECK(fs);
	if ((err = fs_file_get(fs, ino, di)))
		return err;
	if (off + len < off || off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	return 0;
}

int fs_block_write(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		   uint32_t pages, struct avfs_bext *e)
{
	struct avfs_bptr *s;
	uint64_t sm;
	int err = map_alloc(fs, ino, di, k, &s);

	if (err)
		return err;
	if (s->valid > avfs_fs_block_size(fs) / AVFS_PAGE)
		return -EUCLEAN;
	*e = (struct avfs_bext){ .file_off = k * avfs_fs_block_size(fs),
				 .dev_off = dev_of(fs, s->block), .valid = s->valid,
				 .valid_after = s->valid > pages ? s->valid : pages };
	if (e->valid_after != s->valid) {
		s->valid = e->valid_after;
		if (!fs_bmap_slot(fs, ino, di, k, false, &s, &sm))
			fs_dirty(fs, sm);
	}
	return 0;
}

int avfs_fs_map_write(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len, int64_t now,
		      struct avfs_bext *ext, unsigned max)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end = off + len;
	unsigned n = 0;
	int err = fs_write_check(fs, ino, off, len, &di);

	if (err || !len)
		return err;
	for (uint64_t k = off / bs; k * bs < end && n < max; k++) {
		uint64_t hi = (k + 1) * bs < end ? (k + 1) * bs : end;

		if ((err = fs_block_write(fs, ino, di, k, (uint32_t)((hi - k * bs + AVFS_PAGE - 1) /
								      AVFS_PAGE), &ext[n])))
			return n ? (int)n : err;
		if (hi > di->size)
			di->size = hi;
		n++;
	}
	di->mtime_ns = di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	return (int)n;
}

int avfs_fs_fallocate(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		      bool keep_size, int64_t now)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end = off + len;
	int err = fs_write_check(fs, ino, off, len, &di);

	if (err)
		return err;
	if (!len)
		return -EINVAL;
	if ((end - off + bs - 1) / bs > avfs_fs_super(fs)->free_data + (off % bs ? 1 : 0) + 1) {
		/* quick refusal of what cannot fit (exact check below) */
		uint64_t need = 0;

		for (uint64_t k = off / bs; k * bs < end; k++) {
			struct avfs_bptr p;

			if ((err = fs_bmap_get(fs, ino, di, k, &p)))
				return err;
			need += !p.block;
			if (need > avfs_fs_super(fs)->free_data)
				return -ENOSPC;
		}
	}
	for (uint64_t k = off / bs; k * bs < end; k++) {
		struct avfs_bptr *s;

		if ((err = map_alloc(fs, ino, di, k, &s)))
			return err;	/* blocks taken so far stay: they read as zeros */
	}
	if (!keep_size && end > di->size)
		di->size = end;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	return 0;
}

int avfs_fs_tail_page(struct avfs_fs *fs, uint64_t ino, uint64_t size, uint64_t *dev_off,
		      uint32_t *keep)
{
	int err = 0;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);
	uint64_t bs = avfs_fs_block_size(fs);
	struct avfs_bptr p;

	if (!di)
		return err;
	if (!(size % AVFS_PAGE) || !S_ISREG(di->mode) || size > di->size)
		return 1;
	if ((err = fs_bmap_get(fs, ino, di, size / bs, &p)))
		return err;
	if (!p.block || (size % bs) / AVFS_PAGE >= p.valid || p.block > fs->sb.data_blocks)
		return 1;
	*dev_off = fs->sb.data_off + (uint64_t)(p.block - 1) * bs + (size % bs) / AVFS_PAGE * AVFS_PAGE;
	*keep = size % AVFS_PAGE;
	return 0;
}

int fs_file_resize(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t size)
{
	uint64_t bs = avfs_fs_block_size(fs);
	uint64_t keep = (size + bs - 1) / bs;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (size < di->size) {
		fs_bmap_trim(fs, ino, di, keep, true);
		if (size % bs) {
			struct avfs_bptr *s;
			uint64_t m;
			uint32_t pages = (uint32_t)((size % bs + AVFS_PAGE - 1) / AVFS_PAGE);

			if (!fs_bmap_slot(fs, ino, di, size / bs, false, &s, &m) && s->valid > pages) {
				s->valid = pages;
				fs_dirty(fs, m);
			}
		}
	}
	di->size = size;
	fs_ino_dirty(fs, ino);
	return 0;
}
