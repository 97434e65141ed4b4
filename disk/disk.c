/*
 * disk.c — request validation and the thin public wrappers around a backend's ops table.
 * Every backend gets the same checks here, so an unaligned or out-of-range request is
 * refused the same way everywhere. No I/O happens in this file.
 */
#include "disk.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int avfs_disk_check(const struct avfs_disk *d, const struct avfs_disk_req *req)
{
	const struct avfs_disk_info *in = &d->info;

	if (!req)
		return -EINVAL;
	switch (req->op) {
	case AVFS_DISK_FLUSH:
		return 0;
	case AVFS_DISK_SEEK:
		if (!in->has_seek)
			return -EOPNOTSUPP;
		return req->lba < in->size / in->lbs ? 0 : -EINVAL;
	case AVFS_DISK_READ:
	case AVFS_DISK_WRITE:
		break;
	default:
		return -EINVAL;
	}
	if (req->len == 0 || req->len > AVFS_DISK_MAX_IO || req->len % in->lbs)
		return -EINVAL;
	if (req->iovcnt || req->iov) {
		uint64_t sum = 0;

		if (req->buf || req->buf_index >= 0 || !req->iov || !req->iovcnt ||
		    req->iovcnt > AVFS_DISK_MAX_IOV)
			return -EINVAL;
		for (unsigned i = 0; i < req->iovcnt; i++) {
			const struct iovec *v = &req->iov[i];

			if (!v->iov_base || (uintptr_t)v->iov_base % in->mem_align ||
			    !v->iov_len || v->iov_len % in->lbs)
				return -EINVAL;
			sum += v->iov_len;
		}
		if (sum != req->len)
			return -EINVAL;
	} else if (!req->buf || (uintptr_t)req->buf % in->mem_align) {
		return -EINVAL;
	}
	/* beyond the end, written so that it cannot overflow */
	if (req->lba > in->size / in->lbs ||
	    (uint64_t)req->len / in->lbs > in->size / in->lbs - req->lba)
		return -EINVAL;
	if (req->flags & ~AVFS_DISK_FUA)
		return -EINVAL;
	if (req->buf_index >= 0) {
		const struct iovec *v;

		if ((unsigned)req->buf_index >= d->nreg)
			return -EINVAL;
		v = &d->reg[req->buf_index];
		if ((char *)req->buf < (char *)v->iov_base ||
		    (char *)req->buf + req->len > (char *)v->iov_base + v->iov_len)
			return -EINVAL;
	}
	return 0;
}

/* A vectored request on a backend that takes only one buffer: through a bounce buffer. */
struct avfs_disk_bounce {
	uint64_t cookie;
	uint8_t *buf;
	const struct iovec *iov;	/* the caller's, valid until the completion */
	unsigned iovcnt;
	bool read;
};

static int submit_bounced(struct avfs_disk *d, const struct avfs_disk_req *req)
{
	struct avfs_disk_req lin = *req;
	struct avfs_disk_bounce *b;
	size_t at = 0;
	int err;

	if (d->nbnc == d->capbnc) {
		size_t cap = d->capbnc ? 2 * d->capbnc : 8;

		b = realloc(d->bnc, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		d->bnc = b;
		d->capbnc = cap;
	}
	b = &d->bnc[d->nbnc];
	*b = (struct avfs_disk_bounce){ .cookie = req->cookie, .iov = req->iov,
					.iovcnt = req->iovcnt, .read = req->op == AVFS_DISK_READ };
	b->buf = avfs_disk_alloc_buf(d, req->len);
	if (!b->buf)
		return -ENOMEM;
	if (!b->read)
		for (unsigned i = 0; i < req->iovcnt; at += req->iov[i++].iov_len)
			memcpy(b->buf + at, req->iov[i].iov_base, req->iov[i].iov_len);
	lin.buf = b->buf;
	lin.iov = NULL;
	lin.iovcnt = 0;
	err = d->ops->submit(d->ctx, &lin);
	if (err) {
		free(b->buf);
		return err;
	}
	d->nbnc++;
	return 0;
}

/* A completion of a bounced request: the data out to the caller's pieces, the bounce freed. */
static void reap_bounced(struct avfs_disk *d, const struct avfs_disk_cqe *c)
{
	for (size_t k = 0; k < d->nbnc; k++) {
		struct avfs_disk_bounce *b = &d->bnc[k];
		size_t at = 0;

		if (b->cookie != c->cookie)
			continue;
		if (b->read && c->res > 0)
			for (unsigned i = 0; i < b->iovcnt; at += b->iov[i++].iov_len)
				memcpy(b->iov[i].iov_base, b->buf + at, b->iov[i].iov_len);
		free(b->buf);
		d->bnc[k] = d->bnc[--d->nbnc];
		return;
	}
}

int avfs_disk_submit(struct avfs_disk *d, const struct avfs_disk_req *req)
{
	int err = avfs_disk_check(d, req);

	if (err)
		return err;
	if (req->iovcnt && !d->vectored)
		return submit_bounced(d, req);
	return d->ops->submit(d->ctx, req);
}

int avfs_disk_reap(struct avfs_disk *d, struct avfs_disk_cqe *cqes, unsigned max)
{
	int n;

	if (!cqes && max)
		return -EINVAL;
	n = d->ops->reap(d->ctx, cqes, max);
	for (int i = 0; i < n && d->nbnc; i++)
		reap_bounced(d, &cqes[i]);
	return n;
}

int avfs_disk_wait(struct avfs_disk *d)
{
	return d->ops->wait(d->ctx);
}

int avfs_disk_register_buffers(struct avfs_disk *d, const struct iovec *iov, unsigned n)
{
	int err;

	if (!d->ops->register_buffers)
		return -EOPNOTSUPP;
	if (!iov || !n)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (!iov[i].iov_base || (uintptr_t)iov[i].iov_base % d->info.mem_align)
			return -EINVAL;
	err = d->ops->register_buffers(d->ctx, iov, n);
	if (err) {
		d->reg = NULL;	/* the backend dropped the old set before trying the new one */
		d->nreg = 0;
		return err;
	}
	d->reg = iov;	/* the caller keeps the array alive while registered */
	d->nreg = n;
	return 0;
}

int avfs_disk_poll_fd(struct avfs_disk *d)
{
	return d->ops->poll_fd ? d->ops->poll_fd(d->ctx) : -1;
}

unsigned avfs_disk_inflight(struct avfs_disk *d)
{
	return d->ops->inflight(d->ctx);
}

void avfs_disk_close(struct avfs_disk *d)
{
	struct avfs_disk_bounce *b;
	size_t n;

	if (!d)
		return;
	b = d->bnc;	/* bounces of requests never reaped: free once the backend is done */
	n = d->nbnc;
	d->ops->close(d->ctx);	/* frees d too: the backend owns the handle */
	for (size_t i = 0; i < n; i++)
		free(b[i].buf);
	free(b);
}

int64_t avfs_disk_io_sync(struct avfs_disk *d, const struct avfs_disk_req *req)
{
	struct avfs_disk_cqe cqe;
	int err, n;

	if (avfs_disk_inflight(d))
		return -EBUSY;
	err = avfs_disk_submit(d, req);
	if (err)
		return err;
	for (;;) {
		n = avfs_disk_reap(d, &cqe, 1);
		if (n < 0)
			return n;
		if (n == 1)
			return cqe.res;
		err = avfs_disk_wait(d);
		if (err)
			return err;
	}
}

void *avfs_disk_alloc_buf(const struct avfs_disk *d, size_t len)
{
	size_t align = d->info.mem_align > sizeof(void *) ? d->info.mem_align : sizeof(void *);
	void *p = NULL;

	if (align < 4096)
		align = 4096;	/* page alignment satisfies every device we meet */
	if (posix_memalign(&p, align, len ? len : align))
		return NULL;
	return p;
}

void avfs_copy_trim(char *dst, size_t n, const char *src, size_t len)
{
	while (len && (src[len - 1] == ' ' || src[len - 1] == '\0'))
		len--;
	while (len && *src == ' ') {
		src++;
		len--;
	}
	if (len >= n)
		len = n - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}
