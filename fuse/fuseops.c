/*
 * fuseops.c — the FUSE front end of avfsd (libfuse3 low-level API, SPEC §9): namespace and
 * attribute operations answer at once from the in-memory core (durable at the next commit);
 * reads and writes become best-effort device requests through the traffic mixer and are
 * answered when they complete, so no thread ever blocks on the disk. Pages past the
 * initialized part of a block read as zeros; partial pages are read-modify-written.
 */
#include "avfsd_i.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <linux/falloc.h>

#define PAGE AVFS_PAGE

static struct daemon *dm_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void to_stat(const struct avfs_stat *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks512;
	st->st_blksize = (blksize_t)a->blksize;
	st->st_atim.tv_sec = a->atime_ns / 1000000000;
	st->st_atim.tv_nsec = a->atime_ns % 1000000000;
	st->st_mtim.tv_sec = a->mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = a->mtime_ns % 1000000000;
	st->st_ctim.tv_sec = a->ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = a->ctime_ns % 1000000000;
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void reply_entry(fuse_req_t req, struct daemon *dm, uint64_t ino)
{
	struct fuse_entry_param e = { 0 };
	struct avfs_stat a;
	int err = avfs_fs_getattr(dm->fs, ino, &a);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	e.ino = ino;
	e.generation = a.generation;
	to_stat(&a, &e.attr);
	e.attr_timeout = 0;	/* libavio writes change sizes behind the kernel's back */
	e.entry_timeout = 1.0;
	fuse_reply_entry(req, &e);
}

/* fi->fh of a FUSE file that holds an open reference of its inode (avfs_fs_open_ref): an
 * unlinked file lives until its last release. */
#define FH_OPEN_REF 1

static void after_change(struct daemon *dm)
{
	/* keep transactions small enough for the journal */
	if (avfs_fs_dirty_blocks(dm->fs) > 64)
		avfsd_commit_soon(dm);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = 1u << 20;	/* SPEC §9: large requests where the kernel allows */
	conn->max_read = 1u << 20;	/* must match the max_read mount option */
	conn->max_readahead = 1u << 20;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct daemon *dm = dm_of(req);
	uint64_t ino;
	int err = avfs_fs_lookup(dm->fs, parent, name, &ino);

	if (err)
		fuse_reply_err(req, -err);
	else
		reply_entry(req, dm, ino);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino, (void)nlookup;
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct avfs_stat a;
	struct stat st;
	int err = avfs_fs_getattr(dm_of(req)->fs, ino, &a);

	(void)fi;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	to_stat(&a, &st);
	fuse_reply_attr(req, &st, 0);
}

/* ---- data: writes (with page read-modify-write) ---- */

struct wop {			/* one FUSE write (or an internal zero fill) */
	fuse_req_t req;
	struct daemon *dm;
	uint64_t ino;
	int pending;
	int err;
	size_t reply;		/* bytes to report */
	struct avfs_stat setsize;	/* truncate-up: apply after the zero fill */
	bool do_setsize;
};

struct wpart {			/* one block's pages of a write */
	struct wop *w;
	uint64_t dev;		/* device offset of the first page */
	uint8_t *buf;		/* the pages */
	size_t len;
	int reads;		/* partial pages still being read */
	uint8_t *rbuf[2];
	uint64_t roff[2];	/* offset of each read page inside buf */
};

static void wop_put(struct wop *w)
{
	if (--w->pending > 0)
		return;
	if (w->err) {
		if (w->req)
			fuse_reply_err(w->req, -w->err);
	} else if (w->do_setsize) {
		int err = avfs_fs_setattr(w->dm->fs, w->ino, AVFS_SET_SIZE, &w->setsize, wall_ns());
		struct avfs_stat a;
		struct stat st;

		if (!err)
			err = avfs_fs_getattr(w->dm->fs, w->ino, &a);
		if (err) {
			fuse_reply_err(w->req, -err);
		} else {
			to_stat(&a, &st);
			fuse_reply_attr(w->req, &st, 0);
		}
		after_change(w->dm);
	} else if (w->req) {
		fuse_reply_write(w->req, w->reply);
	}
	free(w);
}

static void part_written(struct daemon *dm, struct dreq *q, int res)
{
	struct wpart *p = q->arg;

	(void)dm;
	if (res < 0 && !p->w->err)
		p->w->err = res;
	free(p->buf);
	wop_put(p->w);
	free(p);
	avfsd_dreq_free(q);
}

static void part_write_now(struct wpart *p)
{
	struct dreq *q = avfsd_dreq(p->dev, p->len, true, p->buf, part_written, p);

	if (q)
		q->data_write = true;
	if (!q || avfsd_submit(p->w->dm, q)) {
		if (!p->w->err)
			p->w->err = -EIO;
		free(p->buf);
		wop_put(p->w);
		free(p);
		avfsd_dreq_free(q);
	}
}

static void part_page_read(struct daemon *dm, struct dreq *q, int res)
{
	struct wpart *p = q->arg;

	(void)dm;
	if (res < 0 && !p->w->err)
		p->w->err = res;
	avfsd_dreq_free(q);
	if (--p->reads > 0)
		return;
	for (int i = 0; i < 2; i++) {
		if (!p->rbuf[i])
			continue;
		free(p->rbuf[i]);
		p->rbuf[i] = NULL;
	}
	if (p->w->err) {
		free(p->buf);
		wop_put(p->w);
		free(p);
		return;
	}
	part_write_now(p);
}

/* The partial first/last page keeps the bytes around the new data: read them first (only
 * from an initialized page; others are zeros). Merge happens by reading into a scratch page
 * and copying the parts the write does not cover. */
struct merge {
	struct wpart *p;
	uint8_t *page;
	size_t at;		/* page offset inside p->buf */
	size_t keep_lo, keep_hi;	/* bytes of the page to take from disk: [0, lo) and [hi, PAGE) */
};

static void merge_done(struct daemon *dm, struct dreq *q, int res)
{
	struct merge *m = q->arg;
	struct wpart *p = m->p;

	if (res >= 0) {
		memcpy(p->buf + m->at, m->page, m->keep_lo);
		memcpy(p->buf + m->at + m->keep_hi, m->page + m->keep_hi, PAGE - m->keep_hi);
	}
	free(m->page);
	q->arg = p;
	free(m);
	part_page_read(dm, q, res);
}

/* Write [off, off + len) of ino from data (NULL: zeros). The caller holds w->pending. */
static int write_range(struct daemon *dm, struct wop *w, uint64_t off, const uint8_t *data,
		       size_t len)
{
	uint64_t bs = avfs_fs_block_size(dm->fs);
	struct avfs_bext ext[8];
	size_t done = 0;

	while (done < len) {
		int n = avfs_fs_map_write(dm->fs, w->ino, off + done, len - done, wall_ns(), ext, 8);

		if (n <= 0)
			return n < 0 ? n : -EIO;
		for (int i = 0; i < n && done < len; i++) {
			uint64_t lo = off + done, hi = ext[i].file_off + bs;
			uint64_t p0, p1;
			struct wpart *p;

			if (hi > off + len)
				hi = off + len;
			p0 = (lo - ext[i].file_off) / PAGE;
			p1 = (hi - ext[i].file_off + PAGE - 1) / PAGE;
			/* never-initialized pages before the data become zeros on disk */
			for (uint64_t z = ext[i].valid; z < p0;) {
				uint64_t cnt = p0 - z > 256 ? 256 : p0 - z;
				struct wpart *zp = calloc(1, sizeof(*zp));

				if (!zp)
					return -ENOMEM;
				zp->w = w;
				zp->dev = ext[i].dev_off + z * PAGE;
				zp->len = cnt * PAGE;
				zp->buf = avfsd_alloc(zp->len);
				if (!zp->buf) {
					free(zp);
					return -ENOMEM;
				}
				memset(zp->buf, 0, zp->len);
				w->pending++;
				part_write_now(zp);
				z += cnt;
			}
			p = calloc(1, sizeof(*p));
			if (!p)
				return -ENOMEM;
			p->w = w;
			p->dev = ext[i].dev_off + p0 * PAGE;
			p->len = (p1 - p0) * PAGE;
			p->buf = avfsd_alloc(p->len);
			if (!p->buf) {
				free(p);
				return -ENOMEM;
			}
			memset(p->buf, 0, p->len);
			if (data)
				memcpy(p->buf + (lo - ext[i].file_off - p0 * PAGE), data + done, hi - lo);
			w->pending++;
			p->reads = 1;	/* a guard while the page reads are being issued */
			for (uint64_t pg = p0; pg < p1; pg = pg + 1 < p1 - 1 ? p1 - 1 : pg + 1) {
				uint64_t pgs = ext[i].file_off + pg * PAGE;
				size_t c0 = (size_t)((lo > pgs ? lo : pgs) - pgs);
				size_t c1 = (size_t)((hi < pgs + PAGE ? hi : pgs + PAGE) - pgs);
				struct merge *m;
				struct dreq *q;

				/* a page the write covers whole, or one never initialized (zeros), is
				 * not read */
				if ((c0 == 0 && c1 == PAGE) || pg >= ext[i].valid)
					continue;
				m = calloc(1, sizeof(*m));
				if (!m)
					return -ENOMEM;
				m->p = p;
				m->page = avfsd_alloc(PAGE);
				m->at = (size_t)(pg - p0) * PAGE;
				m->keep_lo = c0;
				m->keep_hi = c1;
				q = m->page ? avfsd_dreq(ext[i].dev_off + pg * PAGE, PAGE, false, m->page,
							 merge_done, m) : NULL;
				p->reads++;
				if (!q || avfsd_submit(dm, q)) {
					p->reads--;
					free(m->page);
					free(m);
					avfsd_dreq_free(q);
					return -EIO;
				}
			}
			if (!--p->reads)	/* no page had to be read: write now */
				part_write_now(p);
			done += hi - lo;
		}
	}
	return 0;
}

/* Zero the stale bytes past the current end inside its page before the size grows. */
static int zero_tail(struct daemon *dm, struct wop *w, uint64_t size)
{
	uint64_t dev;
	uint32_t keep;
	int err = avfs_fs_tail_page(dm->fs, w->ino, size, &dev, &keep);

	if (err)
		return err > 0 ? 0 : err;
	return write_range(dm, w, size, NULL, PAGE - keep);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);
	struct wop *w = calloc(1, sizeof(*w));
	struct avfs_stat a;
	int err;

	(void)fi;
	if (!w) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*w = (struct wop){ .req = req, .dm = dm, .ino = ino, .pending = 1, .reply = size };
	avfsd_ra_invalidate(dm, ino);
	err = avfs_fs_getattr(dm->fs, ino, &a);
	if (!err && off < 0)
		err = -EINVAL;
	if (!err && size && (uint64_t)off + size > a.size && (uint64_t)off > a.size)
		err = zero_tail(dm, w, a.size);
	if (!err && size)
		err = write_range(dm, w, (uint64_t)off, (const uint8_t *)buf, size);
	if (err && !w->err)
		w->err = err;
	after_change(dm);
	wop_put(w);
}

/* ---- data: reads ---- */

struct rop {
	fuse_req_t req;
	struct daemon *dm;
	uint8_t *out;
	size_t len;		/* bytes read (the request plus read-ahead) */
	size_t reply;		/* bytes the request asked for */
	uint64_t ino, off;
	int pending;
	int err;
};

#define RA_WINDOW (2u << 20)	/* read ahead this far, inside the data block */

void avfsd_ra_invalidate(struct daemon *dm, uint64_t ino)
{
	for (int i = 0; i < 8; i++) {
		if (dm->ra[i].buf && dm->ra[i].ino == ino) {
			free(dm->ra[i].buf);
			dm->ra[i].buf = NULL;
		}
	}
}

static void ra_store(struct daemon *dm, uint64_t ino, uint64_t off, uint8_t *buf, size_t len)
{
	int v = 0;

	for (int i = 0; i < 8; i++) {
		if (!dm->ra[i].buf) {
			v = i;
			break;
		}
		if (dm->ra[i].used < dm->ra[v].used)
			v = i;
	}
	free(dm->ra[v].buf);
	dm->ra[v] = (struct ra_entry){ .ino = ino, .off = off, .len = len, .buf = buf,
				       .used = ++dm->ra_clock };
}

/* Serve [off, off + len) from read-ahead if it is all there. */
static bool ra_hit(struct daemon *dm, fuse_req_t req, uint64_t ino, uint64_t off, size_t len)
{
	for (int i = 0; i < 8; i++) {
		struct ra_entry *e = &dm->ra[i];

		if (e->buf && e->ino == ino && off >= e->off && off + len <= e->off + e->len) {
			e->used = ++dm->ra_clock;
			fuse_reply_buf(req, (const char *)e->buf + (off - e->off), len);
			return true;
		}
	}
	return false;
}

/* A read continuing where cached data ends is sequential: worth reading ahead. */
static bool ra_sequential(struct daemon *dm, uint64_t ino, uint64_t off)
{
	for (int i = 0; i < 8; i++)
		if (dm->ra[i].buf && dm->ra[i].ino == ino && dm->ra[i].off + dm->ra[i].len == off)
			return true;
	return off == 0;
}

struct rpart {
	struct rop *r;
	uint8_t *buf;
	size_t skip, copy, at;
};

static void rop_put(struct rop *r)
{
	if (--r->pending > 0)
		return;
	if (r->err) {
		fuse_reply_err(r->req, -r->err);
		free(r->out);
	} else {
		fuse_reply_buf(r->req, (const char *)r->out, r->reply);
		if (r->len > r->reply)
			ra_store(r->dm, r->ino, r->off, r->out, r->len);	/* keeps r->out */
		else
			free(r->out);
	}
	free(r);
}

static void rpart_done(struct daemon *dm, struct dreq *q, int res)
{
	struct rpart *p = q->arg;

	(void)dm;
	if (res < 0 && !p->r->err)
		p->r->err = res;
	else
		memcpy(p->r->out + p->at, p->buf + p->skip, p->copy);
	free(p->buf);
	rop_put(p->r);
	free(p);
	avfsd_dreq_free(q);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);
	uint64_t bs = avfs_fs_block_size(dm->fs), pos, end;
	struct avfs_bext ext[8];
	struct avfs_stat a;
	struct rop *r;
	int err = avfs_fs_getattr(dm->fs, ino, &a);

	(void)fi;
	if (err || off < 0) {
		fuse_reply_err(req, err ? -err : EINVAL);
		return;
	}
	if ((uint64_t)off >= a.size || !size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	end = (uint64_t)off + size > a.size ? a.size : (uint64_t)off + size;
	if (ra_hit(dm, req, ino, (uint64_t)off, end - (uint64_t)off))
		return;
	r = calloc(1, sizeof(*r));
	if (!r) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r->reply = end - (uint64_t)off;
	/* SPEC §9: read ahead inside the large data block when the file is read in order */
	if (ra_sequential(dm, ino, (uint64_t)off)) {
		uint64_t blk_end = ((uint64_t)off / bs + 1) * bs;
		uint64_t want = (uint64_t)off + RA_WINDOW;

		want = want < blk_end ? want : blk_end;
		want = want < a.size ? want : a.size;
		if (want > end)
			end = want;
	}
	r->out = calloc(1, end - (uint64_t)off + 1);
	if (!r->out) {
		free(r);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r->req = req;
	r->dm = dm;
	r->ino = ino;
	r->off = (uint64_t)off;
	r->len = end - (uint64_t)off;
	r->pending = 1;
	pos = (uint64_t)off;
	while (pos < end && !r->err) {
		int n = avfs_fs_map_read(dm->fs, ino, pos, end - pos, ext, 8);

		if (n <= 0) {
			r->err = n < 0 ? n : -EIO;
			break;
		}
		for (int i = 0; i < n && pos < end; i++) {
			uint64_t hi = ext[i].file_off + bs < end ? ext[i].file_off + bs : end;
			uint64_t vend = ext[i].dev_off ? ext[i].file_off + (uint64_t)ext[i].valid * PAGE
						       : ext[i].file_off;
			uint64_t rend = vend < hi ? vend : hi;

			/* initialized pages from the device, the rest stays zero */
			if (pos < rend) {
				uint64_t a0 = pos / PAGE * PAGE, b0 = (rend + PAGE - 1) / PAGE * PAGE;
				struct rpart *p = calloc(1, sizeof(*p));
				struct dreq *q;

				if (!p) {
					r->err = -ENOMEM;
					break;
				}
				p->r = r;
				p->buf = avfsd_alloc(b0 - a0);
				p->skip = pos - a0;
				p->copy = rend - pos;
				p->at = pos - (uint64_t)off;
				q = avfsd_dreq(ext[i].dev_off + (a0 - ext[i].file_off), b0 - a0, false,
					       p->buf, rpart_done, p);
				r->pending++;
				if (!p->buf || !q || avfsd_submit(dm, q)) {
					r->err = -EIO;
					r->pending--;
					free(p->buf);
					free(p);
					avfsd_dreq_free(q);
					break;
				}
			}
			pos = hi;
		}
	}
	rop_put(r);
}

/* ---- namespace ---- */

static const struct fuse_ctx *ctx(fuse_req_t req)
{
	return fuse_req_ctx(req);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct daemon *dm = dm_of(req);
	uint64_t ino;
	int err = avfs_fs_mknod(dm->fs, parent, name, mode & ~ctx(req)->umask, ctx(req)->uid,
				ctx(req)->gid, wall_ns(), &ino);

	(void)rdev;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	avfsd_ra_invalidate(dm, ino);	/* a reused inode number starts clean */
	after_change(dm);
	reply_entry(req, dm, ino);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);
	struct fuse_entry_param e = { 0 };
	struct avfs_stat a;
	uint64_t ino;
	int err = avfs_fs_mknod(dm->fs, parent, name, S_IFREG | (mode & 07777 & ~ctx(req)->umask),
				ctx(req)->uid, ctx(req)->gid, wall_ns(), &ino);

	if (!err)
		err = avfs_fs_getattr(dm->fs, ino, &a);
	if (!err)
		err = avfs_fs_open_ref(dm->fs, ino);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	avfsd_ra_invalidate(dm, ino);	/* a reused inode number starts clean */
	after_change(dm);
	fi->fh = FH_OPEN_REF;
	e.ino = ino;
	e.generation = a.generation;
	to_stat(&a, &e.attr);
	e.entry_timeout = 1.0;
	fi->direct_io = 1;	/* no page cache between applications and the mixer */
	fuse_reply_create(req, &e, fi);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct daemon *dm = dm_of(req);
	uint64_t ino;
	int err = avfs_fs_mkdir(dm->fs, parent, name, mode & ~ctx(req)->umask, ctx(req)->uid,
				ctx(req)->gid, wall_ns(), &ino);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	after_change(dm);
	reply_entry(req, dm, ino);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct daemon *dm = dm_of(req);
	uint64_t ino;
	int err = avfs_fs_symlink(dm->fs, parent, name, link, ctx(req)->uid, ctx(req)->gid,
				  wall_ns(), &ino);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	after_change(dm);
	reply_entry(req, dm, ino);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[AVFS_SYMLINK_MAX + 1];
	int n = avfs_fs_readlink(dm_of(req)->fs, ino, buf, sizeof(buf));

	if (n < 0)
		fuse_reply_err(req, -n);
	else
		fuse_reply_readlink(req, buf);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	struct daemon *dm = dm_of(req);
	int err = avfs_fs_link(dm->fs, ino, parent, name, wall_ns());

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	after_change(dm);
	reply_entry(req, dm, ino);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct daemon *dm = dm_of(req);
	uint64_t ino;
	int err;

	if (!avfs_fs_lookup(dm->fs, parent, name, &ino))
		avfsd_ra_invalidate(dm, ino);
	err = avfs_fs_unlink(dm->fs, parent, name, wall_ns());

	after_change(dm);
	fuse_reply_err(req, -err);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct daemon *dm = dm_of(req);
	int err = avfs_fs_rmdir(dm->fs, parent, name, wall_ns());

	after_change(dm);
	fuse_reply_err(req, -err);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct daemon *dm = dm_of(req);
	unsigned f = (flags & RENAME_NOREPLACE ? AVFS_RENAME_NOREPLACE : 0) |
		     (flags & RENAME_EXCHANGE ? AVFS_RENAME_EXCHANGE : 0);
	int err = flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE) ? -EINVAL :
		  avfs_fs_rename(dm->fs, parent, name, newparent, newname, f, wall_ns());

	after_change(dm);
	fuse_reply_err(req, -err);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);
	struct avfs_stat a = { 0 }, cur;
	unsigned set = 0;
	struct stat st;
	int err = avfs_fs_getattr(dm->fs, ino, &cur);

	avfsd_ra_invalidate(dm, ino);
	(void)fi;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	if (to_set & FUSE_SET_ATTR_MODE)
		set |= AVFS_SET_MODE, a.mode = attr->st_mode;
	if (to_set & FUSE_SET_ATTR_UID)
		set |= AVFS_SET_UID, a.uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		set |= AVFS_SET_GID, a.gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME)
		set |= AVFS_SET_ATIME, a.atime_ns = to_set & FUSE_SET_ATTR_ATIME_NOW ? wall_ns() :
			attr->st_atim.tv_sec * 1000000000ll + attr->st_atim.tv_nsec;
	if (to_set & FUSE_SET_ATTR_MTIME)
		set |= AVFS_SET_MTIME, a.mtime_ns = to_set & FUSE_SET_ATTR_MTIME_NOW ? wall_ns() :
			attr->st_mtim.tv_sec * 1000000000ll + attr->st_mtim.tv_nsec;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (attr->st_size < 0) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		a.size = (uint64_t)attr->st_size;
		/* growing over a partly written last page: zero its tail first, then resize */
		if (a.size > cur.size && cur.size % PAGE) {
			struct wop *w = calloc(1, sizeof(*w));

			if (!w) {
				fuse_reply_err(req, ENOMEM);
				return;
			}
			if (set) {
				err = avfs_fs_setattr(dm->fs, ino, set, &a, wall_ns());
				if (err) {
					free(w);
					fuse_reply_err(req, -err);
					return;
				}
			}
			*w = (struct wop){ .req = req, .dm = dm, .ino = ino, .pending = 1,
					   .setsize = a, .do_setsize = true };
			err = zero_tail(dm, w, cur.size);
			if (err)
				w->err = err;
			wop_put(w);
			return;
		}
		set |= AVFS_SET_SIZE;
	}
	err = avfs_fs_setattr(dm->fs, ino, set, &a, wall_ns());
	if (!err)
		err = avfs_fs_getattr(dm->fs, ino, &cur);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	after_change(dm);
	to_stat(&cur, &st);
	fuse_reply_attr(req, &st, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);
	struct avfs_stat a;
	int err = avfs_fs_getattr(dm->fs, ino, &a);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	if (S_ISDIR(a.mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY && a.size) {
		avfsd_ra_invalidate(dm, ino);
		struct avfs_stat z = { .size = 0 };

		err = avfs_fs_setattr(dm->fs, ino, AVFS_SET_SIZE, &z, wall_ns());
		if (err) {
			fuse_reply_err(req, -err);
			return;
		}
		after_change(dm);
	}
	err = avfs_fs_open_ref(dm->fs, ino);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	fi->fh = FH_OPEN_REF;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);

	/* the last handle of a file unlinked while open frees it (the kernel sends RELEASE once
	 * no read or write of this handle is left, so none of its I/O is in flight) */
	if (fi->fh == FH_OPEN_REF && avfs_fs_open_unref(dm->fs, ino) == 1) {
		avfsd_ra_invalidate(dm, ino);
		after_change(dm);
	}
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);
	struct fsync_wait *w = calloc(1, sizeof(*w));

	(void)ino, (void)datasync, (void)fi;
	if (!w) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* data writes are already complete (replies come after the device); the commit makes
	 * them reachable and the metadata durable */
	w->req = req;
	w->after = dm->commits_done + (dm->plan ? 1 : 0);
	w->next = dm->fsyncs;
	dm->fsyncs = w;
	avfsd_commit_soon(dm);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	op_fsync(req, ino, datasync, fi);
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	struct daemon *dm;
};

static int fill(void *arg, const char *name, uint64_t ino, uint32_t type, uint64_t next)
{
	struct dirbuf *b = arg;
	struct stat st = { .st_ino = ino, .st_mode = type << 12 };
	size_t n = fuse_add_direntry(b->req, b->buf + b->used, b->size - b->used, name, &st,
				     (off_t)next);

	if (n > b->size - b->used)
		return 1;	/* full: the kernel asks again from this cookie */
	b->used += n;
	return 0;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirbuf b = { .req = req, .size = size, .dm = dm_of(req) };
	int err;

	(void)fi;
	b.buf = malloc(size ? size : 1);
	if (!b.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = avfs_fs_readdir(b.dm->fs, ino, (uint64_t)off, fill, &b);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, b.buf, b.used);
	free(b.buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct avfs_statfs s;
	struct statvfs v = { 0 };

	(void)ino;
	avfs_fs_statfs(dm_of(req)->fs, &s);
	v.f_bsize = (unsigned long)s.block_size;
	v.f_frsize = (unsigned long)s.block_size;
	v.f_blocks = s.blocks;
	v.f_bfree = s.bfree;
	v.f_bavail = s.bfree;
	v.f_files = s.files;
	v.f_ffree = s.ffree;
	v.f_favail = s.ffree;
	v.f_namemax = s.namemax;
	fuse_reply_statfs(req, &v);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct daemon *dm = dm_of(req);
	size_t len = strlen(dm->sock_path);

	(void)ino;
	/* libavio finds the daemon of a file's mount here */
	if (strcmp(name, AVFS_XATTR_SOCKET)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (!size)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, dm->sock_path, len);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	struct daemon *dm = dm_of(req);
	int err;

	(void)fi;
	if (mode & ~FALLOC_FL_KEEP_SIZE) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (offset < 0 || length <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	avfsd_ra_invalidate(dm, ino);
	err = avfs_fs_fallocate(dm->fs, ino, (uint64_t)offset, (uint64_t)length,
				mode & FALLOC_FL_KEEP_SIZE, wall_ns());
	after_change(dm);
	fuse_reply_err(req, -err);
}

const struct fuse_lowlevel_ops avfsd_fuse_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.readdir = op_readdir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.create = op_create,
	.fallocate = op_fallocate,
};
