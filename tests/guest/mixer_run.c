/*
 * mixer_run.c — a short avfs-sim-like run of the engine over a real disk backend, in real time
 * (issue 8): N real-time readers, each a sequential stream at a fixed rate with a deadline per
 * request, one recording stream (a chunked write carries FUA on its last chunk), and one
 * greedy best-effort reader at random places — raw device requests to the same engine avfsd
 * and avfs-sim run (engine/: the traffic mixer, chunking, JIT and split with the predictor),
 * issued through avfs_disk_open's backend (uring, sg, nvme). This file is the real-time
 * adapter: the clock, the device's completions, the workload.
 * Prints the QoS figures, E(T_wait) = ½ ΣT_i² / elapsed (papers/003 eq. (2), T_i the commands'
 * times on the device) and the commands issued by kind; exit 0 when every real-time request
 * met its deadline and every command succeeded, 1 otherwise, 2 for bad usage.
 *
 * Usage: mixer_run [--backend B] [--duration S] [--streams N] [--rate R] [--io SIZE]
 *                  [--buffer S] [--disk-model NAME] [--set NAME=VALUE]... DEVICE
 * It writes: give it a scratch device or image file only. Runs in the QEMU guest suite on each
 * emulated disk, and on the host over an image file so that it keeps working.
 *
 * --disk-model NAME: the device is that model of SPEC §11 (e.g. hddemu's disk seen through
 * QEMU, bench/guest-jit.sh): the service-time model and the rotational predictor take it as
 * avfsd --disk-model does (avfs_rotpred_named: the figures of the part of the model the device
 * is, its outer part when smaller, like hddemu --size; the model's own angles and seek curve).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "disk.h"
#include "engine.h"
#include "hddmodel.h"	/* avfs_hdd_free */
#include "rotpred.h"
#include "units.h"

#define NS 1000000000ll
#define MAX_STREAMS 16
#define BE_IO (64u << 10)

struct req {
	struct avfs_fio f;	/* first: the engine hands it back */
	int stream;		/* -1: best effort */
};

struct stream {
	uint64_t base, span, next_off;
	int64_t next_release;
	bool write;
};

static struct {
	struct avfs_disk *d;
	struct avfs_engine *e;
	struct avfs_rotpred rp;
	bool predicting;
	int64_t wake;		/* the engine's */
	uint64_t errors;
	uint64_t cmds_read, cmds_write, cmds_fua, cmds_seek;
	unsigned be_out;
	uint64_t seed;
} g = { .seed = 88172645463325252ull };

static uint64_t rnd(void)
{
	g.seed ^= g.seed << 13;
	g.seed ^= g.seed >> 7;
	g.seed ^= g.seed << 17;
	return g.seed;
}

/* ---- the engine's side: the device ---- */

static int ops_submit(void *ctx, const struct avfs_disk_req *r)
{
	(void)ctx;
	g.cmds_seek += r->op == AVFS_DISK_SEEK;
	g.cmds_read += r->op == AVFS_DISK_READ;
	g.cmds_write += r->op == AVFS_DISK_WRITE;
	g.cmds_fua += r->op == AVFS_DISK_WRITE && (r->flags & AVFS_DISK_FUA);
	return avfs_disk_submit(g.d, r);
}

static void ops_arm(void *ctx, int64_t at)
{
	(void)ctx;
	g.wake = at;
}

static void ops_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "mixer_run: engine: %s%s\n", level ? "" : "error: ", msg);
}

static void done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct req *q = (struct req *)f;

	(void)now;
	if (q->stream < 0)
		g.be_out--;
	if (res < 0 && res != -ETIME) {
		g.errors++;
		fprintf(stderr, "mixer_run: %s at %" PRIu64 " failed: %s\n",
			f->write ? "write" : "read", f->off, strerror((int)-res));
	}
	free(f->buf);
	free(q);
}

static void submit(uint64_t off, uint32_t len, bool write, int64_t deadline, int stream,
		   int64_t now)
{
	struct req *q = calloc(1, sizeof(*q));
	int err;

	if (!q || !(q->f.buf = avfs_disk_alloc_buf(g.d, len))) {
		fprintf(stderr, "mixer_run: out of memory\n");
		exit(1);
	}
	memset(q->f.buf, write ? 0x5a : 0, len);
	q->stream = stream;
	q->f = (struct avfs_fio){ .off = off, .len = len, .write = write, .buf = q->f.buf,
				  .cap = len, .deadline = deadline, .label = stream,
				  .cls = AVFS_TRACE_BE, .done = done };
	if (stream < 0)
		g.be_out++;
	err = avfs_engine_io(g.e, &q->f, now);
	if (err) {
		fprintf(stderr, "mixer_run: the engine refused a request: %s\n", strerror(-err));
		exit(1);
	}
}

static void reap(int64_t now)
{
	struct avfs_disk_cqe c[16];
	int n;

	while ((n = avfs_disk_reap(g.d, c, 16)) > 0)
		for (int i = 0; i < n; i++)
			avfs_engine_complete(g.e, c[i].cookie, c[i].res, now);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mixer_run [--backend auto|uring|sg|nvme] [--duration S] [--streams N]\n"
		"                 [--rate BYTES/S] [--io SIZE] [--buffer S] [--disk-model NAME]\n"
		"                 [--set NAME=VALUE]... DEVICE   (a scratch device or image file: it is "
		"written)\n");
}

static void report(double duration, int64_t now)
{
	const struct avfs_metrics *m = avfs_engine_metrics(g.e);
	struct avfs_metrics_summary s;
	struct avfs_sched_counters k;

	avfs_metrics_summary(m, now, &s);
	printf("mixer_run: RT requests %" PRIu64 ", misses %" PRIu64 " (-ETIME %" PRIu64 "), "
	       "margin min %.1f ms; BE %" PRIu64 " requests, %.2f MB/s; disk busy %.1f %%; "
	       "E(T_wait) %.3f ms\n",
	       s.rt_requests, s.misses, s.etime, s.rt_requests ? s.margin_min_ms : 0.0,
	       s.be_requests, s.be_bytes / 1e6 / duration, 100.0 * s.utilization, s.e_twait_ms);
	printf("mixer_run: commands READ %" PRIu64 ", WRITE %" PRIu64 " (FUA %" PRIu64 "), SEEK %"
	       PRIu64 ", errors %" PRIu64 "; mean command time %.3f ms\n", g.cmds_read,
	       g.cmds_write, g.cmds_fua, g.cmds_seek, g.errors,
	       s.commands ? m->svc_sum_ns / 1e6 / (double)s.commands : 0.0);
	avfs_sched_counters(avfs_engine_sched(g.e), &k);
	printf("mixer_run: mixer: %" PRIu64 " chunk commands, %" PRIu64 " JIT waits (%.1f ms "
	       "predicted slack), %" PRIu64 " seek splits\n", k.chunks, k.jit_waits,
	       k.jit_wait_ns / 1e6, k.seek_splits);
	if (g.predicting)
		printf("mixer_run: predictor: transport slip learned %.3f ms; %" PRIu64 " of %" PRIu64
		       " commands judged lost a turn\n", g.rp.slip_ns / 1e6, g.rp.slip_lost,
		       g.rp.slip_samples);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "duration", required_argument, NULL, 'd' },
		{ "streams", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "io", required_argument, NULL, 'i' },
		{ "buffer", required_argument, NULL, 'B' },
		{ "set", required_argument, NULL, 's' },
		{ "disk-model", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	enum avfs_backend backend = AVFS_BACKEND_AUTO;
	struct avfs_engine_conf ec;
	struct avfs_engine_ops ops = { .submit = ops_submit, .arm = ops_arm, .log = ops_log };
	struct avfs_rotpred_params rpp;
	struct avfs_hdd *geom = NULL;
	const char *model = NULL;
	struct stream st[MAX_STREAMS] = { 0 };
	double duration = 5, buffer = 1;
	uint64_t rate = 2000000, io = 256u << 10, v;
	unsigned nstreams = 2;
	char why[256];
	int64_t t0, end;
	bool failed;
	int c, err;

	avfs_engine_conf_default(&ec);
	ec.commit_period_ns = 0;	/* raw requests: no file system, no commits */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char name[64];
		const char *eq;

		switch (c) {
		case 'b':
			if (avfs_backend_parse(optarg, &backend)) {
				fprintf(stderr, "mixer_run: --backend %s: auto, uring, sg or nvme\n", optarg);
				return 2;
			}
			break;
		case 'd': duration = atof(optarg); break;
		case 'm': model = optarg; break;
		case 'B': buffer = atof(optarg); break;
		case 'n': nstreams = (unsigned)atoi(optarg); break;
		case 'r':
		case 'i':
			if (avfs_parse_size(optarg, &v) || !v) {
				fprintf(stderr, "mixer_run: bad size %s\n", optarg);
				return 2;
			}
			*(c == 'r' ? &rate : &io) = v;
			break;
		case 's':
			eq = strchr(optarg, '=');
			if (!eq || (size_t)(eq - optarg) >= sizeof(name)) {
				usage(stderr);
				return 2;
			}
			snprintf(name, sizeof(name), "%.*s", (int)(eq - optarg), optarg);
			if (avfs_engine_conf_set(&ec, name, eq + 1, why, sizeof(why))) {
				fprintf(stderr, "mixer_run: %s\n", why);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !nstreams || nstreams > MAX_STREAMS || duration <= 0 ||
	    buffer <= 0 || io > (8u << 20)) {
		usage(stderr);
		return 2;
	}
	err = avfs_disk_open(argv[optind], backend, ec.sched.split_bytes ? AVFS_OPEN_SEEK : 0, &g.d,
			     why, sizeof(why));
	if (err) {
		fprintf(stderr, "mixer_run: %s\n", why);
		return 1;
	}
	if (ec.sched.split_bytes && !g.d->info.has_seek) {
		fprintf(stderr, "mixer_run: split needs SEEK, which the %s backend does not give\n",
			g.d->ident.backend);
		return 2;
	}
	io -= io % g.d->info.lbs;
	ec.sched.model.lmax = g.d->info.size;
	avfs_rotpred_params_from_model(&ec.sched.model, &rpp);
	if (model && (err = avfs_rotpred_named(model, g.d->info.size, &ec.sched.model, &rpp, &geom))) {
		fprintf(stderr, "mixer_run: --disk-model %s: %s\n", model,
			err == -ENOENT ? "not a rotating disk model (avfs-250g, barracuda-500g, "
			"st318437, travelstar-20g)" : strerror(-err));
		return 2;
	}
	ec.sched.rotational = g.d->info.rotational || !g.d->info.is_blockdev;
	if (ec.sched.jit || ec.sched.split_bytes) {
		if (avfs_rotpred_init(&g.rp, &rpp)) {
			fprintf(stderr, "mixer_run: jit/split: the disk model has no rotation to "
				"predict\n");
			return 2;
		}
		ec.sched.pred = avfs_rotpred_predictor(&g.rp);
		g.predicting = true;
	}
	ec.lbs = g.d->info.lbs;
	t0 = avfs_clock_ns();
	err = avfs_engine_new(&g.e, &ec, NULL, g.d->info.size, &ops, t0, why, sizeof(why));
	if (err) {
		fprintf(stderr, "mixer_run: %s\n", why);
		return 2;
	}
	printf("mixer_run: %s via %s (%s%s%s), %.1f MB, %s mode; %u readers + 1 recorder at %.2f "
	       "MB/s, %" PRIu64 " KiB requests, %.1f s buffers, chunk %u, jit %s, split %" PRIu64
	       ", %.1f s\n", argv[optind], g.d->ident.backend,
	       *g.d->ident.transport ? g.d->ident.transport : "unidentified",
	       *g.d->ident.product ? " " : "", g.d->ident.product, g.d->info.size / 1e6,
	       ec.sched.rotational ? "rotational" : "non-rotational", nstreams, rate / 1e6, io >> 10,
	       buffer, ec.sched.chunk, ec.sched.jit ? "on" : "off", ec.sched.split_bytes, duration);
	if (model)
		printf("mixer_run: disk model %s: T_r %.3f ms, mean seek %.2f ms, %.1f-%.1f MB/s; "
		       "predictor seek %.2f-%.2f ms, overhead %.2f ms, jit offset %.2f ms\n", model,
		       ec.sched.model.tr_ns / 1e6, ec.sched.model.tk_ns / 1e6,
		       ec.sched.model.dmax / 1e6, ec.sched.model.dmin / 1e6, rpp.track_ns / 1e6,
		       rpp.full_ns / 1e6, rpp.overhead_ns / 1e6, ec.sched.jit_offset_ns / 1e6);
	/* streams spread over the disk; the last one records */
	nstreams++;
	for (unsigned i = 0; i < nstreams; i++) {
		st[i].span = g.d->info.size / nstreams;
		st[i].span -= st[i].span % io;
		st[i].base = i * st[i].span;
		st[i].write = i == nstreams - 1;
	}
	end = t0 + (int64_t)(duration * NS);
	for (int64_t t = t0;;) {
		struct pollfd pfd = { .fd = avfs_disk_poll_fd(g.d), .events = POLLIN };
		bool running = t < end;
		int64_t wake = end;

		for (unsigned i = 0; running && i < nstreams; i++) {
			while (st[i].next_release <= t - t0) {
				submit(st[i].base + st[i].next_off % st[i].span, (uint32_t)io,
				       st[i].write, t0 + st[i].next_release + (int64_t)(buffer * NS),
				       (int)i, t);
				st[i].next_off += io;
				st[i].next_release += (int64_t)((double)io / (double)rate * NS);
			}
			if (t0 + st[i].next_release < wake)
				wake = t0 + st[i].next_release;
		}
		if (running && !g.be_out)	/* greedy best effort, one at a time */
			submit(rnd() % (g.d->info.size / BE_IO) * BE_IO, BE_IO, false, 0, -1, t);
		if (!running && avfs_engine_idle(g.e))
			break;
		if (g.wake && g.wake < wake)
			wake = g.wake;
		{	/* to the ns: a JIT wait woken a millisecond late misses its sector */
			int64_t w = !running ? 10000000 : wake > t ? wake - t : 0;
			struct timespec ts = { .tv_sec = w / NS, .tv_nsec = w % NS };

			ppoll(&pfd, 1, &ts, NULL);
		}
		t = avfs_clock_ns();	/* once an iteration, handed down */
		reap(t);
		avfs_engine_tick(g.e, t);
	}
	report(duration, avfs_clock_ns());
	{
		struct avfs_metrics_summary s;

		avfs_metrics_summary(avfs_engine_metrics(g.e), avfs_clock_ns(), &s);
		failed = s.misses || g.errors || !s.rt_requests;
	}
	avfs_engine_free(g.e);
	avfs_hdd_free(geom);
	avfs_disk_close(g.d);
	return failed ? 1 : 0;
}
