/*
 * mixer_run.c — a short avfs-sim-like run of the traffic mixer over a real disk backend, in real
 * time (issue 8): N real-time readers, each a sequential stream at a fixed rate with a deadline
 * per request, one recording stream (writes with FUA: the mixer puts it on the last chunk),
 * and one greedy best-effort reader at random places, all scheduled by the same avfs_sched_tm
 * that avfsd and avfs-sim run, issued through avfs_disk_open's backend (uring, sg, nvme).
 * Prints the QoS figures, the expected wait of a newly arriving urgent request for the command
 * on the device, E(T_wait) = ½ ΣT_i² / elapsed (papers/003 eq. (2), T_i the commands' times on
 * the device), and the commands issued by kind; exit 0 when every real-time request
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
#include "hddmodel.h"	/* avfs_hdd_free */
#include "iosched.h"
#include "rotpred.h"
#include "units.h"

#define NS 1000000000ll
#define MAX_STREAMS 16
#define BE_IO (64u << 10)

struct req {
	struct avfs_io io;	/* first: the scheduler hands back &io */
	int stream;		/* -1: best effort */
	void *buf;
	int64_t deadline;
};

struct stream {
	uint64_t base, span, next_off;
	int64_t next_release;
	bool write;
	unsigned outstanding;
};

static struct {
	struct avfs_disk *d;
	struct avfs_sched s;
	struct avfs_rotpred rp;
	bool predicting;
	struct avfs_sched_cmd slots[256];
	uint64_t rt, misses, etime, be, be_bytes, errors;
	uint64_t cmds_read, cmds_write, cmds_fua, cmds_seek;
	int64_t margin_min, busy_ns, started_at[256];
	double busy2;		/* Σ T_i² over commands, ns² (papers/003 eq. (2)) */
	unsigned be_out;
	uint64_t seed;
} g = { .margin_min = INT64_MAX, .seed = 88172645463325252ull };

static uint64_t rnd(void)
{
	g.seed ^= g.seed << 13;
	g.seed ^= g.seed >> 7;
	g.seed ^= g.seed << 17;
	return g.seed;
}

static struct req *new_req(uint64_t off, uint32_t len, bool write, int64_t deadline, int stream)
{
	struct req *q = calloc(1, sizeof(*q));

	if (!q || !(q->buf = avfs_disk_alloc_buf(g.d, len))) {
		fprintf(stderr, "mixer_run: out of memory\n");
		exit(1);
	}
	memset(q->buf, write ? 0x5a : 0, len);
	q->io = (struct avfs_io){ .off = off, .len = len, .write = write, .fua = write,
				  .deadline = deadline };
	q->stream = stream;
	q->deadline = deadline;
	return q;
}

static void submit(struct req *q, int64_t now)
{
	int err = avfs_sched_submit(&g.s, &q->io, now);

	if (err) {
		fprintf(stderr, "mixer_run: scheduler refused a request: %s\n", strerror(-err));
		exit(1);
	}
}

static void finish(struct req *q, struct stream *st, int res, int64_t now)
{
	if (q->stream >= 0) {
		st[q->stream].outstanding--;
		g.rt++;
		if (res == -ETIME) {
			g.etime++;
			g.misses++;
		} else if (now > q->deadline) {
			g.misses++;
		}
		if (res >= 0 && q->deadline - now < g.margin_min)
			g.margin_min = q->deadline - now;
	} else {
		g.be_out--;
		g.be++;
		g.be_bytes += res >= 0 ? q->io.orig_len : 0;
	}
	if (res < 0 && res != -ETIME) {
		g.errors++;
		fprintf(stderr, "mixer_run: %s at %" PRIu64 " failed: %s\n",
			q->io.write ? "write" : "read", q->io.orig_off, strerror(-res));
	}
	free(q->buf);
	free(q);
}

/* What the mixer says now: dispatch, fail or wait. Returns the hold timer, or 0. */
static int64_t kick(struct stream *st)
{
	for (;;) {
		struct avfs_sched_cmd cmd;
		struct req *q;
		unsigned s;
		int err;

		avfs_sched_next(&g.s, avfs_clock_ns(), &cmd);
		if (cmd.kind == AVFS_SCHED_IDLE)
			return 0;
		if (cmd.kind == AVFS_SCHED_WAIT)
			return cmd.at;
		q = (struct req *)cmd.io;
		if (cmd.kind == AVFS_SCHED_FAIL) {
			finish(q, st, cmd.err, avfs_clock_ns());
			continue;
		}
		for (s = 0; g.slots[s].io; s++)
			;
		g.slots[s] = cmd;
		g.started_at[s] = avfs_clock_ns();
		g.cmds_seek += cmd.seek;
		g.cmds_read += !cmd.seek && !cmd.write;
		g.cmds_write += !cmd.seek && cmd.write;
		g.cmds_fua += cmd.fua;
		err = avfs_disk_submit(g.d, &(struct avfs_disk_req){
			.op = cmd.seek ? AVFS_DISK_SEEK : cmd.write ? AVFS_DISK_WRITE : AVFS_DISK_READ,
			.flags = cmd.fua ? AVFS_DISK_FUA : 0, .lba = cmd.off / g.d->info.lbs,
			.len = cmd.len, .buf = (char *)q->buf + (cmd.off - q->io.orig_off),
			.buf_index = -1, .cookie = s });
		if (err) {
			g.slots[s].io = NULL;
			avfs_sched_done(&g.s, &cmd, avfs_clock_ns(), err);
			finish(q, st, err, avfs_clock_ns());
		} else if (g.predicting && !cmd.seek) {
			avfs_rotpred_issued(&g.rp, g.started_at[s], cmd.off, cmd.len);
		}
	}
}

static void reap(struct stream *st)
{
	struct avfs_disk_cqe c[16];
	int n;

	while ((n = avfs_disk_reap(g.d, c, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			struct avfs_sched_cmd cmd = g.slots[c[i].cookie];
			int64_t t = avfs_clock_ns();

			g.slots[c[i].cookie].io = NULL;
			g.busy_ns += t - g.started_at[c[i].cookie];
			g.busy2 += (double)(t - g.started_at[c[i].cookie]) *
				   (double)(t - g.started_at[c[i].cookie]);
			if (g.predicting && c[i].res >= 0)
				avfs_rotpred_observe(&g.rp, t, cmd.off + cmd.len, !cmd.seek);
			if (avfs_sched_done(&g.s, &cmd, t, (int)c[i].res))
				finish((struct req *)cmd.io, st, c[i].res < 0 ? (int)c[i].res : 0, t);
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mixer_run [--backend auto|uring|sg|nvme] [--duration S] [--streams N]\n"
		"                 [--rate BYTES/S] [--io SIZE] [--buffer S] [--disk-model NAME]\n"
		"                 [--set NAME=VALUE]... DEVICE   (a scratch device or image file: it is "
		"written)\n");
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
	struct avfs_sched_conf conf;
	struct avfs_rotpred_params rpp;
	struct avfs_hdd *geom = NULL;
	const char *model = NULL;
	struct stream st[MAX_STREAMS] = { 0 };
	double duration = 5, buffer = 1;
	uint64_t rate = 2000000, io = 256u << 10, v;
	unsigned nstreams = 2;
	char why[256];
	int64_t t0, end, hold = 0;
	int c, err;

	avfs_sched_conf_default(&conf);
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
			if (avfs_sched_conf_set(&conf, name, eq + 1, why, sizeof(why))) {
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
	err = avfs_disk_open(argv[optind], backend,
			     conf.split_bytes ? AVFS_OPEN_SEEK : 0, &g.d, why, sizeof(why));
	if (err) {
		fprintf(stderr, "mixer_run: %s\n", why);
		return 1;
	}
	if (conf.split_bytes && !g.d->info.has_seek) {
		fprintf(stderr, "mixer_run: split needs SEEK, which the %s backend does not give\n",
			g.d->ident.backend);
		return 2;
	}
	io -= io % g.d->info.lbs;
	conf.model.lmax = g.d->info.size;
	avfs_rotpred_params_from_model(&conf.model, &rpp);
	if (model && (err = avfs_rotpred_named(model, g.d->info.size, &conf.model, &rpp, &geom))) {
		fprintf(stderr, "mixer_run: --disk-model %s: %s\n", model,
			err == -ENOENT ? "not a rotating disk model (avfs-250g, barracuda-500g, "
			"st318437, travelstar-20g)" : strerror(-err));
		return 2;
	}
	conf.rotational = g.d->info.rotational || !g.d->info.is_blockdev;
	if (conf.jit || conf.split_bytes) {
		if (avfs_rotpred_init(&g.rp, &rpp)) {
			fprintf(stderr, "mixer_run: jit/split: the disk model has no rotation to "
				"predict\n");
			return 2;
		}
		conf.pred = (struct avfs_sched_predictor){ .ctx = &g.rp,
							   .predict = avfs_rotpred_predict };
		g.predicting = true;
	}
	err = avfs_sched_init(&g.s, &avfs_sched_tm, &conf);
	if (err) {
		fprintf(stderr, "mixer_run: scheduler settings refused: %s\n", strerror(-err));
		return 2;
	}
	printf("mixer_run: %s via %s (%s%s%s), %.1f MB, %s mode; %u readers + 1 recorder at %.2f "
	       "MB/s, %" PRIu64 " KiB requests, %.1f s buffers, chunk %u, jit %s, split %" PRIu64
	       ", %.1f s\n", argv[optind], g.d->ident.backend,
	       *g.d->ident.transport ? g.d->ident.transport : "unidentified",
	       *g.d->ident.product ? " " : "", g.d->ident.product, g.d->info.size / 1e6,
	       conf.rotational ? "rotational" : "non-rotational", nstreams, rate / 1e6, io >> 10,
	       buffer, conf.chunk, conf.jit ? "on" : "off", conf.split_bytes, duration);
	if (model)
		printf("mixer_run: disk model %s: T_r %.3f ms, mean seek %.2f ms, %.1f-%.1f MB/s; "
		       "predictor seek %.2f-%.2f ms, overhead %.2f ms, jit offset %.2f ms\n", model,
		       conf.model.tr_ns / 1e6, conf.model.tk_ns / 1e6, conf.model.dmax / 1e6,
		       conf.model.dmin / 1e6, rpp.track_ns / 1e6, rpp.full_ns / 1e6,
		       rpp.overhead_ns / 1e6, conf.jit_offset_ns / 1e6);
	/* streams spread over the disk; the last one records */
	nstreams++;
	for (unsigned i = 0; i < nstreams; i++) {
		st[i].span = g.d->info.size / nstreams;
		st[i].span -= st[i].span % io;
		st[i].base = i * st[i].span;
		st[i].write = i == nstreams - 1;
	}
	t0 = avfs_clock_ns();
	end = t0 + (int64_t)(duration * NS);
	for (;;) {
		int64_t t = avfs_clock_ns(), wake = end;
		struct pollfd pfd = { .fd = avfs_disk_poll_fd(g.d), .events = POLLIN };
		bool running = t < end;

		for (unsigned i = 0; running && i < nstreams; i++) {
			while (st[i].next_release <= t - t0) {
				struct req *q = new_req(st[i].base + st[i].next_off % st[i].span,
							(uint32_t)io, st[i].write,
							t0 + st[i].next_release + (int64_t)(buffer * NS), (int)i);

				st[i].next_off += io;
				st[i].next_release += (int64_t)((double)io / (double)rate * NS);
				st[i].outstanding++;
				submit(q, t);
			}
			if (t0 + st[i].next_release < wake)
				wake = t0 + st[i].next_release;
		}
		if (running && !g.be_out) {	/* greedy best effort, one at a time */
			uint64_t off = rnd() % (g.d->info.size / BE_IO) * BE_IO;

			g.be_out++;
			submit(new_req(off, BE_IO, false, 0, -1), t);
		}
		hold = kick(st);
		if (!running && !avfs_disk_inflight(g.d) && !g.s.ops->pending(g.s.ctx))
			break;
		if (hold && hold < wake)
			wake = hold;
		t = avfs_clock_ns();
		{	/* to the ns: a JIT wait woken a millisecond late misses its sector */
			int64_t w = !running ? 10000000 : wake > t ? wake - t : 0;
			struct timespec ts = { .tv_sec = w / NS, .tv_nsec = w % NS };

			ppoll(&pfd, 1, &ts, NULL);
		}
		reap(st);
	}
	printf("mixer_run: RT requests %" PRIu64 ", misses %" PRIu64 " (-ETIME %" PRIu64 "), "
	       "margin min %.1f ms; BE %" PRIu64 " requests, %.2f MB/s; disk busy %.1f %%; "
	       "E(T_wait) %.3f ms\n",
	       g.rt, g.misses, g.etime, g.margin_min == INT64_MAX ? 0 : g.margin_min / 1e6, g.be,
	       g.be_bytes / 1e6 / duration, 100.0 * (double)g.busy_ns / (double)(avfs_clock_ns() - t0),
	       0.5 * g.busy2 / (double)(avfs_clock_ns() - t0) / 1e6);
	printf("mixer_run: commands READ %" PRIu64 ", WRITE %" PRIu64 " (FUA %" PRIu64 "), SEEK %"
	       PRIu64 ", errors %" PRIu64 "; mean command time %.3f ms\n", g.cmds_read,
	       g.cmds_write, g.cmds_fua, g.cmds_seek, g.errors,
	       g.cmds_read + g.cmds_write + g.cmds_seek ?
	       g.busy_ns / 1e6 / (double)(g.cmds_read + g.cmds_write + g.cmds_seek) : 0.0);
	{
		struct avfs_sched_counters k;

		avfs_sched_counters(&g.s, &k);
		printf("mixer_run: mixer: %" PRIu64 " chunk commands, %" PRIu64 " JIT waits (%.1f ms "
		       "predicted slack), %" PRIu64 " seek splits\n", k.chunks, k.jit_waits,
		       k.jit_wait_ns / 1e6, k.seek_splits);
		if (g.predicting)
			printf("mixer_run: predictor: transport slip learned %.3f ms; %" PRIu64
			       " of %" PRIu64 " commands judged lost a turn\n", g.rp.slip_ns / 1e6,
			       g.rp.slip_lost, g.rp.slip_samples);
	}
	avfs_sched_destroy(&g.s);
	avfs_hdd_free(geom);
	avfs_disk_close(g.d);
	return g.misses || g.errors || !g.rt ? 1 : 0;
}
