/*
 * uring.c — the io_uring O_DIRECT backend: one ring per open image file or block device,
 * reads, writes, FUA and flush as SQEs, completions reaped without blocking.
 * It learns the geometry (size, block sizes, alignment, rotational) from the kernel; it
 * does no scheduling, no retries and no request validation (disk.c checks before submit).
 */
#include "disk.h"
#include "sysfs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define URING_DEFAULT_DEPTH 64
/* user_data of an SQE that had to be neutralised after a failed submit (see uring_submit) */
#define URING_UDATA_DEAD UINT64_MAX

struct uring_slot {
	uint64_t cookie;
	uint32_t len;		/* expected transfer; anything shorter is -EIO */
	enum avfs_disk_op op;
};

/* One per open disk. Not locked: like a liburing ring, a disk is driven by one thread. */
struct uring_ctx {
	struct avfs_disk disk;	/* first, so one allocation holds handle and context */
	struct io_uring ring;
	int fd;
	unsigned depth;		/* most requests in flight; the ring is at least this big */
	unsigned inflight;	/* submitted, not yet reaped */
	bool registered;	/* buffers registered with the ring */
	bool rdonly;		/* opened AVFS_URING_RDONLY: writes are refused at submit */
	unsigned nfree;		/* entries of free[] in use */
	unsigned *free;		/* stack of free slot indices */
	struct uring_slot *slots;	/* indexed by SQE user_data */
};

/* Whether block device dev spins. A partition has no queue/ of its own: its parent
 * directory (the whole disk) has. Unknown devices (tmpfs, FUSE, overlay: major 0 or no
 * sysfs entry) are reported as not rotational, which only costs scheduling quality. */
static bool dev_rotational(dev_t dev)
{
	char path[PATH_MAX];
	int64_t r;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/rotational",
		 major(dev), minor(dev));
	r = disk_sysfs_u64(path);
	if (r >= 0)
		return r != 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", major(dev), minor(dev));
	if (access(path, F_OK))
		return false;
	/* the kernel follows the M:m symlink before "..", so this is the disk's queue */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/rotational",
		 major(dev), minor(dev));
	r = disk_sysfs_u64(path);
	return r > 0;
}

/* Geometry of a block device from its ioctls. 0 or -errno. */
static int blockdev_geometry(int fd, const struct stat *st, struct avfs_disk_info *in)
{
	uint64_t size;
	int lbs, pbs;
	struct statx stx;

	if (ioctl(fd, BLKGETSIZE64, &size) || ioctl(fd, BLKSSZGET, &lbs) ||
	    ioctl(fd, BLKPBSZGET, &pbs))
		return -errno;
	if (lbs <= 0)
		return -EINVAL;
	in->lbs = lbs;
	in->pbs = pbs >= lbs ? (uint32_t)pbs : in->lbs;
	in->size = size - size % in->lbs;
	/* newer kernels report DIO alignment for block devices too; otherwise the
	 * logical block size is the alignment every kernel accepts */
	in->mem_align = in->lbs;
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_mem_align)
		in->mem_align = stx.stx_dio_mem_align;
	in->rotational = dev_rotational(st->st_rdev);
	in->is_blockdev = true;
	return 0;
}

/* Geometry of an image file: O_DIRECT alignment from statx where the file system
 * reports it, 512 otherwise (what ext4/xfs on 512e disks accept). 0 or -errno. */
static int file_geometry(int fd, const struct stat *st, struct avfs_disk_info *in)
{
	struct statx stx;

	in->lbs = 512;
	in->mem_align = 0;
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		in->lbs = stx.stx_dio_offset_align;
		in->mem_align = stx.stx_dio_mem_align;
	}
	if (!in->mem_align)
		in->mem_align = in->lbs;
	/* st_blksize is the file system's preferred I/O size; keep pbs a multiple of lbs */
	in->pbs = st->st_blksize > 0 && st->st_blksize % in->lbs == 0 ?
		  (uint32_t)st->st_blksize : in->lbs;
	in->size = (uint64_t)st->st_size - (uint64_t)st->st_size % in->lbs;
	in->rotational = dev_rotational(st->st_dev);
	in->is_blockdev = false;
	return 0;
}

static int uring_submit(void *ctx, const struct avfs_disk_req *req)
{
	struct uring_ctx *u = ctx;
	struct io_uring_sqe *sqe;
	uint64_t off = req->lba * u->disk.info.lbs;
	unsigned idx;
	int ret;

	if (req->op == AVFS_DISK_SEEK)
		return -EOPNOTSUPP;	/* no head to position: disk.c refuses it first anyway */
	if (req->op != AVFS_DISK_READ && req->op != AVFS_DISK_WRITE && req->op != AVFS_DISK_FLUSH)
		return -EINVAL;
	if (req->op == AVFS_DISK_WRITE && u->rdonly)
		return -EBADF;	/* fail now rather than as a completion the caller must map */
	if (u->inflight >= u->depth || !u->nfree)
		return -EBUSY;
	sqe = io_uring_get_sqe(&u->ring);
	if (!sqe)
		return -EBUSY;
	idx = u->free[u->nfree - 1];

	switch (req->op) {
	case AVFS_DISK_READ:
		if (req->iovcnt)	/* O_DIRECT readv: each piece aligned (disk.c checked) */
			io_uring_prep_readv(sqe, u->fd, req->iov, req->iovcnt, off);
		else if (req->buf_index >= 0)
			io_uring_prep_read_fixed(sqe, u->fd, req->buf, req->len, off, req->buf_index);
		else
			io_uring_prep_read(sqe, u->fd, req->buf, req->len, off);
		break;
	case AVFS_DISK_WRITE:
		if (req->iovcnt)
			io_uring_prep_writev(sqe, u->fd, req->iov, req->iovcnt, off);
		else if (req->buf_index >= 0)
			io_uring_prep_write_fixed(sqe, u->fd, req->buf, req->len, off, req->buf_index);
		else
			io_uring_prep_write(sqe, u->fd, req->buf, req->len, off);
		if (req->flags & AVFS_DISK_FUA)
			sqe->rw_flags = RWF_DSYNC;	/* per-write O_DSYNC: FUA on devices that have it */
		break;
	case AVFS_DISK_FLUSH:
		io_uring_prep_fsync(sqe, u->fd, IORING_FSYNC_DATASYNC);
		break;
	case AVFS_DISK_SEEK:
		break;	/* refused above */
	}
	io_uring_sqe_set_data64(sqe, idx);

	ret = io_uring_submit(&u->ring);
	/*
	 * Our SQE is the last one in the SQ ring and the kernel consumes in order, so it
	 * was taken iff nothing is left. If it was not, liburing has already published it
	 * and the next io_uring_enter would pick it up: turn it into a NOP whose completion
	 * reap drops, so that a failed submit queues nothing (the kernel reads SQEs only
	 * inside io_uring_enter from this thread, since we use no SQPOLL).
	 */
	if (io_uring_sq_ready(&u->ring)) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, URING_UDATA_DEAD);
		return ret < 0 ? ret : -EAGAIN;
	}
	u->nfree--;
	u->slots[idx].cookie = req->cookie;
	u->slots[idx].len = req->len;
	u->slots[idx].op = req->op;
	u->inflight++;
	return 0;
}

static int uring_reap(void *ctx, struct avfs_disk_cqe *cqes, unsigned max)
{
	struct uring_ctx *u = ctx;
	struct io_uring_cqe *cqe;
	unsigned n = 0;

	while (n < max && !io_uring_peek_cqe(&u->ring, &cqe)) {
		uint64_t idx = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;
		struct uring_slot *s;

		io_uring_cqe_seen(&u->ring, cqe);
		if (idx >= u->depth)
			continue;	/* URING_UDATA_DEAD: a neutralised failed submit */
		s = &u->slots[idx];
		cqes[n].cookie = s->cookie;
		if (res < 0)
			cqes[n].res = res;
		else if (s->op == AVFS_DISK_FLUSH)
			cqes[n].res = 0;
		else if ((uint32_t)res != s->len)
			cqes[n].res = -EIO;	/* short transfer: the device shrank or hit EOF */
		else
			cqes[n].res = res;
		u->free[u->nfree++] = (unsigned)idx;
		u->inflight--;
		n++;
	}
	return (int)n;
}

static int uring_wait(void *ctx)
{
	struct uring_ctx *u = ctx;
	struct io_uring_cqe *cqe;
	int ret;

	if (!u->inflight)
		return -EAGAIN;
	do
		ret = io_uring_wait_cqe(&u->ring, &cqe);	/* leaves the CQE for reap */
	while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

static int uring_register_buffers(void *ctx, const struct iovec *iov, unsigned n)
{
	struct uring_ctx *u = ctx;
	int ret;

	/* the kernel holds one buffer table per ring: replace, never stack */
	if (u->registered) {
		ret = io_uring_unregister_buffers(&u->ring);
		if (ret < 0)
			return ret;
		u->registered = false;
		/* disk.c keeps the old table on failure; it no longer matches the ring */
		u->disk.reg = NULL;
		u->disk.nreg = 0;
	}
	ret = io_uring_register_buffers(&u->ring, iov, n);
	if (ret < 0)
		return ret;
	u->registered = true;
	return 0;
}

static int uring_poll_fd(void *ctx)
{
	struct uring_ctx *u = ctx;

	return u->ring.ring_fd;
}

static unsigned uring_inflight(void *ctx)
{
	struct uring_ctx *u = ctx;

	return u->inflight;
}

static void uring_close(void *ctx)
{
	struct uring_ctx *u = ctx;
	struct avfs_disk_cqe cqe;

	/* Wait for what is still in flight: after close the caller frees its buffers, and
	 * a read completing into freed memory would be silent corruption. */
	while (u->inflight) {
		if (!uring_reap(u, &cqe, 1) && uring_wait(u))
			break;
	}
	io_uring_queue_exit(&u->ring);
	close(u->fd);
	free(u->free);
	free(u->slots);
	free(u);
}

static const struct avfs_disk_ops uring_ops = {
	.name = "uring",
	.submit = uring_submit,
	.reap = uring_reap,
	.wait = uring_wait,
	.register_buffers = uring_register_buffers,
	.poll_fd = uring_poll_fd,
	.inflight = uring_inflight,
	.close = uring_close,
};

int avfs_uring_open(const char *path, unsigned flags, unsigned depth, struct avfs_disk **out)
{
	struct uring_ctx *u;
	struct stat st;
	int ret;

	if (!path || !out || (flags & ~AVFS_URING_RDONLY))
		return -EINVAL;
	if (!depth)
		depth = URING_DEFAULT_DEPTH;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->depth = depth;
	u->rdonly = flags & AVFS_URING_RDONLY;
	u->slots = calloc(depth, sizeof(*u->slots));
	u->free = calloc(depth, sizeof(*u->free));
	if (!u->slots || !u->free) {
		ret = -ENOMEM;
		goto err_free;
	}
	/* hand out low indices first: keeps debugging output readable */
	for (unsigned i = 0; i < depth; i++)
		u->free[i] = depth - 1 - i;
	u->nfree = depth;

	u->fd = open(path, ((flags & AVFS_URING_RDONLY) ? O_RDONLY : O_RDWR) |
		     O_DIRECT | O_CLOEXEC);
	if (u->fd < 0) {
		/* a directory is just another file that is not a disk: same error as a
		 * char device or fifo, whatever the open mode */
		ret = errno == EISDIR ? -EINVAL : -errno;
		goto err_free;
	}
	if (fstat(u->fd, &st)) {
		ret = -errno;
		goto err_close;
	}
	if (S_ISBLK(st.st_mode))
		ret = blockdev_geometry(u->fd, &st, &u->disk.info);
	else if (S_ISREG(st.st_mode))
		ret = file_geometry(u->fd, &st, &u->disk.info);
	else
		ret = -EINVAL;
	if (ret)
		goto err_close;
	if (!u->disk.info.size) {
		ret = -EINVAL;	/* nothing addressable: every request would be out of range */
		goto err_close;
	}
	u->disk.info.has_seek = false;
	snprintf(u->disk.info.model, sizeof(u->disk.info.model), "uring");
	snprintf(u->disk.ident.backend, sizeof(u->disk.ident.backend), "uring");

	/* No IORING_SETUP_COOP_TASKRUN/DEFER_TASKRUN: with those, completions would wait
	 * for us to enter the kernel, and reap (peek only) or poll_fd could miss them. */
	ret = io_uring_queue_init(depth, &u->ring, 0);
	if (ret < 0)
		goto err_close;

	u->disk.ops = &uring_ops;
	u->disk.vectored = true;	/* readv/writev; the kernel copies the iovec array at submit */
	u->disk.ctx = u;
	*out = &u->disk;
	return 0;

err_close:
	close(u->fd);
err_free:
	free(u->free);
	free(u->slots);
	free(u);
	return ret;
}
