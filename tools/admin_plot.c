/*
 * admin_plot.c — avfs-admin plot: a request trace (docs/TRACE.md) drawn as one self-contained SVG
 * with three panels: disk head position over time (papers/004 §2.2.3), the completion-margin CDF
 * of each stream (papers/001 Fig. 3) and disk utilization per time bin, stacked per stream. It
 * reads the trace twice (check and measure, then draw), so its memory follows the picture's size
 * and the number of RT requests (a margin each for the CDF), not the trace's size; it draws what
 * the trace says and judges nothing.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin.h"
#include "grow.h"
#include "trace.h"
#include "units.h"
#include "why.h"


/* Above these the utilization bin is widened (and the user told): a point or two per bin and
 * series would make the picture heavier than it can show. */
#define MAX_BINS 20000
#define MAX_BIN_CELLS (4u << 20)	/* bins x series */

#define LEGEND_ROW 16	/* px per legend entry */


/* Requests of no stream are drawn per class: best effort and metadata in grey, the preemption
 * study's high-priority probe in black (drawn last, on top), RT requests of no stream (none of
 * today's writers emits them) in a third grey. */
static const struct {
	enum avfs_trace_class cls;
	const char *colour;
	const char *label;
} others[] = {
	{ AVFS_TRACE_BE, "#b0b0b0", "best effort" },
	{ AVFS_TRACE_META, "#707070", "metadata" },
	{ AVFS_TRACE_RT, "#8a8a8a", "RT, no stream" },
	{ AVFS_TRACE_HP, "#000000", "high priority (hp)" },
};
#define NOTHERS (sizeof(others) / sizeof(others[0]))

/* Streams: a fixed palette of distinguishable colours (Tableau 10 without its grey, then three
 * darker ones), cycled by the stream's rank in the trace, not its id. */
static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
	"#e377c2", "#bcbd22", "#17becf", "#393b79", "#637939", "#843c39",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

/* A plot area in pixels and the data range it shows. */
struct frame {
	double x, y, w, h;
	double xlo, xhi, ylo, yhi;
};

/* Panel 1's line through successive head positions, decimated to the first, lowest, highest and
 * last position per pixel column (in the order they occurred), so a million requests draw as a few
 * thousand points that still show every excursion. */
struct column {
	float first, last, lo, hi;	/* GB */
	bool used, lo_first;		/* lo_first: the lowest came before the highest */
};

struct series {
	int64_t stream;		/* the stream's id, or -1 for a group of no stream */
	enum avfs_trace_class cls;	/* a group's class (for a stream: unused) */
	const char *colour, *label;
	uint64_t n;		/* requests */
	uint64_t rt, misses;	/* its RT requests, and those that missed (docs/TRACE.md) */
	double *margin;		/* completion margins of its RT requests, ms; sorted before drawing */
	size_t margin_cap;
	/* panel 1, the pixels its requests fell on: a list (col * ph + row) while that is smaller
	 * than a bitmap, so that thousands of short streams cost no more than their requests */
	uint32_t *pts;
	size_t npts, pts_cap;
	uint8_t *cells;		/* ... then one bit per pixel, by column, each column padded to bytes */
	double *busy;		/* panel 3: ns of service per bin */
	double busy_ns;		/* ... in all */
};

struct plot {
	const char *trace, *out;
	int width, height;		/* px */
	int64_t margin_ns, bin_ns, bin_asked_ns;

	/* pass 1: check the trace and measure it */
	uint64_t lines;			/* requests (data lines) */
	int64_t t0, t1;			/* first submit, last completion */
	double top_gb;			/* the highest byte requested */
	int64_t *ids;			/* the streams present, sorted */
	size_t nids, ids_cap;

	/* pass 2: the pictures */
	struct series *s;		/* the nids streams in id order, then others[] */
	size_t ns;
	size_t nbins;
	int64_t busy_end;		/* when the disk finished its latest request */
	struct column *col;		/* panel 1, per pixel column */
	int pw, ph;			/* panel 1's plot area, px */
	uint64_t seen;			/* requests read in pass 2 */

	struct frame head, cdf, util;	/* the panels' plot areas */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: avfs-admin plot TRACE --out FILE.svg [--margin T] [--bin T] [--width PX]\n"
		"                       [--height PX]\n"
		"Draw a request trace (docs/TRACE.md: avfs-sim --trace, avfs-admin trace) as one SVG\n"
		"with three panels:\n"
		"  1. disk head position (request offset, GB) over time, one colour per stream,\n"
		"     best effort and metadata in grey, the high-priority probe in black\n"
		"     (papers/004 §2.2.3);\n"
		"  2. the completion-margin CDF of each stream's RT requests (deadline - completion,\n"
		"     ms), the margin m dashed, misses counted in the legend (papers/001 Fig. 3);\n"
		"  3. disk utilization per time bin, stacked per stream, taking the disk to serve\n"
		"     one request at a time (a rotational disk).\n"
		"  --out FILE.svg   the picture; written beside, then renamed into place\n"
		"  --margin T       the desired completion margin m (default 500ms)\n"
		"  --bin T          the utilization bin (default 1s)\n"
		"  --width PX       picture width (default 1200, 600..4000)\n"
		"  --height PX      picture height (default 1100, 500..4000)\n"
		"  -h, --help       this text\n"
		"Times take a unit: ns, us, ms or s. Exit 0 done, 1 failed (no output written),\n"
		"2 bad usage.\n");
}

/* ---- reading the trace ---- */

/* docs/TRACE.md: an RT request misses if its margin is below zero or it failed with -ETIME. */
static bool missed(const struct avfs_trace_rec *r)
{
	return r->cls == AVFS_TRACE_RT && (r->deadline_ns < r->complete_ns || r->result == -ETIME);
}

static int add_id(struct plot *p, int64_t id)
{
	size_t lo = 0, hi = p->nids;
	int64_t *ids;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->ids[mid] == id)
			return 0;
		if (p->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	ids = avfs_grow(p->ids, &p->ids_cap, p->nids, sizeof(*ids), 16);
	if (!ids)
		return -ENOMEM;
	p->ids = ids;
	memmove(p->ids + lo + 1, p->ids + lo, (p->nids - lo) * sizeof(*p->ids));
	p->ids[lo] = id;
	p->nids++;
	return 0;
}

static struct series *series_of(struct plot *p, const struct avfs_trace_rec *r)
{
	if (r->stream >= 0) {
		size_t lo = 0, hi = p->nids;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (p->ids[mid] == r->stream)
				return &p->s[mid];
			if (p->ids[mid] < r->stream)
				lo = mid + 1;
			else
				hi = mid;
		}
		return NULL;	/* not seen in pass 1: the file changed */
	}
	for (size_t i = 0; i < NOTHERS; i++)
		if (others[i].cls == r->cls)
			return &p->s[p->nids + i];
	return NULL;
}

/* Pass 1: the time range, the highest offset, the streams. */
static int measure(struct plot *p, const struct avfs_trace_rec *r)
{
	if (!p->lines || r->submit_ns < p->t0)
		p->t0 = r->submit_ns;
	if (!p->lines || r->complete_ns > p->t1)
		p->t1 = r->complete_ns;
	if ((double)(r->offset + r->length) / 1e9 > p->top_gb)
		p->top_gb = (double)(r->offset + r->length) / 1e9;
	p->lines++;
	return r->stream >= 0 ? add_id(p, r->stream) : 0;
}

/* Service of s on the disk over [a, b], split over the bins it overlaps. */
static void add_busy(struct plot *p, struct series *s, int64_t a, int64_t b)
{
	size_t i;

	a -= p->t0;
	b -= p->t0;
	s->busy_ns += (double)(b - a);
	for (i = (size_t)(a / p->bin_ns); a < b && i < p->nbins; i++) {
		/* below the span but for the last bin, so no overflow even near INT64_MAX */
		int64_t end = i + 1 < p->nbins ? (int64_t)(i + 1) * p->bin_ns : b;
		int64_t e = b < end ? b : end;

		s->busy[i] += (double)(e - a);
		a = e;
	}
}

static void set_pixel(const struct plot *p, uint8_t *cells, uint32_t pt)
{
	size_t rowbytes = ((size_t)p->ph + 7) / 8, c = pt / (uint32_t)p->ph, row = pt % (uint32_t)p->ph;

	cells[c * rowbytes + row / 8] |= (uint8_t)(1u << (row % 8));
}

/* Panel 1: s visited pixel (c, row). 0 or -ENOMEM. */
static int add_pixel(const struct plot *p, struct series *s, int c, int row)
{
	uint32_t pt = (uint32_t)c * (uint32_t)p->ph + (uint32_t)row, *pts;
	size_t bitmap = (size_t)p->pw * (((size_t)p->ph + 7) / 8);

	if (s->cells) {
		set_pixel(p, s->cells, pt);
		return 0;
	}
	if (s->npts && s->pts[s->npts - 1] == pt)
		return 0;	/* a stream's requests come in runs on one spot */
	if (s->npts == s->pts_cap && 2 * s->pts_cap * sizeof(*pts) >= bitmap) {
		/* doubled, the list would outgrow the bitmap: switch to the bitmap */
		s->cells = calloc(1, bitmap);
		if (!s->cells)
			return -ENOMEM;
		for (size_t i = 0; i < s->npts; i++)
			set_pixel(p, s->cells, s->pts[i]);
		set_pixel(p, s->cells, pt);
		free(s->pts);
		s->pts = NULL;
		s->npts = s->pts_cap = 0;
		return 0;
	}
	pts = avfs_grow(s->pts, &s->pts_cap, s->npts, sizeof(*pts), 16);
	if (!pts)
		return -ENOMEM;
	s->pts = pts;
	s->pts[s->npts++] = pt;
	return 0;
}

/* Pass 2: one request into the three pictures. */
static int draw_rec(struct plot *p, const struct avfs_trace_rec *r)
{
	struct series *s = series_of(p, r);
	double t = (double)(r->complete_ns - p->t0) / 1e9, gb = (double)r->offset / 1e9;
	int64_t start;
	int c, row;

	if (!s || p->seen++ == p->lines || r->submit_ns < p->t0 || r->complete_ns > p->t1)
		return -ESTALE;
	s->n++;
	if (r->cls == AVFS_TRACE_RT) {
		double *m = avfs_grow(s->margin, &s->margin_cap, s->rt, sizeof(*m), 16);

		if (!m)
			return -ENOMEM;
		s->margin = m;
		s->margin[s->rt++] = (double)(r->deadline_ns - r->complete_ns) / 1e6;
		s->misses += missed(r);
	}

	/* panel 1: the pixel the request's offset at its completion falls on */
	c = (int)((t - p->head.xlo) / (p->head.xhi - p->head.xlo) * p->pw);
	row = (int)((p->head.yhi - gb) / (p->head.yhi - p->head.ylo) * p->ph);
	c = c < 0 ? 0 : c >= p->pw ? p->pw - 1 : c;
	row = row < 0 ? 0 : row >= p->ph ? p->ph - 1 : row;
	if (add_pixel(p, s, c, row))
		return -ENOMEM;
	if (!p->col[c].used) {
		p->col[c] = (struct column){ .first = (float)gb, .lo = (float)gb, .hi = (float)gb,
					     .used = true };
	} else if (gb < p->col[c].lo) {
		p->col[c].lo = (float)gb;
		p->col[c].lo_first = false;
	} else if (gb > p->col[c].hi) {
		p->col[c].hi = (float)gb;
		p->col[c].lo_first = true;
	}
	p->col[c].last = (float)gb;

	/* panel 3: one request at a time. With service_ns it was on the device for that long
	 * before it completed; without, from when the disk became free (or it arrived, if later)
	 * until it completed — which counts a held request's wait as busy */
	if (!s->busy) {
		s->busy = calloc(p->nbins, sizeof(*s->busy));
		if (!s->busy)
			return -ENOMEM;
	}
	start = r->service_ns >= 0 ? r->complete_ns - r->service_ns : r->submit_ns;
	start = start > p->busy_end ? start : p->busy_end;
	if (r->complete_ns > start)
		add_busy(p, s, start, r->complete_ns);
	if (r->complete_ns > p->busy_end)
		p->busy_end = r->complete_ns;
	return 0;
}

/* Read the whole trace, handing each request to fn; 0, or -errno after saying why on stderr. */
static int read_trace(struct plot *p, int (*fn)(struct plot *, const struct avfs_trace_rec *))
{
	FILE *f = fopen(p->trace, "r");
	char *line = NULL, why[160];
	size_t cap = 0;
	uint64_t no = 0;
	ssize_t len;
	struct avfs_trace_rec r;
	int err = 0, nf = AVFS_TRACE_COLUMNS;

	if (!f) {
		err = -errno;
		fprintf(stderr, "avfs-admin plot: %s: %s\n", p->trace, strerror(-err));
		return err;
	}
	errno = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		no++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (strlen(line) != (size_t)len) {
			fprintf(stderr, "avfs-admin plot: %s:%" PRIu64 ": a NUL byte: not a text trace\n",
				p->trace, no);
			err = -EINVAL;
			goto out;
		}
		if (no == 1) {
			char head[256];

			nf = avfs_trace_parse_header(line);
			if (nf < 0) {
				head[avfs_trace_header(head, sizeof(head)) - 1] = 0;
				fprintf(stderr, "avfs-admin plot: %s:1: not a request trace: the header "
					"must be\n  %s (service_ns may be missing)\n", p->trace, head);
				err = -EINVAL;
				goto out;
			}
			continue;
		}
		if (avfs_trace_parse(line, nf, &r, why, sizeof(why))) {
			fprintf(stderr, "avfs-admin plot: %s:%" PRIu64 ": malformed line: %s\n",
				p->trace, no, why);
			err = -EINVAL;
			goto out;
		}
		err = fn(p, &r);
		if (err)
			break;
	}
	if (!err && ferror(f))
		err = errno ? -errno : -EIO;	/* e.g. EISDIR */
	if (err == -ESTALE) {
		fprintf(stderr, "avfs-admin plot: %s changed while being read\n", p->trace);
	} else if (err) {
		fprintf(stderr, "avfs-admin plot: %s: %s\n", p->trace, strerror(-err));
	} else if (no == 0) {
		fprintf(stderr, "avfs-admin plot: %s: empty file, not a request trace\n", p->trace);
		err = -ENODATA;
	} else if (no == 1) {
		fprintf(stderr, "avfs-admin plot: %s: no requests (a header only)\n", p->trace);
		err = -ENODATA;
	}
out:
	free(line);
	fclose(f);
	return err;
}

/* ---- drawing ---- */

static double fx(const struct frame *f, double v)
{
	return f->x + (v - f->xlo) / (f->xhi - f->xlo) * f->w;
}

static double fy(const struct frame *f, double v)
{
	return f->y + f->h - (v - f->ylo) / (f->yhi - f->ylo) * f->h;
}

/* A round tick step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
static double nice_step(double span, int n)
{
	double raw = span / n, p, m;

	if (!(raw > 0))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static int decimals(double step)
{
	int d = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);

	return d > 6 ? 6 : d;
}

/* XML text: markup characters escaped, control bytes and invalid UTF-8 replaced by '?'. */
static void put_text(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		int n = *u < 0x80 ? 0 : (*u & 0xe0) == 0xc0 ? 1 : (*u & 0xf0) == 0xe0 ? 2 :
			(*u & 0xf8) == 0xf0 ? 3 : -1;
		int i;

		for (i = 1; n > 0 && i <= n && (u[i] & 0xc0) == 0x80; i++)
			;
		if (n < 0 || (n > 0 && i <= n) || (n == 0 && *u < 0x20)) {
			fputc('?', f);
			u++;
		} else if (n > 0) {
			fwrite(u, 1, (size_t)n + 1, f);
			u += n + 1;
		} else {
			switch (*u) {
			case '&': fputs("&amp;", f); break;
			case '<': fputs("&lt;", f); break;
			case '>': fputs("&gt;", f); break;
			case '"': fputs("&quot;", f); break;
			case '\'': fputs("&apos;", f); break;
			default: fputc(*u, f);
			}
			u++;
		}
	}
}

/* The frame, grid lines, ticks and their labels, and the axis titles. */
static void draw_axes(FILE *f, const struct frame *fr, const char *xlabel, const char *ylabel)
{
	double sx = nice_step(fr->xhi - fr->xlo, (int)(fr->w / 90) + 1);
	double sy = nice_step(fr->yhi - fr->ylo, (int)(fr->h / 45) + 1);
	int dx = decimals(sx), dy = decimals(sy);

	fprintf(f, "<g class=\"axes\" font-size=\"11\" fill=\"#333\">\n");
	for (double k = ceil(fr->xlo / sx - 1e-9); k * sx <= fr->xhi + sx * 1e-9; k++) {
		double x = fx(fr, k * sx);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n",
			x, fr->y, x, fr->y + fr->h, x, fr->y + fr->h, x, fr->y + fr->h + 5,
			x, fr->y + fr->h + 17, dx, k * sx + 0.0);
	}
	for (double k = ceil(fr->ylo / sy - 1e-9); k * sy <= fr->yhi + sy * 1e-9; k++) {
		double y = fy(fr, k * sy);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
			fr->x, y, fr->x + fr->w, y, fr->x - 5, y, fr->x, y, fr->x - 8, y + 4, dy,
			k * sy + 0.0);
	}
	fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"fill=\"none\" stroke=\"#333\"/>\n", fr->x, fr->y, fr->w, fr->h);
	fprintf(f, "<text class=\"xlabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
		"font-size=\"12\">%s</text>\n", fr->x + fr->w / 2, fr->y + fr->h + 34, xlabel);
	fprintf(f, "<text class=\"ylabel\" transform=\"translate(%.1f %.1f) rotate(-90)\" "
		"text-anchor=\"middle\" font-size=\"12\">%s</text>\n</g>\n", fr->x - 48,
		fr->y + fr->h / 2, ylabel);
}

static void panel_title(FILE *f, const struct frame *fr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void panel_title(FILE *f, const struct frame *fr, const char *fmt, ...)
{
	va_list ap;

	fprintf(f, "<text class=\"panel-title\" x=\"%.1f\" y=\"%.1f\" font-size=\"13\" "
		"font-weight=\"bold\">", fr->x, fr->y - 9);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputs("</text>\n", f);
}

/* The attribute naming a series: data-stream for a stream, data-class for a group. */
static void series_attr(FILE *f, const struct series *s)
{
	if (s->stream >= 0)
		fprintf(f, "data-stream=\"%" PRId64 "\"", s->stream);
	else
		fprintf(f, "data-class=\"%s\"", avfs_trace_class_names[s->cls]);
}

static void open_series(FILE *f, const struct series *s)
{
	fprintf(f, "<g class=\"%s\" ", s->stream >= 0 ? "series" : "others");
	series_attr(f, s);
}

/* Whether a series is in a panel's legend: all that have requests, except that the CDF shows
 * the groups of no stream only when they hold RT requests. */
static bool listed(const struct series *s, bool cdf)
{
	return s->n && (!cdf || s->stream >= 0 || s->rt);
}

/* The legend right of a plot area: one entry per listed series in order, as many as fit. */
static void draw_legend(FILE *f, const struct plot *p, const struct frame *fr, bool cdf,
			void (*text)(FILE *, const struct plot *, const struct series *))
{
	size_t shown = 0, total = 0, room = (size_t)(fr->h / LEGEND_ROW);
	double x = fr->x + fr->w + 14;

	for (size_t i = 0; i < p->ns; i++)
		total += listed(&p->s[i], cdf);
	fprintf(f, "<g class=\"legend\" font-size=\"11\">\n");
	for (size_t i = 0; i < p->ns; i++) {
		const struct series *s = &p->s[i];
		double y = fr->y + (double)shown * LEGEND_ROW;

		if (!listed(s, cdf))
			continue;
		if (shown + 1 == room && total > room) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">+%zu more</text>\n", x, y + 10,
				total - shown);
			break;
		}
		fprintf(f, "<g class=\"legend-entry\" ");
		series_attr(f, s);
		fprintf(f, "><rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%.1f\" y=\"%.1f\">", x, y + 1, s->colour, x + 17, y + 10);
		text(f, p, s);
		fprintf(f, "</text></g>\n");
		shown++;
	}
	fprintf(f, "</g>\n");
}

static void legend_name(FILE *f, const struct series *s)
{
	if (s->stream >= 0)
		fprintf(f, "stream %" PRId64, s->stream);
	else
		fputs(s->label, f);
}

static void legend_head(FILE *f, const struct plot *p, const struct series *s)
{
	(void)p;
	legend_name(f, s);
	fprintf(f, " (%" PRIu64 ")", s->n);
}

static void legend_cdf(FILE *f, const struct plot *p, const struct series *s)
{
	(void)p;
	legend_name(f, s);
	if (s->rt)
		fprintf(f, ": %" PRIu64 " RT, %" PRIu64 " missed", s->rt, s->misses);
	else
		fputs(": no RT", f);
}

/* Panel 1 draws best effort, metadata and unowned RT first, the streams over them and the
 * probe (the last of others[]) over everything. */
static size_t head_order(const struct plot *p, size_t o)
{
	if (o < NOTHERS - 1)
		return p->nids + o;
	if (o < NOTHERS - 1 + p->nids)
		return o - (NOTHERS - 1);
	return p->nids + NOTHERS - 1;
}

/* Panel 1: a mark over rows [a, r) of pixel column c, at least 2 px long. */
static void mark(FILE *f, const struct plot *p, int c, int a, int r)
{
	fprintf(f, "M%.1f %.1fV%.1f", p->head.x + c + 0.5, p->head.y + a - 0.5, p->head.y + r + 0.5);
}

/* Panel 1: marks on the pixels the head visited, per series; a grey line through them all. */
static void draw_head(FILE *f, const struct plot *p)
{
	const struct frame *fr = &p->head;
	size_t rowbytes = ((size_t)p->ph + 7) / 8;

	fprintf(f, "<g class=\"panel\" id=\"head\" data-panel=\"head\">\n");
	panel_title(f, fr, "Disk head position: request offset at completion (papers/004 §2.2.3)");
	draw_axes(f, fr, "time since the first request (s)", "offset (GB)");

	fprintf(f, "<g class=\"head-path\"><polyline fill=\"none\" stroke=\"#d0d0d0\" "
		"stroke-width=\"0.7\" points=\"");
	for (int c = 0; c < p->pw; c++) {
		const struct column *k = &p->col[c];
		float v[4] = { k->first, k->lo_first ? k->lo : k->hi, k->lo_first ? k->hi : k->lo,
			       k->last };
		double x = fr->x + c + 0.5, prev = NAN;

		if (!k->used)
			continue;
		for (int i = 0; i < 4; i++) {
			double y = fy(fr, v[i]);

			if (fabs(y - prev) >= 0.5)
				fprintf(f, "%.1f,%.1f ", x, y);
			prev = y;
		}
	}
	fprintf(f, "\"/></g>\n");

	for (size_t o = 0; o < p->ns; o++) {
		const struct series *s = &p->s[head_order(p, o)];

		if (!s->n)
			continue;
		open_series(f, s);
		/* marks a little bolder when few, and the probe's bolder still */
		fprintf(f, " data-requests=\"%" PRIu64 "\"><path fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"%d\" d=\"", s->n, s->colour,
			(p->lines < 5000 ? 3 : 2) + (s->stream < 0 && s->cls == AVFS_TRACE_HP));
		/* a vertical run of visited pixels in a column is one stroke */
		for (size_t i = 0, j; i < s->npts; i = j) {	/* a list, sorted by finish() */
			for (j = i + 1; j < s->npts && s->pts[j] == s->pts[j - 1] + 1 &&
			     s->pts[j] % (uint32_t)p->ph; j++)
				;
			mark(f, p, (int)(s->pts[i] / (uint32_t)p->ph), (int)(s->pts[i] % (uint32_t)p->ph),
			     (int)(s->pts[i] % (uint32_t)p->ph) + (int)(j - i));
		}
		for (int c = 0; s->cells && c < p->pw; c++) {
			const uint8_t *col = s->cells + (size_t)c * rowbytes;
			int r = 0, a;

			while (r < p->ph) {
				if (!col[r / 8]) {
					r = (r / 8 + 1) * 8;
					continue;
				}
				if (!(col[r / 8] & (1u << (r % 8)))) {
					r++;
					continue;
				}
				for (a = r; r < p->ph && (col[r / 8] & (1u << (r % 8))); r++)
					;
				mark(f, p, c, a, r);
			}
		}
		fprintf(f, "\"/></g>\n");
	}
	draw_legend(f, p, fr, false, legend_head);
	fprintf(f, "</g>\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Panel 2: per stream, the fraction of its RT requests completed with a margin <= x. */
static void draw_cdf(FILE *f, const struct plot *p)
{
	const struct frame *fr = &p->cdf;
	double m_ms = (double)p->margin_ns / 1e6;
	uint64_t rt = 0;

	for (size_t i = 0; i < p->ns; i++)
		rt += p->s[i].rt;
	fprintf(f, "<g class=\"panel\" id=\"margin\" data-panel=\"margin\">\n");
	panel_title(f, fr, "Completion margin CDF per stream: deadline - completion of RT requests "
		    "(papers/001 Fig. 3)");
	draw_axes(f, fr, "completion margin (ms)", "fraction of RT requests");
	if (!rt)
		fprintf(f, "<text class=\"note\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"fill=\"#666\">no RT requests in this trace</text>\n", fr->x + fr->w / 2,
			fr->y + fr->h / 2);
	if (fr->xlo < 0)
		fprintf(f, "<line class=\"zero-line\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#d62728\" stroke-width=\"1\"/>\n", fx(fr, 0), fr->y, fx(fr, 0),
			fr->y + fr->h);
	fprintf(f, "<g class=\"margin-line\" data-margin-ms=\"%g\"><line x1=\"%.1f\" y1=\"%.1f\" "
		"x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-width=\"1.2\" "
		"stroke-dasharray=\"6 4\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">m = %g ms"
		"</text></g>\n", m_ms, fx(fr, m_ms), fr->y, fx(fr, m_ms), fr->y + fr->h,
		fx(fr, m_ms) + 4, fr->y + 12, m_ms);

	for (size_t i = 0; i < p->ns; i++) {
		const struct series *s = &p->s[i];
		double lastx = NAN;

		/* every stream gets its group, one with no RT request an empty one */
		if (s->stream < 0 && !s->rt)
			continue;
		open_series(f, s);
		fprintf(f, " data-rt=\"%" PRIu64 "\" data-misses=\"%" PRIu64 "\">", s->rt, s->misses);
		if (!s->rt) {
			fprintf(f, "</g>\n");
			continue;
		}
		/* a step per distinct half-pixel of x: where the curve enters it and leaves it */
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%.1f,%.1f",
			s->colour, fx(fr, s->margin[0]), fy(fr, 0));
		for (size_t j = 0; j < s->rt; j++) {
			double x = round(fx(fr, s->margin[j]) * 2) / 2;

			if (x != lastx) {
				fprintf(f, " %.1f,%.1f", x, fy(fr, (double)j / (double)s->rt));
				lastx = x;
			}
			if (j + 1 == s->rt || round(fx(fr, s->margin[j + 1]) * 2) / 2 != x)
				fprintf(f, " %.1f,%.1f", x, fy(fr, (double)(j + 1) / (double)s->rt));
		}
		fprintf(f, "\"/></g>\n");
	}
	draw_legend(f, p, fr, true, legend_cdf);
	fprintf(f, "</g>\n");
}

static double bin_len(const struct plot *p, size_t b)
{
	double left = (double)(p->t1 - p->t0) - (double)b * (double)p->bin_ns;

	left = left < (double)p->bin_ns ? left : (double)p->bin_ns;
	return left > 0 ? left : 1;
}

static void legend_util(FILE *f, const struct plot *p, const struct series *s)
{
	legend_name(f, s);
	fprintf(f, " %.1f %%", 100 * s->busy_ns / (double)(p->t1 > p->t0 ? p->t1 - p->t0 : 1));
}

/* Whether bin b is in one of s's bands in panel 3: s was served in it or in a neighbour. */
static bool band(const struct series *s, size_t nbins, size_t b)
{
	return s->busy[b] > 0 || (b > 0 && s->busy[b - 1] > 0) || (b + 1 < nbins && s->busy[b + 1] > 0);
}

/* Panel 3: the edge of a band over bin b at busy_ns, a step or the bin's centre; back: right to
 * left. */
static void bin_edge(FILE *f, const struct plot *p, bool steps, size_t b, double busy_ns, bool back)
{
	const struct frame *fr = &p->util;
	double a = (double)b * (double)p->bin_ns, l = bin_len(p, b);
	double y = fy(fr, 100 * busy_ns / l), x0 = fx(fr, a / 1e9), x1 = fx(fr, (a + l) / 1e9);

	if (steps)
		fprintf(f, "%.1f,%.1f %.1f,%.1f ", back ? x1 : x0, y, back ? x0 : x1, y);
	else
		fprintf(f, "%.1f,%.1f ", (x0 + x1) / 2, y);
}

/* Panel 3: the time the disk served each series, per bin, stacked (streams at the bottom). */
static int draw_util(FILE *f, const struct plot *p, double span_ns, double busy_ns)
{
	const struct frame *fr = &p->util;
	double *cum = calloc(p->nbins, sizeof(*cum));	/* the series below, per bin */
	bool steps = p->nbins * 2 <= (size_t)fr->w;

	if (!cum)
		return -ENOMEM;

	fprintf(f, "<g class=\"panel\" id=\"util\" data-panel=\"util\">\n");
	panel_title(f, fr, "Disk utilization per %g s bin%s, one request at a time (mean %.1f %%)",
		    (double)p->bin_ns / 1e9, p->bin_ns != p->bin_asked_ns ? " (widened)" : "",
		    100 * busy_ns / span_ns);
	draw_axes(f, fr, "time since the first request (s)", "busy (% of the bin)");
	for (size_t o = 0; o < p->ns; o++) {
		const struct series *s = &p->s[o];

		if (!s->n)
			continue;
		open_series(f, s);
		fprintf(f, " data-busy=\"%.6f\">", s->busy_ns / span_ns);
		if (s->busy_ns <= 0) {
			fprintf(f, "</g>\n");
			continue;
		}
		fprintf(f, "<path fill=\"%s\" fill-opacity=\"0.85\" stroke=\"none\" d=\"",
			s->colour);
		/* One closed band per run of bins in which s was served, widened by a bin each
		 * side so that a lone bin still shows between bin centres: the upper edge left
		 * to right, then the lower edge back. Bins s never touched cost nothing, which
		 * matters for traces of thousands of short streams. */
		for (size_t b0 = 0, b1; b0 < p->nbins; b0 = b1 + 1) {
			while (b0 < p->nbins && !band(s, p->nbins, b0))
				b0++;
			if (b0 == p->nbins)
				break;
			for (b1 = b0; b1 + 1 < p->nbins && band(s, p->nbins, b1 + 1); b1++)
				;
			fputc('M', f);
			for (size_t b = b0; b <= b1; b++)
				bin_edge(f, p, steps, b, cum[b] + s->busy[b], false);
			for (size_t b = b1 + 1; b-- > b0;) {
				bin_edge(f, p, steps, b, cum[b], true);
				cum[b] += s->busy[b];
			}
			fputc('Z', f);
		}
		fprintf(f, "\"/></g>\n");
	}
	draw_legend(f, p, fr, false, legend_util);
	fprintf(f, "</g>\n");
	free(cum);
	return 0;
}

/* ---- the picture as a whole ---- */

/* Bins of bin_ns covering span_ns (at least one). */
static size_t bins(int64_t span_ns, int64_t bin_ns)
{
	size_t n = (size_t)(span_ns / bin_ns) + (span_ns % bin_ns != 0);

	return n ? n : 1;
}

/* After pass 1: the series, the panels' geometry and the bins. 0 or -ENOMEM. */
static int setup(struct plot *p)
{
	double left = 80, right = 250, top = 64;
	double panel = (p->height - top) / 3, span_s = (double)(p->t1 - p->t0) / 1e9, step;
	struct frame *fr[3] = { &p->head, &p->cdf, &p->util };
	int64_t span_ns = p->t1 - p->t0;
	double k;

	p->ns = p->nids + NOTHERS;
	p->s = calloc(p->ns, sizeof(*p->s));
	if (!p->s)
		return -ENOMEM;
	for (size_t i = 0; i < p->nids; i++)
		p->s[i] = (struct series){ .stream = p->ids[i], .colour = palette[i % NPALETTE] };
	for (size_t i = 0; i < NOTHERS; i++)
		p->s[p->nids + i] = (struct series){ .stream = -1, .cls = others[i].cls,
						     .colour = others[i].colour,
						     .label = others[i].label };

	for (int i = 0; i < 3; i++)
		*fr[i] = (struct frame){ .x = left, .y = floor(top + i * panel + 30),
					 .w = floor(p->width - left - right),
					 .h = floor(panel - 30 - 46) };
	if (span_s <= 0)
		span_s = 1e-3;
	p->head.xhi = p->util.xhi = span_s;
	step = nice_step(p->top_gb, 6);
	p->head.yhi = p->top_gb > 0 ? ceil(p->top_gb / step - 1e-9) * step : 1;
	p->util.yhi = 100;
	p->cdf.yhi = 1;
	p->pw = (int)p->head.w;
	p->ph = (int)p->head.h;
	p->col = calloc((size_t)p->pw, sizeof(*p->col));
	if (!p->col)
		return -ENOMEM;

	/* one point per bin and series is what the picture can hold; past that, wider bins */
	p->bin_asked_ns = p->bin_ns;
	p->nbins = bins(span_ns, p->bin_ns);
	k = ceil(fmax((double)p->nbins / MAX_BINS, (double)p->nbins * (double)p->ns / MAX_BIN_CELLS));
	if (k > 1) {
		double b = fmin(k * (double)p->bin_asked_ns, (double)span_ns);

		if (b > (double)p->bin_ns)
			p->bin_ns = (int64_t)b;
		p->nbins = bins(span_ns, p->bin_ns);
		fprintf(stderr, "avfs-admin plot: %g s bins would be too many for the picture; "
			"using %g s\n", (double)p->bin_asked_ns / 1e9, (double)p->bin_ns / 1e9);
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* After pass 2: the pixel lists and the margins sorted, and the CDF's x range (always showing 0 and m). */
static void finish(struct plot *p)
{
	double lo = 0, hi = (double)p->margin_ns / 1e6, step;

	for (size_t i = 0; i < p->ns; i++) {
		struct series *s = &p->s[i];
		size_t n = 0;

		if (s->npts)	/* a bitmap's series has no list */
			qsort(s->pts, s->npts, sizeof(*s->pts), cmp_u32);
		for (size_t j = 0; j < s->npts; j++)
			if (!n || s->pts[j] != s->pts[n - 1])
				s->pts[n++] = s->pts[j];
		s->npts = n;
		if (!s->rt)
			continue;
		qsort(s->margin, s->rt, sizeof(*s->margin), cmp_double);
		lo = s->margin[0] < lo ? s->margin[0] : lo;
		hi = s->margin[s->rt - 1] > hi ? s->margin[s->rt - 1] : hi;
	}
	if (hi <= lo)
		hi = lo + 1;
	step = nice_step(hi - lo, 8);
	p->cdf.xlo = floor(lo / step) * step;
	p->cdf.xhi = ceil(hi / step) * step;
	if (p->cdf.xhi <= hi)
		p->cdf.xhi += step;	/* keep the longest margin off the frame */
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

struct totals {
	uint64_t rt, misses, cls[AVFS_TRACE_NCLASS];
	double busy_ns, span_ns;
};

static void count(const struct plot *p, struct totals *t)
{
	*t = (struct totals){ .span_ns = p->t1 > p->t0 ? (double)(p->t1 - p->t0) : 1 };
	for (size_t i = 0; i < p->ns; i++) {
		const struct series *s = &p->s[i];

		t->rt += s->rt;
		t->misses += s->misses;
		t->busy_ns += s->busy_ns;
		if (s->stream < 0)
			t->cls[s->cls] += s->n;
		else
			t->cls[AVFS_TRACE_RT] += s->rt;
	}
}

/* The whole document. 0, or -errno (the caller checks the stream for write errors). */
static int render(FILE *f, const struct plot *p)
{
	const char *name = base_name(p->trace);
	struct totals t;

	count(p, &t);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\" "
		"font-size=\"12\">\n<title>", p->width, p->height, p->width, p->height);
	put_text(f, name);
	fprintf(f, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		"<text class=\"title\" x=\"%.1f\" y=\"26\" font-size=\"17\" font-weight=\"bold\">",
		p->head.x);
	put_text(f, name);
	fprintf(f, "</text>\n<text class=\"summary\" x=\"%.1f\" y=\"47\" data-requests=\"%" PRIu64
		"\" data-streams=\"%zu\" data-rt=\"%" PRIu64 "\" data-misses=\"%" PRIu64 "\" "
		"data-duration-s=\"%.3f\" data-utilization=\"%.4f\">%" PRIu64 " requests over %.1f s: "
		"%" PRIu64 " RT in %zu streams, %" PRIu64 " BE, %" PRIu64 " meta, %" PRIu64 " hp; "
		"deadline misses: %" PRIu64 " (P0 %.3g); disk busy %.1f %%</text>\n",
		p->head.x, p->lines, p->nids, t.rt, t.misses, t.span_ns / 1e9, t.busy_ns / t.span_ns,
		p->lines, t.span_ns / 1e9, t.rt, p->nids, t.cls[AVFS_TRACE_BE], t.cls[AVFS_TRACE_META],
		t.cls[AVFS_TRACE_HP], t.misses, t.rt ? (double)t.misses / (double)t.rt : 0.0,
		100 * t.busy_ns / t.span_ns);
	draw_head(f, p);
	draw_cdf(f, p);
	if (draw_util(f, p, t.span_ns, t.busy_ns))
		return -ENOMEM;
	fprintf(f, "</svg>\n");
	return 0;
}

/* The picture into a temporary file beside --out, renamed over it once complete, so --out is
 * either untouched or whole. 0 or -errno, said on stderr. */
static int write_svg(const struct plot *p)
{
	size_t len = strlen(p->out) + sizeof(".XXXXXX");
	char *tmp = malloc(len);
	const char *what = "cannot create";
	mode_t mask;
	FILE *f;
	int fd, err = 0;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, len, "%s.XXXXXX", p->out);
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	mask = umask(0);
	umask(mask);
	what = "cannot write";
	if (fchmod(fd, 0666 & ~mask) || !(f = fdopen(fd, "w"))) {
		err = -errno;
		close(fd);
		goto out_unlink;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	err = render(f, p);
	if (!err && (fflush(f) || ferror(f) || fsync(fileno(f))))
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (err)
		goto out_unlink;
	what = "cannot replace";
	if (rename(tmp, p->out)) {
		err = -errno;
		goto out_unlink;
	}
	goto out_free;

out_unlink:
	unlink(tmp);
out_free:
	if (err)
		fprintf(stderr, "avfs-admin plot: %s %s: %s\n", what, p->out, strerror(-err));
	free(tmp);
	return err;
}

static int parse_px(const char *s, int lo, int hi, int *out)
{
	uint64_t v;

	if (avfs_parse_uint(s, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int admin_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "margin", required_argument, NULL, 'm' },
		{ "bin", required_argument, NULL, 'b' },
		{ "width", required_argument, NULL, 'W' },
		{ "height", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct plot p = { .width = 1200, .height = 1100, .margin_ns = 500 * 1000000LL,
			  .bin_ns = 1000000000LL };
	struct stat st_trace, st_out;
	struct totals t;
	int c, ret = 1;

	optind = 0;	/* glibc: start afresh, whatever parsed argv before */
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			p.out = optarg;
			break;
		case 'm':
			if (avfs_parse_time(optarg, &p.margin_ns) ||
			    p.margin_ns > 3600 * 1000000000LL) {
				fprintf(stderr, "avfs-admin plot: --margin '%s': a time with a unit, "
					"0..3600s (e.g. 500ms)\n", optarg);
				return 2;
			}
			break;
		case 'b':
			if (avfs_parse_time(optarg, &p.bin_ns) || p.bin_ns < 1000000) {
				fprintf(stderr, "avfs-admin plot: --bin '%s': a time with a unit, at "
					"least 1ms (e.g. 1s)\n", optarg);
				return 2;
			}
			break;
		case 'W':
			if (parse_px(optarg, 600, 4000, &p.width)) {
				fprintf(stderr, "avfs-admin plot: --width '%s': 600..4000 px\n", optarg);
				return 2;
			}
			break;
		case 'H':
			if (parse_px(optarg, 500, 4000, &p.height)) {
				fprintf(stderr, "avfs-admin plot: --height '%s': 500..4000 px\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "try 'avfs-admin plot --help'\n");
			return 2;
		}
	}
	if (optind != argc - 1 || !p.out || !*p.out) {
		fprintf(stderr, "avfs-admin plot: %s\n", optind != argc - 1 ?
			"expected one TRACE" : "--out FILE.svg is required");
		fprintf(stderr, "try 'avfs-admin plot --help'\n");
		return 2;
	}
	p.trace = argv[optind];
	if (!stat(p.trace, &st_trace) && !stat(p.out, &st_out) && st_trace.st_dev == st_out.st_dev &&
	    st_trace.st_ino == st_out.st_ino) {
		fprintf(stderr, "avfs-admin plot: --out %s is the trace itself\n", p.out);
		return 2;
	}

	if (read_trace(&p, measure))
		goto out;
	if (setup(&p)) {
		fprintf(stderr, "avfs-admin plot: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (read_trace(&p, draw_rec))
		goto out;
	if (p.seen != p.lines) {
		fprintf(stderr, "avfs-admin plot: %s changed while being read\n", p.trace);
		goto out;
	}
	finish(&p);
	if (write_svg(&p))
		goto out;
	count(&p, &t);
	printf("%s: %" PRIu64 " requests, %zu stream%s, %" PRIu64 " RT, deadline misses: %" PRIu64
	       "\n", p.out, p.lines, p.nids, p.nids == 1 ? "" : "s", t.rt, t.misses);
	ret = 0;
out:
	for (size_t i = 0; p.s && i < p.ns; i++) {
		free(p.s[i].margin);
		free(p.s[i].cells);
		free(p.s[i].pts);
		free(p.s[i].busy);
	}
	free(p.s);
	free(p.col);
	free(p.ids);
	return ret;
}
