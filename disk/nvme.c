/*
 * nvme.c — NVMe identification through libnvme (Identify Controller / Namespace), and the
 * passthrough backend: NVMe READ/WRITE/FLUSH as IORING_OP_URING_CMD on the namespace's
 * generic char device, one ring per disk, requests above the transfer limit split into
 * consecutive commands, NVMe status decoded into -errno. No scheduling or retries here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* strerrorname_np: meson defines it, a hand build may not */
#endif
#include "nvme.h"
#include "sysfs_i.h"

#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* libnvme.h brings nvme/ioctl.h (struct nvme_uring_cmd, NVME_URING_CMD_IO); <linux/nvme_ioctl.h>
 * defines the same structs and must not be included beside it */
#include <libnvme.h>
#include <liburing.h>

/* user_data of an SQE that had to be neutralised after a failed submit (see nvme_issue) */
#define NVME_UDATA_DEAD UINT64_MAX
/* Bytes per command when neither MDTS nor the kernel states a limit (PCIe NVMe drivers
 * take at least this much). */
#define NVME_DEFAULT_XFER (512u * 1024)
#define NVME_NLB_MAX 65536u		/* CDW12 NLB is 16 bits, 0-based */
#define NVME_CDW12_FUA (1u << 30)	/* NVME_IO_FUA, in the control half of CDW12 */
#define NVME_STATUS_CODE 0x7ff		/* SCT and SC: what nvme_status_to_string decodes */
#define NVME_LOG_KINDS 16		/* distinct statuses / errnos logged per disk */

struct nvme_slot {
	struct avfs_disk_req req;	/* as submitted */
	uint32_t done;		/* bytes moved by the request's earlier commands */
	uint32_t part;		/* bytes of its command in flight */
	bool complete;		/* finished (res holds the result); its last CQE waits for reap */
	int64_t res;		/* the request's result once complete */
};

/* One per open disk. Not locked: like a liburing ring, a disk is driven by one thread. */
struct nvme_ctx {
	struct avfs_disk disk;	/* first, so one allocation holds handle and context */
	struct avfs_nvme_ident id;
	struct io_uring ring;
	char path[PATH_MAX];	/* the generic char device, for messages */
	int fd;
	uint32_t xfer;		/* bytes per command: requests above it are split */
	bool rdonly;		/* opened AVFS_NVME_RDONLY: writes are refused at submit */
	bool trace;		/* AVFS_NVME_TRACE was set at open */
	bool ring_ready;	/* ring set up (for nvme_free) */
	unsigned inflight;	/* submitted, not yet reaped */
	unsigned nfree;		/* entries of free[] in use */
	unsigned free[AVFS_NVME_QUEUE];		/* stack of free slot indices */
	struct nvme_slot slots[AVFS_NVME_QUEUE];	/* indexed by SQE user_data */
	int logged[NVME_LOG_KINDS];	/* statuses (SCT/SC) and -errnos already printed */
	unsigned nlogged;
};

static const struct avfs_disk_ops nvme_ops;

/* ------------------------------------------------------------------ status ---- */

int avfs_nvme_status_errno(int status)
{
	if (status <= 0)
		return status;	/* success, or a kernel -errno */
	switch ((status >> NVME_SCT_SHIFT) & NVME_SCT_MASK) {
	case NVME_SCT_GENERIC:
		switch (status & NVME_SC_MASK) {
		case NVME_SC_SUCCESS:
			return 0;
		case NVME_SC_INVALID_OPCODE:
			return -EOPNOTSUPP;	/* the command is not implemented: a feature is absent */
		case NVME_SC_INVALID_FIELD:
		case NVME_SC_INVALID_NS:
		case NVME_SC_SGL_INVALID_LAST:
		case NVME_SC_SGL_INVALID_COUNT:
		case NVME_SC_SGL_INVALID_DATA:
		case NVME_SC_SGL_INVALID_METADATA:
		case NVME_SC_SGL_INVALID_TYPE:
		case NVME_SC_CMB_INVALID_USE:
		case NVME_SC_PRP_INVALID_OFFSET:
		case NVME_SC_SGL_INVALID_OFFSET:
		case NVME_SC_LBA_RANGE:
			return -EINVAL;	/* as the SCSI path's ILLEGAL REQUEST, and avfs_disk_check */
		case NVME_SC_OP_DENIED:
			return -EACCES;
		case NVME_SC_SANITIZE_IN_PROGRESS:
		case NVME_SC_FORMAT_IN_PROGRESS:
			return -EBUSY;
		case NVME_SC_NS_WRITE_PROTECTED:
			return -EROFS;
		case NVME_SC_CAP_EXCEEDED:
			return -ENOSPC;
		case NVME_SC_NS_NOT_READY:
			return -EAGAIN;
		case NVME_SC_RESERVATION_CONFLICT:
			return -EBADE;	/* the kernel's BLK_STS_RESV_CONFLICT */
		default:
			return -EIO;	/* data transfer error, aborts, internal error... */
		}
	case NVME_SCT_CMD_SPECIFIC:
		switch (status & NVME_SC_MASK) {
		case NVME_SC_INVALID_PI:
			return -EILSEQ;
		case NVME_SC_READ_ONLY:
			return -EROFS;
		default:
			return -EIO;
		}
	case NVME_SCT_MEDIA:
		switch (status & NVME_SC_MASK) {
		case NVME_SC_ACCESS_DENIED:
			return -EACCES;
		case NVME_SC_COMPARE_FAILED:
			return -EILSEQ;
		default:
			return -EIO;	/* write fault, unrecovered read error, end-to-end checks */
		}
	default:
		return -EIO;	/* path related, vendor specific, reserved */
	}
}

const char *avfs_nvme_status_str(int status)
{
	const char *s;

	if (status < 0)
		return strerror(-status);
	s = nvme_status_to_string(status & NVME_STATUS_CODE, false);
	return s && *s ? s : "Unknown NVMe status";
}

static const char *errno_name(int err)
{
	const char *name = strerrorname_np(-err);

	return name ? name : "E?";
}

/* "status 0x4080 (LBA Out of Range: ...; DNR)" or "-EINTR (Interrupted system call)". */
static char *status_text(int res, char *buf, size_t n)
{
	if (res < 0)
		snprintf(buf, n, "-%s (%s)", errno_name(res), strerror(-res));
	else if (!res)
		snprintf(buf, n, "status 0x0000 (ok)");
	else
		snprintf(buf, n, "status 0x%04x (%s%s%s)", (unsigned)res, avfs_nvme_status_str(res),
			 res & NVME_SC_DNR ? "; DNR" : "", res & NVME_SC_MORE ? "; More" : "");
	return buf;
}

/* ------------------------------------------------------------------ commands ---- */

static const char *op_name(enum avfs_disk_op op)
{
	return op == AVFS_DISK_WRITE ? "WRITE" : op == AVFS_DISK_READ ? "READ" : "FLUSH";
}

/* The command in flight for slot s, as the trace shows it. */
static char *cmd_text(const struct nvme_ctx *c, const struct nvme_slot *s, char *buf, size_t n)
{
	const uint32_t lbs = c->disk.info.lbs;

	if (s->req.op == AVFS_DISK_FLUSH)
		snprintf(buf, n, "FLUSH nsid %" PRIu32, c->id.nsid);
	else
		snprintf(buf, n, "%s nsid %" PRIu32 " slba 0x%" PRIx64 " nlb %" PRIu32 "%s",
			 op_name(s->req.op), c->id.nsid, s->req.lba + s->done / lbs, s->part / lbs,
			 s->req.op == AVFS_DISK_WRITE && (s->req.flags & AVFS_DISK_FUA) ? " fua" : "");
	return buf;
}

/* Print an error once per kind (NVMe status code, or -errno) per disk. */
static void nvme_log(struct nvme_ctx *c, const struct nvme_slot *s, int res, int err)
{
	int kind = res > 0 ? (res & NVME_STATUS_CODE) : res;
	char what[96], st[192];

	for (unsigned i = 0; i < c->nlogged; i++)
		if (c->logged[i] == kind)
			return;
	if (c->nlogged == NVME_LOG_KINDS)
		return;
	c->logged[c->nlogged++] = kind;
	if (s->req.op == AVFS_DISK_FLUSH)
		snprintf(what, sizeof(what), "FLUSH");
	else
		snprintf(what, sizeof(what), "%s at LBA %" PRIu64 ", %" PRIu32 " bytes",
			 op_name(s->req.op), s->req.lba + s->done / c->disk.info.lbs, s->part);
	fprintf(stderr, "avfs nvme %s: %s: %s -> -%s (%s); further errors of this kind on this "
		"device are not reported\n", c->path, what, status_text(res, st, sizeof(st)),
		errno_name(err), strerror(-err));
}

/* Queue the next command of slot s: the whole FLUSH, or the next piece of a READ/WRITE
 * (at most xfer bytes). 0, or -errno with nothing queued. */
static int nvme_issue(struct nvme_ctx *c, struct nvme_slot *s)
{
	const uint32_t lbs = c->disk.info.lbs;
	struct nvme_uring_cmd cmd = { .nsid = c->id.nsid };
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
	int ret;

	if (!sqe)
		return -EBUSY;
	if (s->req.op == AVFS_DISK_FLUSH) {
		cmd.opcode = nvme_cmd_flush;
		s->part = 0;
	} else {
		uint64_t slba = s->req.lba + s->done / lbs;

		s->part = s->req.len - s->done;
		if (s->part > c->xfer)
			s->part = c->xfer;
		cmd.opcode = s->req.op == AVFS_DISK_WRITE ? nvme_cmd_write : nvme_cmd_read;
		cmd.addr = (uint64_t)(uintptr_t)((char *)s->req.buf + s->done);
		cmd.data_len = s->part;
		cmd.cdw10 = (uint32_t)slba;
		cmd.cdw11 = (uint32_t)(slba >> 32);
		cmd.cdw12 = s->part / lbs - 1;
		/* each piece carries the FUA asked for: the request completes only once all of
		 * it is on the medium (the mixer's "FUA on the last chunk" is its own chunks) */
		if (s->req.op == AVFS_DISK_WRITE && (s->req.flags & AVFS_DISK_FUA))
			cmd.cdw12 |= NVME_CDW12_FUA;
	}
	/* with IORING_SETUP_SQE128 the command (72 bytes) fills sqe->cmd and the 64 bytes after
	 * the SQE; liburing 2.3 declares cmd as a zero-length array, so copy through a plain
	 * pointer gcc does not bound */
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = NVME_URING_CMD_IO;
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, cmd), &cmd, sizeof(cmd));
	io_uring_sqe_set_data64(sqe, (uint64_t)(s - c->slots));

	ret = io_uring_submit(&c->ring);
	/* As in uring.c: our SQE is the last in the SQ ring and the kernel consumes in order,
	 * so it was taken iff nothing is left; if not, make it a NOP whose completion is
	 * dropped, so that a failed issue queues nothing. */
	if (io_uring_sq_ready(&c->ring)) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, NVME_UDATA_DEAD);
		return ret < 0 ? ret : -EAGAIN;
	}
	return 0;
}

/*
 * The command in flight for slot s completed with res (cqe->res: 0, an NVMe status, or a
 * -errno). Trace it; if the request has more to move, issue its next command and return
 * false; else record the request's result in s->res and return true. Once per CQE.
 */
static bool nvme_advance(struct nvme_ctx *c, struct nvme_slot *s, int res)
{
	char cmd[96], st[192];
	int err = avfs_nvme_status_errno(res);

	if (c->trace)
		fprintf(stderr, "nvme: %s -> %s%s%s\n", cmd_text(c, s, cmd, sizeof(cmd)),
			status_text(res, st, sizeof(st)), err && res > 0 ? " -" : "",
			err && res > 0 ? errno_name(err) : "");
	if (err) {
		nvme_log(c, s, res, err);
		s->res = err;
		return true;
	}
	if (s->req.op == AVFS_DISK_FLUSH) {
		s->res = 0;
		return true;
	}
	s->done += s->part;
	if (s->done == s->req.len) {
		s->res = s->req.len;
		return true;
	}
	err = nvme_issue(c, s);
	if (err) {
		nvme_log(c, s, err, err);
		s->res = err;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ ops ---- */

static int nvme_submit(void *ctx, const struct avfs_disk_req *req)
{
	struct nvme_ctx *c = ctx;
	struct nvme_slot *s;
	int ret;

	if (req->op == AVFS_DISK_SEEK)
		return -EOPNOTSUPP;	/* no head to position: disk.c refuses it first anyway */
	if (req->op != AVFS_DISK_READ && req->op != AVFS_DISK_WRITE && req->op != AVFS_DISK_FLUSH)
		return -EINVAL;
	if (req->op == AVFS_DISK_WRITE && c->rdonly)
		return -EBADF;	/* fail now rather than as a completion the caller must map */
	if (req->op != AVFS_DISK_FLUSH && (!req->len || req->len % c->disk.info.lbs))
		return -EINVAL;	/* checked by disk.c too; a direct call must not send NLB -1 */
	if (c->inflight >= AVFS_NVME_QUEUE || !c->nfree)
		return -EBUSY;
	s = &c->slots[c->free[c->nfree - 1]];
	memset(s, 0, sizeof(*s));
	s->req = *req;
	ret = nvme_issue(c, s);
	if (ret)
		return ret;
	c->nfree--;
	c->inflight++;
	return 0;
}

static int nvme_reap(void *ctx, struct avfs_disk_cqe *cqes, unsigned max)
{
	struct nvme_ctx *c = ctx;
	struct io_uring_cqe *cqe;
	unsigned n = 0;

	while (n < max && !io_uring_peek_cqe(&c->ring, &cqe)) {
		uint64_t idx = io_uring_cqe_get_data64(cqe);
		struct nvme_slot *s;

		if (idx >= AVFS_NVME_QUEUE) {
			io_uring_cqe_seen(&c->ring, cqe);	/* NVME_UDATA_DEAD */
			continue;
		}
		s = &c->slots[idx];
		/* complete already: nvme_wait advanced it and left this CQE for us */
		if (!s->complete && !nvme_advance(c, s, cqe->res)) {
			io_uring_cqe_seen(&c->ring, cqe);	/* its next command is in flight */
			continue;
		}
		io_uring_cqe_seen(&c->ring, cqe);
		cqes[n].cookie = s->req.cookie;
		cqes[n].res = s->res;
		c->free[c->nfree++] = (unsigned)idx;
		c->inflight--;
		n++;
	}
	return (int)n;
}

/* Block until a request is complete. Intermediate commands of split requests are handled
 * here (their next command issued); the CQE of a complete request stays for reap, so that
 * poll_fd stays readable while completions wait. */
static int nvme_wait(void *ctx)
{
	struct nvme_ctx *c = ctx;
	struct io_uring_cqe *cqe;
	int ret;

	if (!c->inflight)
		return -EAGAIN;
	for (;;) {
		uint64_t idx;
		struct nvme_slot *s;

		do
			ret = io_uring_wait_cqe(&c->ring, &cqe);
		while (ret == -EINTR);
		if (ret < 0)
			return ret;
		idx = io_uring_cqe_get_data64(cqe);
		if (idx >= AVFS_NVME_QUEUE) {
			io_uring_cqe_seen(&c->ring, cqe);
			continue;
		}
		s = &c->slots[idx];
		if (s->complete || nvme_advance(c, s, cqe->res)) {
			s->complete = true;
			return 0;
		}
		io_uring_cqe_seen(&c->ring, cqe);
	}
}

/* Accepted so that callers using registered buffers run unchanged on this backend (disk.c
 * checks requests against the table); there is nothing to pin: each passthrough command
 * maps the user pages itself. */
static int nvme_register_buffers(void *ctx, const struct iovec *iov, unsigned n)
{
	(void)ctx;
	(void)iov;
	(void)n;
	return 0;
}

static int nvme_poll_fd(void *ctx)
{
	struct nvme_ctx *c = ctx;

	return c->ring.ring_fd;
}

static unsigned nvme_inflight(void *ctx)
{
	struct nvme_ctx *c = ctx;

	return c->inflight;
}

static void nvme_free(struct nvme_ctx *c)
{
	if (c->ring_ready)
		io_uring_queue_exit(&c->ring);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void nvme_close(void *ctx)
{
	struct nvme_ctx *c = ctx;
	struct avfs_disk_cqe cqe;

	/* Wait for what is still in flight: after close the caller frees its buffers, and
	 * a read completing into freed memory would be silent corruption. */
	while (c->inflight) {
		if (!nvme_reap(c, &cqe, 1) && nvme_wait(c))
			break;
	}
	nvme_free(c);
}

static const struct avfs_disk_ops nvme_ops = {
	.name = "nvme",
	.submit = nvme_submit,
	.reap = nvme_reap,
	.wait = nvme_wait,
	.register_buffers = nvme_register_buffers,
	.poll_fd = nvme_poll_fd,
	.inflight = nvme_inflight,
	.close = nvme_close,
};

/* ------------------------------------------------------------------ identification ---- */

/* src into dst[n], cut to fit. */
static void set_str(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* The kernel's name of the device st is ("nvme0n1", "ng0n1", "null", "loop0"), from its
 * /sys/dev link; without one (no sysfs), the last component of path. */
static void dev_name(const struct stat *st, const char *path, char *name, size_t n)
{
	char link[64], target[PATH_MAX];
	const char *base;
	ssize_t len;

	snprintf(link, sizeof(link), "/sys/dev/%s/%u:%u", S_ISBLK(st->st_mode) ? "block" : "char",
		 major(st->st_rdev), minor(st->st_rdev));
	len = readlink(link, target, sizeof(target) - 1);
	if (len > 0) {
		target[len] = '\0';
		path = target;
	}
	base = strrchr(path, '/');
	set_str(name, n, base ? base + 1 : path);
}

/* Open path with flags, and fill *st and its kernel name (dev_name). The descriptor, or
 * -errno. */
static int open_node(const char *path, int flags, struct stat *st, char *name, size_t n)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	dev_name(st, path, name, n);
	return fd;
}

/* Whether name is PREFIX<controller>n<namespace> and nothing more ("nvme0n1", "ng0n1"; not a
 * partition "nvme0n1p1" nor a controller "nvme0"). */
static bool ns_name(const char *name, const char *prefix, unsigned *ctrl, unsigned *ns)
{
	size_t l = strlen(prefix);
	int end = 0;

	return !strncmp(name, prefix, l) && isdigit((unsigned char)name[l]) &&
	       sscanf(name + l, "%un%u%n", ctrl, ns, &end) == 2 && end > 0 && !name[l + end];
}

/* fd is an NVMe namespace: 0 and its nsid, or -ENOTTY (anything else), or -errno. */
static int ns_check(int fd, const struct stat *st, const char *name, uint32_t *nsid)
{
	unsigned a, b;
	int e;

	if (!S_ISBLK(st->st_mode) && !S_ISCHR(st->st_mode))
		return -ENOTTY;	/* an image file, a directory, a fifo */
	/* a char device's ioctl numbers belong to its driver, and NVME_IOCTL_ID may mean
	 * something else to another one: ask only the generic NVMe nodes ("ngXnY", by the
	 * kernel's name). Block devices all go through the block layer, which answers ioctls
	 * it does not know with an error. */
	if (S_ISCHR(st->st_mode) && !ns_name(name, "ng", &a, &b))
		return -ENOTTY;
	if (!nvme_get_nsid(fd, nsid))
		return 0;
	e = errno;
	/* loop answers unknown ioctls with EINVAL, others with ENOTTY */
	return e == ENOTTY || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || !e ? -ENOTTY : -e;
}

/* Identify the namespace open on fd into *out. 0 or -errno. */
static int identify_fd(int fd, const struct stat *st, const char *name,
		       struct avfs_nvme_ident *out)
{
	struct nvme_id_ctrl ctrl;
	struct nvme_id_ns ns;
	uint32_t nsid;
	uint8_t f;
	int ret = ns_check(fd, st, name, &nsid);

	if (ret)
		return ret;
	/* admin commands through the namespace node reach its controller */
	ret = nvme_identify_ctrl(fd, &ctrl);
	if (!ret)
		ret = nvme_identify_ns(fd, nsid, &ns);
	if (ret)
		return ret < 0 ? (errno ? -errno : -EIO) : avfs_nvme_status_errno(ret);

	memset(out, 0, sizeof(*out));
	out->vid = le16toh(ctrl.vid);
	avfs_copy_trim(out->model, sizeof(out->model), ctrl.mn, sizeof(ctrl.mn));
	avfs_copy_trim(out->serial, sizeof(out->serial), ctrl.sn, sizeof(ctrl.sn));
	avfs_copy_trim(out->firmware, sizeof(out->firmware), ctrl.fr, sizeof(ctrl.fr));
	/* MDTS is a power of two in units of the controller's minimum memory page size,
	 * CAP.MPSMIN. CAP is a register in the controller's PCI BAR, which libnvme cannot
	 * read on PCIe (nvme_get_property is a Fabrics command): assume MPSMIN = 0, 4 KiB
	 * pages (QEMU's, and nearly every controller's). The kernel knows CAP; its
	 * max_hw_sectors_kb, read at open, bounds the commands anyway. Limits of 4 GiB and
	 * more exceed any request: "no limit". */
	out->mdts = ctrl.mdts && ctrl.mdts < 20 ? 4096u << ctrl.mdts : 0;
	out->vwc = ctrl.vwc & NVME_CTRL_VWC_PRESENT;
	out->nsid = nsid;
	out->nsze = le64toh(ns.nsze);
	nvme_id_ns_flbas_to_lbaf_inuse(ns.flbas, &f);
	out->lbaf = f;
	out->lba_data = ns.lbaf[f].ds < 32 ? 1u << ns.lbaf[f].ds : 0;
	out->lba_meta = le16toh(ns.lbaf[f].ms);
	return 0;
}

int avfs_nvme_identify(const char *path, struct avfs_nvme_ident *out)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int fd, ret;

	if (!path || !out)
		return -EINVAL;
	/* O_NONBLOCK: a fifo must not hang the open */
	fd = open_node(path, O_RDONLY | O_NONBLOCK, &st, name, sizeof(name));
	if (fd < 0)
		return fd;
	ret = identify_fd(fd, &st, name, out);
	close(fd);
	return ret;
}

/* The generic char device of the namespace at path into ng ("/dev/ngXnY": path itself when
 * it is one) and the namespace's block device name into blk ("nvme0n1"). 0, -ENOTTY (not
 * NVMe), -EINVAL (a partition), or open's -errno. */
static int generic_node(const char *path, char *ng, size_t n, char *blk, size_t blkn)
{
	char name[NAME_MAX + 1];
	struct stat st;
	uint32_t nsid;
	unsigned a, b;
	int fd, ret;

	fd = open_node(path, O_RDONLY | O_NONBLOCK, &st, name, sizeof(name));
	if (fd < 0)
		return fd;
	ret = ns_check(fd, &st, name, &nsid);
	if (!ret && S_ISCHR(st.st_mode) && ns_name(name, "ng", &a, &b))
		snprintf(ng, n, "%s", path);
	else if (!ret && S_ISBLK(st.st_mode) && ns_name(name, "nvme", &a, &b))
		snprintf(ng, n, "/dev/ng%un%u", a, b);
	else if (!ret)
		ret = -EINVAL;	/* a partition: passthrough LBAs address the whole namespace */
	if (!ret)
		snprintf(blk, blkn, "nvme%un%u", a, b);
	close(fd);
	return ret;
}

/* A number from the namespace's block queue in sysfs (/sys/block/NAME/queue/FILE); negative
 * when there is none. */
static int64_t queue_attr(const char *name, const char *file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/block/%s/queue/%s", name, file);
	return disk_sysfs_u64(path);
}

/* Bytes per command: MDTS, the kernel's own limits for the queue (passthrough goes through
 * them: it refuses larger commands with -EINVAL), the 16-bit NLB field, AVFS_DISK_MAX_IO; a
 * multiple of lbs. The segment limit counts one page less than max_segments: a buffer that
 * starts inside a page (mem_align is only lbs) spans one page more than its length. */
static uint32_t transfer_limit(const struct avfs_nvme_ident *id, const char *blk)
{
	uint64_t max = AVFS_DISK_MAX_IO;
	int64_t kb = queue_attr(blk, "max_hw_sectors_kb");
	int64_t segs = queue_attr(blk, "max_segments"), segsz = queue_attr(blk, "max_segment_size");
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		page = 4096;
	if (segsz > 0 && segsz < page)
		page = segsz;
	if (id->mdts && id->mdts < max)
		max = id->mdts;
	if (kb > 0 && (uint64_t)kb * 1024 < max)
		max = (uint64_t)kb * 1024;
	if (segs > 1 && (uint64_t)(segs - 1) * (uint64_t)page < max)
		max = (uint64_t)(segs - 1) * (uint64_t)page;
	if (!id->mdts && kb <= 0 && max > NVME_DEFAULT_XFER)
		max = NVME_DEFAULT_XFER;
	if (max > (uint64_t)NVME_NLB_MAX * id->lba_data)
		max = (uint64_t)NVME_NLB_MAX * id->lba_data;
	max -= max % id->lba_data;
	return max ? (uint32_t)max : id->lba_data;
}

/* info and ident of an opened namespace. 0, or -EMEDIUMTYPE / -EINVAL for a format or size
 * this backend cannot drive. */
static int fill_disk(struct nvme_ctx *c, const char *blk)
{
	const struct avfs_nvme_ident *id = &c->id;
	struct avfs_disk_info *in = &c->disk.info;
	struct avfs_disk_ident *di = &c->disk.ident;
	int64_t pbs = queue_attr(blk, "physical_block_size");

	/* metadata would need its own buffer (or interleaved data): not done here */
	if (id->lba_meta || id->lba_data < 512 || id->lba_data > 65536 ||
	    (id->lba_data & (id->lba_data - 1)))
		return -EMEDIUMTYPE;
	if (!id->nsze || id->nsze > UINT64_MAX / id->lba_data)
		return -EINVAL;
	in->size = id->nsze * id->lba_data;
	in->lbs = id->lba_data;
	in->pbs = pbs > 0 && pbs % in->lbs == 0 && pbs <= 65536 ? (uint32_t)pbs : in->lbs;
	in->mem_align = in->lbs;
	in->rotational = false;
	in->has_seek = false;
	in->is_blockdev = true;	/* a device, not an image file, whichever node reaches it */
	snprintf(in->model, sizeof(in->model), "nvme: %s", id->model);
	c->xfer = transfer_limit(id, blk);

	avfs_nvme_ident_export(id, di);
	snprintf(di->backend, sizeof(di->backend), "nvme");
	di->max_transfer = c->xfer;
	return 0;
}

void avfs_nvme_ident_export(const struct avfs_nvme_ident *id, struct avfs_disk_ident *di)
{
	*di = (struct avfs_disk_ident){ .wce_known = true, .wce = id->vwc,
					.max_transfer = id->mdts,
					.rotation_rate = 1 };	/* non-rotating, in VPD B1's terms */
	snprintf(di->transport, sizeof(di->transport), "nvme");
	snprintf(di->vendor, sizeof(di->vendor), "0x%04x", id->vid);
	snprintf(di->product, sizeof(di->product), "%s", id->model);
	snprintf(di->serial, sizeof(di->serial), "%s", id->serial);
	snprintf(di->firmware, sizeof(di->firmware), "%s", id->firmware);
	snprintf(di->lba_format, sizeof(di->lba_format), "LBAF %u: %" PRIu32 " B data + %u B metadata",
		 id->lbaf, id->lba_data, id->lba_meta);
}

int avfs_nvme_open(const char *path, unsigned flags, struct avfs_disk **out)
{
	char name[NAME_MAX + 1], blk[32];
	struct nvme_ctx *c;
	struct stat st;
	int ret;

	if (!path || !out || (flags & ~AVFS_NVME_RDONLY) || strlen(path) >= PATH_MAX)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->rdonly = flags & AVFS_NVME_RDONLY;
	c->trace = getenv("AVFS_NVME_TRACE") && *getenv("AVFS_NVME_TRACE") &&
		   strcmp(getenv("AVFS_NVME_TRACE"), "0");
	for (unsigned i = 0; i < AVFS_NVME_QUEUE; i++)
		c->free[i] = AVFS_NVME_QUEUE - 1 - i;	/* low indices first */
	c->nfree = AVFS_NVME_QUEUE;

	ret = generic_node(path, c->path, sizeof(c->path), blk, sizeof(blk));
	if (ret)
		goto err;
	c->fd = open_node(c->path, c->rdonly ? O_RDONLY : O_RDWR, &st, name, sizeof(name));
	if (c->fd < 0) {
		ret = c->fd == -ENOENT ? -ENODEV : c->fd;	/* no ngXnY: kernel before 5.13 */
		c->fd = -1;
		goto err;
	}
	ret = identify_fd(c->fd, &st, name, &c->id);
	if (ret)
		goto err;
	ret = fill_disk(c, blk);
	if (ret)
		goto err;

	/* No COOP_TASKRUN/DEFER_TASKRUN, as in uring.c: reap (peek only) and poll_fd must see
	 * completions without us entering the kernel. */
	ret = io_uring_queue_init(AVFS_NVME_QUEUE, &c->ring,
				  IORING_SETUP_SQE128 | IORING_SETUP_CQE32);
	if (ret < 0)
		goto err;
	c->ring_ready = true;

	if (c->trace)
		fprintf(stderr, "nvme: open %s: %s %s serial '%s' vid 0x%04x nsid %" PRIu32 ", %"
			PRIu64 " blocks, LBAF %u: %" PRIu32 " B data + %u B metadata, VWC %s, MDTS %"
			PRIu32 " B, %" PRIu32 " B per command%s\n", c->path, c->id.model,
			c->id.firmware, c->id.serial, c->id.vid, c->id.nsid, c->id.nsze, c->id.lbaf,
			c->id.lba_data, c->id.lba_meta, c->id.vwc ? "present" : "absent", c->id.mdts,
			c->xfer, c->rdonly ? ", read-only" : "");
	c->disk.ops = &nvme_ops;
	c->disk.ctx = c;
	*out = &c->disk;
	return 0;

err:
	nvme_free(c);
	return ret;
}

int avfs_nvme_info(const struct avfs_disk *d, struct avfs_nvme_ident *out)
{
	const struct nvme_ctx *c;

	if (!d || !out || d->ops != &nvme_ops)
		return -EINVAL;
	c = d->ctx;
	*out = c->id;
	return 0;
}
