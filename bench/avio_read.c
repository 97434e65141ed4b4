/*
 * avio_read.c — the libavio side of bench/io-cost.sh: reads a file of an AVFS mount from start
 * to end in fixed-size requests through avfsd, keeping a given number in flight, into
 * shared-memory buffers (zero copy) or ordinary ones, and prints the rate. It checks no data.
 *
 * usage: avio_read [--bs BYTES] [--depth N] [--copy] [--deadline-ms MS] FILE
 */
#include <avio.h>
#include <clock.h>
#include <units.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 64

static void usage(FILE *f)
{
	fprintf(f, "usage: avio_read [--bs BYTES] [--depth N] [--copy] [--deadline-ms MS] FILE\n"
		   "  --bs BYTES        request size, a multiple of 4096 (default 4194304)\n"
		   "  --depth N         requests in flight, 1..%d (default 1)\n"
		   "  --copy            ordinary buffers (one copy through the socket) instead of\n"
		   "                    avfs_buf_alloc() shared memory\n"
		   "  --deadline-ms MS  give each request a deadline MS ms after its start\n"
		   "                    (default 0: best effort)\n", MAX_DEPTH);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bs", required_argument, NULL, 'b' },
		{ "depth", required_argument, NULL, 'd' },
		{ "copy", no_argument, NULL, 'c' },
		{ "deadline-ms", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	avfs_asyncio_t aio[MAX_DEPTH];
	int busy[MAX_DEPTH] = { 0 };
	size_t bs = 4u << 20;
	int depth = 1, copy = 0, o, fd, i, inflight = 0, err;
	int64_t deadline_ns = 0, t0, t1;
	uint64_t next = 0, done = 0, size, v;
	struct stat st;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'b':
			if (avfs_parse_size(optarg, &v))
				v = 0;	/* refused below */
			bs = (size_t)v;
			break;
		case 'd': depth = atoi(optarg); break;
		case 'c': copy = 1; break;
		case 'm': deadline_ns = strtoll(optarg, NULL, 0) * 1000000; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !bs || bs % 4096 || bs > (16u << 20) || depth < 1 ||
	    depth > MAX_DEPTH || deadline_ns < 0) {
		usage(stderr);
		return 2;
	}
	fd = open(argv[optind], O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "avio_read: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	size = (uint64_t)st.st_size / bs * bs;	/* whole requests only */
	if (!size) {
		fprintf(stderr, "avio_read: %s: smaller than one request\n", argv[optind]);
		return 1;
	}
	memset(aio, 0, sizeof(aio));
	for (i = 0; i < depth; i++) {
		void *b = NULL;

		if (copy ? posix_memalign(&b, 4096, bs) != 0 : !(b = avfs_buf_alloc(bs))) {
			fprintf(stderr, "avio_read: no buffer of %zu bytes (AVFS_SHM_SIZE?)\n", bs);
			return 1;
		}
		aio[i].aio_fildes = fd;
		aio[i].aio_buf = b;
		aio[i].aio_nbytes = bs;
	}
	t0 = avfs_clock_ns();
	/* keep depth requests in flight; wait for the oldest (the file is read in order) */
	for (i = 0; done < size; i = (i + 1) % depth) {
		if (busy[i] && (inflight == depth || next >= size)) {
			err = avfs_asyncio_check(&aio[i], AVFS_WAIT);
			if (err || aio[i].aio_ret != (ssize_t)bs) {
				fprintf(stderr, "avio_read: read at %lld: %s\n",
					(long long)aio[i].aio_offset,
					strerror(err ? -err : aio[i].aio_ret < 0 ? (int)-aio[i].aio_ret : EIO));
				return 1;
			}
			done += bs;
			inflight--;
			busy[i] = 0;
		}
		if (next < size) {
			aio[i].aio_offset = (off_t)next;
			aio[i].aio_deadline = deadline_ns ? avfs_clock_ns() + deadline_ns : 0;
			err = avfs_asyncio_start(&aio[i], AVFS_READ);
			if (err) {
				fprintf(stderr, "avio_read: start at %llu: %s\n",
					(unsigned long long)next, strerror(-err));
				return 1;
			}
			next += bs;
			inflight++;
			busy[i] = 1;
		}
	}
	t1 = avfs_clock_ns();
	printf("avio_read: %llu bytes in %.3f s: %.1f MB/s (bs %zu, depth %d, %s buffers)\n",
	       (unsigned long long)done, (double)(t1 - t0) / 1e9,
	       (double)done / ((double)(t1 - t0) / 1e9) / 1e6, bs, depth,
	       copy ? "ordinary" : "shared-memory");
	return 0;
}
