/*
 * hddmodel.c — a rotating disk in arithmetic: geometry from the named model, the fitted
 * seek curve, rotation phase from time, track skew, read-ahead cache segments and write-back.
 * The caller passes the time; nothing here reads a clock, sleeps or touches a descriptor.
 * Content is not kept here (the simulated disk keeps it).
 */
#include "hddmodel.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS 1e6	/* ns per ms */

struct zone {
	uint32_t first_cyl, ncyl;
	uint64_t first_sector, nsectors;
	uint32_t spt;		/* sectors per track */
	uint32_t skew_h, skew_c;	/* track skew in sectors at a head / cylinder boundary */
	double rate;		/* sustained bytes/s including switches (what a reader sees) */
};

struct seg {			/* one read-cache segment: sectors [start, end) */
	bool valid;
	bool streaming;		/* read-ahead still running from origin at t_origin */
	uint64_t start, end;
	uint64_t origin, limit;	/* streaming: next sector to read, last sector + 1 allowed */
	double t_origin;
	uint64_t lru;
};

struct chs {
	unsigned z;
	uint32_t cyl, head, s;
};

struct avfs_hdd {
	struct avfs_hdd_params p;
	double tr;		/* rotation period, ns */
	struct zone *zones;
	unsigned nz;
	uint64_t nsect;
	uint32_t ncyl;		/* cylinders holding sectors */
	double sa, sb, sc, se, sx0;	/* seek curve: a + b·√d below x0, c + e·d above (ms) */
	/* state */
	uint32_t cyl, head;	/* where the head is */
	double busy_until;	/* ns; the drive is free from then on */
	struct seg *segs;
	unsigned nsegs;
	uint64_t seg_sectors;
	uint64_t lru_clock;
	uint64_t rng;
};

static const struct avfs_hdd_params models[] = {
	{ /* papers/001 §4.1, pinned by SPEC §11 */
		.name = "avfs-250g", .capacity = 250000000000ull, .rpm = 7200, .heads = 4,
		.nzones = 16, .rate_outer = 70e6, .rate_inner = 38e6,
		.seek_track_ms = 0.8, .seek_mean_ms = 8.5, .seek_full_ms = 17.0,
		.head_switch_ms = 0.8, .overhead_ms = 0.1, .bus_rate = 150e6,
		.cache_bytes = 8u << 20, .cache_segments = 1, .read_ahead = true,
		.err_ms = 100,
	},
	{ /* papers/004 Table 2.1: Seagate Barracuda 7200.11 ST3500320AS */
		.name = "barracuda-500g", .capacity = 500107862016ull, .rpm = 7200, .heads = 4,
		.nzones = 16, .rate_outer = 105e6, .rate_inner = 55e6,
		.seek_track_ms = 0.8, .seek_mean_ms = 8.5, .seek_full_ms = 17.5,
		.head_switch_ms = 0.8, .overhead_ms = 0.1, .bus_rate = 300e6,
		.cache_bytes = 32u << 20, .cache_segments = 1, .read_ahead = true,
		.err_ms = 100,
	},
	{ /* papers/003 §4: Seagate ST318437LW, 2 tracks/cylinder, 437–750 sectors/track */
		.name = "st318437", .capacity = 18400000000ull, .rpm = 7200, .heads = 2,
		.nzones = 12, .rate_outer = 41.7e6, .rate_inner = 24.3e6,
		.seek_track_ms = 0.6, .seek_mean_ms = 5.8, .seek_full_ms = 12.0,
		.head_switch_ms = 0.6, .overhead_ms = 0.1, .bus_rate = 80e6,
		.cache_bytes = 512u << 10, .cache_segments = 1, .read_ahead = true,
		.err_ms = 100,
	},
	{ /* papers/000 §4: a 2.5-inch 4200 rpm laptop disk */
		.name = "travelstar-20g", .capacity = 20000000000ull, .rpm = 4200, .heads = 2,
		.nzones = 12, .rate_outer = 15e6, .rate_inner = 8e6,
		.seek_track_ms = 2.5, .seek_mean_ms = 12.0, .seek_full_ms = 23.0,
		.head_switch_ms = 1.5, .overhead_ms = 0.3, .bus_rate = 66e6,
		.cache_bytes = 2u << 20, .cache_segments = 1, .read_ahead = true,
		.err_ms = 150,
	},
	{ /* no mechanics: fixed latency + bandwidth */
		.name = "ssd", .capacity = 250000000000ull, .ssd = true,
		.overhead_ms = 0.01, .bus_rate = 550e6,
		.ssd_read_ms = 0.08, .ssd_write_ms = 0.03, .ssd_rate = 500e6,
		.err_ms = 10,
	},
};

static const char *const model_names[] = {
	"avfs-250g", "barracuda-500g", "st318437", "travelstar-20g", "ssd", NULL,
};

int avfs_hdd_params_lookup(const char *name, struct avfs_hdd_params *p)
{
	if (!name || !p)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		if (!strcmp(models[i].name, name)) {
			*p = models[i];
			return 0;
		}
	}
	return -ENOENT;
}

const char *const *avfs_hdd_model_names(void)
{
	return model_names;
}

const struct avfs_hdd_params *avfs_hdd_params(const struct avfs_hdd *h)
{
	return &h->p;
}

/* splitmix64: the one PRNG of the model (jitter, error recovery, the seek fit's sample) */
static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unif(uint64_t *x)	/* [0, 1) */
{
	return (splitmix(x) >> 11) * 0x1.0p-53;
}

/* ---- geometry ---- */

static unsigned zone_of(const struct avfs_hdd *h, uint64_t sector)
{
	unsigned lo = 0, hi = h->nz;

	while (hi - lo > 1) {
		unsigned mid = (lo + hi) / 2;

		if (h->zones[mid].first_sector <= sector)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void locate(const struct avfs_hdd *h, uint64_t sector, struct chs *c)
{
	const struct zone *z;
	uint64_t off, spc;

	c->z = zone_of(h, sector);
	z = &h->zones[c->z];
	spc = (uint64_t)z->spt * h->p.heads;
	off = sector - z->first_sector;
	c->cyl = z->first_cyl + (uint32_t)(off / spc);
	off %= spc;
	c->head = (uint32_t)(off / z->spt);
	c->s = (uint32_t)(off % z->spt);
}

/* The angular slot (0..spt-1) under which sector c->s passes: the sector number plus the
 * skew accumulated over the track and cylinder boundaries of its zone, so that a
 * sequential transfer crossing a boundary loses exactly the skew. */
static uint32_t slot_of(const struct avfs_hdd *h, const struct chs *c)
{
	const struct zone *z = &h->zones[c->z];
	uint64_t ncb = c->cyl - z->first_cyl;
	uint64_t ntrack = ncb * h->p.heads + c->head;
	uint64_t skew = ncb * z->skew_c + (ntrack - ncb) * z->skew_h;

	return (uint32_t)((c->s + skew) % z->spt);
}

/* Wait until slot `slot` of a track of `spt` slots comes under the head, from time t. */
static double rot_wait(const struct avfs_hdd *h, double t, uint32_t slot, uint32_t spt)
{
	double phase = fmod(t, h->tr) / h->tr;
	double w = (double)slot / spt - phase;

	if (w < 0)
		w = w > -1e-6 ? 0 : w + 1;	/* tolerate rounding of integer-ns times */
	return w * h->tr;
}

static uint32_t track_spt(const struct avfs_hdd *h, double rate, uint32_t *skh, uint32_t *skc)
{
	double tr_s = h->tr / 1e9;
	double spt = rate * tr_s / AVFS_HDD_SECTOR;
	unsigned heads = h->p.heads;

	/* papers/003 §3.4, track skew: a sequential reader loses the skew at every boundary,
	 * so choose sectors per track such that the rate *with* skew is the zone's rate */
	for (int i = 0; i < 8; i++) {
		double per_cyl;

		*skh = (uint32_t)ceil(h->p.head_switch_ms * MS / h->tr * spt);
		*skc = (uint32_t)ceil(fmax(h->p.seek_track_ms, h->p.head_switch_ms) * MS / h->tr * spt);
		per_cyl = heads * spt + (heads - 1) * (double)*skh + *skc;	/* in sector times */
		spt = rate * tr_s * per_cyl / ((double)heads * spt * AVFS_HDD_SECTOR);
	}
	return (uint32_t)lround(spt);
}

static int build_zones(struct avfs_hdd *h)
{
	unsigned nz = h->p.nzones, heads = h->p.heads;
	uint64_t sum_spt = 0, first = 0;
	uint32_t cpz;

	h->zones = calloc(nz, sizeof(*h->zones));
	if (!h->zones)
		return -ENOMEM;
	for (unsigned z = 0; z < nz; z++) {
		struct zone *zn = &h->zones[z];
		double f = nz > 1 ? (double)z / (nz - 1) : 0;

		zn->rate = h->p.rate_outer - (h->p.rate_outer - h->p.rate_inner) * f;
		zn->spt = track_spt(h, zn->rate, &zn->skew_h, &zn->skew_c);
		if (zn->spt < 16)
			return -EINVAL;
		sum_spt += zn->spt;
	}
	/* equal cylinders per zone: zones are radial bands of the platter */
	cpz = (uint32_t)((h->nsect + heads * sum_spt - 1) / (heads * sum_spt));
	h->nz = 0;
	for (unsigned z = 0; z < nz && first < h->nsect; z++) {
		struct zone *zn = &h->zones[z];

		zn->first_cyl = z * cpz;
		zn->ncyl = cpz;
		zn->first_sector = first;
		zn->nsectors = (uint64_t)cpz * heads * zn->spt;
		if (zn->nsectors > h->nsect - first)
			zn->nsectors = h->nsect - first;
		first += zn->nsectors;
		h->nz++;
	}
	return 0;
}

/* ---- seek curve (DiskSim / Ruemmler–Wilkes form) ---- */

static double curve(double a, double b, double c, double e, double x0, double d)
{
	if (d <= 0)
		return 0;
	return d < x0 ? a + b * sqrt(d) : c + e * d;
}

/* For a boundary x0, the curve through t(1) = track and t(full) = full with a continuous
 * value and slope at x0. */
static void curve_for(const struct avfs_hdd *h, double x0, double *a, double *b, double *c,
		      double *e)
{
	double t1 = h->p.seek_track_ms, tf = h->p.seek_full_ms;
	double full = h->ncyl - 1;
	double r = sqrt(x0);

	*b = (tf - t1) / (-1 + r / 2 + full / (2 * r));
	*a = t1 - *b;
	*e = *b / (2 * r);
	*c = *a + *b * r / 2;
}

static int fit_seek(struct avfs_hdd *h)
{
	enum { N = 50000 };
	uint32_t *dist = malloc(N * sizeof(*dist));
	uint64_t x = 0x5eedf17ull;	/* the fit's own sample: independent of the model seed */
	double lo = 2, hi = h->ncyl - 1;
	double a, b, c, e;

	if (!dist)
		return -ENOMEM;
	for (int i = 0; i < N; i++) {
		uint32_t c1 = avfs_hdd_cyl_of(h, splitmix(&x) % h->nsect);
		uint32_t c2 = avfs_hdd_cyl_of(h, splitmix(&x) % h->nsect);

		dist[i] = c1 > c2 ? c1 - c2 : c2 - c1;
	}
	/* the mean over random LBA pairs grows with x0 (the curve gets more concave):
	 * bisect for the model's mean seek time */
	for (int it = 0; it < 100; it++) {
		double mid = sqrt(lo * hi), sum = 0;

		curve_for(h, mid, &a, &b, &c, &e);
		for (int i = 0; i < N; i++)
			sum += curve(a, b, c, e, mid, dist[i]);
		if (sum / N < h->p.seek_mean_ms)
			lo = mid;
		else
			hi = mid;
	}
	free(dist);
	h->sx0 = sqrt(lo * hi);
	curve_for(h, h->sx0, &h->sa, &h->sb, &h->sc, &h->se);
	if (!(h->sb > 0) || !(h->sa >= 0))
		return -EINVAL;	/* the three figures admit no monotone curve of this form */
	return 0;
}

double avfs_hdd_seek_ms(const struct avfs_hdd *h, uint32_t dist)
{
	if (h->p.ssd)
		return 0;
	return curve(h->sa, h->sb, h->sc, h->se, h->sx0, dist);
}

int avfs_hdd_new(const struct avfs_hdd_params *p, struct avfs_hdd **out)
{
	struct avfs_hdd *h;
	int err = -EINVAL;

	if (!p || !out || p->capacity < 64 * AVFS_HDD_SECTOR)
		return -EINVAL;
	if (!p->ssd && (p->rpm <= 0 || !p->heads || !p->nzones || p->rate_inner <= 0 ||
			p->rate_outer < p->rate_inner || p->seek_track_ms <= 0 ||
			p->seek_mean_ms <= p->seek_track_ms || p->seek_full_ms <= p->seek_mean_ms ||
			!p->cache_segments || p->bus_rate <= 0))
		return -EINVAL;
	if (p->ssd && (p->ssd_rate <= 0 || p->bus_rate <= 0))
		return -EINVAL;
	if (p->jitter < 0 || p->jitter >= 1 || p->err_prob < 0 || p->err_prob > 1)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->p = *p;
	h->nsect = p->capacity / AVFS_HDD_SECTOR;
	h->rng = p->seed;
	if (!p->ssd) {
		h->tr = 60e9 / p->rpm;
		err = build_zones(h);
		if (err)
			goto fail;
		h->ncyl = avfs_hdd_cyl_of(h, h->nsect - 1) + 1;
		err = fit_seek(h);
		if (err)
			goto fail;
		h->nsegs = p->cache_segments;
		h->segs = calloc(h->nsegs, sizeof(*h->segs));
		err = -ENOMEM;
		if (!h->segs)
			goto fail;
		h->seg_sectors = p->cache_bytes / h->nsegs / AVFS_HDD_SECTOR;
	}
	*out = h;
	return 0;
fail:
	avfs_hdd_free(h);
	return err;
}

void avfs_hdd_free(struct avfs_hdd *h)
{
	if (!h)
		return;
	free(h->segs);
	free(h->zones);
	free(h);
}

/* ---- for predictors outside the model ---- */

static uint64_t sector_of(const struct avfs_hdd *h, uint64_t off)
{
	uint64_t s = off / AVFS_HDD_SECTOR;

	return s < h->nsect ? s : h->nsect - 1;
}

double avfs_hdd_angle_of(const void *hv, uint64_t off)
{
	const struct avfs_hdd *h = hv;
	struct chs c;

	locate(h, sector_of(h, off), &c);
	return (double)slot_of(h, &c) / h->zones[c.z].spt;
}

double avfs_hdd_seek_between(const void *hv, uint64_t from, uint64_t to)
{
	const struct avfs_hdd *h = hv;
	struct chs a, b;

	locate(h, sector_of(h, from), &a);
	locate(h, sector_of(h, to), &b);
	if (a.cyl != b.cyl)
		return avfs_hdd_seek_ms(h, a.cyl > b.cyl ? a.cyl - b.cyl : b.cyl - a.cyl) * MS;
	return a.head != b.head ? h->p.head_switch_ms * MS : 0;
}

void avfs_hdd_part(const struct avfs_hdd *h, uint64_t bytes, double *rate_first, double *rate_last,
		   double *seek_mean_ns, double *seek_full_ns)
{
	enum { K = 256 };	/* the mean seek over a grid of K x K sector pairs */
	uint64_t last = sector_of(h, bytes ? bytes - 1 : 0);
	uint32_t cyl[K];
	double sum = 0;

	*rate_first = h->zones[0].rate;
	*rate_last = h->zones[zone_of(h, last)].rate;
	for (unsigned i = 0; i < K; i++)
		cyl[i] = avfs_hdd_cyl_of(h, (uint64_t)((i + 0.5) / K * (double)last));
	for (unsigned i = 0; i < K; i++)
		for (unsigned j = 0; j < K; j++)
			sum += avfs_hdd_seek_ms(h, cyl[i] > cyl[j] ? cyl[i] - cyl[j] : cyl[j] - cyl[i]);
	*seek_mean_ns = sum / (K * K) * MS;
	*seek_full_ns = avfs_hdd_seek_ms(h, avfs_hdd_cyl_of(h, last) - avfs_hdd_cyl_of(h, 0)) * MS;
}

/* ---- service ---- */

static double seek_ns(struct avfs_hdd *h, uint32_t d, bool jitter)
{
	double t = avfs_hdd_seek_ms(h, d) * MS;

	if (jitter && h->p.jitter > 0)
		t *= 1 + h->p.jitter * (2 * unif(&h->rng) - 1);
	return t;
}

static uint64_t track_id(const struct avfs_hdd *h, const struct chs *c)
{
	return (uint64_t)c->cyl * h->p.heads + c->head;
}

/* Time to move to the next track during a sequential transfer. */
static double switch_ns(struct avfs_hdd *h, const struct chs *from, const struct chs *to)
{
	if (to->cyl != from->cyl)
		return fmax(seek_ns(h, to->cyl - from->cyl, false), h->p.head_switch_ms * MS);
	return h->p.head_switch_ms * MS;
}

/* Position the head on sector's track and transfer [sector, sector + n) from time t.
 * Returns the time the last sector has passed under the head. */
static double media_access(struct avfs_hdd *h, double t, uint64_t sector, uint32_t n,
			   struct avfs_hdd_result *r)
{
	struct chs c, next;
	double pos;
	bool first = true;

	locate(h, sector, &c);
	r->from_cyl = h->cyl;
	r->to_cyl = c.cyl;
	r->seek_cyl = (int64_t)c.cyl - (int64_t)h->cyl;
	if (c.cyl != h->cyl)
		pos = seek_ns(h, c.cyl > h->cyl ? c.cyl - h->cyl : h->cyl - c.cyl, true);
	else if (c.head != h->head)
		pos = h->p.head_switch_ms * MS;
	else
		pos = 0;
	r->seek += pos;
	t += pos;
	while (n) {
		const struct zone *z = &h->zones[c.z];
		double w = rot_wait(h, t, slot_of(h, &c), z->spt);
		uint32_t cnt = z->spt - c.s < n ? z->spt - c.s : n;
		double x = cnt * h->tr / z->spt;

		if (first)
			r->rot += w;
		else
			r->xfer += w;
		t += w + x;
		r->xfer += x;
		n -= cnt;
		sector += cnt;
		h->cyl = c.cyl;
		h->head = c.head;
		if (!n)
			break;
		locate(h, sector, &next);
		w = switch_ns(h, &c, &next);
		t += w;
		r->xfer += w;
		c = next;
		first = false;
	}
	return t;
}

/* Read-ahead: stream sectors from pos (the head has just passed pos - 1) from time *t,
 * up to `limit` or until time tstop. Returns the new position; *t is when it was reached. */
static uint64_t stream(struct avfs_hdd *h, uint64_t pos, double *t, uint64_t limit, double tstop)
{
	struct chs prev, c;

	if (pos == 0 || pos >= h->nsect)
		return pos;
	locate(h, pos - 1, &prev);
	while (pos < limit && pos < h->nsect) {
		const struct zone *z;
		double tt = *t, per;
		uint32_t cnt;

		locate(h, pos, &c);
		z = &h->zones[c.z];
		if (track_id(h, &c) != track_id(h, &prev))
			tt += switch_ns(h, &prev, &c);
		tt += rot_wait(h, tt, slot_of(h, &c), z->spt);
		per = h->tr / z->spt;
		cnt = z->spt - c.s;
		if (limit - pos < cnt)
			cnt = (uint32_t)(limit - pos);
		if (tt >= tstop)
			break;
		if (tt + cnt * per > tstop) {
			uint32_t k = (uint32_t)((tstop - tt) / per);

			pos += k;
			*t = tt + k * per;
			if (k)
				h->cyl = c.cyl, h->head = c.head;
			break;
		}
		pos += cnt;
		*t = tt + cnt * per;
		h->cyl = c.cyl;
		h->head = c.head;
		prev = c;
	}
	return pos;
}

static struct seg *streaming_seg(struct avfs_hdd *h)
{
	for (unsigned i = 0; i < h->nsegs; i++)
		if (h->segs[i].valid && h->segs[i].streaming)
			return &h->segs[i];
	return NULL;
}

/* A new command stops read-ahead: fix how far it got by time t. */
static void freeze(struct avfs_hdd *h, double t)
{
	struct seg *s = streaming_seg(h);
	double tt;

	if (!s)
		return;
	tt = s->t_origin;
	s->end = stream(h, s->origin, &tt, s->limit, t + 1);	/* + 1: as in serve_read */
	s->streaming = false;
}

static void invalidate(struct avfs_hdd *h, uint64_t lo, uint64_t hi)
{
	for (unsigned i = 0; i < h->nsegs; i++) {
		struct seg *s = &h->segs[i];

		if (s->valid && s->start < hi && lo < s->end)
			s->valid = false;
	}
}

/* How far the drive reads ahead after a read of n sectors: what the segment has left,
 * but at least half a segment (the host drains the segment while the head streams). */
static uint64_t read_ahead_len(const struct avfs_hdd *h, uint64_t n)
{
	uint64_t half = h->seg_sectors / 2;

	return h->seg_sectors > n + half ? h->seg_sectors - n : half;
}

/* Remember [start, end) as read, with read-ahead from end at time t. */
static void cache_fill(struct avfs_hdd *h, uint64_t start, uint64_t end, double t)
{
	struct seg *v = NULL;

	invalidate(h, start, end);
	for (unsigned i = 0; i < h->nsegs; i++) {
		struct seg *s = &h->segs[i];

		if (!s->valid) {
			v = s;
			break;
		}
		if (!v || s->lru < v->lru)
			v = s;
	}
	if (end - start > h->seg_sectors)
		start = end - h->seg_sectors;	/* a segment keeps the tail of a long read */
	v->valid = true;
	v->start = start;
	v->end = end;
	v->origin = end;
	v->t_origin = t;
	v->limit = end + read_ahead_len(h, end - start);
	if (v->limit > h->nsect)
		v->limit = h->nsect;
	v->streaming = h->p.read_ahead && v->limit > end;
	v->lru = ++h->lru_clock;
}

static double recovery(struct avfs_hdd *h, struct avfs_hdd_result *r)
{
	if (h->p.err_prob > 0 && unif(&h->rng) < h->p.err_prob) {
		r->recovered = true;
		return h->p.err_ms * MS;
	}
	return 0;
}

static double serve_read(struct avfs_hdd *h, double ts, uint64_t L, uint32_t n,
			 struct avfs_hdd_result *r)
{
	double tc = ts + h->p.overhead_ms * MS;	/* the drive has decoded the command */
	double bus = (double)n * AVFS_HDD_SECTOR / h->p.bus_rate * 1e9;
	struct seg *s = streaming_seg(h);
	double t, end;

	if (s && s->start <= L) {
		double tt = s->t_origin;
		/* + 1 ns: completion times are rounded to whole ns, and a request issued at the
		 * rounded completion of its predecessor must find the sector it just passed */
		uint64_t now_pos = stream(h, s->origin, &tt, s->limit, ts + 1);
		bool active = now_pos < s->limit;

		if (L <= now_pos && (L + n <= now_pos || active)) {
			/* a hit on the read-ahead stream: what is cached goes at bus speed, the
			 * rest arrives as the head keeps streaming (no seek, no rotation) */
			uint64_t ra = read_ahead_len(h, n);

			r->cache_hit = true;
			s->origin = now_pos;	/* re-base the stream where it is at ts */
			s->t_origin = active ? tt : fmax(tt, tc);	/* a stopped one restarts */
			if (s->limit < L + n + ra)
				s->limit = L + n + ra < h->nsect ? L + n + ra : h->nsect;
			if (s->limit - s->start > h->seg_sectors)
				s->start = s->limit - h->seg_sectors;
			s->end = now_pos;
			s->lru = ++h->lru_clock;
			end = tc + bus;
			if (L + n > now_pos) {
				tt = s->t_origin;
				stream(h, s->origin, &tt, L + n, INFINITY);
				end = fmax(end, tt);
			}
			r->xfer = end - tc;
			return end;
		}
	}
	freeze(h, ts);
	for (unsigned i = 0; i < h->nsegs; i++) {
		struct seg *c = &h->segs[i];
		uint64_t from;

		if (!c->valid || c->start > L || L >= c->end)
			continue;
		r->cache_hit = true;
		c->lru = ++h->lru_clock;
		if (L + n <= c->end) {
			r->xfer = bus;
			return tc + bus;
		}
		/* partial hit: the cached head of the request goes at bus speed while the
		 * drive fetches the tail from the medium */
		from = c->end;
		t = media_access(h, tc, from, (uint32_t)(L + n - from), r);
		t += recovery(h, r);
		cache_fill(h, L, L + n, t);
		return fmax(t, tc + bus);
	}
	t = media_access(h, tc, L, n, r);
	t += recovery(h, r);
	cache_fill(h, L, L + n, t);
	return t;
}

int avfs_hdd_service(struct avfs_hdd *h, uint64_t now, enum avfs_hdd_op op, uint64_t sector,
		     uint32_t nsect, bool fua, struct avfs_hdd_result *r)
{
	double ts, end, busy;

	if (!h || !r || op > AVFS_HDD_SEEK)
		return -EINVAL;
	if ((op == AVFS_HDD_READ || op == AVFS_HDD_WRITE) &&
	    (!nsect || sector >= h->nsect || nsect > h->nsect - sector))
		return -EINVAL;
	if (op == AVFS_HDD_SEEK && sector >= h->nsect)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	ts = fmax((double)now, h->busy_until);
	r->overhead = h->p.overhead_ms * MS;

	if (h->p.ssd) {
		double lat = op == AVFS_HDD_READ ? h->p.ssd_read_ms :
			     op == AVFS_HDD_WRITE ? h->p.ssd_write_ms : 0;
		double x = (double)nsect * AVFS_HDD_SECTOR / h->p.ssd_rate * 1e9;

		end = ts + h->p.overhead_ms * MS + lat * MS + (op <= AVFS_HDD_WRITE ? x : 0);
		if (op <= AVFS_HDD_WRITE)
			end += recovery(h, r);
		r->xfer = x;
		busy = end;
		goto out;
	}

	switch (op) {
	case AVFS_HDD_READ:
		end = serve_read(h, ts, sector, nsect, r);
		busy = end;
		break;
	case AVFS_HDD_WRITE: {
		double tc = ts + h->p.overhead_ms * MS;

		freeze(h, ts);
		invalidate(h, sector, sector + nsect);
		busy = media_access(h, tc, sector, nsect, r);
		busy += recovery(h, r);
		end = busy;
		if (h->p.write_cache && !fua)	/* write-back: done once in the cache */
			end = tc + (double)nsect * AVFS_HDD_SECTOR / h->p.bus_rate * 1e9;
		break;
	}
	case AVFS_HDD_SEEK: {
		struct chs c;
		double d;

		freeze(h, ts);
		locate(h, sector, &c);
		r->from_cyl = h->cyl;
		r->to_cyl = c.cyl;
		r->seek_cyl = (int64_t)c.cyl - (int64_t)h->cyl;
		d = c.cyl != h->cyl ? seek_ns(h, c.cyl > h->cyl ? c.cyl - h->cyl : h->cyl - c.cyl, true)
				    : 0;
		r->seek = d;
		h->cyl = c.cyl;
		h->head = c.head;
		end = busy = ts + h->p.overhead_ms * MS + d;
		break;
	}
	case AVFS_HDD_FLUSH:
	default:
		/* ts already waited for write-back to reach the medium */
		end = busy = ts + h->p.overhead_ms * MS;
		break;
	}
out:
	r->start = (uint64_t)llround(ts);
	r->end = (uint64_t)llround(end);
	busy = fmax(busy, end);
	r->busy_until = (uint64_t)llround(busy);
	h->busy_until = (double)r->busy_until;
	return 0;
}

/* ---- queries ---- */

uint64_t avfs_hdd_sectors(const struct avfs_hdd *h)
{
	return h->nsect;
}

uint32_t avfs_hdd_cylinders(const struct avfs_hdd *h)
{
	return h->p.ssd ? 1 : h->ncyl;
}

uint32_t avfs_hdd_cyl_of(const struct avfs_hdd *h, uint64_t sector)
{
	struct chs c;

	if (h->p.ssd)
		return 0;
	if (sector >= h->nsect)
		sector = h->nsect - 1;
	locate(h, sector, &c);
	return c.cyl;
}

uint64_t avfs_hdd_cyl_first_sector(const struct avfs_hdd *h, uint32_t cyl)
{
	const struct zone *z;
	unsigned i;

	if (h->p.ssd)
		return 0;
	for (i = 0; i + 1 < h->nz && h->zones[i + 1].first_cyl <= cyl; i++)
		;
	z = &h->zones[i];
	if (cyl < z->first_cyl)
		cyl = z->first_cyl;
	return z->first_sector + (uint64_t)(cyl - z->first_cyl) * z->spt * h->p.heads;
}

uint32_t avfs_hdd_spt_at(const struct avfs_hdd *h, uint64_t sector)
{
	if (h->p.ssd)
		return 0;
	return h->zones[zone_of(h, sector < h->nsect ? sector : h->nsect - 1)].spt;
}

double avfs_hdd_rotation_ms(const struct avfs_hdd *h)
{
	return h->tr / MS;
}

unsigned avfs_hdd_nzones(const struct avfs_hdd *h)
{
	return h->p.ssd ? 0 : h->nz;
}

double avfs_hdd_zone_rate(const struct avfs_hdd *h, unsigned z)
{
	return z < h->nz ? h->zones[z].rate : 0;
}

uint64_t avfs_hdd_zone_first_sector(const struct avfs_hdd *h, unsigned z)
{
	return z < h->nz ? h->zones[z].first_sector : 0;
}

int avfs_hdd_predict(const struct avfs_hdd *h, uint64_t now, uint64_t sector, double *seek,
		     double *rot, double *half_seek, uint64_t *mid_sector)
{
	struct chs c;
	double t, sk;
	uint32_t d;

	if (!h || sector >= h->nsect)
		return -EINVAL;
	*seek = *rot = *half_seek = 0;
	*mid_sector = sector;
	if (h->p.ssd)
		return 0;
	for (unsigned i = 0; i < h->nsegs; i++) {
		const struct seg *s = &h->segs[i];

		if (s->valid && s->streaming && s->start <= sector && sector <= s->limit)
			return 0;	/* the head is streaming towards it */
	}
	locate(h, sector, &c);
	d = c.cyl > h->cyl ? c.cyl - h->cyl : h->cyl - c.cyl;
	sk = d ? avfs_hdd_seek_ms(h, d) * MS : c.head != h->head ? h->p.head_switch_ms * MS : 0;
	t = fmax((double)now, h->busy_until) + h->p.overhead_ms * MS + sk;
	*seek = sk;
	*rot = rot_wait(h, t, slot_of(h, &c), h->zones[c.z].spt);
	*half_seek = d ? avfs_hdd_seek_ms(h, d / 2) * MS : 0;
	*mid_sector = avfs_hdd_cyl_first_sector(h, (c.cyl + h->cyl) / 2);
	return 0;
}
