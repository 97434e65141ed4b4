/*
 * rotpred.c — the rotational position predictor (see rotpred.h). Pure arithmetic.
 */
#include "config.h"

#include <errno.h>
#include <math.h>

#include "hddmodel.h"
#include "rotpred.h"

#define NS 1e9
#define MEAN_SQRT_GAP (8.0 / 15.0)	/* E[√|u − v|] for u, v uniform on [0, 1] */

int avfs_rotpred_init(struct avfs_rotpred *r, const struct avfs_rotpred_params *p)
{
	if (!(p->tr_ns > 0) || !(p->dmax > 0) || !(p->dmin > 0) || p->dmin > p->dmax ||
	    !p->lmax || p->track_ns < 0 || p->full_ns < p->track_ns || p->overhead_ns < 0 ||
	    !p->angle != !p->seek)
		return -EINVAL;
	*r = (struct avfs_rotpred){ .p = *p };
	return 0;
}

void avfs_rotpred_params_from_model(const struct avfs_svc_model *m, struct avfs_rotpred_params *p)
{
	double track = m->tk_ns / 10;

	*p = (struct avfs_rotpred_params){
		.tr_ns = m->tr_ns,
		.track_ns = track,
		.full_ns = track + (m->tk_ns - track) / MEAN_SQRT_GAP,
		.dmax = m->dmax,
		.dmin = m->dmin,
		.lmax = m->lmax,
	};
}

/* Tracks before byte x: ∫ dx / (rate(x) · T_r) with the rate linear in x. */
static double tracks_before(const struct avfs_rotpred_params *p, double x)
{
	double per_turn = p->tr_ns / NS;	/* s */
	double slope = (p->dmin - p->dmax) / (double)p->lmax;

	if (fabs(slope) * (double)p->lmax < 1e-9 * p->dmax)
		return x / (p->dmax * per_turn);
	return log((p->dmax + slope * x) / p->dmax) / (slope * per_turn);
}

static double frac(double v)
{
	return v - floor(v);
}

double avfs_rotpred_angle(const struct avfs_rotpred *r, uint64_t off)
{
	if (r->p.angle)
		return r->p.angle(r->p.geom, off);
	return frac(tracks_before(&r->p, (double)off));
}

/* bytes/s at byte off: the linear rate of the model */
static double rate_at(const struct avfs_rotpred_params *p, uint64_t off)
{
	return p->dmax + (p->dmin - p->dmax) * (double)off / (double)p->lmax;
}

void avfs_rotpred_observe(struct avfs_rotpred *r, int64_t now, uint64_t end_off, bool transfer)
{
	if (end_off > r->p.lmax)
		end_off = r->p.lmax;
	if (r->pending && transfer && end_off == r->pend_end) {
		/* On time, a command completes when predicted: the delays on the way to the drive
		 * and back are inside the learned phase, and a late arrival within the slack only
		 * shortens the wait. Later than the slack, it loses a turn and comes T_r late.
		 * So only the lost turns tell: more slip for each, a little less for each on time
		 * (about one command in 17 loses its turn, the price of finding the edge). */
		r->slip_samples++;
		if ((double)now - r->pend_done > r->p.tr_ns / 2) {
			r->slip_lost++;
			r->slip_ns += r->p.tr_ns / 32;
		} else {
			r->slip_ns -= r->p.tr_ns / 512;
		}
		r->slip_ns = fmax(0, fmin(r->p.tr_ns / 2, r->slip_ns));
	}
	r->pending = false;
	if (transfer) {
		r->phase = frac(avfs_rotpred_angle(r, end_off) - frac((double)now / r->p.tr_ns));
		r->known = true;
	}
	r->head = end_off;
	r->busy_until = now;
}

static double seek_ns(const struct avfs_rotpred_params *p, uint64_t from, uint64_t to)
{
	uint64_t dist = from > to ? from - to : to - from;

	if (p->seek)
		return p->seek(p->geom, from, to);
	if (!dist)
		return 0;
	return p->track_ns + (p->full_ns - p->track_ns) * sqrt((double)dist / (double)p->lmax);
}

int avfs_rotpred_predict(void *ctx, int64_t now, uint64_t off, int64_t *seek_out,
			 int64_t *rot_out, int64_t *half_out, uint64_t *mid_out)
{
	const struct avfs_rotpred *r = ctx;
	uint64_t dist;
	double seek, arrive, at_angle;

	if (off >= r->p.lmax)
		return -EINVAL;
	if (!r->known)
		return -EAGAIN;
	*seek_out = *rot_out = *half_out = 0;
	*mid_out = off;
	if (off == r->head)
		return 0;	/* the head is there already: streaming */
	dist = off > r->head ? off - r->head : r->head - off;
	seek = seek_ns(&r->p, r->head, off);
	*seek_out = (int64_t)seek;
	*mid_out = (off < r->head ? off : r->head) + dist / 2;
	*half_out = (int64_t)seek_ns(&r->p, r->head, *mid_out);
	if (!r->p.angle && dist > AVFS_ROTPRED_NEAR) {
		*rot_out = (int64_t)(r->p.tr_ns / 2);
		return AVFS_PRED_ROT_MEAN;
	}
	arrive = (double)(now > r->busy_until ? now : r->busy_until) + r->p.overhead_ns + seek +
		 r->slip_ns;
	at_angle = frac(r->phase + frac(arrive / r->p.tr_ns));
	*rot_out = (int64_t)(frac(avfs_rotpred_angle(r, off) - at_angle) * r->p.tr_ns);
	return 0;
}

int avfs_rotpred_named(const char *name, uint64_t bytes, struct avfs_svc_model *m,
		       struct avfs_rotpred_params *p, struct avfs_hdd **geom)
{
	struct avfs_hdd_params hp;
	double full;

	if (avfs_hdd_params_lookup(name, &hp) || hp.ssd)
		return -ENOENT;
	if (avfs_hdd_new(&hp, geom))
		return -ENOMEM;
	*m = (struct avfs_svc_model){ .tr_ns = 60e9 / hp.rpm, .lmax = bytes };
	avfs_hdd_part(*geom, bytes, &m->dmax, &m->dmin, &m->tk_ns, &full);
	avfs_rotpred_params_from_model(m, p);
	p->track_ns = hp.seek_track_ms * 1e6;
	p->full_ns = full > p->track_ns ? full : p->track_ns;
	p->overhead_ns = hp.overhead_ms * 1e6;
	p->geom = *geom;
	p->angle = avfs_hdd_angle_of;
	p->seek = avfs_hdd_seek_between;
	return 0;
}

void avfs_rotpred_issued(struct avfs_rotpred *r, int64_t now, uint64_t off, uint32_t len)
{
	int64_t seek, rot, half;
	uint64_t mid;

	r->pending = false;
	if (off == r->head || avfs_rotpred_predict(r, now, off, &seek, &rot, &half, &mid))
		return;	/* streaming, too far, or nothing known yet */
	r->pending = true;
	r->pend_end = off + len;
	r->pend_done = (double)(now > r->busy_until ? now : r->busy_until) + r->p.overhead_ns +
		       r->slip_ns + (double)(seek + rot) + (double)len / rate_at(&r->p, off) * NS;
}

static void pred_issued(void *ctx, int64_t now, uint64_t off, uint32_t len)
{
	avfs_rotpred_issued(ctx, now, off, len);
}

static void pred_observe(void *ctx, int64_t now, uint64_t end_off, bool transfer)
{
	avfs_rotpred_observe(ctx, now, end_off, transfer);
}

struct avfs_sched_predictor avfs_rotpred_predictor(struct avfs_rotpred *r)
{
	return (struct avfs_sched_predictor){ .ctx = r, .predict = avfs_rotpred_predict,
					      .issued = pred_issued, .observe = pred_observe };
}
