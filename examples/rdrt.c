/*
 * rdrt.c — read a file at a fixed rate, as ABISS's rdrt (papers/000 §4): read k of --io bytes
 * is due at t0 + k·P (P = io / rate) and is issued then, or at once if the previous read
 * ended late; each read's delay against its schedule is logged. One read at a time; the file
 * wraps. It measures; it neither retries nor adapts its rate.
 */
#include <avio.h>
#include <clock.h>
#include <grow.h>
#include <units.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AVFS_VERSION	/* the build gives it; a copy built elsewhere has none */
#define AVFS_VERSION "unknown"
#endif

#define EXIT_ARGS 2
#define ALIGN 4096

static void usage(FILE *f)
{
	fprintf(f,
"usage: rdrt [--mode avio|posix] --rate R --io SIZE --duration S FILE\n"
"\n"
"Reads FILE sequentially (wrapping at its end) at R bytes per second in reads of SIZE bytes,\n"
"one at a time: read k is due at t0 + k*SIZE/R. Prints one line per read,\n"
"  k offset delay_ms latency_ms\n"
"delay = completion - due time (how late the data arrived against the schedule), latency =\n"
"completion - issue; then a summary on lines starting with '#'.\n"
"\n"
"  --mode avio    libavio, each read with deadline = its due time + one period (default);\n"
"                 FILE on an AVFS mount\n"
"  --mode posix   pread(2) with O_DIRECT on any file system\n"
"  --rate R       bytes per second, K/M/G = 10^3/10^6/10^9 (ABISS used 1M with --io 64K)\n"
"  --io SIZE      bytes per read, K/M = 2^10/2^20, a multiple of 4096, at most 16M\n"
"  --duration S   seconds\n"
"Exit 0 when the run completed, 1 when a read failed or the file could not be used,\n"
"2 for bad arguments.\n");
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* one read of io bytes at off, done when this returns; bytes or -errno */
static ssize_t read_one(bool avio, int fd, void *buf, size_t io, uint64_t off, int64_t deadline)
{
	avfs_asyncio_t aio = {
		.aio_fildes = fd, .aio_offset = (off_t)off, .aio_buf = buf,
		.aio_nbytes = io, .aio_deadline = deadline,
	};
	ssize_t n;
	int err;

	if (!avio) {
		n = pread(fd, buf, io, (off_t)off);
		return n < 0 ? -errno : n;
	}
	err = avfs_asyncio_start(&aio, AVFS_READ);
	if (err)
		return err;
	err = avfs_asyncio_check(&aio, AVFS_WAIT);
	return err ? err : aio.aio_ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "rate", required_argument, NULL, 'r' },
		{ "io", required_argument, NULL, 'i' },
		{ "duration", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	double rate = 0, duration = 0;
	int64_t t0, end, period, due, issue, done, *delays = NULL, *d;
	uint64_t io_u = 0, nslots, k, late = 0, bytes = 0;
	size_t io, n = 0, cap = 0;
	bool avio = true;
	struct stat st;
	void *buf = NULL;
	int o, fd, ret = 0;
	ssize_t r;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			if (strcmp(optarg, "avio") && strcmp(optarg, "posix")) {
				fprintf(stderr, "rdrt: --mode: avio or posix\n");
				return EXIT_ARGS;
			}
			avio = !strcmp(optarg, "avio");
			break;
		case 'r':	/* 0 when it is not a rate: refused below */
			if (avfs_parse_rate(optarg, false, &rate) || !(rate > 0))
				rate = 0;
			break;
		case 'i':
			if (avfs_parse_size(optarg, &io_u) || !io_u || io_u > (16 << 20) ||
			    io_u % ALIGN) {
				fprintf(stderr, "rdrt: --io: a multiple of 4096 up to 16M\n");
				return EXIT_ARGS;
			}
			break;
		case 't':
			if (avfs_parse_number(optarg, &duration))
				duration = 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("rdrt (AVFS %s)\n", AVFS_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_ARGS;
		}
	}
	if (!rate || !io_u || !duration || duration > 1e7 || optind != argc - 1) {
		fprintf(stderr, "rdrt: --rate, --io, --duration (all positive) and one FILE are"
			" required (--help)\n");
		return EXIT_ARGS;
	}
	io = (size_t)io_u;
	period = (int64_t)llround((double)io / rate * 1e9);
	if (period <= 0) {
		fprintf(stderr, "rdrt: --rate too high for --io\n");
		return EXIT_ARGS;
	}

	fd = open(argv[optind], O_RDONLY | O_CLOEXEC | (avio ? 0 : O_DIRECT));
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "rdrt: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	nslots = (uint64_t)st.st_size / io;
	if (!nslots) {
		fprintf(stderr, "rdrt: %s: shorter than one --io\n", argv[optind]);
		ret = 1;
		goto out;
	}
	buf = avio ? avfs_buf_alloc(io) : aligned_alloc(ALIGN, io);
	if (!buf) {
		fprintf(stderr, "rdrt: buffer: %s\n", strerror(errno));
		ret = 1;
		goto out;
	}

	printf("# k offset delay_ms latency_ms\n");
	t0 = avfs_clock_ns();
	end = t0 + (int64_t)(duration * 1e9);
	for (k = 0; (due = t0 + (int64_t)k * period) < end; k++) {
		uint64_t off = k % nslots * io;

		avfs_clock_sleep_until(due);	/* returns at once when we are behind */
		issue = avfs_clock_ns();
		r = read_one(avio, fd, buf, io, off, due + period);
		done = avfs_clock_ns();
		if (r < 0 && r != -ETIME) {
			fprintf(stderr, "rdrt: read at %" PRIu64 ": %s\n", off, strerror((int)-r));
			ret = 1;
			break;
		}
		d = avfs_grow(delays, &cap, n, sizeof(*d), 1024);
		if (!d) {
			fprintf(stderr, "rdrt: out of memory\n");
			ret = 1;
			break;
		}
		delays = d;
		delays[n++] = done - due;
		if (r == -ETIME || done > due + period)
			late++;
		if (r > 0)
			bytes += (uint64_t)r;
		printf("%" PRIu64 " %" PRIu64 " %.3f %.3f%s\n", k, off, (double)(done - due) / 1e6,
		       (double)(done - issue) / 1e6, r == -ETIME ? " ETIME" : "");
	}
	if (n) {
		/* n reads take n periods on schedule; more if they ran late */
		double el = fmax((double)(avfs_clock_ns() - t0), (double)n * (double)period) / 1e9;
		double sum = 0;
		size_t i;

		for (i = 0; i < n; i++)
			sum += (double)delays[i];
		qsort(delays, n, sizeof(*delays), cmp_i64);
		printf("# reads %zu, %.3f MB/s (asked %.3f), later than one period: %" PRIu64 "\n",
		       n, (double)bytes / 1e6 / el, rate / 1e6, late);
		printf("# delay_ms min %.3f avg %.3f p50 %.3f p99 %.3f max %.3f\n",
		       (double)delays[0] / 1e6, sum / (double)n / 1e6,
		       (double)delays[(n - 1) / 2] / 1e6,
		       (double)delays[(size_t)ceil(0.99 * (double)n) - 1] / 1e6,
		       (double)delays[n - 1] / 1e6);
	}
out:
	if (avio)
		avfs_buf_free(buf);
	else
		free(buf);
	free(delays);
	close(fd);
	return ret;
}
