/*
 * recdisk.c — the recording wrapper. Each request goes to the inner disk under a cookie of
 * our own (its slot here), so that reap can match the completion to what was submitted and
 * log it in completion order. It does not reorder, delay or fail anything itself.
 */
#include "recdisk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A request in flight on the inner disk; the slot index is the inner cookie. */
struct slot {
	uint64_t cookie;	/* the caller's cookie, restored in the completion */
	uint8_t kind;		/* AVFS_REC_WRITE / AVFS_REC_FLUSH, 0 = not logged (read) */
	uint8_t fua;
	uint64_t off;
	uint32_t len;
	uint8_t *data;		/* write: copy taken at submit, handed to the log at reap;
				 * NULL whenever the slot is free */
};

struct recdisk {
	struct avfs_disk disk;
	struct avfs_disk *inner;	/* owned */
	struct slot *slots;
	size_t *free_slots;		/* stack of unused slot indexes */
	size_t nslots, nfree;
	struct avfs_rec_entry *log;
	size_t nlog, logcap;
	size_t log_pending;		/* writes + flushes in flight: log room kept for them */
	size_t log_bytes;
};

static const struct avfs_disk_ops recdisk_ops;

static int grow_slots(struct recdisk *r)
{
	size_t cap = r->nslots ? 2 * r->nslots : 64;
	struct slot *s = realloc(r->slots, cap * sizeof(*s));
	size_t *f;

	if (!s)
		return -ENOMEM;
	memset(s + r->nslots, 0, (cap - r->nslots) * sizeof(*s));	/* data NULL: see close */
	r->slots = s;
	f = realloc(r->free_slots, cap * sizeof(*f));
	if (!f)
		return -ENOMEM;	/* slots grew but nslots did not: still consistent */
	r->free_slots = f;
	/* push the new indexes so that the lowest is handed out first */
	for (size_t i = cap; i > r->nslots; i--)
		r->free_slots[r->nfree++] = i - 1;
	r->nslots = cap;
	return 0;
}

/* Room in the log for every loggable request in flight plus one more: appending at reap
 * must not fail, since a completion cannot be refused and a lost entry would make every
 * crash image built from the log wrong without anyone noticing. */
static int reserve_log(struct recdisk *r)
{
	size_t need = r->nlog + r->log_pending + 1, cap;
	struct avfs_rec_entry *l;

	if (need <= r->logcap)
		return 0;
	cap = r->logcap ? 2 * r->logcap : 256;
	while (cap < need)
		cap *= 2;
	l = realloc(r->log, cap * sizeof(*l));
	if (!l)
		return -ENOMEM;
	r->log = l;
	r->logcap = cap;
	return 0;
}

static int rd_submit(void *ctx, const struct avfs_disk_req *req)
{
	struct recdisk *r = ctx;
	struct avfs_disk_req fwd = *req;
	struct slot *s;
	uint8_t *data = NULL;
	size_t idx;
	int err;

	if (!r->nfree) {
		err = grow_slots(r);
		if (err)
			return err;
	}
	if (req->op == AVFS_DISK_WRITE || req->op == AVFS_DISK_FLUSH) {
		err = reserve_log(r);
		if (err)
			return err;
	}
	if (req->op == AVFS_DISK_WRITE) {
		/* Copy now: this is exactly what the device was handed, and a caller that reuses
		 * its buffer right after the completion cannot change what we log. */
		data = malloc(req->len);
		if (!data)
			return -ENOMEM;
		memcpy(data, req->buf, req->len);
	}
	idx = r->free_slots[r->nfree - 1];
	s = &r->slots[idx];
	*s = (struct slot){
		.cookie = req->cookie,
		.kind = req->op == AVFS_DISK_WRITE ? AVFS_REC_WRITE :
			req->op == AVFS_DISK_FLUSH ? AVFS_REC_FLUSH : 0,
		.fua = !!(req->flags & AVFS_DISK_FUA),
		.off = req->op == AVFS_DISK_WRITE ? req->lba * r->disk.info.lbs : 0,
		.len = req->op == AVFS_DISK_WRITE ? req->len : 0,
		.data = data,
	};
	fwd.cookie = idx;
	err = avfs_disk_submit(r->inner, &fwd);
	if (err) {
		free(s->data);	/* refused at submit: never reached the disk, never logged */
		s->data = NULL;
		return err;
	}
	r->nfree--;
	if (s->kind)
		r->log_pending++;
	return 0;
}

static int rd_reap(void *ctx, struct avfs_disk_cqe *cqes, unsigned max)
{
	struct recdisk *r = ctx;
	int n = avfs_disk_reap(r->inner, cqes, max);

	for (int i = 0; i < n; i++) {
		size_t idx = (size_t)cqes[i].cookie;
		struct slot *s = &r->slots[idx];

		cqes[i].cookie = s->cookie;
		if (s->kind) {
			r->log_pending--;
			if (cqes[i].res >= 0) {
				/* room was reserved at submit */
				r->log[r->nlog++] = (struct avfs_rec_entry){
					.kind = s->kind, .fua = s->fua, .off = s->off,
					.len = s->len, .data = s->data,
				};
				r->log_bytes += s->len;
				s->data = NULL;
			}
		}
		free(s->data);	/* a failed write: its data never counted */
		s->data = NULL;
		r->free_slots[r->nfree++] = idx;
	}
	return n;
}

static int rd_wait(void *ctx)
{
	return avfs_disk_wait(((struct recdisk *)ctx)->inner);
}

static int rd_register(void *ctx, const struct iovec *iov, unsigned n)
{
	return avfs_disk_register_buffers(((struct recdisk *)ctx)->inner, iov, n);
}

static int rd_poll_fd(void *ctx)
{
	return avfs_disk_poll_fd(((struct recdisk *)ctx)->inner);
}

static unsigned rd_inflight(void *ctx)
{
	return avfs_disk_inflight(((struct recdisk *)ctx)->inner);
}

static void log_free(struct recdisk *r)
{
	for (size_t i = 0; i < r->nlog; i++)
		free(r->log[i].data);
	r->nlog = 0;
	r->log_bytes = 0;
}

static void rd_close(void *ctx)
{
	struct recdisk *r = ctx;

	/* the inner disk first: it may wait for requests whose buffers we still hold copies of */
	avfs_disk_close(r->inner);
	/* a free slot's data is NULL, so this frees only copies still in flight at close */
	for (size_t i = 0; i < r->nslots; i++)
		free(r->slots[i].data);
	log_free(r);
	free(r->log);
	free(r->slots);
	free(r->free_slots);
	free(r);
}

static const struct avfs_disk_ops recdisk_ops = {
	.name = "rec",
	.submit = rd_submit,
	.reap = rd_reap,
	.wait = rd_wait,
	.register_buffers = rd_register,
	.poll_fd = rd_poll_fd,
	.inflight = rd_inflight,
	.close = rd_close,
};

int avfs_recdisk_open(struct avfs_disk *inner, struct avfs_disk **out)
{
	static const char prefix[] = "rec:";
	struct recdisk *r;
	size_t room;

	if (!inner || !out)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->inner = inner;
	r->disk.ops = &recdisk_ops;
	r->disk.ctx = r;
	r->disk.info = inner->info;
	/* "rec:" + the inner model, cut to fit; strnlen because a backend may fill all 64 */
	room = sizeof(r->disk.info.model) - sizeof(prefix);
	memcpy(r->disk.info.model, prefix, sizeof(prefix) - 1);
	memcpy(r->disk.info.model + sizeof(prefix) - 1, inner->info.model,
	       strnlen(inner->info.model, room));
	r->disk.info.model[sizeof(prefix) - 1 + strnlen(inner->info.model, room)] = '\0';
	*out = &r->disk;
	return 0;
}

bool avfs_recdisk_is(const struct avfs_disk *d)
{
	return d && d->ops == &recdisk_ops;
}

const struct avfs_rec_entry *avfs_recdisk_log(const struct avfs_disk *d, size_t *n)
{
	const struct recdisk *r = avfs_recdisk_is(d) ? d->ctx : NULL;

	*n = r ? r->nlog : 0;
	return r && r->nlog ? r->log : NULL;
}

void avfs_recdisk_log_clear(struct avfs_disk *d)
{
	if (avfs_recdisk_is(d))
		log_free(d->ctx);
}

size_t avfs_recdisk_log_bytes(const struct avfs_disk *d)
{
	return avfs_recdisk_is(d) ? ((const struct recdisk *)d->ctx)->log_bytes : 0;
}
