/*
 * simdisk.c — the virtual-time disk backend. A submitted request waits in the drive's FIFO,
 * is served by the HDD model when the drive is free, and completes as an engine event.
 * Content lives in a sparse page store (open addressing, all-zero pages are not kept).
 */
#include "simdisk.h"

#include "grow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u

struct page_map {		/* page number -> 4 KiB page; linear probing, backward-shift delete */
	uint64_t *keys;		/* key + 1; 0 = empty */
	uint8_t **vals;
	size_t cap, n;
};

struct simdisk {
	struct avfs_disk disk;
	struct avfs_sim_engine *eng;
	struct avfs_hdd *hdd;
	unsigned flags;
	struct page_map pages;
	/* the drive's own queue: requests in arrival order */
	struct pending { struct avfs_disk_req req; uint64_t submit; } *q;
	size_t qhead, qlen, qcap;
	bool busy;
	struct pending cur;
	struct avfs_hdd_result res;
	/* completions ready to reap */
	struct avfs_disk_cqe *cq;
	size_t cqlen, cqcap;
	unsigned inflight;
	uint64_t busy_ns;
	struct avfs_simdisk_split split;
	uint64_t nostore_lo, nostore_hi;	/* content not kept in [lo, hi) */
	uint64_t stall_at, stall_ns;	/* avfs_simdisk_stall(): one command so much longer */
	struct avfs_simdisk_rec *trace;
	size_t ntrace, tracecap;
};

static const struct avfs_disk_ops simdisk_ops;

/* ---- sparse page store ---- */

static size_t slot_for(const struct page_map *m, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 20) & (m->cap - 1);
}

static uint8_t **map_find(struct page_map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_for(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return NULL;
		if (m->keys[i] == key + 1)
			return &m->vals[i];
	}
}

static int map_grow(struct page_map *m)
{
	struct page_map n = { .cap = m->cap ? m->cap * 2 : 1024 };

	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		for (j = slot_for(&n, m->keys[i] - 1); n.keys[j]; j = (j + 1) & (n.cap - 1))
			;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	n.n = m->n;
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

static uint8_t *map_insert(struct page_map *m, uint64_t key)
{
	size_t i;

	if ((m->n + 1) * 10 > m->cap * 7 && map_grow(m))
		return NULL;
	for (i = slot_for(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		;
	m->vals[i] = calloc(1, PAGE);
	if (!m->vals[i])
		return NULL;
	m->keys[i] = key + 1;
	m->n++;
	return m->vals[i];
}

static void map_delete(struct page_map *m, uint64_t key)
{
	size_t i, j;

	if (!m->cap)
		return;
	for (i = slot_for(m, key); m->keys[i] != key + 1; i = (i + 1) & (m->cap - 1))
		if (!m->keys[i])
			return;
	free(m->vals[i]);
	m->keys[i] = 0;
	m->vals[i] = NULL;
	m->n--;
	/* backward shift: move later entries of the probe run into the hole */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = slot_for(m, m->keys[j] - 1);

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			m->keys[j] = 0;
			m->vals[j] = NULL;
			i = j;
		}
	}
}

static void map_free(struct page_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->vals[i]);
	free(m->keys);
	free(m->vals);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int store_write(struct simdisk *s, uint64_t off, const uint8_t *buf, size_t len)
{
	while (len) {
		uint64_t pg = off / PAGE;
		size_t in = off % PAGE, n = PAGE - in < len ? PAGE - in : len;
		uint8_t **slot = map_find(&s->pages, pg);
		uint8_t *p = slot ? *slot : NULL;

		if (!p && !all_zero(buf, n)) {
			p = map_insert(&s->pages, pg);
			if (!p)
				return -ENOMEM;
		}
		if (p) {
			memcpy(p + in, buf, n);
			if (all_zero(p, PAGE))
				map_delete(&s->pages, pg);	/* keep the store sparse */
		}
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

static void store_read(struct simdisk *s, uint64_t off, uint8_t *buf, size_t len)
{
	while (len) {
		uint64_t pg = off / PAGE;
		size_t in = off % PAGE, n = PAGE - in < len ? PAGE - in : len;
		uint8_t **slot = map_find(&s->pages, pg);

		if (slot)
			memcpy(buf, *slot + in, n);
		else
			memset(buf, 0, n);
		off += n;
		buf += n;
		len -= n;
	}
}

/* ---- the drive ---- */

static void start_next(struct simdisk *s, uint64_t now);

static int push_cqe(struct simdisk *s, uint64_t cookie, int64_t res)
{
	struct avfs_disk_cqe *c = avfs_grow(s->cq, &s->cqcap, s->cqlen, sizeof(*c), 64);

	if (!c)
		return -ENOMEM;
	s->cq = c;
	s->cq[s->cqlen++] = (struct avfs_disk_cqe){ .cookie = cookie, .res = res };
	return 0;
}

static void record(struct simdisk *s, int64_t res)
{
	struct avfs_simdisk_rec *r;

	if (!(s->flags & AVFS_SIMDISK_TRACE))
		return;
	r = avfs_grow(s->trace, &s->tracecap, s->ntrace, sizeof(*r), 1024);
	if (!r)
		return;	/* the trace is an observer: losing a record must not fail I/O */
	s->trace = r;
	r = &s->trace[s->ntrace++];
	*r = (struct avfs_simdisk_rec){
		.op = (uint8_t)s->cur.req.op,
		.fua = !!(s->cur.req.flags & AVFS_DISK_FUA),
		.cache_hit = s->res.cache_hit,
		.recovered = s->res.recovered,
		.len = s->cur.req.len,
		.lba = s->cur.req.lba,
		.submit = s->cur.submit,
		.start = s->res.start,
		.end = s->res.end,
		.seek_cyl = s->res.seek_cyl,
		.seek_ns = s->res.seek,
		.rot_ns = s->res.rot,
		.xfer_ns = s->res.xfer,
		.res = res,
	};
}

static void complete(void *arg, uint64_t now)
{
	struct simdisk *s = arg;
	const struct avfs_disk_req *q = &s->cur.req;
	int64_t res = 0;

	(void)now;
	if (q->op == AVFS_DISK_READ || q->op == AVFS_DISK_WRITE) {
		uint64_t off = q->lba * AVFS_HDD_SECTOR;

		res = q->len;
		if (off >= s->nostore_lo && off + q->len <= s->nostore_hi) {
			/* timing only: not even the buffer is touched */
		} else {
			/* the buffer, or each piece of a vectored request in turn */
			struct iovec one = { .iov_base = q->buf, .iov_len = q->len };
			const struct iovec *v = q->iovcnt ? q->iov : &one;
			unsigned nv = q->iovcnt ? q->iovcnt : 1;

			for (unsigned i = 0; i < nv; off += v[i++].iov_len) {
				if (s->flags & AVFS_SIMDISK_NODATA) {
					if (q->op == AVFS_DISK_READ)
						memset(v[i].iov_base, 0, v[i].iov_len);
				} else if (q->op == AVFS_DISK_READ) {
					store_read(s, off, v[i].iov_base, v[i].iov_len);
				} else if (store_write(s, off, v[i].iov_base, v[i].iov_len)) {
					res = -ENOMEM;
				}
			}
		}
	}
	record(s, res);
	s->busy = false;
	if (push_cqe(s, q->cookie, res))
		s->inflight--;	/* cannot report it: drop rather than corrupt */
	start_next(s, now);
}

static void start_next(struct simdisk *s, uint64_t now)
{
	static const enum avfs_hdd_op map[] = {
		[AVFS_DISK_READ] = AVFS_HDD_READ, [AVFS_DISK_WRITE] = AVFS_HDD_WRITE,
		[AVFS_DISK_FLUSH] = AVFS_HDD_FLUSH, [AVFS_DISK_SEEK] = AVFS_HDD_SEEK,
	};
	const struct avfs_disk_req *q;

	if (s->busy || !s->qlen)
		return;
	s->cur = s->q[s->qhead];
	s->qhead = (s->qhead + 1) % s->qcap;
	s->qlen--;
	q = &s->cur.req;
	/* validated at submit, so the model accepts it */
	avfs_hdd_service(s->hdd, now, map[q->op], q->lba, q->len / AVFS_HDD_SECTOR,
			 q->flags & AVFS_DISK_FUA, &s->res);
	if (s->stall_ns && now >= s->stall_at) {	/* the drive's own recovery: once */
		s->res.end += s->stall_ns;
		s->res.busy_until += s->stall_ns;
		s->stall_ns = 0;
	}
	s->busy = true;
	s->busy_ns += s->res.busy_until - s->res.start;
	if (q->op == AVFS_DISK_READ || q->op == AVFS_DISK_WRITE) {
		struct avfs_simdisk_split *p = &s->split;

		p->commands++;
		p->seeks += s->res.seek > 0;
		p->waits += s->res.rot > 0;
		p->overhead_ns += s->res.overhead;
		p->seek_ns += s->res.seek;
		p->rot_ns += s->res.rot;
		p->xfer_ns += s->res.xfer;
		if (q->op == AVFS_DISK_WRITE)
			p->write_rot_ns += s->res.rot;
	}
	if (!avfs_sim_at(s->eng, s->res.end, complete, s))
		abort();	/* out of memory inside the simulator: nothing sane to return */
}

static int sd_submit(void *ctx, const struct avfs_disk_req *req)
{
	struct simdisk *s = ctx;

	if (s->qlen == s->qcap) {
		size_t cap = s->qcap ? 2 * s->qcap : 64;
		struct pending *q = malloc(cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < s->qlen; i++)
			q[i] = s->q[(s->qhead + i) % s->qcap];
		free(s->q);
		s->q = q;
		s->qhead = 0;
		s->qcap = cap;
	}
	s->q[(s->qhead + s->qlen++) % s->qcap] =
		(struct pending){ .req = *req, .submit = avfs_sim_now(s->eng) };
	s->inflight++;
	start_next(s, avfs_sim_now(s->eng));
	return 0;
}

static int sd_reap(void *ctx, struct avfs_disk_cqe *cqes, unsigned max)
{
	struct simdisk *s = ctx;
	size_t n = s->cqlen < max ? s->cqlen : max;

	if (!n)
		return 0;
	memcpy(cqes, s->cq, n * sizeof(*cqes));
	memmove(s->cq, s->cq + n, (s->cqlen - n) * sizeof(*cqes));
	s->cqlen -= n;
	s->inflight -= (unsigned)n;
	return (int)n;
}

static int sd_wait(void *ctx)
{
	struct simdisk *s = ctx;

	while (!s->cqlen) {
		if (!s->inflight)
			return -EAGAIN;
		if (!avfs_sim_step(s->eng))
			return -EIO;	/* in flight but nothing scheduled: cannot happen */
	}
	return 0;
}

static int sd_register(void *ctx, const struct iovec *iov, unsigned n)
{
	(void)ctx, (void)iov, (void)n;
	return 0;	/* memory is memory in the simulator: nothing to pin */
}

static unsigned sd_inflight(void *ctx)
{
	return ((struct simdisk *)ctx)->inflight;
}

static void sd_close(void *ctx)
{
	struct simdisk *s = ctx;

	map_free(&s->pages);
	avfs_hdd_free(s->hdd);
	free(s->q);
	free(s->cq);
	free(s->trace);
	free(s);
}

static const struct avfs_disk_ops simdisk_ops = {
	.name = "sim",
	.submit = sd_submit,
	.reap = sd_reap,
	.wait = sd_wait,
	.register_buffers = sd_register,
	.inflight = sd_inflight,
	.close = sd_close,
};

int avfs_simdisk_open(struct avfs_sim_engine *eng, const struct avfs_hdd_params *p,
		      unsigned flags, struct avfs_disk **out)
{
	struct simdisk *s;
	int err;

	if (!eng || !p || !out || (flags & ~(AVFS_SIMDISK_NODATA | AVFS_SIMDISK_TRACE)))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = avfs_hdd_new(p, &s->hdd);
	if (err) {
		free(s);
		return err;
	}
	s->eng = eng;
	s->flags = flags;
	s->disk.ops = &simdisk_ops;
	s->disk.vectored = true;	/* the pieces are copied when the request completes */
	s->disk.ctx = s;
	s->disk.info = (struct avfs_disk_info){
		.size = avfs_hdd_sectors(s->hdd) * AVFS_HDD_SECTOR,
		.lbs = AVFS_HDD_SECTOR,
		.pbs = AVFS_HDD_SECTOR,
		.mem_align = AVFS_HDD_SECTOR,
		.rotational = !p->ssd,
		.has_seek = !p->ssd,
	};
	snprintf(s->disk.info.model, sizeof(s->disk.info.model), "sim:%s", p->name);
	snprintf(s->disk.ident.backend, sizeof(s->disk.ident.backend), "sim");
	*out = &s->disk;
	return 0;
}

int avfs_simdisk_open_model(struct avfs_sim_engine *eng, const char *model, uint64_t seed,
			    unsigned flags, struct avfs_disk **out)
{
	struct avfs_hdd_params p;
	int err = avfs_hdd_params_lookup(model, &p);

	if (err)
		return err;
	p.seed = seed;
	return avfs_simdisk_open(eng, &p, flags, out);
}

bool avfs_simdisk_is(const struct avfs_disk *d)
{
	return d && d->ops == &simdisk_ops;
}

static struct simdisk *sd(const struct avfs_disk *d)
{
	return avfs_simdisk_is(d) ? (struct simdisk *)d->ctx : NULL;
}

struct avfs_hdd *avfs_simdisk_model(const struct avfs_disk *d)
{
	return sd(d) ? sd(d)->hdd : NULL;
}

struct avfs_sim_engine *avfs_simdisk_engine(const struct avfs_disk *d)
{
	return sd(d) ? sd(d)->eng : NULL;
}

const struct avfs_simdisk_rec *avfs_simdisk_trace(const struct avfs_disk *d, size_t *n)
{
	struct simdisk *s = sd(d);

	*n = s ? s->ntrace : 0;
	return s ? s->trace : NULL;
}

void avfs_simdisk_trace_clear(struct avfs_disk *d)
{
	if (sd(d))
		sd(d)->ntrace = 0;
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t avfs_simdisk_trace_hash(const struct avfs_disk *d)
{
	size_t n;
	const struct avfs_simdisk_rec *t = avfs_simdisk_trace(d, &n);
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h = fnv(h, t[i].op | (uint64_t)t[i].fua << 8 | (uint64_t)t[i].cache_hit << 16);
		h = fnv(h, t[i].lba);
		h = fnv(h, t[i].len);
		h = fnv(h, t[i].submit);
		h = fnv(h, t[i].start);
		h = fnv(h, t[i].end);
		h = fnv(h, (uint64_t)t[i].seek_cyl);
		h = fnv(h, (uint64_t)t[i].res);
	}
	return h;
}

uint64_t avfs_simdisk_busy_ns(const struct avfs_disk *d)
{
	return sd(d) ? sd(d)->busy_ns : 0;
}

void avfs_simdisk_split(const struct avfs_disk *d, struct avfs_simdisk_split *out)
{
	if (sd(d))
		*out = sd(d)->split;
	else
		memset(out, 0, sizeof(*out));
}

size_t avfs_simdisk_pages(const struct avfs_disk *d)
{
	return sd(d) ? sd(d)->pages.n : 0;
}

void avfs_simdisk_stall(struct avfs_disk *d, uint64_t at, uint64_t ns)
{
	sd(d)->stall_at = at;
	sd(d)->stall_ns = ns;
}

void avfs_simdisk_nostore(struct avfs_disk *d, uint64_t lo, uint64_t hi)
{
	if (sd(d)) {
		sd(d)->nostore_lo = lo;
		sd(d)->nostore_hi = hi;
	}
}

int avfs_simdisk_predict(struct avfs_disk *d, uint64_t now, uint64_t off, double *seek,
			 double *rot, double *half_seek, uint64_t *mid_off)
{
	struct simdisk *s = sd(d);
	uint64_t mid;
	int err;

	if (!s)
		return -EINVAL;
	err = avfs_hdd_predict(s->hdd, now, off / AVFS_HDD_SECTOR, seek, rot, half_seek, &mid);
	*mid_off = mid * AVFS_HDD_SECTOR;
	return err;
}
