/*
 * scenario.c — scenario files (scenario.h, docs/SCENARIOS.md): the line parser, the keys of each
 * section with their units and ranges, the checks across keys, and the canonical printer. Every
 * value goes through util/units.h; scheduler settings through avfs_sched_conf_set, so that a
 * setting added to the scheduler's table is a scenario key at once. No I/O.
 */
#include "scenario.h"

#include "grow.h"
#include "hddmodel.h"
#include "units.h"
#include "why.h"
#include "zrr.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000.0
#define REASON_MAX 200
#define DEFAULT_DEPTH 8		/* a class's buffer when none is given: 8 requests (SPEC §12) */
#define ROUND_MAX_REQS 512	/* requests a round, at most */

static const char *const top_keys = "disk, size, fill, fill-rate, alloc, block-size, policy, "
				     "bw, predictor, duration, seed, hp-rate, read-ahead, read-ahead-start, "
				     "read-ahead-ramp and the scheduler settings (avfs-sim --help)";
static const char *const stream_keys = "count, direction, rate, io, buffer, round, reserved, "
					"reserve, best-effort, greedy, place";
static const char *const be_keys = "kind, count, io, rate, iops";
static const char *const kind_names[] = { "random", "sequential", "pictures", "copy", "delete" };
static const char *const bw_names[] = { "park", "at-once", "uncharged" };

const char *avfs_scn_be_kind_name(enum avfs_scn_be_kind k)
{
	return (unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[k] : "?";
}

const char *avfs_scn_bw_name(enum avfs_scn_bw bw)
{
	return (unsigned)bw < sizeof(bw_names) / sizeof(bw_names[0]) ? bw_names[bw] : "?";
}

void avfs_scenario_init(struct avfs_scenario *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->disk, sizeof(s->disk), "avfs-250g");
	s->fill = 0.8;
	s->fill_rate = 19.39e6 / 8;	/* ATSC HD, as avfs-sim's recordings */
	s->alloc = AVFS_ALLOC_ZRR_RUN;	/* as mkfs.avfs formats */
	s->block_shift = 22;
	snprintf(s->policy, sizeof(s->policy), "tm");
	avfs_sched_conf_default(&s->sched);
	s->bw = AVFS_SCN_BW_PARK;
	snprintf(s->predictor, sizeof(s->predictor), "model");
	s->duration_s = 3600;
	s->seed = 1;
	s->read_ahead = AVFS_SCN_UNSET;
	s->read_ahead_start = AVFS_SCN_UNSET;
	s->read_ahead_ramp_s = -1;
}

void avfs_scenario_free(struct avfs_scenario *s)
{
	free(s->streams);
	free(s->be);
	s->streams = NULL;
	s->be = NULL;
	s->nstreams = s->nbe = 0;
}

struct avfs_scn_stream *avfs_scenario_class(const struct avfs_scenario *s, const char *name)
{
	for (unsigned i = 0; i < s->nstreams; i++)
		if (!strcmp(s->streams[i].name, name))
			return &s->streams[i];
	return NULL;
}

struct avfs_scn_be *avfs_scenario_be(const struct avfs_scenario *s, const char *name)
{
	for (unsigned i = 0; i < s->nbe; i++)
		if (!strcmp(s->be[i].name, name))
			return &s->be[i];
	return NULL;
}

unsigned avfs_scn_per_round(const struct avfs_scn_stream *c)
{
	double n;

	if (c->round_ns <= 0 || !c->io)
		return 0;
	/* a whole number of requests; the tiny slack keeps 3 MiB/s x 1 s in 512 KiB requests at
	 * 6, not 7, when the product is a hair above the whole number in floating point */
	n = ceil(c->rate * (double)c->round_ns / NS / c->io - 1e-9);
	return n < 1 ? 1 : n > ROUND_MAX_REQS + 1 ? ROUND_MAX_REQS + 1 : (unsigned)n;
}

uint64_t avfs_scn_buffer(const struct avfs_scn_stream *c)
{
	if (c->round_ns > 0)	/* the round being consumed and the one being fetched */
		return 2ull * avfs_scn_per_round(c) * c->io;
	return c->buffer ? c->buffer : (uint64_t)DEFAULT_DEPTH * c->io;
}

uint32_t avfs_scn_be_io(const struct avfs_scn_be *g)
{
	if (g->io || g->kind == AVFS_SCN_BE_DELETE)
		return g->io;
	return g->kind == AVFS_SCN_BE_RANDOM ? 4096 : 1u << 20;
}

/* ---- values ---- */

static bool is_model(const char *v)
{
	for (const char *const *m = avfs_hdd_model_names(); *m; m++)
		if (!strcmp(*m, v))
			return true;
	return false;
}

static void model_list(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (const char *const *m = avfs_hdd_model_names(); *m && n < len; m++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", *m);
}

/* One value's reason for refusal goes into r (REASON_MAX). Each setter: 0 or -EINVAL. */
static int bad(char *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(char *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r, REASON_MAX, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int set_name(char *dst, const char *v, char *r)
{
	if (strlen(v) >= AVFS_SCN_NAME_MAX)
		return bad(r, "'%s': too long (at most %d characters)", v, AVFS_SCN_NAME_MAX - 1);
	snprintf(dst, AVFS_SCN_NAME_MAX, "%s", v);
	return 0;
}

static int set_count(unsigned *dst, const char *v, unsigned max, char *r)
{
	uint64_t n;

	if (avfs_parse_uint(v, &n) || n > max)
		return bad(r, "'%s': a whole number, 0 to %u", v, max);
	*dst = (unsigned)n;
	return 0;
}

static int set_number(double *dst, const char *v, double lo, double hi, char *r)
{
	double x;

	if (avfs_parse_number(v, &x) || x < lo || x > hi)
		return bad(r, "'%s': a number, %g to %g", v, lo, hi);
	*dst = x;
	return 0;
}

/* A rate says its unit ("19.39Mbit", "3MiB/s"): read as bits and as bytes, it must say the
 * same. 0 needs none. */
static int set_rate(double *dst, const char *v, char *r)
{
	double bits, bytes;

	if (avfs_parse_rate(v, true, &bits) || avfs_parse_rate(v, false, &bytes))
		return bad(r, "'%s': a rate with its unit, e.g. 19.39Mbit or 3MiB/s", v);
	if (bits != bytes && bits != 0)
		return bad(r, "'%s': say the unit: bits (19.39Mbit, 20Mbps) or bytes (3MiB/s, "
			   "2.5MB/s)", v);
	if (bytes > 1e12)
		return bad(r, "'%s': more than 1 TB/s", v);
	*dst = bytes;
	return 0;
}

static int set_size(uint64_t *dst, const char *v, uint64_t lo, uint64_t hi, uint64_t mult,
		    char *r)
{
	uint64_t b;

	if (avfs_parse_size(v, &b) || b < lo || b > hi || b % mult)
		return bad(r, "'%s': a size, %llu to %llu bytes%s (e.g. 512K, 4M)", v,
			   (unsigned long long)lo, (unsigned long long)hi,
			   mult == 4096 ? ", whole 4 KiB pages" : "");
	*dst = b;
	return 0;
}

static int set_io(uint32_t *dst, const char *v, char *r)
{
	uint64_t b = 0;	/* set_size sets it on success; gcc -O3 cannot tell (release build) */
	int err = set_size(&b, v, 4096, 16u << 20, 4096, r);

	if (!err)
		*dst = (uint32_t)b;
	return err;
}

static int set_time(int64_t *dst, const char *v, int64_t lo, int64_t hi, char *r)
{
	int64_t t;

	if (avfs_parse_time(v, &t) || t < lo || t > hi)
		return bad(r, "'%s': a time with its unit, %g to %g s (e.g. 1s, 500ms)", v,
			   (double)lo / NS, (double)hi / NS);
	*dst = t;
	return 0;
}

/* The engine's read-ahead sizes: up to 64M, 0 meaning `zero`. */
static int set_ahead(uint64_t *dst, const char *v, const char *zero, char *r)
{
	uint64_t b;

	if (avfs_parse_size(v, &b) || b > (64u << 20))
		return bad(r, "'%s': a size up to 64M (0: %s)", v, zero);
	*dst = b;
	return 0;
}

/* Seconds: a time with its unit, or a plain number of seconds (as avfs-sim --duration).
 * Seconds with the unit "s" are read as the number they are, as a plain number is, so that the
 * canonical form ("1.2333333333333334s") reads back as the same value (avfs_parse_time keeps
 * whole ns only). */
static int set_seconds(double *dst, const char *v, double lo, double hi, char *r)
{
	size_t n = strlen(v);
	char num[64];
	int64_t t;
	double x;

	if (n >= 2 && n < sizeof(num) && v[n - 1] == 's' && (isdigit((unsigned char)v[n - 2]) ||
							     v[n - 2] == '.')) {
		memcpy(num, v, n - 1);
		num[n - 1] = 0;
	} else {
		num[0] = 0;
	}
	if (!avfs_parse_number(num[0] ? num : v, &x))
		;
	else if (!avfs_parse_time(v, &t))
		x = (double)t / NS;
	else
		return bad(r, "'%s': seconds (3600, 3600s, 500ms)", v);
	if (!(x >= lo && x <= hi))
		return bad(r, "'%s': %g to %g s", v, lo, hi);
	*dst = x;
	return 0;
}

static int set_bool(bool *dst, const char *v, char *r)
{
	if (!strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "true"))
		*dst = true;
	else if (!strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "false"))
		*dst = false;
	else
		return bad(r, "'%s': yes or no", v);
	return 0;
}

/* One of names[0..n): its index into *dst. */
static int set_enum(int *dst, const char *v, const char *const *names, unsigned n, char *r)
{
	char list[160];
	size_t k = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(v, names[i])) {
			*dst = (int)i;
			return 0;
		}
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s", i ? ", " : "", names[i]);
		if (k >= sizeof(list))
			k = sizeof(list) - 1;
	}
	return bad(r, "'%s': one of %s", v, list);
}

/* ---- the keys of each section ---- */

static int top_key(struct avfs_scenario *s, const char *k, const char *v, char *r)
{
	char why[REASON_MAX];
	int x = 0, err;

	if (!strcmp(k, "disk")) {
		char list[160];

		if (is_model(v))
			return set_name(s->disk, v, r);
		model_list(list, sizeof(list));
		return bad(r, "'%s': unknown model (%s)", v, list);
	}
	if (!strcmp(k, "size")) {
		if (!strcmp(v, "0")) {
			s->size = 0;
			return 0;
		}
		return set_size(&s->size, v, 64u << 20, UINT64_MAX, 4096, r);
	}
	if (!strcmp(k, "fill"))
		return set_number(&s->fill, v, 0, 0.95, r);
	if (!strcmp(k, "fill-rate")) {
		err = set_rate(&s->fill_rate, v, r);
		if (!err && s->fill_rate <= 0)
			return bad(r, "'%s': more than 0", v);
		return err;
	}
	if (!strcmp(k, "alloc")) {
		x = avfs_alloc_policy_parse(v);
		if (x < 0)
			return bad(r, "'%s': one of zrr-run, zrr, contig", v);
		s->alloc = (unsigned)x;
		return 0;
	}
	if (!strcmp(k, "block-size")) {
		uint64_t b;

		if (avfs_parse_size(v, &b) || b < 65536 || b > (1ull << 32) || (b & (b - 1)))
			return bad(r, "'%s': a power of two, 64K to 4G", v);
		s->block_shift = (uint32_t)__builtin_ctzll(b);
		return 0;
	}
	if (!strcmp(k, "policy")) {
		if (!avfs_sched_lookup(v))
			return bad(r, "'%s': tm, fifo, cscan, edf or scan-edf", v);
		return set_name(s->policy, v, r);
	}
	if (!strcmp(k, "bw")) {
		err = set_enum(&x, v, bw_names, 3, r);
		if (!err)
			s->bw = (enum avfs_scn_bw)x;
		return err;
	}
	if (!strcmp(k, "predictor")) {
		if (strcmp(v, "model") && strcmp(v, "rotpred"))
			return bad(r, "'%s': model or rotpred", v);
		return set_name(s->predictor, v, r);
	}
	if (!strcmp(k, "duration"))
		return set_seconds(&s->duration_s, v, 1e-3, 1e6, r);
	if (!strcmp(k, "seed")) {
		if (avfs_parse_uint(v, &s->seed))
			return bad(r, "'%s': a whole number", v);
		return 0;
	}
	if (!strcmp(k, "hp-rate"))
		return set_number(&s->hp_rate, v, 0, 1000, r);
	if (!strcmp(k, "read-ahead"))
		return set_ahead(&s->read_ahead, v, "none", r);
	if (!strcmp(k, "read-ahead-start"))
		return set_ahead(&s->read_ahead_start, v, "all of read-ahead at once", r);
	if (!strcmp(k, "read-ahead-ramp")) {	/* 0 (any unit, as the canonical "0s"): off */
		if (set_seconds(&s->read_ahead_ramp_s, v, 0, 600, r))
			return -EINVAL;
		if (s->read_ahead_ramp_s > 0 && s->read_ahead_ramp_s < 0.01)
			return bad(r, "'%s': 0.01 to 600 s (0: off)", v);
		return 0;
	}
	/* a scheduler setting, through the scheduler's own table */
	err = avfs_sched_conf_set(&s->sched, k, v, why, sizeof(why));
	if (err == -ENOENT)
		return bad(r, "unknown key (the top of a file takes %s)", top_keys);
	if (err)
		return bad(r, "%s", why);
	if (strlen(k) >= AVFS_SCN_NAME_MAX || strlen(v) >= AVFS_SCN_NAME_MAX)
		return bad(r, "'%s': too long", v);
	/* the list in the order last given: a setting given again moves to its end */
	for (x = 0; x < (int)s->nset && strcmp(s->set[x].name, k); x++)
		;
	if (x < (int)s->nset) {
		memmove(&s->set[x], &s->set[x + 1], (s->nset - (unsigned)x - 1) * sizeof(s->set[0]));
		s->nset--;
	}
	if (s->nset == AVFS_SCN_SETTINGS)
		return bad(r, "more than %d scheduler settings", AVFS_SCN_SETTINGS);
	snprintf(s->set[s->nset].name, sizeof(s->set[0].name), "%s", k);
	snprintf(s->set[s->nset].value, sizeof(s->set[0].value), "%s", v);
	s->nset++;
	return 0;
}

static int stream_key(struct avfs_scn_stream *c, const char *k, const char *v, char *r)
{
	int x = 0, err;

	if (!strcmp(k, "count"))
		return set_count(&c->count, v, AVFS_SCN_STREAMS_MAX, r);
	if (!strcmp(k, "direction")) {
		static const char *const names[] = { "read", "write" };

		err = set_enum(&x, v, names, 2, r);
		if (!err)
			c->write = x == 1;
		return err;
	}
	if (!strcmp(k, "rate"))
		return set_rate(&c->rate, v, r);
	if (!strcmp(k, "io"))
		return set_io(&c->io, v, r);
	if (!strcmp(k, "buffer"))
		return set_size(&c->buffer, v, 1, 16ull << 30, 1, r);
	if (!strcmp(k, "round"))
		return set_time(&c->round_ns, v, 1000000, 60000000000ll, r);
	if (!strcmp(k, "reserved"))
		return set_bool(&c->reserved, v, r);
	if (!strcmp(k, "reserve"))
		return set_rate(&c->reserve, v, r);
	if (!strcmp(k, "best-effort"))
		return set_bool(&c->best_effort, v, r);
	if (!strcmp(k, "greedy"))
		return set_bool(&c->greedy, v, r);
	if (!strcmp(k, "place")) {
		if (!strcmp(v, "file")) {
			c->place = -1;
			return 0;
		}
		double place;

		if (avfs_parse_number(v, &place) || !(place < 1))
			return bad(r, "'%s': file, or a fraction of the disk from 0 up to (not "
				   "including) 1", v);
		c->place = place;
		return 0;
	}
	return bad(r, "unknown key (a [stream] section takes %s)", stream_keys);
}

static int be_key(struct avfs_scn_be *g, const char *k, const char *v, char *r)
{
	int x = 0, err;

	if (!strcmp(k, "kind")) {
		err = set_enum(&x, v, kind_names, sizeof(kind_names) / sizeof(kind_names[0]), r);
		if (!err)
			g->kind = (enum avfs_scn_be_kind)x;
		return err;
	}
	if (!strcmp(k, "count"))
		return set_count(&g->count, v, 1000, r);
	if (!strcmp(k, "io"))
		return set_io(&g->io, v, r);
	if (!strcmp(k, "rate"))
		return set_rate(&g->rate, v, r);
	if (!strcmp(k, "iops"))
		return set_number(&g->iops, v, 0, 1e6, r);
	return bad(r, "unknown key (a [be] section takes %s)", be_keys);
}

/* ---- where each key was set: for the messages of the checks across keys ---- */

struct seen {
	int sec;		/* -1: the top; else the section (classes first, then generators) */
	char key[AVFS_SCN_NAME_MAX];	/* "": the section's header */
	unsigned line;
};

struct ctx {
	const char *file;	/* NULL: keys set from the command line (no lines) */
	struct seen *seen;
	size_t nseen, cap;
	char *why;
	size_t whylen;
};

/* The line a key was set on (a defaulted key: its section's header; 0: unknown). */
static unsigned line_of(const struct ctx *c, int sec, const char *key)
{
	unsigned head = 0;

	for (size_t i = 0; i < c->nseen; i++) {
		if (c->seen[i].sec != sec)
			continue;
		if (!strcmp(c->seen[i].key, key))
			return c->seen[i].line;
		if (!c->seen[i].key[0])
			head = c->seen[i].line;
	}
	return head;
}

static int fail_at(const struct ctx *c, unsigned line, const char *section, const char *key,
		   const char *reason)
{
	if (c->file && line)
		avfs_why(c->why, c->whylen, "%s:%u: field '%s': %s", c->file, line, key, reason);
	else if (c->file)
		avfs_why(c->why, c->whylen, "%s: field '%s': %s", c->file, key, reason);
	else if (section)
		avfs_why(c->why, c->whylen, "field '%s.%s': %s", section, key, reason);
	else
		avfs_why(c->why, c->whylen, "field '%s': %s", key, reason);
	return -EINVAL;
}

/* A check across keys failed: blame key of section sec (-1 top) where it was set. */
static int fail(const struct ctx *c, const struct avfs_scenario *s, int sec, const char *key,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail(const struct ctx *c, const struct avfs_scenario *s, int sec, const char *key,
		const char *fmt, ...)
{
	char reason[REASON_MAX];
	const char *name = NULL;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (sec >= 0)
		name = (unsigned)sec < s->nstreams ? s->streams[sec].name :
		       s->be[(unsigned)sec - s->nstreams].name;
	return fail_at(c, line_of(c, sec, key), name, key, reason);
}

static void size_text(uint64_t b, char *buf, size_t len);

static int check_class(const struct ctx *c, const struct avfs_scenario *s, int sec)
{
	const struct avfs_scn_stream *k = &s->streams[sec];
	uint64_t bs = 1ull << s->block_shift, buffer;
	char t[32];

	if (bs % k->io) {
		size_text(k->io, t, sizeof(t));
		return fail(c, s, sec, "io", "%s does not divide the data block (block-size)", t);
	}
	if (!k->greedy && k->rate <= 0)
		return fail(c, s, sec, "rate", "missing: a class that is not greedy needs its rate");
	if (k->round_ns > 0) {
		if (k->buffer)
			return fail(c, s, sec, "round", "a class has a buffer or a round, not both");
		if (k->greedy)
			return fail(c, s, sec, "greedy", "a round class asks for a round's bytes "
				    "each round, a greedy one all it can: not both");
		if (avfs_scn_per_round(k) > ROUND_MAX_REQS)
			return fail(c, s, sec, "round", "more than %d requests a round (rate x "
				    "round / io)", ROUND_MAX_REQS);
	}
	buffer = avfs_scn_buffer(k);
	if (!k->round_ns && (buffer <= k->io || buffer / k->io > 1024)) {
		size_text(k->io, t, sizeof(t));
		return fail(c, s, sec, "buffer", "more than one request (io %s) and at most 1024 "
			    "of them", t);
	}
	if (k->reserve > 0 && !k->reserved)
		return fail(c, s, sec, "reserve", "only a reserved class reserves (reserved = yes)");
	if (k->reserved && k->best_effort)
		return fail(c, s, sec, "best-effort", "a reserved class is real time within its "
			    "reservation: not best effort");
	if (k->reserved && k->rate <= 0 && k->reserve <= 0)
		return fail(c, s, sec, "reserve", "a greedy reserved class needs the rate it "
			    "reserves (reserve, or rate)");
	if (k->greedy && !k->reserved && !k->best_effort)
		return fail(c, s, sec, "greedy", "a greedy class without a reservation has no "
			    "deadlines: say best-effort = yes");
	return 0;
}

static int check_be(const struct ctx *c, const struct avfs_scenario *s, int sec)
{
	const struct avfs_scn_be *g = &s->be[sec];
	int at = (int)s->nstreams + sec;
	uint32_t io = avfs_scn_be_io(g);

	if (g->kind == AVFS_SCN_BE_DELETE) {
		if (g->io)
			return fail(c, s, at, "io", "a delete generator moves no data");
		if (g->rate > 0 || g->iops > 0)
			return fail(c, s, at, g->rate > 0 ? "rate" : "iops", "a delete generator "
				    "deletes its count of recordings, spread over the run: no cap");
		return 0;
	}
	if (g->kind != AVFS_SCN_BE_PICTURES && io > (1ull << s->block_shift))
		return fail(c, s, at, "io", "more than the data block (block-size)");
	return 0;
}

/* A predictor that predicts nothing: the stand-in for the disk's own (scenario settings are
 * checked without a disk; whoever runs the scenario brings its disk's predictor). */
static int no_predictor(void *ctx, int64_t now, uint64_t off, int64_t *seek_ns, int64_t *rot_ns,
			int64_t *half_seek_ns, uint64_t *mid_off)
{
	(void)ctx, (void)now, (void)off, (void)seek_ns, (void)rot_ns, (void)half_seek_ns;
	(void)mid_off;
	return -ENOTSUP;
}

/* The checks across keys, once the whole file (or a change) is in. */
static int check_all(const struct ctx *c, const struct avfs_scenario *s)
{
	struct avfs_sched_conf k = s->sched;
	char why[REASON_MAX];
	unsigned total = 0;
	int err;

	if (!s->nstreams && !s->nbe && s->hp_rate <= 0) {
		avfs_why(c->why, c->whylen, "%s: nothing to run: no [stream NAME] or [be NAME] "
			 "section and no hp-rate", c->file ? c->file : "scenario");
		return -EINVAL;
	}
	if (!k.pred.predict)
		k.pred.predict = no_predictor;
	err = avfs_sched_conf_check(&k, why, sizeof(why));
	if (err)	/* blame the setting that made the set inconsistent: the last given */
		return fail(c, s, -1, s->nset ? s->set[s->nset - 1].name : "margin", "%s", why);
	for (unsigned i = 0; i < s->nstreams; i++) {
		err = check_class(c, s, (int)i);
		if (err)
			return err;
		total += s->streams[i].count;
		if (total > AVFS_SCN_STREAMS_MAX)
			return fail(c, s, (int)i, "count", "more than %d streams in all",
				    AVFS_SCN_STREAMS_MAX);
	}
	for (unsigned i = 0; i < s->nbe; i++) {
		err = check_be(c, s, (int)i);
		if (err)
			return err;
	}
	return 0;
}

/* ---- the parser ---- */

static char *trim(char *p)
{
	char *e = p + strlen(p);

	while (isspace((unsigned char)*p))
		p++;
	while (e > p && isspace((unsigned char)e[-1]))
		*--e = 0;
	return p;
}

static bool is_name(const char *p, bool dash_dot)
{
	if (!*p)
		return false;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && !(dash_dot && *p == '.'))
			return false;
	return true;
}

static int remember(struct ctx *c, int sec, const char *key, unsigned line)
{
	struct seen *v = avfs_grow(c->seen, &c->cap, c->nseen, sizeof(*v), 64);

	if (!v)
		return -ENOMEM;
	c->seen = v;
	v[c->nseen].sec = sec;
	snprintf(v[c->nseen].key, sizeof(v[c->nseen].key), "%s", key);
	v[c->nseen++].line = line;
	return 0;
}

/* "[stream NAME]" or "[be NAME]": a new section at the end of s. */
static int section(struct ctx *c, struct avfs_scenario *s, char *p, unsigned line, int *sec)
{
	char text[80], *kind, *name;
	size_t cap;

	snprintf(text, sizeof(text), "%s", p);	/* as written, for the messages */
	kind = trim(p + 1);
	*strrchr(kind, ']') = 0;
	kind = trim(kind);
	name = kind + strcspn(kind, " \t");
	if (*name)
		*name++ = 0;
	name = trim(name);
	if (strcmp(kind, "stream") && strcmp(kind, "be")) {
		avfs_why(c->why, c->whylen, "%s:%u: section '%s': a section is [stream NAME] or "
			 "[be NAME]", c->file, line, text);
		return -EINVAL;
	}
	if (!is_name(name, false) || strlen(name) >= AVFS_SCN_NAME_MAX) {
		avfs_why(c->why, c->whylen, "%s:%u: section '%s': a name of letters, digits, '-' "
			 "and '_', at most %d of them", c->file, line, text, AVFS_SCN_NAME_MAX - 1);
		return -EINVAL;
	}
	if (avfs_scenario_class(s, name) || avfs_scenario_be(s, name)) {
		unsigned first = 0;

		for (size_t i = 0; i < c->nseen; i++)
			if (!c->seen[i].key[0] && c->seen[i].sec >= 0) {
				const char *n = (unsigned)c->seen[i].sec < s->nstreams ?
					s->streams[c->seen[i].sec].name :
					s->be[(unsigned)c->seen[i].sec - s->nstreams].name;

				if (!strcmp(n, name))
					first = c->seen[i].line;
			}
		avfs_why(c->why, c->whylen, "%s:%u: section '[%s %s]': the name is taken (line %u)",
			 c->file, line, kind, name, first);
		return -EINVAL;
	}
	if (!strcmp(kind, "stream")) {
		struct avfs_scn_stream *v;

		if (s->nbe) {	/* the sections' indexes: classes first, then generators */
			avfs_why(c->why, c->whylen, "%s:%u: section '[stream %s]': [stream] sections "
				 "come before the [be] sections", c->file, line, name);
			return -EINVAL;
		}
		cap = s->nstreams;
		v = avfs_grow(s->streams, &cap, s->nstreams, sizeof(*v), 4);
		if (!v)
			return -ENOMEM;
		s->streams = v;
		v = &s->streams[s->nstreams];
		memset(v, 0, sizeof(*v));
		snprintf(v->name, sizeof(v->name), "%s", name);
		v->count = 1;
		v->io = 512 << 10;
		v->place = -1;
		*sec = (int)s->nstreams++;
	} else {
		struct avfs_scn_be *v;

		cap = s->nbe;
		v = avfs_grow(s->be, &cap, s->nbe, sizeof(*v), 4);
		if (!v)
			return -ENOMEM;
		s->be = v;
		v = &s->be[s->nbe];
		memset(v, 0, sizeof(*v));
		snprintf(v->name, sizeof(v->name), "%s", name);
		v->kind = AVFS_SCN_BE_RANDOM;	/* (the file must say it: parse_lines) */
		v->count = 1;
		*sec = (int)(s->nstreams + s->nbe++);
	}
	return remember(c, *sec, "", line);
}

/* key = value of section sec (-1: the top) */
static int key_value(struct avfs_scenario *s, int sec, const char *k, const char *v, char *r)
{
	if (sec < 0)
		return top_key(s, k, v, r);
	if ((unsigned)sec < s->nstreams)
		return stream_key(&s->streams[sec], k, v, r);
	return be_key(&s->be[(unsigned)sec - s->nstreams], k, v, r);
}

static int parse_lines(struct ctx *c, struct avfs_scenario *s, char *text)
{
	char reason[REASON_MAX];
	unsigned line = 0;
	int sec = -1, err;

	for (char *p = text, *next; p; p = next) {
		char *eq, *k, *v, *hash;
		unsigned first;

		line++;
		next = strchr(p, '\n');
		if (next)
			*next++ = 0;
		hash = strchr(p, '#');
		if (hash)
			*hash = 0;
		p = trim(p);
		if (!*p)
			continue;
		if (*p == '[') {
			if (p[strlen(p) - 1] != ']') {
				avfs_why(c->why, c->whylen, "%s:%u: '%s': a section header ends "
					 "with ']'", c->file, line, p);
				return -EINVAL;
			}
			err = section(c, s, p, line, &sec);
			if (err)
				return err;
			continue;
		}
		eq = strchr(p, '=');
		if (!eq) {
			avfs_why(c->why, c->whylen, "%s:%u: '%s': not 'key = value' nor a [stream "
				 "NAME] or [be NAME] section", c->file, line, p);
			return -EINVAL;
		}
		*eq = 0;
		k = trim(p);
		v = trim(eq + 1);
		if (!is_name(k, false) || strlen(k) >= AVFS_SCN_NAME_MAX) {
			avfs_why(c->why, c->whylen, "%s:%u: field '%s': not a key (letters, digits, "
				 "'-')", c->file, line, k);
			return -EINVAL;
		}
		if (!*v)
			return fail_at(c, line, NULL, k, "no value");
		first = 0;
		for (size_t i = 0; i < c->nseen; i++)
			if (c->seen[i].sec == sec && !strcmp(c->seen[i].key, k))
				first = c->seen[i].line;
		if (first) {
			snprintf(reason, sizeof(reason), "set twice (first on line %u)", first);
			return fail_at(c, line, NULL, k, reason);
		}
		err = key_value(s, sec, k, v, reason);
		if (err)
			return fail_at(c, line, NULL, k, reason);
		err = remember(c, sec, k, line);
		if (err)
			return err;
	}
	for (unsigned i = 0; i < s->nbe; i++)	/* (a defaulted key's line is its header's) */
		if (line_of(c, (int)(s->nstreams + i), "kind") ==
		    line_of(c, (int)(s->nstreams + i), ""))
			return fail(c, s, (int)(s->nstreams + i), "kind", "missing: random, "
				    "sequential, pictures, copy or delete");
	return check_all(c, s);
}

int avfs_scenario_parse(const char *file, const char *text, size_t len,
			struct avfs_scenario *out, char *why, size_t whylen)
{
	struct ctx c = { .file = file ? file : "scenario", .why = why, .whylen = whylen };
	struct avfs_scenario s;
	char *buf;
	int err;

	if (memchr(text, 0, len)) {
		avfs_why(why, whylen, "%s: a NUL byte: not a text file", c.file);
		return -EINVAL;
	}
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, text, len);
	buf[len] = 0;
	avfs_scenario_init(&s);
	err = parse_lines(&c, &s, buf);
	free(buf);
	free(c.seen);
	if (err) {
		if (err == -ENOMEM)
			avfs_why(why, whylen, "%s: out of memory", c.file);
		avfs_scenario_free(&s);
		return err;
	}
	*out = s;
	return 0;
}

/* ---- changes ---- */

static int copy(struct avfs_scenario *dst, const struct avfs_scenario *src)
{
	*dst = *src;
	dst->streams = NULL;
	dst->be = NULL;
	if (src->nstreams) {
		dst->streams = malloc(src->nstreams * sizeof(*dst->streams));
		if (!dst->streams)
			return -ENOMEM;
		memcpy(dst->streams, src->streams, src->nstreams * sizeof(*dst->streams));
	}
	if (src->nbe) {
		dst->be = malloc(src->nbe * sizeof(*dst->be));
		if (!dst->be) {
			free(dst->streams);
			return -ENOMEM;
		}
		memcpy(dst->be, src->be, src->nbe * sizeof(*dst->be));
	}
	return 0;
}

int avfs_scenario_set(struct avfs_scenario *s, const char *key, const char *value, char *why,
		      size_t whylen)
{
	char reason[REASON_MAX], sec_name[AVFS_SCN_NAME_MAX];
	const char *dot = strchr(key, '.'), *k = dot ? dot + 1 : key;
	struct avfs_scenario t;
	int sec = -1, err;

	if (dot) {
		if ((size_t)(dot - key) >= sizeof(sec_name)) {
			avfs_why(why, whylen, "field '%s': no such section", key);
			return -EINVAL;
		}
		memcpy(sec_name, key, (size_t)(dot - key));
		sec_name[dot - key] = 0;
		for (unsigned i = 0; i < s->nstreams; i++)
			if (!strcmp(s->streams[i].name, sec_name))
				sec = (int)i;
		for (unsigned i = 0; i < s->nbe; i++)
			if (!strcmp(s->be[i].name, sec_name))
				sec = (int)(s->nstreams + i);
		if (sec < 0) {
			avfs_why(why, whylen, "field '%s': no [stream %s] or [be %s] section", key,
				 sec_name, sec_name);
			return -EINVAL;
		}
	}
	err = copy(&t, s);
	if (err)
		return err;
	err = key_value(&t, sec, k, value, reason);
	if (err) {
		avfs_why(why, whylen, "field '%s': %s", key, reason);
		avfs_scenario_free(&t);
		return err;
	}
	avfs_scenario_free(s);
	*s = t;
	return 0;
}

int avfs_scenario_check(const struct avfs_scenario *s, char *why, size_t whylen)
{
	struct ctx c = { .why = why, .whylen = whylen };

	return check_all(&c, s);
}

/* ---- canonical form ---- */

struct out {
	char *buf;
	size_t len, n;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(o->n < o->len ? o->buf + o->n : NULL, o->n < o->len ? o->len - o->n : 0,
		      fmt, ap);
	va_end(ap);
	if (k > 0)
		o->n += (size_t)k;
}

/* The shortest text of v that reads back as v ("0.8", "3600"): %g's, or %f's where %g would
 * take an exponent. */
static void num_text(double v, char *buf, size_t len)
{
	double back;
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (!avfs_parse_number(buf, &back) && back == v)
			break;
	}
	if (!strchr(buf, 'e'))
		return;
	for (prec = 0; prec <= 9; prec++) {
		char f[48];

		snprintf(f, sizeof(f), "%.*f", prec, v);
		if (!avfs_parse_number(f, &back) && back == v && strlen(f) < len) {
			snprintf(buf, len, "%s", f);
			return;
		}
	}
}

static void size_text(uint64_t b, char *buf, size_t len)
{
	static const char unit[] = "KMGT";
	int u = -1;

	while (u < 3 && b && b % (1024ull << (10 * (u + 1))) == 0)
		u++;
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)b);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)(b >> (10 * (u + 1))), unit[u]);
}

static void time_text(int64_t ns, char *buf, size_t len)
{
	static const struct {
		int64_t ns;
		const char *unit;
	} u[] = { { 1000000000, "s" }, { 1000000, "ms" }, { 1000, "us" }, { 1, "ns" } };

	if (!ns) {
		snprintf(buf, len, "0");
		return;
	}
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		if (ns % u[i].ns == 0) {
			snprintf(buf, len, "%lld%s", (long long)(ns / u[i].ns), u[i].unit);
			return;
		}
}

/* A rate as a person writes it, that reads back as exactly the same bytes/s: binary bytes
 * (3MiB/s), decimal bits (19.39Mbit), decimal bytes, else plain bytes/s. */
static void rate_text(double v, char *buf, size_t len)
{
	static const struct {
		double unit;
		const char *fmt;
	} form[] = {
		{ 1048576, "%.*gMiB/s" }, { 1024, "%.*gKiB/s" }, { 1073741824, "%.*gGiB/s" },
		{ 125000, "%.*gMbit" }, { 125, "%.*gKbit" }, { 125000000, "%.*gGbit" },
		{ 1e6, "%.*gMB/s" }, { 1e3, "%.*gKB/s" }, { 1, "%.*gB/s" },
	};
	double back;

	if (v == 0) {
		snprintf(buf, len, "0");
		return;
	}
	for (int prec = 1; prec <= 6; prec++)
		for (size_t i = 0; i < sizeof(form) / sizeof(form[0]); i++) {
			snprintf(buf, len, form[i].fmt, prec, v / form[i].unit);
			if (!avfs_parse_rate(buf, false, &back) && back == v)
				return;
		}
	snprintf(buf, len, "%.17gB/s", v);
}

size_t avfs_scenario_format(const struct avfs_scenario *s, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };
	char a[48];

	if (len)
		buf[0] = 0;
	put(&o, "# canonical form: every key, defaults written out (docs/SCENARIOS.md)\n");
	put(&o, "disk = %s\n", s->disk);
	size_text(s->size, a, sizeof(a));
	put(&o, "size = %s\n", a);
	num_text(s->fill, a, sizeof(a));
	put(&o, "fill = %s\n", a);
	rate_text(s->fill_rate, a, sizeof(a));
	put(&o, "fill-rate = %s\n", a);
	put(&o, "alloc = %s\n", avfs_alloc_policy_name(s->alloc));
	size_text(1ull << s->block_shift, a, sizeof(a));
	put(&o, "block-size = %s\n", a);
	put(&o, "policy = %s\n", s->policy);
	for (unsigned i = 0; i < s->nset; i++)
		put(&o, "%s = %s\n", s->set[i].name, s->set[i].value);
	put(&o, "bw = %s\n", avfs_scn_bw_name(s->bw));
	put(&o, "predictor = %s\n", s->predictor);
	num_text(s->duration_s, a, sizeof(a));
	put(&o, "duration = %ss\n", a);
	put(&o, "seed = %llu\n", (unsigned long long)s->seed);
	num_text(s->hp_rate, a, sizeof(a));
	put(&o, "hp-rate = %s\n", a);
	if (s->read_ahead != AVFS_SCN_UNSET) {
		size_text(s->read_ahead, a, sizeof(a));
		put(&o, "read-ahead = %s\n", a);
	}
	if (s->read_ahead_start != AVFS_SCN_UNSET) {
		size_text(s->read_ahead_start, a, sizeof(a));
		put(&o, "read-ahead-start = %s\n", a);
	}
	if (s->read_ahead_ramp_s >= 0) {
		num_text(s->read_ahead_ramp_s, a, sizeof(a));
		put(&o, "read-ahead-ramp = %ss\n", a);
	}
	for (unsigned i = 0; i < s->nstreams; i++) {
		const struct avfs_scn_stream *c = &s->streams[i];

		put(&o, "\n[stream %s]\ncount = %u\ndirection = %s\n", c->name, c->count,
		    c->write ? "write" : "read");
		rate_text(c->rate, a, sizeof(a));
		put(&o, "rate = %s\n", a);
		size_text(c->io, a, sizeof(a));
		put(&o, "io = %s\n", a);
		if (c->round_ns > 0) {
			time_text(c->round_ns, a, sizeof(a));
			put(&o, "round = %s\n", a);
		} else {
			size_text(avfs_scn_buffer(c), a, sizeof(a));
			put(&o, "buffer = %s\n", a);
		}
		put(&o, "reserved = %s\n", c->reserved ? "yes" : "no");
		if (c->reserved) {
			rate_text(c->reserve > 0 ? c->reserve : c->rate, a, sizeof(a));
			put(&o, "reserve = %s\n", a);
		} else {
			put(&o, "best-effort = %s\n", c->best_effort ? "yes" : "no");
		}
		put(&o, "greedy = %s\n", c->greedy ? "yes" : "no");
		if (c->place < 0) {
			put(&o, "place = file\n");
		} else {
			num_text(c->place, a, sizeof(a));
			put(&o, "place = %s\n", a);
		}
	}
	for (unsigned i = 0; i < s->nbe; i++) {
		const struct avfs_scn_be *g = &s->be[i];

		put(&o, "\n[be %s]\nkind = %s\ncount = %u\n", g->name, avfs_scn_be_kind_name(g->kind),
		    g->count);
		if (g->kind == AVFS_SCN_BE_DELETE)
			continue;
		size_text(avfs_scn_be_io(g), a, sizeof(a));
		put(&o, "io = %s\n", a);
		rate_text(g->rate, a, sizeof(a));
		put(&o, "rate = %s\n", a);
		num_text(g->iops, a, sizeof(a));
		put(&o, "iops = %s\n", a);
	}
	return o.n;
}
