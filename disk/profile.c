/*
 * profile.c — the disk profiler: timed reads through the backend ops table, turned into the
 * figures of SPEC §6.4. Each step's comment says how it measures (papers/003 §3.4 and the
 * extraction tools it cites, [7] Diskbench and [25] Worthington et al.: minimum times over
 * random rotational phases). It writes only in the step that is asked for by name
 * (AVFS_PROFILE_WRITE), never prints, and reads time only through the caller's clock.
 */
#include "profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hddmodel.h"
#include "simdisk.h"
#include "simengine.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define BUF_BYTES (4 * MIB)	/* the largest request: the top of the chunk sweep */
#define SMALL_IO 4096u		/* the small read: one file-system block */

struct prof {
	struct avfs_disk *d;
	const struct avfs_profile_clock *clk;
	const struct avfs_profile_geom *geom;	/* NULL: linear mapping */
	struct avfs_profile_opts o;		/* defaults filled in */
	struct avfs_profile *r;
	uint8_t *buf;				/* BUF_BYTES, aligned for d: reads land here */
	uint8_t *wbuf;				/* the same for writes, NULL until they start */
	uint64_t rng;
	uint32_t io;				/* small read size: SMALL_IO, or lbs if larger */
	uint64_t span;				/* bytes read at each rate point */
	uint32_t span_io;			/* request size there */
	/* random reads, kept to take the mean seek out once the rotation is known */
	uint64_t *rand_off;
	double *rand_svc;
	/* progress */
	const char *step;
	unsigned total, last_pct;
};

/* ---- helpers ---- */

static uint64_t rnd(uint64_t *x)	/* splitmix64 */
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct prof *p, uint64_t n)	/* uniform in [0, n), 0 for n == 0 */
{
	return n ? rnd(&p->rng) % n : 0;
}

static uint64_t align_down(uint64_t x, uint64_t a)
{
	return x - x % a;
}

/* A random offset aligned to the small read in [lo, hi), with room for one small read. */
static uint64_t rand_off(struct prof *p, uint64_t lo, uint64_t hi)
{
	uint64_t n;

	lo = (lo + p->io - 1) / p->io;
	hi = hi / p->io;
	n = hi > lo ? hi - lo : 1;
	return (lo + below(p, n)) * p->io;
}

static uint64_t now(struct prof *p)
{
	return p->clk->now(p->clk->ctx);
}

static void begin(struct prof *p, const char *step, unsigned total)
{
	p->step = step;
	p->total = total ? total : 1;
	p->last_pct = 101;
	if (p->o.progress)
		p->o.progress(p->o.progress_arg, step, 0, p->total);
}

static void progress(struct prof *p, unsigned done)
{
	unsigned pct = (unsigned)((uint64_t)done * 100 / p->total);

	if (!p->o.progress || pct == p->last_pct)
		return;
	p->last_pct = pct;
	p->o.progress(p->o.progress_arg, p->step, done, p->total);
}

/* One command (a read, a write from the buffer, a flush) at queue depth 1: *svc is submit to
 * completion, *end the completion time (ns on the profiler's clock). 0 or -errno. */
static int cmd(struct prof *p, enum avfs_disk_op op, uint64_t off, uint32_t len, double *svc,
	       uint64_t *end)
{
	bool flush = op == AVFS_DISK_FLUSH;
	struct avfs_disk_req rq = {
		.op = op, .lba = flush ? 0 : off / p->d->info.lbs, .len = flush ? 0 : len,
		.buf = flush ? NULL : op == AVFS_DISK_WRITE ? p->wbuf : p->buf, .buf_index = -1,
	};
	uint64_t t0 = now(p), t1;
	int64_t res = avfs_disk_io_sync(p->d, &rq);

	t1 = now(p);
	if (res < 0)
		return (int)res;
	if (!flush && res != len)
		return -EIO;
	p->r->requests++;
	p->r->writes += op == AVFS_DISK_WRITE;
	if (svc)
		*svc = (double)(t1 - t0);
	if (end)
		*end = t1;
	return 0;
}

static int rd(struct prof *p, uint64_t off, uint32_t len, double *svc, uint64_t *end)
{
	return cmd(p, AVFS_DISK_READ, off, len, svc, end);
}

/* The measured sequential rate at byte offset off: linear between the rate points. */
static double rate_at(const struct prof *p, uint64_t off)
{
	const struct avfs_profile *r = p->r;
	double x = (double)off, half = (double)p->span / 2;

	if (r->nrate == 0)
		return 1e9;
	if (x <= r->rate_off[0] + half)
		return r->rate[0];
	for (unsigned i = 1; i < r->nrate; i++) {
		double a = r->rate_off[i - 1] + half, b = r->rate_off[i] + half;

		if (x <= b)
			return r->rate[i - 1] + (r->rate[i] - r->rate[i - 1]) * (x - a) / (b - a);
	}
	return r->rate[r->nrate - 1];
}

/* Transfer time (ns) of a small read at off. With the mapping and the rotation known, the
 * fraction of a turn its sectors take on their track; else from the measured sequential rate
 * there, which is a little slower (it includes the head and track switches). */
static double xfer_ns(const struct prof *p, uint64_t off)
{
	if (p->geom && p->r->rot_measured) {
		uint32_t spt = p->geom->track_sectors(p->geom->ctx, off / 512);

		if (spt)
			return p->r->rotation_ns * ((double)p->io / 512) / spt;
	}
	return (double)p->io / rate_at(p, off) * 1e9;
}

/* Sequential reads (or writes) of `size` bytes over [start, start + bytes) at queue depth 1:
 * the rate in bytes/s from the first completion to the last, so that the first request's
 * positioning is left out (the requests after it find the head streaming). Writes end with a
 * FLUSH, and the rate runs to its completion: a write-back cache that takes the data at bus
 * speed must still put it on the medium (papers/003 §3.1 relies on the write buffer for
 * chunking, not on its speed). */
static int seq_rate(struct prof *p, enum avfs_disk_op op, uint64_t start, uint64_t bytes,
		    uint32_t size, double *rate)
{
	uint64_t n = bytes / size, t_first = 0, t_last = 0;
	int err;

	for (uint64_t k = 0; k < n; k++) {
		err = cmd(p, op, start + k * size, size, NULL, &t_last);
		if (err)
			return err;
		if (k == 0)
			t_first = t_last;
	}
	if (op == AVFS_DISK_WRITE) {
		err = cmd(p, AVFS_DISK_FLUSH, 0, 0, NULL, &t_last);
		if (err)
			return err;
	}
	/* a device faster than the clock's resolution still gets a finite rate */
	*rate = (double)(n - 1) * size / ((double)(t_last > t_first ? t_last - t_first : 1) / 1e9);
	return 0;
}

/* ---- steps ---- */

/* span bytes in span_io requests at n offsets from LBA 0 to the end, each a cold start far
 * from the one before: the sequential rate at each into off[]/rate[], *count as they come. */
static int rate_sweep(struct prof *p, enum avfs_disk_op op, const char *step, unsigned n,
		      uint64_t *off, double *rate, unsigned *count)
{
	uint64_t cap = p->r->capacity, span = p->span;
	int err;

	begin(p, step, n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t start = i == n - 1 ? cap - span :
					      (uint64_t)((double)(cap - span) * i / (n - 1));

		start = align_down(start, p->io);
		err = seq_rate(p, op, start, span, p->span_io, &rate[i]);
		if (err)
			return err;
		off[i] = start;
		*count = i + 1;
		progress(p, i + 1);
	}
	return 0;
}

/* The transfer rate across the LBA range: rate_span bytes in rate_io requests at rate_points
 * offsets. */
static int step_zones(struct prof *p)
{
	struct avfs_profile *r = p->r;
	unsigned n = p->o.rate_points;
	uint32_t io = p->o.rate_io;
	uint64_t span = p->o.rate_span;
	int err;

	if (span > r->capacity / n)
		span = r->capacity / n;
	while (io > p->io && span / io < 4)	/* small devices: smaller requests, not fewer */
		io /= 2;
	p->span = align_down(span, io);
	p->span_io = io;
	err = rate_sweep(p, AVFS_DISK_READ, "transfer rate across the disk", n, r->rate_off,
			 r->rate, &r->nrate);
	if (err)
		return err;
	r->outer = r->rate[0];
	r->inner = r->rate[n - 1];
	return 0;
}

int avfs_profile_pick_chunk(const double *rate, unsigned n)
{
	double mx = 0;

	if (!n)
		return -1;
	for (unsigned i = 0; i < n; i++)
		mx = fmax(mx, rate[i]);
	for (unsigned i = 0; i < n; i++)
		if (rate[i] >= 0.99 * mx)
			return (int)i;
	return (int)n - 1;	/* not reached: the maximum itself qualifies */
}

/* Sequential read (or write) throughput against request size, 4 KiB to 4 MiB (papers/003
 * Figs. 5 and 6), in the outer region. Each size reads a region of its own, separated from the
 * last by a gap and preceded by a read at the far end of the disk, so that no size inherits the
 * read-ahead of the one before (which would flatter the next size's first megabytes). */
static int step_chunks(struct prof *p, enum avfs_disk_op op)
{
	struct avfs_profile *r = p->r;
	bool w = op == AVFS_DISK_WRITE;
	unsigned *count = w ? &r->nwchunk : &r->nchunk;
	uint32_t *size = w ? r->wchunk_size : r->chunk_size;
	double *rate = w ? r->wchunk_rate : r->chunk_rate;
	uint64_t budget = p->o.quick ? 128 * MIB : 512 * MIB;
	uint64_t want_min = p->o.quick ? 4 * MIB : 16 * MIB, slot;
	unsigned n = 0, mult = p->o.quick ? 4 : 8;
	uint32_t sizes[AVFS_PROFILE_MAX_CHUNKS];
	double mx = 0;
	int err, best;

	for (uint64_t s = p->io; s <= BUF_BYTES && n < AVFS_PROFILE_MAX_CHUNKS; s *= 2)
		sizes[n++] = (uint32_t)s;
	if (budget > r->capacity / 2)
		budget = r->capacity / 2;
	slot = align_down(budget / n, p->io);
	begin(p, w ? "write throughput against request size" : "throughput against request size",
	      n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t bytes = (uint64_t)sizes[i] * mult;

		if (bytes < want_min)
			bytes = want_min;
		if (bytes > slot * 2 / 3)	/* the rest of the slot is the gap */
			bytes = slot * 2 / 3;
		bytes = align_down(bytes, sizes[i]);
		if (bytes / sizes[i] < 3)
			break;	/* a small device: the larger sizes do not fit */
		err = rd(p, align_down(r->capacity - p->io, p->io), p->io, NULL, NULL);
		if (err)
			return err;
		err = seq_rate(p, op, i * slot, bytes, sizes[i], &rate[*count]);
		if (err)
			return err;
		size[(*count)++] = sizes[i];
		progress(p, i + 1);
	}
	best = avfs_profile_pick_chunk(rate, *count);
	if (best < 0)
		return 0;
	for (unsigned i = 0; i < *count; i++)
		mx = fmax(mx, rate[i]);
	*(w ? &r->wchunk : &r->chunk) = size[best];
	*(w ? &r->wchunk_max_rate : &r->chunk_max_rate) = mx;
	return 0;
}

/* What writing costs (AVFS_PROFILE_WRITE, the last step: it destroys what the read steps
 * read): throughput against request size as for reads, then the rate at wrate_points places
 * across the LBA range, span bytes each in the read sweep's request size. The data is the
 * profiler's random stream, in a buffer of its own that the positioning reads leave alone, so
 * that a device that compresses or deduplicates gains nothing. */
static int step_write(struct prof *p)
{
	struct avfs_profile *r = p->r;
	uint64_t *w;
	int err;

	p->wbuf = avfs_disk_alloc_buf(p->d, BUF_BYTES);
	if (!p->wbuf)
		return -ENOMEM;
	w = (uint64_t *)p->wbuf;
	for (size_t i = 0; i < BUF_BYTES / sizeof(*w); i++)
		w[i] = rnd(&p->rng);
	err = step_chunks(p, AVFS_DISK_WRITE);
	if (!err)
		err = rate_sweep(p, AVFS_DISK_WRITE, "write rate across the disk",
				 p->o.wrate_points, r->wrate_off, r->wrate, &r->nwrate);
	return err;
}

/* Random small reads over the whole device at queue depth 1 (random LBA pairs). Their mean,
 * less the transfer, the command overhead and half a rotation, is the mean seek. */
static int step_random(struct prof *p)
{
	struct avfs_profile *r = p->r;
	unsigned n = p->o.n_random;
	double sum = 0;
	int err;

	p->rand_off = malloc(n * sizeof(*p->rand_off));
	p->rand_svc = malloc(n * sizeof(*p->rand_svc));
	if (!p->rand_off || !p->rand_svc)
		return -ENOMEM;
	begin(p, "random reads", n);
	for (unsigned i = 0; i < n; i++) {
		p->rand_off[i] = rand_off(p, 0, r->capacity);
		err = rd(p, p->rand_off[i], p->io, &p->rand_svc[i], NULL);
		if (err)
			return err;
		sum += p->rand_svc[i];
		r->nrandom = i + 1;
		progress(p, i + 1);
	}
	r->random_ns = sum / n;
	return 0;
}

/* A small read's place on the first track of cylinder c (mapped), away from the track's end
 * by `after` bytes and from its start by `before`. */
static uint64_t on_cyl(struct prof *p, uint32_t c, uint64_t before, uint64_t after)
{
	const struct avfs_profile_geom *g = p->geom;
	uint64_t first = g->cyl_sector(g->ctx, c) * 512;
	uint64_t track = (uint64_t)g->track_sectors(g->ctx, first / 512) * 512;
	uint64_t end = first + track;

	if (end > p->r->capacity)	/* the last cylinder may be partly used */
		end = p->r->capacity;
	if (end < first + before + p->io + after)	/* a stub of a last cylinder */
		return align_down(p->r->capacity - p->io, p->io);
	return rand_off(p, first + before, end - after);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The rotation period, with reads only: read [L, L + io), then at once [L - io, L + io). The
 * second read starts a sector the head has just passed (and the drive's read-ahead, which runs
 * forward, does not hold it), so it completes when [L, L + io) passes under the head again:
 * one turn after the first completed. The median of these completion-to-completion intervals
 * is T_r. A device without that signature (a flash device, a sparse image, a cache in front)
 * is reported as such: *found = false. */
static int step_rotation(struct prof *p, bool *found)
{
	struct avfs_profile *r = p->r;
	unsigned n = p->o.n_rot, close = 0;
	double *dt = malloc(n * sizeof(*dt)), med;
	int err = 0;

	if (!dt)
		return -ENOMEM;
	begin(p, "rotation period", n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t L, e1, e2;

		if (p->geom)	/* all of [L - io, L + io) on one track */
			L = on_cyl(p, (uint32_t)below(p, p->geom->ncyl), p->io, p->io);
		else
			L = rand_off(p, p->io, r->capacity - p->io);
		if (L < p->io)
			L = p->io;
		err = rd(p, L, p->io, NULL, &e1);
		if (!err)
			err = rd(p, L - p->io, 2 * p->io, NULL, &e2);
		if (err)
			goto out;
		dt[i] = (double)(e2 - e1);
		progress(p, i + 1);
	}
	qsort(dt, n, sizeof(*dt), cmp_double);
	med = dt[n / 2];
	for (unsigned i = 0; i < n; i++)
		close += fabs(dt[i] - med) <= 0.03 * med;
	/* 1,500 to 30,000 rpm, and a turn that repeats: the signature of a spinning medium */
	*found = med >= 2e6 && med <= 40e6 && 2 * close >= n;
	if (*found)
		r->rotation_ns = med;
out:
	free(dt);
	return err;
}

/* The command overhead as a zero-seek read sees it: a chain of small reads, each starting u
 * blocks past where the one before ended, on one track. Once u blocks take longer to pass than
 * the command takes to start, the read waits only for them: the minimum over u of the service
 * time less the transfer is the overhead, within one block's time. The chain stays in the outer
 * 1/64 of the disk, where a block passes fastest and that error is smallest. */
static int step_overhead(struct prof *p)
{
	struct avfs_profile *r = p->r;
	uint32_t lbs = p->d->info.lbs;
	unsigned n = (unsigned)(128 * KIB / lbs), left = 0;
	uint64_t pos = 0, track_end = 0;
	double mn = INFINITY;
	int err;

	if (n < 64)
		n = 64;
	begin(p, "command overhead", n);
	for (unsigned u = 1; u <= n; u++) {
		uint64_t next = pos + (uint64_t)u * lbs;
		double svc;

		if (!left || next + p->io > track_end) {
			/* a fresh track, reached by a read that is not a sample */
			if (p->geom) {
				uint32_t c = (uint32_t)below(p, p->geom->ncyl / 64 + 1);
				uint64_t first = p->geom->cyl_sector(p->geom->ctx, c) * 512;

				pos = (first + p->io - 1) / p->io * p->io;
				track_end = first + (uint64_t)p->geom->track_sectors(p->geom->ctx,
										 first / 512) * 512;
				left = UINT32_MAX;
			} else {
				pos = rand_off(p, 0, r->capacity / 64);
				track_end = r->capacity;
				left = 16;	/* unmapped: a new place every 16 samples */
			}
			if (track_end > r->capacity)
				track_end = r->capacity;
			err = rd(p, pos, p->io, NULL, NULL);
			if (err)
				return err;
			pos += p->io;
			next = pos + (uint64_t)u * lbs;
			if (next + p->io > track_end)
				continue;	/* a track too short for this u: skip it */
		}
		err = rd(p, next, p->io, &svc, NULL);
		if (err)
			return err;
		mn = fmin(mn, svc - xfer_ns(p, next));
		pos = next + p->io;
		left--;
		progress(p, u);
	}
	r->overhead_ns = isfinite(mn) && mn > 0 ? mn : 0;
	return 0;
}

/* The seek curve: for each distance, a small read at the far place, a pause of a random part of
 * a turn, and a small read at the near place (backwards, so that no read-ahead serves it). With
 * the phase random, the rotational wait is uniform on [0, T_r): the minimum over n samples of
 * the service time less overhead and transfer is the seek plus T_r/(n+1) on average, which is
 * taken off; the mean less the seek is the mean rotational latency. */
static int step_seeks(struct prof *p)
{
	struct avfs_profile *r = p->r;
	static const double full_fr[] = { 1.0 / 1000, 1.0 / 100, 1.0 / 16, 1.0 / 8, 1.0 / 4,
					  1.0 / 3, 1.0 / 2, 3.0 / 4, 1 };
	static const double quick_fr[] = { 1.0 / 100, 1.0 / 16, 1.0 / 4, 1.0 / 3, 1.0 / 2, 1 };
	const double *fr = p->o.quick ? quick_fr : full_fr;
	unsigned nfr = p->o.quick ? 6 : 9, nd = 0, total = 0, done = 0, third = 0;
	uint64_t dist[AVFS_PROFILE_MAX_SEEKS], full, stroke, lat_n = 0;
	unsigned ns[AVFS_PROFILE_MAX_SEEKS];
	double lat_sum = 0, tr = r->rotation_ns;

	/* the distances: one track (a cylinder, or a turn's worth of bytes), then fractions of
	 * the full stroke; the mapped curve also gets the short decades where √d bends */
	if (p->geom) {
		static const uint64_t decades[] = { 10, 100, 1000 };

		full = stroke = p->geom->ncyl - 1;
		dist[nd++] = 1;
		for (unsigned i = 0; i < 3 && !p->o.quick; i++)
			if (decades[i] < full / 16)
				dist[nd++] = decades[i];
	} else {
		/* two turns' worth of bytes back is surely another track: a head switch or a
		 * short seek (one turn's worth may still be the same track). The longest distance
		 * leaves 1/1024 of the disk for the near place to vary in, so that no sample
		 * reads a block an earlier one left in the drive's cache. */
		stroke = align_down(r->capacity - p->io, p->io);
		full = align_down(r->capacity - r->capacity / 1024 - p->io, p->io);
		dist[nd++] = align_down((uint64_t)(2 * r->outer * tr / 1e9), p->io);
		if (dist[0] < 2 * p->io)
			dist[0] = 2 * p->io;
	}
	for (unsigned i = 0; i < nfr; i++) {
		uint64_t d = (uint64_t)llround(fr[i] * (double)full);

		if (!p->geom)
			d = i == nfr - 1 ? full : align_down(d, p->io);
		if (d > full)
			d = full;
		if (d <= dist[nd - 1] || nd == AVFS_PROFILE_MAX_SEEKS)
			continue;
		if (fabs(fr[i] - 1.0 / 3) < 1e-9)
			third = nd;
		dist[nd++] = d;
	}
	for (unsigned i = 0; i < nd; i++) {
		/* short seeks are cheap and their figure is small: twice the samples, and at
		 * least 1000, which leaves T_r/1000 of rotational wait in the minimum (a few % of
		 * a track-to-track seek); so too the unmapped longest one, which alone gives the
		 * rotational latency (below) */
		ns[i] = p->o.n_seek;
		if ((double)dist[i] / (double)full <= 1.0 / 64 || (!p->geom && i == nd - 1))
			ns[i] = 2 * ns[i] > 1000 ? 2 * ns[i] : 1000;
		total += ns[i];
	}
	begin(p, "seek curve", total);
	for (unsigned i = 0; i < nd; i++) {
		double mn = INFINITY, sum = 0, seek;
		uint64_t d = dist[i];

		for (unsigned k = 0; k < ns[i]; k++) {
			uint64_t far, near;
			double svc, v;
			int err;

			if (p->geom) {
				uint32_t lo = (uint32_t)below(p, full - d + 1);

				far = on_cyl(p, lo + (uint32_t)d, 0, 0);
				near = on_cyl(p, lo, 0, 0);
			} else {
				near = rand_off(p, 0, r->capacity - d);
				far = near + d;
			}
			err = rd(p, far, p->io, NULL, NULL);
			if (err)
				return err;
			p->clk->pause(p->clk->ctx, below(p, (uint64_t)tr));
			err = rd(p, near, p->io, &svc, NULL);
			if (err)
				return err;
			v = svc - p->r->overhead_ns - xfer_ns(p, near);
			mn = fmin(mn, v);
			sum += v;
			progress(p, ++done);
		}
		seek = fmax(0, mn - tr / (ns[i] + 1));
		r->seek_dist[i] = d;
		r->seek_frac[i] = (double)d / (double)stroke;
		r->seek_ns[i] = seek;
		/* the rotational wait is what is left once the seek is known: unmapped, only the
		 * longest distance has one seek time for every sample (its two ends are each in
		 * one zone, where cylinders are linear in LBA) */
		if (p->geom || i == nd - 1) {
			lat_sum += sum - ns[i] * seek;
			lat_n += ns[i];
		}
	}
	r->nseek = nd;
	r->seek_track_ns = r->seek_ns[0];
	r->seek_third_ns = r->seek_ns[third];
	r->seek_full_ns = r->seek_ns[nd - 1];
	r->rot_latency_ns = lat_n ? lat_sum / lat_n : tr / 2;
	return 0;
}

/* ---- the run ---- */

static int fill_opts(const struct avfs_profile_opts *in, uint32_t lbs, struct avfs_profile_opts *o)
{
	if (in)
		*o = *in;
	else
		*o = (struct avfs_profile_opts){ .seed = 1 };
	if (!(o->steps & AVFS_PROFILE_READS))
		o->steps |= AVFS_PROFILE_READS;
	o->steps |= AVFS_PROFILE_ZONES;	/* the others take transfer time out with it */
	if (!o->rate_points)
		o->rate_points = o->quick ? 8 : 16;
	if (!o->wrate_points)
		o->wrate_points = o->quick ? 4 : 8;
	if (!o->rate_span)
		o->rate_span = o->quick ? 16 * MIB : 64 * MIB;
	if (!o->rate_io)
		o->rate_io = (uint32_t)MIB;
	if (!o->n_random)
		o->n_random = o->quick ? 1000 : 4000;
	if (!o->n_rot)
		o->n_rot = o->quick ? 16 : 64;
	if (!o->n_seek)
		o->n_seek = o->quick ? 150 : 1000;
	if (o->rate_points < 2 || o->rate_points > AVFS_PROFILE_MAX_RATES ||
	    o->wrate_points < 2 || o->wrate_points > AVFS_PROFILE_MAX_RATES ||
	    o->rate_io % lbs || o->rate_io > BUF_BYTES || o->n_seek < 2 ||
	    o->n_random > 10000000 || o->n_rot > 100000 || o->n_seek > 1000000)
		return -EINVAL;
	return 0;
}

int avfs_profile_run(struct avfs_disk *d, const struct avfs_profile_clock *clk,
		     const struct avfs_profile_geom *geom, const struct avfs_profile_opts *opts,
		     struct avfs_profile *out)
{
	struct prof p = { .d = d, .clk = clk, .geom = geom, .r = out };
	struct avfs_profile *r = out;
	uint64_t t0;
	int err;

	if (!d || !clk || !clk->now || !clk->pause || !out)
		return -EINVAL;
	if (geom && (!geom->ncyl || !geom->cyl_sector || !geom->track_sectors))
		return -EINVAL;
	err = fill_opts(opts, d->info.lbs, &p.o);
	if (err)
		return err;
	if (d->info.size < AVFS_PROFILE_MIN_BYTES)
		return -ENOSPC;
	memset(r, 0, sizeof(*r));
	r->capacity = d->info.size;
	r->lbs = d->info.lbs;
	r->rotational = d->info.rotational;
	r->mapped = geom && geom->ncyl > 1;
	if (!r->mapped)
		p.geom = NULL;
	r->ncyl = r->mapped ? geom->ncyl : 0;
	p.io = d->info.lbs > SMALL_IO ? d->info.lbs : SMALL_IO;
	r->io = p.io;
	r->lmax = r->capacity;
	p.rng = p.o.seed ^ 0x70be5eedull;
	p.buf = avfs_disk_alloc_buf(d, BUF_BYTES);
	if (!p.buf)
		return -ENOMEM;
	t0 = now(&p);

	err = step_zones(&p);
	if (!err && (p.o.steps & AVFS_PROFILE_CHUNKS))
		err = step_chunks(&p, AVFS_DISK_READ);
	if (!err && (p.o.steps & AVFS_PROFILE_RANDOM))
		err = step_random(&p);
	if (!err && (p.o.steps & AVFS_PROFILE_MECH) && r->rotational) {
		bool found = false;

		err = step_rotation(&p, &found);
		r->rot_measured = found;
		if (!err && found)
			err = step_overhead(&p);
		if (!err && found)
			err = step_seeks(&p);
	}
	if (!err && (p.o.steps & AVFS_PROFILE_WRITE))
		err = step_write(&p);
	if (err)
		goto out;

	/* the mean seek over random LBA pairs: what random reads spend beyond overhead, transfer
	 * and the mean rotational wait of half a turn (uniform phase) */
	if (r->nrandom) {
		double pos = 0;

		for (unsigned i = 0; i < r->nrandom; i++)
			pos += p.rand_svc[i] - xfer_ns(&p, p.rand_off[i]);
		pos /= r->nrandom;	/* overhead + seek + rotation */
		if (r->rot_measured)
			r->seek_mean_ns = fmax(0, pos - r->overhead_ns - r->rotation_ns / 2);
		r->tk_ns = r->rot_measured ? r->seek_mean_ns : fmax(0, pos);
	}
	r->tr_ns = r->rot_measured ? r->rotation_ns : 0;
	r->dmax = r->outer;
	r->dmin = r->inner;
	if (!r->rotational || !r->rot_measured || r->dmin > r->dmax) {
		/* no zones on flash, nor on a "rotational" device whose timing shows no platter (an
		 * emulated disk, a file): the model's line is flat at the slowest rate seen, not
		 * drawn between two noisy end points */
		double mn = r->rate[0];

		for (unsigned i = 1; i < r->nrate; i++)
			mn = fmin(mn, r->rate[i]);
		r->dmin = mn;
		r->dmax = r->rotational && r->rot_measured ? r->dmax : mn;
	}
	r->elapsed_ns = now(&p) - t0;
out:
	free(p.rand_off);
	free(p.rand_svc);
	free(p.buf);
	free(p.wbuf);
	return err;
}

/* ---- clocks and the simulated disk's environment ---- */

static uint64_t sim_now(void *ctx)
{
	return avfs_sim_now(ctx);
}

static void sim_pause(void *ctx, uint64_t ns)
{
	struct avfs_sim_engine *e = ctx;

	avfs_sim_run_until(e, avfs_sim_now(e) + ns);
}

static uint64_t sim_cyl_sector(void *ctx, uint32_t cyl)
{
	return avfs_hdd_cyl_first_sector(ctx, cyl);
}

static uint32_t sim_track_sectors(void *ctx, uint64_t sector)
{
	return avfs_hdd_spt_at(ctx, sector);
}

int avfs_profile_sim_env(struct avfs_disk *d, struct avfs_profile_clock *clk,
			 struct avfs_profile_geom *geom)
{
	struct avfs_hdd *h = avfs_simdisk_model(d);

	if (!h || !clk)
		return -EINVAL;
	*clk = (struct avfs_profile_clock){ .ctx = avfs_simdisk_engine(d), .now = sim_now,
					    .pause = sim_pause };
	if (geom)
		*geom = (struct avfs_profile_geom){
			.ctx = h,
			.ncyl = avfs_hdd_params(h)->ssd ? 0 : avfs_hdd_cylinders(h),
			.cyl_sector = sim_cyl_sector,
			.track_sectors = sim_track_sectors,
		};
	return 0;
}

static uint64_t real_now(void *ctx)
{
	(void)ctx;
	return (uint64_t)avfs_clock_ns();
}

static void real_pause(void *ctx, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	(void)ctx;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void avfs_profile_real_clock(struct avfs_profile_clock *clk)
{
	*clk = (struct avfs_profile_clock){ .ctx = NULL, .now = real_now, .pause = real_pause };
}
