/*
 * bwclass.c — reservations and the bandwidth class (SPEC §7, papers/004 §3.1-3.2). A
 * reservation is admitted by sched/admit.c; its requests are then charged to a token bucket
 * (rate: the reservation, size: its buffer). Within the bucket a request is real time, due
 * when the rest of the buffer drains at the reserved rate (or at the client's own deadline).
 * Above it, the policy says (struct avfs_engine_conf.bw):
 *
 * AVFS_BW_PARK (default): it waits in the stream's queue ("parked", not yet planned) until
 *   either its tokens are due — then it goes real time — or no other best-effort request is in
 *   the scheduler — then it goes as best effort (work conservation, papers/004 §3.1.4: "we only
 *   enter work-conservation in the BW class when there are no BE class readers with requests
 *   pending"), oldest first over every stream. What it gets so is time nobody else asked for,
 *   so it is not charged: the bucket keeps paying the reservation in real time. A request
 *   sent so stays best effort (it is not promoted when tokens come later). A request larger
 *   than the whole bucket can never be covered: it goes as best effort at once, uncharged.
 * AVFS_BW_AT_ONCE: charged (the bucket's debt, down to half a bucket) and sent as best effort
 *   at once. A greedy stream then always has a request to charge and loses its real-time
 *   service (kept for comparison: avfs-sim isolation --bw at-once).
 * AVFS_BW_UNCHARGED: best effort at once, uncharged (avfs-sim isolation --bw uncharged).
 *
 * Until this engine, avfsd and avfs-sim each had a version. avfsd released a stream's parked
 * reads stream by stream, never parked writes (a write's blocks were mapped before it was
 * parked, so a commit could not wait for it) and never promoted a spare request; avfs-sim
 * released parked requests oldest first and promoted a spare request when tokens came. Here
 * requests are parked before they are planned (a parked write has no blocks yet: no commit
 * waits for it), so writes park too. The rest was measured with both variants over this
 * engine (avfs-sim isolation --scenario all, avfs-250g, 600 s each): the release order makes
 * no difference (every figure equal); promotion costs misses — Fahrrad's four streams at
 * m = 500 ms missed 3 + 3 deadlines with it and none without, and got 36.6 and 38.8 MiB/s in
 * all against 45.7 and 44.7 — while it won at most 0.8 % of throughput elsewhere. So spare
 * requests are not promoted (avfsd's way) and parked ones go oldest first (avfs-sim's).
 */
#include "engine_i.h"
#include "zrr.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1e9

int bw_init(struct avfs_engine *e, char *why, size_t whylen)
{
	struct avfs_admit_conf ac = e->c.admit;
	int err;

	ac.model = e->c.sched.model;
	ac.block_size = e->block_size;
	if (!ac.chunk)
		ac.chunk = e->c.sched.chunk;
	/* the round model assumes the mixer's service pattern: its margin, best-effort age and
	 * coalescing (on a rotating disk), and the allocator's spread of a file over the zones */
	ac.margin_ns = e->c.sched.margin_ns;
	ac.be_age_ns = e->c.sched.be_age_ns;
	ac.coalesce = e->c.sched.rotational ? e->c.sched.coalesce : 0;
	if (e->fs) {
		const struct avfs_super *sb = avfs_fs_super(e->fs);

		ac.zrr = sb->alloc_policy == AVFS_ALLOC_ZRR || sb->alloc_policy == AVFS_ALLOC_ZRR_RUN;
		ac.run = sb->alloc_policy == AVFS_ALLOC_ZRR_RUN ? sb->alloc_run : 1;
		ac.zones = sb->nzones;
	}
	err = avfs_admit_create(&e->bw.admit, &ac);
	if (err && why)
		snprintf(why, whylen, "admission settings refused: %s", strerror(-err));
	return err;
}

void bw_fini(struct avfs_engine *e)
{
	for (size_t i = 0; i < e->bw.n; i++)
		free(e->bw.v[i]);
	free(e->bw.v);
	e->bw.v = NULL;
	e->bw.n = 0;
	avfs_admit_destroy(e->bw.admit);
	e->bw.admit = NULL;
}

struct avfs_estream *bw_stream(const struct avfs_engine *e, uint64_t id)
{
	for (size_t i = 0; id && i < e->bw.n; i++)
		if (e->bw.v[i]->id == id)
			return e->bw.v[i];
	return NULL;
}

/* ns until the bucket holds len bytes (0: it does now), without charging it */
static int64_t bucket_wait(const struct avfs_bucket *b, uint64_t len, int64_t t)
{
	double tokens = b->tokens;

	if (t > b->last)
		tokens = fmin(b->size, tokens + b->rate * (double)(t - b->last) / NS);
	if (tokens >= (double)len)
		return 0;
	return (int64_t)ceil(((double)len - tokens) / b->rate * NS) + 1;
}

static int64_t deadline_of(const struct avfs_estream *s, const struct avfs_fio *f, int64_t now)
{
	return f->deadline ? f->deadline : avfs_service_deadline(&s->req, f->len, now);
}

static void park(struct avfs_engine *e, struct avfs_estream *s, struct avfs_fio *f)
{
	f->priv.parked = true;
	f->priv.park_next = NULL;
	*(s->park_tail ? &s->park_tail->priv.park_next : &s->park_head) = f;
	s->park_tail = f;
	e->bw.nparked++;
}

static struct avfs_fio *unpark_head(struct avfs_engine *e, struct avfs_estream *s)
{
	struct avfs_fio *f = s->park_head;

	s->park_head = f->priv.park_next;
	if (!s->park_head)
		s->park_tail = NULL;
	f->priv.park_next = NULL;
	f->priv.parked = false;
	e->bw.nparked--;
	return f;
}

/* Send what the stream's tokens cover as real time: its parked requests in order. Arms the
 * tick for the next tokens. */
static void promote(struct avfs_engine *e, struct avfs_estream *s, int64_t now)
{
	s->park_timer = false;
	while (s->park_head) {
		struct avfs_fio *f = s->park_head;
		int64_t wait = bucket_wait(&s->bucket, f->len, now);

		if (wait) {
			s->park_timer = true;
			s->park_due = now + wait;
			return;
		}
		f = unpark_head(e, s);
		avfs_bucket_take(&s->bucket, f->len, now);
		fio_start(e, f, deadline_of(s, f, now), false, now);
	}
}

/* Work conservation: with no other best-effort request in the scheduler, every parked request
 * goes as spare best effort, oldest first (all of them, so that the scheduler can order them; a
 * best-effort request arriving later waits for them in C-SCAN order, no more). */
void bw_be_idle(struct avfs_engine *e, int64_t now)
{
	while (e->bw.nparked && !e->d.be_pending) {
		struct avfs_estream *s = NULL;
		struct avfs_fio *f;

		for (size_t i = 0; i < e->bw.n; i++)
			if (e->bw.v[i]->park_head &&
			    (!s || e->bw.v[i]->park_head->arrival < s->park_head->arrival))
				s = e->bw.v[i];
		if (!s)
			break;
		f = unpark_head(e, s);
		fio_start(e, f, 0, true, now);
		if (!s->park_timer)
			promote(e, s, now);	/* (arms the tick for its next tokens) */
	}
}

void bw_io(struct avfs_engine *e, struct avfs_estream *s, struct avfs_fio *f, int64_t now)
{
	switch (e->c.bw) {
	case AVFS_BW_UNCHARGED:
		fio_start(e, f, avfs_bucket_take(&s->bucket, f->len, now) ? deadline_of(s, f, now) : 0,
			  false, now);
		return;
	case AVFS_BW_AT_ONCE:
		fio_start(e, f, avfs_bucket_charge(&s->bucket, f->len, now) ?
			  deadline_of(s, f, now) : 0, false, now);
		return;
	case AVFS_BW_PARK:
		break;
	}
	if ((double)f->len > s->bucket.size) {	/* no bucket ever covers it */
		fio_start(e, f, 0, false, now);
		return;
	}
	if (!s->park_head && avfs_bucket_take(&s->bucket, f->len, now)) {
		fio_start(e, f, deadline_of(s, f, now), false, now);
		return;
	}
	park(e, s, f);
	promote(e, s, now);
	bw_be_idle(e, now);
}

bool bw_unpark(struct avfs_engine *e, struct avfs_fio *f)
{
	struct avfs_estream *s = f->priv.parked ? bw_stream(e, f->stream) : NULL;

	if (!s)
		return false;
	for (struct avfs_fio **pp = &s->park_head, *prev = NULL; *pp;
	     prev = *pp, pp = &(*pp)->priv.park_next) {
		if (*pp != f)
			continue;
		*pp = f->priv.park_next;
		if (s->park_tail == f)
			s->park_tail = prev;
		f->priv.park_next = NULL;
		f->priv.parked = false;
		e->bw.nparked--;
		return true;
	}
	return false;
}

void bw_fio_done(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	struct avfs_estream *s = bw_stream(e, f->stream);
	int64_t res = f->priv.res;

	if (!s)
		return;
	if (!f->priv.canceled)	/* a withdrawn request says nothing of the disk */
		avfs_qos_add(&s->qos, f->sched_deadline, now, res > 0 ? (uint64_t)res : 0,
			     res < 0 ? (int)res : 0);
}

void bw_tick(struct avfs_engine *e, int64_t now)
{
	e->bw.idle_at = 0;
	for (size_t i = 0; i < e->bw.n; i++) {
		struct avfs_estream *s = e->bw.v[i];

		if (s->park_timer && s->park_due <= now)
			promote(e, s, now);
	}
	bw_be_idle(e, now);
}

int64_t bw_wake(const struct avfs_engine *e)
{
	int64_t at = e->bw.idle_at;

	for (size_t i = 0; i < e->bw.n; i++) {
		const struct avfs_estream *s = e->bw.v[i];

		if (s->park_timer && (!at || s->park_due < at))
			at = s->park_due;
	}
	return at;
}

int64_t bw_reserve(struct avfs_engine *e, const struct avfs_service_req *r, uint64_t ino,
		   void *owner, unsigned flags, int64_t now, struct avfs_admit_left *left,
		   char *why, size_t whylen)
{
	struct avfs_bw *b = &e->bw;
	struct avfs_estream *s;
	int64_t id;

	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		struct avfs_estream **v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	if (flags & AVFS_RESERVE_BUFFERED) {
		/* papers/000: the daemon's buffers are memory it must have: admission counts them */
		uint64_t held = 0;

		for (size_t i = 0; i < b->n; i++)
			held += b->v[i]->buffered ? b->v[i]->req.buffer : 0;
		if (held + r->buffer > e->c.wb_max || r->buffer > e->c.wb_max) {
			if (why)
				snprintf(why, whylen, "buffer memory: %.1f MiB asked, %.1f MiB of %.1f "
					 "left (setting write-behind)", (double)r->buffer / (1 << 20),
					 (double)(e->c.wb_max - (held < e->c.wb_max ? held :
								 e->c.wb_max)) / (1 << 20),
					 (double)e->c.wb_max / (1 << 20));
			return -ENOBUFS;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (flags & AVFS_RESERVE_UNCHECKED)
		id = avfs_admit_force(b->admit, r, why, whylen);
	else
		id = avfs_admit_add(b->admit, r, left, why, whylen);
	if (id < 0) {
		free(s);
		return id;
	}
	s->id = (uint64_t)id;
	s->ino = ino;
	s->dir = flags & AVFS_RESERVE_DIR;
	s->buffered = flags & AVFS_RESERVE_BUFFERED;
	s->owner = owner;
	s->req = avfs_admit_find(b->admit, s->id)->req;
	s->since = now;
	avfs_bucket_init(&s->bucket, (double)s->req.rate, (double)s->req.buffer, now);
	b->v[b->n++] = s;
	return id;
}

int bw_release(struct avfs_engine *e, uint64_t id, int64_t now)
{
	struct avfs_bw *b = &e->bw;
	struct avfs_estream *s = bw_stream(e, id);

	if (!s)
		return -ENOENT;
	avfs_admit_remove(b->admit, id);
	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i] == s) {
			memmove(&b->v[i], &b->v[i + 1], (b->n - i - 1) * sizeof(b->v[0]));
			b->n--;
			break;
		}
	}
	/* no reservation any more: plain best effort */
	while (s->park_head) {
		struct avfs_fio *f = unpark_head(e, s);

		f->stream = 0;
		fio_start(e, f, f->deadline, false, now);
	}
	free(s);
	return 0;
}
