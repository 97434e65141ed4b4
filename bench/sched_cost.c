/*
 * sched_cost.c — what one scheduling decision costs with n requests pending (SPEC §13: a
 * mixer decision stays in microseconds and grows no faster than log n). Drives a policy of
 * sched/ directly, no engine and no device: n requests are held (streams of adjacent 512 KiB
 * requests, as the DVR workloads queue them, or random 64 KiB requests), and each step is one
 * arrival, one decision (next(), timed alone) and the completion of what it dispatched, so that
 * n stays pending. Prints the mean wall time of a decision and of a whole step per n.
 *
 *   sched_cost [--policy tm|cscan|edf|...] [--set NAME=VALUE]... [--n 100,1000,10000]
 *              [--steps 20000] [--repeat 3] [--load streams|random] [--json] [--check RATIO]
 *
 * Each n is measured --repeat times and the fastest run is kept: the machine's other work only
 * ever adds time. With --set order=satf the mixer asks avfsd's predictor (rotpred over
 * avfs-250g's mechanics, told of every completion) for each request it considers.
 * --check RATIO exits 1 unless the decision cost at the largest n is below RATIO times the
 * cost at the smallest (the growth, not the absolute figure, which depends on the machine).
 */
#include "clock.h"
#include "hddmodel.h"
#include "iosched.h"
#include "jsonout.h"
#include "rotpred.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ll
#define GB 1000000000ull
#define MAX_N 16

enum load { LOAD_STREAMS, LOAD_RANDOM };

struct result {
	unsigned n;
	double decision_us, step_us;
	uint64_t dispatched, waits, failed, coalesced, satf_picks;
};

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 17;
}

/* The k-th request of a load: streams of 8 adjacent 512 KiB requests at random places (one
 * stream's requests due in order), or random 64 KiB requests; due `horizon` to horizon + 1 s
 * after they come, a horizon long enough for all n pending requests to be served (30 ms
 * each), so that the scheduler runs in its steady state — holding, dispatching — rather than
 * failing what it cannot serve. */
static void make(struct avfs_io *io, enum load load, uint64_t k, int64_t now, int64_t horizon,
		 uint64_t *x)
{
	static uint64_t base;

	memset(io, 0, sizeof(*io));
	if (load == LOAD_STREAMS) {
		if (k % 8 == 0)
			base = rnd(x) % (200 * GB) / (4u << 20) * (4u << 20);
		io->off = base + (k % 8) * 524288;
		io->len = 524288;
		io->deadline = now + horizon + (int64_t)(rnd(x) % 1000) * MS + (int64_t)(k % 8);
	} else {
		io->off = rnd(x) % (200 * GB) / 4096 * 4096;
		io->len = 65536;
		io->deadline = now + horizon + (int64_t)(rnd(x) % 1000) * MS;
	}
}

static int measure(const struct avfs_sched_ops *ops, const struct avfs_sched_conf *c,
		   enum load load, unsigned n, unsigned steps, struct result *r)
{
	/* a coalesced command takes up to 8 requests a step: room for all of them */
	unsigned cap = n + steps * 9 + 16, done = 0;
	struct avfs_io *v = calloc(cap, sizeof(*v));
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_sched_counters k;
	uint64_t x = 42, next = 0;
	int64_t t = 0, dec_ns = 0, t0, horizon = (int64_t)n * 30 * MS;
	int err;

	struct avfs_sched_conf cc = *c;
	struct avfs_rotpred rp;
	struct avfs_hdd *geom = NULL;

	memset(r, 0, sizeof(*r));
	r->n = n;
	if (!v)
		return -ENOMEM;
	if (cc.satf) {	/* order=satf asks a predictor: avfsd's, over avfs-250g's mechanics */
		struct avfs_svc_model m;
		struct avfs_rotpred_params p;

		err = avfs_rotpred_named("avfs-250g", 250 * GB, &m, &p, &geom);
		if (!err)
			err = avfs_rotpred_init(&rp, &p);
		if (err) {
			avfs_hdd_free(geom);
			free(v);
			return err;
		}
		avfs_rotpred_observe(&rp, 0, 0, true);	/* the platter's phase, known */
		cc.pred = avfs_rotpred_predictor(&rp);
	}
	err = avfs_sched_init(&s, ops, &cc);
	if (err) {
		avfs_hdd_free(geom);
		free(v);
		return err;
	}
	for (; next < n; next++) {
		make(&v[next], load, next, t, horizon, &x);
		avfs_sched_submit(&s, &v[next], t);
	}
	t0 = avfs_clock_ns();
	for (; done < steps; done++) {
		int64_t d0;

		/* keep n pending: as many arrivals as the last command took away */
		while (ops->pending(s.ctx) < n && next < cap) {
			make(&v[next], load, next, t, horizon, &x);
			avfs_sched_submit(&s, &v[next++], t);
		}
		if (ops->pending(s.ctx) < n)
			break;		/* out of requests: measured over the steps done */
		d0 = avfs_clock_ns();
		avfs_sched_next(&s, t, &cmd);
		dec_ns += avfs_clock_ns() - d0;
		if (cmd.kind == AVFS_SCHED_WAIT) {	/* the hold: time moves on */
			r->waits++;
			t = cmd.at;
		} else if (cmd.kind == AVFS_SCHED_DISPATCH) {
			r->dispatched++;
			t += 10 * MS;
			avfs_sched_done(&s, &cmd, t, (int)cmd.len);
			if (cc.pred.observe)
				cc.pred.observe(cc.pred.ctx, t, cmd.off + cmd.len, true);
		} else if (cmd.kind == AVFS_SCHED_FAIL) {
			r->failed++;
		} else {
			break;
		}
	}
	if (!done)
		done = 1;
	r->step_us = (double)(avfs_clock_ns() - t0) / done / 1e3;
	r->decision_us = (double)dec_ns / done / 1e3;
	avfs_sched_counters(&s, &k);
	r->coalesced = k.coalesced;
	r->satf_picks = k.satf_picks;
	avfs_sched_destroy(&s);
	avfs_hdd_free(geom);
	free(v);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sched_cost [--policy tm] [--set NAME=VALUE]... [--n 100,1000,10000]\n"
		   "                  [--steps 20000] [--load streams|random] [--json] "
		   "[--check RATIO]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "set", required_argument, NULL, 's' },
		{ "n", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 'S' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "load", required_argument, NULL, 'l' },
		{ "json", no_argument, NULL, 'j' },
		{ "check", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const struct avfs_sched_ops *ops = &avfs_sched_tm;
	struct avfs_sched_conf conf;
	unsigned ns[MAX_N] = { 100, 1000, 10000 }, nn = 3, steps = 20000, repeat = 3;
	enum load load = LOAD_STREAMS;
	struct result res[MAX_N];
	bool json = false;
	double check = 0;
	int o;

	avfs_sched_conf_default(&conf);
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char why[160] = "", *save = NULL, *tok;

		switch (o) {
		case 'p':
			ops = avfs_sched_lookup(optarg);
			if (!ops) {
				fprintf(stderr, "sched_cost: unknown policy '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (avfs_sched_conf_set_pair(&conf, optarg, why, sizeof(why))) {
				fprintf(stderr, "sched_cost: --set %s\n", why);
				return 2;
			}
			break;
		case 'n':
			nn = 0;
			for (tok = strtok_r(optarg, ",", &save); tok && nn < MAX_N;
			     tok = strtok_r(NULL, ",", &save)) {
				ns[nn] = (unsigned)strtoul(tok, NULL, 10);
				if (!ns[nn] || ns[nn] > 1000000) {
					fprintf(stderr, "sched_cost: --n: counts 1..1000000\n");
					return 2;
				}
				nn++;
			}
			break;
		case 'S':
			steps = (unsigned)strtoul(optarg, NULL, 10);
			if (!steps || steps > 10000000) {
				fprintf(stderr, "sched_cost: --steps 1..10000000\n");
				return 2;
			}
			break;
		case 'r':
			repeat = (unsigned)strtoul(optarg, NULL, 10);
			if (!repeat || repeat > 100) {
				fprintf(stderr, "sched_cost: --repeat 1..100\n");
				return 2;
			}
			break;
		case 'l':
			if (!strcmp(optarg, "streams"))
				load = LOAD_STREAMS;
			else if (!strcmp(optarg, "random"))
				load = LOAD_RANDOM;
			else {
				fprintf(stderr, "sched_cost: --load streams|random\n");
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			check = strtod(optarg, NULL);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !nn) {
		usage(stderr);
		return 2;
	}
	/* a first pass warms the caches and the allocator; its figures are thrown away */
	measure(ops, &conf, load, ns[0], steps / 4 + 1, &res[0]);
	for (unsigned i = 0; i < nn; i++) {
		for (unsigned k = 0; k < repeat; k++) {
			struct result one;
			int err = measure(ops, &conf, load, ns[i], steps, &one);

			if (err) {
				fprintf(stderr, "sched_cost: n = %u: %s\n", ns[i], strerror(-err));
				return 1;
			}
			if (!k || one.decision_us < res[i].decision_us)
				res[i] = one;
		}
	}
	if (json) {
		json_object *j = json_object_new_object(), *a = json_object_new_array();

		json_object_object_add(j, "policy", json_object_new_string(ops->name));
		json_object_object_add(j, "load", json_object_new_string(load == LOAD_STREAMS ?
									  "streams" : "random"));
		json_object_object_add(j, "steps", json_object_new_uint64(steps));
		json_object_object_add(j, "repeat", json_object_new_uint64(repeat));
		for (unsigned i = 0; i < nn; i++) {
			json_object *x = json_object_new_object();

			json_object_object_add(x, "pending", json_object_new_uint64(res[i].n));
			json_object_object_add(x, "decision_us",
					       avfs_json_double(res[i].decision_us, "%.3f"));
			json_object_object_add(x, "step_us", avfs_json_double(res[i].step_us, "%.3f"));
			json_object_object_add(x, "dispatched",
					       json_object_new_uint64(res[i].dispatched));
			json_object_object_add(x, "waits", json_object_new_uint64(res[i].waits));
			json_object_object_add(x, "failed", json_object_new_uint64(res[i].failed));
			json_object_object_add(x, "coalesced", json_object_new_uint64(res[i].coalesced));
			json_object_object_add(x, "satf_picks",
					       json_object_new_uint64(res[i].satf_picks));
			json_object_array_add(a, x);
		}
		json_object_object_add(j, "results", a);
		if (avfs_json_stdout(j, false, "sched_cost"))
			return 1;
	} else {
		printf("sched_cost: policy %s, %s load, %u steps (arrival + decision + completion), "
		       "fastest of %u\n", ops->name, load == LOAD_STREAMS ? "streams'" : "random",
		       steps, repeat);
		printf("  %8s %12s %9s %11s %7s %7s %10s %6s\n", "pending", "us/decision",
		       "us/step", "dispatched", "waits", "failed", "coalesced", "satf");
		for (unsigned i = 0; i < nn; i++)
			printf("  %8u %12.3f %9.3f %11llu %7llu %7llu %10llu %6llu\n", res[i].n,
			       res[i].decision_us, res[i].step_us,
			       (unsigned long long)res[i].dispatched,
			       (unsigned long long)res[i].waits, (unsigned long long)res[i].failed,
			       (unsigned long long)res[i].coalesced,
			       (unsigned long long)res[i].satf_picks);
	}
	if (check > 0 && nn > 1) {
		double ratio = res[nn - 1].decision_us / res[0].decision_us;

		if (!(ratio < check)) {
			fprintf(stderr, "sched_cost: a decision at %u pending costs %.1fx one at %u "
				"(bound %.1fx)\n", res[nn - 1].n, ratio, res[0].n, check);
			return 1;
		}
	}
	return 0;
}
