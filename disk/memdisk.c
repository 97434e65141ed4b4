/*
 * memdisk.c — the RAM disk backend. A request is carried out entirely inside submit and its
 * completion queued for reap, so there is never anything to wait for; FLUSH and FUA are
 * no-ops because RAM has no volatile cache to drain. No timing, no persistence.
 */
#include "memdisk.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct memdisk {
	struct avfs_disk disk;
	uint8_t *data;			/* info.size bytes */
	struct avfs_disk_cqe *cq;	/* completions ready to reap, oldest first */
	size_t cqlen, cqcap;
	uint64_t fail_off, fail_len;	/* reads touching [off, off + len) complete with -EIO */
	uint64_t wfail_off, wfail_len;	/* writes touching [off, off + len) complete with -EIO */
	bool fail_flush;		/* FLUSH completes with -EIO */
};

static const struct avfs_disk_ops memdisk_ops;

/* Make room for one more completion before doing the work, so that a request that cannot
 * be reported is refused at submit rather than carried out silently. */
static int reserve_cqe(struct memdisk *m)
{
	struct avfs_disk_cqe *c = avfs_grow(m->cq, &m->cqcap, m->cqlen, sizeof(*c), 64);

	if (!c)
		return -ENOMEM;
	m->cq = c;
	return 0;
}

static bool hits(uint64_t foff, uint64_t flen, uint64_t off, uint32_t len)
{
	/* half-open ranges overlap iff each starts before the other ends; no overflow since
	 * foff + flen was checked and off + len is inside the disk */
	return flen && off < foff + flen && foff < off + len;
}

static int md_submit(void *ctx, const struct avfs_disk_req *req)
{
	struct memdisk *m = ctx;
	uint64_t off = req->lba * m->disk.info.lbs;
	int64_t res;
	int err;

	err = reserve_cqe(m);
	if (err)
		return err;
	/* avfs_disk_submit has already checked alignment and bounds against info */
	switch (req->op) {
	case AVFS_DISK_READ:
		if (hits(m->fail_off, m->fail_len, off, req->len)) {
			res = -EIO;
			break;
		}
		memcpy(req->buf, m->data + off, req->len);
		res = req->len;
		break;
	case AVFS_DISK_WRITE:
		if (hits(m->wfail_off, m->wfail_len, off, req->len)) {
			res = -EIO;	/* nothing written */
			break;
		}
		memcpy(m->data + off, req->buf, req->len);	/* FUA: already "on the medium" */
		res = req->len;
		break;
	case AVFS_DISK_FLUSH:
		res = m->fail_flush ? -EIO : 0;
		break;
	default:
		return -EOPNOTSUPP;	/* SEEK: has_seek is false, so disk.c refuses it first */
	}
	m->cq[m->cqlen++] = (struct avfs_disk_cqe){ .cookie = req->cookie, .res = res };
	return 0;
}

static int md_reap(void *ctx, struct avfs_disk_cqe *cqes, unsigned max)
{
	struct memdisk *m = ctx;
	size_t n = m->cqlen < max ? m->cqlen : max;

	if (!n)
		return 0;
	memcpy(cqes, m->cq, n * sizeof(*cqes));
	memmove(m->cq, m->cq + n, (m->cqlen - n) * sizeof(*cqes));
	m->cqlen -= n;
	return (int)n;
}

static int md_wait(void *ctx)
{
	struct memdisk *m = ctx;

	/* every submitted request completed inside submit: in flight == ready */
	return m->cqlen ? 0 : -EAGAIN;
}

static int md_register(void *ctx, const struct iovec *iov, unsigned n)
{
	(void)ctx, (void)iov, (void)n;
	return 0;	/* nothing to pin: disk.c keeps the set for validation */
}

static unsigned md_inflight(void *ctx)
{
	return (unsigned)((struct memdisk *)ctx)->cqlen;
}

static void md_close(void *ctx)
{
	struct memdisk *m = ctx;

	free(m->data);
	free(m->cq);
	free(m);
}

static const struct avfs_disk_ops memdisk_ops = {
	.name = "mem",
	.submit = md_submit,
	.reap = md_reap,
	.wait = md_wait,
	.register_buffers = md_register,
	.inflight = md_inflight,
	.close = md_close,
};

/* The one constructor both public ones share; image may be NULL for zeros. */
static int memdisk_new(const void *image, uint64_t size, uint32_t lbs, struct avfs_disk **out)
{
	struct memdisk *m;

	if (!out)
		return -EINVAL;
	/* lbs above AVFS_DISK_MAX_IO would make every request too large to be legal */
	if (lbs < 512 || lbs > AVFS_DISK_MAX_IO || (lbs & (lbs - 1)))
		return -EINVAL;
	if (!size || size % lbs)
		return -EINVAL;
	if ((uint64_t)(size_t)size != size)
		return -ENOMEM;	/* a 32-bit build cannot hold it */
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	/* calloc rather than malloc + memset: large blocks come zeroed from mmap, untouched */
	m->data = image ? malloc((size_t)size) : calloc(1, (size_t)size);
	if (!m->data) {
		free(m);
		return -ENOMEM;
	}
	if (image)
		memcpy(m->data, image, (size_t)size);
	m->disk.ops = &memdisk_ops;
	m->disk.ctx = m;
	m->disk.info = (struct avfs_disk_info){
		.size = size,
		.lbs = lbs,
		.pbs = lbs < 4096 ? 4096 : lbs,
		.mem_align = lbs,
		.rotational = false,
		.has_seek = false,
		.is_blockdev = false,
		.model = "mem",
	};
	*out = &m->disk;
	return 0;
}

int avfs_memdisk_open(uint64_t size, uint32_t lbs, struct avfs_disk **out)
{
	return memdisk_new(NULL, size, lbs, out);
}

int avfs_memdisk_open_image(const void *image, uint64_t size, uint32_t lbs,
			    struct avfs_disk **out)
{
	if (!image)
		return -EINVAL;
	return memdisk_new(image, size, lbs, out);
}

bool avfs_memdisk_is(const struct avfs_disk *d)
{
	return d && d->ops == &memdisk_ops;
}

uint8_t *avfs_memdisk_data(struct avfs_disk *d)
{
	return avfs_memdisk_is(d) ? ((struct memdisk *)d->ctx)->data : NULL;
}

/* One failing range (reads' or writes'): set, or cleared with len 0. */
static int fail_range(struct avfs_disk *d, bool writes, uint64_t off, uint64_t len)
{
	struct memdisk *m;

	if (!avfs_memdisk_is(d) || len > UINT64_MAX - off)
		return -EINVAL;
	m = d->ctx;
	*(writes ? &m->wfail_off : &m->fail_off) = len ? off : 0;
	*(writes ? &m->wfail_len : &m->fail_len) = len;
	return 0;
}

int avfs_memdisk_fail_reads(struct avfs_disk *d, uint64_t off, uint64_t len)
{
	return fail_range(d, false, off, len);
}

int avfs_memdisk_fail_writes(struct avfs_disk *d, uint64_t off, uint64_t len)
{
	return fail_range(d, true, off, len);
}

int avfs_memdisk_fail_flushes(struct avfs_disk *d, bool fail)
{
	if (!avfs_memdisk_is(d))
		return -EINVAL;
	((struct memdisk *)d->ctx)->fail_flush = fail;
	return 0;
}
