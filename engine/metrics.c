/*
 * metrics.c — QoS metrics (SPEC §12): margin histograms and their quantiles, utilization as
 * the union of busy intervals, seek distances per request, E(T_wait) (papers/003 eq. (2)).
 * Accumulation and arithmetic only; the engine decides what is counted when.
 */
#include "metrics.h"

#include <math.h>
#include <string.h>

#define NS 1e9

const char *const avfs_seek_class_names[AVFS_SEEK_CLASSES] = {
	"0", "<1", "<5", "<20", "<50", "<100", "<200", ">=200",
};

/* ---- margins ---- */

/* bin of a margin: 1 + SIDE - k for late ones (k = its octave bin), the middle for |m| < 1 µs,
 * 2 + SIDE + k for early ones */
static unsigned side_bin(double us)
{
	int k = (int)floor(AVFS_MARGIN_PER_OCTAVE * log2(us));

	if (k < 0)
		k = 0;
	if (k >= AVFS_MARGIN_SIDE)
		k = AVFS_MARGIN_SIDE - 1;
	return (unsigned)k;
}

#define MID (1 + AVFS_MARGIN_SIDE)	/* |margin| < 1 µs */

static unsigned margin_bin(int64_t margin_ns)
{
	double us = (double)margin_ns / 1e3;

	if (us >= 1)
		return MID + 1 + side_bin(us);
	if (us <= -1)
		return MID - 1 - side_bin(-us);
	return MID;
}

/* the lower and upper edges of bin b, µs */
static void bin_edges(unsigned b, double *lo, double *hi)
{
	if (b == MID) {
		*lo = -1;
		*hi = 1;
	} else if (b > MID) {
		double k = (double)(b - MID - 1);

		*lo = exp2(k / AVFS_MARGIN_PER_OCTAVE);
		*hi = exp2((k + 1) / AVFS_MARGIN_PER_OCTAVE);
	} else {
		double k = (double)(MID - 1 - b);

		*lo = -exp2((k + 1) / AVFS_MARGIN_PER_OCTAVE);
		*hi = -exp2(k / AVFS_MARGIN_PER_OCTAVE);
	}
}

void avfs_qos_add(struct avfs_qos *q, int64_t deadline, int64_t done, uint64_t bytes, int res)
{
	int64_t margin;

	if (res >= 0)
		q->bytes += bytes;
	if (!deadline) {
		q->be_requests++;
		return;
	}
	q->requests++;
	if (res < 0) {
		q->misses++;
		q->failed++;
		q->bins[0]++;
		return;
	}
	q->rt_bytes += bytes;
	margin = deadline - done;
	if (q->requests - q->failed == 1 || margin < q->margin_min_ns)
		q->margin_min_ns = margin;
	if (margin < 0)
		q->misses++;
	q->bins[margin_bin(margin)]++;
}

double avfs_qos_margin_quantile(const struct avfs_qos *q, double quantile)
{
	double want, seen = 0;

	if (!q->requests)
		return 0;
	/* the rank of the quantile among the sorted margins, as v[floor(q (n - 1))] */
	want = floor(quantile * (double)(q->requests - 1)) + 0.5;
	if (q->bins[0] && want < (double)q->bins[0])
		return -INFINITY;
	seen = q->bins[0];
	for (unsigned b = 1; b < AVFS_MARGIN_BINS; b++) {
		double lo, hi, v;

		if (!q->bins[b] || seen + q->bins[b] < want) {
			seen += q->bins[b];
			continue;
		}
		bin_edges(b, &lo, &hi);
		/* geometric (or, for the middle bin, linear) interpolation inside the bin */
		if (b == MID)
			v = lo + (hi - lo) * (want - seen) / q->bins[b];
		else if (b > MID)
			v = lo * pow(hi / lo, (want - seen) / q->bins[b]);
		else
			v = hi * pow(lo / hi, 1 - (want - seen) / q->bins[b]);
		v *= 1e3;
		/* never below the smallest margin seen */
		return v < (double)q->margin_min_ns ? (double)q->margin_min_ns : v;
	}
	return exp2(AVFS_MARGIN_OCTAVES) * 1e3;
}

/* ---- the device ---- */

void avfs_metrics_reset(struct avfs_metrics *m, int64_t now)
{
	unsigned busy = m->busy_n;
	uint64_t head = m->head;

	memset(m, 0, sizeof(*m));
	m->since = now;
	m->busy_n = busy;	/* commands on the device stay there */
	m->busy_from = now;
	m->head = head;
}

static unsigned seek_class(uint64_t d)
{
	double gb = (double)d / 1e9;

	return d == 0 ? 0 : gb < 1 ? 1 : gb < 5 ? 2 : gb < 20 ? 3 : gb < 50 ? 4 : gb < 100 ? 5 :
	       gb < 200 ? 6 : 7;
}

static unsigned seek_bin(uint64_t d)
{
	int k;

	if (!d)
		return 0;
	k = (int)floor(16 * log2((double)d / 4096));
	if (k < 0)
		k = 0;
	if (k >= AVFS_SEEK_BINS - 1)
		k = AVFS_SEEK_BINS - 2;
	return 1 + (unsigned)k;
}

void avfs_metrics_cmd_start(struct avfs_metrics *m, uint64_t off, uint32_t len, bool first,
			    bool transfer, int64_t now)
{
	if (transfer && first) {
		uint64_t d = off > m->head ? off - m->head : m->head - off;

		m->seek_class[seek_class(d)]++;
		m->seek_bins[seek_bin(d)]++;
		m->seeks++;
	}
	if (transfer)
		m->head = off + len;
	if (m->busy_n++ == 0)
		m->busy_from = now;	/* the device was idle until now */
}

void avfs_metrics_carried(struct avfs_metrics *m, unsigned n)
{
	m->seek_class[seek_class(0)] += n;
	m->seek_bins[seek_bin(0)] += n;
	m->seeks += n;
}

void avfs_metrics_cmd_end(struct avfs_metrics *m, int64_t start, int64_t now)
{
	double t;

	if (start < m->since)
		start = m->since;	/* begun before the measurement: only its part in it */
	t = now > start ? (double)(now - start) : 0;
	m->commands++;
	m->svc_sum_ns += t;
	m->svc_sq_ns2 += t * t;
	if (m->busy_n && --m->busy_n == 0 && now > m->busy_from)
		m->busy_ns += now - m->busy_from;
}

static double seek_quantile(const struct avfs_metrics *m, double q)
{
	double want = floor(q * (double)(m->seeks - 1)) + 0.5, seen = 0;

	for (unsigned b = 0; b < AVFS_SEEK_BINS; b++) {
		double lo, hi;

		if (seen + m->seek_bins[b] < want) {
			seen += m->seek_bins[b];
			continue;
		}
		if (b == 0)
			return 0;
		lo = 4096 * exp2((double)(b - 1) / 16);
		hi = 4096 * exp2((double)b / 16);
		return lo * pow(hi / lo, (want - seen) / m->seek_bins[b]) / 1e9;
	}
	return 0;
}

void avfs_metrics_summary(const struct avfs_metrics *m, int64_t now,
			  struct avfs_metrics_summary *s)
{
	double dur = (double)(now - m->since), busy = (double)m->busy_ns;
	const struct avfs_qos *q = &m->rt;

	memset(s, 0, sizeof(*s));
	if (m->busy_n && now > m->busy_from)
		busy += (double)(now - m->busy_from);
	s->seconds = dur / NS;
	s->rt_requests = q->requests;
	s->misses = q->misses;
	s->etime = m->etime;
	s->p0 = q->requests ? (double)q->misses / (double)q->requests : 0;
	if (q->requests) {
		double v[3] = { avfs_qos_margin_quantile(q, 0.001), avfs_qos_margin_quantile(q, 0.01),
				avfs_qos_margin_quantile(q, 0.5) };

		for (int i = 0; i < 3; i++)
			v[i] = isinf(v[i]) ? -1e9 : v[i] / 1e6;	/* failed: "minus forever" */
		s->margin_p001_ms = v[0];
		s->margin_p01_ms = v[1];
		s->margin_p50_ms = v[2];
		s->margin_min_ms = q->failed ? -1e9 : (double)q->margin_min_ns / 1e6;
	}
	s->utilization = dur > 0 ? busy / dur : 0;
	if (s->utilization > 1)
		s->utilization = 1;
	s->commands = m->commands;
	/* papers/003 eq. (2): E(T_wait) = ½ ΣT_i² / (ΣT_i + T_idle), the denominator the whole run */
	s->e_twait_ms = dur > 0 ? 0.5 * m->svc_sq_ns2 / dur / 1e6 : 0;
	if (m->seeks) {
		s->seek_p50_gb = seek_quantile(m, 0.5);
		s->seek_p90_gb = seek_quantile(m, 0.9);
		s->seek_frac_below_5 = (double)(m->seek_class[0] + m->seek_class[1] +
						m->seek_class[2]) / (double)m->seeks;
	}
	memcpy(s->seek_class, m->seek_class, sizeof(s->seek_class));
	s->be_requests = m->be_requests;
	s->be_bytes = m->be_bytes;
	s->be_mbps = dur > 0 ? (double)m->be_bytes * 8 / (dur / NS) / 1e6 : 0;
	s->rt_bytes = q->rt_bytes;
	s->max_pending = m->max_pending;
	s->decisions = m->decisions;
}
