/*
 * fsio.c — the synchronous driver: runs plans, mounts (superblock, replay, load with repair
 * from the backup region), and executes the core's data plans (reads, zero-fills, page
 * read-modify-writes) in order. It computes no I/O rule itself. One request at a time; no
 * scheduling.
 */
#include "fsio.h"

#include "fs_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MB AVFS_MBLOCK
#define CHUNK (1u << 20)
#define PROGRESS_SLICE (16ull << 20)	/* run_plan reports progress this often */

int64_t avfs_fsio_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int dev_io(struct avfs_disk *d, enum avfs_disk_op op, uint64_t off, void *buf, uint64_t len,
		  bool fua)
{
	while (len) {
		uint32_t n = len > CHUNK ? CHUNK : (uint32_t)len;
		struct avfs_disk_req r = { .op = op, .flags = fua && n == len ? AVFS_DISK_FUA : 0,
					   .lba = off / d->info.lbs, .len = n, .buf = buf,
					   .buf_index = -1 };
		int64_t res = avfs_disk_io_sync(d, &r);

		if (res < 0)
			return (int)res;
		if (res != n)
			return -EIO;
		off += n;
		buf = (uint8_t *)buf + n;
		len -= n;
	}
	return 0;
}

static int dev_flush(struct avfs_disk *d)
{
	struct avfs_disk_req r = { .op = AVFS_DISK_FLUSH, .buf_index = -1 };
	int64_t res = avfs_disk_io_sync(d, &r);

	return res < 0 ? (int)res : 0;
}

static int run_plan(struct avfs_disk *d, const struct avfs_plan *p,
		    const struct avfs_fsio_progress *pg, const char *step)
{
	uint64_t total = 0, done = 0;

	for (size_t i = 0; pg && p && i < p->n; i++)
		total += p->ops[i].kind == AVFS_PLAN_FLUSH ? 0 : p->ops[i].len;
	for (size_t i = 0; p && i < p->n; i++) {
		const struct avfs_plan_op *o = &p->ops[i];
		int err = 0;

		if (o->kind == AVFS_PLAN_FLUSH) {
			err = dev_flush(d);
			if (err)
				return err;
			continue;
		}
		/* in slices, so that progress moves through a large op too (mkfs writes the
		 * inode table and the backup region in few of them); FUA on the last slice */
		for (uint64_t at = 0; at < o->len && !err; at += PROGRESS_SLICE) {
			uint64_t n = o->len - at < PROGRESS_SLICE ? o->len - at : PROGRESS_SLICE;

			err = dev_io(d, AVFS_DISK_WRITE, o->off + at, (uint8_t *)o->buf + at, n,
				     o->fua && at + n == o->len);
			done += n;
			if (pg)
				pg->fn(pg->arg, step, done, total);
		}
		if (err)
			return err;
	}
	return 0;
}

int avfs_fsio_run(struct avfs_disk *d, const struct avfs_plan *p)
{
	return run_plan(d, p, NULL, NULL);
}

static void *abuf(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 4096, len ? len : 4096) ? NULL : p;
}

int avfs_fsio_mkfs(struct avfs_disk *d, const struct avfs_mkfs_opts *o, struct avfs_super *out,
		   char *w, size_t wlen)
{
	return avfs_fsio_mkfs_progress(d, o, out, NULL, w, wlen);
}

int avfs_fsio_mkfs_progress(struct avfs_disk *d, const struct avfs_mkfs_opts *o,
			    struct avfs_super *out, const struct avfs_fsio_progress *pg, char *w,
			    size_t wlen)
{
	struct avfs_mkfs_opts opts = *o;
	struct avfs_super sb;
	struct avfs_fs *fs;
	struct avfs_plan *p;
	int err;

	if (!opts.size)
		opts.size = d->info.size;
	if (opts.size > d->info.size) {
		avfs_why(w, wlen, "--size %llu is larger than the device (%llu bytes)",
			 (unsigned long long)opts.size, (unsigned long long)d->info.size);
		return -EINVAL;
	}
	if (!opts.now_ns)
		opts.now_ns = avfs_fsio_now();
	err = avfs_fs_geometry(&opts, &sb, w, wlen);
	if (err)
		return err;
	if (pg)
		pg->fn(pg->arg, "building the metadata", 0, 0);
	err = avfs_fs_format(&sb, opts.now_ns, &fs, &p);
	if (err) {
		avfs_why(w, wlen, "cannot build the format in memory: %s", strerror(-err));
		return err;
	}
	err = run_plan(d, p, pg, "writing the metadata");
	if (err)
		avfs_why(w, wlen, "writing the format failed: %s", strerror(-err));
	if (out)
		*out = *avfs_fs_super(fs);
	avfs_plan_free(p);
	avfs_fs_close(fs);
	return err;
}

/* Read metadata block m's backup copy and take it if it is good. */
static int from_backup(struct avfs_fsio *io, uint64_t m, uint8_t *tmp)
{
	uint64_t off = avfs_fs_backup_off(&io->fs->sb, m);

	if (off == UINT64_MAX || dev_io(io->d, AVFS_DISK_READ, off, tmp, MB, false))
		return -EIO;
	return avfs_fs_verify_block(io->fs, m, tmp, 0);
}

static uint32_t expect_type(const struct avfs_super *sb, uint64_t m)
{
	if (m == 0)
		return AVFS_MT_SUPER;
	if (m < sb->itable_start)
		return AVFS_MT_BITMAP;
	if (m < sb->dyn_start)
		return AVFS_MT_INODES;
	return 0;	/* dynamic: map, dir or symlink */
}

/* Load metadata blocks [first, first + n) that are live, reading the primary in large
 * chunks and falling back to the backup copy block by block. */
static int load_range(struct avfs_fsio *io, uint64_t first, uint64_t n, unsigned flags,
		      struct avfs_mount_report *rep, char *w, size_t wlen)
{
	const struct avfs_super *sb = &io->fs->sb;
	uint8_t *buf = abuf(CHUNK), *tmp = abuf(MB);
	int err = 0;

	if (!buf || !tmp) {
		err = -ENOMEM;
		goto out;
	}
	for (uint64_t at = first; at < first + n;) {
		uint64_t cnt = first + n - at < CHUNK / MB ? first + n - at : CHUNK / MB;
		bool any = false, read_ok;

		if (io->pg)	/* the metadata blocks after the superblock and the journal */
			io->pg->fn(io->pg->arg, "loading the metadata",
				   (at - io->fs->sb.mbitmap_start) * MB,
				   (io->fs->sb.meta_blocks - io->fs->sb.mbitmap_start) * MB);

		for (uint64_t i = 0; i < cnt && !any; i++)
			any = avfs_fs_block_live(io->fs, at + i) && !avfs_fs_replayed(io->fs, at + i);
		if (!any) {
			at += cnt;
			continue;
		}
		read_ok = !dev_io(io->d, AVFS_DISK_READ, at * MB, buf, cnt * MB, false);
		for (uint64_t i = 0; i < cnt; i++) {
			uint64_t m = at + i;
			uint8_t *img = buf + i * MB;
			uint32_t t = expect_type(sb, m);
			bool pgood;

			if (!avfs_fs_block_live(io->fs, m) || avfs_fs_replayed(io->fs, m))
				continue;
			if (!read_ok)	/* one bad sector must not hide the rest: per block */
				read_ok = false, pgood = !dev_io(io->d, AVFS_DISK_READ, m * MB, img,
								 MB, false) &&
						 !avfs_fs_verify_block(io->fs, m, img, t);
			else
				pgood = !avfs_fs_verify_block(io->fs, m, img, t);
			if (flags & AVFS_MOUNT_CHECK_BACKUP && pgood) {
				if (from_backup(io, m, tmp) || memcmp(tmp, img, MB)) {
					rep->repaired_backup++;
					avfs_fs_mark_rewrite(io->fs, m, false, true);
				}
			}
			if (!pgood) {
				if (!from_backup(io, m, tmp) &&
				    (!t || ((struct avfs_mhdr *)tmp)->type == t)) {
					img = tmp;
					rep->repaired_primary++;
					/* rewritten home at once, and a home that refuses the write
					 * (a dead sector) does not refuse the mount: the backup copy
					 * serves again next time. Not a journaled change: the image
					 * is the one the home should hold, so no order matters */
					if (!(flags & AVFS_MOUNT_RDONLY) &&
					    dev_io(io->d, AVFS_DISK_WRITE, m * MB, tmp, MB, false))
						rep->rewrite_failed++;
				} else if (flags & AVFS_MOUNT_FORCE) {
					/* fsck rebuilds what it can: an empty block of the right kind */
					memset(tmp, 0, MB);
					fs_hdr_init(io->fs, tmp, m, t ? t : AVFS_MT_FREE);
					fs_seal(io->fs, tmp);
					img = tmp;
					rep->lost_blocks++;
					avfs_fs_mark_rewrite(io->fs, m, true, true);
				} else {
					avfs_why(w, wlen, "metadata block %llu is damaged in both "
						 "the primary and the backup region",
						 (unsigned long long)m);
					err = -EUCLEAN;
					goto out;
				}
			}
			err = avfs_fs_load(io->fs, m, img);
			if (err)
				goto out;
		}
		at += cnt;
	}
out:
	free(buf);
	free(tmp);
	return err;
}

/* AVFS_MOUNT_FORCE (fsck.avfs -y) lost a bitmap block in both copies and put an empty one in
 * its place: set again the bits that can be known. A metadata bitmap block: the static blocks
 * of its range, and every dynamic block there whose image (primary, else backup) is a sealed
 * map, directory or symlink block (so that it is loaded; the check then frees those nothing
 * reaches). An inode bitmap block: every inode of its range whose record has a mode. A data
 * bitmap block stays empty: the check finds the blocks files reach and marks them. */
static int rebuild_lost_bitmaps(struct avfs_fsio *io)
{
	struct avfs_fs *fs = io->fs;
	const struct avfs_super *sb = &fs->sb;
	uint8_t *img = abuf(MB);
	int err = img ? 0 : -ENOMEM;

	for (uint64_t m = sb->mbitmap_start; !err && m < sb->itable_start; m++) {
		uint64_t lo, hi;

		if (!avfs_bitmap_test(&fs->rewrite_p, m) || (m >= sb->dbitmap_start &&
		    m < sb->ibitmap_start))
			continue;	/* not lost (a lost one is to be rewritten), or data */
		if (m >= sb->ibitmap_start) {
			lo = (m - sb->ibitmap_start) * AVFS_BITS_PER_BLOCK;
			hi = lo + AVFS_BITS_PER_BLOCK < sb->ninodes ? lo + AVFS_BITS_PER_BLOCK : sb->ninodes;
			for (uint64_t i = lo; i < hi; i++)
				if (fs_ino_raw(fs, i + 1)->mode)
					fs_set_bit(fs, sb->ibitmap_start, i, true);
			continue;
		}
		lo = (m - sb->mbitmap_start) * AVFS_BITS_PER_BLOCK;
		hi = lo + AVFS_BITS_PER_BLOCK < fs->nmeta ? lo + AVFS_BITS_PER_BLOCK : fs->nmeta;
		for (uint64_t b = lo; b < hi; b++) {
			const struct avfs_mhdr *h = (const void *)img;

			if (b < sb->dyn_start) {
				fs_set_bit(fs, sb->mbitmap_start, b, true);
				continue;
			}
			if ((dev_io(io->d, AVFS_DISK_READ, b * MB, img, MB, false) ||
			     avfs_fs_verify_block(fs, b, img, 0)) && from_backup(io, b, img))
				continue;
			if (h->type == AVFS_MT_MAP || h->type == AVFS_MT_DIR ||
			    h->type == AVFS_MT_SYMLINK)
				fs_set_bit(fs, sb->mbitmap_start, b, true);
		}
	}
	free(img);
	return err;
}

/* Free the orphans (with even_open, the open ones too), committing each time the running
 * transaction fills and at the end. How many, or -errno. */
static int64_t free_orphans(struct avfs_fsio *io, bool even_open)
{
	int64_t n, total = 0;
	int err;

	while ((n = avfs_fs_free_orphans(io->fs, even_open)) != 0) {
		if (n < 0 && n != -EAGAIN)
			return n;
		total += n > 0 ? n : 0;
		if ((err = avfs_fsio_sync(io)))
			return err;
	}
	return total;
}

/* Read the journal, block by block where the whole read fails (an unreadable block reads as
 * zeros, which no check passes), and replay it. A journal that cannot be trusted — an
 * unreadable block where replay had to read, or where an anchor lies; a committed
 * transaction rejected; both anchors damaged — refuses the mount, pointing at fsck.avfs -y;
 * with AVFS_MOUNT_FORCE (fsck) what replayed stays and the rest is discarded, said in
 * rep->journal_why. */
static int replay(struct avfs_fsio *io, unsigned flags, struct avfs_mount_report *rep, char *w,
		  size_t wlen)
{
	const struct avfs_super *sb = &io->fs->sb;
	uint64_t jb = sb->journal_blocks, first_bad = UINT64_MAX;
	uint8_t *jbuf = abuf(jb * MB), *bad = calloc(jb, 1);
	struct avfs_replay r = { 0 };
	char why[200] = "";
	bool no_anchor;
	int err = -ENOMEM;

	if (!jbuf || !bad)
		goto out;
	if (dev_io(io->d, AVFS_DISK_READ, sb->journal_start * MB, jbuf, jb * MB, false)) {
		for (uint64_t i = 0; i < jb; i++) {
			if (!dev_io(io->d, AVFS_DISK_READ, (sb->journal_start + i) * MB,
				    jbuf + i * MB, MB, false))
				continue;
			memset(jbuf + i * MB, 0, MB);
			bad[i] = 1;
			rep->journal_unreadable++;
			if (first_bad == UINT64_MAX)
				first_bad = sb->journal_start + i;
		}
	}
	err = avfs_fs_replay(io->fs, jbuf, jbuf + MB, jbuf + 2 * MB, &r);
	if (err && err != -EUCLEAN)
		goto out;
	no_anchor = err == -EUCLEAN;
	rep->replayed_txn = r.ntxn;
	rep->replayed_blocks = r.nblocks;
	if (err) {
		snprintf(why, sizeof(why), "%s%s", avfs_fs_why(io->fs),
			 bad[0] || bad[1] ? " (unreadable)" : "");
	} else if (r.rejected_seq) {
		snprintf(why, sizeof(why), "%s", avfs_fs_why(io->fs));
	} else if (bad[0] || bad[1]) {
		snprintf(why, sizeof(why), "journal superblock (block %llu) is unreadable",
			 (unsigned long long)(sb->journal_start + !bad[0]));
	} else if (first_bad != UINT64_MAX) {
		for (uint64_t i = 0; i < r.reach && !why[0]; i++) {
			uint64_t k = 2 + (r.tail + i) % (jb - 2);

			if (bad[k])
				snprintf(why, sizeof(why), "journal block %llu, which replay needs, is "
					 "unreadable", (unsigned long long)(sb->journal_start + k));
		}
	}
	err = 0;
	if (!why[0])
		goto out;	/* unreadable blocks past what replay needed: rewritten in time */
	if ((flags & AVFS_MOUNT_FORCE) && !r.rejected_seq && (bad[0] || bad[1] || no_anchor)) {
		/* no anchor to trust: find the chain of transactions in the log itself */
		err = avfs_fs_replay_scan(io->fs, jbuf, jbuf + MB, jbuf + 2 * MB, &r);
		if (err)
			goto out;
		rep->replayed_txn = r.ntxn;
		rep->replayed_blocks = r.nblocks;
	}
	if (!(flags & AVFS_MOUNT_FORCE)) {
		avfs_why(w, wlen, "%s: run fsck.avfs -y (it replays what can be trusted and "
			 "discards the rest of the journal)", why);
		err = first_bad != UINT64_MAX && !r.rejected_seq ? -EIO : -EUCLEAN;
		goto out;
	}
	avfs_fs_journal_discard(io->fs, jbuf, jbuf + MB, jbuf + 2 * MB, bad + 2);
	rep->journal_discarded = true;
	snprintf(rep->journal_why, sizeof(rep->journal_why), "%s", why);
out:
	if (err == -ENOMEM)
		avfs_why(w, wlen, "out of memory reading the journal");
	free(bad);
	free(jbuf);
	return err;
}

int avfs_fsio_mount(struct avfs_disk *d, unsigned flags, struct avfs_fsio **out,
		    struct avfs_mount_report *rep_out, char *w, size_t wlen)
{
	return avfs_fsio_mount_progress(d, flags, NULL, out, rep_out, w, wlen);
}

int avfs_fsio_mount_progress(struct avfs_disk *d, unsigned flags,
			     const struct avfs_fsio_progress *pg, struct avfs_fsio **out,
			     struct avfs_mount_report *rep_out, char *w, size_t wlen)
{
	struct avfs_mount_report rep = { 0 };
	struct avfs_fsio *io = calloc(1, sizeof(*io));
	uint8_t *sbuf = abuf(MB);
	struct avfs_super sb;
	char w2[256];
	int err = -ENOMEM;

	if (!io || !sbuf)
		goto fail;
	io->d = d;
	io->pg = pg;
	if (d->info.size < 2 * MB) {
		avfs_why(w, wlen, "device of %llu bytes is too small to hold a file system",
			 (unsigned long long)d->info.size);
		err = -EINVAL;
		goto fail;
	}
	/* 1. the superblock, or its backup at the end of the device */
	err = dev_io(d, AVFS_DISK_READ, 0, sbuf, MB, false);
	if (err)
		avfs_why(w, wlen, "the superblock (block 0) is unreadable: %s", strerror(-err));
	else
		err = avfs_fs_check_super(sbuf, d->info.size, &sb, w, wlen);
	if (err) {
		int e2 = dev_io(d, AVFS_DISK_READ, avfs_fs_backup_super_off(d->info.size), sbuf, MB,
				false);

		if (!e2)
			e2 = avfs_fs_check_super(sbuf, d->info.size, &sb, w2, sizeof(w2));
		if (e2)
			goto fail;	/* report the primary's reason */
		rep.used_backup_super = true;
		rep.repaired_primary++;
	}
	err = avfs_fs_open(&sb, flags & (AVFS_MOUNT_RDONLY | AVFS_MOUNT_NOACL | AVFS_MOUNT_NOSMALL),
			   &io->fs);
	if (err)
		goto fail;
	if (rep.used_backup_super)
		avfs_fs_mark_rewrite(io->fs, 0, true, false);
	avfs_fs_load(io->fs, 0, sbuf);
	/* 2. the journal: replay committed transactions into memory */
	err = replay(io, flags, &rep, w, wlen);
	if (err)
		goto fail;
	/* the superblock image may have been replaced by replay: its CRC was checked there */
	if ((flags & AVFS_MOUNT_CHECK_BACKUP) && !avfs_fs_replayed(io->fs, 0)) {
		uint8_t *tmp = abuf(MB);

		if (tmp && (from_backup(io, 0, tmp) || memcmp(tmp + 4, sbuf + 4, MB - 4))) {
			rep.repaired_backup++;
			avfs_fs_mark_rewrite(io->fs, 0, false, true);
		}
		free(tmp);
	}
	/* 3. static blocks (bitmaps, inode table), then the live dynamic ones */
	err = load_range(io, sb.mbitmap_start, sb.dyn_start - sb.mbitmap_start, flags, &rep, w, wlen);
	if (!err && rep.lost_blocks)
		err = rebuild_lost_bitmaps(io);
	if (!err)
		err = load_range(io, sb.dyn_start, sb.meta_blocks - sb.dyn_start, flags, &rep, w,
				 wlen);
	if (err)
		goto fail;
	err = avfs_fs_mount_finish(io->fs, w, wlen);
	if (err)
		goto fail;
	/* 4. write what replay and repair changed, home and backup, and start a fresh log */
	if (!(flags & AVFS_MOUNT_RDONLY)) {
		struct avfs_plan *p;

		err = avfs_fs_recovery_plan(io->fs, &p);
		if (!err) {
			err = avfs_fsio_run(d, p);
			avfs_fs_plan_done(io->fs, p, err);
			avfs_plan_free(p);
		}
		if (err) {
			avfs_why(w, wlen, "writing the recovered metadata failed: %s", strerror(-err));
			goto fail;
		}
	}
	/* 5. files unlinked while open when the fs stopped: nothing can open them any more */
	if (!(flags & (AVFS_MOUNT_RDONLY | AVFS_MOUNT_KEEP_ORPHANS))) {
		int64_t n = free_orphans(io, false);

		if (n < 0) {
			err = (int)n;
			avfs_why(w, wlen, "freeing orphan inodes failed: %s", strerror(-err));
			goto fail;
		}
		rep.orphans_freed = (uint64_t)n;
	}
	io->autocommit = io->fs->log_blocks / 8;
	io->pg = NULL;	/* the caller's, for the mount only */
	free(sbuf);
	if (rep_out)
		*rep_out = rep;
	*out = io;
	return 0;
fail:
	if (rep_out)
		*rep_out = rep;
	free(sbuf);
	if (io)
		avfs_fs_close(io->fs);
	free(io);
	return err;
}

int64_t avfs_fsio_free_orphans(struct avfs_fsio *io)
{
	return avfs_fs_rdonly(io->fs) ? -EROFS : free_orphans(io, false);
}

/* Run the lazy checkpoint's plan (fs.h), if there is anything to write. 0 or -errno. */
static int checkpoint(struct avfs_fsio *io)
{
	struct avfs_plan *ck;
	int err = avfs_fs_checkpoint(io->fs, &ck);

	if (err || !ck)
		return err;
	err = avfs_fsio_run(io->d, ck);
	avfs_fs_plan_done(io->fs, ck, err);
	avfs_plan_free(ck);
	return err;
}

int avfs_fsio_sync(struct avfs_fsio *io)
{
	struct avfs_plan *p;
	int err = avfs_fs_commit(io->fs, avfs_fsio_now(), &p);

	if (err || !p)
		return err;
	if (p->after_ckpt)	/* it reuses the log: what is there goes home first */
		err = checkpoint(io);
	if (!err)
		err = avfs_fsio_run(io->d, p);
	avfs_fs_plan_done(io->fs, p, err);
	avfs_plan_free(p);
	if (err)
		return err;
	io->commits++;
	if (io->on_commit)
		io->on_commit(io->on_commit_arg, io->commits);
	return avfs_fs_checkpoint_due(io->fs) ? checkpoint(io) : 0;
}

int avfs_fsio_maybe_commit(struct avfs_fsio *io)
{
	if (avfs_fs_dirty_blocks(io->fs) < io->autocommit && !avfs_fs_commit_due(io->fs))
		return 0;
	return avfs_fsio_sync(io);
}

int avfs_fsio_unmount(struct avfs_fsio *io)
{
	struct avfs_plan *p;
	int err;

	err = avfs_fs_rdonly(io->fs) ? 0 : (int)free_orphans(io, true);
	err = err < 0 ? err : avfs_fsio_sync(io);

	if (!err && !avfs_fs_rdonly(io->fs)) {
		err = avfs_fs_journal_reset(io->fs, &p);
		if (!err) {
			err = avfs_fsio_run(io->d, p);
			avfs_fs_plan_done(io->fs, p, err);
			avfs_plan_free(p);
		}
	}
	avfs_fsio_abandon(io);
	return err;
}

void avfs_fsio_abandon(struct avfs_fsio *io)
{
	if (!io)
		return;
	avfs_fs_close(io->fs);
	free(io);
}

/* ---- data: a small synchronous executor of the core's data plans ---- */

/* A READ: the pages in pieces of at most CHUNK, the caller's part of each copied out. */
static int run_read(struct avfs_fsio *io, const struct avfs_dop *o, uint8_t *dst, uint8_t *bounce)
{
	for (uint64_t at = 0; at < o->dev_len; at += CHUNK) {
		uint64_t n = o->dev_len - at < CHUNK ? o->dev_len - at : CHUNK;
		uint64_t a = at > o->skip ? at : o->skip;
		uint64_t b = at + n < o->skip + o->len ? at + n : o->skip + o->len;
		int err;

		if (a >= b)
			continue;
		if ((err = dev_io(io->d, AVFS_DISK_READ, o->dev_off + at, bounce, n, false)))
			return err;
		memcpy(dst + o->buf_off + (a - o->skip), bounce + (a - at), b - a);
	}
	return 0;
}

/* A WRITE: each piece is zeros, the kept head and tail read from the device first (from
 * src_off when a small file moves: then the head may span pages), and the caller's bytes. */
static int run_write(struct avfs_fsio *io, const struct avfs_dop *o, const uint8_t *src,
		     uint8_t *bounce, uint8_t *page)
{
	uint64_t src_off = o->src_off ? o->src_off : o->dev_off;	/* kept bytes' home */

	for (uint64_t at = 0; at < o->dev_len; at += CHUNK) {
		uint64_t n = o->dev_len - at < CHUNK ? o->dev_len - at : CHUNK;
		uint64_t a = at > o->skip ? at : o->skip;
		uint64_t b = at + n < o->skip + o->len ? at + n : o->skip + o->len;
		int err;

		memset(bounce, 0, n);
		if (o->keep_head > AVFS_PAGE && at < o->keep_head) {
			/* a move's pages: [at, keep_head) of this piece from the old place */
			uint64_t k = o->keep_head - at < n ? o->keep_head - at : n;
			uint64_t kp = (k + AVFS_PAGE - 1) / AVFS_PAGE * AVFS_PAGE;

			if ((err = dev_io(io->d, AVFS_DISK_READ, src_off + at, bounce, kp, false)))
				return err;
			memset(bounce + k, 0, kp - k);
		} else if (at == 0 && o->keep_head) {
			if ((err = dev_io(io->d, AVFS_DISK_READ, src_off, page, AVFS_PAGE, false)))
				return err;
			memcpy(bounce, page, o->keep_head);
		}
		if (at + n == o->dev_len && o->keep_tail) {
			if ((err = dev_io(io->d, AVFS_DISK_READ, src_off + o->dev_len - AVFS_PAGE,
					  page, AVFS_PAGE, false)))
				return err;
			memcpy(bounce + n - o->keep_tail, page + AVFS_PAGE - o->keep_tail, o->keep_tail);
		}
		if (!(o->flags & AVFS_DOP_ZEROS) && a < b)
			memcpy(bounce + (a - at), src + o->buf_off + (a - o->skip), b - a);
		if ((err = dev_io(io->d, AVFS_DISK_WRITE, o->dev_off + at, bounce, n, false)))
			return err;
	}
	return 0;
}

int avfs_fsio_run_data(struct avfs_fsio *io, const struct avfs_data_plan *p, void *dstv,
		       const void *srcv)
{
	uint8_t *dst = dstv;
	const uint8_t *src = srcv;
	uint8_t *bounce = abuf(CHUNK), *page = abuf(AVFS_PAGE);
	int err = bounce && page ? 0 : -ENOMEM;

	for (size_t i = 0; i < p->n && !err; i++) {
		const struct avfs_dop *o = &p->ops[i];

		if (o->kind == AVFS_DOP_READ)
			err = run_read(io, o, dst, bounce);
		else if (o->kind == AVFS_DOP_ZERO)
			memset(dst + o->buf_off, 0, o->len);
		else
			err = run_write(io, o, src, bounce, page);
	}
	free(bounce);
	free(page);
	return err;
}

int64_t avfs_fsio_read(struct avfs_fsio *io, uint64_t ino, uint64_t off, void *buf, size_t len)
{
	struct avfs_data_plan p;
	int64_t done;
	int err;

	avfs_data_plan_init(&p);
	err = avfs_fs_plan_read(io->fs, ino, off, len, &p);
	if (!err)
		err = avfs_fsio_run_data(io, &p, buf, NULL);
	done = (int64_t)p.bytes;
	avfs_data_plan_free(&p);
	return err ? err : done;
}

int64_t avfs_fsio_write(struct avfs_fsio *io, uint64_t ino, uint64_t off, const void *buf,
			size_t len)
{
	struct avfs_data_plan p;
	size_t done = 0;
	int err = 0;

	avfs_data_plan_init(&p);
	do {	/* a plan may be short: a transaction holds only so much */
		err = avfs_fs_plan_write(io->fs, ino, off + done, len - done, avfs_fsio_now(), &p);
		if (err == -EAGAIN && !(err = avfs_fsio_sync(io)))
			err = avfs_fs_plan_write(io->fs, ino, off + done, len - done,
						 avfs_fsio_now(), &p);	/* room now */
		if (err || (err = avfs_fsio_run_data(io, &p, NULL, (const uint8_t *)buf + done)))
			break;
		done += p.bytes;
		err = avfs_fsio_maybe_commit(io);
	} while (!err && done < len);
	avfs_data_plan_free(&p);
	/* out of space after a part: a short write */
	return done && err == -ENOSPC ? (int64_t)done : err ? err : (int64_t)done;
}

/* The size of ino is about to grow past `size` (its size now): zero the stale bytes past it
 * in its page first, so that they never show inside the file, even after a crash. */
static int zero_tail(struct avfs_fsio *io, uint64_t ino, uint64_t size)
{
	struct avfs_data_plan p;
	int err;

	avfs_data_plan_init(&p);
	err = avfs_fs_plan_zero_tail(io->fs, ino, size, &p);
	if (err == -EAGAIN && !(err = avfs_fsio_sync(io)))
		err = avfs_fs_plan_zero_tail(io->fs, ino, size, &p);
	if (!err)
		err = avfs_fsio_run_data(io, &p, NULL, NULL);
	avfs_data_plan_free(&p);
	return err;
}

int avfs_fsio_truncate(struct avfs_fsio *io, uint64_t ino, uint64_t size)
{
	struct avfs_stat st;
	int err = avfs_fs_getattr(io->fs, ino, &st);

	if (!err && size > st.size)
		err = zero_tail(io, ino, st.size);
	if (err)
		return err;
	st.size = size;
	err = avfs_fs_setattr(io->fs, ino, AVFS_SET_SIZE, &st, avfs_fsio_now());
	if (err == -EAGAIN && !(err = avfs_fsio_sync(io)))
		err = avfs_fs_setattr(io->fs, ino, AVFS_SET_SIZE, &st, avfs_fsio_now());
	return err ? err : avfs_fsio_maybe_commit(io);
}

int avfs_fsio_fallocate(struct avfs_fsio *io, uint64_t ino, uint64_t off, uint64_t len,
			bool keep_size)
{
	struct avfs_stat st;
	int err = avfs_fs_getattr(io->fs, ino, &st);

	if (!err && ((!keep_size && off + len > st.size && off + len > off) ||
		     avfs_fs_small_past(io->fs, ino, off + len)))
		err = zero_tail(io, ino, st.size);	/* (and a small file moved out) */
	if (!err)
		err = avfs_fs_fallocate(io->fs, ino, off, len, keep_size, avfs_fsio_now());
	if (err == -EAGAIN && !(err = avfs_fsio_sync(io)))
		err = avfs_fs_fallocate(io->fs, ino, off, len, keep_size, avfs_fsio_now());
	return err ? err : avfs_fsio_maybe_commit(io);
}

int avfs_fsio_punch(struct avfs_fsio *io, uint64_t ino, uint64_t off, uint64_t len)
{
	static const uint8_t zeros[1 << 16];
	struct avfs_range z[2];
	unsigned n = 0;
	int err = avfs_fs_punch(io->fs, ino, off, len, avfs_fsio_now(), z, &n);

	if (err == -EAGAIN && !(err = avfs_fsio_sync(io)))
		err = avfs_fs_punch(io->fs, ino, off, len, avfs_fsio_now(), z, &n);
	for (unsigned i = 0; i < n && !err; i++)
		for (uint64_t at = 0; at < z[i].len && !err;) {
			uint64_t k = z[i].len - at < sizeof(zeros) ? z[i].len - at : sizeof(zeros);
			int64_t r = avfs_fsio_write(io, ino, z[i].off + at, zeros, (size_t)k);

			err = r < 0 ? (int)r : 0;
			at += k;
		}
	return err ? err : avfs_fsio_maybe_commit(io);
}

int avfs_fsio_resolve(struct avfs_fsio *io, const char *path, uint64_t *out)
{
	uint64_t ino = AVFS_ROOT_INO;
	char name[AVFS_NAME_MAX + 1];

	if (!path || path[0] != '/')
		return -EINVAL;
	while (*path) {
		size_t n;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		n = strcspn(path, "/");
		if (n > AVFS_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, path, n);
		name[n] = 0;
		int err = avfs_fs_lookup(io->fs, ino, name, &ino);

		if (err)
			return err;
		path += n;
	}
	*out = ino;
	return 0;
}
