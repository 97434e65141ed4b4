/*
 * sweep.c — the round (sweep) model of the mixer's service of a stream set (sweep.h has the
 * formulas and the assumptions). Pure arithmetic; it decides nothing (admit.c does).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "hddmodel.h"
#include "sweep.h"

#define NS 1e9
/* E √|U − V| for U, V independent and uniform on [0, 1]: a seek between two random places in
 * units of the concave curve's √ term (a detour's expected seek, sweep.h) */
#define DETOUR_SEEK (8.0 / 15)

int avfs_sweep_disk_named(struct avfs_sweep_disk *d, const char *name, uint64_t bytes)
{
	struct avfs_hdd_params p;
	struct avfs_hdd *h;
	double first, last, mean, full;
	uint64_t nsect, end;
	unsigned nz;

	if (avfs_hdd_params_lookup(name, &p) || p.ssd || avfs_hdd_new(&p, &h))
		return -ENOENT;
	memset(d, 0, sizeof(*d));
	nsect = avfs_hdd_sectors(h);
	end = bytes ? bytes / AVFS_HDD_SECTOR : nsect;
	if (!end || end > nsect)
		end = nsect;
	avfs_hdd_part(h, end * AVFS_HDD_SECTOR, &first, &last, &mean, &full);
	d->track_ns = p.seek_track_ms * 1e6;
	d->full_ns = full > d->track_ns ? full : d->track_ns;
	d->overhead_ns = p.overhead_ms * 1e6;
	nz = avfs_hdd_nzones(h);
	for (unsigned z = 0; z < nz && d->nbands < AVFS_SWEEP_BANDS; z++) {
		uint64_t s = avfs_hdd_zone_first_sector(h, z);

		if (s >= end)
			break;
		d->band_start[d->nbands] = (double)s / (double)end;
		d->band_rate[d->nbands] = avfs_hdd_zone_rate(h, z);
		d->nbands++;
	}
	avfs_hdd_free(h);
	return 0;
}

int avfs_sweep_conf_check(struct avfs_sweep_conf *c)
{
	const struct avfs_svc_model *m = &c->model;
	struct avfs_sweep_disk *d = &c->disk;

	/* (a device without mechanics, the ssd model, has T_r = T_k = 0: no seek, no turn) */
	if (!(m->tr_ns >= 0) || !(m->tk_ns >= 0) || !(m->dmin > 0) || m->dmax < m->dmin ||
	    !c->block_size)
		return -EINVAL;
	if (!(d->full_ns > 0))
		d->full_ns = 2 * m->tk_ns;	/* what WCRT has always taken */
	if (!(d->track_ns > 0))
		d->track_ns = m->tk_ns / 5;	/* with full = 2 T_k: above every model's curve */
	if (d->track_ns > d->full_ns)
		d->track_ns = d->full_ns;
	if (!(d->overhead_ns >= 0) || (d->overhead_ns == 0 && !d->nbands))
		d->overhead_ns = 200e3;
	if (d->nbands > AVFS_SWEEP_BANDS)
		return -EINVAL;
	for (unsigned k = 0; k < d->nbands; k++)
		if (!(d->band_rate[k] > 0) || d->band_start[k] < 0 || d->band_start[k] >= 1 ||
		    (k && d->band_start[k] <= d->band_start[k - 1]))
			return -EINVAL;
	if (!(c->margin_ns > 0) || !(c->be_age_ns > 0) || !(c->k >= 0))
		return -EINVAL;
	return 0;
}

/* E[1/d] and E[1/d²] over the whole LBA range: the bands, or the linear model (in closed form:
 * d(x) = a − b x on [0, 1]). */
static void disk_inv(const struct avfs_sweep_conf *c, double *m1, double *m2)
{
	const struct avfs_sweep_disk *d = &c->disk;
	double a = c->model.dmax, b = c->model.dmax - c->model.dmin;

	if (d->nbands) {
		*m1 = *m2 = 0;
		for (unsigned k = 0; k < d->nbands; k++) {
			double w = (k + 1 < d->nbands ? d->band_start[k + 1] : 1) - d->band_start[k];

			*m1 += w / d->band_rate[k];
			*m2 += w / (d->band_rate[k] * d->band_rate[k]);
		}
		return;
	}
	if (b < 1e-9 * a) {
		*m1 = 1 / a;
		*m2 = 1 / (a * a);
		return;
	}
	*m1 = log(a / (a - b)) / b;
	*m2 = (1 / (a - b) - 1 / a) / b;
}

static double slowest(const struct avfs_sweep_conf *c)
{
	double s = c->model.dmin;

	for (unsigned k = 0; k < c->disk.nbands; k++)
		s = fmin(s, c->disk.band_rate[k]);
	return s;
}

void avfs_sweep_inv_rate(const struct avfs_sweep_conf *c, const struct avfs_sweep_stream *s,
			 double *mean, double *var)
{
	double m1, m2;

	if (s->d_mean > 0) {
		/* a known layout: its mean, and the variance bounded by its range (Bhatia–Davis:
		 * Var X <= (M − μ)(μ − m) for X in [m, M] with mean μ) */
		double hi = 1 / (s->d_slow > 0 ? fmin(s->d_slow, s->d_mean) : s->d_mean);
		double lo = 1 / (s->d_fast > 0 ? fmax(s->d_fast, s->d_mean) : s->d_mean);

		*mean = 1 / s->d_mean;
		*var = fmax(0, (hi - *mean) * (*mean - lo));
		return;
	}
	if (!c->zrr || (c->zones && c->zones < AVFS_SWEEP_MIX_ZONES)) {
		/* the file may lie anywhere, or long in one place: its worst */
		*mean = 1 / slowest(c);
		*var = 0;
		return;
	}
	disk_inv(c, &m1, &m2);
	*mean = m1;
	*var = fmax(0, m2 - m1 * m1);
}

double avfs_sweep_seek_sum(double n, bool spread)
{
	if (!(n > 0))
		return 0;
	if (!spread)
		return sqrt(n);	/* evenly spaced: the most a concave curve can cost */
	/* n · E[√G], G ~ Beta(1, n) the gap before each of n uniform points, E[√G] =
	 * Γ(n + 1) Γ(3/2) / Γ(n + 3/2) */
	return n * exp(lgamma(n + 1) + lgamma(1.5) - lgamma(n + 1.5));
}

/* A stream's period p_i = (b_i − s_i) / r_i: how long after its arrival a request is due. */
static double period(const struct avfs_sweep_stream *s)
{
	return (s->buffer - s->io) / s->rate;
}

/* A stream's own round, (p_i − W) / 2: the round it alone would need. */
static double own_round(const struct avfs_sweep_stream *s, double w)
{
	return (period(s) - w) / 2;
}

/* The terms of the set with the sweep's rounds of t (≥ the set's round): the streams whose own
 * round is shorter are served out of the round, the others once a round of tv ≥ t (the round
 * the hold gathers). A short stream whose own round is at least m is served by detours from
 * the sweep (its requests come due before the sweep returns: the mixer's EDF and reduced
 * windows, and joins, take them out of order), each visit two positionings there and back
 * (Theorem 3's 2S) at their expectation: a seek between two uniform places and half a turn.
 * One whose own round is below m, the mixer serves request by request (sweep.h): if its
 * requests are due within m of their arrival, each one at once, one positioning of a full
 * stroke and a full turn (`urgent`); else they join the batch under way and are visited within
 * its sweep. Fills the shares, visits, commands and util of out, and *var (the variance a
 * second). */
static void terms(const struct avfs_sweep_conf *c, const struct avfs_sweep_stream *s, size_t n,
		  double t, double tv, bool spread, struct avfs_sweep_result *out, double *var)
{
	const struct avfs_sweep_disk *d = &c->disk;
	double tr = c->model.tr_ns / NS, full = d->full_ns / NS, track = d->track_ns / NS;
	double ovh = d->overhead_ns / NS, w = out->wcrt_ns / NS, swept = 0;
	double margin = c->margin_ns / NS;
	double place = (double)c->block_size * (c->run > 1 ? c->run : 1);	/* L */
	double co = (double)c->coalesce;	/* C, within a chunk */

	if (c->chunk && co > (double)c->chunk)
		co = (double)c->chunk;	/* the mixer coalesces within a chunk */
	out->visits = out->commands = out->xfer = out->cmds = out->turns = out->detours = 0;
	out->urgent = 0;
	*var = 0;
	for (size_t i = 0; i < n; i++) {
		double rps = s[i].rate / s[i].io, inv, v_inv, vis, cps = rps;
		double ppr = ceil(s[i].io / place);	/* places a request spans */
		double k = floor(co / s[i].io);	/* requests a coalesced command carries */
		double ti = own_round(&s[i], w);
		bool detour = ti < t, by_request = detour && ti < margin;

		avfs_sweep_inv_rate(c, &s[i], &inv, &v_inv);
		vis = fmin(rps * ppr, 1 / (detour ? ti : tv) + s[i].rate / place);
		if (k > AVFS_SCHED_COALESCE_MAX)
			k = AVFS_SCHED_COALESCE_MAX;
		if (k >= 2)
			cps = fmin(rps, vis + rps / k);
		if (by_request && period(&s[i]) < margin) {
			vis = rps * ppr;	/* due within m: each request at once, alone */
			cps = rps;
			out->urgent += vis;
		} else if (by_request) {
			swept += vis;		/* joins the batch under way */
		} else if (detour) {
			out->detours += vis;
		} else {
			swept += vis;
		}
		out->commands += cps;
		out->xfer += s[i].rate * inv;
		out->cmds += cps * ovh;
		if (s[i].write && cps > vis)
			out->turns += (cps - vis) * tr;
		/* the zone mix: a block's time B/d at one zone, r/B blocks a second (in runs
		 * too: see sweep.h) */
		*var += s[i].rate * (double)c->block_size * v_inv;
	}
	out->visits = swept + 2 * out->detours + out->urgent;
	out->seek = full / tv + swept * track +
		    (full - track) * avfs_sweep_seek_sum(swept * tv, spread) / tv +
		    2 * out->detours * (track + (full - track) * DETOUR_SEEK) + out->urgent * full;
	out->rot = (swept + 2 * out->detours) * tr / 2 + out->urgent * tr;
	*var += out->visits * tr * tr / 12;
	out->util = out->seek + out->rot + out->xfer + out->turns + out->cmds;
}

void avfs_sweep_eval(const struct avfs_sweep_conf *c, const struct avfs_sweep_stream *s,
		     size_t n, struct avfs_sweep_result *out)
{
	const struct avfs_svc_model *m = &c->model;
	const struct avfs_sweep_disk *d = &c->disk;
	double tr = m->tr_ns / NS, full = d->full_ns / NS;
	double dmin = slowest(c), big = (double)c->cmd_max;
	double pmin = INFINITY, var, wbe, e_be, u_be, t, tv, margin = c->margin_ns / NS;
	/* a round's positionings at places independent and uniform over the stroke: files spread
	 * over many zones, no layout known (a known one may be anywhere, evenly spaced at worst),
	 * and rounds the mixer gathers (see the round's check below) */
	bool spread = c->zrr && !(c->zones && c->zones < AVFS_SWEEP_MIX_ZONES);

	memset(out, 0, sizeof(*out));
	wbe = full + tr + (double)c->cmd_max / dmin;
	e_be = fmax(0, full + tr - m->tk_ns / NS - tr / 2);
	u_be = fmax(c->be_floor, c->be_isolation ? wbe * NS / c->be_age_ns : 0);
	out->limit = 1 - u_be;
	if (!n) {
		out->verdict = out->limit > 0 ? AVFS_SWEEP_OK : AVFS_SWEEP_TIME;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		double p = period(&s[i]);

		pmin = fmin(pmin, p);
		spread = spread && !(s[i].d_mean > 0);
		big = fmax(big, c->chunk && c->chunk < s[i].io ? c->chunk : s[i].io);
	}
	/* W: the longest command anyone may have on the disk when a request becomes due */
	out->wcrt_ns = (full + tr + big / dmin) * NS;
	out->period_min_ns = pmin * NS;
	t = (pmin - out->wcrt_ns / NS) / 2;
	if (!(t > 1e-3)) {
		out->verdict = AVFS_SWEEP_SHORT;
		return;
	}
	/* a round shorter than the margin is not gathered: a request is due within m and one
	 * round of its arrival, so the hold lets it go at once, and the mixer serves short
	 * batches and windows rather than one sweep a round (more positionings than 1/T a
	 * stream, measured: sweep.h) — the evenly spaced bound there */
	/* rounds the mixer gathers (T ≥ m): the hold lets a batch go once the request due first
	 * comes within m of its deadline (less its place in the batch), so a request that just
	 * missed one batch is held up to p_min − m for the next — the batches come that far
	 * apart while the disk has time to spare, and each visits a stream once with all it
	 * asked for since (sweep.h, "gathered") */
	tv = t >= margin ? fmax(t, pmin - margin) : t;
	terms(c, s, n, t, tv, spread && t >= margin, out, &var);
	out->round_ns = t * NS;
	out->gather_ns = tv * NS;
	/* longer rounds with the shorter-period streams served out of them: the least need.
	 * Below m too: there the hold lets batches go sooner while the disk has time to spare
	 * (more positionings, on time the disk has), but a loaded disk runs them back to back,
	 * each with what came during the one before, so the round is what its work takes
	 * (sweep.h, "by request") */
	for (size_t j = 0; j < n; j++) {
		double tj = own_round(&s[j], out->wcrt_ns / NS), vj;
		struct avfs_sweep_result r = *out;

		if (!(tj > t))
			continue;
		terms(c, s, n, tj, tj, spread && tj >= margin, &r, &vj);
		if (r.util + c->k * vj / margin < out->util + c->k * var / margin) {
			*out = r;
			out->round_ns = out->gather_ns = tj * NS;
			var = vj;
		}
	}
	out->margin = c->k * var / margin;
	/* a best-effort command's overrun once a batch: a round of the set's shortest, or the
	 * rounds the hold gathers (with detours too: the hold is over every request) */
	out->be = c->be_isolation ? e_be / tv : 0;
	out->need = out->util + out->margin + out->be;
	out->verdict = out->need > out->limit ? AVFS_SWEEP_TIME : AVFS_SWEEP_OK;
}

