/*
 * data.c — file data mapping: where a regular file's data lives, block by block; blocks
 * allocated (ZRR) for writes and preallocation, initialized-page counts, sizes shrinking and
 * growing, holes punched and found (SEEK_DATA, SEEK_HOLE). Where the data is, not the I/O a
 * range needs (dataplan.c).
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
	if (p.block > fs->sb.data_blocks || p.valid > bs / AVFS_PAGE ||
	    (di->small_units && (k || p.valid > di->small_units)))
		return -EUCLEAN;
	*e = (struct avfs_bext){ .file_off = k * bs,
				 .dev_off = !p.block ? 0 : di->small_units ? fs_small_dev(fs, di)
								: dev_of(fs, p.block),
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
	struct avfs_bptr p;
	int err = fs_bmap_get(fs, ino, di, k, &p);

	if (err)
		return err;
	if (!p.block && !fs_data_avail(fs))
		return -ENOSPC;	/* before the map blocks of its slot are made */
	if ((err = fs_bmap_slot(fs, ino, di, k, true, slot, &m)))
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

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

void fs_file_alloc_cost(struct avfs_fs *fs, struct avfs_dinode *di, uint64_t k0, uint64_t k1,
			struct fs_alloc_cost *c)
{
	struct fs_bmap_cost b;

	fs_bmap_cost(fs, di, k0, k1, &b);
	c->new_data = (k1 - k0) - b.mapped;
	c->new_meta = b.missing;
	/* the inode, the map blocks on the way (old and new), and the bits of the new blocks */
	c->blocks = 1 + b.nodes + b.missing + min_u64(c->new_data, fs->sb.dbitmap_blocks) +
		    min_u64(b.missing, fs->sb.mbitmap_blocks);
}

uint64_t fs_file_resize_cost(struct avfs_fs *fs, struct avfs_dinode *di, uint64_t size)
{
	uint64_t bs = avfs_fs_block_size(fs);
	struct fs_bmap_cost b;

	if (size >= di->size)
		return 1;
	fs_bmap_cost(fs, di, (size + bs - 1) / bs, UINT64_MAX, &b);
	/* the inode, the slot of the block the size ends in (its valid pages), the map blocks
	 * trimmed or freed, and the bits of everything freed (a small file's extent) */
	return 2 + (di->small_units ? FS_SMALL_BLOCKS : 0) + b.nodes +
	       min_u64(b.mapped, fs->sb.dbitmap_blocks) +
	       min_u64(b.nodes, fs->sb.mbitmap_blocks);
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
	if (s->valid > avfs_fs_block_size(fs) / AVFS_PAGE ||
	    (di->small_units && (k || pages > di->small_units)))
		return -EUCLEAN;	/* (a small file's extent is made to hold the write) */
	*e = (struct avfs_bext){ .file_off = k * avfs_fs_block_size(fs),
				 .dev_off = di->small_units ? fs_small_dev(fs, di)
							    : dev_of(fs, s->block),
				 .valid = s->valid,
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
	uint64_t bs = avfs_fs_block_size(fs), end = off + len, k1;
	struct fs_alloc_cost c;
	unsigned n = 0;
	int err = fs_write_check(fs, ino, off, len, &di);

	if (err || !len || !max)
		return err;
	if (di->small_units && end > (uint64_t)di->small_units * AVFS_PAGE)
		return -EOPNOTSUPP;	/* a small file grows by avfs_fs_plan_write (a move) */
	k1 = min_u64((end + bs - 1) / bs, off / bs + max);
	fs_file_alloc_cost(fs, di, off / bs, k1, &c);
	if ((err = fs_txn_begin(fs, c.blocks, c.new_meta)))
		return err;
	for (uint64_t k = off / bs; k < k1; k++) {
		uint64_t hi = (k + 1) * bs < end ? (k + 1) * bs : end;

		if ((err = fs_block_write(fs, ino, di, k, (uint32_t)((hi - k * bs + AVFS_PAGE - 1) /
								      AVFS_PAGE), &ext[n])))
			break;	/* out of data blocks: the extents so far */
		if (hi > di->size)
			di->size = hi;
		n++;
	}
	if (n) {
		di->mtime_ns = di->ctime_ns = now;
		fs_ino_dirty(fs, ino);
	}
	fs_txn_end(fs);
	return n ? (int)n : err;
}

bool avfs_fs_small_past(struct avfs_fs *fs, uint64_t ino, uint64_t end)
{
	struct avfs_dinode *di = NULL;

	return !fs_file_get(fs, ino, &di) && di->small_units &&
	       end > (uint64_t)di->small_units * AVFS_PAGE;
}

int avfs_fs_fallocate(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		      bool keep_size, int64_t now)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end = off + len;
	struct fs_alloc_cost c;
	int err = fs_write_check(fs, ino, off, len, &di);

	if (err)
		return err;
	if (!len)
		return -EINVAL;
	if (di->small_units && end > (uint64_t)di->small_units * AVFS_PAGE) {
		/* its data would have to move, which only a write plans: posix_fallocate falls
		 * back to writing, which does */
		fs_why(fs, "fallocate past a small file's extent: write instead");
		return -EOPNOTSUPP;
	}
	fs_file_alloc_cost(fs, di, off / bs, (end + bs - 1) / bs, &c);
	if (c.new_data > fs_data_avail(fs))
		return -ENOSPC;
	if ((err = fs_txn_begin(fs, c.blocks, c.new_meta)))
		return err;
	for (uint64_t k = off / bs; k * bs < end && !err; k++) {
		struct avfs_bptr *s;

		err = map_alloc(fs, ino, di, k, &s);	/* only a corrupt map fails now */
	}
	if (!err && !keep_size && end > di->size)
		di->size = end;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	fs_txn_end(fs);
	return err;
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
	*dev_off = (di->small_units ? fs_small_dev(fs, di) : dev_of(fs, p.block)) +
		   (size % bs) / AVFS_PAGE * AVFS_PAGE;
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
		if (!keep)
			fs_small_release(fs, ino, di);	/* (none unless small) */
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

int64_t avfs_fs_seek(struct avfs_fs *fs, uint64_t ino, uint64_t off, bool hole)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs);
	int err = fs_file_get(fs, ino, &di);

	if (err)
		return err;
	if (off >= di->size)
		return -ENXIO;
	for (uint64_t k = off / bs; k * bs < di->size; k++) {
		struct avfs_bext e;
		uint64_t lo = off > k * bs ? off : k * bs, data_end;

		if ((err = fs_block_read(fs, ino, di, k, &e)))
			return err;
		/* the block's data: its initialized pages, [k * bs, data_end) */
		data_end = k * bs + (e.dev_off ? (uint64_t)e.valid * AVFS_PAGE : 0);
		if (!hole && lo < data_end)
			return (int64_t)lo;
		if (hole && lo >= data_end)
			return (int64_t)lo;
		if (hole && data_end < (k + 1) * bs)
			return (int64_t)min_u64(data_end, di->size);
	}
	return hole ? (int64_t)di->size : -ENXIO;
}

/* The bytes [a, b) of block k, which a punch does not free whole: pages at the end of its
 * initialized ones are uninitialized (*valid lowered), the rest is left for the driver to
 * zero (*z). Changes nothing. */
static int punch_part(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		      uint64_t a, uint64_t b, uint32_t *valid, struct avfs_range *z)
{
	uint64_t bs = avfs_fs_block_size(fs), vend;
	struct avfs_bext e;
	int err = fs_block_read(fs, ino, di, k, &e);

	*z = (struct avfs_range){ 0 };
	if (err)
		return err;
	*valid = e.valid;
	vend = k * bs + (uint64_t)e.valid * AVFS_PAGE;
	if (!e.dev_off || a >= vend)
		return 0;	/* reads as zeros already */
	if (b >= vend || b >= di->size) {
		/* to the end of its data: the pages from a's next page boundary on are dropped,
		 * a's own page keeps its head and zeroes the rest */
		*valid = (uint32_t)((a - k * bs + AVFS_PAGE - 1) / AVFS_PAGE);
		if (a % AVFS_PAGE)
			*z = (struct avfs_range){ a, AVFS_PAGE - a % AVFS_PAGE };
		return 0;
	}
	*z = (struct avfs_range){ a, b - a };
	return 0;
}

int avfs_fs_punch(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len, int64_t now,
		  struct avfs_range zero[2], unsigned *nzero)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end, k0, k1, pk[2], pa[2], pb[2];
	struct fs_bmap_cost c;
	struct avfs_range z[2];
	uint32_t valid[2];
	unsigned np = 0;
	int err = fs_write_check(fs, ino, off, len, &di);

	*nzero = 0;
	if (err)
		return err;
	if (!len)
		return -EINVAL;
	end = min_u64(off + len, di->size);
	if (off >= end)
		return 0;	/* past the end: nothing to free or zero */
	/* whole blocks [k0, k1); a block the size ends in is whole when the range reaches the
	 * size (what lies past the size is never read) */
	k0 = (off + bs - 1) / bs;
	k1 = end == di->size ? (end + bs - 1) / bs : end / bs;
	if (k1 <= k0) {		/* inside one block */
		if (off % bs || end < (off / bs + 1) * bs)
			pk[np] = off / bs, pa[np] = off, pb[np] = end, np++;
		k0 = k1 = 0;
	} else {
		if (off % bs)
			pk[np] = off / bs, pa[np] = off, pb[np] = k0 * bs, np++;
		if (k1 * bs < end)
			pk[np] = k1, pa[np] = k1 * bs, pb[np] = end, np++;
	}
	for (unsigned i = 0; i < np; i++)
		if ((err = punch_part(fs, ino, di, pk[i], pa[i], pb[i], &valid[i], &z[i])))
			return err;
	/* the inode, the superblock's count, the map blocks over the range and the bits of
	 * the blocks freed */
	fs_bmap_cost(fs, di, off / bs, (end + bs - 1) / bs, &c);
	if ((err = fs_txn_begin(fs, 2 + c.nodes + min_u64(c.mapped, fs->sb.dbitmap_blocks) +
				     (di->small_units ? FS_SMALL_BLOCKS : 0), 0)))
		return err;
	if (k0 < k1 && di->small_units)
		fs_small_release(fs, ino, di);	/* its one block, whole */
	for (uint64_t k = k0; k < k1 && err >= 0; k++)
		err = fs_bmap_free_one(fs, ino, di, k);	/* only a corrupt map fails */
	for (unsigned i = 0; i < np && err >= 0; i++) {
		struct avfs_bptr *s;
		uint64_t m;

		if (!fs_bmap_slot(fs, ino, di, pk[i], false, &s, &m) && s->block &&
		    s->valid > valid[i]) {
			s->valid = valid[i];
			fs_dirty(fs, m);
		}
		if (z[i].len)
			zero[(*nzero)++] = z[i];
	}
	di->mtime_ns = di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	fs_txn_end(fs);
	return err < 0 ? err : 0;
}
