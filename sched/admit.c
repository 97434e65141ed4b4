/*
 * admit.c — services, admission control (the sweep test over sweep.c's round model, or
 * Fahrrad's), the bandwidth class's token bucket (SPEC §7; the formulas are in admit.h and
 * sweep.h). Sans-I/O.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "grow.h"

#include "why.h"

#define NS 1e9
#define MAX_PERIOD_NS (86400.0 * NS)

struct quota {
	uint32_t uid;
	uint64_t max_rate;
	uint32_t max_streams;
};

struct avfs_admit {
	struct avfs_admit_conf conf;
	struct avfs_sweep_conf sc;	/* the round model's view of conf */
	bool sc_ok;			/* conf gave it a model to work with */
	struct avfs_stream_info *s;
	size_t n, cap;
	struct avfs_sweep_stream *sw;	/* the set as the round model sees it, one slot spare */
	size_t swcap;
	struct quota *q;
	size_t nq;
	uint64_t next_id;
};

void avfs_admit_conf_default(struct avfs_admit_conf *c, const struct avfs_svc_model *m,
			     uint64_t block)
{
	struct avfs_sched_conf sc;

	avfs_sched_conf_default(&sc);
	*c = (struct avfs_admit_conf){
		.model = *m,
		.block_size = block,
		.chunk = 0,
		.be_io = 1u << 20,
		.be_floor = 0.02,
		.isolation = true,
		.default_io = 512u << 10,
		.test = AVFS_ADMIT_SWEEP,
		.zrr = true,
		.margin_ns = sc.margin_ns,
		.be_age_ns = sc.be_age_ns,
		.coalesce = sc.coalesce,
		.k = 10,
	};
}

/* the longest command anyone may have on the disk: a full-stroke seek, a whole rotation and
 * the transfer of the largest non-preemptible unit at the inner rate */
static double wcrt_ns(const struct avfs_admit_conf *c, uint64_t io)
{
	const struct avfs_svc_model *m = &c->model;
	uint64_t unit = c->chunk && c->chunk < io ? c->chunk : io;

	return 2 * m->tk_ns + m->tr_ns + (double)unit / m->dmin * NS;
}

/* the blocking a stream sees: the longest command of any class */
static double blocking_ns(const struct avfs_admit_conf *c, uint64_t io)
{
	uint64_t be = c->chunk && c->chunk < c->be_io ? c->chunk : c->be_io;

	return wcrt_ns(c, io > be ? io : be);
}

int avfs_service_cost(const struct avfs_admit_conf *c, const struct avfs_service_req *r,
		      struct avfs_service_cost *out, char *why, size_t whylen)
{
	const struct avfs_svc_model *m = &c->model;
	uint64_t io = r->io ? r->io : c->default_io, per;
	double d_slow, nseek, p;

	if (!r->rate) {
		avfs_why(why, whylen, "the rate must be positive");
		return -EINVAL;
	}
	if (!io || io % 4096 || io > (64u << 20)) {
		avfs_why(why, whylen, "the request size must be a multiple of 4 KiB up to 64 MiB");
		return -EINVAL;
	}
	if (r->buffer <= io || r->buffer > (1ull << 40)) {
		avfs_why(why, whylen, "the buffer (%llu bytes) must be larger than one request "
			 "(%llu bytes) and at most 1 TiB", (unsigned long long)r->buffer,
			 (unsigned long long)io);
		return -EINVAL;
	}
	if (m->dmin <= 0 || m->dmax < m->dmin || !c->block_size) {
		avfs_why(why, whylen, "no disk model to translate the service with");
		return -EINVAL;
	}
	per = r->buffer - io;	/* bytes a period moves */
	p = (double)per / (double)r->rate * NS;
	if (p > MAX_PERIOD_NS) {
		avfs_why(why, whylen, "a buffer of %.0f s at this rate is beyond one day",
			 p / NS);
		return -EINVAL;
	}
	if (p < 1e6) {
		avfs_why(why, whylen, "the buffer holds less than 1 ms beyond one request");
		return -EINVAL;
	}
	d_slow = r->d_slow > 0 && r->d_slow < m->dmax ? r->d_slow : m->dmin;
	nseek = ceil((double)per / (double)c->block_size) + 1;
	out->period_ns = p;
	out->budget_ns = nseek * (m->tk_ns + m->tr_ns / 2) + (double)per / d_slow * NS;
	out->u = out->budget_ns / p;
	out->wcrt_ns = wcrt_ns(c, io);
	/* Theorem 2: one worst-case request more per period. Theorem 3 adds the two seeks a
	 * period's interleaving imposes (to the stream and away from it): its proof counts
	 * seeks, so they are padded with a worst seek and rotation, not with a transfer */
	out->u_padded = out->u + out->wcrt_ns / p +
			(c->isolation ? 2 * (2 * m->tk_ns + m->tr_ns) / p : 0);
	return 0;
}

/* Room for element n of the round model's array: the set keeps one slot spare beyond its
 * streams, for the candidate sweep_with() evaluates. */
static int sweep_room(struct avfs_admit *a, size_t n)
{
	struct avfs_sweep_stream *sw = avfs_grow(a->sw, &a->swcap, n, sizeof(*sw), 16);

	if (!sw)
		return -ENOMEM;
	a->sw = sw;
	return 0;
}

int avfs_admit_create(struct avfs_admit **a, const struct avfs_admit_conf *c)
{
	struct avfs_sweep_conf *sc;

	*a = calloc(1, sizeof(**a));
	if (!*a)
		return -ENOMEM;
	(*a)->conf = *c;
	(*a)->next_id = 1;
	sc = &(*a)->sc;
	*sc = (struct avfs_sweep_conf){
		.model = c->model,
		.disk = c->disk,
		.block_size = c->block_size,
		.zrr = c->zrr,
		.zones = c->zones,
		.run = c->run,
		.coalesce = c->coalesce,
		.margin_ns = (double)c->margin_ns,
		.be_age_ns = (double)c->be_age_ns,
		.cmd_max = c->chunk && c->chunk < c->be_io ? c->chunk : c->be_io,
		.chunk = c->chunk,
		.be_floor = c->be_floor,
		.be_isolation = c->isolation,
		.k = c->k,
	};
	/* (a configuration without a model refuses every request, saying so) */
	(*a)->sc_ok = !avfs_sweep_conf_check(sc);
	if (sweep_room(*a, 0)) {
		free(*a);
		*a = NULL;
		return -ENOMEM;
	}
	return 0;
}

void avfs_admit_destroy(struct avfs_admit *a)
{
	if (!a)
		return;
	free(a->s);
	free(a->sw);
	free(a->q);
	free(a);
}

const struct avfs_admit_conf *avfs_admit_conf(const struct avfs_admit *a)
{
	return &a->conf;
}

int avfs_admit_set_quota(struct avfs_admit *a, uint32_t uid, uint64_t max_rate,
			 uint32_t max_streams)
{
	struct quota *q;

	for (size_t i = 0; i < a->nq; i++) {
		if (a->q[i].uid == uid) {
			a->q[i].max_rate = max_rate;
			a->q[i].max_streams = max_streams;
			return 0;
		}
	}
	q = realloc(a->q, (a->nq + 1) * sizeof(*q));
	if (!q)
		return -ENOMEM;
	a->q = q;
	a->q[a->nq++] = (struct quota){ uid, max_rate, max_streams };
	return 0;
}

static const struct quota *quota_of(const struct avfs_admit *a, uint32_t uid)
{
	const struct quota *any = NULL;

	for (size_t i = 0; i < a->nq; i++) {
		if (a->q[i].uid == uid)
			return &a->q[i];
		if (a->q[i].uid == AVFS_ADMIT_ANY_UID)
			any = &a->q[i];
	}
	return any;
}

/* Fahrrad's load of the admitted set with one more stream of cost *extra (NULL: none) */
static double fahrrad_load(const struct avfs_admit *a, const struct avfs_service_req *xr,
			   const struct avfs_service_cost *extra)
{
	double sum = 0, pmin = INFINITY;
	uint64_t io_max = 0;

	for (size_t i = 0; i < a->n; i++) {
		uint64_t io = a->s[i].req.io;

		sum += a->s[i].cost.u_padded;
		if (a->s[i].cost.period_ns < pmin)
			pmin = a->s[i].cost.period_ns;
		if (io > io_max)
			io_max = io;
	}
	if (extra) {
		uint64_t io = xr->io ? xr->io : a->conf.default_io;

		sum += extra->u_padded;
		if (extra->period_ns < pmin)
			pmin = extra->period_ns;
		if (io > io_max)
			io_max = io;
	}
	if (isinf(pmin))
		return 0;
	return sum + blocking_ns(&a->conf, io_max) / pmin;
}

static struct avfs_sweep_stream sweep_of(const struct avfs_admit_conf *c,
					 const struct avfs_service_req *r)
{
	return (struct avfs_sweep_stream){
		.rate = (double)r->rate, .buffer = (double)r->buffer,
		.io = (double)(r->io ? r->io : c->default_io), .write = r->write,
		.d_mean = r->d_mean > 0 ? r->d_mean : r->d_slow,
		.d_slow = r->d_slow, .d_fast = r->d_fast,
	};
}

/* The round model over the admitted set and r (NULL: none). The set's array keeps one slot
 * spare for r, grown by add() before a stream is kept; evaluating never allocates. */
static void sweep_with(const struct avfs_admit *a, const struct avfs_service_req *r,
		       struct avfs_sweep_result *out)
{
	size_t n = a->n;

	if (!a->sc_ok) {
		memset(out, 0, sizeof(*out));
		out->verdict = AVFS_SWEEP_SHORT;
		return;
	}
	if (r)
		a->sw[n++] = sweep_of(&a->conf, r);
	avfs_sweep_eval(&a->sc, a->sw, n, out);
}

int avfs_admit_sweep(const struct avfs_admit *a, const struct avfs_service_req *r,
		     struct avfs_sweep_result *out)
{
	struct avfs_service_cost c;

	if (r && avfs_service_cost(&a->conf, r, &c, NULL, 0))
		return -EINVAL;
	sweep_with(a, r, out);
	return 0;
}

double avfs_admit_limit(const struct avfs_admit *a)
{
	struct avfs_sweep_result res;

	if (a->conf.test == AVFS_ADMIT_FAHRRAD)
		return 1 - a->conf.be_floor;
	sweep_with(a, NULL, &res);
	return res.limit;
}

double avfs_admit_load(const struct avfs_admit *a)
{
	struct avfs_sweep_result res;

	if (a->conf.test == AVFS_ADMIT_FAHRRAD)
		return fahrrad_load(a, NULL, NULL);
	sweep_with(a, NULL, &res);
	return res.need;
}

/* Does r fit beside the admitted set (the disk only, no quota)? */
static bool fits(const struct avfs_admit *a, const struct avfs_service_req *r)
{
	struct avfs_service_cost c;
	struct avfs_sweep_result res;

	if (avfs_service_cost(&a->conf, r, &c, NULL, 0))
		return false;
	if (a->conf.test == AVFS_ADMIT_FAHRRAD)
		return fahrrad_load(a, r, &c) <= 1 - a->conf.be_floor;
	sweep_with(a, r, &res);
	return res.verdict == AVFS_SWEEP_OK;
}

void avfs_admit_left(const struct avfs_admit *a, const struct avfs_service_req *r,
		     struct avfs_admit_left *left)
{
	double util = avfs_admit_limit(a) - avfs_admit_load(a);

	left->util = util > 0 ? util : 0;
	left->rate = 0;
	left->buffer = 0;
	left->quota_rate = UINT64_MAX;
	left->quota_streams = UINT32_MAX;
	if (!r)
		return;
	/* the largest rate for this kind of service: the load grows with the rate */
	{
		struct avfs_service_req t = *r;
		uint64_t lo = 0, hi = (uint64_t)a->conf.model.dmax;

		while (lo < hi) {
			uint64_t mid = lo + (hi - lo + 1) / 2;

			t.rate = mid;
			if (fits(a, &t))
				lo = mid;
			else
				hi = mid - 1;
		}
		left->rate = lo;
	}
	/* the smallest buffer that takes the rate asked for: a longer period, longer rounds (up to
	 * a period of a day, what a service may have) */
	{
		struct avfs_service_req t = *r;
		uint64_t io = r->io ? r->io : a->conf.default_io, lo = io + 4096, hi;

		hi = io + (uint64_t)fmin((double)(1ull << 40) - (double)io,
					 (double)r->rate * (MAX_PERIOD_NS / NS) * 0.999);
		t.buffer = hi;
		if (r->rate && hi > lo && fits(a, &t)) {
			while (lo < hi) {
				uint64_t mid = lo + (hi - lo) / 2;

				t.buffer = mid;
				if (fits(a, &t))
					hi = mid;
				else
					lo = mid + 1;
			}
			left->buffer = lo;
		}
	}
	{
		const struct quota *q = quota_of(a, r->uid);
		uint64_t rate = 0;
		uint32_t n = 0;

		if (!q)
			return;
		for (size_t i = 0; i < a->n; i++) {
			if (a->s[i].req.uid == r->uid) {
				rate += a->s[i].req.rate;
				n++;
			}
		}
		if (q->max_rate)
			left->quota_rate = q->max_rate > rate ? q->max_rate - rate : 0;
		if (q->max_streams)
			left->quota_streams = q->max_streams > n ? q->max_streams - n : 0;
		if (left->rate > left->quota_rate)
			left->rate = left->quota_rate;
	}
}

/* Why the round model refuses r (res: the set with r), and what would still fit. */
static void sweep_why(const struct avfs_admit *a, const struct avfs_sweep_result *res,
		      const struct avfs_admit_left *left, char *why, size_t whylen)
{
	char fit[48] = "";

	if (left->buffer)
		snprintf(fit, sizeof(fit), "; fits with a %.1f MiB buffer",
			 (double)left->buffer / (1 << 20));
	switch (res->verdict) {
	case AVFS_SWEEP_SHORT:
		if (!a->sc_ok) {
			avfs_why(why, whylen, "no disk model to translate the service with");
			return;
		}
		avfs_why(why, whylen, "a period of %.0f ms is no longer than the longest command "
			 "(%.0f ms)%s", res->period_min_ns / 1e6, res->wcrt_ns / 1e6, fit);
		return;
	default:
		avfs_why(why, whylen, "the disk: rounds of %.0f ms need %.1f %%, %.1f %% is "
			 "free%s", res->round_ns / 1e6, 100 * res->need, 100 * res->limit, fit);
		return;
	}
}

static int64_t add(struct avfs_admit *a, const struct avfs_service_req *r,
		   struct avfs_admit_left *left, char *why, size_t whylen, bool check)
{
	struct avfs_service_req req = *r;
	struct avfs_service_cost c = { 0 };
	struct avfs_admit_left unused;
	struct avfs_stream_info *s;
	int err;

	if (!left)
		left = &unused;

	if (!req.io)
		req.io = a->conf.default_io;
	if (!req.rate)
		return -EINVAL;
	/* (slot n for the stream, n + 1 spare for the next candidate) */
	if (sweep_room(a, a->n + 1))
		return -ENOMEM;
	err = avfs_service_cost(&a->conf, &req, &c, why, whylen);
	if (err && check)
		return err;
	if (!check)
		goto keep;	/* an experiment's stream: counted, never refused */
	avfs_admit_left(a, &req, left);
	if (!left->quota_streams || left->quota_rate < req.rate) {
		avfs_why(why, whylen, "quota of uid %u: %s left", req.uid,
			 !left->quota_streams ? "no streams" : "less rate than asked");
		return -EDQUOT;
	}
	if (a->conf.test == AVFS_ADMIT_FAHRRAD) {
		if (fahrrad_load(a, &req, &c) > 1 - a->conf.be_floor) {
			avfs_why(why, whylen, "the disk: this stream needs %.1f %% of disk time "
				 "(%.1f %% with padding), %.1f %% is left", 100 * c.u,
				 100 * c.u_padded, 100 * left->util);
			return -EBUSY;
		}
	} else {
		struct avfs_sweep_result res;

		sweep_with(a, &req, &res);
		if (res.verdict != AVFS_SWEEP_OK) {
			sweep_why(a, &res, left, why, whylen);
			return -EBUSY;
		}
	}
keep:
	s = avfs_grow(a->s, &a->cap, a->n, sizeof(*s), 16);
	if (!s)
		return -ENOMEM;
	a->s = s;
	a->sw[a->n] = sweep_of(&a->conf, &req);
	a->s[a->n++] = (struct avfs_stream_info){ .id = a->next_id, .req = req, .cost = c };
	return (int64_t)a->next_id++;
}

int64_t avfs_admit_add(struct avfs_admit *a, const struct avfs_service_req *r,
		       struct avfs_admit_left *left, char *why, size_t whylen)
{
	return add(a, r, left, why, whylen, true);
}

int64_t avfs_admit_force(struct avfs_admit *a, const struct avfs_service_req *r, char *why,
			 size_t whylen)
{
	return add(a, r, NULL, why, whylen, false);
}

int avfs_admit_remove(struct avfs_admit *a, uint64_t id)
{
	for (size_t i = 0; i < a->n; i++) {
		if (a->s[i].id == id) {
			memmove(&a->s[i], &a->s[i + 1], (a->n - i - 1) * sizeof(a->s[0]));
			memmove(&a->sw[i], &a->sw[i + 1], (a->n - i - 1) * sizeof(a->sw[0]));
			a->n--;
			return 0;
		}
	}
	return -ENOENT;
}

size_t avfs_admit_count(const struct avfs_admit *a)
{
	return a->n;
}

const struct avfs_stream_info *avfs_admit_at(const struct avfs_admit *a, size_t i)
{
	return i < a->n ? &a->s[i] : NULL;
}

const struct avfs_stream_info *avfs_admit_find(const struct avfs_admit *a, uint64_t id)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->s[i].id == id)
			return &a->s[i];
	return NULL;
}

/* ---- the token bucket ---- */

void avfs_bucket_init(struct avfs_bucket *b, double rate, double size, int64_t now)
{
	b->rate = rate;
	b->size = size;
	b->tokens = size;	/* a stream starts by filling its buffer */
	b->last = now;
}

static void bucket_refill(struct avfs_bucket *b, int64_t now)
{
	if (now > b->last) {
		b->tokens += b->rate * (double)(now - b->last) / NS;
		if (b->tokens > b->size)
			b->tokens = b->size;
		b->last = now;
	}
}

bool avfs_bucket_charge(struct avfs_bucket *b, uint64_t len, int64_t now)
{
	bucket_refill(b, now);
	if (b->tokens >= (double)len) {
		b->tokens -= (double)len;
		return true;
	}
	b->tokens -= (double)len;
	if (b->tokens < -b->size / 2)
		b->tokens = -b->size / 2;
	return false;
}

bool avfs_bucket_take(struct avfs_bucket *b, uint64_t len, int64_t now)
{
	bucket_refill(b, now);
	if (b->tokens < (double)len)
		return false;
	b->tokens -= (double)len;
	return true;
}

int64_t avfs_service_deadline(const struct avfs_service_req *r, uint64_t len, int64_t now)
{
	uint64_t rest = r->buffer > len ? r->buffer - len : 0;

	return now + (int64_t)((double)rest / (double)r->rate * NS);
}
