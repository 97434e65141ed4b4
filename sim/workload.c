/*
 * workload.c — the seeded plan of the simulator's workloads (workload.h): stream set-up (the
 * same draws in the same order as ever, so a seed keeps its file set), request offsets and
 * deadlines, the pictures generator's names and sizes. No I/O and no clock.
 */
#include "workload.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000.0

uint64_t avfs_wl_rnd(struct avfs_wl *w, uint64_t n)
{
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return n ? z % n : z;
}

/* A heterogeneous stream (o->streams): a rate + buffer service (ABISS, SPEC §7) that keeps its
 * buffer full: a request each time a request's worth of buffer frees (every io / rate, or at
 * once on each completion when greedy), due when the rest of the buffer drains; or a round
 * stream (papers/004 §3.3.1) that asks for a round's requests at once each round. */
static void spec_stream(struct avfs_wl *w, struct avfs_wl_stream *s,
			const struct avfs_simrun_stream *sp, int64_t start)
{
	double reserve = sp->reserve > 0 ? sp->reserve : sp->rate;

	s->spec = sp;
	s->write = sp->write;
	s->greedy = sp->greedy;
	s->reserved = sp->reserved;
	s->io = sp->io;
	s->depth = (unsigned)(sp->buffer / sp->io);
	s->svc = (struct avfs_service_req){
		.rate = (uint64_t)llround(sp->reserved ? reserve : sp->rate),
		.buffer = sp->buffer, .io = sp->io, .write = sp->write,
	};
	if (!s->svc.rate)
		s->svc.rate = 1;	/* a greedy best-effort stream: no deadlines anyway */
	s->period = sp->greedy ? 0 : (double)sp->io / sp->rate * NS;
	s->round = sp->round_ns;
	s->per_round = sp->per_round;
	/* reserved: the reservation's deadline unless rounds say theirs; else its own or none */
	s->own_deadlines = sp->reserved ? sp->round_ns > 0 : sp->rt;
	s->t0 = start + (int64_t)avfs_wl_rnd(w, sp->greedy ? 1000000 : s->round ?
					     (uint64_t)s->round : (uint64_t)s->period);
}

int avfs_wl_init(struct avfs_wl *w, const struct avfs_simrun_opts *o,
		 const struct avfs_wl_rec *recs, size_t nrecs, uint64_t data_off,
		 uint64_t data_blocks, uint64_t block_size, int64_t start, char *why, size_t whylen)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->rng = o->seed * 7919 + 1;
	w->data_off = data_off;
	w->data_blocks = data_blocks;
	w->block_size = block_size;
	w->nstreams = o->streams ? o->nstreams : o->nread + o->nwrite;
	w->streams = calloc(w->nstreams ? w->nstreams : 1, sizeof(*w->streams));
	if (!w->streams)
		return -ENOMEM;
	/* read streams play random recordings from random positions; write streams record new
	 * files; phases staggered over one request period */
	for (unsigned i = 0; i < w->nstreams; i++) {
		struct avfs_wl_stream *s = &w->streams[i];

		s->index = i;
		if (o->streams) {
			spec_stream(w, s, &o->streams[i], start);
		} else {
			s->write = i >= o->nread;
			s->own_deadlines = true;
			s->io = o->io;
			s->depth = o->depth;
			s->period = (double)o->io / o->rate * NS;
			s->t0 = start + (int64_t)avfs_wl_rnd(w, (uint64_t)s->period);
			s->svc = (struct avfs_service_req){ .rate = (uint64_t)llround(o->rate),
							    .buffer = (uint64_t)o->io * o->depth,
							    .io = o->io, .write = s->write };
		}
		if (s->spec && s->spec->place >= 0) {
			/* raw: a contiguous run of the data region from the place on */
			uint64_t b = (uint64_t)(s->spec->place * (double)data_blocks);

			s->raw = true;
			s->raw_lo = data_off + (b < data_blocks ? b : data_blocks - 1) * block_size;
			s->raw_hi = data_off + data_blocks * block_size;
			s->pos = s->raw_lo;
		} else if (!s->write) {
			size_t k = avfs_wl_rnd(w, nrecs ? nrecs : 1);

			if (!nrecs) {
				snprintf(why, whylen, "read streams need recordings: --fill must be > 0");
				return -EINVAL;
			}
			s->rec = k;
			s->fsize = recs[k].size;
			snprintf(s->name, sizeof(s->name), "rec-%05zu.ts", k);
			s->pos = avfs_wl_rnd(w, s->fsize / s->io) * s->io;
		} else {
			snprintf(s->name, sizeof(s->name), "live-%03u.ts", i);
		}
	}
	return 0;
}

void avfs_wl_free(struct avfs_wl *w)
{
	free(w->streams);
	w->streams = NULL;
}

int64_t avfs_wl_when(const struct avfs_wl_stream *s, uint64_t k)
{
	if (s->round)
		return s->t0 + (int64_t)(k / s->per_round) * s->round;
	return s->t0 + (int64_t)((double)k * s->period);
}

void avfs_wl_next(struct avfs_wl *w, struct avfs_wl_stream *s, struct avfs_wl_req *r)
{
	(void)w;
	if (s->raw && s->pos + s->io > s->raw_hi)
		s->pos = s->raw_lo;
	if (!s->raw && !s->write && s->pos + s->io > s->fsize)
		s->pos = 0;	/* playback loops over its recording */
	r->off = s->pos;
	r->len = s->io;
	/* SPEC §12: an NrMw request is due when the stream's buffer would under-run (playback) or
	 * overflow (recording): a buffer of `depth` requests (4 MiB, 1.73 s), the k-th request
	 * issued when its slot starts draining (filling), due `depth` periods later. A round
	 * stream's requests are due at their round's end (papers/004 §3.3.1: each stream served
	 * once a round). Best effort and reserved streams carry none (a reservation's deadline
	 * is the engine's). */
	if (!s->own_deadlines)
		r->deadline = 0;
	else if (s->round)
		r->deadline = s->t0 + (int64_t)(s->k / s->per_round + 1) * s->round;
	else
		r->deadline = s->t0 + (int64_t)((double)(s->depth + s->k) * s->period);
	s->pos += s->io;
	s->k++;
}

void avfs_wl_picture_name(const struct avfs_wl_pics *p, int k, char *name, size_t len)
{
	if (p->id)
		snprintf(name, len, "pic%u-%06d.jpg", p->id, k);
	else
		snprintf(name, len, "pic-%06d.jpg", k);
}

void avfs_wl_picture(struct avfs_wl *w, struct avfs_wl_pics *p, char *name, size_t len,
		     uint64_t *size, int *first_drop, int *drop)
{
	/* papers/001 §4.3.2: a set of 100 pictures; the set is then deleted and written again, so
	 * the load goes on without filling the disk */
	*drop = 0;
	if (p->files && p->files % 100 == 0) {
		*first_drop = p->files - 100;
		*drop = 100;
	}
	avfs_wl_picture_name(p, p->files++, name, len);
	*size = 600000 + avfs_wl_rnd(w, 1400000);	/* 0.6 .. 2.0 MB, mean 1.3 MB */
}

uint64_t avfs_wl_random_off(struct avfs_wl *w, uint32_t len)
{
	uint64_t bs = w->block_size;

	if (len > bs)
		len = (uint32_t)bs;
	return w->data_off + avfs_wl_rnd(w, w->data_blocks) * bs +
	       avfs_wl_rnd(w, (bs - len) / 4096 + 1) * 4096;
}

static enum avfs_be_load load_of(enum avfs_scn_be_kind k)
{
	switch (k) {
	case AVFS_SCN_BE_RANDOM: return AVFS_BE_RANDOM;
	case AVFS_SCN_BE_SEQUENTIAL: return AVFS_BE_GREEDY;
	case AVFS_SCN_BE_PICTURES: return AVFS_BE_PICTURES;
	case AVFS_SCN_BE_COPY: return AVFS_BE_COPY;
	case AVFS_SCN_BE_DELETE: return AVFS_BE_DELETE;
	}
	return AVFS_BE_NONE;
}

int avfs_wl_scenario(struct avfs_simrun_opts *o, const struct avfs_scenario *s)
{
	struct avfs_simrun_stream *st;
	struct avfs_simrun_be *be;
	unsigned n = 0;

	for (unsigned i = 0; i < s->nstreams; i++)
		n += s->streams[i].count;
	st = calloc(n ? n : 1, sizeof(*st));
	be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	if (!st || !be) {
		free(st);
		free(be);
		return -ENOMEM;
	}
	n = 0;
	for (unsigned i = 0; i < s->nstreams; i++) {
		const struct avfs_scn_stream *c = &s->streams[i];

		for (unsigned k = 0; k < c->count; k++)
			st[n++] = (struct avfs_simrun_stream){
				.rate = c->rate, .reserve = c->reserve, .io = c->io,
				.buffer = avfs_scn_buffer(c), .write = c->write,
				.reserved = c->reserved, .greedy = c->greedy, .place = c->place,
				.round_ns = c->round_ns, .per_round = avfs_scn_per_round(c),
				.rt = !c->best_effort, .cls = i };
	}
	for (unsigned i = 0; i < s->nbe; i++)
		be[i] = (struct avfs_simrun_be){ .kind = load_of(s->be[i].kind),
						 .count = s->be[i].count, .io = avfs_scn_be_io(&s->be[i]),
						 .rate = s->be[i].rate, .iops = s->be[i].iops };
	o->disk = s->disk;
	o->size = s->size;
	o->seed = s->seed;
	o->duration_s = s->duration_s;
	o->fill = s->fill;
	o->rate = s->fill_rate;	/* the fill's recordings */
	o->alloc = s->alloc;
	o->block_shift = s->block_shift;
	o->policy = s->policy;
	o->conf = s->sched;
	o->bw_policy = s->bw == AVFS_SCN_BW_AT_ONCE ? AVFS_BW_AT_ONCE :
		       s->bw == AVFS_SCN_BW_UNCHARGED ? AVFS_BW_UNCHARGED : AVFS_BW_PARK;
	o->predictor = s->predictor;
	o->hp_rate = s->hp_rate;
	if (s->read_ahead != AVFS_SCN_UNSET)
		o->read_ahead = s->read_ahead;
	if (s->read_ahead_start != AVFS_SCN_UNSET)
		o->read_ahead_start = s->read_ahead_start;
	if (s->read_ahead_ramp_s >= 0)
		o->read_ahead_ramp_ns = (int64_t)llround(s->read_ahead_ramp_s * 1e9);
	o->nread = o->nwrite = 0;
	o->be = AVFS_BE_NONE;
	o->streams = st;
	o->nstreams = n;
	o->nclasses = s->nstreams;
	o->bes = be;
	o->nbes = s->nbe;
	return 0;
}

void avfs_wl_scenario_free(struct avfs_simrun_opts *o)
{
	free((void *)o->streams);
	free((void *)o->bes);
	o->streams = NULL;
	o->bes = NULL;
	o->nstreams = o->nbes = o->nclasses = 0;
}
