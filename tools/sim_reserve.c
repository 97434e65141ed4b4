/*
 * sim_reserve.c — avfs-sim's admission and isolation studies (SPEC §7, measured in virtual
 * time). `reserve` admits random sequences of reservations (or one service repeated) through
 * sched/admit.c as the daemon would, runs the admitted set and checks it meets every deadline,
 * then searches the largest prefix of the same sequence that does, to say how conservative
 * admission is; beside it, how many the other admission test would have taken.
 * `isolation` replays the bandwidth-class experiments of papers/004 ch. 3 and the period
 * experiment of papers/002 §9.1. The tool parses, runs (sim/simrun.c) and prints; the
 * admission and the bucket are the daemon's own code.
 */
#include "config.h"
#include "sim_reserve.h"

#include "jsonout.h"

#include "admit.h"
#include "simrun.h"
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

#define MIB 1048576.0
#define MBIT 1e6

enum place { PLACE_FILES, PLACE_INNER, PLACE_SPREAD };

struct cli {
	struct avfs_simrun_opts o;	/* disk, fill, duration, seed, scheduler */
	unsigned seeds, requests;
	uint64_t first_seed;
	double search_s;
	bool json, isolation;
	enum avfs_admit_test test;	/* the admission test deciding (the other one is counted) */
	double k;		/* the sweep test's K (0 < k; default the library's) */
	bool uniform;		/* every request is `service` (--service) */
	struct avfs_service_req service;
	enum place place;
	uint64_t quota_rate;	/* bytes/s, any uid; 0: none */
	uint32_t quota_streams;
	const char *scenario;
	const char *trace;	/* prefix of the runs' request traces (docs/TRACE.md), or NULL */
	unsigned be;		/* greedy best-effort readers beside every run (--be) */
};

static uint64_t rnd(uint64_t *x)	/* splitmix64 */
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unit(uint64_t *x)
{
	return (double)(rnd(x) >> 11) / 9007199254740992.0;
}

static const char *errname(int err)
{
	switch (err) {
	case -EBUSY: return "-EBUSY";
	case -EDQUOT: return "-EDQUOT";
	case -EINVAL: return "-EINVAL";
	case -ENOMEM: return "-ENOMEM";
	default: return "-E?";
	}
}

/* The service-time model and block size of o's disk (avfs_simrun_model). 0, or the exit code
 * (2 for a bad --disk or --size, else 1), the reason said on stderr. */
static int model_of(const struct avfs_simrun_opts *o, struct avfs_svc_model *m, uint64_t *block)
{
	char why[256] = "";
	int err = avfs_simrun_model(o, m, block, why, sizeof(why));

	if (!err)
		return 0;
	fprintf(stderr, "avfs-sim: %s\n", why[0] ? why : strerror(-err));
	return err == -EINVAL || err == -ENOENT ? 2 : 1;
}

/* Admission's configuration for o's disk as a daemon would build it: the superblock's model,
 * the named model's mechanics (seek curve, zone rates), the allocator's spread, the mixer's
 * margin, best-effort age and chunk. 0, or the exit code after a message (model_of). */
static int admit_conf_of(const struct cli *c, struct avfs_admit_conf *conf)
{
	struct avfs_svc_model model;
	uint64_t block;
	int err = model_of(&c->o, &model, &block);

	if (err)
		return err;
	avfs_admit_conf_default(conf, &model, block);
	(void)avfs_sweep_disk_named(&conf->disk, c->o.disk, c->o.size);	/* else derived */
	conf->zrr = c->o.alloc == AVFS_ALLOC_ZRR || c->o.alloc == AVFS_ALLOC_ZRR_RUN;
	/* (the run mkfs makes of it, alloc/zrr.h) */
	conf->run = c->o.alloc != AVFS_ALLOC_ZRR_RUN ? 1 :
		    AVFS_ALLOC_RUN_BYTES > block ? (uint32_t)(AVFS_ALLOC_RUN_BYTES / block) : 1;
	/* (the zones mkfs makes of it: SPEC §4) */
	err = avfs_alloc_zone_count(model.lmax / block, block, 0);
	conf->zones = err > 0 ? (unsigned)err : 1;
	conf->margin_ns = c->o.conf.margin_ns;
	conf->be_age_ns = c->o.conf.be_age_ns;
	conf->chunk = c->o.conf.chunk;
	conf->coalesce = c->o.conf.rotational ? c->o.conf.coalesce : 0;
	conf->isolation = c->isolation;
	conf->test = c->test;
	if (c->k > 0)
		conf->k = c->k;
	return 0;
}

static void usage_reserve(FILE *f)
{
	fprintf(f,
		"usage: avfs-sim reserve [--seeds 20] [--first-seed 1] [--requests 40] [--duration 3600]\n"
		"                        [--search-duration S] [--disk avfs-250g] [--isolation on|off]\n"
		"                        [--test sweep|fahrrad] [--k K] [--service RATE:BUFFER:IO[:write]]\n"
		"                        [--place files|inner|spread] [--alloc zrr-run|zrr|contig]\n"
		"                        [--quota-rate R --quota-streams N] [--fill 0.8] [--trace PREFIX]\n"
		"                        [--be N] [--set NAME=VALUE] [--json]\n"
		"\n"
		"For each seed: a random sequence of reservation requests (2-40 Mbit/s, buffers 2-32 MiB,\n"
		"requests of 256 KiB, 512 KiB or 1 MiB, 70 %% playback / 30 %% recording, files placed by\n"
		"the fill and ZRR) goes through daemon/admit.c in order (refusals are skipped, as a daemon\n"
		"would); the admitted set runs for --duration simulated seconds at full rate and its misses\n"
		"are counted (they must be 0). Then a binary search over k finds the largest k such that\n"
		"the first k requests of the sequence, admission ignored, run --search-duration seconds\n"
		"(default: --duration) without a miss; admitted / k is how much of what the disk can carry\n"
		"admission keeps back. A shorter search is checked by running its k for --duration: sets\n"
		"that hold for 600 s can collapse later, once the recordings fill the disk and deletions\n"
		"and their metadata commits begin. --search-duration 0: no search, only admission and\n"
		"the admitted run (the maximum does not depend on admission: a study of admission can\n"
		"take it from an earlier run); each seed's \"measured\" figures in --json split the\n"
		"admitted run's disk time into the round model's terms.\n"
		"\n"
		"  --test sweep|fahrrad the admission test that decides: the round (sweep) model of\n"
		"                       sched/sweep.h (default) or Fahrrad's utilization test with WCRT\n"
		"                       padding, the one it replaced; the other one's count is shown beside\n"
		"  --k K                the sweep test's margin for variance (default 10: e^-2K)\n"
		"  --isolation on|off   sweep: reserve for the best effort the mixer puts first (default);\n"
		"                       fahrrad: pad for Theorem 3 of papers/002, or only for Theorem 2\n"
		"  --service R:B:S[:write]  every request the same service instead of random ones: a bit\n"
		"                       rate, a buffer and a request size (19.39M:4M:512K, HD with a 4 MiB\n"
		"                       buffer); the zero-miss maximum is then the largest such set\n"
		"  --place P            where playbacks read: files (default: recordings through the file\n"
		"                       system), inner (raw runs in the innermost tenth, the slowest\n"
		"                       zones), spread (raw runs spread over the stroke); raw runs tell\n"
		"                       admission their zone rates; recordings are new files either way\n"
		"  --alloc A            the allocator of the file system: zrr-run (default), zrr, contig\n"
		"  --quota-rate R       a quota for every uid (bits/s, K/M/G); requests come from 4 uids\n"
		"  --quota-streams N    at most N streams per uid\n"
		"  --be N               N greedy best-effort readers (sequential, 1 MiB requests) beside\n"
		"                       every run, the admitted one and the search's: what admission\n"
		"                       keeps for best effort (isolation) is then used, not idle\n"
		"  --trace PREFIX       each seed's admitted run traced to PREFIX.seedN.csv (docs/TRACE.md;\n"
		"                       the stream column is the admitted stream's index)\n"
		"  --set NAME=VALUE     a scheduler setting (avfs-sim --help lists them), for the runs\n"
		"                       and for admission's model of the mixer\n");
}

static void usage_isolation(FILE *f)
{
	fprintf(f,
		"usage: avfs-sim isolation --scenario NAME [--duration 600] [--seed 1] [--disk avfs-250g]\n"
		"                          [--bw park|at-once|uncharged] [--trace PREFIX]\n"
		"                          [--set NAME=VALUE] [--json]\n"
		"\n"
		"The bandwidth class (token bucket, SPEC §7) in virtual time:\n"
		"  be-greedy        reserved 3 MiB/s readers (as many as admission takes) with 0..8 greedy\n"
		"                   best-effort readers: the reserved misses and P0 must not rise\n"
		"                   (papers/004 Table 3.2, Fig. 3.5)\n"
		"  greedy-reserved  a greedy reader reserving 3 MiB/s with busy best-effort readers, with\n"
		"                   rate-limited ones and alone: about its rate when best effort is busy,\n"
		"                   the rest of the disk otherwise (papers/004 Tables 3.6, 3.7)\n"
		"  overprovision    a 4 MiB/s video reserving 16 MiB/s beside greedy readers: the\n"
		"                   aggregate throughput must not drop (papers/004 Tables 3.4-3.6)\n"
		"  fahrrad4         four greedy sequential readers at four places on the disk, each\n"
		"                   reserving 20 %% of disk time (turned into a rate with the model), stream\n"
		"                   4's period 125 ms..2 s: each should get its 20 %% (papers/002 §9.1, Fig. 3)\n"
		"  all              every scenario\n"
		"\n"
		"  --bw park     above its rate a reserved stream's request waits until its tokens are\n"
		"                due (then real-time) or no other best-effort request is pending (then\n"
		"                best effort, uncharged: work conservation); the default\n"
		"  --bw at-once  above its rate the request is charged to the bucket's debt (floor: half\n"
		"                a bucket) and sent as best effort at once\n"
		"  --trace PREFIX  every run traced to PREFIX.SCENARIO.CASE.csv (docs/TRACE.md; the\n"
		"                stream column is the stream's index in the case's table)\n"
		"  --set NAME=VALUE  a scheduler setting (avfs-sim --help lists them; fahrrad4 sets\n"
		"                its own margin and urgent window)\n");
}

/* --service RATE:BUFFER:IO[:write] (a bit rate, binary sizes). 0 or -EINVAL. */
static int parse_service(const char *arg, struct avfs_service_req *r)
{
	char buf[128], *f[5], *save = NULL;
	unsigned n = 0;
	uint64_t b, io;
	double rate;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	for (char *t = strtok_r(buf, ":", &save); t && n < 5; t = strtok_r(NULL, ":", &save))
		f[n++] = t;
	if (n < 3 || n > 4 || (n == 4 && strcmp(f[3], "write") && strcmp(f[3], "read")) ||
	    avfs_parse_rate(f[0], true, &rate) || !(rate >= 1) || rate > 1e10 ||
	    avfs_parse_size(f[1], &b) || avfs_parse_size(f[2], &io) || !io || io % 4096 ||
	    io > (16u << 20) || b <= io || b / io > 1024)
		return -EINVAL;
	*r = (struct avfs_service_req){ .rate = (uint64_t)rate, .buffer = b, .io = (uint32_t)io,
					.write = n == 4 && !strcmp(f[3], "write") };
	return 0;
}

/* Options of both subcommands. 0, 1 (printed help) or 2 (bad input). */
static int parse(int argc, char **argv, struct cli *c, bool reserve)
{
	static const struct option opts[] = {
		{ "seeds", required_argument, NULL, 'n' },
		{ "first-seed", required_argument, NULL, 'F' },
		{ "requests", required_argument, NULL, 'q' },
		{ "duration", required_argument, NULL, 't' },
		{ "search-duration", required_argument, NULL, 'S' },
		{ "disk", required_argument, NULL, 'd' },
		{ "isolation", required_argument, NULL, 'I' },
		{ "quota-rate", required_argument, NULL, 'Q' },
		{ "quota-streams", required_argument, NULL, 'N' },
		{ "fill", required_argument, NULL, 'f' },
		{ "scenario", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "bw", required_argument, NULL, 'B' },
		{ "trace", required_argument, NULL, 'T' },
		{ "test", required_argument, NULL, 'X' },
		{ "k", required_argument, NULL, 'K' },
		{ "service", required_argument, NULL, 'V' },
		{ "place", required_argument, NULL, 'P' },
		{ "alloc", required_argument, NULL, 'A' },
		{ "set", required_argument, NULL, 'x' },
		{ "be", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch, li = -1;
	double v;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, &li)) != -1) {
		switch (ch) {
		case 'n':
		case 'q':
			if (!reserve || avfs_parse_scaled(optarg, 1000, &v) || v < 1 || v > 1000 ||
			    v != floor(v))
				goto bad;
			*(ch == 'n' ? &c->seeds : &c->requests) = (unsigned)v;
			break;
		case 'F':
		case 's':
			if (reserve != (ch == 'F'))
				goto bad;
			if (avfs_parse_uint(optarg, &c->first_seed))
				goto bad;
			c->o.seed = c->first_seed;
			break;
		case 't':
		case 'S':
			if ((ch == 'S' && !reserve) || avfs_parse_scaled(optarg, 1000, &v) ||
			    v < 0 || (v == 0 && ch == 't') || v > 1e6)
				goto bad;
			*(ch == 't' ? &c->o.duration_s : &c->search_s) = v;
			break;
		case 'd': c->o.disk = optarg; break;
		case 'I':
			if (!reserve || (strcmp(optarg, "on") && strcmp(optarg, "off")))
				goto bad;
			c->isolation = !strcmp(optarg, "on");
			break;
		case 'Q':
			if (!reserve || avfs_parse_rate(optarg, true, &v) || v < 1)
				goto bad;
			c->quota_rate = (uint64_t)v;
			break;
		case 'N':
			if (!reserve || avfs_parse_scaled(optarg, 1000, &v) || v < 1 || v > 1e6)
				goto bad;
			c->quota_streams = (uint32_t)v;
			break;
		case 'f':
			if (avfs_parse_number(optarg, &c->o.fill) || c->o.fill > 0.95)
				goto bad;
			break;
		case 'c':
			if (reserve)
				goto bad;
			c->scenario = optarg;
			break;
		case 'B':
			if (reserve)
				goto bad;
			if (!strcmp(optarg, "park"))
				c->o.bw_policy = AVFS_BW_PARK;
			else if (!strcmp(optarg, "at-once"))
				c->o.bw_policy = AVFS_BW_AT_ONCE;
			else if (!strcmp(optarg, "uncharged"))
				c->o.bw_policy = AVFS_BW_UNCHARGED;
			else
				goto bad;
			break;
		case 'T': c->trace = optarg; break;
		case 'X':
			if (!reserve || (strcmp(optarg, "sweep") && strcmp(optarg, "fahrrad")))
				goto bad;
			c->test = strcmp(optarg, "sweep") ? AVFS_ADMIT_FAHRRAD : AVFS_ADMIT_SWEEP;
			break;
		case 'K':
			if (!reserve || avfs_parse_number(optarg, &v) || !(v > 0) || v > 1000)
				goto bad;
			c->k = v;
			break;
		case 'V':
			if (!reserve || parse_service(optarg, &c->service))
				goto bad;
			c->uniform = true;
			break;
		case 'P':
			if (!reserve)
				goto bad;
			if (!strcmp(optarg, "files"))
				c->place = PLACE_FILES;
			else if (!strcmp(optarg, "inner"))
				c->place = PLACE_INNER;
			else if (!strcmp(optarg, "spread"))
				c->place = PLACE_SPREAD;
			else
				goto bad;
			break;
		case 'A':
			if (avfs_alloc_policy_parse(optarg) < 0)
				goto bad;
			c->o.alloc = (uint32_t)avfs_alloc_policy_parse(optarg);
			break;
		case 'x': {
			char why[160];

			if (avfs_simrun_set(&c->o, optarg, why, sizeof(why))) {
				fprintf(stderr, "avfs-sim %s: --set %s\n", argv[0], why);
				return 2;
			}
			break;
		}
		case 'b':
			if (!reserve || avfs_parse_scaled(optarg, 1000, &v) || v < 0 || v > 64 ||
			    v != floor(v))
				goto bad;
			c->be = (unsigned)v;
			break;
		case 'j': c->json = true; break;
		case 'h':
			(reserve ? usage_reserve : usage_isolation)(stdout);
			return 1;
		default:
			(reserve ? usage_reserve : usage_isolation)(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "avfs-sim: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return 0;
bad:
	fprintf(stderr, "avfs-sim %s: --%s%s%s: not valid here (see --help)\n", argv[0],
		li >= 0 ? opts[li].name : "?", optarg ? " " : "", optarg ? optarg : "");
	return 2;
}

/* A reserved stream at the rate of a service: through the file system (place < 0) or a raw
 * run from that fraction of the data region on. */
static struct avfs_simrun_stream spec_of(const struct avfs_service_req *r, double place)
{
	return (struct avfs_simrun_stream){ .rate = (double)r->rate, .io = r->io,
					    .buffer = r->buffer, .write = r->write,
					    .reserved = true, .place = place };
}

/* The disk's transfer rate at fraction x of its bytes: the named model's zone, or the linear
 * service-time model. */
static double rate_at(const struct avfs_admit_conf *c, double x)
{
	const struct avfs_sweep_disk *d = &c->disk;
	double r = 0;

	if (!d->nbands)
		return c->model.dmax - (c->model.dmax - c->model.dmin) * x;
	for (unsigned k = 0; k < d->nbands && d->band_start[k] <= x; k++)
		r = d->band_rate[k];
	return r;
}

/* Where playback i of a raw placement starts (a fraction of the data region; it runs to the
 * region's end and wraps to its start), or -1: through the file system. Recordings always go
 * through it (new files): raw writers would run over each other's pages, and the engine orders
 * writes to the same pages, which no two real recordings share. */
static double place_of(enum place p, const struct avfs_service_req *r, unsigned i)
{
	if (r->write)
		return -1;
	switch (p) {
	case PLACE_INNER:	/* the innermost tenth: the slowest zones, short seeks */
		return 0.9 + 0.0025 * (i % 40);
	case PLACE_SPREAD:	/* over the whole stroke, each new one between the others */
		return fmod(0.6180339887498949 * i, 1.0) * 0.95;
	default:
		return -1;
	}
}

/* A raw run from `place` to the end tells admission its rates (its layout): the mean of 1/d
 * over [place, 1), the slowest at the end, the fastest at place. */
static void raw_layout(const struct avfs_admit_conf *c, double place, struct avfs_service_req *r)
{
	enum { N = 256 };
	double inv = 0;

	for (int k = 0; k < N; k++)
		inv += 1 / rate_at(c, place + (1 - place) * (k + 0.5) / N);
	r->d_mean = N / inv;
	r->d_slow = rate_at(c, 1 - 1e-9);
	r->d_fast = rate_at(c, place);
}

/* ---- reserve ---- */

/* The reservation requests of one seed: random ones, or --service n times. */
static void sequence(const struct cli *c, uint64_t seed, unsigned n, struct avfs_service_req *out)
{
	static const uint32_t ios[] = { 256u << 10, 512u << 10, 1u << 20 };
	uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ 0x5eed;

	for (unsigned i = 0; i < n; i++) {
		if (c->uniform) {
			out[i] = c->service;
			out[i].uid = 1000 + i % 4;
			continue;
		}
		out[i] = (struct avfs_service_req){
			.rate = (uint64_t)((2 + 38 * unit(&x)) * MBIT / 8),
			.buffer = (2 + rnd(&x) % 31) << 20,
			.io = ios[rnd(&x) % 3],
			.write = rnd(&x) % 10 < 3,
			.uid = 1000 + (uint32_t)(rnd(&x) % 4),
		};
	}
}

struct seed_res {
	uint64_t seed;
	unsigned asked, admitted, kmax, search_runs;
	unsigned admitted_other;	/* what the other test would have admitted (not run) */
	double round_ms, need, limit;	/* the sweep model over the admitted set */
	struct avfs_sweep_result sweep;	/* all of its figures */
	double admitted_rate, kmax_rate;	/* bytes/s */
	double load, util, margin_min_ms;
	double be_mib_s;	/* what the --be readers got in the admitted run */
	uint64_t rt_requests, misses;
	uint64_t kmax_misses;	/* the largest zero-miss prefix run for the full duration */
	double commit_max_s;	/* the admitted run's longest metadata commit */
	uint64_t commits, checkpoints;	/* ... its commits and checkpoints */
	struct avfs_simdisk_split split;	/* where the admitted run's disk time went */
	double run_s;		/* its length */
	struct avfs_sweep_result kmax_sweep;	/* the round model of the largest zero-miss
						 * prefix (admission ignored) */
	struct avfs_simdisk_split kmax_split;	/* where its clean search run's disk time went */
	double kmax_run_s;	/* that run's length */
	unsigned search_full;	/* search runs that ended on a full file system */
	char adm_fail[160];	/* why the admitted run ended early ("" if it did not) */
	char kmax_fail[160];	/* why the full-duration run of the maximum ended early */
	unsigned refused[3];	/* -EBUSY, -EDQUOT, other */
	int first_err;		/* 0: nothing refused */
	unsigned first_idx;
	uint64_t first_left_rate;
	char first_why[200];
	double *prefix_need;	/* the round model's need of the first k requests, k = 1..asked
				 * (admission ignored, as the search runs them) */
	struct avfs_service_req *req;	/* the requests, in order (asked of them) */
	bool *admitted_req;	/* admission's answer to each */
};

/* Run streams[0..n) for duration s, traced to PREFIX.tag.csv with --trace and a tag: 0, the
 * exit code after a message, or with fail given -ENOSPC and the reason in fail: a recording
 * that finds no room is an outcome of the workload, not an error of the tool. */
static int run_set(const struct cli *c, const struct avfs_simrun_stream *st, unsigned n,
		   double duration, struct avfs_simrun_result *res, const char *tag, char *fail,
		   size_t faillen)
{
	struct avfs_simrun_opts o = c->o;
	const struct avfs_simrun_be greedy = { .kind = AVFS_BE_GREEDY, .count = c->be,
					       .io = 1u << 20 };
	char why[256] = "", path[4096];
	int err;

	o.streams = st;
	o.nstreams = n;
	if (c->be) {
		o.bes = &greedy;
		o.nbes = 1;
	}
	o.duration_s = duration;
	if (c->trace && tag) {
		snprintf(path, sizeof(path), "%s.%s.csv", c->trace, tag);
		o.trace_path = path;
	}
	err = avfs_simrun(&o, res, why, sizeof(why));
	if (err == -ENOSPC && fail) {
		snprintf(fail, faillen, "%s", why);
		return err;
	}
	if (err) {
		fprintf(stderr, "avfs-sim: seed %" PRIu64 ", %u streams: %s\n", o.seed, n,
			why[0] ? why : strerror(-err));
		return err == -EINVAL ? 2 : 1;
	}
	return 0;
}

/* A run whose recordings found no room part-way (their writes refused with -ENOSPC, counted
 * among the engine's misses) ended on a full file system, as one that could not create a
 * recording does: why, into fail. What admission answers for is the rest of the misses, the
 * late ones; a reservation says nothing of how long a recording runs. */
static void full_disk(const struct avfs_simrun_result *res, char *fail, size_t faillen)
{
	if (res->nospace)
		snprintf(fail, faillen, "a recording found no room after %.1f s (%" PRIu64 " writes "
			 "refused: the file system full, no recording a DVR could delete)",
			 res->nospace_s, res->nospace);
}

static int reserve_seed(const struct cli *c, uint64_t seed, struct seed_res *sr)
{
	struct cli cs = *c, cq;
	unsigned n = c->requests;
	struct avfs_service_req *req = calloc(n, sizeof(*req));
	struct avfs_simrun_stream *all = calloc(n, sizeof(*all)), *adm = calloc(n, sizeof(*adm));
	struct avfs_admit_conf conf, oconf;
	struct avfs_admit *a = NULL, *other = NULL, *pre = NULL;
	struct avfs_sweep_result sweep, *prefix = NULL;
	struct avfs_simrun_result res;
	char why[256] = "";
	unsigned lo, hi;
	int err;

	memset(sr, 0, sizeof(*sr));
	sr->seed = seed;
	sr->asked = n;
	cs.o.seed = seed;
	if (!req || !all || !adm) {
		err = 1;
		goto out;
	}
	err = admit_conf_of(&cs, &conf);
	if (err)
		goto out;
	sequence(c, seed, n, req);
	sr->req = malloc(n * sizeof(*sr->req));
	sr->admitted_req = calloc(n, sizeof(*sr->admitted_req));
	if (!sr->req || !sr->admitted_req) {
		err = 1;
		goto out;
	}
	memcpy(sr->req, req, n * sizeof(*req));
	for (unsigned i = 0; i < n; i++)
		if (place_of(c->place, &req[i], i) >= 0)
			raw_layout(&conf, place_of(c->place, &req[i], i), &req[i]);
	/* admission, in order, as the daemon meets the requests; the other test beside */
	oconf = conf;
	oconf.test = conf.test == AVFS_ADMIT_SWEEP ? AVFS_ADMIT_FAHRRAD : AVFS_ADMIT_SWEEP;
	if (avfs_admit_create(&a, &conf) || avfs_admit_create(&other, &oconf) ||
	    ((c->quota_rate || c->quota_streams) &&
	     (avfs_admit_set_quota(a, AVFS_ADMIT_ANY_UID, c->quota_rate, c->quota_streams) ||
	      avfs_admit_set_quota(other, AVFS_ADMIT_ANY_UID, c->quota_rate,
				   c->quota_streams)))) {
		err = 1;
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		struct avfs_admit_left left = { 0 };
		int64_t id = avfs_admit_add(a, &req[i], &left, why, sizeof(why));

		sr->admitted_other += avfs_admit_add(other, &req[i], NULL, NULL, 0) > 0;
		all[i] = spec_of(&req[i], place_of(c->place, &req[i], i));
		if (id > 0) {
			sr->admitted_req[i] = true;
			adm[sr->admitted++] = all[i];
			sr->admitted_rate += (double)req[i].rate;
			continue;
		}
		sr->refused[id == -EBUSY ? 0 : id == -EDQUOT ? 1 : 2]++;
		if (!sr->first_err) {
			sr->first_err = (int)id;
			sr->first_idx = i;
			sr->first_left_rate = left.rate;
			snprintf(sr->first_why, sizeof(sr->first_why), "%s", why);
		}
	}
	/* the model's need of every prefix, to set beside the search's zero-miss maximum */
	sr->prefix_need = calloc(n, sizeof(*sr->prefix_need));
	prefix = calloc(n, sizeof(*prefix));
	if (!sr->prefix_need || !prefix || avfs_admit_create(&pre, &conf)) {
		err = 1;
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		struct avfs_sweep_result pr;

		if (avfs_admit_force(pre, &req[i], NULL, 0) < 0 ||
		    avfs_admit_sweep(pre, NULL, &pr)) {
			err = 1;
			goto out;
		}
		sr->prefix_need[i] = pr.verdict == AVFS_SWEEP_SHORT ? INFINITY : pr.need;
		prefix[i] = pr;
	}
	sr->load = avfs_admit_load(a);
	avfs_admit_sweep(a, NULL, &sweep);
	sr->sweep = sweep;
	sr->round_ms = sweep.round_ns / 1e6;
	sr->need = sweep.need;
	sr->limit = sweep.limit;
	snprintf(why, sizeof(why), "seed%" PRIu64, seed);
	err = run_set(&cs, adm, sr->admitted, c->o.duration_s, &res, why, sr->adm_fail,
		      sizeof(sr->adm_fail));
	if (err && err != -ENOSPC)
		goto out;
	if (!err) {
		full_disk(&res, sr->adm_fail, sizeof(sr->adm_fail));
		sr->util = res.disk_utilization;
		sr->rt_requests = res.rt_requests;
		sr->misses = res.deadline_misses - res.nospace;
		sr->margin_min_ms = res.margin_min_ms;
		sr->be_mib_s = res.nbes ? res.bes[0].mib_s : 0;
		sr->commit_max_s = res.commit_max_s;
		sr->commits = res.commits;
		sr->checkpoints = res.checkpoints;
		sr->split = res.split;
		sr->run_s = res.sim_s;
		avfs_simrun_result_free(&res);
	}
	/* the largest zero-miss prefix: lo runs clean, hi does not (n + 1: not tried; no search
	 * at all with --search-duration 0). A search run ends at its first miss: whether there
	 * is one is all it asks (the same answers, sooner). */
	cq = cs;
	cq.o.stop_at_miss = true;
	lo = 0;
	hi = c->search_s > 0 ? n + 1 : 1;
	while (hi - lo > 1) {
		unsigned k = lo + (hi - lo) / 2;

		err = run_set(&cq, all, k, c->search_s, &res, NULL, why, sizeof(why));
		if (err && err != -ENOSPC)
			goto out;
		sr->search_runs++;
		sr->search_full += err == -ENOSPC || (!err && res.nospace);
		if (!err && res.deadline_misses == 0) {
			lo = k;
			sr->kmax_split = res.split;
			sr->kmax_run_s = res.sim_s;
		} else
			hi = k;
		if (!err)
			avfs_simrun_result_free(&res);
	}
	sr->kmax = lo;
	if (lo)
		sr->kmax_sweep = prefix[lo - 1];
	for (unsigned i = 0; i < lo; i++)
		sr->kmax_rate += (double)req[i].rate;
	/* does what the shorter search found hold for the whole duration? */
	if (lo && c->search_s != c->o.duration_s) {
		err = run_set(&cs, all, lo, c->o.duration_s, &res, NULL, sr->kmax_fail,
			      sizeof(sr->kmax_fail));
		if (err && err != -ENOSPC)
			goto out;
		if (!err) {
			full_disk(&res, sr->kmax_fail, sizeof(sr->kmax_fail));
			sr->kmax_misses = res.deadline_misses - res.nospace;
			avfs_simrun_result_free(&res);
		}
	}
	err = 0;
out:
	avfs_admit_destroy(a);
	avfs_admit_destroy(other);
	avfs_admit_destroy(pre);
	free(prefix);
	free(req);
	free(all);
	free(adm);
	return err;
}

static void free_seeds(struct seed_res *sr, unsigned n)
{
	for (unsigned i = 0; sr && i < n; i++) {
		free(sr[i].prefix_need);
		free(sr[i].req);
		free(sr[i].admitted_req);
	}
	free(sr);
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* {"ebusy": N, "edquot": N, "other": N}: refusals by errno (seed_res.refused's order). */
static json_object *refused_json(const unsigned refused[3])
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ebusy", json_object_new_int64(refused[0]));
	json_object_object_add(o, "edquot", json_object_new_int64(refused[1]));
	json_object_object_add(o, "other", json_object_new_int64(refused[2]));
	return o;
}

/* A reason, or null when there is none. */
static json_object *why_or_null(const char *why)
{
	return why[0] ? json_object_new_string(why) : NULL;
}

/* The other test's name, whose admitted count is shown beside. */
static json_object *service_json(const struct avfs_service_req *r)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "rate_bps", json_object_new_uint64(r->rate * 8));
	json_object_object_add(o, "buffer", json_object_new_uint64(r->buffer));
	json_object_object_add(o, "io", json_object_new_int64(r->io));
	json_object_object_add(o, "write", json_object_new_boolean(r->write));
	return o;
}

static const char *other_key(const struct cli *c)
{
	return c->test == AVFS_ADMIT_SWEEP ? "admitted_fahrrad" : "admitted_sweep";
}

/* The round model's terms of a set (sweep.h). */
static json_object *sweep_json(const struct avfs_sweep_result *r)
{
	json_object *w = json_object_new_object();
	const struct {
		const char *key;
		double v;
	} f[] = {
		{ "round_ms", r->round_ns / 1e6 }, { "gather_ms", r->gather_ns / 1e6 },
		{ "visits_per_s", r->visits }, { "detours_per_s", r->detours },
		{ "urgent_per_s", r->urgent }, { "commands_per_s", r->commands },
		{ "seek", r->seek }, { "rotation", r->rot }, { "transfer", r->xfer },
		{ "write_turns", r->turns }, { "overheads", r->cmds }, { "margin", r->margin },
		{ "best_effort", r->be }, { "need", r->need }, { "wcrt_ms", r->wcrt_ns / 1e6 },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		json_object_object_add(w, f[i].key, avfs_json_double(f[i].v, "%.4f"));
	return w;
}

/* The same terms as a run's disk spent them over run_s seconds (the simulated drive's
 * components of every read and write). */
static json_object *split_json(const struct avfs_simdisk_split *p, double run_s)
{
	json_object *w = json_object_new_object();
	double t = run_s > 0 ? run_s * 1e9 : 1, sec = t / 1e9;
	const struct {
		const char *key;
		double v;
	} f[] = {
		{ "positionings_per_s", (double)p->seeks / sec },
		{ "waits_per_s", (double)p->waits / sec },
		{ "commands_per_s", (double)p->commands / sec },
		{ "seek", p->seek_ns / t },
		{ "rotation", (p->rot_ns - p->write_rot_ns) / t },
		{ "write_rotation", p->write_rot_ns / t },
		{ "transfer", p->xfer_ns / t },
		{ "overheads", p->overhead_ns / t },
		{ "seek_ms_per_positioning", p->seeks ? p->seek_ns / 1e6 / (double)p->seeks : 0 },
		{ "rotation_ms_per_wait", p->waits ? p->rot_ns / 1e6 / (double)p->waits : 0 },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		json_object_object_add(w, f[i].key, avfs_json_double(f[i].v, "%.4f"));
	return w;
}

static json_object *seed_json(const struct cli *c, const struct seed_res *s)
{
	json_object *o = json_object_new_object(), *fr = NULL;

	json_object_object_add(o, "seed", json_object_new_uint64(s->seed));
	json_object_object_add(o, "requested", json_object_new_int64(s->asked));
	json_object_object_add(o, "admitted", json_object_new_int64(s->admitted));
	json_object_object_add(o, other_key(c), json_object_new_int64(s->admitted_other));
	json_object_object_add(o, "sweep_round_ms", avfs_json_double(s->round_ms, "%.1f"));
	json_object_object_add(o, "sweep_gather_ms", avfs_json_double(s->sweep.gather_ns / 1e6, "%.1f"));
	json_object_object_add(o, "sweep_need", avfs_json_double(s->need, "%.4f"));
	json_object_object_add(o, "sweep_limit", avfs_json_double(s->limit, "%.4f"));
	json_object_object_add(o, "sweep", sweep_json(&s->sweep));
	json_object_object_add(o, "measured", split_json(&s->split, s->run_s));
	json_object_object_add(o, "admitted_rate_bps", avfs_json_double(s->admitted_rate * 8,
									  "%.0f"));
	json_object_object_add(o, "admission_load", avfs_json_double(s->load, "%.4f"));
	json_object_object_add(o, "disk_utilization", avfs_json_double(s->util, "%.4f"));
	json_object_object_add(o, "rt_requests", json_object_new_uint64(s->rt_requests));
	json_object_object_add(o, "misses", json_object_new_uint64(s->misses));
	json_object_object_add(o, "margin_min_ms", avfs_json_double(s->margin_min_ms, "%.1f"));
	json_object_object_add(o, "be_mib_s", avfs_json_double(s->be_mib_s, "%.2f"));
	json_object_object_add(o, "commit_max_s", avfs_json_double(s->commit_max_s, "%.2f"));
	json_object_object_add(o, "commits", json_object_new_uint64(s->commits));
	json_object_object_add(o, "checkpoints", json_object_new_uint64(s->checkpoints));
	json_object_object_add(o, "admitted_failed", why_or_null(s->adm_fail));
	json_object_object_add(o, "max_streams", json_object_new_int64(s->kmax));
	/* the largest zero-miss prefix as the round model sees it and as its clean search run
	 * spent the disk (the set admission would have to take to admit all it can) */
	json_object_object_add(o, "max_sweep", s->kmax ? sweep_json(&s->kmax_sweep) : NULL);
	json_object_object_add(o, "max_measured",
			       s->kmax ? split_json(&s->kmax_split, s->kmax_run_s) : NULL);
	json_object_object_add(o, "max_rate_bps", avfs_json_double(s->kmax_rate * 8, "%.0f"));
	json_object_object_add(o, "max_misses_full_duration",
			       json_object_new_uint64(s->kmax_misses));
	json_object_object_add(o, "max_failed_full_duration", why_or_null(s->kmax_fail));
	json_object_object_add(o, "ratio_streams", avfs_json_double(ratio(s->admitted, s->kmax),
								      "%.4f"));
	json_object_object_add(o, "ratio_rate", avfs_json_double(ratio(s->admitted_rate,
									 s->kmax_rate), "%.4f"));
	json_object_object_add(o, "search_runs", json_object_new_int64(s->search_runs));
	json_object_object_add(o, "search_runs_full", json_object_new_int64(s->search_full));
	json_object_object_add(o, "refused", refused_json(s->refused));
	if (s->first_err) {
		fr = json_object_new_object();
		json_object_object_add(fr, "index", json_object_new_int64(s->first_idx));
		json_object_object_add(fr, "error", json_object_new_string(errname(s->first_err)));
		json_object_object_add(fr, "why", json_object_new_string(s->first_why));
		json_object_object_add(fr, "left_rate_bps",
				       json_object_new_uint64(s->first_left_rate * 8));
	}
	json_object_object_add(o, "first_refusal", fr);
	if (s->req) {
		/* the requests in order and admission's answer to each (a real-time run of the
		 * same sequence: bench/reserve-rt.sh) */
		json_object *rq = json_object_new_array();

		for (unsigned i = 0; i < s->asked; i++) {
			json_object *e = service_json(&s->req[i]);

			json_object_object_add(e, "admitted",
					       json_object_new_boolean(s->admitted_req[i]));
			json_object_array_add(rq, e);
		}
		json_object_object_add(o, "requests", rq);
	}
	if (s->prefix_need) {
		json_object *pn = json_object_new_array();

		for (unsigned i = 0; i < s->asked; i++)
			json_object_array_add(pn, isfinite(s->prefix_need[i]) ?
					      avfs_json_double(s->prefix_need[i], "%.4f") : NULL);
		json_object_object_add(o, "prefix_need", pn);
	}
	return o;
}

int avfs_sim_cmd_reserve(int argc, char **argv)
{
	struct cli c = { .seeds = 20, .first_seed = 1, .requests = 40, .isolation = true,
			 .search_s = -1 };
	struct seed_res *sr;
	double sum_rs = 0, sum_rr = 0, min_rs = INFINITY, min_rr = INFINITY, sum_util = 0;
	double sum_adm = 0, sum_k = 0, sum_load = 0, commit_max = 0, sum_other = 0, sum_be = 0;
	uint64_t misses = 0;
	unsigned refused[3] = { 0, 0, 0 }, nratio = 0, adm_failed = 0, kmax_failed = 0;
	int err;

	avfs_simrun_defaults(&c.o);
	err = parse(argc, argv, &c, true);
	if (err)
		return err == 1 ? 0 : 2;
	if (c.search_s < 0)
		c.search_s = c.o.duration_s;
	sr = calloc(c.seeds, sizeof(*sr));
	if (!sr)
		return 1;
	for (unsigned i = 0; i < c.seeds; i++) {
		err = reserve_seed(&c, c.first_seed + i, &sr[i]);
		if (err) {
			free_seeds(sr, i + 1);
			return err;
		}
		if (isatty(2) && !c.json)
			fprintf(stderr, "  seed %" PRIu64 ": %u admitted, %" PRIu64 " misses, max %u\n",
				sr[i].seed, sr[i].admitted, sr[i].misses, sr[i].kmax);
		misses += sr[i].misses;
		adm_failed += !!sr[i].adm_fail[0];
		kmax_failed += !!sr[i].kmax_fail[0];
		commit_max = fmax(commit_max, sr[i].commit_max_s);
		sum_adm += sr[i].admitted;
		sum_other += sr[i].admitted_other;
		sum_k += sr[i].kmax;
		sum_util += sr[i].util;
		sum_load += sr[i].load;
		sum_be += sr[i].be_mib_s;
		for (int k = 0; k < 3; k++)
			refused[k] += sr[i].refused[k];
		if (sr[i].kmax) {
			double rs = ratio(sr[i].admitted, sr[i].kmax);
			double rr = ratio(sr[i].admitted_rate, sr[i].kmax_rate);

			sum_rs += rs;
			sum_rr += rr;
			min_rs = fmin(min_rs, rs);
			min_rr = fmin(min_rr, rr);
			nratio++;
		}
	}
	if (!nratio)
		min_rs = min_rr = 0;
	if (c.json) {
		json_object *o = json_object_new_object(), *seeds = json_object_new_array();
		json_object *sum = json_object_new_object();
		const struct {
			const char *key, *fmt;
			double v;
		} mean[] = {
			{ "commit_max_s", "%.2f", commit_max },
			{ "admitted_mean", "%.2f", sum_adm / c.seeds },
			{ c.test == AVFS_ADMIT_SWEEP ? "admitted_fahrrad_mean" : "admitted_sweep_mean",
			  "%.2f", sum_other / c.seeds },
			{ "max_streams_mean", "%.2f", sum_k / c.seeds },
			{ "ratio_streams_mean", "%.4f", ratio(sum_rs, nratio) },
			{ "ratio_streams_min", "%.4f", min_rs },
			{ "ratio_rate_mean", "%.4f", ratio(sum_rr, nratio) },
			{ "ratio_rate_min", "%.4f", min_rr },
			{ "disk_utilization_mean", "%.4f", sum_util / c.seeds },
			{ "admission_load_mean", "%.4f", sum_load / c.seeds },
			{ "be_mib_s_mean", "%.2f", sum_be / c.seeds },
		};

		json_object_object_add(o, "disk", json_object_new_string(c.o.disk));
		json_object_object_add(o, "duration_s", avfs_json_double(c.o.duration_s, "%.0f"));
		json_object_object_add(o, "search_duration_s",
				       avfs_json_double(c.search_s, "%.0f"));
		json_object_object_add(o, "requests", json_object_new_int64(c.requests));
		json_object_object_add(o, "isolation", json_object_new_boolean(c.isolation));
		json_object_object_add(o, "be_readers", json_object_new_int64(c.be));
		json_object_object_add(o, "test", json_object_new_string(
				       c.test == AVFS_ADMIT_SWEEP ? "sweep" : "fahrrad"));
		json_object_object_add(o, "place", json_object_new_string(
				       c.place == PLACE_INNER ? "inner" :
				       c.place == PLACE_SPREAD ? "spread" : "files"));
		json_object_object_add(o, "alloc", json_object_new_string(
				       avfs_alloc_policy_name(c.o.alloc)));
		json_object_object_add(o, "service", !c.uniform ? NULL : service_json(&c.service));
		json_object_object_add(o, "quota_rate_bps",
				       json_object_new_uint64(c.quota_rate * 8));
		json_object_object_add(o, "quota_streams", json_object_new_int64(c.quota_streams));
		json_object_object_add(o, "search", json_object_new_string("binary over k"));
		for (unsigned i = 0; i < c.seeds; i++)
			json_object_array_add(seeds, seed_json(&c, &sr[i]));
		json_object_object_add(o, "seeds", seeds);
		json_object_object_add(sum, "seeds", json_object_new_int64(c.seeds));
		json_object_object_add(sum, "misses", json_object_new_uint64(misses));
		json_object_object_add(sum, "admitted_failed", json_object_new_int64(adm_failed));
		json_object_object_add(sum, "max_failed_full_duration",
				       json_object_new_int64(kmax_failed));
		for (size_t i = 0; i < sizeof(mean) / sizeof(mean[0]); i++)
			json_object_object_add(sum, mean[i].key, avfs_json_double(mean[i].v,
										  mean[i].fmt));
		json_object_object_add(sum, "refused", refused_json(refused));
		json_object_object_add(o, "summary", sum);
		free_seeds(sr, c.seeds);
		return avfs_json_stdout(o, true, "avfs-sim");
	}
	if (c.uniform)
		printf("admission on %s: %u seeds x %u requests for one service (%.2f Mbit/s, "
		       "buffer %.2f MiB, requests of %u KiB, %s),\n", c.o.disk, c.seeds,
		       c.requests, (double)c.service.rate * 8 / MBIT,
		       (double)c.service.buffer / MIB, c.service.io >> 10,
		       c.service.write ? "recording" : "playback");
	else
		printf("admission on %s: %u seeds x %u random reservation requests (2-40 Mbit/s, "
		       "buffers 2-32 MiB,\nrequests 256 KiB-1 MiB, 70 %% playback), ", c.o.disk,
		       c.seeds, c.requests);
	printf("%s;\nadmitted by %s%s, u_BE 2 %%;\ncolumn %s: what %s would have admitted (not run).\n"
	       "The admitted set runs %.0f s; the largest zero-miss prefix k is found by a binary "
	       "search over k\nwith %.0f s runs, then run %.0f s (its misses: \"k miss\").\n\n",
	       c.place == PLACE_INNER ? "playbacks raw in the innermost tenth" :
	       c.place == PLACE_SPREAD ? "playbacks raw, spread over the stroke" :
	       c.o.alloc == AVFS_ALLOC_CONTIG ? "files allocated first-fit" :
	       c.o.alloc == AVFS_ALLOC_ZRR ? "files allocated ZRR" : "files allocated ZRR in runs",
	       c.test == AVFS_ADMIT_SWEEP ? "the round (sweep) model" : "Fahrrad's test",
	       c.test == AVFS_ADMIT_SWEEP ? (c.isolation ? " isolating best effort" : "") :
	       c.isolation ? " padded for isolation (Theorem 3)" : " padded for Theorem 2 only",
	       c.test == AVFS_ADMIT_SWEEP ? "fahrrad" : "sweep",
	       c.test == AVFS_ADMIT_SWEEP ? "Fahrrad's test" : "the round model",
	       c.o.duration_s, c.search_s, c.o.duration_s);
	printf(" seed  asked  adm  %7s  adm Mbit/s  round ms   load    util  RT requests  misses |"
	       "  max k  k Mbit/s  k miss | adm/max: streams   rate\n",
	       c.test == AVFS_ADMIT_SWEEP ? "fahrrad" : "sweep");
	for (unsigned i = 0; i < c.seeds; i++) {
		const struct seed_res *s = &sr[i];
		char m[24], km[24];

		snprintf(m, sizeof(m), "%" PRIu64, s->misses);
		snprintf(km, sizeof(km), "%" PRIu64, s->kmax_misses);
		printf("%5" PRIu64 "  %5u  %3u  %7u  %10.1f  %8.0f  %5.3f  %5.1f %%  %11" PRIu64
		       "  %6s |  %5u  %8.1f  %6s |          %6.2f  %5.2f\n", s->seed, s->asked,
		       s->admitted, s->admitted_other, s->admitted_rate * 8 / MBIT, s->round_ms,
		       s->load, s->util * 100, s->rt_requests, s->adm_fail[0] ? "full" : m, s->kmax,
		       s->kmax_rate * 8 / MBIT, s->kmax_fail[0] ? "full" : km,
		       ratio(s->admitted, s->kmax), ratio(s->admitted_rate, s->kmax_rate));
	}
	printf("\nsummary over %u seeds: admitted-set misses %" PRIu64 " (%u admitted runs ended "
	       "early), longest metadata commit %.1f s;\nadmitted %.1f streams on average (%s: "
	       "%.1f), zero-miss maximum %.1f; admitted/max %.2f in streams\n(min %.2f), %.2f in "
	       "reserved rate (min %.2f); admission load %.3f, disk utilization %.1f %%;\n"
	       "refused: %u -EBUSY, %u -EDQUOT, %u other\n", c.seeds, misses, adm_failed,
	       commit_max, sum_adm / c.seeds, c.test == AVFS_ADMIT_SWEEP ? "fahrrad" : "sweep",
	       sum_other / c.seeds, sum_k / c.seeds, ratio(sum_rs, nratio), min_rs,
	       ratio(sum_rr, nratio), min_rr, sum_load / c.seeds, sum_util / c.seeds * 100,
	       refused[0], refused[1], refused[2]);
	if (c.be)
		printf("%u greedy best-effort readers beside every run: %.2f MiB/s on average in "
		       "the admitted runs\n", c.be, sum_be / c.seeds);
	for (unsigned i = 0; i < c.seeds; i++) {
		const struct seed_res *s = &sr[i];

		if (s->adm_fail[0])
			printf("  seed %" PRIu64 ": the admitted set ended early: %s\n", s->seed,
			       s->adm_fail);
		if (s->kmax_fail[0])
			printf("  seed %" PRIu64 ": the first %u requests, zero-miss for %.0f s, ended "
			       "early in the %.0f s run: %s\n", s->seed, s->kmax, c.search_s,
			       c.o.duration_s, s->kmax_fail);
		if (s->search_full)
			printf("  seed %" PRIu64 ": %u search runs ended on a full file system (taken "
			       "as failing)\n", s->seed, s->search_full);
	}
	printf("\nfirst refusal per seed (request #, error, admission's reason; the largest rate "
	       "left for a request like it):\n");
	for (unsigned i = 0; i < c.seeds; i++) {
		const struct seed_res *s = &sr[i];

		if (!s->first_err) {
			printf("%5" PRIu64 "  none\n", s->seed);
			continue;
		}
		printf("%5" PRIu64 "  #%-3u %-7s %s; left %.1f Mbit/s\n", s->seed, s->first_idx,
		       errname(s->first_err), s->first_why, (double)s->first_left_rate * 8 / MBIT);
	}
	free_seeds(sr, c.seeds);
	return 0;
}

/* ---- isolation ---- */

struct iso_stream {
	const char *name;
	struct avfs_simrun_stream spec;
};

#define ISO_MAX 24	/* be-greedy: up to 16 reserved readers beside 8 greedy ones */

struct iso_case {
	const char *name;
	unsigned n;
	struct iso_stream s[ISO_MAX];
	struct avfs_simrun_result res;
};

static struct avfs_simrun_stream reader(double rate, uint32_t io, uint64_t buffer, bool reserved,
					bool greedy, double reserve)
{
	return (struct avfs_simrun_stream){ .rate = rate, .reserve = reserve, .io = io,
					    .buffer = buffer, .reserved = reserved,
					    .greedy = greedy, .place = -1 };
}

/* Run case j of a scenario (traced as PREFIX.scenario.j.csv). */
static int run_case(const struct cli *c, struct iso_case *k, const char *scenario, unsigned j)
{
	struct avfs_simrun_stream st[ISO_MAX];
	char tag[64];

	for (unsigned i = 0; i < k->n; i++)
		st[i] = k->s[i].spec;
	snprintf(tag, sizeof(tag), "%s.%u", scenario, j);
	return run_set(c, st, k->n, c->o.duration_s, &k->res, tag, NULL, 0);
}

static double mibps(const struct avfs_simrun_stream_res *r, double dur)
{
	return (double)(r->rt_bytes + r->be_bytes) / dur / MIB;
}

static json_object *json_stream(const struct iso_stream *s,
				const struct avfs_simrun_stream_res *r, double dur)
{
	const struct avfs_simrun_stream *sp = &s->spec;
	double reserve = (sp->reserve > 0 ? sp->reserve : sp->rate) * 8 * sp->reserved;
	double p01 = avfs_qos_margin_quantile(&r->qos, 0.01) / 1e6;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "reserved", json_object_new_boolean(sp->reserved));
	json_object_object_add(o, "greedy", json_object_new_boolean(sp->greedy));
	json_object_object_add(o, "rate_bps", avfs_json_double(sp->rate * 8, "%.0f"));
	json_object_object_add(o, "reserve_bps", avfs_json_double(reserve, "%.0f"));
	json_object_object_add(o, "io", json_object_new_int64(sp->io));
	json_object_object_add(o, "buffer", json_object_new_uint64(sp->buffer));
	json_object_object_add(o, "mib_s", avfs_json_double(mibps(r, dur), "%.3f"));
	json_object_object_add(o, "rt_mib_s", avfs_json_double((double)r->rt_bytes / dur / MIB,
								 "%.3f"));
	json_object_object_add(o, "rt_requests", json_object_new_uint64(r->qos.requests));
	json_object_object_add(o, "be_requests", json_object_new_uint64(r->qos.be_requests));
	json_object_object_add(o, "misses", json_object_new_uint64(r->qos.misses));
	json_object_object_add(o, "rt_util", avfs_json_double(r->rt_util, "%.4f"));
	json_object_object_add(o, "be_util", avfs_json_double(r->be_util, "%.4f"));
	json_object_object_add(o, "lat_mean_ms", avfs_json_double(r->lat_mean_ms, "%.1f"));
	json_object_object_add(o, "lat_max_ms", avfs_json_double(r->lat_max_ms, "%.1f"));
	json_object_object_add(o, "margin_p01_ms", avfs_json_double(p01, "%.1f"));
	return o;
}

static json_object *json_case(const struct iso_case *k, double dur)
{
	json_object *o = json_object_new_object(), *st = json_object_new_array();
	double total = 0;

	for (unsigned i = 0; i < k->n; i++) {
		total += mibps(&k->res.streams[i], dur);
		json_object_array_add(st, json_stream(&k->s[i], &k->res.streams[i], dur));
	}
	json_object_object_add(o, "case", json_object_new_string(k->name));
	json_object_object_add(o, "rt_requests", json_object_new_uint64(k->res.rt_requests));
	json_object_object_add(o, "misses", json_object_new_uint64(k->res.deadline_misses));
	json_object_object_add(o, "p0", avfs_json_double(k->res.p0, "%.6g"));
	json_object_object_add(o, "disk_utilization", avfs_json_double(k->res.disk_utilization,
									 "%.4f"));
	json_object_object_add(o, "total_mib_s", avfs_json_double(total, "%.3f"));
	json_object_object_add(o, "streams", st);
	return o;
}

/* A scenario's cases under its name in the --json document's "scenarios"; o holds the keys
 * before "cases". */
static void json_scenario(json_object *scenarios, const char *name, json_object *o,
			  const struct iso_case *k, unsigned n, double dur)
{
	json_object *cases = json_object_new_array();

	for (unsigned j = 0; j < n; j++)
		json_object_array_add(cases, json_case(&k[j], dur));
	json_object_object_add(o, "cases", cases);
	json_object_object_add(scenarios, name, o);
}

/* papers/004's table layout: per stream, what it reserved and asked for and what it got. */
static void text_case(const struct iso_case *k, double dur)
{
	double total = 0;

	printf("  %s\n", k->name);
	printf("    %-12s %-10s %-9s %9s %8s %7s %7s %7s %8s %9s\n", "stream", "reserved",
	       "requested", "got MiB/s", "RT MiB/s", "RT util", "BE util", "misses", "lat avg",
	       "lat max");
	for (unsigned i = 0; i < k->n; i++) {
		const struct avfs_simrun_stream *sp = &k->s[i].spec;
		const struct avfs_simrun_stream_res *r = &k->res.streams[i];
		char resv[16], reqd[16];

		if (sp->reserved)
			snprintf(resv, sizeof(resv), "%.0f MiB/s",
				 (sp->reserve > 0 ? sp->reserve : sp->rate) / MIB);
		else
			snprintf(resv, sizeof(resv), "BE");
		if (sp->greedy)
			snprintf(reqd, sizeof(reqd), "inf");
		else
			snprintf(reqd, sizeof(reqd), "%.0f MiB/s", sp->rate / MIB);
		total += mibps(r, dur);
		printf("    %-12s %-10s %-9s %9.2f %8.2f %6.1f%% %6.1f%% %7" PRIu64 " %5.0f ms "
		       "%6.0f ms\n", k->s[i].name, resv, reqd, mibps(r, dur),
		       (double)r->rt_bytes / dur / MIB, r->rt_util * 100, r->be_util * 100,
		       r->qos.misses, r->lat_mean_ms, r->lat_max_ms);
	}
	printf("    %-12s %-10s %-9s %9.2f   (disk utilization %.1f %%)\n", "aggregate", "", "",
	       total, k->res.disk_utilization * 100);
}

static void free_cases(struct iso_case *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		avfs_simrun_result_free(&k[i].res);
}

/* The reserved 1080p readers of papers/004 §3.3 (3 MiB/s), as many as admission takes, with
 * 0..8 greedy best-effort readers. papers/004 Table 3.2 (two BW readers at 3 MiB/s, 50 ms
 * scheduling deadline, two greedy BE readers with 1 s slices): both BW readers 3.0 MiB/s with
 * 100 % of their latencies under 100 ms; the greedy readers 48.73 and 49.65 MiB/s. */
static int iso_be_greedy(const struct cli *c, json_object *scenarios)
{
	static const unsigned nbe[] = { 0, 1, 2, 4, 8 };
	enum { NCASE = sizeof(nbe) / sizeof(nbe[0]) };
	struct avfs_service_req v = { .rate = 3 << 20, .buffer = 8 << 20, .io = 512 << 10 };
	struct iso_case k[NCASE];
	struct avfs_admit_conf conf;
	struct avfs_admit *a;
	struct avfs_admit_left left;
	unsigned nres = 0;
	char why[256];
	int err;

	memset(k, 0, sizeof(k));
	err = admit_conf_of(c, &conf);
	if (err)
		return err;
	if (avfs_admit_create(&a, &conf))
		return 1;
	/* (the case table's room beside the most greedy readers: admission stops first on
	 * avfs-250g, at 13) */
	while (nres < ISO_MAX - 8 && avfs_admit_add(a, &v, &left, why, sizeof(why)) > 0)
		nres++;
	for (unsigned j = 0; j < NCASE; j++) {
		static char names[NCASE][32];

		snprintf(names[j], sizeof(names[j]), "%u greedy BE readers", nbe[j]);
		k[j].name = names[j];
		for (unsigned i = 0; i < nres; i++)
			k[j].s[k[j].n++] = (struct iso_stream){ "video BW3",
				reader((double)v.rate, v.io, v.buffer, true, false, 0) };
		for (unsigned i = 0; i < nbe[j]; i++)
			k[j].s[k[j].n++] = (struct iso_stream){ "greedy BE",
				reader(0, 1 << 20, 4 << 20, false, true, 0) };
		err = run_case(c, &k[j], "be-greedy", j);
		if (err)
			goto out;
	}
	if (scenarios) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "reserved_readers", json_object_new_int64(nres));
		json_object_object_add(o, "admission_load", avfs_json_double(avfs_admit_load(a),
									       "%.4f"));
		json_scenario(scenarios, "be-greedy", o, k, NCASE, c->o.duration_s);
		goto out;
	}
	printf("be-greedy: %u reserved readers at 3 MiB/s (buffer 8 MiB, 512 KiB requests; all "
	       "admission takes, load %.3f)\nwith greedy best-effort readers (1 MiB requests, 4 "
	       "outstanding), %.0f s each (papers/004 Table 3.2, Fig. 3.5)\n", nres,
	       avfs_admit_load(a), c->o.duration_s);
	printf("  %-9s %11s %7s %9s %12s %12s %14s %10s %7s\n", "BE readers", "RT requests",
	       "misses", "P0", "margin min", "margin p1%", "reserved MiB/s", "BE MiB/s", "util");
	for (unsigned j = 0; j < NCASE; j++) {
		double rsv = 0, be = 0;

		for (unsigned i = 0; i < k[j].n; i++)
			*(i < nres ? &rsv : &be) += mibps(&k[j].res.streams[i], c->o.duration_s);
		printf("  %9u %11" PRIu64 " %7" PRIu64 " %9.3g %9.0f ms %9.0f ms %14.2f %10.2f "
		       "%5.1f %%\n", nbe[j], k[j].res.rt_requests, k[j].res.deadline_misses,
		       k[j].res.p0, k[j].res.margin_min_ms, k[j].res.margin_p01_ms, rsv, be,
		       k[j].res.disk_utilization * 100);
	}
	printf("\n");
out:
	free_cases(k, NCASE);
	avfs_admit_destroy(a);
	return err;
}

/* papers/004 "Greedy Reserved Readers" and Table 3.7: a reader reserving 3 MiB/s that reads
 * as fast as it can, beside busy best effort, beside rate-limited best effort, alone. The
 * paper: reserving 3 MiB/s (bucket 3 MiB) beside one greedy BE reader it got 3.08 MiB/s and
 * the BE reader 100.1 MiB/s; reserving 32 MiB/s beside two BE readers of 8 MiB/s it got
 * 63.5 MiB/s and they their 8.0 MiB/s each (Table 3.7). */
static int iso_greedy_reserved(const struct cli *c, json_object *scenarios)
{
	enum { NCASE = 3 };
	struct iso_case k[NCASE];
	struct avfs_simrun_stream g = reader(3 * MIB, 512 << 10, 3 << 20, true, true, 0);
	int err = 0;

	memset(k, 0, sizeof(k));
	k[0].name = "busy best effort: two greedy BE readers";
	k[0].n = 3;
	k[0].s[0] = (struct iso_stream){ "greedy BW3", g };
	k[0].s[1] = (struct iso_stream){ "greedy BE A", reader(0, 1 << 20, 4 << 20, false, true, 0) };
	k[0].s[2] = (struct iso_stream){ "greedy BE B", reader(0, 1 << 20, 4 << 20, false, true, 0) };
	k[1].name = "rate-limited best effort: two 4 MiB/s BE readers";
	k[1].n = 3;
	k[1].s[0] = k[0].s[0];
	k[1].s[1] = (struct iso_stream){ "video BE A", reader(4 * MIB, 1 << 20, 4 << 20, false, false, 0) };
	k[1].s[2] = (struct iso_stream){ "video BE B", reader(4 * MIB, 1 << 20, 4 << 20, false, false, 0) };
	k[2].name = "idle best effort: alone";
	k[2].n = 1;
	k[2].s[0] = k[0].s[0];
	for (unsigned j = 0; j < NCASE && !err; j++)
		err = run_case(c, &k[j], "greedy-reserved", j);
	if (err)
		goto out;
	if (scenarios) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "reserve_bps", avfs_json_double(g.rate * 8, "%.0f"));
		json_scenario(scenarios, "greedy-reserved", o, k, NCASE, c->o.duration_s);
		goto out;
	}
	printf("greedy-reserved: a greedy reader reserving 3 MiB/s (bucket = buffer = 3 MiB, 512 KiB "
	       "requests),\n%.0f s per case (papers/004 \"Greedy Reserved Readers\", Tables 3.6, 3.7)\n",
	       c->o.duration_s);
	for (unsigned j = 0; j < NCASE; j++)
		text_case(&k[j], c->o.duration_s);
	printf("\n");
out:
	free_cases(k, NCASE);
	return err;
}

/* papers/004 Tables 3.4-3.6, scaled to this disk (about half the paper's rate): a video that
 * consumes 4 MiB/s in 1 MiB reads (four a second) reserving 16 MiB/s, beside two greedy
 * readers; the aggregate must stay where it is without the reservation. The paper (8 MiB/s in
 * 2 MiB reads, 32 MiB/s reserved, 200 ms deadline): baseline 8.0 + 26.5 + 26.5 MiB/s
 * (Table 3.4), with the reservation 8.0 + 25.5 + 30.5 (Table 3.5), with the greedy readers
 * reserving 4 MiB/s each 8.0 + 4.1 + 55.2 (Table 3.6). */
static int iso_overprovision(const struct cli *c, json_object *scenarios)
{
	enum { NCASE = 4 };
	struct iso_case k[NCASE];
	/* buffer 4 MiB: at 16 MiB/s a request is due 3/16 s = 188 ms after it is issued, about
	 * the paper's 200 ms scheduling deadline */
	struct avfs_simrun_stream video_be = reader(4 * MIB, 1 << 20, 4 << 20, false, false, 0);
	struct avfs_simrun_stream video_bw = reader(4 * MIB, 1 << 20, 4 << 20, true, false, 16 * MIB);
	/* the control: reserving what it uses, due 750 ms after each request */
	struct avfs_simrun_stream video_fit = reader(4 * MIB, 1 << 20, 4 << 20, true, false, 0);
	struct avfs_simrun_stream gbe = reader(0, 1 << 20, 4 << 20, false, true, 0);
	/* the paper's greedy BW readers: 4 MiB/s and a 500 ms deadline; here 2 MiB/s, 2 MiB */
	struct avfs_simrun_stream gbw = reader(2 * MIB, 1 << 20, 2 << 20, true, true, 0);
	int err = 0;

	memset(k, 0, sizeof(k));
	k[0].name = "baseline: all best effort (Table 3.4)";
	k[1].name = "video reserves 16 MiB/s, greedy readers BE (Table 3.5)";
	k[2].name = "video reserves 16 MiB/s, greedy readers reserve 2 MiB/s (Table 3.6)";
	k[3].name = "control: video reserves its 4 MiB/s, greedy readers BE";
	for (unsigned j = 0; j < NCASE; j++) {
		k[j].n = 3;
		k[j].s[0] = (struct iso_stream){ "video", j == 0 ? video_be : j == 3 ? video_fit :
						 video_bw };
		k[j].s[1] = (struct iso_stream){ "greedy A", j == 2 ? gbw : gbe };
		k[j].s[2] = (struct iso_stream){ "greedy B", j == 2 ? gbw : gbe };
	}
	for (unsigned j = 0; j < NCASE && !err; j++)
		err = run_case(c, &k[j], "overprovision", j);
	if (err)
		goto out;
	if (scenarios) {
		json_scenario(scenarios, "overprovision", json_object_new_object(), k, NCASE,
			      c->o.duration_s);
		goto out;
	}
	printf("overprovision: a 4 MiB/s video (1 MiB reads, 4 MiB buffer) reserving 16 MiB/s beside "
	       "two greedy readers,\n%.0f s per case (papers/004 Tables 3.4-3.6, rates halved for "
	       "this disk)\n", c->o.duration_s);
	for (unsigned j = 0; j < NCASE; j++)
		text_case(&k[j], c->o.duration_s);
	printf("\n");
out:
	free_cases(k, NCASE);
	return err;
}

/* The rate whose translation costs utilization u (unpadded) for a stream with period p_s,
 * request size io and transfer rate d_slow: admit.h's formulas inverted by bisection (the
 * cost grows with the rate). 0 when even the seeks of a period cost more than u. */
static uint64_t rate_for_util(const struct avfs_admit_conf *conf, double u, double p_s,
			      uint32_t io, double d_slow, uint64_t *buffer)
{
	uint64_t lo = 0, hi = (uint64_t)conf->model.dmax;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		struct avfs_service_req r = { .rate = mid, .io = io, .d_slow = d_slow,
					      .buffer = io + (uint64_t)ceil((double)mid * p_s) };
		struct avfs_service_cost cost;
		char why[160];

		/* (a tiny rate rounds its buffer up to a longer period: not the one asked for) */
		if (!avfs_service_cost(conf, &r, &cost, why, sizeof(why)) && cost.u <= u &&
		    cost.period_ns < p_s * 1.001e9)
			lo = mid;
		else
			hi = mid - 1;
	}
	*buffer = io + (uint64_t)ceil((double)lo * p_s);
	return lo;
}

/* papers/002 §9.1, Fig. 3: four sequential streams, each at its own place on the disk with
 * many requests outstanding, each reserving 20 % of disk time; streams 1-3 have 2 s periods,
 * stream 4's goes from 125 ms to 2 s. The bandwidth class reserves bytes/s, so 20 % becomes
 * the rate whose cost (admit.h) is 20 % at the stream's place. Run twice: with the mixer's
 * default margin m = 500 ms, longer than the short periods (a request due sooner than m is
 * sent at once, so the streams' requests interleave one by one), and with m = 100 ms. */
static int iso_fahrrad4(const struct cli *c, json_object *scenarios)
{
	static const double p4[] = { 0.125, 0.25, 0.5, 1, 2 };
	static const double place[4] = { 0.05, 0.30, 0.55, 0.80 };
	static const int64_t margin_ms[2][2] = { { 500, 100 }, { 100, 20 } };	/* m, e */
	enum { NCASE = sizeof(p4) / sizeof(p4[0]) };
	const uint32_t io = 256 << 10;
	struct iso_case k[2][NCASE];
	uint64_t rate[NCASE][4], buf[NCASE][4];
	struct avfs_admit_conf conf;
	struct avfs_svc_model model;
	uint64_t block;
	int err;

	memset(k, 0, sizeof(k));
	err = model_of(&c->o, &model, &block);
	if (err)
		return err;
	/* a raw sequential stream is one contiguous run: one seek to reach it a period (and the
	 * "+1" of the translation), not one a data block */
	avfs_admit_conf_default(&conf, &model, model.lmax);
	for (unsigned j = 0; j < NCASE; j++) {
		for (unsigned i = 0; i < 4; i++) {
			/* the model's rate at the place (papers/001 eq. (1)) */
			double d = model.dmax - (model.dmax - model.dmin) * place[i];

			rate[j][i] = rate_for_util(&conf, 0.20, i == 3 ? p4[j] : 2, io, d, &buf[j][i]);
		}
	}
	for (unsigned m = 0; m < 2; m++) {
		struct cli cm = *c;

		cm.o.conf.margin_ns = margin_ms[m][0] * 1000000;
		cm.o.conf.urgent_ns = margin_ms[m][1] * 1000000;
		for (unsigned j = 0; j < NCASE; j++) {
			static char names[2][NCASE][64];

			snprintf(names[m][j], sizeof(names[m][j]), "m %" PRId64 " ms, stream 4 period "
				 "%.0f ms", margin_ms[m][0], p4[j] * 1000);
			k[m][j].name = names[m][j];
			if (!rate[j][3])
				continue;	/* 20 % cannot pay for the seeks of such a period */
			k[m][j].n = 4;
			for (unsigned i = 0; i < 4; i++) {
				static const char *const nm[4] = { "stream 1", "stream 2", "stream 3",
								    "stream 4" };

				k[m][j].s[i] = (struct iso_stream){ nm[i], {
					.rate = (double)rate[j][i], .io = io, .buffer = buf[j][i],
					.reserved = true, .greedy = true, .place = place[i] } };
			}
			err = run_case(&cm, &k[m][j], m ? "fahrrad4.m100" : "fahrrad4.m500", j);
			if (err)
				goto out;
		}
	}
	if (scenarios) {
		json_object *o = json_object_new_object(), *cases = json_object_new_array();

		json_object_object_add(o, "reserved_util", avfs_json_double(0.20, "%.2f"));
		for (unsigned m = 0; m < 2; m++) {
			for (unsigned j = 0; j < NCASE; j++) {
				json_object *x;

				if (k[m][j].n) {
					json_object_array_add(cases, json_case(&k[m][j],
									       c->o.duration_s));
					continue;
				}
				x = json_object_new_object();
				json_object_object_add(x, "case",
						       json_object_new_string(k[m][j].name));
				json_object_object_add(x, "feasible",
						       json_object_new_boolean(false));
				json_object_array_add(cases, x);
			}
		}
		json_object_object_add(o, "cases", cases);
		json_object_object_add(scenarios, "fahrrad4", o);
		goto out;
	}
	printf("fahrrad4: four greedy sequential readers at 5, 30, 55, 80 %% of the disk (raw, 256 KiB "
	       "requests), each reserving\n20 %% of disk time: the rate whose modelled cost at its "
	       "place is 20 %% (admit.h inverted; one contiguous\nrun, so two seeks a period); "
	       "streams 1-3 with 2 s periods, stream 4's varied; %.0f s per case\n"
	       "(papers/002 §9.1, Fig. 3). RT util: disk time of its real-time commands; total: "
	       "with its spare (work-conserving) ones.\n", c->o.duration_s);
	for (unsigned m = 0; m < 2; m++) {
		printf("  mixer margin m = %" PRId64 " ms, urgent window e = %" PRId64 " ms%s\n",
		       margin_ms[m][0], margin_ms[m][1], m ? "" : " (the defaults)");
		printf("  %-9s %-26s %-30s %-30s %6s\n", "period 4", "rate MB/s  s1   s2   s3   s4",
		       "RT util  s1    s2    s3    s4", "total    s1    s2    s3    s4", "misses");
		for (unsigned j = 0; j < NCASE; j++) {
			const struct iso_case *kk = &k[m][j];

			printf("  %6.0f ms ", p4[j] * 1000);
			for (unsigned i = 0; i < 4; i++)
				printf(" %5.2f", (double)rate[j][i] / 1e6);
			if (!kk->n) {
				printf("   stream 4: two modelled seeks (25.3 ms) exceed 20 %% of its "
				       "period\n");
				continue;
			}
			printf("     ");
			for (unsigned i = 0; i < 4; i++)
				printf(" %5.1f", kk->res.streams[i].rt_util * 100);
			printf("     ");
			for (unsigned i = 0; i < 4; i++)
				printf(" %5.1f", (kk->res.streams[i].rt_util + kk->res.streams[i].be_util)
				       * 100);
			printf(" %6" PRIu64 "\n", kk->res.deadline_misses);
		}
	}
	printf("\n");
out:
	free_cases(k[0], NCASE);
	free_cases(k[1], NCASE);
	return err;
}

int avfs_sim_cmd_isolation(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(const struct cli *c, json_object *scenarios);
	} sc[] = {
		{ "be-greedy", iso_be_greedy },
		{ "greedy-reserved", iso_greedy_reserved },
		{ "overprovision", iso_overprovision },
		{ "fahrrad4", iso_fahrrad4 },
	};
	enum { NSC = sizeof(sc) / sizeof(sc[0]) };
	struct cli c = { .isolation = true };
	json_object *o, *scenarios = NULL;	/* --json: the document, its scenarios */
	int err, first = -1, lastsc = -1;

	avfs_simrun_defaults(&c.o);
	c.o.duration_s = 600;
	err = parse(argc, argv, &c, false);
	if (err)
		return err == 1 ? 0 : 2;
	if (!c.scenario) {
		fprintf(stderr, "avfs-sim isolation: say --scenario NAME (see --help)\n");
		return 2;
	}
	for (int i = 0; i < NSC; i++) {
		if (!strcmp(c.scenario, "all") || !strcmp(c.scenario, sc[i].name)) {
			if (first < 0)
				first = i;
			lastsc = i;
		}
	}
	if (first < 0) {
		fprintf(stderr, "avfs-sim isolation: unknown scenario '%s': be-greedy, "
			"greedy-reserved, overprovision, fahrrad4, all\n", c.scenario);
		return 2;
	}
	{
		struct avfs_svc_model m;
		uint64_t block;

		err = model_of(&c.o, &m, &block);
		if (err)	/* before any output: a bad --disk leaves no half a document */
			return err;
	}
	if (c.json)
		scenarios = json_object_new_object();
	for (int i = first; i <= lastsc && !err; i++)
		if (!strcmp(c.scenario, "all") || !strcmp(c.scenario, sc[i].name))
			err = sc[i].run(&c, scenarios);
	if (!c.json)
		return err;
	if (err) {	/* no half a document */
		json_object_put(scenarios);
		return err;
	}
	o = json_object_new_object();
	json_object_object_add(o, "disk", json_object_new_string(c.o.disk));
	json_object_object_add(o, "seed", json_object_new_uint64(c.o.seed));
	json_object_object_add(o, "duration_s", avfs_json_double(c.o.duration_s, "%.0f"));
	json_object_object_add(o, "bw_policy", json_object_new_string(
		c.o.bw_policy == AVFS_BW_PARK ? "park" :
		c.o.bw_policy == AVFS_BW_AT_ONCE ? "at-once" : "uncharged"));
	json_object_object_add(o, "scenarios", scenarios);
	return avfs_json_stdout(o, true, "avfs-sim");
}
