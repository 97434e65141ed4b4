/*
 * sim_scenario.c — avfs-sim run FILE and search FILE --grow CLASS (sim_scenario.h): the file
 * read and parsed (sim/scenario.c), the command line's overrides applied as keys of the file,
 * the scenario expanded into a run's options (sim/workload.c) and run (sim/simrun.c), and the
 * figures printed per class of streams and per best-effort generator, as a table or as JSON.
 */
#include "sim_scenario.h"

#include "jsonout.h"
#include "scenario.h"
#include "sim_report.h"
#include "simrun.h"
#include "units.h"
#include "workload.h"
#include "zrr.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB 1048576.0
#define FILE_MAX (1u << 20)	/* a scenario file is a few lines */

static void usage(FILE *f, bool search)
{
	if (search)
		fprintf(f, "usage: avfs-sim search FILE --grow CLASS [--from N] [--max N] [options]\n");
	else
		fprintf(f, "usage: avfs-sim run FILE [--print] [--trace FILE.csv] [options]\n");
	fprintf(f,
		"\n"
		"FILE is a scenario (docs/SCENARIOS.md). Options override its keys:\n"
		"  --duration S --seed N --policy P --disk M --fill F   the keys of the same names\n"
		"  --set KEY=VALUE       any top-level key or scheduler setting (margin=100ms)\n"
		"  --set CLASS.KEY=VALUE a key of a [stream] or [be] section (hd.count=12)\n"
		"  --json                machine-readable output\n");
	if (search)
		fprintf(f,
			"  --grow CLASS          the [stream] class that grows, one stream a run, from\n"
			"                        --from (default 1) to --max (default 64); the others stay\n"
			"                        as the file says. Two runs with a miss in a row end it; the\n"
			"                        answer is the largest count with no miss and no overdue\n"
			"                        request in any class\n");
	else
		fprintf(f,
			"  --print               print the scenario in canonical form (after the\n"
			"                        overrides) and run nothing\n"
			"  --trace FILE          every request as CSV (docs/TRACE.md)\n");
}

struct scli {
	const char *file;
	struct avfs_scenario s;
	bool json, print, search;
	const char *trace;
	const char *grow;
	unsigned from, max;
};

/* Read FILE whole and parse it. 0, or the exit code after a message. */
static int load(struct scli *c)
{
	char why[512] = "", *text;
	FILE *f = fopen(c->file, "r");
	size_t n;
	int err;

	if (!f) {
		fprintf(stderr, "avfs-sim: %s: %s\n", c->file, strerror(errno));
		return 2;
	}
	text = malloc(FILE_MAX + 1);
	if (!text) {
		fclose(f);
		return 1;
	}
	n = fread(text, 1, FILE_MAX + 1, f);
	err = ferror(f) ? -EIO : n > FILE_MAX ? -EFBIG : 0;
	fclose(f);
	if (err) {
		fprintf(stderr, "avfs-sim: %s: %s\n", c->file,
			err == -EFBIG ? "more than 1 MiB: not a scenario" : strerror(EIO));
		free(text);
		return 2;
	}
	err = avfs_scenario_parse(c->file, text, n, &c->s, why, sizeof(why));
	free(text);
	if (err) {
		fprintf(stderr, "avfs-sim: %s\n", why[0] ? why : strerror(-err));
		return err == -EINVAL ? 2 : 1;
	}
	return 0;
}

/* The command line: the file, then its overrides in the order given. 0 to go on, 1 (help
 * printed) or 2 (bad input, said). */
static int parse(int argc, char **argv, struct scli *c)
{
	static const struct option opts[] = {
		{ "duration", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "disk", required_argument, NULL, 'd' },
		{ "fill", required_argument, NULL, 'f' },
		{ "set", required_argument, NULL, 'x' },
		{ "json", no_argument, NULL, 'j' },
		{ "print", no_argument, NULL, 'P' },
		{ "trace", required_argument, NULL, 'T' },
		{ "grow", required_argument, NULL, 'g' },
		{ "from", required_argument, NULL, 'F' },
		{ "max", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct { const char *key; const char *value; } set[256];
	unsigned nset = 0;
	double v;
	int ch, err;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *key = NULL, *value = optarg;
		static char keys[256][AVFS_SCN_NAME_MAX * 2 + 2];

		switch (ch) {
		case 't': key = "duration"; break;
		case 's': key = "seed"; break;
		case 'p': key = "policy"; break;
		case 'd': key = "disk"; break;
		case 'f': key = "fill"; break;
		case 'x': {
			const char *eq = strchr(optarg, '=');

			if (!eq || eq == optarg || (size_t)(eq - optarg) >= sizeof(keys[0])) {
				fprintf(stderr, "avfs-sim: --set '%s': KEY=VALUE or CLASS.KEY=VALUE\n",
					optarg);
				return 2;
			}
			if (nset == sizeof(set) / sizeof(set[0]))
				break;
			memcpy(keys[nset], optarg, (size_t)(eq - optarg));
			keys[nset][eq - optarg] = 0;
			key = keys[nset];
			value = eq + 1;
			break;
		}
		case 'j': c->json = true; break;
		case 'P':
			if (c->search)
				goto usage;
			c->print = true;
			break;
		case 'T':
			if (c->search)
				goto usage;
			c->trace = optarg;
			break;
		case 'g':
			if (!c->search)
				goto usage;
			c->grow = optarg;
			break;
		case 'F':
		case 'M':
			if (!c->search || avfs_parse_scaled(optarg, 1000, &v) || v < 0 ||
			    v > AVFS_SCN_STREAMS_MAX || v != floor(v)) {
				fprintf(stderr, "avfs-sim: --%s '%s': a count, 0 to %d\n",
					ch == 'F' ? "from" : "max", optarg, AVFS_SCN_STREAMS_MAX);
				return 2;
			}
			*(ch == 'F' ? &c->from : &c->max) = (unsigned)v;
			break;
		case 'h': usage(stdout, c->search); return 1;
		default:
			goto usage;
		}
		if (key && nset < sizeof(set) / sizeof(set[0]))
			set[nset++] = (typeof(set[0])){ key, value };
	}
	if (optind != argc - 1) {
		fprintf(stderr, "avfs-sim: %s\n", optind == argc ? "say the scenario FILE" :
			"one scenario FILE at a time");
		goto usage;
	}
	c->file = argv[optind];
	err = load(c);
	if (err)
		return err;
	for (unsigned i = 0; i <= nset; i++) {	/* every override, then the checks across keys */
		char why[512] = "";

		err = i < nset ? avfs_scenario_set(&c->s, set[i].key, set[i].value, why, sizeof(why)) :
		      avfs_scenario_check(&c->s, why, sizeof(why));
		if (err) {
			if (i < nset)
				fprintf(stderr, "avfs-sim: %s: --set %s=%s: %s\n", c->file, set[i].key,
					set[i].value, why[0] ? why : strerror(-err));
			else
				fprintf(stderr, "avfs-sim: %s with the options: %s\n", c->file, why);
			avfs_scenario_free(&c->s);
			return 2;
		}
	}
	return 0;
usage:
	usage(stderr, c->search);
	return 2;
}

/* ---- figures ---- */

static double qos_ms(const struct avfs_qos *q, double quantile)
{
	return q->requests ? avfs_qos_margin_quantile(q, quantile) / 1e6 : 0;
}

static double margin_min_ms(const struct avfs_qos *q)
{
	return q->requests > q->failed ? (double)q->margin_min_ns / 1e6 : 0;
}

/* What a class asks for, bytes/s (-1: greedy, as much as it can). */
static double asked(const struct avfs_scn_stream *k)
{
	return k->greedy ? -1 : k->rate * k->count;
}

static void deadline_text(const struct avfs_scn_stream *k, char *buf, size_t len)
{
	if (!k->reserved && k->best_effort)
		snprintf(buf, len, "none");
	else if (k->round_ns > 0)
		snprintf(buf, len, "round %gs", (double)k->round_ns / 1e9);
	else if (k->reserved)
		snprintf(buf, len, "reservation");
	else
		snprintf(buf, len, "buffer %gM", (double)avfs_scn_buffer(k) / MIB);
}

static json_object *class_json(const struct avfs_scn_stream *k,
			       const struct avfs_simrun_class_res *x)
{
	json_object *o = json_object_new_object(), *m = json_object_new_object();
	char dl[48];

	deadline_text(k, dl, sizeof(dl));
	json_object_object_add(o, "name", json_object_new_string(k->name));
	json_object_object_add(o, "streams", json_object_new_int64(k->count));
	json_object_object_add(o, "direction", json_object_new_string(k->write ? "write" : "read"));
	json_object_object_add(o, "reserved", json_object_new_boolean(k->reserved));
	json_object_object_add(o, "deadlines", json_object_new_string(dl));
	json_object_object_add(o, "asked_mib_s", asked(k) < 0 ? NULL :
			       avfs_json_double(asked(k) / MIB, "%.3f"));
	json_object_object_add(o, "mib_s", avfs_json_double(x->mib_s, "%.3f"));
	json_object_object_add(o, "rt_requests", json_object_new_uint64(x->qos.requests));
	json_object_object_add(o, "misses", json_object_new_uint64(x->qos.misses));
	json_object_object_add(o, "failed", json_object_new_uint64(x->qos.failed));
	json_object_object_add(o, "overdue", json_object_new_uint64(x->overdue));
	json_object_object_add(o, "be_requests", json_object_new_uint64(x->qos.be_requests));
	json_object_object_add(o, "p0", avfs_json_double(x->qos.requests ? (double)x->qos.misses /
							 (double)x->qos.requests : 0, "%.6g"));
	json_object_object_add(m, "min", avfs_json_double(margin_min_ms(&x->qos), "%.1f"));
	json_object_object_add(m, "p01", avfs_json_double(qos_ms(&x->qos, 0.01), "%.1f"));
	json_object_object_add(m, "p50", avfs_json_double(qos_ms(&x->qos, 0.5), "%.1f"));
	json_object_object_add(o, "margin_ms", m);
	return o;
}

static json_object *gen_json(const struct avfs_scn_be *g, const struct avfs_simrun_be_res *x)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(g->name));
	json_object_object_add(o, "kind", json_object_new_string(avfs_scn_be_kind_name(g->kind)));
	json_object_object_add(o, "count", json_object_new_int64(g->count));
	json_object_object_add(o, "io", json_object_new_int64(avfs_scn_be_io(g)));
	json_object_object_add(o, "cap_mib_s", g->rate > 0 ?
			       avfs_json_double(g->rate / MIB, "%.3f") : NULL);
	json_object_object_add(o, "cap_iops", g->iops > 0 ? avfs_json_double(g->iops, "%.6g") : NULL);
	json_object_object_add(o, "requests", json_object_new_uint64(x->requests));
	json_object_object_add(o, "bytes", json_object_new_uint64(x->bytes));
	json_object_object_add(o, "errors", json_object_new_uint64(x->errors));
	json_object_object_add(o, "files", json_object_new_uint64(x->files));
	json_object_object_add(o, "mib_s", avfs_json_double(x->mib_s, "%.3f"));
	json_object_object_add(o, "lat_mean_ms", avfs_json_double(x->lat_mean_ms, "%.1f"));
	json_object_object_add(o, "lat_max_ms", avfs_json_double(x->lat_max_ms, "%.1f"));
	return o;
}

/* The classes' and generators' arrays of the JSON document. */
static void parts_json(json_object *j, const struct avfs_scenario *s,
		       const struct avfs_simrun_result *r)
{
	json_object *cls = json_object_new_array(), *gens = json_object_new_array();

	for (unsigned i = 0; i < s->nstreams && i < r->nclasses; i++)
		json_object_array_add(cls, class_json(&s->streams[i], &r->classes[i]));
	for (unsigned i = 0; i < s->nbe && i < r->nbes; i++)
		json_object_array_add(gens, gen_json(&s->be[i], &r->bes[i]));
	json_object_object_add(j, "classes", cls);
	json_object_object_add(j, "generators", gens);
}

static json_object *run_json(const struct scli *c, const struct avfs_simrun_result *r)
{
	const struct avfs_scenario *s = &c->s;
	json_object *j = json_object_new_object();

	json_object_object_add(j, "scenario", json_object_new_string(c->file));
	json_object_object_add(j, "disk", json_object_new_string(s->disk));
	json_object_object_add(j, "policy", json_object_new_string(s->policy));
	json_object_object_add(j, "alloc", json_object_new_string(avfs_alloc_policy_name(s->alloc)));
	json_object_object_add(j, "seed", json_object_new_uint64(s->seed));
	json_object_object_add(j, "duration_s", avfs_json_double(s->duration_s, "%.6g"));
	json_object_object_add(j, "fill", avfs_json_double(s->fill, "%.2f"));
	if (s->size)
		json_object_object_add(j, "size", json_object_new_uint64(s->size));
	avfs_sim_report_json(j, r);
	parts_json(j, s, r);
	return j;
}

static void classes_text(const struct avfs_scenario *s, const struct avfs_simrun_result *r)
{
	printf("  %-14s %7s %-5s %-12s %9s %9s %11s %7s %7s %9s %9s %9s %9s\n", "class", "streams",
	       "dir", "deadlines", "asked", "got MiB/s", "RT requests", "misses", "overdue", "P0",
	       "margin min", "p1%", "median");
	for (unsigned i = 0; i < s->nstreams && i < r->nclasses; i++) {
		const struct avfs_scn_stream *k = &s->streams[i];
		const struct avfs_qos *q = &r->classes[i].qos;
		char dl[48], ask[24];

		deadline_text(k, dl, sizeof(dl));
		if (asked(k) < 0)
			snprintf(ask, sizeof(ask), "greedy");
		else
			snprintf(ask, sizeof(ask), "%.2f", asked(k) / MIB);
		printf("  %-14s %7u %-5s %-12s %9s %9.2f %11" PRIu64 " %7" PRIu64 " %7" PRIu64
		       " %9.3g %6.0f ms %6.0f ms %6.0f ms\n", k->name, k->count,
		       k->write ? "write" : "read", dl, ask, r->classes[i].mib_s, q->requests,
		       q->misses, r->classes[i].overdue,
		       q->requests ? (double)q->misses / (double)q->requests : 0, margin_min_ms(q),
		       qos_ms(q, 0.01), qos_ms(q, 0.5));
	}
	if (!s->nbe)
		return;
	printf("  %-14s %7s %-10s %6s %-12s %9s %9s %9s %9s %6s\n", "best effort", "clients",
	       "kind", "io", "cap", "requests", "MiB/s", "lat mean", "lat max", "files");
	for (unsigned i = 0; i < s->nbe && i < r->nbes; i++) {
		const struct avfs_scn_be *g = &s->be[i];
		const struct avfs_simrun_be_res *x = &r->bes[i];
		char cap[32] = "-", io[16];

		if (g->rate > 0 && g->iops > 0)
			snprintf(cap, sizeof(cap), "%.3gMiB/s,%g/s", g->rate / MIB, g->iops);
		else if (g->rate > 0)
			snprintf(cap, sizeof(cap), "%.3g MiB/s", g->rate / MIB);
		else if (g->iops > 0)
			snprintf(cap, sizeof(cap), "%g/s", g->iops);
		if (avfs_scn_be_io(g) % (1u << 20))
			snprintf(io, sizeof(io), "%uK", avfs_scn_be_io(g) >> 10);
		else
			snprintf(io, sizeof(io), "%uM", avfs_scn_be_io(g) >> 20);
		printf("  %-14s %7u %-10s %6s %-12s %9" PRIu64 " %9.2f %6.1f ms %6.0f ms %6" PRIu64
		       "\n", g->name, g->count, avfs_scn_be_kind_name(g->kind),
		       g->kind == AVFS_SCN_BE_DELETE ? "-" : io, cap, x->requests, x->mib_s,
		       x->lat_mean_ms, x->lat_max_ms, x->files);
	}
}

/* Run the scenario. 0, or the exit code after a message. */
static int run(const struct scli *c, const char *trace, struct avfs_simrun_result *r)
{
	struct avfs_simrun_opts o;
	char why[256] = "";
	int err;

	avfs_simrun_defaults(&o);
	err = avfs_wl_scenario(&o, &c->s);
	if (err) {
		fprintf(stderr, "avfs-sim: %s\n", strerror(-err));
		return 1;
	}
	o.trace_path = trace;
	err = avfs_simrun(&o, r, why, sizeof(why));
	avfs_wl_scenario_free(&o);
	if (err) {
		fprintf(stderr, "avfs-sim: %s: %s\n", c->file, why[0] ? why : strerror(-err));
		return err == -EINVAL ? 2 : 1;
	}
	return 0;
}

int avfs_sim_cmd_run_file(int argc, char **argv)
{
	struct scli c = { 0 };
	struct avfs_simrun_result r;
	int err = parse(argc, argv, &c);

	if (err)
		return err == 1 ? 0 : err;
	if (c.print) {
		size_t n = avfs_scenario_format(&c.s, NULL, 0);
		char *text = malloc(n + 1);

		if (text) {
			avfs_scenario_format(&c.s, text, n + 1);
			fputs(text, stdout);
		}
		free(text);
		avfs_scenario_free(&c.s);
		return text ? 0 : 1;
	}
	err = run(&c, c.trace, &r);
	if (err) {
		avfs_scenario_free(&c.s);
		return err;
	}
	if (c.json) {
		err = avfs_json_stdout(run_json(&c, &r), true, "avfs-sim");
	} else {
		printf("avfs-sim run %s: %s, policy %s, %s allocation, seed %" PRIu64 ", %g s "
		       "simulated in %.1f s\n", c.file, c.s.disk, c.s.policy,
		       avfs_alloc_policy_name(c.s.alloc), c.s.seed, c.s.duration_s, r.wall_s);
		classes_text(&c.s, &r);
		avfs_sim_report_text(&r, c.s.nbe > 0);
	}
	avfs_simrun_result_free(&r);
	avfs_scenario_free(&c.s);
	return err;
}

/* ---- search ---- */

struct step {
	unsigned count;
	uint64_t misses, overdue;
	double util, wall_s;
};

/* Misses of every class (failed requests are misses too) and requests overdue at the end. */
static void misses_of(const struct avfs_simrun_result *r, uint64_t *misses, uint64_t *overdue)
{
	*misses = *overdue = 0;
	for (unsigned i = 0; i < r->nclasses; i++) {
		*misses += r->classes[i].qos.misses;
		*overdue += r->classes[i].overdue;
	}
}

int avfs_sim_cmd_search_file(int argc, char **argv)
{
	struct scli c = { .search = true, .from = 1, .max = 64 };
	struct avfs_simrun_result best = { 0 };
	struct step *steps = NULL;
	unsigned nsteps = 0, fails = 0, largest = 0;
	bool have_best = false;
	int err = parse(argc, argv, &c);

	if (err)
		return err == 1 ? 0 : err;
	if (!c.grow || !avfs_scenario_class(&c.s, c.grow)) {
		if (c.grow)
			fprintf(stderr, "avfs-sim: %s: --grow %s: no [stream %s] class\n", c.file,
				c.grow, c.grow);
		else
			fprintf(stderr, "avfs-sim: search FILE: say --grow CLASS\n");
		avfs_scenario_free(&c.s);
		return 2;
	}
	if (c.from > c.max) {
		fprintf(stderr, "avfs-sim: --from %u is above --max %u\n", c.from, c.max);
		avfs_scenario_free(&c.s);
		return 2;
	}
	steps = calloc(c.max - c.from + 1, sizeof(*steps));
	if (!steps) {
		avfs_scenario_free(&c.s);
		return 1;
	}
	/* grow one stream at a time; two failures in a row end the search (as avfs-sim search) */
	for (unsigned n = c.from; n <= c.max && fails < 2; n++) {
		struct avfs_simrun_result r;
		char key[AVFS_SCN_NAME_MAX + 8], value[16], why[512] = "";
		struct step *st = &steps[nsteps];

		snprintf(key, sizeof(key), "%s.count", c.grow);
		snprintf(value, sizeof(value), "%u", n);
		err = avfs_scenario_set(&c.s, key, value, why, sizeof(why));
		if (!err)
			err = avfs_scenario_check(&c.s, why, sizeof(why));
		if (err) {	/* (too many streams in all) */
			fprintf(stderr, "avfs-sim: %s: %s\n", c.file, why);
			break;
		}
		err = run(&c, NULL, &r);
		if (err)
			goto out;
		st->count = n;
		misses_of(&r, &st->misses, &st->overdue);
		st->util = r.disk_utilization;
		st->wall_s = r.wall_s;
		nsteps++;
		if (isatty(2))
			fprintf(stderr, "  %s %3u  misses %-6" PRIu64 " overdue %-4" PRIu64 " util %.1f %%"
				"  (%.1f s)\n", c.grow, n, st->misses, st->overdue, st->util * 100,
				st->wall_s);
		if (!st->misses && !st->overdue) {
			largest = n;
			fails = 0;
			if (have_best)
				avfs_simrun_result_free(&best);
			best = r;
			have_best = true;
		} else {
			fails++;
			avfs_simrun_result_free(&r);
		}
	}
	err = 0;
	/* the figures below are the largest passing run's: its count back in the scenario */
	{
		char key[AVFS_SCN_NAME_MAX + 8], value[16];

		snprintf(key, sizeof(key), "%s.count", c.grow);
		snprintf(value, sizeof(value), "%u", largest);
		avfs_scenario_set(&c.s, key, value, NULL, 0);
	}
	if (c.json) {
		json_object *j = json_object_new_object(), *a = json_object_new_array();

		json_object_object_add(j, "scenario", json_object_new_string(c.file));
		json_object_object_add(j, "disk", json_object_new_string(c.s.disk));
		json_object_object_add(j, "policy", json_object_new_string(c.s.policy));
		json_object_object_add(j, "duration_s", avfs_json_double(c.s.duration_s, "%.6g"));
		json_object_object_add(j, "grow", json_object_new_string(c.grow));
		json_object_object_add(j, "largest", json_object_new_int64(largest));
		json_object_object_add(j, "found", json_object_new_boolean(have_best));
		for (unsigned i = 0; i < nsteps; i++) {
			json_object *x = json_object_new_object();

			json_object_object_add(x, "count", json_object_new_int64(steps[i].count));
			json_object_object_add(x, "misses", json_object_new_uint64(steps[i].misses));
			json_object_object_add(x, "overdue", json_object_new_uint64(steps[i].overdue));
			json_object_object_add(x, "disk_utilization",
					       avfs_json_double(steps[i].util, "%.4f"));
			json_object_array_add(a, x);
		}
		json_object_object_add(j, "steps", a);
		if (have_best) {
			json_object *b = json_object_new_object();

			json_object_object_add(b, "disk_utilization",
					       avfs_json_double(best.disk_utilization, "%.4f"));
			json_object_object_add(b, "be_mbps", avfs_json_double(best.be_mbps, "%.2f"));
			parts_json(b, &c.s, &best);
			json_object_object_add(j, "best", b);
		}
		err = avfs_json_stdout(j, false, "avfs-sim");
		goto out;
	}
	printf("avfs-sim search %s: class %s grown from %u (max %u) on %s, policy %s, %g s runs\n",
	       c.file, c.grow, c.from, c.max, c.s.disk, c.s.policy, c.s.duration_s);
	printf("  %-8s %8s %8s %11s\n", "count", "misses", "overdue", "utilization");
	for (unsigned i = 0; i < nsteps; i++)
		printf("  %-8u %8" PRIu64 " %8" PRIu64 " %9.1f %%\n", steps[i].count, steps[i].misses,
		       steps[i].overdue, steps[i].util * 100);
	if (!have_best) {
		printf("no count from %u on ran without a miss\n", c.from);
		goto out;
	}
	printf("largest %s count with zero misses: %u; its run:\n", c.grow, largest);
	classes_text(&c.s, &best);
	printf("  disk utilization   %.1f %%\n", best.disk_utilization * 100);
out:
	if (have_best)
		avfs_simrun_result_free(&best);
	free(steps);
	avfs_scenario_free(&c.s);
	return err;
}
