/*
 * crashsim.c — crash images and crash points from a recdisk log. The model is the one
 * dm-log-writes replays and CrashMonkey explores: completed-but-unflushed writes may each be
 * lost and may reach the medium in any order; a FLUSH or a FUA makes writes durable.
 * No device access: callers feed the images to whatever checker they have.
 */
#include "crashsim.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64: tiny, seedable with any value (0 included), good enough for test choices */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0; rejection removes the modulo bias. */
static uint64_t rand_below(uint64_t *s, uint64_t n)
{
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, v;

	do
		v = next_rand(s);
	while (v >= lim);
	return v % n;
}

/* Land the first len bytes of write e (all of them: e->len). */
static void apply_n(const struct avfs_rec_entry *e, uint32_t len, uint64_t size, uint8_t *out)
{
	if (e->kind != AVFS_REC_WRITE || !e->data || e->off > size || e->len > size - e->off)
		return;
	memcpy(out + e->off, e->data, len < e->len ? len : e->len);
}

static void apply(const struct avfs_rec_entry *e, uint64_t size, uint8_t *out)
{
	apply_n(e, e->len, size, out);
}

/* How much of write e lands when it is cut (probability 1 in `odds`, from *rng): a whole
 * number of sectors in [1, sectors - 1]; e->len when it is not cut. */
static uint32_t cut_len(const struct avfs_rec_entry *e, uint32_t sector, uint64_t odds,
			uint64_t *rng)
{
	uint32_t nsec = sector ? e->len / sector : 0;

	if (nsec < 2 || e->len % sector || rand_below(rng, odds))
		return e->len;
	return (uint32_t)(1 + rand_below(rng, nsec - 1)) * sector;
}

/* Fisher-Yates over idx[0, n) (and their cut lengths with them) */
static void shuffle(size_t *idx, uint32_t *len, size_t n, uint64_t *rng)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rand_below(rng, i), t = idx[i - 1];
		uint32_t l = len[i - 1];

		idx[i - 1] = idx[j];
		idx[j] = t;
		len[i - 1] = len[j];
		len[j] = l;
	}
}

size_t avfs_crash_image(const uint8_t *base, uint64_t size, const struct avfs_rec_entry *log,
			size_t nlog, const struct avfs_crash_point *pt, uint8_t *out)
{
	struct avfs_crash_stats st;

	return avfs_crash_image_stats(base, size, log, nlog, pt, out, &st);
}

size_t avfs_crash_image_stats(const uint8_t *base, uint64_t size,
			      const struct avfs_rec_entry *log, size_t nlog,
			      const struct avfs_crash_point *pt, uint8_t *out,
			      struct avfs_crash_stats *st)
{
	size_t upto = pt->upto < nlog ? pt->upto : nlog;
	size_t durable = 0, nseg = 0;
	uint64_t coin = pt->seed, order = pt->seed ^ 0x6a09e667f3bcc909ull;
	uint64_t tear = pt->seed ^ 0xbb67ae8584caa73bull;	/* its own stream: the drops
								 * for a seed stay as without */
	uint32_t sector = pt->torn_sector, *segl = NULL;
	const struct avfs_rec_entry *cut = upto < nlog && log[upto].kind == AVFS_REC_WRITE &&
					   sector && !pt->all_inflight_applied ? &log[upto] : NULL;
	size_t *seg = NULL;

	memset(st, 0, sizeof(*st));
	memcpy(out, base, (size_t)size);
	/* everything up to the last FLUSH before the cut is on the medium, in order */
	for (size_t i = upto; i > 0; i--) {
		if (log[i - 1].kind == AVFS_REC_FLUSH) {
			durable = i;
			break;
		}
	}
	for (size_t i = 0; i < durable; i++)
		apply(&log[i], size, out);
	/* all_inflight_applied: the image as if the power had stayed on, i.e. the whole prefix */
	if (pt->all_inflight_applied) {
		for (size_t i = durable; i < upto; i++)
			apply(&log[i], size, out);
		return 0;
	}
	/* The in-flight tail, one segment between FUA writes at a time. Why segments: a FUA
	 * write was on the medium when it completed, so an earlier write landing after it would
	 * undo a durable write, which no coherent drive cache does. The coins come from
	 * their own stream, tossed in log order, so that which writes are dropped for a seed
	 * does not depend on how many shuffles happen before them. A shuffle buffer that cannot
	 * be had degrades to log order: still a legal crash image, a less adversarial one. */
	if (upto > durable) {
		seg = malloc((upto - durable) * sizeof(*seg));
		segl = malloc((upto - durable) * sizeof(*segl));
		if (!seg || !segl) {
			free(seg);
			free(segl);
			seg = NULL;
			segl = NULL;
		}
	}
	for (size_t i = durable; i < upto || (i == upto && upto > durable); i++) {
		const struct avfs_rec_entry *e = i < upto ? &log[i] : NULL;

		if (e && e->kind != AVFS_REC_WRITE)
			continue;
		if (e && !e->fua) {
			uint32_t n;

			if (!(next_rand(&coin) & 1) && !pt->torn_always) {
				st->dropped++;
				continue;
			}
			n = cut_len(e, sector, pt->torn_always ? 1 : 4, &tear);
			st->torn += n < e->len;
			if (seg) {
				seg[nseg] = i;
				segl[nseg++] = n;
			} else {
				apply_n(e, n, size, out);
			}
			continue;
		}
		/* a FUA write or the end: land the segment before it, then the FUA write */
		if (seg) {
			shuffle(seg, segl, nseg, &order);
			for (size_t k = 0; k < nseg; k++)
				apply_n(&log[seg[k]], segl[k], size, out);
			nseg = 0;
		}
		if (e)
			apply(e, size, out);
	}
	free(seg);
	free(segl);
	/* the write under way when the power went: its first sectors, or nothing */
	if (cut && cut->data && cut->off <= size && cut->len <= size - cut->off) {
		uint32_t n = cut_len(cut, sector, pt->torn_always ? 1 : 2, &tear);

		if (n < cut->len) {
			apply_n(cut, n, size, out);
			st->torn++;
		}
		st->cut_whole = !memcmp(out + cut->off, cut->data, cut->len);
	}
	return st->dropped;
}

static int cmp_point(const void *a, const void *b)
{
	const struct avfs_crash_point *x = a, *y = b;

	return (x->upto > y->upto) - (x->upto < y->upto);
}

struct avfs_crash_point *avfs_crash_points(const struct avfs_rec_entry *log, size_t nlog,
					   unsigned random_per_gap, uint64_t seed, size_t *n)
{
	struct avfs_crash_point *pts;
	size_t nflush = 0, cap, np = 0, prev = 0;
	uint64_t rng = seed;

	*n = 0;
	for (size_t i = 0; i < nlog; i++)
		nflush += log[i].kind == AVFS_REC_FLUSH;
	/* at most nflush + 2 boundaries and nflush + 1 gaps */
	cap = nflush + 2 + (nflush + 1) * (size_t)random_per_gap;
	pts = malloc(cap * sizeof(*pts));
	if (!pts)
		return NULL;
	pts[np++] = (struct avfs_crash_point){ .upto = 0 };
	for (size_t i = 0; i <= nlog; i++) {
		size_t inner, first;

		/* i is a boundary if it is just after a flush, or the end */
		if (i < nlog && !(i > 0 && log[i - 1].kind == AVFS_REC_FLUSH))
			continue;
		if (i == prev)
			continue;	/* 0, counted above */
		inner = i - prev - 1;
		first = np;
		if (inner <= random_per_gap) {
			for (size_t k = prev + 1; k < i; k++)
				pts[np++] = (struct avfs_crash_point){ .upto = k };
		} else {
			/* Floyd's sampling: k distinct values of [0, inner) in k draws */
			for (size_t j = inner - random_per_gap; j < inner; j++) {
				size_t t = (size_t)rand_below(&rng, j + 1), v = t;

				for (size_t q = first; q < np; q++)
					if (pts[q].upto == prev + 1 + t)
						v = j;
				pts[np++] = (struct avfs_crash_point){ .upto = prev + 1 + v };
			}
		}
		pts[np++] = (struct avfs_crash_point){ .upto = i };
		prev = i;
	}
	qsort(pts, np, sizeof(*pts), cmp_point);
	for (size_t k = 0; k < np; k++)
		pts[k].seed = next_rand(&rng);	/* after sorting: a point's seed follows its rank */
	*n = np;
	return pts;
}
