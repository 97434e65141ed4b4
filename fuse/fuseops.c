/*
 * fuseops.c — avfsd's FUSE front end (libfuse3 low-level API, SPEC §9): namespace and
 * attribute operations answer at once from the in-memory core (durable at the next commit);
 * reads and writes go to the engine as best-effort requests on the file and are answered when
 * they complete, so the loop never blocks on the disk. What to zero and what to merge in a
 * partial page is the core's data plan's business (engine/fileio.c executes it), not this
 * file's. Its own: the mount, reads through the read-ahead slots (readahead.c keeps them,
 * one window ahead of a sequential reader), page-aligned writes from the request's own buffer,
 * fsync waiting for a commit, the open file descriptions (struct ofile in fi->fh) and the
 * write errors each of them reports once (errseq, kept by the engine).
 */
#include "fuseops.h"

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include "conn.h"
#include "engine.h"
#include "format.h"
#include "fs.h"
#include "inval.h"
#include "iobuf.h"
#include "proto.h"
#include "readahead.h"
#include "retain.h"
#include "space.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <linux/falloc.h>
#include <linux/fuse.h>	/* the raw request: FUSE_WRITE_KILL_SUIDGID, which libfuse 3.14 hides */
#include <unistd.h>

#define PAGE AVFS_PAGE
/* A call that changes the file system: when the running transaction is full (-EAGAIN, fs.h's
 * credits), the engine commits it at once and the call is made again. */
#define FS(call) AVFS_ENGINE_FS(fu->e, fu->now, call)
#define RA_WINDOW (2u << 20)	/* a read-ahead's size: one device command, in one data block */

struct fsync_wait {
	fuse_req_t req;
	uint64_t after;		/* reply once more than this many commits are done */
	struct fsync_wait *next;
	struct ofile *of;	/* the description whose failed writes the reply reports (errseq),
				 * looked at when it is durable: a write answered early (write-behind)
				 * may fail after the fsync came; NULL: none */
	bool opendir;		/* an opendir by sync(1) (op_opendir): fuse_reply_open with fi */
	struct fuse_file_info fi;
	ssize_t written;	/* a write with O_SYNC or O_DSYNC (op_write): fuse_reply_write of
				 * this many bytes; -1: not a write */
};

/* An open file description of a regular file (fi->fh points at it, from open or create to
 * release): what its close does, and the write-error epoch it has seen (the engine's errseq:
 * fsync, and a close that waits for durability, report a failed write of the file once per
 * description, as Linux's errseq_t does for a struct file). */
struct ofile {
	uint64_t ino;
	uint64_t wb_since;	/* avfs_engine_wberr_sample at open, moved by each report */
	bool open_ref;		/* holds an open reference of the inode (avfs_fs_open_ref): an
				 * unlinked file lives until its last release */
	bool sync_close;	/* opened as sync(1) opens its FILE arguments (O_RDONLY |
				 * O_NONBLOCK): its close waits for durability (AVFS_CLOSE_SYNC) */
	uint32_t uid;		/* the opener's: a reservation limited to one uid covers its I/O
				 * only for that one */
	/* write-behind (avfs_engine_wb_hold): its writes answered before they reached the
	 * device and not complete yet; a close (FLUSH) waits for them, a RELEASE leaves the
	 * description to the last of them to free */
	unsigned held;
	fuse_req_t flush;	/* a FLUSH waiting for them, or NULL */
	bool released;
	/* a best-effort write of this description waiting for the device (not answered): it is
	 * answered early in the place of the held one when that is done. A best-effort writer
	 * has at most one write answered early at a time (enough for a writer that waits for
	 * each answer to have its next write on its way while the last is on the device), and
	 * only whole pages (an append sharing a page with the write before waits for that one
	 * on the device anyway: its read-modify-write) */
	struct wop *next_be;
};

static struct ofile *ofile_of(const struct fuse_file_info *fi)
{
	return fi ? (struct ofile *)(uintptr_t)fi->fh : NULL;
}

struct avfs_fuse {
	struct fuse_session *se;
	struct fuse_buf fbuf;
	uint8_t *recv;		/* fbuf.mem's buffer (AVFS_IOBUF_HUGE bytes from bufs), or NULL:
				 * libfuse's own */
	bool recv_taken;	/* op_write kept recv for its data: a new one after this request */
	int fd;
	struct avfs_fuse_conn conn;	/* /dev/fuse under libfuse: the INIT reply's extra flags */
	struct avfs_engine *e;
	struct avfs_fs *fs;
	char socket[108];
	int64_t now, wall;	/* of the request being processed */
	struct fsync_wait *fsyncs;
	struct avfs_ra ra;	/* read-ahead (readahead.h) */
	struct avfs_iobuf_pool bufs;	/* data buffers of reads, writes and read-ahead */
	enum avfs_atime atime;	/* the mount's access-time rule */
	enum avfs_fuse_close close;	/* what FLUSH (a close) waits for */
	bool noacl;		/* the mount's -o noacl: no POSIX ACLs (op_init) */
	bool kill_suidgid;	/* the write being processed asks to clear setuid/setgid (the
				 * kernel's FUSE_WRITE_KILL_SUIDGID: a writer without CAP_FSETID) */
	uint8_t *zeros;		/* ZERO_CHUNK zero bytes: the writes of a punched hole's edges */
	struct avfs_retain *ret;	/* per-directory quotas and retention (retain.h); NULL on a
					 * read-only mount */
	struct avfs_inval *inval;	/* tells the kernel of retention's deletions (inval.h) */
};

#define ZERO_CHUNK (1u << 20)
/* Requests are read at this offset into a huge buffer, so that a WRITE's data (after the
 * fuse_in_header and fuse_write_in) starts on the buffer's second page: op_write hands it to
 * the engine as it lies, without a copy, and the device's DMA finds it in one huge page. */
#define RECV_AT (PAGE - sizeof(struct fuse_in_header) - sizeof(struct fuse_write_in))

static struct avfs_fuse *fu_of(fuse_req_t req)
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
	st->st_rdev = a->rdev;	/* the kernel's 32-bit encoding, as FUSE passes it both ways */
	st->st_atim.tv_sec = a->atime_ns / 1000000000;
	st->st_atim.tv_nsec = a->atime_ns % 1000000000;
	st->st_mtim.tv_sec = a->mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = a->mtime_ns % 1000000000;
	st->st_ctim.tv_sec = a->ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = a->ctime_ns % 1000000000;
}

/* How long the kernel may keep attributes of st's inode. A file's size and times change
 * behind its back (libavio writes): never. A directory's change only through the mount (the
 * kernel drops its copy after each change it makes there, after a readdir's atime, and at
 * retention's delete notices, inval.c): a second, so that the permission check of every
 * path component (default_permissions) asks for the directory's attributes once a second,
 * not in every call — 3 of a small file's 11 requests (issue 18, bench/smallfiles.sh). */
static double attr_timeout(const struct stat *st)
{
	return S_ISDIR(st->st_mode) ? 1.0 : 0;
}

/* An entry for ino: the kernel holds one more lookup of it. */
static void reply_entry(fuse_req_t req, struct avfs_fuse *fu, uint64_t ino)
{
	struct fuse_entry_param e = { 0 };
	struct avfs_stat a;
	int err = avfs_fs_getattr(fu->fs, ino, &a);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	e.ino = ino;
	e.generation = a.generation;
	to_stat(&a, &e.attr);
	e.attr_timeout = attr_timeout(&e.attr);
	e.entry_timeout = 1.0;
	fuse_reply_entry(req, &e);
}

/* A name of ino is in parent: the way up to the space rules above it (space.h). */
static void note_parent(struct avfs_fuse *fu, uint64_t ino, uint64_t parent)
{
	if (fu->ret)
		avfs_space_note(avfs_retain_space(fu->ret), ino, parent);
}

/* The directory ino's name was last seen in (its reservation covers the file), 0: unknown. */
static uint64_t dir_of(struct avfs_fuse *fu, uint64_t ino)
{
	return fu->ret ? avfs_space_parent(avfs_retain_space(fu->ret), ino) : 0;
}

/* Before an operation allocates need bytes below ino: what the space rules delete first
 * (retention), or -EDQUOT (a quota). 0 at once when no directory has a rule. */
static int make_room(struct avfs_fuse *fu, uint64_t ino, uint64_t need)
{
	if (!fu->ret || !need || !avfs_space_rules(avfs_retain_space(fu->ret)))
		return 0;
	return avfs_retain_room(fu->ret, ino, need, fu->now, fu->wall);
}

/* The bytes a write or preallocation of [off, off + len) of ino newly allocates (0 when no
 * directory has a rule: nothing asks). */
static uint64_t need_of(struct avfs_fuse *fu, uint64_t ino, uint64_t off, uint64_t len)
{
	if (!fu->ret || !avfs_space_rules(avfs_retain_space(fu->ret)))
		return 0;
	return avfs_space_need(fu->fs, ino, off, len);
}

/* The file system changed: the engine commits when the transaction grows large. */
static void after_change(struct avfs_fuse *fu)
{
	avfs_engine_changed(fu->e, fu->now);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct avfs_fuse *fu = userdata;

	conn->max_write = 1u << 20;	/* SPEC §9: large requests where the kernel allows */
	conn->max_read = 1u << 20;	/* must match the max_read mount option */
	conn->max_readahead = 1u << 20;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	/* POSIX ACLs: the kernel enforces them and passes them as system.posix_acl_* attributes,
	 * the core keeps the mode in step and applies a directory's default ACL, or else the
	 * umask, to what is created in it (so the kernel must not apply the umask first). Their
	 * price: with attributes never cached (attr_timeout 0), a permission check by a user
	 * other than the owner asks for the ACL again (a getxattr); -o noacl saves it */
	if (!fu->noacl && conn->capable & FUSE_CAP_POSIX_ACL)
		conn->want |= FUSE_CAP_POSIX_ACL;
	if (!fu->noacl && conn->capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct avfs_fuse *fu = fu_of(req);
	uint64_t ino;
	int err = avfs_fs_lookup(fu->fs, parent, name, &ino);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	note_parent(fu, ino, parent);
	reply_entry(req, fu, ino);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct avfs_stat a;
	struct stat st;
	int err = avfs_fs_getattr(fu_of(req)->fs, ino, &a);

	(void)fi;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	to_stat(&a, &st);
	fuse_reply_attr(req, &st, attr_timeout(&st));
}

/* A read of ino: its access time as the mount's rule says (a failure only costs the time). */
static void touch_atime(struct avfs_fuse *fu, uint64_t ino)
{
	if (fu->atime != AVFS_ATIME_NO &&
	    FS(avfs_fs_touch_atime(fu->fs, ino, fu->atime, fu->wall)) == 1)
		after_change(fu);
}

/* ---- read-ahead ---- */

static void ra_invalidate(struct avfs_fuse *fu, uint64_t ino)
{
	avfs_ra_invalidate(&fu->ra, ino);
}

void avfs_fuse_invalidate(struct avfs_fuse *fu, uint64_t ino)
{
	ra_invalidate(fu, ino);
}

/* ---- data ---- */

/* The reservation that covers of's I/O in the direction (SPEC §9: one on the file, or on the
 * directory it was found in, for every uid or the opener's), 0: best effort. Asked at each
 * request, so that a reservation made or released while the file is open counts at once. */
static uint64_t stream_of(struct avfs_fuse *fu, const struct ofile *of, bool write)
{
	if (!of || !avfs_engine_stream_count(fu->e))
		return 0;
	return avfs_engine_stream_cover(fu->e, of->ino, dir_of(fu, of->ino), of->uid, write);
}

struct rop {			/* one FUSE read, alone (not sequential) */
	struct avfs_fio f;	/* first: the engine hands it back */
	fuse_req_t req;
	struct avfs_fuse *fu;
	uint8_t *mem;		/* f.cap bytes from avfs_iobuf_get, from the page holding the asked
				 * offset */
	size_t skip;		/* the asked offset's place in mem */
	size_t reply;		/* bytes asked (clamped at the size when asked) */
};

static void rop_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct rop *r = (struct rop *)f;
	size_t got = res > (int64_t)r->skip ? (size_t)res - r->skip : 0;

	(void)now;
	if (res < 0)
		fuse_reply_err(r->req, (int)-res);
	else
		fuse_reply_buf(r->req, (const char *)r->mem + r->skip, got < r->reply ? got : r->reply);
	avfs_iobuf_put(&r->fu->bufs, r->mem, f->cap);
	free(r);
}

struct rwait {			/* a FUSE read answered from a range being read ahead */
	struct avfs_ra_wait w;	/* first */
	fuse_req_t req;
};

static void rwait_answer(struct avfs_ra_wait *w, const uint8_t *data, size_t n, int err)
{
	struct rwait *r = (struct rwait *)w;

	if (err)
		fuse_reply_err(r->req, -err);
	else
		fuse_reply_buf(r->req, (const char *)data, n);
	free(r);
}

struct raread {			/* a range read for the read-ahead slots */
	struct avfs_fio f;	/* first */
	struct avfs_fuse *fu;
	uint64_t stream;	/* the reader's reservation, 0: none (its next window's too) */
	struct avfs_ra_slot *s;
};

static void prefetch(struct avfs_fuse *fu, uint64_t ino, uint64_t off, uint64_t stream,
		     uint64_t pos);

static void raread_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct raread *r = (struct raread *)f;
	struct avfs_fuse *fu = r->fu;
	/* a reader waits for this range: it reads in order, the next window goes now */
	bool more = res == (int64_t)f->len && r->s->waiters && !r->s->stale;
	uint64_t ino = f->ino, next = f->off + f->len, pos = f->off, stream = r->stream;

	fu->now = now;	/* (the next windows' due times count from here) */
	avfs_ra_done(&fu->ra, r->s, res, rwait_answer);
	free(r);
	if (more)	/* (the reader is in this window) */
		prefetch(fu, ino, next, stream, pos);
}

/* The read-ahead window at off (page aligned) of a file of `size` bytes: RA_WINDOW at most,
 * inside off's data block, inside the file. */
static uint64_t ra_window(struct avfs_fuse *fu, uint64_t off, uint64_t size)
{
	uint64_t bs = avfs_fs_block_size(fu->fs), end = off + RA_WINDOW;
	uint64_t blk_end = (off / bs + 1) * bs;

	end = end < blk_end ? end : blk_end;
	return (end < size ? end : size) - off;
}

/* Read len bytes of ino from off (page aligned) into a read-ahead slot, w (or none) waiting
 * on it, charged to stream (0: best effort; else real time, due at `due`: the playout buffer
 * of a reserved reader). 0: under way (w answered when it lands, or at once with the
 * engine's refusal); -ENOMEM, -EBUSY (every slot busy): nothing done. */
static int ra_read(struct avfs_fuse *fu, uint64_t ino, uint64_t off, uint64_t len,
		   struct rwait *w, uint64_t stream, int64_t due)
{
	size_t cap = (size_t)((len + PAGE - 1) / PAGE * PAGE);
	struct raread *r = calloc(1, sizeof(*r));
	uint8_t *buf = r ? avfs_iobuf_get(&fu->bufs, cap) : NULL;
	int err;

	if (!buf) {
		free(r);
		return -ENOMEM;
	}
	r->s = avfs_ra_start(&fu->ra, ino, off, (size_t)len, buf, cap, stream != 0);
	if (!r->s) {
		avfs_iobuf_put(&fu->bufs, buf, cap);
		free(r);
		return -EBUSY;
	}
	if (w)
		(void)avfs_ra_wait(&fu->ra, ino, w->w.off, w->w.len, &w->w);	/* (it holds) */
	r->fu = fu;
	r->stream = stream;
	r->f = (struct avfs_fio){ .ino = ino, .flow = ino, .off = off, .len = len, .buf = buf, .cap = cap,
				  .stream = stream, .deadline = stream ? due : 0, .keep_late = true,
				  .label = stream ? (int64_t)stream : -1,
				  .cls = AVFS_TRACE_BE, .done = raread_done };
	err = avfs_engine_io(fu->e, &r->f, fu->now);
	if (err) {	/* done() will not run */
		avfs_ra_done(&fu->ra, r->s, err, rwait_answer);
		free(r);
	}
	return 0;
}

/* A reserved reader's playout buffer (papers/000): windows read ahead of it, as many as its
 * reserved buffer holds (at most PLAYOUT_MAX of the shared slots); they are charged to its
 * reservation, so its bucket paces them at the reserved rate with real-time deadlines. A
 * reader without one: one window. */
#define PLAYOUT_MAX 4

static unsigned playout_windows(struct avfs_fuse *fu, uint64_t stream)
{
	struct avfs_estream *s = stream ? avfs_engine_stream(fu->e, stream) : NULL;
	uint64_t n = s ? s->req.buffer / RA_WINDOW : 1;

	return n < 1 ? 1 : n > PLAYOUT_MAX ? PLAYOUT_MAX : (unsigned)n;
}

/* SPEC §9: a sequential reader's next window is read while it takes the one before, so that
 * the device keeps working through the FUSE round trips; unless it is kept or under way
 * already, or past the end. A reserved reader's next windows, its playout buffer's. */
/* When a reserved reader at pos needs the bytes at off: once it has read what lies between
 * at its reserved rate — and no sooner than the scheduler's margin from now, so that data it
 * waits for already is served at once, not failed as late. (The service's own deadline, the
 * rest of its buffer at the rate, assumes a full playout buffer: 8 s for a 6 Mbit/s player
 * with 8 MiB, which an empty one — a start, a seek — cannot wait.) 0 for best effort. */
static int64_t playout_due(struct avfs_fuse *fu, uint64_t stream, uint64_t pos, uint64_t off)
{
	struct avfs_estream *s = stream ? avfs_engine_stream(fu->e, stream) : NULL;
	double ahead = off > pos ? (double)(off - pos) : 0;

	if (!s || !s->req.rate)
		return 0;
	return fu->now + avfs_engine_margin(fu->e) + (int64_t)(ahead / (double)s->req.rate * 1e9);
}

static void prefetch(struct avfs_fuse *fu, uint64_t ino, uint64_t off, uint64_t stream,
		     uint64_t pos)
{
	unsigned n = playout_windows(fu, stream);
	struct avfs_stat a;

	if (off % PAGE || avfs_fs_getattr(fu->fs, ino, &a))
		return;
	for (unsigned k = 0; k < n && off < a.size; k++) {
		uint64_t len = ra_window(fu, off, a.size);

		if (!avfs_ra_has(&fu->ra, ino, off) &&
		    ra_read(fu, ino, off, len, NULL, stream, playout_due(fu, stream, pos, off)))
			return;	/* no slot or no memory: the next read tries again */
		off += len;
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	uint64_t end, a0, cap;
	struct avfs_ra_slot *s;
	struct avfs_stat a;
	struct rwait *w;
	struct rop *r;
	int err = avfs_fs_getattr(fu->fs, ino, &a);
	uint64_t stream = stream_of(fu, ofile_of(fi), false);

	if (err || off < 0) {
		fuse_reply_err(req, err ? -err : EINVAL);
		return;
	}
	if ((uint64_t)off >= a.size || !size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	end = (uint64_t)off + size > a.size ? a.size : (uint64_t)off + size;
	touch_atime(fu, ino);
	s = avfs_ra_hit(&fu->ra, ino, (uint64_t)off, end - (uint64_t)off);
	if (s) {
		uint64_t next = s->off + s->len;

		if (end >= next)
			s->pinned = false;	/* read to its end: an ordinary kept range now */

		fuse_reply_buf(req, (const char *)s->buf + ((uint64_t)off - s->off),
			       end - (uint64_t)off);
		prefetch(fu, ino, next, stream, end);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*w = (struct rwait){ .w = { .off = (uint64_t)off, .len = end - (uint64_t)off }, .req = req };
	if (avfs_ra_wait(&fu->ra, ino, (uint64_t)off, end - (uint64_t)off, &w->w))
		return;
	/* SPEC §9: read ahead inside the large data block when the file is read in order, from
	 * the page holding off: the device's pages land in the buffer directly */
	a0 = (uint64_t)off / PAGE * PAGE;
	if (avfs_ra_sequential(&fu->ra, ino, (uint64_t)off)) {
		uint64_t wend = a0 + ra_window(fu, a0, a.size);

		/* (a reserved reader waits for it: due now) */
		if (!ra_read(fu, ino, a0, (wend > end ? wend : end) - a0, w, stream,
			     playout_due(fu, stream, a0, a0)))
			return;
	}
	free(w);
	r = calloc(1, sizeof(*r));
	if (!r) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r->reply = end - (uint64_t)off;
	r->skip = (size_t)((uint64_t)off - a0);
	cap = (end - a0 + PAGE - 1) / PAGE * PAGE;
	r->mem = avfs_iobuf_get(&fu->bufs, cap);
	if (!r->mem) {
		free(r);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r->req = req;
	r->fu = fu;
	r->f = (struct avfs_fio){ .ino = ino, .flow = ino, .off = a0, .len = end - a0, .buf = r->mem,
				  .cap = cap, .stream = stream, .label = stream ? (int64_t)stream : -1,
				  .deadline = playout_due(fu, stream, a0, a0), .keep_late = true,
				  .cls = AVFS_TRACE_BE, .done = rop_done };
	err = avfs_engine_io(fu->e, &r->f, fu->now);
	if (err) {
		fuse_reply_err(req, -err);
		avfs_iobuf_put(&fu->bufs, r->mem, cap);
		free(r);
	}
}

struct wop {			/* one FUSE write, or the zeroing before a truncate grows a file */
	struct avfs_fio f;	/* first */
	fuse_req_t req;
	struct avfs_fuse *fu;
	struct ofile *of;	/* answered early (write-behind): the description it is held for */
	bool submitting;	/* inside avfs_engine_io: done() only notes the result ... */
	bool completed;		/* ... here */
	int64_t res;
	uint8_t *mem;		/* a copy of the data: libfuse reuses its buffer */
	size_t memlen;		/* mem's size (avfs_iobuf_get) */
	bool plain;		/* mem is a plain allocation (free), not the pool's */
	struct ofile *sync;	/* a write with O_SYNC or O_DSYNC: answered once durable, with
				 * this description's failed writes (errseq) */
	struct ofile *cand;	/* the description whose next_be it is */
	struct avfs_stat set;	/* truncate up: the attributes to set once zeroed */
};

static void flush_now(struct avfs_fuse *fu, fuse_req_t req, struct ofile *of);
static void wait_durable(struct avfs_fuse *fu, fuse_req_t req, const struct fuse_file_info *open,
			 struct ofile *of, ssize_t written);

/* The memory a write holds while answered early (avfs_engine_wb_hold's mem). */
static size_t wop_cost(const struct wop *w)
{
	return w->plain ? w->memlen : avfs_iobuf_cost(w->memlen);
}

/* The description's next best-effort write, if it may be held now: answered. */
static bool hold_next(struct avfs_fuse *fu, struct ofile *of)
{
	struct wop *w = of->next_be;

	if (!w || !avfs_engine_wb_hold(fu->e, &w->f, wop_cost(w)))
		return false;
	of->next_be = NULL;
	w->cand = NULL;
	w->of = of;
	of->held++;
	fuse_reply_write(w->req, w->f.len);
	return true;
}

/* A write answered early is on the device (or failed: its file's error epoch moved, fsync
 * reports it): the description's next best-effort write takes its place, or a close waiting
 * for the description's held writes goes on. */
static void held_done(struct avfs_fuse *fu, struct ofile *of)
{
	fuse_req_t flush = of->flush;

	if (--of->held || (!flush && hold_next(fu, of)))
		return;
	of->flush = NULL;
	if (flush)
		flush_now(fu, flush, of);
	if (of->released)
		free(of);
}

static void wop_free(struct wop *w)
{
	if (w->plain)
		free(w->mem);
	else
		avfs_iobuf_put(&w->fu->bufs, w->mem, w->memlen);
	free(w);
}

static void wop_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct wop *w = (struct wop *)f;

	(void)now;
	if (w->submitting) {	/* op_write answers (and frees) it */
		w->completed = true;
		w->res = res;
		return;
	}
	if (w->cand) {
		w->cand->next_be = NULL;
		w->cand = NULL;
	}
	if (w->of)
		held_done(w->fu, w->of);
	else if (res < 0)
		fuse_reply_err(w->req, (int)-res);
	else if (w->sync)
		wait_durable(w->fu, w->req, NULL, w->sync, (ssize_t)res);
	else
		fuse_reply_write(w->req, (size_t)res);
	wop_free(w);
}

/* A write by a process without CAP_FSETID (the kernel says so: the files are direct I/O, so
 * it leaves this to us) clears setuid, and setgid when group-executable, as Linux's
 * file_remove_privs() does. 0 or -errno. */
static int kill_suidgid(struct avfs_fuse *fu, uint64_t ino)
{
	struct avfs_stat a;
	int err = avfs_fs_getattr(fu->fs, ino, &a);
	uint32_t mode;

	if (err)
		return err;
	mode = a.mode & ~(uint32_t)S_ISUID;
	if ((a.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		mode &= ~(uint32_t)S_ISGID;
	if (mode == a.mode)
		return 0;
	a.mode = mode;
	err = FS(avfs_fs_setattr(fu->fs, ino, AVFS_SET_MODE, &a, fu->wall));
	if (!err)
		after_change(fu);
	return err;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	size_t at = (size_t)(off > 0 ? off % PAGE : 0);
	struct wop *w;
	struct ofile *of;
	uint64_t stream = stream_of(fu, ofile_of(fi), true);
	/* O_SYNC, O_DSYNC (the open's or RWF_DSYNC's: the kernel passes them with each write,
	 * and leaves the sync to us for direct-I/O files) */
	bool sync = fi && (fi->flags & O_DSYNC) && ofile_of(fi);
	int err;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!size) {
		fuse_reply_write(req, 0);
		return;
	}
	if ((fu->kill_suidgid && (err = kill_suidgid(fu, ino))) ||
	    (err = make_room(fu, ino, need_of(fu, ino, (uint64_t)off, size)))) {
		fuse_reply_err(req, -err);
		return;
	}
	ra_invalidate(fu, ino);
	w = calloc(1, sizeof(*w));
	/* a small write may be held (write-behind): in memory of its own size, not in a huge
	 * page of the pool's (2 MiB for 64 KiB) */
	if (w && !sync && size < AVFS_IOBUF_HUGE / 2) {
		w->plain = true;
		w->memlen = (at + size + PAGE - 1) / PAGE * PAGE;
		if (!posix_memalign((void **)&w->mem, PAGE, w->memlen))
			memcpy(w->mem + at, buf, size);
		else
			w->mem = NULL;
	} else if (w && !at && fu->recv && (const uint8_t *)buf == fu->recv + PAGE) {
		w->memlen = AVFS_IOBUF_HUGE;	/* the request's own buffer: no copy */
		w->mem = fu->recv;
		at = PAGE;	/* where the data lies in it */
		fu->recv_taken = true;
	} else if (w) {
		w->memlen = at + size;
		w->mem = avfs_iobuf_get(&fu->bufs, w->memlen);
		/* placed as on the device's pages, so that whole pages go without another
		 * copy */
		if (w->mem)
			memcpy(w->mem + at, buf, size);
	}
	if (!w || !w->mem) {
		free(w);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	w->req = req;
	w->fu = fu;
	w->f = (struct avfs_fio){ .ino = ino, .flow = ino, .off = (uint64_t)off, .len = size,
				  .write = true, .buf = w->mem + at, .cap = size, .stream = stream,
				  .label = stream ? (int64_t)stream : -1, .cls = AVFS_TRACE_BE,
				  .done = wop_done };
	w->sync = sync ? ofile_of(fi) : NULL;
	w->submitting = true;
	err = avfs_engine_io(fu->e, &w->f, fu->now);
	w->submitting = false;
	if (err || w->completed) {
		if (err || w->res < 0)
			fuse_reply_err(req, err ? -err : (int)-w->res);
		else if (w->sync)
			wait_durable(fu, req, NULL, w->sync, (ssize_t)w->res);
		else
			fuse_reply_write(req, (size_t)w->res);
		wop_free(w);
		return;
	}
	/* papers/000's write buffer: a write, planned and within its stream's buffer (or, best
	 * effort, within write-behind-be and the first of its description), is answered now; its
	 * data stays here until the device has it (wop_done). Not a write that must be durable
	 * first. */
	of = ofile_of(fi);
	if (sync || !of || (!stream && (off % PAGE || size % PAGE)))
		return;	/* (best effort: whole pages only; see below) */
	if ((stream || !of->held) && avfs_engine_wb_hold(fu->e, &w->f, wop_cost(w))) {
		w->of = of;
		of->held++;
		fuse_reply_write(req, size);
	} else if (!stream && !of->next_be) {
		of->next_be = w;
		w->cand = of;
	}
}

/* The tail of the old last page is zeroed: now the size grows. */
static void grow_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct wop *w = (struct wop *)f;
	struct avfs_fuse *fu = w->fu;
	struct avfs_stat a;
	struct stat st;
	int err = (int)res;

	(void)now;
	if (!err)
		err = FS(avfs_fs_setattr(fu->fs, f->ino, AVFS_SET_SIZE, &w->set, fu->wall));
	if (!err)
		err = avfs_fs_getattr(fu->fs, f->ino, &a);
	if (err) {
		fuse_reply_err(w->req, -err);
	} else {
		to_stat(&a, &st);
		fuse_reply_attr(w->req, &st, 0);
	}
	after_change(fu);
	free(w);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	struct avfs_stat a = { 0 }, cur;
	unsigned set = 0;
	struct stat st;
	int err = avfs_fs_getattr(fu->fs, ino, &cur);

	ra_invalidate(fu, ino);
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
		set |= AVFS_SET_ATIME, a.atime_ns = to_set & FUSE_SET_ATTR_ATIME_NOW ? fu->wall :
			attr->st_atim.tv_sec * 1000000000ll + attr->st_atim.tv_nsec;
	if (to_set & FUSE_SET_ATTR_MTIME)
		set |= AVFS_SET_MTIME, a.mtime_ns = to_set & FUSE_SET_ATTR_MTIME_NOW ? fu->wall :
			attr->st_mtim.tv_sec * 1000000000ll + attr->st_mtim.tv_nsec;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (attr->st_size < 0) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		a.size = (uint64_t)attr->st_size;
		if (a.size > cur.size && (err = make_room(fu, ino, 1))) {
			fuse_reply_err(req, -err);	/* a full quota: no more, even sparse */
			return;
		}
		/* growing over a partly written last page: its stale tail zeroed first (the
		 * core's plan), then the size */
		if (a.size > cur.size && cur.size % PAGE) {
			struct wop *w = calloc(1, sizeof(*w));

			if (!w) {
				fuse_reply_err(req, ENOMEM);
				return;
			}
			if (set) {
				err = FS(avfs_fs_setattr(fu->fs, ino, set, &a, fu->wall));
				if (err) {
					free(w);
					fuse_reply_err(req, -err);
					return;
				}
			}
			w->req = req;
			w->fu = fu;
			w->set = a;
			w->f = (struct avfs_fio){ .ino = ino, .flow = ino, .off = cur.size, .write = true,
						  .zero_tail = true, .label = -1,
						  .cls = AVFS_TRACE_BE, .done = grow_done };
			err = avfs_engine_io(fu->e, &w->f, fu->now);
			if (err) {
				fuse_reply_err(req, -err);
				free(w);
			}
			return;
		}
		set |= AVFS_SET_SIZE;
	}
	err = FS(avfs_fs_setattr(fu->fs, ino, set, &a, fu->wall));
	if (!err)
		err = avfs_fs_getattr(fu->fs, ino, &cur);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	after_change(fu);
	to_stat(&cur, &st);
	fuse_reply_attr(req, &st, attr_timeout(&st));
}

/* ---- durability ---- */

/* The error a failed write of of's file leaves for this description to report, once
 * (errseq): -EIO or 0. */
static int wberr_check(struct avfs_fuse *fu, struct ofile *of)
{
	return of ? avfs_engine_wberr_check(fu->e, of->ino, &of->wb_since) : 0;
}

static void answer_fsyncs(struct avfs_fuse *fu, uint64_t done, int err)
{
	struct fsync_wait **pp = &fu->fsyncs;

	while (*pp) {
		struct fsync_wait *w = *pp;

		if (err || done > w->after) {
			int werr = err ? EIO : -wberr_check(fu, w->of);

			*pp = w->next;
			if (w->opendir && !werr)
				fuse_reply_open(w->req, &w->fi);
			else if (w->written >= 0 && !werr)
				fuse_reply_write(w->req, (size_t)w->written);
			else
				fuse_reply_err(w->req, werr);
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

void avfs_fuse_committed(struct avfs_fuse *fu, uint64_t n, int err)
{
	answer_fsyncs(fu, n, err);
}

/* Answer req once everything before it is durable (an fsync; an opendir by sync(1) with fi;
 * a sync write of written bytes when written >= 0), with of's failed write (errseq) unless the
 * commit fails. */
static void wait_durable(struct avfs_fuse *fu, fuse_req_t req, const struct fuse_file_info *open,
			 struct ofile *of, ssize_t written)
{
	struct fsync_wait *w = calloc(1, sizeof(*w));
	unsigned queued;
	uint64_t done = avfs_engine_commits(fu->e, &queued);

	if (!w) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (open) {
		w->opendir = true;
		w->fi = *open;
	}
	w->written = written;
	/* data writes are planned (their replies come after the device, or once planned with
	 * write-behind); the next commit waits for them (ordered mode), makes them reachable and
	 * the metadata durable — the one after the commits queued, which carry transactions
	 * from before them */
	w->req = req;
	w->of = of;
	w->after = done + queued;
	w->next = fu->fsyncs;
	fu->fsyncs = w;
	avfs_engine_commit(fu->e, fu->now);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);

	(void)ino, (void)datasync;
	/* a write of the file failed since this description last looked: everything else is
	 * made durable all the same, and the reply says EIO (once), as Linux's fsync does */
	wait_durable(fu, req, NULL, ofile_of(fi), -1);
}

/* sync(1) opens a directory argument O_RDONLY | O_NONBLOCK and without O_DIRECTORY (opendir(3),
 * ls and find add O_DIRECTORY): `sync -f DIR` gets its open answered once everything before
 * it is durable (op_flush says why; a directory's close sends nothing one could wait on). */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);

	(void)ino;
	if (fu->close != AVFS_CLOSE_ASYNC && (fi->flags & O_ACCMODE) == O_RDONLY &&
	    (fi->flags & O_NONBLOCK) && !(fi->flags & O_DIRECTORY) && !avfs_engine_durable(fu->e))
		wait_durable(fu, req, fi, NULL, -1);
	else
		fuse_reply_open(req, fi);
}

/* getxattr's and listxattr's answer: n bytes (or -errno) for a caller's buffer of size (0:
 * the length only). */
static void reply_xattr(fuse_req_t req, int n, size_t size, const char *buf)
{
	if (n < 0)
		fuse_reply_err(req, -n);
	else if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

/* The virtual attribute user.avfs.socket, on every inode: libavio finds the daemon of a file's
 * mount there. It is not listed (copies of a tree do not take it along) and cannot be set. */
static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct avfs_fuse *fu = fu_of(req);
	size_t len = strlen(fu->socket);
	char buf[AVFS_XATTR_ROOM];
	int n;

	if (!strcmp(name, AVFS_XATTR_SOCKET)) {
		if (!size)
			fuse_reply_xattr(req, len);
		else if (size < len)
			fuse_reply_err(req, ERANGE);
		else
			fuse_reply_buf(req, fu->socket, len);
		return;
	}
	/* a value fits a block: a larger buffer gets what a block holds */
	n = avfs_fs_getxattr(fu->fs, ino, name, buf, size > sizeof(buf) ? sizeof(buf) : size);
	reply_xattr(req, n, size, buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct avfs_fuse *fu = fu_of(req);
	char buf[AVFS_XATTR_ROOM];
	/* trusted.* for the superuser only, as ext4 lists them (CAP_SYS_ADMIN, taken as uid 0:
	 * FUSE does not pass capabilities) */
	int n = avfs_fs_listxattr(fu->fs, ino, fuse_req_ctx(req)->uid == 0, buf,
				  size > sizeof(buf) ? sizeof(buf) : size);

	reply_xattr(req, n, size, buf);
}

static bool rule_attr(const char *name)
{
	return avfs_space_parse(name, "", 0, NULL, NULL, 0) != 1;
}

/* A space rule (trusted.avfs.quota, trusted.avfs.retain: space.h) is well formed and on a
 * directory, or nothing is set: 0, -EINVAL, -ENOTDIR. */
static int rule_check(struct avfs_fuse *fu, uint64_t ino, const char *name, const char *value,
		      size_t size)
{
	struct avfs_stat a;
	int err = avfs_space_parse(name, value, size, NULL, NULL, 0);

	if (err == 1)
		return 0;
	if (err)
		return err;
	err = avfs_fs_getattr(fu->fs, ino, &a);
	return err ? err : S_ISDIR(a.mode) ? 0 : -ENOTDIR;
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct avfs_fuse *fu = fu_of(req);
	int err;

	if (!strcmp(name, AVFS_XATTR_SOCKET)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	err = rule_check(fu, ino, name, value, size);
	if (!err)
		err = FS(avfs_fs_setxattr(fu->fs, ino, name, value, size,
					  (flags & XATTR_CREATE ? AVFS_XATTR_CREATE : 0) |
					  (flags & XATTR_REPLACE ? AVFS_XATTR_REPLACE : 0), fu->wall));
	if (!err)
		after_change(fu);
	if (!err && rule_attr(name) && fu->ret)
		err = avfs_space_reload(avfs_retain_space(fu->ret), ino);
	fuse_reply_err(req, -err);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct avfs_fuse *fu = fu_of(req);
	int err;

	if (!strcmp(name, AVFS_XATTR_SOCKET)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	err = FS(avfs_fs_removexattr(fu->fs, ino, name, fu->wall));
	if (!err)
		after_change(fu);
	if (!err && rule_attr(name) && fu->ret)
		err = avfs_space_reload(avfs_retain_space(fu->ret), ino);
	fuse_reply_err(req, -err);
}

/* fallocate once the stale tail past the old size is zeroed (a growing fallocate) */
struct falloc_op {
	struct avfs_fio f;	/* first: a zero_tail request */
	fuse_req_t req;
	struct avfs_fuse *fu;
	uint64_t off, len;
	bool keep_size;
};

static void falloc_now(struct avfs_fuse *fu, fuse_req_t req, uint64_t ino, uint64_t off,
		       uint64_t len, bool keep_size)
{
	int err = FS(avfs_fs_fallocate(fu->fs, ino, off, len, keep_size, fu->wall));

	after_change(fu);
	fuse_reply_err(req, -err);
}

static void falloc_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct falloc_op *o = (struct falloc_op *)f;

	(void)now;
	if (res < 0)
		fuse_reply_err(o->req, (int)-res);
	else
		falloc_now(o->fu, o->req, f->ino, o->off, o->len, o->keep_size);
	free(o);
}

/* A hole punched: the core freed what it could; the edges it left are written with zeros, one
 * ZERO_CHUNK at a time, before the reply. */
struct punch_op {
	struct avfs_fio f;	/* first: the zero write under way */
	fuse_req_t req;
	struct avfs_fuse *fu;
	struct avfs_range z[2];
	unsigned n, i;
	uint64_t done;		/* bytes of z[i] written */
};

static void punch_next(struct punch_op *o);

static void punch_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct punch_op *o = (struct punch_op *)f;

	(void)now;
	if (res < 0) {
		fuse_reply_err(o->req, (int)-res);
		free(o);
		return;
	}
	o->done += (uint64_t)res;
	if (!res || o->done >= o->z[o->i].len)
		o->i++, o->done = 0;
	punch_next(o);
}

static void punch_next(struct punch_op *o)
{
	struct avfs_fuse *fu = o->fu;
	uint64_t left;
	int err;

	if (o->i == o->n) {
		after_change(fu);
		fuse_reply_err(o->req, 0);
		free(o);
		return;
	}
	left = o->z[o->i].len - o->done;
	o->f = (struct avfs_fio){ .ino = o->f.ino, .flow = o->f.ino, .off = o->z[o->i].off + o->done,
				  .len = left < ZERO_CHUNK ? left : ZERO_CHUNK, .write = true,
				  .buf = fu->zeros, .cap = ZERO_CHUNK, .label = -1,
				  .cls = AVFS_TRACE_BE, .done = punch_done };
	err = avfs_engine_io(fu->e, &o->f, fu->now);
	if (err) {
		fuse_reply_err(o->req, -err);
		free(o);
	}
}

static void punch(struct avfs_fuse *fu, fuse_req_t req, uint64_t ino, uint64_t off, uint64_t len)
{
	struct punch_op *o = calloc(1, sizeof(*o));
	int err;

	if (!o || (!fu->zeros && !(fu->zeros = avfs_iobuf_get(&fu->bufs, ZERO_CHUNK)))) {
		free(o);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(fu->zeros, 0, ZERO_CHUNK);	/* (never written: a write only reads it) */
	err = FS(avfs_fs_punch(fu->fs, ino, off, len, fu->wall, o->z, &o->n));
	if (err) {
		free(o);
		fuse_reply_err(req, -err);
		return;
	}
	after_change(fu);
	o->req = req;
	o->fu = fu;
	o->f.ino = ino;
	punch_next(o);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	struct avfs_stat a;
	struct falloc_op *o;
	int err;

	(void)fi;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) ||
	    ((mode & FALLOC_FL_PUNCH_HOLE) && !keep)) {
		fuse_reply_err(req, EOPNOTSUPP);	/* (a punch must keep the size, fallocate(2)) */
		return;
	}
	if (offset < 0 || length <= 0 || (uint64_t)offset + (uint64_t)length < (uint64_t)offset) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ra_invalidate(fu, ino);
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		punch(fu, req, ino, (uint64_t)offset, (uint64_t)length);
		return;
	}
	err = avfs_fs_getattr(fu->fs, ino, &a);
	if (!err)
		err = make_room(fu, ino, need_of(fu, ino, (uint64_t)offset, (uint64_t)length));
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	/* growing the size over a partly written last page: its stale tail zeroed first (the
	 * core's plan), as for a truncate up; so does a small file whose extent the range passes
	 * (the plan moves it to a whole block) */
	if (!avfs_fs_small_past(fu->fs, ino, (uint64_t)offset + (uint64_t)length) &&
	    (keep || (uint64_t)offset + (uint64_t)length <= a.size || !(a.size % PAGE))) {
		falloc_now(fu, req, ino, (uint64_t)offset, (uint64_t)length, keep);
		return;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*o = (struct falloc_op){ .req = req, .fu = fu, .off = (uint64_t)offset,
				 .len = (uint64_t)length, .keep_size = keep };
	o->f = (struct avfs_fio){ .ino = ino, .flow = ino, .off = a.size, .write = true,
				  .zero_tail = true, .label = -1, .cls = AVFS_TRACE_BE, .done = falloc_done };
	err = avfs_engine_io(fu->e, &o->f, fu->now);
	if (err) {
		fuse_reply_err(req, -err);
		free(o);
	}
}

/* ---- namespace ---- */

static const struct fuse_ctx *ctx(fuse_req_t req)
{
	return fuse_req_ctx(req);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct avfs_fuse *fu = fu_of(req);
	uint64_t ino;
	int err = make_room(fu, parent, 1);

	if (!err)
		err = FS(avfs_fs_create(fu->fs, parent, name, mode, (uint32_t)rdev, ctx(req)->umask,
					ctx(req)->uid, ctx(req)->gid, fu->wall, &ino));
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	note_parent(fu, ino, parent);
	ra_invalidate(fu, ino);	/* a reused inode number starts clean */
	after_change(fu);
	reply_entry(req, fu, ino);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	struct fuse_entry_param e = { 0 };
	struct ofile *of = NULL;
	struct avfs_stat a;
	uint64_t ino;
	int err = make_room(fu, parent, 1);

	if (!err)
		err = FS(avfs_fs_create(fu->fs, parent, name, S_IFREG | (mode & 07777), 0,
					ctx(req)->umask, ctx(req)->uid, ctx(req)->gid, fu->wall,
					&ino));
	if (!err) {
		note_parent(fu, ino, parent);
		err = avfs_fs_getattr(fu->fs, ino, &a);
	}
	if (!err && !(of = calloc(1, sizeof(*of))))
		err = -ENOMEM;	/* (the file stays, as after a create whose open failed) */
	if (!err)
		err = avfs_fs_open_ref(fu->fs, ino);
	if (err) {
		free(of);
		fuse_reply_err(req, -err);
		return;
	}
	ra_invalidate(fu, ino);	/* a reused inode number starts clean */
	after_change(fu);
	*of = (struct ofile){ .ino = ino, .open_ref = true, .uid = ctx(req)->uid,
			      .wb_since = avfs_engine_wberr_sample(fu->e, ino) };
	fi->fh = (uintptr_t)of;
	e.ino = ino;
	e.generation = a.generation;
	to_stat(&a, &e.attr);
	e.entry_timeout = 1.0;
	fi->direct_io = 1;	/* no page cache between applications and the mixer */
	fuse_reply_create(req, &e, fi);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct avfs_fuse *fu = fu_of(req);
	uint64_t ino;
	int err = FS(avfs_fs_create(fu->fs, parent, name, S_IFDIR | (mode & 07777), 0,
				 ctx(req)->umask, ctx(req)->uid, ctx(req)->gid, fu->wall, &ino));

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	after_change(fu);
	reply_entry(req, fu, ino);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct avfs_fuse *fu = fu_of(req);
	uint64_t ino;
	int err = FS(avfs_fs_symlink(fu->fs, parent, name, link, ctx(req)->uid, ctx(req)->gid,
				  fu->wall, &ino));

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	after_change(fu);
	reply_entry(req, fu, ino);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[AVFS_SYMLINK_MAX + 1];
	int n = avfs_fs_readlink(fu_of(req)->fs, ino, buf, sizeof(buf));

	if (n < 0)
		fuse_reply_err(req, -n);
	else
		fuse_reply_readlink(req, buf);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	struct avfs_fuse *fu = fu_of(req);
	int err = FS(avfs_fs_link(fu->fs, ino, parent, name, fu->wall));

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	note_parent(fu, ino, parent);
	after_change(fu);
	reply_entry(req, fu, ino);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct avfs_fuse *fu = fu_of(req);
	uint64_t ino;
	int err;

	if (!avfs_fs_lookup(fu->fs, parent, name, &ino))
		ra_invalidate(fu, ino);
	err = FS(avfs_fs_unlink(fu->fs, parent, name, fu->wall));

	after_change(fu);
	fuse_reply_err(req, -err);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct avfs_fuse *fu = fu_of(req);
	int err = FS(avfs_fs_rmdir(fu->fs, parent, name, fu->wall));

	after_change(fu);
	fuse_reply_err(req, -err);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct avfs_fuse *fu = fu_of(req);
	unsigned f = (flags & RENAME_NOREPLACE ? AVFS_RENAME_NOREPLACE : 0) |
		     (flags & RENAME_EXCHANGE ? AVFS_RENAME_EXCHANGE : 0);
	int err = flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE) ? -EINVAL :
		  FS(avfs_fs_rename(fu->fs, parent, name, newparent, newname, f, fu->wall));
	uint64_t ino;

	/* a moved file is covered by its new directory's reservation and counted under its
	 * space rules (an exchanged one by the old directory's) */
	if (!err && !avfs_fs_lookup(fu->fs, newparent, newname, &ino)) {
		note_parent(fu, ino, newparent);
	}
	if (!err && (f & AVFS_RENAME_EXCHANGE) && !avfs_fs_lookup(fu->fs, parent, name, &ino)) {
		note_parent(fu, ino, parent);
	}
	after_change(fu);
	fuse_reply_err(req, -err);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	struct ofile *of;
	struct avfs_stat a;
	int err = avfs_fs_getattr(fu->fs, ino, &a);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	if (S_ISDIR(a.mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY && a.size) {
		ra_invalidate(fu, ino);
		struct avfs_stat z = { .size = 0 };

		err = FS(avfs_fs_setattr(fu->fs, ino, AVFS_SET_SIZE, &z, fu->wall));
		if (err) {
			fuse_reply_err(req, -err);
			return;
		}
		after_change(fu);
	}
	of = calloc(1, sizeof(*of));
	err = of ? avfs_fs_open_ref(fu->fs, ino) : -ENOMEM;
	if (err) {
		free(of);
		fuse_reply_err(req, -err);
		return;
	}
	*of = (struct ofile){ .ino = ino, .open_ref = true, .uid = ctx(req)->uid,
			      .wb_since = avfs_engine_wberr_sample(fu->e, ino),
			      .sync_close = (fi->flags & O_ACCMODE) == O_RDONLY &&
					    (fi->flags & O_NONBLOCK) };
	fi->fh = (uintptr_t)of;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

/* close(2) of a file on the mount. sync(2) and syncfs(2) reach no FUSE daemon on the kernels
 * of this project's machines (the kernel sends FUSE_SYNCFS only where fc->sync_fs is set:
 * virtiofs; libfuse 3.14 has no syncfs operation either). What does reach us from `sync -f
 * FILE` is the open and close of FILE, which sync(1) opens O_RDONLY | O_NONBLOCK: such a
 * close answers once everything written before it is on disk — the commit under way or the
 * next one, whose FLUSH covers every completed data write (as fsync). Every close waits so
 * with AVFS_CLOSE_DURABLE (a commit per file written: 11 ms a close on an image file here,
 * touch of 2,000 files 0.2 s -> 23 s), none with AVFS_CLOSE_ASYNC. At once when everything
 * already is durable. */
static bool close_waits(const struct avfs_fuse *fu, const struct ofile *of)
{
	return fu->close == AVFS_CLOSE_DURABLE ||
	       (fu->close == AVFS_CLOSE_SYNC && of && of->sync_close);
}

static void flush_now(struct avfs_fuse *fu, fuse_req_t req, struct ofile *of)
{
	if (!close_waits(fu, of)) {
		fuse_reply_err(req, 0);
		return;
	}
	/* a close that waits for durability reports a failed write as fsync does (errseq) */
	if (avfs_engine_durable(fu->e))
		fuse_reply_err(req, -wberr_check(fu, of));
	else
		wait_durable(fu, req, NULL, of, -1);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	struct ofile *of = ofile_of(fi);

	(void)ino;
	/* write-behind: a close that waits for durability waits for the writes answered early
	 * first (a second close meanwhile, a dup, does not wait again). Any other close answers
	 * at once, as it does without them: the held writes reach the device by their deadlines
	 * and the commit of their transaction waits for them (ordered mode), so the file is
	 * durable at the same commit either way — and a recorder's close of a finished segment
	 * does not wait up to the reserved buffer's drain time (buffer / rate: 11 s for 8 MiB
	 * at 6 Mbit/s) */
	if (of && of->held && !of->flush && close_waits(fu, of)) {
		of->flush = req;
		return;
	}
	flush_now(fu, req, of);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct avfs_fuse *fu = fu_of(req);
	struct ofile *of = ofile_of(fi);

	/* the last handle of a file unlinked while open frees it (the kernel sends RELEASE once
	 * no read or write of this handle is left, so none of its I/O is in flight) */
	if (of && of->open_ref && FS(avfs_fs_open_unref(fu->fs, ino)) == 1) {
		ra_invalidate(fu, ino);
		after_change(fu);
	}
	avfs_ra_unpin(&fu->ra, ino);	/* a playout buffer nobody reads now: evictable */
	if (of && of->held)
		of->released = true;	/* the last held write frees it (held_done) */
	else
		free(of);
	fuse_reply_err(req, 0);
}

/* SEEK_DATA / SEEK_HOLE (the kernel answers SEEK_SET, SEEK_CUR and SEEK_END itself). */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	int64_t r;

	(void)fi;
	if ((whence != SEEK_DATA && whence != SEEK_HOLE) || off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r = avfs_fs_seek(fu_of(req)->fs, ino, (uint64_t)off, whence == SEEK_HOLE);
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_lseek(req, (off_t)r);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino, (void)datasync, (void)fi;	/* (a directory's fi->fh is not an ofile) */
	wait_durable(fu_of(req), req, NULL, NULL, -1);
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	struct avfs_fuse *fu;
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
	struct dirbuf b = { .req = req, .size = size, .fu = fu_of(req) };
	int err;

	(void)fi;
	if (!off)
		touch_atime(b.fu, ino);	/* a directory read from its start */
	b.buf = malloc(size ? size : 1);
	if (!b.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = avfs_fs_readdir(b.fu->fs, ino, (uint64_t)off, fill, &b);
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
	avfs_fs_statfs(fu_of(req)->fs, &s);
	/* sizes in 4 KiB units, so that the free units of small-file blocks count (df) */
	v.f_bsize = (unsigned long)s.block_size;
	v.f_frsize = AVFS_PAGE;
	v.f_blocks = s.units;
	v.f_bfree = s.ufree;
	v.f_bavail = s.ufree;
	v.f_files = s.files;
	v.f_ffree = s.ffree;
	v.f_favail = s.ffree;
	v.f_namemax = s.namemax;
	fuse_reply_statfs(req, &v);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
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
	.opendir = op_opendir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
};

/* ---- the mount ---- */

/* libfuse reads requests and writes replies through conn.c (fuse_session_custom_io) */
static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	struct avfs_fuse *fu = userdata;

	if (fu->recv && (uint8_t *)buf == fu->recv + RECV_AT && len > AVFS_IOBUF_HUGE - RECV_AT)
		len = AVFS_IOBUF_HUGE - RECV_AT;	/* (1 MiB + 4 KiB asked: it fits) */
	return avfs_fuse_conn_read(&fu->conn, fd, buf, len);
}

/* A receive buffer of our own (recv), or libfuse's when there is no memory for one. */
static void recv_new(struct avfs_fuse *fu)
{
	fu->recv = avfs_iobuf_get(&fu->bufs, AVFS_IOBUF_HUGE);
	fu->fbuf.mem = fu->recv ? fu->recv + RECV_AT : NULL;
	fu->recv_taken = false;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	return avfs_fuse_conn_writev(&((struct avfs_fuse *)userdata)->conn, fd, iov, count);
}

static const struct fuse_custom_io custom_io = { .read = io_read, .writev = io_writev };

/* The -o list for FUSE: the kernel checks permissions against our modes; the source shown is
 * the device (',' and '\\' escaped for libfuse's option parser); subtype "avfs" makes the
 * type fuse.avfs. */
static void mount_options(const struct avfs_fuse_conf *c, char *o, size_t len)
{
	const char *src = c->fsname ? c->fsname : "avfs";
	size_t n;

	n = (size_t)snprintf(o, len, "default_permissions,subtype=avfs,max_read=1048576%s%s%s%s,"
			     "fsname=", c->allow_other ? ",allow_other" : "", c->ro ? ",ro" : "",
			     c->options && *c->options ? "," : "", c->options ? c->options : "");
	if (n >= len)
		n = len - 1;
	for (; *src && n + 3 < len; src++) {
		if (*src == ',' || *src == '\\')
			o[n++] = '\\';
		o[n++] = *src;
	}
	o[n < len ? n : len - 1] = 0;
}

/* Retention removed a name behind the kernel's back: its cached entry goes (inval.c). */
static void retain_deleted(void *ctx, uint64_t dir, uint64_t ino, const char *name)
{
	struct avfs_fuse *fu = ctx;

	ra_invalidate(fu, ino);
	avfs_inval_push(fu->inval, dir, ino, name);
}

int avfs_fuse_new(struct avfs_fuse **out, struct avfs_engine *e, struct avfs_fs *fs,
		  const struct avfs_fuse_conf *c, char *why, size_t whylen)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char opts[4096 + 1024];
	struct avfs_fuse *fu = calloc(1, sizeof(*fu));

	if (!fu)
		return -ENOMEM;
	fu->e = e;
	fu->fs = fs;
	fu->ra.bufs = &fu->bufs;
	fu->atime = c->atime == AVFS_ATIME_STRICT || c->atime == AVFS_ATIME_NO ? c->atime :
		    AVFS_ATIME_RELATIME;
	fu->close = c->close == AVFS_CLOSE_DURABLE || c->close == AVFS_CLOSE_ASYNC ? c->close :
		    AVFS_CLOSE_SYNC;
	fu->noacl = c->noacl;
	snprintf(fu->socket, sizeof(fu->socket), "%s", c->socket ? c->socket : "");
	/* low level; the kernel checks permissions against our modes */
	fuse_opt_add_arg(&args, "avfsd");
	fuse_opt_add_arg(&args, "-o");
	mount_options(c, opts, sizeof(opts));
	fuse_opt_add_arg(&args, opts);
	fu->se = fuse_session_new(&args, &ops, sizeof(ops), fu);
	fuse_opt_free_args(&args);
	if (!fu->se || fuse_session_mount(fu->se, c->mountpoint)) {
		snprintf(why, whylen, "cannot mount FUSE at %s", c->mountpoint);
		if (fu->se)
			fuse_session_destroy(fu->se);
		free(fu);
		return -EIO;
	}
	fu->fd = fuse_session_fd(fu->se);
	/* shared mmap of our direct-I/O files (kernel >= 6.6): the kernel keeps the mapped pages
	 * coherent with direct reads and writes (flushed before each, invalidated around a write) */
	fu->conn.want_dio_mmap = true;
	if (fuse_session_custom_io(fu->se, &custom_io, fu->fd)) {
		snprintf(why, whylen, "cannot attach to the FUSE connection at %s", c->mountpoint);
		fuse_session_unmount(fu->se);
		fuse_session_destroy(fu->se);
		free(fu);
		return -EIO;
	}
	recv_new(fu);
	if (!c->ro) {
		struct avfs_retain_hooks h = { .log = c->log, .log_ctx = c->log_ctx,
					       .deleted = retain_deleted, .deleted_ctx = fu };

		if (avfs_inval_new(&fu->inval, fu->se) || avfs_retain_new(&fu->ret, e, fs, &h)) {
			snprintf(why, whylen, "no memory for the space rules of %s",
				 c->mountpoint);
			avfs_fuse_free(fu);
			return -ENOMEM;
		}
	}
	*out = fu;
	return 0;
}

void avfs_fuse_retain_tick(struct avfs_fuse *fu, int64_t now, int64_t wall)
{
	if (fu->ret)
		avfs_retain_room(fu->ret, 0, 0, now, wall);
}

const struct avfs_retain_stats *avfs_fuse_retain_stats(const struct avfs_fuse *fu)
{
	return fu->ret ? avfs_retain_stats(fu->ret) : NULL;
}

void avfs_fuse_free(struct avfs_fuse *fu)
{
	if (!fu)
		return;
	answer_fsyncs(fu, UINT64_MAX, -EIO);	/* none with the engine drained */
	fuse_session_unmount(fu->se);
	avfs_inval_free(fu->inval);	/* (its notices fail at once without a mount) */
	fuse_session_destroy(fu->se);
	if (fu->recv)
		avfs_iobuf_put(&fu->bufs, fu->recv, AVFS_IOBUF_HUGE);
	else
		free(fu->fbuf.mem);
	avfs_ra_drain(&fu->ra);
	avfs_iobuf_put(&fu->bufs, fu->zeros, ZERO_CHUNK);
	avfs_iobuf_drain(&fu->bufs);
	avfs_retain_free(fu->ret);
	free(fu);
}

int avfs_fuse_fd(const struct avfs_fuse *fu)
{
	return fu->fd;
}

int avfs_fuse_process(struct avfs_fuse *fu, int64_t now, int64_t wall)
{
	int n = fuse_session_receive_buf(fu->se, &fu->fbuf);

	if (n == -EINTR || n == -EAGAIN)
		return -EAGAIN;
	if (n <= 0 || fuse_session_exited(fu->se))
		return -ENODEV;
	fu->now = now;
	fu->wall = wall;
	fu->kill_suidgid = false;
	if (!(fu->fbuf.flags & FUSE_BUF_IS_FD) &&
	    (size_t)n >= sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in)) {
		const struct fuse_in_header *h = fu->fbuf.mem;
		const struct fuse_write_in *w = (const void *)(h + 1);

		fu->kill_suidgid = h->opcode == FUSE_WRITE &&
				   (w->write_flags & FUSE_WRITE_KILL_SUIDGID);
	}
	fuse_session_process_buf(fu->se, &fu->fbuf);
	if (fu->recv_taken)	/* (libfuse is done with the old one) */
		recv_new(fu);
	return 0;
}
