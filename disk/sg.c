/*
 * sg.c — the SG_IO backend: identification through libsgutils2's sg_ll_* helpers, then
 * READ(16)/WRITE(16)/SYNCHRONIZE CACHE(10)/SEEK(10) through its pass-through object on one
 * I/O thread per disk, completions delivered through a queue and an eventfd.
 * CDBs and sense decoding live in scsi.c; no scheduling, chunking policy or timing here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* strerrorname_np: meson defines it, a hand build may not */
#endif
#include "sg.h"
#include "scsi.h"
#include "sysfs_i.h"
#include "thread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <scsi/sg_cmds_basic.h>
#include <scsi/sg_lib.h>
#include <scsi/sg_pt.h>
#include <scsi/sg_unaligned.h>

/* Bytes per command when neither the device nor the kernel states a limit: what every
 * Linux SCSI host accepts (64 segments of 4 KiB). */
#define SG_DEFAULT_MAX_XFER (256u * 1024)
/* Unit attentions (resets, mode changes) TEST UNIT READY may clear at open. */
#define SG_OPEN_UA_TRIES 4

/* What was printed already: one bit per sense key, then the kinds without sense data. */
enum {
	SG_LOG_STATUS = 16,	/* BUSY, RESERVATION CONFLICT, ... */
	SG_LOG_TRANSPORT = 17,	/* host/driver errors, timeouts, OS errors */
	SG_LOG_SHORT = 18,	/* a data-in command moved less than asked */
	SG_LOG_OVERFLOW = 19,	/* a SEEK beyond the 32-bit field */
};

struct sg_ctx {
	struct avfs_disk disk;		/* first, so one allocation holds handle and context */
	struct avfs_sg_ident ident;
	char path[PATH_MAX];
	int fd;
	int efd;			/* eventfd: readable iff cq holds completions (see sg_reap) */
	struct sg_pt_base *pt;		/* the pass-through object; the I/O thread's after open */
	bool rdonly;
	bool identify_only;	/* AVFS_SG_IDENTIFY: no SEEK probe */
	bool trace;			/* AVFS_SG_TRACE was set at open */
	uint32_t logged;		/* SG_LOG_* / sense-key bits already printed; I/O thread's */
	unsigned inflight;		/* submitted, not yet reaped; the user's thread only */

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;		/* protects everything below */
	pthread_cond_t cond;		/* the I/O thread sleeps on it for work or stop */
	bool stop;			/* close: finish the queue, then exit */
	struct avfs_disk_req sq[AVFS_SG_QUEUE];	/* submitted, not yet started: ring */
	unsigned sq_head, sq_n;
	struct avfs_disk_cqe cq[AVFS_SG_QUEUE];	/* completed, not yet reaped: ring */
	unsigned cq_head, cq_n;
};

static const struct avfs_disk_ops sg_ops;

/* ------------------------------------------------------------------ one command ---- */

/* "EINVAL" for -EINVAL; the number, in buf, where glibc has no name. */
static const char *errno_name(int err, char buf[16])
{
	const char *n = strerrorname_np(-err);

	if (n)
		return n;
	snprintf(buf, 16, "%d", -err);
	return buf;
}

/* Print a decoded error, once per kind per disk. */
static void sg_log(struct sg_ctx *s, unsigned kind, const char *what,
		   const struct avfs_scsi_sense *r)
{
	char en[16];

	if (kind >= 32 || (s->logged & (1u << kind)))
		return;
	s->logged |= 1u << kind;
	fprintf(stderr, "avfs sg %s: %s: %s -> -%s (%s); further errors of this kind on this "
		"device are not reported\n", s->path, what, r->text, errno_name(r->err, en),
		strerror(-r->err));
}

/* Issue one CDB and decode its outcome into *r (text included) and *kind (SG_LOG_* or the
 * sense key, for sg_log). din/dout: the data buffer (at most one), len its size. Reissues
 * once what avfs_scsi_decode marks retry. Returns r->err: 0 or -errno. */
static int sg_exec(struct sg_ctx *s, const uint8_t *cdb, int cdb_len, void *din, void *dout,
		   uint32_t len, struct avfs_scsi_sense *r, unsigned *kind)
{
	uint8_t sense[AVFS_SCSI_SENSE_MAX];
	char cdbtxt[96], en[16];

	for (int attempt = 0;; attempt++) {
		int res, ret, cat = 0;

		memset(r, 0, sizeof(*r));
		memset(sense, 0, sizeof(sense));
		*kind = SG_LOG_TRANSPORT;
		clear_scsi_pt_obj(s->pt);	/* keeps the descriptor */
		set_scsi_pt_cdb(s->pt, cdb, cdb_len);
		set_scsi_pt_sense(s->pt, sense, sizeof(sense));
		if (din)
			set_scsi_pt_data_in(s->pt, din, (int)len);
		if (dout)
			set_scsi_pt_data_out(s->pt, dout, (int)len);
		res = do_scsi_pt(s->pt, -1, AVFS_SG_TIMEOUT_S, 0);
		if (res < 0) {
			r->err = res;	/* the SG_IO ioctl itself failed */
			snprintf(r->text, sizeof(r->text), "pass-through: %s", strerror(-res));
		} else if (res == SCSI_PT_DO_BAD_PARAMS) {
			r->err = -EINVAL;
			snprintf(r->text, sizeof(r->text), "pass-through: bad parameters");
		} else if (res == SCSI_PT_DO_TIMEOUT) {
			r->err = -ETIMEDOUT;
			snprintf(r->text, sizeof(r->text), "command timed out after %d s",
				 AVFS_SG_TIMEOUT_S);
		} else if ((ret = sg_cmds_process_resp(s->pt, "avfs sg", res, false, 0, &cat)) >= 0) {
			/* GOOD: for data-in, ret is what arrived (len - resid) */
			if (din && (uint32_t)ret != len) {
				r->err = -EIO;
				*kind = SG_LOG_SHORT;
				snprintf(r->text, sizeof(r->text), "short transfer: %d of %" PRIu32
					 " bytes", ret, len);
			} else {
				snprintf(r->text, sizeof(r->text), "GOOD");
			}
		} else if (ret == -2) {
			/* CHECK CONDITION (sense) or another status (BUSY, RESERVATION CONFLICT) */
			avfs_scsi_decode(cat, sense, get_scsi_pt_sense_len(s->pt), r);
			*kind = r->have_sense ? r->key : SG_LOG_STATUS;
			if (!r->err && din && get_scsi_pt_resid(s->pt)) {
				r->err = -EIO;	/* recovered, but not all of it arrived */
				*kind = SG_LOG_SHORT;
				snprintf(r->text + strlen(r->text), sizeof(r->text) - strlen(r->text),
					 "; short transfer, %d bytes missing", get_scsi_pt_resid(s->pt));
			}
		} else if (get_scsi_pt_result_category(s->pt) == SCSI_PT_RESULT_TRANSPORT_ERR) {
			char t[96];

			/* host byte 3 is DID_TIME_OUT */
			r->err = (get_scsi_pt_transport_err(s->pt) & 0xff) == 3 ? -ETIMEDOUT : -EIO;
			snprintf(r->text, sizeof(r->text), "transport: %s",
				 get_scsi_pt_transport_err_str(s->pt, sizeof(t), t));
		} else {
			int e = get_scsi_pt_os_err(s->pt);

			r->err = e > 0 ? -e : -EIO;
			snprintf(r->text, sizeof(r->text), "pass-through: %s", strerror(-r->err));
		}

		avfs_scsi_cdb_str(cdb, cdb_len, cdbtxt, sizeof(cdbtxt));
		if (s->trace) {
			if (r->err)
				fprintf(stderr, "sg: %s -> %s (-%s)\n", cdbtxt, r->text,
					errno_name(r->err, en));
			else
				fprintf(stderr, "sg: %s -> GOOD\n", cdbtxt);
		}
		if (!r->err || !r->retry || attempt)
			break;
	}
	return r->err;
}

/* Run one command of a request and print its first error of a kind. 0 or -errno. */
static int sg_run(struct sg_ctx *s, const uint8_t *cdb, int cdb_len, void *din, void *dout,
		  uint32_t len, uint64_t lba)
{
	struct avfs_scsi_sense r;
	char name[32], what[96];
	unsigned kind;

	if (!sg_exec(s, cdb, cdb_len, din, dout, len, &r, &kind))
		return 0;
	avfs_scsi_cdb_name(cdb, name, sizeof(name));
	if (cdb[0] == AVFS_SCSI_SYNC_CACHE10)
		snprintf(what, sizeof(what), "%s", name);
	else if (cdb[0] == AVFS_SCSI_SEEK10)
		snprintf(what, sizeof(what), "%s to LBA %" PRIu64, name, lba);
	else
		snprintf(what, sizeof(what), "%s at LBA %" PRIu64 ", %" PRIu32 " bytes", name, lba,
			 len);
	sg_log(s, kind, what, &r);
	return r.err;
}

/* Execute one request on the I/O thread. 0 for FLUSH/SEEK, len for READ/WRITE, or -errno. */
static int64_t sg_execute(struct sg_ctx *s, const struct avfs_disk_req *req)
{
	const uint32_t lbs = s->ident.lbs;
	uint8_t cdb[AVFS_SCSI_CDB_MAX];
	int n, err;

	switch (req->op) {
	case AVFS_DISK_READ:
	case AVFS_DISK_WRITE: {
		bool write = req->op == AVFS_DISK_WRITE;
		bool fua = req->flags & AVFS_DISK_FUA;

		/* Larger than the device or kernel take in one command: consecutive commands.
		 * Each carries the FUA asked for: the request completes only once all of it is
		 * on the medium (the mixer's "FUA on the last chunk" is its own chunks,
		 * each a request of its own). */
		for (uint32_t done = 0; done < req->len;) {
			uint32_t part = req->len - done;
			uint64_t lba = req->lba + done / lbs;
			char *p = (char *)req->buf + done;

			if (part > s->ident.max_transfer)
				part = s->ident.max_transfer;
			n = avfs_scsi_cdb_rw16(cdb, write, lba, part / lbs, fua);
			err = sg_run(s, cdb, n, write ? NULL : p, write ? p : NULL, part, lba);
			if (err)
				return err;
			done += part;
		}
		return req->len;
	}
	case AVFS_DISK_FLUSH:
		n = avfs_scsi_cdb_sync_cache10(cdb, 0, 0);
		err = sg_run(s, cdb, n, NULL, NULL, 0, 0);
		/* a disk without a write cache may not know the command: nothing to flush */
		if (err == -EOPNOTSUPP && s->ident.wce_known && !s->ident.wce)
			err = 0;
		return err;
	case AVFS_DISK_SEEK:
		n = avfs_scsi_cdb_seek10(cdb, req->lba);
		if (n < 0) {
			struct avfs_scsi_sense r = { .err = n };

			snprintf(r.text, sizeof(r.text), "LBA beyond SEEK(10)'s 32-bit field");
			sg_log(s, SG_LOG_OVERFLOW, "SEEK(10)", &r);
			return n;
		}
		return sg_run(s, cdb, n, NULL, NULL, 0, req->lba);
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------ I/O thread ---- */

static void *sg_thread(void *arg)
{
	struct sg_ctx *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct avfs_disk_req req;
		int64_t res;
		uint64_t one = 1;
		unsigned slot;

		while (!s->sq_n && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->sq_n)
			break;	/* stop, and the queue is empty */
		req = s->sq[s->sq_head];
		s->sq_head = (s->sq_head + 1) % AVFS_SG_QUEUE;
		s->sq_n--;
		pthread_mutex_unlock(&s->lock);

		res = sg_execute(s, &req);	/* SG_IO blocks here, without the lock */

		pthread_mutex_lock(&s->lock);
		/* never full: submit admits at most AVFS_SG_QUEUE unreaped requests */
		slot = (s->cq_head + s->cq_n) % AVFS_SG_QUEUE;
		s->cq[slot].cookie = req.cookie;
		s->cq[slot].res = res;
		s->cq_n++;
		/* under the lock, so that reap's read of the eventfd and its drain of cq are one
		 * step: the eventfd is readable exactly while cq is not empty */
		if (write(s->efd, &one, sizeof(one)) < 0) {
			/* cannot fail: the counter is reset by every reap, far from its limit */
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ------------------------------------------------------------------ ops ---- */

static int sg_submit(void *ctx, const struct avfs_disk_req *req)
{
	struct sg_ctx *s = ctx;

	switch (req->op) {
	case AVFS_DISK_READ:
	case AVFS_DISK_FLUSH:
		break;
	case AVFS_DISK_WRITE:
		if (s->rdonly)
			return -EBADF;	/* fail now rather than as a completion */
		break;
	case AVFS_DISK_SEEK:
		if (!s->ident.has_seek)
			return -EOPNOTSUPP;	/* disk.c refuses it first */
		break;
	default:
		return -EINVAL;
	}
	if ((req->op == AVFS_DISK_READ || req->op == AVFS_DISK_WRITE) &&
	    (!req->len || req->len % s->ident.lbs))
		return -EINVAL;	/* whole blocks only, even when disk.c is bypassed */
	if (s->inflight >= AVFS_SG_QUEUE)
		return -EBUSY;
	pthread_mutex_lock(&s->lock);
	s->sq[(s->sq_head + s->sq_n) % AVFS_SG_QUEUE] = *req;
	s->sq_n++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	s->inflight++;
	return 0;
}

static int sg_reap(void *ctx, struct avfs_disk_cqe *cqes, unsigned max)
{
	struct sg_ctx *s = ctx;
	uint64_t cnt;
	unsigned n = 0;

	pthread_mutex_lock(&s->lock);
	if (read(s->efd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: nothing posted since the last reap */
	}
	while (n < max && s->cq_n) {
		cqes[n++] = s->cq[s->cq_head];
		s->cq_head = (s->cq_head + 1) % AVFS_SG_QUEUE;
		s->cq_n--;
	}
	if (s->cq_n) {
		cnt = 1;	/* some left for the next reap: stay readable */
		if (write(s->efd, &cnt, sizeof(cnt)) < 0) {
			/* cannot fail, see sg_thread */
		}
	}
	pthread_mutex_unlock(&s->lock);
	s->inflight -= n;
	return (int)n;
}

static int sg_wait(void *ctx)
{
	struct sg_ctx *s = ctx;
	struct pollfd p = { .fd = s->efd, .events = POLLIN };
	int r;

	if (!s->inflight)
		return -EAGAIN;
	do
		r = poll(&p, 1, -1);	/* leaves the completions for reap */
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

/* Accepted so that callers using registered buffers run unchanged on this backend (disk.c
 * checks requests against the table); there is nothing to pin: SG_IO maps (or copies) the
 * user pages of each command itself. */
static int sg_register_buffers(void *ctx, const struct iovec *iov, unsigned n)
{
	(void)ctx;
	(void)iov;
	(void)n;
	return 0;
}

static int sg_poll_fd(void *ctx)
{
	struct sg_ctx *s = ctx;

	return s->efd;
}

static unsigned sg_inflight(void *ctx)
{
	struct sg_ctx *s = ctx;

	return s->inflight;
}

/* Undo avfs_sg_open's work, in reverse; each part only if it was set up. */
static void sg_free(struct sg_ctx *s)
{
	if (s->thread_started) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);	/* runs what is queued first */
	}
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	if (s->efd >= 0)
		close(s->efd);
	if (s->pt)
		destruct_scsi_pt_obj(s->pt);
	if (s->fd >= 0)
		scsi_pt_close_device(s->fd);
	free(s);
}

static void sg_close(void *ctx)
{
	sg_free(ctx);
}

static const struct avfs_disk_ops sg_ops = {
	.name = "sg",
	.submit = sg_submit,
	.reap = sg_reap,
	.wait = sg_wait,
	.register_buffers = sg_register_buffers,
	.poll_fd = sg_poll_fd,
	.inflight = sg_inflight,
	.close = sg_close,
};

/* ------------------------------------------------------------------ identification ---- */

/* The sysfs queue/ directory of the disk behind st: the block device's own, or, for an sg
 * or bsg node, that of the sd disk bound to the same SCSI device. 0 or -errno. */
static int sysfs_queue_dir(const struct stat *st, char *out, size_t n)
{
	char dir[64];	/* "/sys/dev/char/M:m/device/block": at most 49 bytes */
	struct dirent *e;
	DIR *d;

	if (S_ISBLK(st->st_mode)) {
		snprintf(out, n, "/sys/dev/block/%u:%u/queue", major(st->st_rdev), minor(st->st_rdev));
		return 0;
	}
	snprintf(dir, sizeof(dir), "/sys/dev/char/%u:%u/device/block", major(st->st_rdev),
		 minor(st->st_rdev));
	d = opendir(dir);
	if (!d)
		return -errno;	/* no sd bound (sd_mod not loaded): no queue to read */
	while ((e = readdir(d)) && e->d_name[0] == '.')
		;
	if (e)
		snprintf(out, n, "%s/%s/queue", dir, e->d_name);
	closedir(d);
	return e ? 0 : -ENOENT;
}

/* The most bytes one command may move: VPD B0's MAXIMUM TRANSFER LENGTH (blocks, 0 = no
 * limit) and the kernel's queue limits, which SG_IO enforces on every node (the request
 * goes through the same queue): max_hw_sectors_kb, and max_segments pages, since a user
 * buffer maps page by page. A multiple of pbs (or lbs), at most AVFS_DISK_MAX_IO. */
static uint32_t max_transfer(const struct stat *st, uint32_t dev_blocks, uint32_t lbs,
			     uint32_t pbs)
{
	uint64_t max = AVFS_DISK_MAX_IO;
	char q[PATH_MAX], p[PATH_MAX + 32];
	bool kernel_known = false;

	if (dev_blocks && (uint64_t)dev_blocks * lbs < max)
		max = (uint64_t)dev_blocks * lbs;
	if (!sysfs_queue_dir(st, q, sizeof(q))) {
		int64_t kb, segs, segsz;
		long page = sysconf(_SC_PAGESIZE);

		snprintf(p, sizeof(p), "%s/max_hw_sectors_kb", q);
		kb = disk_sysfs_u64(p);
		snprintf(p, sizeof(p), "%s/max_segments", q);
		segs = disk_sysfs_u64(p);
		snprintf(p, sizeof(p), "%s/max_segment_size", q);
		segsz = disk_sysfs_u64(p);
		if (page <= 0)
			page = 4096;
		if (segsz > 0 && segsz < page)
			page = segsz;
		if (kb > 0 && (uint64_t)kb * 1024 < max)
			max = (uint64_t)kb * 1024;
		/* one page less: a buffer starting inside a page (mem_align is only lbs) spans
		 * one page more than its length */
		if (segs > 1 && (uint64_t)(segs - 1) * (uint64_t)page < max)
			max = (uint64_t)(segs - 1) * (uint64_t)page;
		kernel_known = kb > 0 && segs > 0;
	}
	if (!kernel_known && max > SG_DEFAULT_MAX_XFER)
		max = SG_DEFAULT_MAX_XFER;
	if (max >= pbs)
		max -= max % pbs;
	else
		max -= max % lbs;
	return max >= lbs ? (uint32_t)max : lbs;
}

/* Whether the disk spins: VPD B1 when it says (1 = solid state, > 0x400 = rpm), else the
 * kernel's queue/rotational (sd reads the same page; both missing: assume it spins, as sd
 * does). */
static bool sg_rotational(const struct stat *st, uint32_t rate)
{
	char q[PATH_MAX], p[PATH_MAX + 16];
	int64_t v;

	if (rate == 1)
		return false;
	if (rate > 0x400 && rate < 0xffff)
		return true;
	if (!sysfs_queue_dir(st, q, sizeof(q))) {
		snprintf(p, sizeof(p), "%s/rotational", q);
		v = disk_sysfs_u64(p);
		if (v >= 0)
			return v != 0;
	}
	return true;
}

/* TEST UNIT READY until no unit attention is pending (a reset or a media change reports
 * one to the first command after it). 0 or -errno (not ready: the disk must be started). */
static int sg_test_ready(struct sg_ctx *s)
{
	struct avfs_scsi_sense r;
	uint8_t cdb[6];
	unsigned kind;
	int n = avfs_scsi_cdb_test_unit_ready(cdb);

	for (int i = 0; i < SG_OPEN_UA_TRIES; i++) {
		if (!sg_exec(s, cdb, n, NULL, NULL, 0, &r, &kind))
			return 0;
		if (!(r.have_sense && r.key == 0x6))
			break;
	}
	sg_log(s, kind, "TEST UNIT READY at open", &r);
	return r.err;
}

/* READ CAPACITY(16), or (10) on a device without it: size, lbs, pbs. 0 or -errno. */
static int sg_capacity(struct sg_ctx *s)
{
	uint8_t rc[32] = { 0 };
	uint64_t blocks;
	uint32_t lbs;
	unsigned exp = 0;
	int ret;

	ret = sg_ll_readcap_16(s->fd, false, 0, rc, sizeof(rc), false, 0);
	if (ret == SG_LIB_CAT_UNIT_ATTENTION)
		ret = sg_ll_readcap_16(s->fd, false, 0, rc, sizeof(rc), false, 0);
	if (!ret) {
		blocks = sg_get_unaligned_be64(rc) + 1;
		lbs = sg_get_unaligned_be32(rc + 8);
		exp = rc[13] & 0x0f;	/* LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT */
	} else if (ret == SG_LIB_CAT_INVALID_OP || ret == SG_LIB_CAT_ILLEGAL_REQ) {
		ret = sg_ll_readcap_10(s->fd, false, 0, rc, 8, false, 0);
		if (ret)
			return avfs_scsi_cat_errno(ret, NULL);
		blocks = (uint64_t)sg_get_unaligned_be32(rc) + 1;
		lbs = sg_get_unaligned_be32(rc + 4);
	} else {
		return avfs_scsi_cat_errno(ret, NULL);
	}
	/* 520-byte or other odd formats do not fit the block layer's model */
	if (lbs < 512 || (lbs & (lbs - 1)) || lbs > 65536 || exp > 8)
		return -EMEDIUMTYPE;
	if (blocks > UINT64_MAX / lbs)
		return -EINVAL;
	s->ident.capacity = blocks * lbs;
	s->ident.lbs = lbs;
	s->ident.pbs = lbs << exp;
	return s->ident.capacity ? 0 : -EINVAL;
}

/* VPD pages 0x80 (serial), 0xB0 (block limits), 0xB1 (rotation), where page 0x00 lists
 * them; a device that answers none of this is still usable. *b0_max: MAXIMUM TRANSFER
 * LENGTH in blocks (0 = unknown). */
static void sg_vpd(struct sg_ctx *s, uint32_t *b0_max)
{
	uint8_t list[256], page[256];
	int resid = 0, n;

	*b0_max = 0;
	memset(list, 0, sizeof(list));
	if (sg_ll_inquiry_v2(s->fd, true, 0x00, list, sizeof(list), 0, &resid, false, 0))
		return;
	n = sg_get_unaligned_be16(list + 2);
	if (n > (int)sizeof(list) - 4)
		n = sizeof(list) - 4;
	for (int i = 0; i < n; i++) {
		uint8_t pg = list[4 + i];

		if (pg != 0x80 && pg != 0xb0 && pg != 0xb1)
			continue;
		memset(page, 0, sizeof(page));
		if (sg_ll_inquiry_v2(s->fd, true, pg, page, sizeof(page), 0, &resid, false, 0))
			continue;
		if (pg == 0x80) {
			int len = sg_get_unaligned_be16(page + 2);

			if (len > (int)sizeof(page) - 4)
				len = sizeof(page) - 4;
			avfs_copy_trim(s->ident.serial, sizeof(s->ident.serial), (char *)page + 4,
				  (size_t)len);
		} else if (pg == 0xb0) {
			*b0_max = sg_get_unaligned_be32(page + 8);
		} else {
			s->ident.rotation_rate = sg_get_unaligned_be16(page + 4);
		}
	}
}

/* MODE SENSE(10) (or (6)) caching page, current values: WCE. */
static void sg_write_cache(struct sg_ctx *s)
{
	uint8_t ms[252];
	char err[128];
	int off, ret;
	bool six = false;

	memset(ms, 0, sizeof(ms));
	ret = sg_ll_mode_sense10(s->fd, false, true /* dbd */, 0 /* current */, 0x08, 0, ms,
				 sizeof(ms), false, 0);
	if (ret == SG_LIB_CAT_INVALID_OP) {
		six = true;
		memset(ms, 0, sizeof(ms));
		ret = sg_ll_mode_sense6(s->fd, true, 0, 0x08, 0, ms, sizeof(ms), false, 0);
	}
	if (ret)
		return;
	off = sg_mode_page_offset(ms, sizeof(ms), six, err, sizeof(err));
	if (off < 0 || off + 3 > (int)sizeof(ms) || (ms[off] & 0x3f) != 0x08)
		return;
	s->ident.wce = ms[off + 2] & 0x04;
	s->ident.wce_known = true;
}

/* One SEEK(10) at LBA 0: GOOD means the disk takes SEEKs. */
static void sg_probe_seek(struct sg_ctx *s)
{
	struct avfs_scsi_sense r;
	uint8_t cdb[10];
	unsigned kind;
	int n = avfs_scsi_cdb_seek10(cdb, 0);

	s->ident.has_seek = !sg_exec(s, cdb, n, NULL, NULL, 0, &r, &kind);
	if (!s->ident.has_seek)
		fprintf(stderr, "avfs sg %s: SEEK(10) not accepted (%s): no seek splitting "
			"on this disk\n", s->path, r.text);
}

/* Classify the node: 0 for sd/bsg/sg, -ENOTTY or -EINVAL (a partition) otherwise. */
static int sg_check_node(struct sg_ctx *s, const struct stat *st)
{
	char p[PATH_MAX];
	int kind;

	if (!S_ISBLK(st->st_mode) && !S_ISCHR(st->st_mode))
		return -ENOTTY;	/* an image file, a directory, a fifo: not a SCSI device */
	if (S_ISBLK(st->st_mode)) {
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(st->st_rdev),
			 minor(st->st_rdev));
		if (!access(p, F_OK))
			return -EINVAL;	/* SG_IO would address the whole disk, not the partition */
		/* only an sd disk itself: a device-mapper or md volume on part of a SCSI disk
		 * passes SG_IO down to the whole disk, at the wrong offsets */
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/device/scsi_disk", major(st->st_rdev),
			 minor(st->st_rdev));
		if (access(p, F_OK))
			return -ENOTTY;
	}
	kind = check_pt_file_handle(s->fd, s->path, 0);
	if (kind < 0)
		return kind;
	switch (kind) {
	case 1:
		snprintf(s->ident.node, sizeof(s->ident.node), "sg");
		return 0;
	case 2:
		snprintf(s->ident.node, sizeof(s->ident.node), "bsg");
		return 0;
	case 0:
		if (S_ISCHR(st->st_mode))
			return -ENOTTY;	/* /dev/null, a tty: SG_IO would reach nothing */
		snprintf(s->ident.node, sizeof(s->ident.node), "block");
		return 0;	/* maybe sd, maybe virtio-blk: INQUIRY tells */
	default:
		return -ENOTTY;	/* NVMe (3, 4): libsgutils2 would translate; AVFS has an NVMe path */
	}
}

static int sg_identify(struct sg_ctx *s, const struct stat *st)
{
	struct sg_simple_inquiry_resp inq;
	uint32_t b0_max;
	int ret;

	ret = sg_simple_inquiry(s->fd, &inq, false, 0);
	if (ret) {
		ret = avfs_scsi_cat_errno(ret, NULL);
		/* the ioctl is unknown to this node: it does not speak SCSI */
		return ret == -ENOTTY || ret == -EINVAL || ret == -ENOSYS ? -ENOTTY : ret;
	}
	if (inq.peripheral_qualifier != 0)
		return -ENXIO;	/* no logical unit behind this address */
	if (inq.peripheral_type != 0)
		return -EMEDIUMTYPE;	/* a CD-ROM, a tape, a host-managed zoned disk... */
	avfs_copy_trim(s->ident.vendor, sizeof(s->ident.vendor), inq.vendor, 8);
	avfs_copy_trim(s->ident.product, sizeof(s->ident.product), inq.product, 16);
	avfs_copy_trim(s->ident.revision, sizeof(s->ident.revision), inq.revision, 4);

	ret = sg_test_ready(s);
	if (ret)
		return ret;
	ret = sg_capacity(s);
	if (ret)
		return ret;
	sg_vpd(s, &b0_max);
	sg_write_cache(s);
	s->ident.max_transfer = max_transfer(st, b0_max, s->ident.lbs, s->ident.pbs);
	if (!s->identify_only)
		sg_probe_seek(s);
	return 0;
}

/* ------------------------------------------------------------------ open ---- */

int avfs_sg_open(const char *path, unsigned flags, struct avfs_disk **out)
{
	struct avfs_disk_info *in;
	struct sg_ctx *s;
	struct stat st;
	int ret;

	if (!path || !out || (flags & ~(AVFS_SG_RDONLY | AVFS_SG_IDENTIFY)) ||
	    strlen(path) >= PATH_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->efd = -1;
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->rdonly = flags & (AVFS_SG_RDONLY | AVFS_SG_IDENTIFY);
	s->identify_only = flags & AVFS_SG_IDENTIFY;
	s->trace = getenv("AVFS_SG_TRACE") != NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);

	/* O_NONBLOCK: an sg open must not wait for another opener's O_EXCL; SG_IO itself
	 * still blocks until the command is done */
	s->fd = scsi_pt_open_flags(path, (s->rdonly ? O_RDONLY : O_RDWR) | O_NONBLOCK | O_CLOEXEC,
				   0);
	if (s->fd < 0) {
		ret = s->fd == -EISDIR ? -ENOTTY : s->fd;
		s->fd = -1;
		goto err;
	}
	if (fstat(s->fd, &st)) {
		ret = -errno;
		goto err;
	}
	ret = sg_check_node(s, &st);
	if (ret)
		goto err;
	s->pt = construct_scsi_pt_obj_with_fd(s->fd, 0);
	if (!s->pt) {
		ret = -ENOMEM;
		goto err;
	}
	if (get_scsi_pt_os_err(s->pt)) {
		ret = -get_scsi_pt_os_err(s->pt);
		goto err;
	}
	ret = sg_identify(s, &st);
	if (ret)
		goto err;

	in = &s->disk.info;
	in->size = s->ident.capacity;
	in->lbs = s->ident.lbs;
	in->pbs = s->ident.pbs;
	/* the block layer maps a user buffer directly when it is this aligned, else copies */
	in->mem_align = s->ident.lbs;
	in->rotational = sg_rotational(&st, s->ident.rotation_rate);
	in->has_seek = s->ident.has_seek;
	in->is_blockdev = true;	/* a device, not an image file, whichever node reaches it */
	snprintf(in->model, sizeof(in->model), "sg: %s %s", s->ident.vendor, s->ident.product);
	avfs_sg_ident_export(&s->ident, &s->disk.ident);
	if (s->trace)
		fprintf(stderr, "sg: open %s: %s %s %s serial '%s' via %s, %" PRIu64 " bytes, lbs %"
			PRIu32 " pbs %" PRIu32 ", max transfer %" PRIu32 ", WCE %s, SEEK %s, %s\n",
			path, s->ident.vendor, s->ident.product, s->ident.revision,
			s->ident.serial, s->ident.node, s->ident.capacity, s->ident.lbs,
			s->ident.pbs, s->ident.max_transfer,
			s->ident.wce_known ? (s->ident.wce ? "on" : "off") : "unknown",
			s->ident.has_seek ? "yes" : "no",
			in->rotational ? "rotational" : "non-rotational");

	s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->efd < 0) {
		ret = -errno;
		goto err;
	}
	/* the I/O thread takes no signals: they stay with the caller's threads */
	ret = avfs_thread_start_nosig(&s->thread, sg_thread, s);
	if (ret)
		goto err;
	s->thread_started = true;

	s->disk.ops = &sg_ops;
	s->disk.ctx = s;
	*out = &s->disk;
	return 0;

err:
	sg_free(s);
	return ret;
}

void avfs_sg_ident_export(const struct avfs_sg_ident *in, struct avfs_disk_ident *out)
{
	*out = (struct avfs_disk_ident){ .wce_known = in->wce_known, .wce = in->wce,
					 .max_transfer = in->max_transfer,
					 .rotation_rate = in->rotation_rate };
	snprintf(out->transport, sizeof(out->transport), "scsi");
	snprintf(out->backend, sizeof(out->backend), "sg");
	snprintf(out->vendor, sizeof(out->vendor), "%s", in->vendor);
	snprintf(out->product, sizeof(out->product), "%s", in->product);
	snprintf(out->serial, sizeof(out->serial), "%s", in->serial);
	snprintf(out->firmware, sizeof(out->firmware), "%s", in->revision);
}

int avfs_sg_info(const struct avfs_disk *d, struct avfs_sg_ident *out)
{
	const struct sg_ctx *s;

	if (!d || !out || d->ops != &sg_ops)
		return -EINVAL;
	s = d->ctx;
	*out = s->ident;
	return 0;
}
