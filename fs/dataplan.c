/*
 * dataplan.c — data plans: the device I/O of a file range, computed once for every driver
 * (fs/fsio.c, avfsd, the simulator). A read becomes device reads of initialized pages and
 * zero-fills of the rest; a write becomes page writes whose zero-fills and read-modify-writes
 * keep never-written pages and stale bytes past the size from ever showing. No I/O here: the
 * driver executes the plan; a write's allocation, valid pages and size change in memory.
 */
#include "fs_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PAGE AVFS_PAGE

void avfs_data_plan_init(struct avfs_data_plan *p)
{
	memset(p, 0, sizeof(*p));
}

void avfs_data_plan_free(struct avfs_data_plan *p)
{
	free(p->ops);
	memset(p, 0, sizeof(*p));
}

static void dop_reset(struct avfs_data_plan *p)
{
	p->n = 0;
	p->bytes = 0;	/* (whole is the caller's) */
}

/* Room for n more ops (the array at least doubles when it grows). 0 or -ENOMEM. */
static int dop_room(struct avfs_data_plan *p, uint64_t n)
{
	struct avfs_dop *o;
	size_t want = p->n + n > 2 * p->cap ? p->n + n : 2 * p->cap;

	if (n <= p->cap - p->n)
		return 0;
	if (n > SIZE_MAX / 4 / sizeof(*o) - p->n ||
	    !(o = realloc(p->ops, want * sizeof(*o))))
		return -ENOMEM;
	p->ops = o;
	p->cap = want;
	return 0;
}

/* Append an op (room made beforehand); a zero-fill that continues the last one joins it. */
static void dop_add(struct avfs_data_plan *p, struct avfs_dop op)
{
	struct avfs_dop *last = p->n ? &p->ops[p->n - 1] : NULL;

	if (op.kind == AVFS_DOP_ZERO && last && last->kind == AVFS_DOP_ZERO &&
	    last->buf_off + last->len == op.buf_off) {
		last->len += op.len;
		return;
	}
	p->ops[p->n++] = op;
}

static uint64_t page_up(uint64_t x)
{
	return (x + PAGE - 1) / PAGE * PAGE;
}

int avfs_fs_plan_read(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		      struct avfs_data_plan *p)
{
	uint64_t bs = avfs_fs_block_size(fs), end;
	struct avfs_dinode *di;
	int err;

	dop_reset(p);
	if ((err = fs_file_get(fs, ino, &di)))
		return err;
	if (off >= di->size || !len)
		return 0;
	end = off + len < off || off + len > di->size ? di->size : off + len;
	for (uint64_t k = off / bs; k * bs < end; k++) {
		uint64_t kbs = k * bs, lo = off > kbs ? off : kbs, hi = end < kbs + bs ? end : kbs + bs;
		uint64_t vend, rend;
		struct avfs_bext e;

		if ((err = fs_block_read(fs, ino, di, k, &e)) || (err = dop_room(p, 2))) {
			dop_reset(p);
			return err;
		}
		/* initialized pages come from the device; the rest of the block (a hole has no
		 * valid page) reads as zeros */
		vend = kbs + (uint64_t)e.valid * PAGE;
		rend = vend < lo ? lo : vend > hi ? hi : vend;
		if (lo < rend) {
			uint64_t a = (lo - kbs) / PAGE * PAGE;

			dop_add(p, (struct avfs_dop){ .kind = AVFS_DOP_READ,
						      .skip = (uint32_t)(lo - kbs - a),
						      .dev_off = e.dev_off + a,
						      .dev_len = page_up(rend - kbs) - a,
						      .buf_off = lo - off, .len = rend - lo });
		}
		if (rend < hi)
			dop_add(p, (struct avfs_dop){ .kind = AVFS_DOP_ZERO, .buf_off = rend - off,
						      .len = hi - rend });
	}
	p->bytes = end - off;
	return 0;
}

/* The bytes [0, n) of page q of a block that a write keeps from the device: those both
 * initialized (q < valid) and inside the file's old size (sb: the size relative to the
 * block, clamped to [0, block size]). Bytes past the size may be stale (a truncate leaves
 * them on the device): a write never brings them back inside the file. */
static uint32_t kept(uint32_t valid, uint64_t sb, uint64_t q)
{
	if (q >= valid || sb <= q * PAGE)
		return 0;
	return sb - q * PAGE < PAGE ? (uint32_t)(sb - q * PAGE) : PAGE;
}

/* The ops writing [lo, hi) (file offsets) of block e, of a write that starts at off into a
 * file whose size was `size`; src: where the block's kept bytes are (a small file moving),
 * or 0. Two ops at most, on disjoint pages. */
static void plan_block(struct avfs_data_plan *p, const struct avfs_bext *e, uint64_t bs,
		       uint64_t size, uint64_t off, uint64_t lo, uint64_t hi, uint64_t src)
{
	uint64_t kbs = e->file_off;
	uint64_t sb = size <= kbs ? 0 : size - kbs < bs ? size - kbs : bs;
	uint64_t p0 = (lo - kbs) / PAGE, p1 = (hi - kbs + PAGE - 1) / PAGE;
	uint64_t zs = e->valid < sb / PAGE ? e->valid : sb / PAGE;
	uint32_t skip = (uint32_t)(lo - kbs - p0 * PAGE);
	uint32_t end = (uint32_t)(hi - kbs - (p1 - 1) * PAGE);	/* data bytes in the last page */
	uint32_t head = kept(e->valid, sb, p0), tail = kept(e->valid, sb, p1 - 1);

	/* Pages before the data that must become zeros: never-initialized ones (valid grows
	 * over them) and, from the page holding the old size on, the stale bytes that a write
	 * beyond the size brings inside the file. One op, keeping what precedes the size. */
	if (zs < p0) {
		uint32_t keep = kept(e->valid, sb, zs);

		dop_add(p, (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
					      .skip = keep, .keep_head = keep,
					      .dev_off = e->dev_off + zs * PAGE,
					      .dev_len = (p0 - zs) * PAGE,
					      .len = (p0 - zs) * PAGE - keep,
					      .src_off = keep && src ? src + zs * PAGE : 0 });
	}
	/* The data, with the kept bytes around it in a partial first and last page (when the
	 * first page holds the old size, the zeros between it and the data are the tail
	 * zeroing, merged: never two ops on one page). */
	dop_add(p, (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = skip,
				      .keep_head = skip < head ? skip : head,
				      .keep_tail = tail > end ? PAGE - end : 0,
				      .dev_off = e->dev_off + p0 * PAGE, .dev_len = (p1 - p0) * PAGE,
				      .buf_off = lo - off, .len = hi - lo,
				      .src_off = src ? src + p0 * PAGE : 0 });
}

/* A small file's data moves (src: the old place) to block 0's new place (dev): its pages
 * [0, n) copied, keeping the initialized bytes before the old size (the rest zeros, as a
 * write past the size leaves them). One op, so one read and one write on the device (one op
 * a page made a promoted 256 KiB file 64 reads and 64 writes: issue 18, most of a loaded
 * disk's time beside 31 other clients, a client's request late by 20 s). */
static void plan_move(struct avfs_data_plan *p, uint64_t src, uint64_t dev, uint32_t valid,
		      uint64_t sb, uint64_t n)
{
	uint64_t keep = (uint64_t)valid * PAGE;

	keep = keep < sb ? keep : sb;
	keep = keep < n * PAGE ? keep : n * PAGE;
	if (!n)
		return;
	dop_add(p, (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
				      .skip = (uint32_t)(n * PAGE), .keep_head = (uint32_t)keep,
				      .dev_off = dev, .dev_len = n * PAGE,
				      .src_off = keep ? src : 0 });
}

/* Small files (small.c): a write to a file with no data that ends below the small limit
 * makes it small; one past its extent grows the extent (in place, or moving it) or, past
 * the limit, promotes the file to whole blocks; a write that wants whole blocks (whole)
 * makes none and promotes a small file. *src: where its data was when it moved, else
 * 0. The caller holds the credits (FS_SMALL_*). 0 or -ENOSPC. */
static int small_prepare(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t end,
			 bool whole, uint64_t *src)
{
	uint64_t max = fs_small_max(fs);
	uint32_t units = (uint32_t)(page_up(end) / PAGE);
	int err;

	*src = 0;
	if (whole && di->small_units)
		return fs_small_promote(fs, ino, di, src);
	if (!di->small_units) {
		/* (a first write that fills the whole limit — a writer of 1 MiB requests, the
		 * FUSE maximum, whose file is likely to go on — takes a whole block at once: made
		 * small, its next write would move the first MiB, read and written again) */
		if (whole || !max || end >= max || (fs->flags & AVFS_MOUNT_NOSMALL) ||
		    di->nblocks || di->direct[0].block || di->indirect)
			return 0;
		/* no room for a pool block's map (or no unit run and no free block): the file
		 * takes a whole block, if one is free */
		err = fs_small_make(fs, ino, di, units);
		return err == -ENOSPC ? 0 : err;
	}
	if (end <= (uint64_t)di->small_units * PAGE)
		return 0;
	err = end <= max ? fs_small_grow(fs, ino, di, units, src) : -ENOSPC;
	return err == -ENOSPC ? fs_small_promote(fs, ino, di, src) : err;
}

/* Append the zeroing of the stale bytes past `size` in its page, if any. 0 or -errno. */
static int plan_tail(struct avfs_fs *fs, uint64_t ino, uint64_t size, struct avfs_data_plan *p)
{
	uint64_t dev;
	uint32_t keep;
	int err = avfs_fs_tail_page(fs, ino, size, &dev, &keep);

	if (err)
		return err > 0 ? 0 : err;
	dop_add(p, (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
				      .skip = keep, .keep_head = keep, .dev_off = dev,
				      .dev_len = PAGE, .len = PAGE - keep });
	return 0;
}

int avfs_fs_plan_write(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		       int64_t now, struct avfs_data_plan *p)
{
	uint64_t bs = avfs_fs_block_size(fs), end = off + len, size, k0 = off / bs, k1, src = 0;
	struct fs_alloc_cost c;
	struct avfs_dinode *di;
	uint32_t valid0;
	bool small;
	int err;

	dop_reset(p);
	if ((err = fs_write_check(fs, ino, off, len, &di)) || !len)
		return err;
	/* a range larger than one transaction holds is cut to a prefix that fits: a short
	 * write, as when space runs out */
	for (k1 = (end + bs - 1) / bs;; k1 = k0 + (k1 - k0 + 1) / 2) {
		fs_file_alloc_cost(fs, di, k0, k1, &c);
		if (fs_txn_fits(fs, c.blocks) || k1 == k0 + 1)
			break;
	}
	end = end < k1 * bs ? end : k1 * bs;
	/* a write that may make, grow, move or promote a small file (small_prepare) */
	small = di->small_units || (!di->nblocks && end < fs_small_max(fs) &&
				    !(fs->flags & AVFS_MOUNT_NOSMALL));
	/* room for every op (a tail zeroing or a small file's move, then per block a zero-fill
	 * and the data) and the credits, before anything changes */
	if ((err = dop_room(p, 1 + (small ? 1 : 0) + 2 * (k1 - k0))) ||
	    (err = fs_txn_begin(fs, c.blocks + (small ? FS_SMALL_BLOCKS : 0),
				c.new_meta + (small ? FS_SMALL_META : 0))))
		return err;
	size = di->size;
	valid0 = di->direct[0].valid;
	/* a small file promoted by a write that starts in a later block: that block must be
	 * there too, or the plan (and with it the copy of block 0) would be empty */
	err = -ENOSPC;
	if (di->small_units && k0 && fs_data_avail(fs) < 2)
		goto out;
	if (small && (err = small_prepare(fs, ino, di, end, p->whole, &src)))
		goto out;
	if (src) {
		/* block 0 moved: its pages before the data (all, when the data starts in a
		 * later block) come from the old place; the old size's tail is zeroed on the way */
		uint64_t sb0 = size < bs ? size : bs;
		uint64_t zs = valid0 < sb0 / PAGE ? valid0 : sb0 / PAGE;
		struct avfs_bext e0;

		if ((err = fs_block_read(fs, ino, di, 0, &e0)))
			goto out;
		plan_move(p, src, e0.dev_off, valid0, sb0,
			  k0 ? valid0 : zs < off / PAGE ? zs : off / PAGE);
	} else if (off > size && size / bs < k0 && (err = plan_tail(fs, ino, size, p))) {
		/* the old last page in an earlier block than the data: zero its tail there (in
		 * the data's own block, plan_block does it) */
		goto out;
	}
	for (uint64_t k = k0; k < k1; k++) {
		uint64_t kbs = k * bs, lo = off > kbs ? off : kbs, hi = end < kbs + bs ? end : kbs + bs;
		struct avfs_bext e;

		if ((err = fs_block_write(fs, ino, di, k, (uint32_t)(page_up(hi - kbs) / PAGE), &e)))
			break;	/* out of data blocks: a short write, the prefix that fits */
		plan_block(p, &e, bs, size, off, lo, hi, k ? 0 : src);
		if (hi > di->size)
			di->size = hi;
		p->bytes += hi - lo;
	}
	if (p->bytes) {
		err = 0;
		di->mtime_ns = di->ctime_ns = now;
		fs_ino_dirty(fs, ino);
	}
out:
	if (err)
		dop_reset(p);
	fs_txn_end(fs);
	return err;
}

int avfs_fs_plan_zero_tail(struct avfs_fs *fs, uint64_t ino, uint64_t size,
			   struct avfs_data_plan *p)
{
	struct avfs_dinode *di;
	int err;

	dop_reset(p);
	if (avfs_fs_rdonly(fs))
		return -EROFS;
	if ((err = fs_file_get(fs, ino, &di)) || (err = dop_room(p, 1)))
		return err;
	if (di->small_units) {
		/* a small file about to grow by a truncate or a preallocation moves to a whole
		 * block first (only a plan can copy it), its tail zeroed on the way */
		uint64_t bs = avfs_fs_block_size(fs), src, sb0 = di->size < bs ? di->size : bs;
		uint32_t valid = di->direct[0].valid;
		struct avfs_bext e0;

		if (size != di->size)
			return -EINVAL;
		if ((err = fs_txn_begin(fs, FS_SMALL_BLOCKS, 0)))
			return err;
		if (!(err = fs_small_promote(fs, ino, di, &src)) &&
		    !(err = fs_block_read(fs, ino, di, 0, &e0)))
			plan_move(p, src, e0.dev_off, valid, sb0, valid);
		fs_txn_end(fs);
		return err;
	}
	return plan_tail(fs, ino, size, p);
}
