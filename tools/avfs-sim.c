/*
 * avfs-sim — the virtual-time simulator (SPEC §10). `avfs-sim --workload NrMw ...` runs the
 * real file system and the real scheduler over the simulated disk (sim/simrun.c) and prints
 * the QoS figures; `search` finds the largest stream mix with no miss per policy; `preempt`
 * is the preemption study of papers/003; `disk --probe` measures the disk model from
 * outside (with the profiler of disk/profile.c); `run FILE` and `search FILE --grow CLASS`
 * carry out scenario files (sim_scenario.c). The tool parses, runs and prints; the work is in
 * sim/ and daemon/.
 */
#include "config.h"
#include "disk.h"
#include "hddmodel.h"
#include "jsonout.h"
#include "profile.h"
#include "profile_json.h"
#include "simdisk.h"
#include "simengine.h"
#include "simrun.h"
#include "sim_realtime.h"
#include "sim_report.h"
#include "sim_reserve.h"
#include "sim_scenario.h"
#include "zrr.h"
#include "units.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB 1e6
#define NS_PER_MS 1e6

static void usage_disk(FILE *f)
{
	const char *const *m = avfs_hdd_model_names();

	fprintf(f,
		"usage: avfs-sim disk --disk MODEL --probe [--seed N] [--json]\n"
		"\n"
		"  disk --probe   measure the simulated disk from outside, with reads only (the\n"
		"                 profiler of avfs-admin profile, disk/profile.c): rotation period\n"
		"                 and latency, random 4 KiB read time, seek times (1 cylinder, 1/3\n"
		"                 and full stroke, mean), sequential rate at 8 points across the LBA range\n"
		"  --disk MODEL   one of:");
	for (; *m; m++)
		fprintf(f, " %s", *m);
	fprintf(f, " (default avfs-250g)\n"
		"  --seed N       the model's seed (jitter, error recovery) and the probe's\n"
		"  --json         machine-readable output\n"
		);
}

/* The probe's share of the profiler: no chunk sweep, 8 rate points of 64 MiB in 1 MiB reads,
 * and more samples than avfs-admin's default (virtual time is cheap). */
static int run_probe(struct avfs_disk *d, uint64_t seed, struct avfs_profile *r)
{
	struct avfs_profile_opts o = {
		.steps = AVFS_PROFILE_ZONES | AVFS_PROFILE_RANDOM | AVFS_PROFILE_MECH,
		.seed = seed, .rate_points = 8, .rate_span = 64u << 20, .rate_io = 1u << 20,
		.n_random = 20000, .n_seek = 2000, .n_rot = 64,
	};
	struct avfs_profile_clock clk;
	struct avfs_profile_geom geom;
	int err = avfs_profile_sim_env(d, &clk, &geom);

	if (err)
		return err;
	return avfs_profile_run(d, &clk, geom.ncyl ? &geom : NULL, &o, r);
}

static void print_text(const char *model, const struct avfs_disk *d, uint32_t ncyl,
		       const struct avfs_profile *r)
{
	printf("avfs-sim disk probe: model %s (%.1f GB, %u cylinders, %s)\n", model,
	       (double)d->info.size / 1e9, ncyl,
	       d->info.rotational ? "rotational" : "non-rotational");
	printf("  measured from outside with %" PRIu64 " reads in %.1f s of virtual time\n",
	       r->requests, (double)r->elapsed_ns / 1e9);
	if (r->rot_measured) {
		printf("  rotation period          %8.3f ms\n", r->rotation_ns / NS_PER_MS);
		printf("  mean rotational latency  %8.3f ms\n", r->rot_latency_ns / NS_PER_MS);
	}
	printf("  random 4 KiB read        %8.3f ms (mean, queue depth 1)\n",
	       r->random_ns / NS_PER_MS);
	if (r->rot_measured) {
		printf("  seek, 1 cylinder         %8.3f ms\n", r->seek_track_ns / NS_PER_MS);
		printf("  seek, 1/3 stroke         %8.3f ms\n", r->seek_third_ns / NS_PER_MS);
		printf("  seek, full stroke        %8.3f ms\n", r->seek_full_ns / NS_PER_MS);
		printf("  seek, mean (random LBAs) %8.3f ms\n", r->seek_mean_ns / NS_PER_MS);
	}
	printf("  sequential read rate (1 MiB requests):\n");
	for (unsigned i = 0; i < r->nrate; i++)
		printf("    at %8.2f GB  %7.2f MB/s\n", (double)r->rate_off[i] / 1e9, r->rate[i] / MB);
	printf("  outer %.2f MB/s, inner %.2f MB/s\n", r->outer / MB, r->inner / MB);
}

static int print_json(const char *model, const struct avfs_disk *d, uint32_t ncyl,
		      const struct avfs_profile *r)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "disk", json_object_new_string(model));
	json_object_object_add(o, "capacity_bytes", json_object_new_uint64(d->info.size));
	json_object_object_add(o, "cylinders", json_object_new_int64(ncyl));
	json_object_object_add(o, "rotational", json_object_new_boolean(d->info.rotational));
	json_object_object_add(o, "samples", json_object_new_uint64(r->requests));
	json_object_object_add(o, "virtual_s",
			       avfs_json_double((double)r->elapsed_ns / 1e9, "%.3f"));
	json_object_object_add(o, "rotation_ms",
			       avfs_json_double(r->rotation_ns / NS_PER_MS, "%.4f"));
	json_object_object_add(o, "rotational_latency_ms",
			       avfs_json_double(r->rot_latency_ns / NS_PER_MS, "%.4f"));
	json_object_object_add(o, "random_4k_ms",
			       avfs_json_double(r->random_ns / NS_PER_MS, "%.4f"));
	json_object_object_add(o, "seek_ms", avfs_profile_json_seeks(r));
	json_object_object_add(o, "outer_rate_mbs", avfs_json_double(r->outer / MB, "%.3f"));
	json_object_object_add(o, "inner_rate_mbs", avfs_json_double(r->inner / MB, "%.3f"));
	json_object_object_add(o, "rate_mbs",
			       avfs_profile_json_rates(r->nrate, r->rate_off, r->rate, false));
	return avfs_json_stdout(o, true, "avfs-sim");
}

static int cmd_disk(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "disk", required_argument, NULL, 'd' },
		{ "probe", no_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *model = "avfs-250g";
	bool probe = false, json = false;
	uint64_t seed = 1;
	struct avfs_sim_engine *eng = NULL;
	struct avfs_disk *d = NULL;
	struct avfs_profile r;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': model = optarg; break;
		case 'p': probe = true; break;
		case 'j': json = true; break;
		case 's':
			if (avfs_parse_uint(optarg, &seed)) {
				fprintf(stderr, "avfs-sim: --seed: not a number: '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h': usage_disk(stdout); return 0;
		default: usage_disk(stderr); return 2;
		}
	}
	if (optind != argc || !probe) {
		fprintf(stderr, "avfs-sim: disk: say --probe (the only disk action)\n");
		usage_disk(stderr);
		return 2;
	}
	err = avfs_sim_engine_new(&eng);
	if (!err)
		err = avfs_simdisk_open_model(eng, model, seed, AVFS_SIMDISK_NODATA, &d);
	if (err == -ENOENT) {
		fprintf(stderr, "avfs-sim: unknown disk model '%s' (see --help)\n", model);
		avfs_sim_engine_free(eng);
		return 2;
	}
	if (err) {
		fprintf(stderr, "avfs-sim: cannot open the simulated disk: %s\n", strerror(-err));
		avfs_sim_engine_free(eng);
		return 1;
	}
	err = run_probe(d, seed, &r);
	if (!err) {
		uint32_t ncyl = avfs_hdd_cylinders(avfs_simdisk_model(d));

		if (json)
			err = print_json(model, d, ncyl, &r) ? -EIO : 0;
		else
			print_text(model, d, ncyl, &r);
	} else {
		fprintf(stderr, "avfs-sim: probe failed: %s\n", strerror(-err));
	}
	avfs_disk_close(d);
	avfs_sim_engine_free(eng);
	return err ? 1 : 0;
}

/* ---- workloads ---- */

static void usage(FILE *f)
{
	size_t n;
	const struct avfs_sched_setting_info *set = avfs_sched_settings(&n);

	fprintf(f,
		"usage: avfs-sim [options] --workload NrMw      one simulated run\n"
		"       avfs-sim run FILE [options]              a scenario file (docs/SCENARIOS.md;\n"
		"                                                avfs-sim run --help)\n"
		"       avfs-sim search [options]                largest NrMw with no miss, per policy\n"
		"       avfs-sim search FILE --grow CLASS        largest count of one class of a\n"
		"                                                scenario with no miss\n"
		"       avfs-sim preempt [options]               preemption study (papers/003)\n"
		"       avfs-sim disk --probe [--disk M] [--json] measure the disk model\n"
		"       avfs-sim reserve [options]               admission: random reservations,\n"
		"                                                admitted sets vs the zero-miss maximum\n"
		"       avfs-sim isolation --scenario NAME       the bandwidth class's isolation\n"
		"                                                (be-greedy, greedy-reserved,\n"
		"                                                overprovision, fahrrad4, all)\n"
		"\n"
		"  --disk MODEL        avfs-250g (default), barracuda-500g, st318437, travelstar-20g, ssd\n"
		"  --workload NrMw     N playback and M recording streams, e.g. 6r2w\n"
		"  --rate R            per stream, bits/s with K/M/G (default 19.39M: ATSC HD)\n"
		"  --io SIZE           bytes per stream request (default 512K)\n"
		"  --depth N           requests in flight per stream = buffer / io (default 8)\n"
		"  --margin T --urgent T   the mixer's m and e (default 500ms, 100ms)\n"
		"  --duration S        simulated seconds (default 3600)\n"
		"  --fill F            fraction of the disk filled with recordings first (default 0.8)\n"
		"  --policy P          tm (default), fifo, cscan, edf, scan-edf\n"
		"  --alloc A           zrr-run (default: ZRR in runs of 16 MiB), zrr (one block a\n"
		"                      zone, papers/001) or contig (the first-fit\n"
		"                      baseline, in runs of 16 MiB)\n"
		"  --be LOAD           none (default), pictures, random, greedy, delete\n"
		"  --chunk SIZE --jit --split SIZE   semi-preemptible I/O (tm)\n"
		"  --predictor P       what JIT, split and order=satf ask: model (default: the\n"
		"                      simulated disk's own state) or rotpred (avfsd's, learned\n"
		"                      from completions)\n"
		"  --set NAME=VALUE    any scheduler setting (below), or the engine's read-ahead\n"
		"                      (read-ahead=SIZE: bytes read ahead of a deadline stream,\n"
		"                      8M; 0: none; read-ahead-start=SIZE: as its reads in order\n"
		"                      begin, 2560K, growing to read-ahead over\n"
		"                      read-ahead-ramp=TIME, 30s; either 0: all at once) or\n"
		"                      commit-wait (commit-wait=TIME: a commit\n"
		"                      that waited so long for its data writes has them due by\n"
		"                      then, 10s; 0: they keep their deadlines)\n"
		"  --seed N            the run's seed (default 1); the same seed, the same result\n"
		"  --trace FILE        every request as CSV\n"
		"  --stall AT:LENGTH   the disk stalls once, AT into the run, for LENGTH (a\n"
		"                      drive's error recovery), e.g. 100s:2s\n"
		"  --json              machine-readable output (be_mbps is megabits per second)\n"
		"search: --policies LIST (default tm,cscan,edf), --ratio R:W (default 3:1), --max N\n"
		"preempt: --be-size SIZE (default 500K), --hp-rate PER_S (default 1), --chunk SIZE\n"
		"         (default 64K for the chunked runs)\n"
		"\nscheduler settings:\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-17s %-7s %-14s %s\n", set[i].name, set[i].unit, set[i].range, set[i].help);
}

struct cli {
	struct avfs_simrun_opts o;
	bool json;
	const char *policies;
	unsigned ratio_r, ratio_w, max_streams;
	bool chunk_given;
	bool reserve;		/* NrMw streams with reservations (the bandwidth class) */
	const char *mount;	/* realtime: the avfsd mount */
	const char *hddemu;	/* realtime: hddemu's mount directory, for its statistics */
	struct avfs_simrun_stream spec[4096];	/* --reserve: the NrMw streams as services */
};

static int set_conf(struct cli *c, const char *name, const char *value)
{
	char why[160];
	int err = avfs_sched_conf_set(&c->o.conf, name, value, why, sizeof(why));

	if (err)
		fprintf(stderr, "avfs-sim: %s\n", why);
	return err;
}

enum mode { MODE_RUN, MODE_SEARCH, MODE_PREEMPT, MODE_FILL, MODE_REALTIME };

/* What a mode starts from before its options: the run's defaults (avfs_simrun_defaults) and
 * the mode's own (the usage's "default"s). */
static void defaults(struct cli *c, enum mode m)
{
	memset(c, 0, sizeof(*c));
	avfs_simrun_defaults(&c->o);
	if (m == MODE_SEARCH) {
		c->policies = "tm,cscan,edf";
		c->ratio_r = 3;
		c->ratio_w = 1;
		c->max_streams = 40;
	} else if (m == MODE_PREEMPT) {	/* papers/003: BE and HP requests alone */
		c->o.duration_s = 600;
		c->o.nread = 0;
		c->o.hp_rate = 1;
		c->o.fill = 0.8;
	}
}

/* --stall AT:LENGTH into o; -1 if it is not that. */
static int parse_stall(const char *arg, struct avfs_simrun_opts *o)
{
	const char *colon = strchr(arg, ':');
	char at[64];

	if (!colon || (size_t)(colon - arg) >= sizeof(at))
		return -1;
	memcpy(at, arg, (size_t)(colon - arg));
	at[colon - arg] = 0;
	if (avfs_parse_time(at, &o->stall_at_ns) || avfs_parse_time(colon + 1, &o->stall_ns) ||
	    o->stall_ns <= 0 || o->stall_ns > 600 * 1000000000ll)
		return -1;
	return 0;
}

/* The options every mode shares, over the mode's defaults, into c. -1 to go on, else the
 * exit code: 0 (printed help) or 2 (bad input, said on stderr). */
static int parse(int argc, char **argv, enum mode mode, struct cli *c)
{
	static const struct option opts[] = {
		{ "disk", required_argument, NULL, 'd' },
		{ "workload", required_argument, NULL, 'w' },
		{ "rate", required_argument, NULL, 'r' },
		{ "io", required_argument, NULL, 'i' },
		{ "depth", required_argument, NULL, 'D' },
		{ "margin", required_argument, NULL, 'm' },
		{ "urgent", required_argument, NULL, 'e' },
		{ "duration", required_argument, NULL, 't' },
		{ "fill", required_argument, NULL, 'f' },
		{ "policy", required_argument, NULL, 'p' },
		{ "alloc", required_argument, NULL, 'a' },
		{ "be", required_argument, NULL, 'b' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "jit", no_argument, NULL, 'J' },
		{ "split", required_argument, NULL, 'S' },
		{ "set", required_argument, NULL, 'x' },
		{ "seed", required_argument, NULL, 's' },
		{ "trace", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "policies", required_argument, NULL, 'P' },
		{ "ratio", required_argument, NULL, 'R' },
		{ "max", required_argument, NULL, 'M' },
		{ "be-size", required_argument, NULL, 'B' },
		{ "hp-rate", required_argument, NULL, 'H' },
		{ "block-size", required_argument, NULL, 'K' },
		{ "reserve", no_argument, NULL, 'Q' },
		{ "size", required_argument, NULL, 'Z' },
		{ "predictor", required_argument, NULL, 'y' },
		{ "mount", required_argument, NULL, 'U' },
		{ "hddemu", required_argument, NULL, 'E' },
		{ "stall", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t size;
	int ch;
	double v;

	defaults(c, mode);
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'd': c->o.disk = optarg; break;
		case 'w': {
			unsigned n, m;
			char tail;

			if (sscanf(optarg, "%ur%uw%c", &n, &m, &tail) != 2 || n + m > 4096) {
				fprintf(stderr, "avfs-sim: --workload '%s': say NrMw, e.g. 6r2w\n", optarg);
				return 2;
			}
			c->o.nread = n;
			c->o.nwrite = m;
			break;
		}
		case 'r':
			if (avfs_parse_rate(optarg, true, &v) || v <= 0) {
				fprintf(stderr, "avfs-sim: --rate '%s': bits/s, e.g. 19.39M\n", optarg);
				return 2;
			}
			c->o.rate = v;
			break;
		case 'i':
			if (avfs_parse_size(optarg, &size) || size < 4096 || size > (16 << 20) ||
			    size % 4096) {
				fprintf(stderr, "avfs-sim: --io '%s': a multiple of 4K up to 16M\n", optarg);
				return 2;
			}
			c->o.io = (uint32_t)size;
			break;
		case 'D':
			if (avfs_parse_scaled(optarg, 1000, &v) || v < 1 || v > 1024) {
				fprintf(stderr, "avfs-sim: --depth '%s': 1 to 1024\n", optarg);
				return 2;
			}
			c->o.depth = (unsigned)v;
			break;
		case 'm': if (set_conf(c, "margin", optarg)) return 2; break;
		case 'e': if (set_conf(c, "urgent", optarg)) return 2; break;
		case 'L':
			if (parse_stall(optarg, &c->o)) {
				fprintf(stderr, "avfs-sim: --stall '%s': AT:LENGTH, e.g. 100s:2s (a "
					"stall of the disk of up to 600s, AT into the run)\n", optarg);
				return 2;
			}
			break;
		case 't':
			if (avfs_parse_scaled(optarg, 1000, &v) || v <= 0 || v > 1e6) {
				fprintf(stderr, "avfs-sim: --duration '%s': seconds, up to 1e6\n", optarg);
				return 2;
			}
			c->o.duration_s = v;
			break;
		case 'f':
			if (avfs_parse_number(optarg, &c->o.fill) || c->o.fill > 0.95) {
				fprintf(stderr, "avfs-sim: --fill '%s': 0 to 0.95\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (!avfs_sched_lookup(optarg)) {
				fprintf(stderr, "avfs-sim: --policy '%s': tm, fifo, cscan, edf, scan-edf\n",
					optarg);
				return 2;
			}
			c->o.policy = optarg;
			break;
		case 'a':
			if (avfs_alloc_policy_parse(optarg) >= 0)
				c->o.alloc = (uint32_t)avfs_alloc_policy_parse(optarg);
			else {
				fprintf(stderr, "avfs-sim: --alloc '%s': zrr-run, zrr or contig\n", optarg);
				return 2;
			}
			break;
		case 'b': {
			static const char *const names[] = { "none", "pictures", "random", "greedy",
							      "delete" };
			unsigned k;

			for (k = 0; k < 5 && strcmp(names[k], optarg); k++)
				;
			if (k == 5) {
				fprintf(stderr, "avfs-sim: --be '%s': none, pictures, random, greedy, "
					"delete\n", optarg);
				return 2;
			}
			c->o.be = (enum avfs_be_load)k;
			break;
		}
		case 'c': if (set_conf(c, "chunk", optarg)) return 2; c->chunk_given = true; break;
		case 'J': c->o.conf.jit = true; break;
		case 'S': if (set_conf(c, "split", optarg)) return 2; break;
		case 'x': {
			char why[160];

			if (avfs_simrun_set(&c->o, optarg, why, sizeof(why))) {
				fprintf(stderr, "avfs-sim: --set %s\n", why);
				return 2;
			}
			break;
		}
		case 's':
			if (avfs_parse_uint(optarg, &c->o.seed)) {
				fprintf(stderr, "avfs-sim: --seed '%s': not a number\n", optarg);
				return 2;
			}
			break;
		case 'T': c->o.trace_path = optarg; break;
		case 'j': c->json = true; break;
		case 'P': c->policies = optarg; break;
		case 'R':
			if (sscanf(optarg, "%u:%u", &c->ratio_r, &c->ratio_w) != 2 ||
			    c->ratio_r + c->ratio_w == 0 || c->ratio_r > 100 || c->ratio_w > 100) {
				fprintf(stderr, "avfs-sim: --ratio '%s': R:W, e.g. 3:1\n", optarg);
				return 2;
			}
			break;
		case 'M':
			if (avfs_parse_scaled(optarg, 1000, &v) || v < 1 || v > 4096) {
				fprintf(stderr, "avfs-sim: --max '%s': 1 to 4096\n", optarg);
				return 2;
			}
			c->max_streams = (unsigned)v;
			break;
		case 'B':
			if (avfs_parse_size(optarg, &size) || size < 4096 || size > (16 << 20)) {
				fprintf(stderr, "avfs-sim: --be-size '%s': 4K to 16M\n", optarg);
				return 2;
			}
			c->o.be_size = (uint32_t)size;
			break;
		case 'H':
			if (avfs_parse_number(optarg, &c->o.hp_rate) || c->o.hp_rate <= 0 ||
			    c->o.hp_rate > 1000) {
				fprintf(stderr, "avfs-sim: --hp-rate '%s': 0 to 1000 per second\n", optarg);
				return 2;
			}
			break;
		case 'K':
			if (avfs_parse_size(optarg, &size) || size < 65536 || size > (1ull << 32) ||
			    (size & (size - 1))) {
				fprintf(stderr, "avfs-sim: --block-size '%s': a power of two, 64K..4G\n",
					optarg);
				return 2;
			}
			c->o.block_shift = (uint32_t)__builtin_ctzll(size);
			break;
		case 'Q': c->reserve = true; break;
		case 'Z':
			if (avfs_parse_size(optarg, &size) || size < (64u << 20) || size % 4096) {
				fprintf(stderr, "avfs-sim: --size '%s': bytes of the model, at least 64M, "
					"whole pages\n", optarg);
				return 2;
			}
			c->o.size = size;
			break;
		case 'y':
			if (strcmp(optarg, "model") && strcmp(optarg, "rotpred")) {
				fprintf(stderr, "avfs-sim: --predictor '%s': model or rotpred\n", optarg);
				return 2;
			}
			c->o.predictor = optarg;
			break;
		case 'U': c->mount = optarg; break;
		case 'E': c->hddemu = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (c->reserve) {	/* each NrMw stream a reserved rate + buffer service */
		for (unsigned i = 0; i < c->o.nread + c->o.nwrite; i++)
			c->spec[i] = (struct avfs_simrun_stream){
				.rate = c->o.rate, .io = c->o.io,
				.buffer = (uint64_t)c->o.io * c->o.depth, .write = i >= c->o.nread,
				.reserved = true, .place = -1 };
		c->o.streams = c->spec;
		c->o.nstreams = c->o.nread + c->o.nwrite;
	}
	if (optind != argc) {
		fprintf(stderr, "avfs-sim: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if ((mode == MODE_RUN || mode == MODE_REALTIME) && c->o.nread + c->o.nwrite == 0 &&
	    c->o.be == AVFS_BE_NONE) {
		fprintf(stderr, "avfs-sim: say --workload NrMw (see --help)\n");
		return 2;
	}
	return -1;
}

/* A run of mode `what` ("" for the plain run) failed with err: why, or else the errno's text,
 * on stderr. The exit code: 2 for bad input (-EINVAL), else 1. */
static int run_failed(const char *what, int err, const char *why)
{
	fprintf(stderr, "avfs-sim: %s%s%s\n", what, *what ? ": " : "", *why ? why : strerror(-err));
	return err == -EINVAL ? 2 : 1;
}

/* print_run's --json document (the keys of SPEC §10). */
static json_object *run_doc(const struct cli *c, const struct avfs_simrun_result *r)
{
	const struct avfs_simrun_opts *o = &c->o;
	json_object *j = json_object_new_object();
	char workload[32];

	snprintf(workload, sizeof(workload), "%ur%uw", o->nread, o->nwrite);
	json_object_object_add(j, "disk", json_object_new_string(o->disk));
	json_object_object_add(j, "workload", json_object_new_string(workload));
	json_object_object_add(j, "policy", json_object_new_string(o->policy));
	json_object_object_add(j, "alloc", json_object_new_string(avfs_alloc_policy_name(o->alloc)));
	json_object_object_add(j, "seed", json_object_new_uint64(o->seed));
	json_object_object_add(j, "duration_s", avfs_json_double(o->duration_s, "%.0f"));
	json_object_object_add(j, "rate_bps", avfs_json_double(o->rate * 8, "%.0f"));
	json_object_object_add(j, "io", json_object_new_int64(o->io));
	json_object_object_add(j, "depth", json_object_new_int64(o->depth));
	json_object_object_add(j, "fill", avfs_json_double(o->fill, "%.2f"));
	avfs_sim_report_json(j, r);
	json_object_object_add(j, "reserved", json_object_new_boolean(c->reserve));
	if (o->size)
		json_object_object_add(j, "size", json_object_new_uint64(o->size));
	if (r->streams) {
		json_object *a = json_object_new_array();

		for (unsigned i = 0; i < r->nstreams; i++) {
			const struct avfs_simrun_stream_res *x = &r->streams[i];
			json_object *e = json_object_new_object();

			json_object_object_add(e, "rt_requests", json_object_new_uint64(x->qos.requests));
			json_object_object_add(e, "misses", json_object_new_uint64(x->qos.misses));
			json_object_object_add(e, "be_requests",
					       json_object_new_uint64(x->qos.be_requests));
			json_object_object_add(e, "mbps", avfs_json_double(x->mbps, "%.3f"));
			json_object_object_add(e, "margin_min_ms", avfs_json_double(
					       x->qos.requests ? (double)x->qos.margin_min_ns / 1e6 : 0,
					       "%.1f"));
			json_object_array_add(a, e);
		}
		json_object_object_add(j, "streams", a);
	}
	return j;
}

/* The figures of one run, as a table or as JSON. The exit code. */
static int print_run(const struct cli *c, const struct avfs_simrun_result *r)
{
	const struct avfs_simrun_opts *o = &c->o;

	if (c->json)
		return avfs_json_stdout(run_doc(c, r), true, "avfs-sim");
	printf("avfs-sim: %ur%uw on %s, policy %s, %s allocation, %.0f s simulated in %.1f s\n",
	       o->nread, o->nwrite, o->disk, o->policy,
	       o->alloc == 2 ? "ZRR (runs)" : o->alloc ? "contiguous" : "ZRR",
	       o->duration_s, r->wall_s);
	avfs_sim_report_text(r, o->be != AVFS_BE_NONE);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct cli c;
	struct avfs_simrun_result r;
	char why[256] = "";
	int err = parse(argc, argv, MODE_RUN, &c);

	if (err >= 0)
		return err;
	err = avfs_simrun(&c.o, &r, why, sizeof(why));
	if (err)
		return run_failed("", err, why);
	err = print_run(&c, &r);
	avfs_simrun_result_free(&r);
	return err;
}

/* The largest mix with no miss over the run, streams in the ratio R:W, per policy. */
static int cmd_search(int argc, char **argv)
{
	struct cli c;
	char list[256], *save = NULL, *p;
	struct { char name[16]; unsigned best_r, best_w; double util; } res[8];
	int np = 0, err = parse(argc, argv, MODE_SEARCH, &c);

	if (err >= 0)
		return err;
	snprintf(list, sizeof(list), "%s", c.policies);
	for (p = strtok_r(list, ",", &save); p && np < 8; p = strtok_r(NULL, ",", &save)) {
		unsigned fails = 0;

		if (!avfs_sched_lookup(p)) {
			fprintf(stderr, "avfs-sim: search: unknown policy '%s'\n", p);
			return 2;
		}
		snprintf(res[np].name, sizeof(res[np].name), "%s", p);
		res[np].best_r = res[np].best_w = 0;
		res[np].util = 0;
		/* grow the mix one stream at a time; two failures in a row end the search */
		for (unsigned n = 1; n <= c.max_streams && fails < 2; n++) {
			struct avfs_simrun_result r;
			char why[256] = "";
			unsigned w = (n * c.ratio_w + (c.ratio_r + c.ratio_w) / 2) / (c.ratio_r + c.ratio_w);

			c.o.policy = p;
			c.o.nread = n - w;
			c.o.nwrite = w;
			err = avfs_simrun(&c.o, &r, why, sizeof(why));
			if (err) {
				fprintf(stderr, "avfs-sim: %ur%uw: %s\n", n - w, w, why);
				return 1;
			}
			if (isatty(2))
				fprintf(stderr, "  %-8s %2ur%uw  misses %-6" PRIu64 " util %.1f %%  (%.1f s)\n",
					p, n - w, w, r.deadline_misses, r.disk_utilization * 100, r.wall_s);
			if (r.deadline_misses == 0) {
				res[np].best_r = n - w;
				res[np].best_w = w;
				res[np].util = r.disk_utilization;
				fails = 0;
			} else {
				fails++;
			}
			avfs_simrun_result_free(&r);
		}
		np++;
	}
	if (c.json) {
		json_object *j = json_object_new_object(), *a = json_object_new_array();
		char text[32];

		json_object_object_add(j, "disk", json_object_new_string(c.o.disk));
		json_object_object_add(j, "duration_s", avfs_json_double(c.o.duration_s, "%.0f"));
		snprintf(text, sizeof(text), "%u:%u", c.ratio_r, c.ratio_w);
		json_object_object_add(j, "ratio", json_object_new_string(text));
		for (int i = 0; i < np; i++) {
			json_object *x = json_object_new_object();

			json_object_object_add(x, "policy", json_object_new_string(res[i].name));
			json_object_object_add(x, "streams", json_object_new_int64(res[i].best_r +
										    res[i].best_w));
			snprintf(text, sizeof(text), "%ur%uw", res[i].best_r, res[i].best_w);
			json_object_object_add(x, "workload", json_object_new_string(text));
			json_object_object_add(x, "disk_utilization",
					       avfs_json_double(res[i].util, "%.4f"));
			json_object_array_add(a, x);
		}
		json_object_object_add(j, "results", a);
		return avfs_json_stdout(j, false, "avfs-sim");
	}
	printf("largest mix with zero misses over %.0f simulated s on %s (reads:writes %u:%u):\n",
	       c.o.duration_s, c.o.disk, c.ratio_r, c.ratio_w);
	printf("  %-10s %-10s %-8s %s\n", "policy", "workload", "streams", "utilization");
	for (int i = 0; i < np; i++)
		printf("  %-10s %2ur%uw %8u %9.1f %%\n", res[i].name, res[i].best_r, res[i].best_w,
		       res[i].best_r + res[i].best_w, res[i].util * 100);
	return 0;
}

/* papers/003 Table 2: random BE reads and single-block high-priority requests, without and
 * with chunking (and with chunking + JIT seek). */
static int cmd_preempt(int argc, char **argv)
{
	struct cli c;
	struct avfs_simrun_result r[3];
	const char *label[3] = { "non-preemptible", "chunked", "chunked + JIT" };
	uint32_t chunk;
	int err = parse(argc, argv, MODE_PREEMPT, &c);

	if (err >= 0)
		return err;
	c.o.be = AVFS_BE_PROBE;
	chunk = c.chunk_given ? c.o.conf.chunk : 64 << 10;
	for (int i = 0; i < 3; i++) {
		char why[256] = "";

		c.o.conf.chunk = i ? chunk : 0;
		c.o.conf.jit = i == 2;
		err = avfs_simrun(&c.o, &r[i], why, sizeof(why));
		if (err)
			return run_failed("preempt", err, why);
		avfs_simrun_result_free(&r[i]);	/* its figures stay; only per-stream results go */
	}
	if (c.json) {
		json_object *j = json_object_new_object(), *a = json_object_new_array();

		json_object_object_add(j, "be_size", json_object_new_int64(c.o.be_size));
		json_object_object_add(j, "hp_rate", avfs_json_double(c.o.hp_rate, "%.3f"));
		json_object_object_add(j, "chunk", json_object_new_int64(chunk));
		json_object_object_add(j, "duration_s", avfs_json_double(c.o.duration_s, "%.0f"));
		for (int i = 0; i < 3; i++) {
			json_object *x = json_object_new_object();
			double loss = r[0].be_mbps > 0 ? 1 - r[i].be_mbps / r[0].be_mbps : 0;

			json_object_object_add(x, "mode", json_object_new_string(label[i]));
			json_object_object_add(x, "hp_mean_ms",
					       avfs_json_double(r[i].hp_mean_ms, "%.3f"));
			json_object_object_add(x, "hp_max_ms",
					       avfs_json_double(r[i].hp_max_ms, "%.3f"));
			json_object_object_add(x, "hp_requests",
					       json_object_new_uint64(r[i].hp_requests));
			json_object_object_add(x, "e_twait_ms",
					       avfs_json_double(r[i].e_twait_ms, "%.3f"));
			json_object_object_add(x, "be_mbps",
					       avfs_json_double(r[i].be_mbps, "%.2f"));
			json_object_object_add(x, "be_loss", avfs_json_double(loss, "%.4f"));
			json_object_array_add(a, x);
		}
		json_object_object_add(j, "runs", a);
		return avfs_json_stdout(j, false, "avfs-sim");
	}
	printf("preemption study: %u KiB random BE reads, %.2f high-priority 4 KiB reads/s, "
	       "%.0f s on %s, chunk %u KiB\n", c.o.be_size >> 10, c.o.hp_rate, c.o.duration_s,
	       c.o.disk, chunk >> 10);
	printf("  %-16s %12s %12s %10s %10s %9s\n", "mode", "HP mean ms", "HP max ms", "E(Twait)",
	       "BE Mbps", "BE loss");
	for (int i = 0; i < 3; i++)
		printf("  %-16s %12.2f %12.2f %10.2f %10.1f %8.1f%%\n", label[i], r[i].hp_mean_ms,
		       r[i].hp_max_ms, r[i].e_twait_ms, r[i].be_mbps,
		       r[0].be_mbps > 0 ? (1 - r[i].be_mbps / r[0].be_mbps) * 100 : 0);
	return 0;
}

/* avfs-sim fill [options] DEVICE: format and fill a real device or image as a run would. */
static int cmd_fill(int argc, char **argv)
{
	struct cli c;
	char why[256] = "";
	size_t files = 0;
	const char *dev;
	int err;

	if (argc < 2 || argv[argc - 1][0] == '-') {
		fprintf(stderr, "usage: avfs-sim fill [--disk M] [--size S] [--seed N] [--fill F] "
			"[--rate R] [--alloc A] [--block-size B] DEVICE\n");
		return 2;
	}
	dev = argv[argc - 1];
	err = parse(argc - 1, argv, MODE_FILL, &c);
	if (err >= 0)
		return err;
	err = avfs_sim_fill(&c.o, dev, &files, why, sizeof(why));
	if (err)
		return run_failed("fill", err, why);
	printf("avfs-sim fill: %s formatted as %s%s and filled to %.2f with %zu recordings of "
	       "30 min at %.2f Mbit/s (seed %" PRIu64 ")\n", dev, c.o.disk, c.o.size ? " (part)" : "",
	       c.o.fill, files, c.o.rate * 8 / 1e6, c.o.seed);
	return 0;
}

/* avfs-sim realtime --mount DIR [options]: the run's workload against a running avfsd. */
static int cmd_realtime(int argc, char **argv)
{
	struct cli c;
	struct avfs_simrun_result r;
	struct avfs_sim_rt_extra x;
	char why[256] = "";
	int err = parse(argc, argv, MODE_REALTIME, &c);

	if (err >= 0)
		return err;
	if (!c.mount) {
		fprintf(stderr, "avfs-sim: realtime: say --mount DIR (an avfsd mount, filled by "
			"avfs-sim fill with the same options)\n");
		return 2;
	}
	err = avfs_sim_realtime(&c.o, c.mount, c.hddemu, &r, &x, why, sizeof(why));
	if (err)
		return run_failed("realtime", err, why);
	r.wall_s = c.o.duration_s;
	if (c.json) {
		json_object *j = json_object_new_object(), *doc = json_object_new_object();

		json_object_object_add(j, "hddemu_timing_err_mean_us",
				       avfs_json_double(x.hddemu_err_mean_us, "%.1f"));
		json_object_object_add(j, "hddemu_timing_err_max_us",
				       avfs_json_double(x.hddemu_err_max_us, "%.1f"));
		json_object_object_add(j, "hddemu_utilization",
				       avfs_json_double(x.hddemu_utilization, "%.4f"));
		json_object_object_add(j, "hddemu_late", json_object_new_uint64(x.hddemu_late));
		json_object_object_add(j, "client_errors", json_object_new_uint64(x.client_errors));
		json_object_object_add(j, "pictures", json_object_new_uint64(x.pictures));
		json_object_object_add(j, "reservations", json_object_new_uint64(x.reserved));
		json_object_object_add(doc, "realtime", j);
		json_object_object_add(doc, "run", run_doc(&c, &r));
		err = avfs_json_stdout(doc, true, "avfs-sim");
	} else {
		print_run(&c, &r);
		printf("  real time          %u reservations, %llu pictures, %llu client errors",
		       x.reserved, x.pictures, x.client_errors);
		if (x.hddemu_err_mean_us >= 0)
			printf("; hddemu timing error mean %.1f us, max %.1f us, %llu late, its "
			       "utilization %.1f %%", x.hddemu_err_mean_us, x.hddemu_err_max_us,
			       x.hddemu_late, 100 * x.hddemu_utilization);
		printf("\n");
	}
	avfs_simrun_result_free(&r);
	return err ? err : x.client_errors ? 1 : 0;
}

/* Whether a subcommand's arguments name a scenario FILE: an argument that is no option and
 * no option's value (every option of run and search that takes a value is given as --NAME
 * VALUE or --NAME=VALUE; the legacy forms take no file at all). */
static bool names_file(int argc, char **argv)
{
	static const char *const flags[] = { "--json", "--jit", "--reserve", "--print", "--help",
					     "-h" };

	for (int i = 1; i < argc; i++) {
		bool flag = false;

		if (argv[i][0] != '-')
			return true;
		if (!strcmp(argv[i], "--"))
			return i + 1 < argc;
		for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
			flag |= !strcmp(argv[i], flags[k]);
		if (!flag && !strchr(argv[i], '='))
			i++;	/* its value */
	}
	return false;
}

/* avfs-sim run FILE [options]; with --workload and no FILE, the NrMw run's options. */
static int cmd_run_sub(int argc, char **argv)
{
	bool workload = false;

	for (int i = 1; i < argc; i++)
		workload |= !strncmp(argv[i], "--workload", 10);
	return workload && !names_file(argc, argv) ? cmd_run(argc, argv) :
	       avfs_sim_cmd_run_file(argc, argv);
}

/* avfs-sim search FILE --grow CLASS; without a FILE, the NrMw search of each policy. */
static int cmd_search_sub(int argc, char **argv)
{
	return names_file(argc, argv) ? avfs_sim_cmd_search_file(argc, argv) : cmd_search(argc, argv);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);	/* argv[0] is the name */
	} cmds[] = {
		{ "disk", cmd_disk },
		{ "run", cmd_run_sub },
		{ "search", cmd_search_sub },
		{ "preempt", cmd_preempt },
		{ "reserve", avfs_sim_cmd_reserve },
		{ "fill", cmd_fill },
		{ "realtime", cmd_realtime },
		{ "isolation", avfs_sim_cmd_isolation },
	};

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("avfs-sim %s\n", AVFS_VERSION);
		return 0;
	}
	return cmd_run(argc, argv);	/* no subcommand: one run, options from argv[1] */
}
