/*
 * dvr.c — the DVR workload generator of papers/001 §4.1 and SPEC §12: N playback and M
 * recording constant-bit-rate streams (NrMw), one thread each, every request with a deadline,
 * through libavio (--mode avio, on an AVFS mount) or io_uring O_DIRECT (--mode posix, on any
 * file system). It measures completion margins; it neither schedules nor retries.
 */
#include <avio.h>
#include <clock.h>
#include <grow.h>
#include <jsonout.h>
#include <units.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef AVFS_VERSION	/* the build gives it; a copy built elsewhere has none */
#define AVFS_VERSION "unknown"
#endif

#define EXIT_ARGS 2
#define ALIGN 4096
#define START_DELAY_NS 100000000	/* threads are up before the first issue time */

enum dvr_mode { MODE_AVIO, MODE_POSIX };

struct cfg {
	int nr, nw;		/* the workload: nr playbacks, nw recordings */
	const char *workload;
	const char *dir;
	enum dvr_mode mode;
	double rate;		/* bits per second */
	size_t io;		/* bytes per request */
	int depth;		/* requests in flight per stream: the buffer in slots */
	double duration;	/* seconds of issuing */
	uint64_t file_size;	/* play files have it; record files wrap at it */
	const char *csv;
	bool json;
	bool reserve;		/* avio: each stream asks the daemon for a rate + buffer service */
};

struct rec {			/* one request, times in CLOCK_MONOTONIC ns */
	int64_t k;
	int64_t issue, deadline, complete;
	int64_t result;		/* bytes or -errno */
};

struct stream;

/* how a mode moves data: the one difference between avio and posix runs */
struct dvr_ops {
	const char *name;
	int (*setup)(struct stream *s);	/* open the file, buffers, the mode's state */
	/* start slot's request; 0 or -errno (-ETIME: refused, deadline past) */
	int (*submit)(struct stream *s, int slot, uint64_t off, int64_t deadline);
	/* one completion by `until` (INT64_MAX: no limit): 1 with *slot, *res; 0 timeout; -errno */
	int (*reap)(struct stream *s, int64_t until, int *slot, int64_t *res);
	void (*teardown)(struct stream *s);
};

struct stream {
	const struct cfg *cfg;
	const struct dvr_ops *ops;
	char name[16];		/* r0, r1, ..., w0, ... */
	char path[PATH_MAX];
	bool write;
	int fd;
	int64_t t0, end, period;	/* this stream's start, the end of issuing, P */
	void **bufs;		/* depth buffers */
	int64_t *slot_rec;	/* index in recs of the request in each slot, -1: free */
	struct rec *recs;
	size_t nrec, cap;
	void *priv;		/* the mode's state */
	int err;		/* fatal: the stream stopped */
};

/* ---- mode avio: libavio with deadlines ---- */

static int avio_setup(struct stream *s)
{
	avfs_asyncio_t *aios;
	int i;

	s->fd = open(s->path, s->write ? O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC :
		     O_RDONLY | O_CLOEXEC, 0644);
	if (s->fd < 0)
		return -errno;
	/* say it now rather than as an -EBADF per request: libavio finds the daemon this way */
	if (!getenv("AVFS_SOCKET") && fgetxattr(s->fd, "user.avfs.socket", NULL, 0) < 0) {
		fprintf(stderr, "dvr: %s is not on an AVFS mount (no user.avfs.socket attribute;"
			" use --mode posix, or set AVFS_SOCKET)\n", s->path);
		return -EBADF;
	}
	if (s->cfg->reserve) {
		struct avfs_service svc = { .rate = (uint64_t)(s->cfg->rate / 8),
					    .buffer = (uint64_t)s->cfg->depth * s->cfg->io,
					    .direction = s->write ? AVFS_WRITE : AVFS_READ };
		int err = avfs_reserve_io(s->fd, &svc, s->cfg->io);	/* its request size */

		if (err) {
			fprintf(stderr, "dvr: %s: reservation of %.3f MB/s with a %.1f MiB buffer "
				"refused: %s%s\n", s->name, (double)svc.rate / 1e6,
				(double)svc.buffer / (1 << 20), strerror(-err), err == -EBUSY ?
				" (see avfs-admin status)" : "");
			return err;
		}
	}
	aios = calloc((size_t)s->cfg->depth, sizeof(*aios));
	if (!aios)
		return -ENOMEM;
	s->priv = aios;
	for (i = 0; i < s->cfg->depth; i++) {
		s->bufs[i] = avfs_buf_alloc(s->cfg->io);
		if (!s->bufs[i])
			return -errno;
		memset(s->bufs[i], 0x5a, s->cfg->io);
	}
	return 0;
}

static int avio_submit(struct stream *s, int slot, uint64_t off, int64_t deadline)
{
	avfs_asyncio_t *a = (avfs_asyncio_t *)s->priv + slot;

	a->aio_fildes = s->fd;
	a->aio_offset = (off_t)off;
	a->aio_buf = s->bufs[slot];
	a->aio_nbytes = s->cfg->io;
	a->aio_deadline = deadline;
	return avfs_asyncio_start(a, s->write ? AVFS_WRITE : AVFS_READ);
}

static int avio_reap(struct stream *s, int64_t until, int *slot, int64_t *res)
{
	avfs_asyncio_t *aios = s->priv;
	avfs_asyncio_t *list[s->cfg->depth];
	int i, n = 0, ms, r;

	for (;;) {
		for (i = 0; i < s->cfg->depth; i++) {
			if (s->slot_rec[i] < 0)
				continue;
			r = avfs_asyncio_check(&aios[i], AVFS_NOWAIT);
			if (r == 0) {
				*slot = i;
				*res = aios[i].aio_ret;
				return 1;
			}
			if (r != -EINPROGRESS)
				return r;
			list[n++] = &aios[i];
		}
		if (!n)
			return 0;
		if (until == INT64_MAX) {
			ms = -1;
		} else {
			int64_t left = until - avfs_clock_ns();

			if (left <= 0)
				return 0;
			ms = (int)((left + 999999) / 1000000);
		}
		r = avfs_asyncio_poll(list, n, ms);
		if (r < 0)
			return r;
		if (r == 0)
			return 0;
		n = 0;
	}
}

static void avio_teardown(struct stream *s)
{
	int i;

	for (i = 0; s->bufs && i < s->cfg->depth; i++)
		avfs_buf_free(s->bufs[i]);
	free(s->priv);
}

static const struct dvr_ops avio_ops = {
	.name = "avio",
	.setup = avio_setup,
	.submit = avio_submit,
	.reap = avio_reap,
	.teardown = avio_teardown,
};

/* ---- mode posix: io_uring, O_DIRECT, no deadline reaches the kernel ---- */

static int posix_setup(struct stream *s)
{
	struct io_uring *ring;
	int i, err;

	s->fd = open(s->path, s->write ? O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC :
		     O_RDONLY | O_DIRECT | O_CLOEXEC, 0644);
	if (s->fd < 0)
		return -errno;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	err = io_uring_queue_init((unsigned)s->cfg->depth, ring, 0);
	if (err) {
		free(ring);
		return err;
	}
	s->priv = ring;
	for (i = 0; i < s->cfg->depth; i++) {
		if (posix_memalign(&s->bufs[i], ALIGN, s->cfg->io))
			return -ENOMEM;
		memset(s->bufs[i], 0x5a, s->cfg->io);
	}
	return 0;
}

static int posix_submit(struct stream *s, int slot, uint64_t off, int64_t deadline)
{
	struct io_uring *ring = s->priv;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int r;

	(void)deadline;	/* the kernel has no use for it: measured, not given */
	if (!sqe)
		return -EAGAIN;
	if (s->write)
		io_uring_prep_write(sqe, s->fd, s->bufs[slot], (unsigned)s->cfg->io, off);
	else
		io_uring_prep_read(sqe, s->fd, s->bufs[slot], (unsigned)s->cfg->io, off);
	io_uring_sqe_set_data64(sqe, (uint64_t)slot);
	r = io_uring_submit(ring);
	return r < 0 ? r : 0;
}

static int posix_reap(struct stream *s, int64_t until, int *slot, int64_t *res)
{
	struct io_uring *ring = s->priv;
	struct io_uring_cqe *cqe;
	int r;

	r = io_uring_peek_cqe(ring, &cqe);
	if (r == -EAGAIN) {
		if (until == INT64_MAX) {
			r = io_uring_wait_cqe(ring, &cqe);
		} else {
			int64_t left = until - avfs_clock_ns();
			struct __kernel_timespec ts;

			if (left <= 0)
				return 0;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		}
	}
	if (r == -ETIME || r == -EINTR || r == -EAGAIN)
		return 0;
	if (r < 0)
		return r;
	*slot = (int)io_uring_cqe_get_data64(cqe);
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return 1;
}

static void posix_teardown(struct stream *s)
{
	int i;

	if (s->priv) {
		io_uring_queue_exit(s->priv);
		free(s->priv);
	}
	for (i = 0; s->bufs && i < s->cfg->depth; i++)
		free(s->bufs[i]);
}

static const struct dvr_ops posix_ops = {
	.name = "posix",
	.setup = posix_setup,
	.submit = posix_submit,
	.reap = posix_reap,
	.teardown = posix_teardown,
};

/* ---- one stream ---- */

static struct rec *rec_new(struct stream *s)
{
	struct rec *r = avfs_grow(s->recs, &s->cap, s->nrec, sizeof(*r), 256);

	if (!r)
		return NULL;
	s->recs = r;
	return &s->recs[s->nrec++];
}

/*
 * The stream of SPEC §12: request k may be issued at t0 + k·P, when its buffer slot frees,
 * and no more than depth are in flight; its deadline is t0 + (depth + k)·P, when the buffer
 * would under-run (playback) or overflow (recording). A late completion delays later issues,
 * never their deadlines.
 */
static void *stream_main(void *arg)
{
	struct stream *s = arg;
	const struct cfg *c = s->cfg;
	int64_t k = 0, next, until, res;
	uint64_t slots_off = c->file_size / c->io;
	int inflight = 0, slot, r, i;
	struct rec *rec;

	for (;;) {
		next = s->t0 + k * s->period;
		if (next >= s->end && !inflight)
			break;
		if (next < s->end && inflight < c->depth && avfs_clock_ns() >= next) {
			for (slot = 0; s->slot_rec[slot] >= 0; slot++)
				;
			rec = rec_new(s);
			if (!rec) {
				s->err = -ENOMEM;
				break;
			}
			rec->k = k;
			rec->deadline = s->t0 + (c->depth + k) * s->period;
			rec->issue = avfs_clock_ns();
			r = s->ops->submit(s, slot, (uint64_t)k % slots_off * c->io, rec->deadline);
			if (r == -EAGAIN && inflight) {
				s->nrec--;	/* a queue bound, not a result: retry after a completion */
				goto reap;
			}
			k++;
			if (r) {
				rec->complete = avfs_clock_ns();
				rec->result = r;
				if (r != -ETIME && r != -EAGAIN) {
					s->err = r;
					break;
				}
				continue;
			}
			s->slot_rec[slot] = (int64_t)(rec - s->recs);
			inflight++;
			continue;
		}
		if (!inflight) {
			avfs_clock_sleep_until(next);
			continue;
		}
reap:
		until = next < s->end && inflight < c->depth ? next : INT64_MAX;
		r = s->ops->reap(s, until, &slot, &res);
		if (r < 0) {
			s->err = r;
			break;
		}
		if (!r)
			continue;
		rec = &s->recs[s->slot_rec[slot]];
		rec->complete = avfs_clock_ns();
		rec->result = res;
		s->slot_rec[slot] = -1;
		inflight--;
	}
	/* a stream that stopped on an error still owns requests in flight: let them land */
	for (i = 0; inflight && i < 1000; i++) {
		r = s->ops->reap(s, avfs_clock_ns() + 10000000, &slot, &res);
		if (r < 0)
			break;
		if (r) {
			s->slot_rec[slot] = -1;
			inflight--;
		}
	}
	return NULL;
}

/* ---- setup phase: play files exist at full size before the measured run ---- */

static int make_play_file(const char *path, uint64_t size, bool verbose)
{
	size_t chunk = 1u << 20;
	struct stat st;
	uint64_t off;
	char *buf;
	int fd, err = 0;

	if (!stat(path, &st) && (uint64_t)st.st_size >= size)
		return 0;
	if (verbose)
		fprintf(stderr, "dvr: writing %s (%" PRIu64 " MiB)\n", path, size >> 20);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	buf = malloc(chunk);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;

		memset(buf, (int)(off >> 20) & 0xff, n);	/* distinct per MiB, never a hole */
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			err = errno ? -errno : -EIO;
			goto out;
		}
	}
	if (fsync(fd))
		err = -errno;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);	/* play from the disk, not the cache */
out:
	free(buf);
	close(fd);
	return err;
}

/* ---- report ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* nearest-rank quantile of a sorted array */
static double quantile_ms(const int64_t *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);

	if (!n)
		return 0;
	i = i ? i - 1 : 0;
	return (double)v[i < n ? i : n - 1] / 1e6;
}

struct summary {
	uint64_t requests, misses, errors;
	int first_err;		/* -errno of the first failed request; 0: short ones only */
	double p0, min, p001, p01, p50, read_mbs, write_mbs, elapsed;
};

static int summarize(struct stream *ss, int n, int64_t t0, const struct cfg *c,
		     struct summary *sum)
{
	uint64_t bytes[2] = { 0, 0 };
	int64_t last = t0, *margins;
	size_t total = 0, m = 0, j;
	int i;

	for (i = 0; i < n; i++)
		total += ss[i].nrec;
	margins = malloc((total ? total : 1) * sizeof(*margins));
	if (!margins)
		return -ENOMEM;
	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < n; i++) {
		for (j = 0; j < ss[i].nrec; j++) {
			const struct rec *r = &ss[i].recs[j];

			if (!r->complete)
				continue;	/* abandoned after a fatal error */
			sum->requests++;
			margins[m++] = r->deadline - r->complete;
			/* a failure is an error whenever it comes: counted as a miss when late, a
			 * run whose every request failed would pass for a slow one (issue 17) */
			if (r->result < 0 && r->result != -ETIME) {
				if (!sum->errors++)
					sum->first_err = (int)r->result;
			} else if (r->result == -ETIME || r->complete > r->deadline) {
				sum->misses++;
			} else if (r->result != (int64_t)c->io) {
				sum->errors++;	/* short */
			}
			if (r->result > 0)
				bytes[ss[i].write] += (uint64_t)r->result;
			if (r->complete > last)
				last = r->complete;
		}
	}
	qsort(margins, m, sizeof(*margins), cmp_i64);
	sum->p0 = sum->requests ? (double)sum->misses / (double)sum->requests : 0;
	sum->min = m ? (double)margins[0] / 1e6 : 0;
	sum->p001 = quantile_ms(margins, m, 0.001);
	sum->p01 = quantile_ms(margins, m, 0.01);
	sum->p50 = quantile_ms(margins, m, 0.5);
	sum->elapsed = (double)(last - t0) / 1e9;
	if (sum->elapsed > 0) {
		sum->read_mbs = (double)bytes[0] / 1e6 / sum->elapsed;
		sum->write_mbs = (double)bytes[1] / 1e6 / sum->elapsed;
	}
	free(margins);
	return 0;
}

/* The summary as one JSON object (--json): 0, or -errno with the reason printed. */
static int print_json(const struct cfg *c, const char *mode, const struct summary *sum)
{
	json_object *o = json_object_new_object(), *m = json_object_new_object();
	int err;

	json_object_object_add(o, "mode", json_object_new_string(mode));
	json_object_object_add(o, "workload", json_object_new_string(c->workload));
	json_object_object_add(o, "duration_s", avfs_json_double(c->duration, "%.3f"));
	json_object_object_add(o, "elapsed_s", avfs_json_double(sum->elapsed, "%.3f"));
	json_object_object_add(o, "rate_bps", avfs_json_double(c->rate, "%.0f"));
	json_object_object_add(o, "io_bytes", json_object_new_uint64(c->io));
	json_object_object_add(o, "depth", json_object_new_int(c->depth));
	json_object_object_add(o, "rt_requests", json_object_new_uint64(sum->requests));
	json_object_object_add(o, "deadline_misses", json_object_new_uint64(sum->misses));
	json_object_object_add(o, "io_errors", json_object_new_uint64(sum->errors));
	json_object_object_add(o, "p0", avfs_json_double(sum->p0, "%.6g"));
	json_object_object_add(m, "min", avfs_json_double(sum->min, "%.3f"));
	json_object_object_add(m, "p001", avfs_json_double(sum->p001, "%.3f"));
	json_object_object_add(m, "p01", avfs_json_double(sum->p01, "%.3f"));
	json_object_object_add(m, "p50", avfs_json_double(sum->p50, "%.3f"));
	json_object_object_add(o, "margin_ms", m);
	json_object_object_add(o, "read_mbs", avfs_json_double(sum->read_mbs, "%.3f"));
	json_object_object_add(o, "write_mbs", avfs_json_double(sum->write_mbs, "%.3f"));
	err = avfs_json_print(stdout, o, false);
	if (err)
		fprintf(stderr, "dvr: cannot print the JSON: %s\n", strerror(-err));
	return err;
}

static int write_csv(const char *path, struct stream *ss, int n, int64_t t0)
{
	FILE *f = fopen(path, "w");
	size_t j;
	int i;

	if (!f)
		return -errno;
	fprintf(f, "stream,k,issue_ns,deadline_ns,complete_ns,result\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < ss[i].nrec; j++) {
			const struct rec *r = &ss[i].recs[j];

			if (!r->complete)
				continue;
			fprintf(f, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
				ss[i].name, r->k, r->issue - t0, r->deadline - t0,
				r->complete - t0, r->result);
		}
	if (fclose(f))
		return -errno;
	return 0;
}

/* ---- arguments ---- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: dvr --workload NrMw --dir DIR [--mode avio|posix] [--rate 19.39M] [--io 512K]\n"
"           [--depth 8] [--duration 30] [--file-size 1G] [--csv FILE] [--json] [--reserve]\n"
"\n"
"The DVR workload of papers/001 §4.1: N playback streams read DIR/play-<i>.ts (written first,\n"
"before the measured run, if missing or short), M recording streams write DIR/rec-<j>.ts.\n"
"Each stream is constant bit rate: request k is issued at t0 + k*P (P = io*8/rate) when one\n"
"of its depth buffer slots is free, with deadline t0 + (depth + k)*P. Files wrap at --file-size.\n"
"\n"
"  --mode avio     libavio with deadlines; DIR on an AVFS mount (default)\n"
"  --mode posix    io_uring with O_DIRECT on any file system; deadlines only measured\n"
"  --rate R        bits per second per stream, K/M/G = 10^3/10^6/10^9 (default 19.39M)\n"
"  --io SIZE       bytes per request, K/M/G = 2^10.. , a multiple of 4096 (default 512K)\n"
"  --depth D       requests in flight per stream (default 8)\n"
"  --duration S    seconds of issuing requests (default 30)\n"
"  --file-size SZ  size of the play files, wrap point of the recordings (default 1G)\n"
"  --csv FILE      one line per request: stream,k,issue_ns,deadline_ns,complete_ns,result\n"
"                  (times in ns from the run's start; result = bytes or -errno)\n"
"  --json          the summary as one JSON object\n"
"  --reserve       avio: each stream first reserves its rate with a buffer of depth*io\n"
"                  (avfs_reserve); a refusal stops the run with the daemon's reason\n"
"\n"
"A miss is a completion after its deadline or a request refused with -ETIME; P0 is the\n"
"fraction missed; margin = deadline - completion. Exit 0 when the run completed (misses\n"
"are results), 1 when it could not run or a request failed, 2 for bad arguments.\n");
}

static bool parse_workload(const char *s, int *nr, int *nw)
{
	char *end;
	long r, w;

	r = strtol(s, &end, 10);
	if (end == s || *end != 'r')
		return false;
	s = end + 1;
	w = strtol(s, &end, 10);
	if (end == s || *end != 'w' || end[1])
		return false;
	if (r < 0 || w < 0 || r + w < 1 || r + w > 1024)
		return false;
	*nr = (int)r;
	*nw = (int)w;
	return true;
}

static int parse_args(int argc, char **argv, struct cfg *c)
{
	static const struct option opts[] = {
		{ "workload", required_argument, NULL, 'W' },
		{ "dir", required_argument, NULL, 'D' },
		{ "mode", required_argument, NULL, 'm' },
		{ "rate", required_argument, NULL, 'r' },
		{ "io", required_argument, NULL, 'i' },
		{ "depth", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 't' },
		{ "file-size", required_argument, NULL, 'f' },
		{ "csv", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "reserve", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	uint64_t size;
	double v;
	int o;

	*c = (struct cfg){
		.mode = MODE_AVIO, .rate = 19.39e6, .io = 512 << 10, .depth = 8,
		.duration = 30, .file_size = 1ULL << 30,
	};
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'W':
			c->workload = optarg;
			if (!parse_workload(optarg, &c->nr, &c->nw)) {
				fprintf(stderr, "dvr: --workload: expected NrMw, e.g. 6r2w\n");
				return -EINVAL;
			}
			break;
		case 'D':
			c->dir = optarg;
			break;
		case 'm':
			if (!strcmp(optarg, "avio")) {
				c->mode = MODE_AVIO;
			} else if (!strcmp(optarg, "posix")) {
				c->mode = MODE_POSIX;
			} else {
				fprintf(stderr, "dvr: --mode: avio or posix\n");
				return -EINVAL;
			}
			break;
		case 'r':	/* bytes/s from the parser, bits/s here */
			if (avfs_parse_rate(optarg, true, &v) || !(v > 0)) {
				fprintf(stderr, "dvr: --rate: a positive bit rate, e.g. 19.39M\n");
				return -EINVAL;
			}
			c->rate = v * 8;
			break;
		case 'i':
			if (avfs_parse_size(optarg, &size) || !size || size > (16 << 20) ||
			    size % ALIGN) {
				fprintf(stderr, "dvr: --io: a multiple of 4096 up to 16M\n");
				return -EINVAL;
			}
			c->io = (size_t)size;
			break;
		case 'd':
			if (avfs_parse_number(optarg, &v) || !v || v > 256 || v != floor(v)) {
				fprintf(stderr, "dvr: --depth: 1 to 256\n");
				return -EINVAL;
			}
			c->depth = (int)v;
			break;
		case 't':
			if (avfs_parse_number(optarg, &c->duration) || !c->duration ||
			    c->duration > 1e7) {
				fprintf(stderr, "dvr: --duration: positive seconds\n");
				return -EINVAL;
			}
			break;
		case 'f':
			if (avfs_parse_size(optarg, &size) || !size || size > 9000000000000000000ull) {
				fprintf(stderr, "dvr: --file-size: a positive size, e.g. 1G\n");
				return -EINVAL;
			}
			c->file_size = size;
			break;
		case 'c':
			c->csv = optarg;
			break;
		case 'R':
			c->reserve = true;
			break;
		case 'j':
			c->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("dvr (AVFS %s)\n", AVFS_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dvr: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!c->workload || !c->dir) {
		fprintf(stderr, "dvr: --workload and --dir are required (--help)\n");
		return -EINVAL;
	}
	c->file_size -= c->file_size % c->io;
	if (!c->file_size) {
		fprintf(stderr, "dvr: --file-size must hold at least one --io\n");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct summary sum;
	struct stream *ss;
	pthread_t *tids;
	struct cfg c;
	int64_t t0, period;
	bool verbose = isatty(STDERR_FILENO);
	int i, n, err, ret = 0;

	if (parse_args(argc, argv, &c))
		return EXIT_ARGS;
	n = c.nr + c.nw;
	period = (int64_t)llround((double)c.io * 8 / c.rate * 1e9);	/* P, papers/001 §4.1 */
	if (period <= 0) {
		fprintf(stderr, "dvr: --rate too high for --io\n");
		return EXIT_ARGS;
	}
	/* before any file is made: libavio needs an AVFS mount (its files name their daemon) */
	if (c.mode == MODE_AVIO && getxattr(c.dir, "user.avfs.socket", NULL, 0) <= 0) {
		fprintf(stderr, "dvr: %s is not on an AVFS mount (%s): --mode avio needs one; "
			"--mode posix runs on any folder\n", c.dir, strerror(errno));
		return 1;
	}
	ss = calloc((size_t)n, sizeof(*ss));
	tids = calloc((size_t)n, sizeof(*tids));
	if (!ss || !tids) {
		fprintf(stderr, "dvr: out of memory\n");
		return 1;
	}
	for (i = 0; i < n; i++) {
		struct stream *s = &ss[i];
		int j = i < c.nr ? i : i - c.nr;

		s->cfg = &c;
		s->ops = c.mode == MODE_AVIO ? &avio_ops : &posix_ops;
		s->write = i >= c.nr;
		s->fd = -1;
		snprintf(s->name, sizeof(s->name), "%c%d", s->write ? 'w' : 'r', j);
		snprintf(s->path, sizeof(s->path), "%s/%s-%d.ts", c.dir,
			 s->write ? "rec" : "play", j);
		s->bufs = calloc((size_t)c.depth, sizeof(*s->bufs));
		s->slot_rec = malloc((size_t)c.depth * sizeof(*s->slot_rec));
		if (!s->bufs || !s->slot_rec) {
			fprintf(stderr, "dvr: out of memory\n");
			return 1;
		}
		memset(s->slot_rec, 0xff, (size_t)c.depth * sizeof(*s->slot_rec));	/* -1 */
		if (!s->write) {
			err = make_play_file(s->path, c.file_size, verbose);
			if (err) {
				fprintf(stderr, "dvr: %s: %s\n", s->path, strerror(-err));
				ret = 1;
				goto out;
			}
		}
		err = s->ops->setup(s);
		if (err) {
			fprintf(stderr, "dvr: %s (%s): %s\n", s->path, s->ops->name, strerror(-err));
			ret = 1;
			goto out;
		}
	}

	/* streams start spread over one period, as independent recordings would */
	t0 = avfs_clock_ns() + START_DELAY_NS;
	for (i = 0; i < n; i++) {
		ss[i].period = period;
		ss[i].t0 = t0 + period * i / n;
		ss[i].end = t0 + (int64_t)(c.duration * 1e9);
	}
	for (i = 0; i < n; i++) {
		err = pthread_create(&tids[i], NULL, stream_main, &ss[i]);
		if (err) {
			fprintf(stderr, "dvr: pthread_create: %s\n", strerror(err));
			n = i;	/* join those that run; the others have no records */
			ret = 1;
			break;
		}
	}
	for (i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	n = c.nr + c.nw;

	for (i = 0; i < n; i++)
		if (ss[i].err) {
			fprintf(stderr, "dvr: stream %s: %s\n", ss[i].name, strerror(-ss[i].err));
			ret = 1;
		}
	if (summarize(ss, n, t0, &c, &sum)) {
		fprintf(stderr, "dvr: out of memory\n");
		ret = 1;
		goto out;
	}
	if (sum.errors) {
		fprintf(stderr, "dvr: %" PRIu64 " of %" PRIu64 " requests failed%s%s\n", sum.errors,
			sum.requests, sum.first_err ? ", the first with: " : " (short transfers)",
			sum.first_err ? strerror(-sum.first_err) : "");
		ret = 1;
	}
	if (c.csv) {
		err = write_csv(c.csv, ss, n, t0);
		if (err) {
			fprintf(stderr, "dvr: %s: %s\n", c.csv, strerror(-err));
			ret = 1;
		}
	}
	if (c.json) {
		if (print_json(&c, ss[0].ops->name, &sum))
			ret = 1;
	} else {
		printf("dvr: %s, mode %s, %.6g bit/s, %zu KiB requests, depth %d, %.1f s\n",
		       c.workload, ss[0].ops->name, c.rate, c.io >> 10, c.depth, c.duration);
		printf("rt_requests      %" PRIu64 "\n", sum.requests);
		printf("deadline_misses  %" PRIu64 "\n", sum.misses);
		printf("io_errors        %" PRIu64 "\n", sum.errors);
		printf("p0               %.6g\n", sum.p0);
		printf("margin_ms        min %.3f  p0.1%% %.3f  p1%% %.3f  p50 %.3f\n",
		       sum.min, sum.p001, sum.p01, sum.p50);
		printf("read_mbs         %.3f\n", sum.read_mbs);
		printf("write_mbs        %.3f\n", sum.write_mbs);
	}
out:
	for (i = 0; i < c.nr + c.nw; i++) {
		if (ss[i].ops && ss[i].fd >= 0)
			close(ss[i].fd);
		if (ss[i].ops)
			ss[i].ops->teardown(&ss[i]);
		free(ss[i].bufs);
		free(ss[i].slot_rec);
		free(ss[i].recs);
	}
	free(ss);
	free(tids);
	return ret;
}
