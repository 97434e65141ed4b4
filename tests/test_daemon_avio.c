/*
 * test_daemon_avio.c — libavio against a real avfsd (SPEC §8, §14): start/check/cancel/poll,
 * deadlines already past, misaligned requests, data read back through shared-memory and
 * ordinary buffers, 32 client processes with 8 requests each in flight, access control by
 * uid, where a file lies (avfs_placement) and who may ask, misbehaving raw-protocol clients,
 * a deadline reader answered from the daemon's read-ahead, and the daemon killed in the middle
 * of requests.
 * The library's own argument checks against a fake daemon are test_avio_client.c's.
 * env: AVFSD, MKFS, FSCK (the built binaries). Exit 77 without root or FUSE.
 * Each scenario runs in a child process: a libavio connection is per process, and lost for good.
 */
#include <avio.h>
#include "clock.h"
#include "daemon_harness.h"
#include "rawclient.h"
#include "pattern.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1u << 20)
#define DATA_SIZE (64u * MiB)	/* the file every scenario reads: pattern.h's throughout */
#define NCLIENTS 32
#define NOBODY 1000		/* the uid of the access-control checks */

static struct { int64_t kill_ns; int aux; } *shared;	/* written by children */

/* ---- files on the mount ---- */

static int open_file(const char *name, int flags)
{
	char p[256];

	path_of(p, sizeof(p), name);
	return open(p, flags, 0644);
}

/* ---- scenario: one client, the calls ---- */

static int basics(void *arg)
{
	uint8_t *shm = avfs_buf_alloc(8 * MiB), *plain = NULL, *chk = NULL;
	int fd = open_file("data", O_RDWR), rofd = open_file("data", O_RDONLY);
	int wofd = open_file("data", O_WRONLY);
	avfs_asyncio_t a[8], *list[8];
	ssize_t r;
	int err, i;

	(void)arg;
	if (posix_memalign((void **)&plain, 4096, 8 * MiB) || !(chk = malloc(16 * MiB)) || !shm ||
	    fd < 0 || rofd < 0 || wofd < 0) {
		check(false, "basics: buffers and files");
		return 1;
	}
	/* reads into both kinds of buffer */
	r = avio_sync(fd, AVFS_READ, plain, 0, MiB, 0);
	check(r == MiB && pattern_bad(plain, 0, MiB, 0) < 0, "read 1 MiB into an ordinary buffer (%zd)",
	      r);
	r = avio_sync(fd, AVFS_READ, shm, 8 * MiB, 4 * MiB, 0);
	check(r == 4 * MiB && pattern_bad(shm, 8 * MiB, 4 * MiB, 0) < 0,
	      "read 4 MiB into an avfs_buf_alloc buffer (%zd)", r);
	r = avio_sync(rofd, AVFS_READ, plain, 60 * MiB, 16 * MiB, 0);
	check(r == 4 * MiB && pattern_bad(plain, 60 * MiB, 4 * MiB, 0) < 0,
	      "16 MiB read 4 MiB before EOF returns 4 MiB (%zd)", r);
	r = avio_sync(rofd, AVFS_READ, shm, DATA_SIZE, 4096, 0);
	check(r == 0, "read at EOF returns 0 (%zd)", r);

	/* writes from both kinds, read back both ways and through the mount */
	const struct {
		const char *what;
		uint8_t *from, *to;
		int wfd, rfd;
		uint64_t off;
		size_t len;
		uint8_t salt;
	} wr[] = {
		{ "write from shared memory, read back into an ordinary buffer", shm, plain, fd, fd,
		  16 * MiB, 2 * MiB, 0x5a },
		{ "write from an ordinary buffer, read back into shared memory", plain, shm, wofd,
		  rofd, 20 * MiB, 3 * MiB, 0xa5 },
	};
	for (i = 0; i < 2; i++) {
		ssize_t len = (ssize_t)wr[i].len;

		pattern_fill(wr[i].from, wr[i].off, wr[i].len, wr[i].salt);
		r = avio_sync(wr[i].wfd, AVFS_WRITE, wr[i].from, wr[i].off, wr[i].len, 0);
		memset(wr[i].to, 0, wr[i].len);
		check(r == len &&
		      avio_sync(wr[i].rfd, AVFS_READ, wr[i].to, wr[i].off, wr[i].len, 0) == len &&
		      pattern_bad(wr[i].to, wr[i].off, wr[i].len, wr[i].salt) < 0, "%s", wr[i].what);
		check(pread(rofd, chk, wr[i].len, (off_t)wr[i].off) == len &&
		      pattern_bad(chk, wr[i].off, wr[i].len, wr[i].salt) < 0,
		      "the same data through the FUSE mount (pread)");
	}
	pattern_fill(chk, 24 * MiB, MiB, 0x33);
	check(pwrite(fd, chk, MiB, 24 * MiB) == MiB &&
	      avio_sync(fd, AVFS_READ, shm, 24 * MiB, MiB, 0) == MiB &&
	      pattern_bad(shm, 24 * MiB, MiB, 0x33) < 0, "data written through the mount, read by libavio");
	{
		/* the mixer holds real-time requests until their latest start (SPEC §5.3) */
		int64_t deadline = avfs_clock_ns() + 1000000000ll;

		r = avio_sync(fd, AVFS_READ, plain, MiB, MiB, deadline);
		check(r == MiB && pattern_bad(plain, MiB, MiB, 0) < 0 &&
		      avfs_clock_ns() <= deadline,
		      "read with a deadline 1 s ahead, complete by then (%zd, %+.3f s)", r,
		      (double)(avfs_clock_ns() - deadline) / 1e9);
	}

	/* deadlines already past: -ETIME, nothing sent or written */
	pattern_fill(plain, 28 * MiB, MiB, 0x77);
	r = avio_sync(fd, AVFS_WRITE, plain, 28 * MiB, MiB, avfs_clock_ns() - 1000);
	check(r == -ETIME, "write with a deadline just past: -ETIME (%zd)", r);
	r = avio_sync(fd, AVFS_READ, plain, 0, MiB, 1);
	check(r == -ETIME, "read with deadline 1 ns: -ETIME (%zd)", r);
	check(pread(rofd, chk, MiB, 28 * MiB) == MiB && pattern_bad(chk, 28 * MiB, MiB, 0) < 0,
	      "the late write changed nothing");

	/* misaligned and impossible requests */
	check(avio_sync(fd, AVFS_READ, plain, 100, 4096, 0) == -EINVAL, "offset 100: -EINVAL");
	check(avio_sync(fd, AVFS_READ, plain, 0, 1000, 0) == -EINVAL, "1000 bytes: -EINVAL");
	check(avio_sync(fd, AVFS_READ, plain, 0, 0, 0) == -EINVAL, "0 bytes: -EINVAL");
	check(avio_sync(fd, AVFS_READ, plain, 0, 16 * MiB + 4096, 0) == -EINVAL,
	      "16 MiB + 4 KiB: -EINVAL");
	check(avio_sync(fd, AVFS_READ, plain, 0, 4096, -5) == -EINVAL, "negative deadline: -EINVAL");
	check(avio_sync(rofd, AVFS_WRITE, plain, 0, 4096, 0) == -EBADF,
	      "write on a read-only descriptor: -EBADF");
	check(avio_sync(wofd, AVFS_READ, plain, 0, 4096, 0) == -EBADF,
	      "read on a write-only descriptor: -EBADF");
	{
		char p[128];
		int other;

		snprintf(p, sizeof(p), "%s/not-avfs", work_dir);
		other = open(p, O_RDWR | O_CREAT, 0644);
		r = other >= 0 && !ftruncate(other, MiB) ?
		    avio_sync(other, AVFS_READ, plain, 0, 4096, 0) : -1;
		check(r == -EBADF, "a file of another file system: -EBADF (%zd)", r);
		close(other);
	}
	memset(&a[0], 0, sizeof(a[0]));
	check(avfs_asyncio_check(&a[0], AVFS_NOWAIT) == -EINVAL, "check of a never-started request: -EINVAL");
	check(avfs_asyncio_cancel(&a[0]) == -EINVAL, "cancel of a never-started request: -EINVAL");

	/* NOWAIT, poll, the completion descriptor, EBUSY */
	for (i = 0; i < 8; i++) {
		a[i] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)i * MiB,
					 .aio_buf = shm + (size_t)i * MiB, .aio_nbytes = MiB };
		list[i] = &a[i];
		err = avfs_asyncio_start(&a[i], AVFS_READ);
		if (err)
			break;
	}
	check(i == 8, "8 reads in flight");
	check(avfs_asyncio_start(&a[0], AVFS_READ) == -EBUSY || a[0].aio_ret != -EINPROGRESS,
	      "starting a request in flight again: -EBUSY");
	{
		int cfd = avfs_completion_fd();
		struct pollfd pfd = { .fd = cfd, .events = POLLIN };

		err = avfs_asyncio_check(&a[7], AVFS_NOWAIT);
		check(err == 0 || err == -EINPROGRESS, "check NOWAIT: 0 or -EINPROGRESS (%d)", err);
		check(cfd >= 0 && (err == 0 || poll(&pfd, 1, 5000) == 1),
		      "the completion descriptor polls readable");
	}
	{
		int64_t until = avfs_clock_ns() + 10000000000ll;
		int n = 0;

		while (avfs_clock_ns() < until && (n = avfs_asyncio_poll(list, 8, 1000)) >= 0 &&
		       n < 8)
			;
		check(n == 8, "avfs_asyncio_poll counts all 8 complete (%d)", n);
		for (i = 0; i < 8; i++)
			if (a[i].aio_ret != MiB || pattern_bad(shm + (size_t)i * MiB, (uint64_t)i * MiB, MiB,
							   0) >= 0)
				break;
		check(i == 8, "the 8 polled reads brought the right data");
		check(avfs_asyncio_poll(list, 8, 0) == 8, "poll of complete requests returns at once");
		check(avfs_asyncio_cancel(&a[3]) == AVFS_ALLDONE, "cancel of a complete request: AVFS_ALLDONE");
	}

	/* cancel: real-time requests with a distant deadline may wait in the mixer */
	{
		enum { N = 64 };
		static avfs_asyncio_t c[N];
		uint8_t *cb = NULL;
		int canceled = 0, notcanceled = 0, alldone = 0, bad = 0;
		int64_t deadline = avfs_clock_ns() + 20000000000ll;

		if (posix_memalign((void **)&cb, 4096, (size_t)N * 256 * 1024))
			return 1;
		for (i = 0; i < N; i++) {
			c[i] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)i * 256 * 1024,
						 .aio_buf = cb + (size_t)i * 256 * 1024,
						 .aio_nbytes = 256 * 1024,
						 .aio_deadline = i % 2 ? deadline : 0 };
			if (avfs_asyncio_start(&c[i], AVFS_READ))
				break;
		}
		check(i == N, "64 reads in flight for cancel");
		for (i = N - 1; i >= 0; i--) {
			int rc = avfs_asyncio_cancel(&c[i]);

			if (rc == AVFS_CANCELED)
				canceled++, bad += c[i].aio_ret != -ECANCELED;
			else if (rc == AVFS_NOTCANCELED)
				notcanceled++;
			else if (rc == AVFS_ALLDONE)
				alldone++;
			else
				bad++;
		}
		for (i = 0; i < N; i++) {
			if (avfs_asyncio_check(&c[i], AVFS_WAIT)) {
				bad++;
				continue;
			}
			if (c[i].aio_ret == -ECANCELED)
				continue;
			if (c[i].aio_ret != 256 * 1024 ||
			    pattern_bad(cb + (size_t)i * 256 * 1024, (uint64_t)i * 256 * 1024, 256 * 1024,
				     0) >= 0)
				bad++;
		}
		note("cancel: %d canceled, %d not canceled, %d already done", canceled, notcanceled,
		     alldone);
		check(!bad, "cancel outcomes consistent: -ECANCELED or the full, right data");
		check(canceled > 0, "at least one queued request canceled");
		free(cb);
	}
	/* put back the pattern where this scenario wrote: the others read the whole file */
	pattern_fill(chk, 16 * MiB, 9 * MiB, 0);
	check(pwrite(fd, chk, 9 * MiB, 16 * MiB) == 9 * MiB, "data file restored");
	/* the connection still works after all that */
	r = avio_sync(fd, AVFS_READ, plain, 32 * MiB, 4 * MiB, 0);
	check(r == 4 * MiB && pattern_bad(plain, 32 * MiB, 4 * MiB, 0) < 0, "a read after the cancels");
	free(plain);
	free(chk);
	return 0;
}

/*
 * Inline (ordinary-buffer) reads in flight whose replies the client reads late: legal use
 * of the API (nothing says a client must check at once), 8 x 16 MiB = 128 MiB of replies.
 */
static int late_reader(void *arg)
{
	enum { N = 8 };
	avfs_asyncio_t a[N];
	uint8_t *b = NULL;
	int fd = open_file("data", O_RDONLY), i, ok = 0;

	(void)arg;
	if (fd < 0 || posix_memalign((void **)&b, 4096, (size_t)N * 16 * MiB))
		return 1;
	for (i = 0; i < N; i++) {
		a[i] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)(i % 4) * 16 * MiB,
					 .aio_buf = b + (size_t)i * 16 * MiB, .aio_nbytes = 16 * MiB };
		if (avfs_asyncio_start(&a[i], AVFS_READ))
			break;
	}
	sleep(1);
	for (i = 0; i < N; i++) {
		if (avfs_asyncio_check(&a[i], AVFS_WAIT) == 0 && a[i].aio_ret == 16 * MiB &&
		    pattern_bad(b + (size_t)i * 16 * MiB, (uint64_t)(i % 4) * 16 * MiB, 16 * MiB, 0) < 0)
			ok++;
		else if (i == 0 || ok == i)
			note("request %d: aio_ret %zd", i, a[i].aio_ret);
	}
	check(ok == N, "8 inline 16 MiB reads checked 1 s late: %d of 8 complete with data", ok);
	free(b);
	return 0;
}

/* ---- scenario: read-ahead of a deadline reader (engine/rahead.c) ---- */

/* The daemon's read-ahead counters (stats' "read_ahead"): pieces served, or -1. */
static long long ahead_served(void)
{
	static char json[1 << 20];
	struct avfs_msg_hdr h;
	const char *p;
	int s = raw_connect();
	long long n = -1;

	memset(json, 0, sizeof(json));
	if (s >= 0 && raw_send(s, AVFS_MSG_ADMIN, 90, "stats", 5, NULL, 0) &&
	    raw_recv(s, &h, json, sizeof(json) - 1, 5000) &&
	    (p = strstr(json + sizeof(struct avfs_msg_admin_reply), "\"read_ahead\"")) &&
	    (p = strstr(p, "\"served\":")))
		n = strtoll(p + strlen("\"served\":"), NULL, 10);
	if (s >= 0)
		close(s);
	return n;
}

/* A libavio reader in order with deadlines of its own (4 requests of 512 KiB in flight, one
 * every 40 ms): every read comes back in time with the file's bytes — also where the file
 * changed through the mount ahead of it, after the daemon had read that part ahead — and the
 * daemon answered reads from what it read ahead. */
static int ahead_reader(void *arg)
{
	enum { N = 4, IO = 512 * 1024, READS = 48, CHANGED = 20 };
	const int64_t pace = 40000000;
	uint8_t *buf = avfs_buf_alloc((size_t)N * IO), *w = malloc(4 * IO);
	int fd = open_file("ahead", O_RDONLY), wfd = open_file("ahead", O_WRONLY), bad = 0, late = 0;
	long long served0 = ahead_served(), served;
	avfs_asyncio_t a[N];
	int64_t t0 = avfs_clock_ns() + 1000000000ll;

	(void)arg;
	if (!buf || !w || fd < 0 || wfd < 0 || served0 < 0) {
		check(false, "read-ahead: buffers, files, the daemon's counters");
		return 1;
	}
	for (int k = 0; k < READS + N; k++) {
		avfs_asyncio_t *x = &a[k % N];

		if (k >= N) {	/* read k - N is done: its bytes */
			int j = k - N;
			uint8_t salt = j >= CHANGED && j < CHANGED + 4 ? 0x42 : 0;

			if (avfs_asyncio_check(x, AVFS_WAIT) || x->aio_ret != IO)
				late++;
			else if (pattern_bad((uint8_t *)x->aio_buf, (uint64_t)j * IO, IO, salt) >= 0)
				bad++;
		}
		if (k == 16) {	/* reads 16-23 are read ahead (4 MiB): change 20-23 */
			pattern_fill(w, (uint64_t)CHANGED * IO, 4 * IO, 0x42);
			if (pwrite(wfd, w, 4 * IO, (off_t)CHANGED * IO) != 4 * IO || fsync(wfd))
				bad++;
		}
		if (k >= READS)
			continue;
		*x = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)k * IO,
				       .aio_buf = buf + (size_t)(k % N) * IO, .aio_nbytes = IO,
				       .aio_deadline = t0 + k * pace };
		if (avfs_asyncio_start(x, AVFS_READ))
			late++;
	}
	served = ahead_served();
	check(!late && !bad, "read-ahead: %d reads in order with deadlines, %d late, %d with wrong "
	      "bytes (4 changed through the mount after they were read ahead)", READS, late, bad);
	check(served - served0 >= READS / 2, "read-ahead: %lld of the %d reads answered from what "
	      "the daemon read ahead", served - served0, READS);
	close(fd);
	close(wfd);
	free(w);
	return 0;
}

/* ---- scenario: 32 clients, each with 8 requests in flight ---- */

static int one_of_many(void *arg)
{
	int id = (int)(intptr_t)arg, fd, dfd, i, round, bad = 0;
	enum { N = 8, IO = 256 * 1024 };
	avfs_asyncio_t a[N], *list[N];
	uint8_t *buf[N];
	char name[32];

	snprintf(name, sizeof(name), "client%02d", id);
	fd = open_file(name, O_RDWR);
	dfd = open_file("data", O_RDONLY);
	if (fd < 0 || dfd < 0)
		return 2;
	for (i = 0; i < N; i++) {
		/* half the buffers shared memory, half ordinary */
		buf[i] = i % 2 ? avfs_buf_alloc(IO) : aligned_alloc(4096, IO);
		if (!buf[i])
			return 3;
		list[i] = &a[i];
	}
	for (round = 0; round < 6 && !bad; round++) {
		int op = round % 3 == 0 ? AVFS_WRITE : AVFS_READ;
		bool own = round % 3 != 2;	/* rounds 2, 5 read the shared data file */

		for (i = 0; i < N; i++) {
			uint64_t off = ((uint64_t)round / 3 * N + (uint64_t)i) * IO;

			a[i] = (avfs_asyncio_t){ .aio_fildes = own ? fd : dfd,
						 .aio_offset = (off_t)(own ? off : off + (uint64_t)id * MiB),
						 .aio_buf = buf[i], .aio_nbytes = IO };
			if (op == AVFS_WRITE)
				pattern_fill(buf[i], off, IO, (uint8_t)id);
			else
				memset(buf[i], 0xee, IO);
			if (avfs_asyncio_start(&a[i], op))
				return 4;
		}
		for (int done = 0; done < N;) {
			int n = avfs_asyncio_poll(list, N, 20000);

			if (n <= 0)
				return 5;
			done = n;
		}
		for (i = 0; i < N; i++) {
			uint64_t off = ((uint64_t)round / 3 * N + (uint64_t)i) * IO;

			if (a[i].aio_ret != IO)
				bad = 6;
			else if (op == AVFS_READ &&
				 pattern_bad(buf[i], own ? off : off + (uint64_t)id * MiB, IO,
					  own ? (uint8_t)id : 0) >= 0)
				bad = 7;
		}
	}
	return bad;
}

static void test_many_clients(void)
{
	pid_t pids[NCLIENTS];
	int i, ok = 0, st;
	int64_t t0 = avfs_clock_ns();

	for (i = 0; i < NCLIENTS; i++) {
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "client%02d", i);
		fd = open_file(name, O_RDWR | O_CREAT | O_TRUNC);
		close(fd);
	}
	fflush(stdout);
	for (i = 0; i < NCLIENTS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			setenv("AVFS_SHM_SIZE", "4M", 1);
			_exit(one_of_many((void *)(intptr_t)i));
		}
	}
	for (i = 0; i < NCLIENTS; i++) {
		int64_t until = t0 + 60000000000ll;

		while (waitpid(pids[i], &st, WNOHANG) != pids[i]) {
			if (avfs_clock_ns() > until) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &st, 0);
				break;
			}
			usleep(5000);
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else
			note("client %d: %s %d", i, WIFSIGNALED(st) ? "signal" : "exit status",
			     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	check(ok == NCLIENTS, "%d client processes x 8 requests in flight: %d correct (%.2f s)",
	      NCLIENTS, ok, (double)(avfs_clock_ns() - t0) / 1e9);
	/* what they wrote, through the mount */
	ok = 0;
	for (i = 0; i < NCLIENTS; i++) {
		char name[32];
		uint8_t *b = malloc(4 * MiB);
		int fd;

		snprintf(name, sizeof(name), "client%02d", i);
		fd = open_file(name, O_RDONLY);
		if (fd >= 0 && b && pread(fd, b, 4 * MiB, 0) == 4 * MiB &&
		    pattern_bad(b, 0, 4 * MiB, (uint8_t)i) < 0)
			ok++;
		if (fd >= 0)
			close(fd);
		free(b);
	}
	check(ok == NCLIENTS, "each client's 4 MiB read back through the mount (%d)", ok);
}

/* ---- raw protocol ---- */

/* a normal libavio client, in its own process, reads 4 MiB right within 10 s */
static int normal_client(void *arg)
{
	uint8_t *b = avfs_buf_alloc(4 * MiB), *o = aligned_alloc(4096, 4 * MiB);
	int fd = open_file("data", O_RDONLY);
	ssize_t r1, r2;

	(void)arg;
	if (!b || !o || fd < 0)
		return 2;
	r1 = avio_sync(fd, AVFS_READ, b, 40 * MiB, 4 * MiB, 0);
	r2 = avio_sync(fd, AVFS_READ, o, 44 * MiB, 4 * MiB, avfs_clock_ns() + 800000000ll);
	if (r1 != 4 * MiB || r2 != 4 * MiB)
		return 3;
	if (pattern_bad(b, 40 * MiB, 4 * MiB, 0) >= 0 || pattern_bad(o, 44 * MiB, 4 * MiB, 0) >= 0)
		return 4;
	return 0;
}

/* a file of its own for reservation i (one reservation per file and process) */
static int res_file(const char *who, int i)
{
	char name[32];

	snprintf(name, sizeof(name), "res-%s-%d", who, i);
	return open_file(name, O_RDONLY | O_CREAT);
}

/* reservations through libavio: admit, use, statistics, release; refusals */
static int reservations(void *arg)
{
	struct avfs_service hd = { .rate = 2423750, .buffer = 16 * MiB, .direction = AVFS_READ };
	/* the service of the calls and derived deadlines below: an HD stream with a 4 MiB buffer.
	 * A read's derived deadline is (buffer - 1 MiB) / rate ahead, and the mixer serves a
	 * real-time read once its deadline is near (margin): 1.3 s each, not the 6.5 s of a 16 MiB
	 * buffer (4 reads: 4 s instead of 24 s). The fill below uses hd. */
	struct avfs_service svc = { .rate = hd.rate, .buffer = 4 * MiB, .direction = AVFS_READ };
	struct avfs_service bad = svc;
	struct avfs_stream_stats st;
	uint8_t *b = avfs_buf_alloc(MiB);
	int fd = open_file("data", O_RDONLY), fds[64], n = 0, err, ret = 0;

	(void)arg;
	if (!b || fd < 0)
		return 2;
	if (avfs_stream_stats(fd, &st) != -ENOENT)
		ret = ret ? ret : 3;	/* no service yet */
	if (avfs_reserve(fd, &svc))
		return 4;
	if (avfs_reserve(fd, &svc) != -EEXIST)
		ret = ret ? ret : 5;
	svc.direction = AVFS_WRITE;
	if (avfs_reserve(fd, &svc) != -EBADF)	/* read-only descriptor */
		ret = ret ? ret : 6;
	svc.direction = AVFS_READ;
	bad.buffer = 4096;	/* not larger than one request */
	bad.rate = 0;
	if (avfs_reserve(fd, &bad) != -EINVAL || avfs_reserve(fd, NULL) != -EINVAL)
		ret = ret ? ret : 7;
	/* best-effort requests of a reserved file get the service's deadline */
	for (int i = 0; i < 4; i++)
		if (avio_sync(fd, AVFS_READ, b, (uint64_t)i * MiB, MiB, 0) != MiB ||
		    pattern_bad(b, (uint64_t)i * MiB, MiB, 0) >= 0)
			ret = ret ? ret : 8;
	if (avfs_stream_stats(fd, &st) || st.requests != 4 || st.deadline_misses ||
	    st.bytes != 4 * MiB || st.margin_min_ns <= 0)
		ret = ret ? ret : 9;
	note("reservations: 4 reads with derived deadlines, %llu RT, %llu misses, margin min "
	     "%.1f ms", (unsigned long long)st.requests, (unsigned long long)st.deadline_misses,
	     (double)st.margin_min_ns / 1e6);
	/* the fill's own first stream in its place */
	if (avfs_release(fd) || avfs_reserve(fd, &hd))
		ret = ret ? ret : 18;
	/* the disk fills up: -EBUSY, never an over-admission */
	for (n = 0; n < 64; n++) {
		fds[n] = res_file("a", n);
		err = fds[n] < 0 ? -errno : avfs_reserve(fds[n], &hd);
		if (err) {
			if (err != -EBUSY)
				ret = ret ? ret : 10;
			break;
		}
	}
	note("reservations: %d more HD streams (16 MiB buffers) admitted, then -EBUSY", n);
	if (n == 64 || n < 3)
		ret = ret ? ret : 11;
	if (avfs_release(fd) || avfs_release(fd) != -ENOENT)
		ret = ret ? ret : 12;
	/* a request size reaches admission (avfs_reserve_io): one it refuses (beyond 64 MiB) comes
	 * back -EINVAL from the daemon; the client's own check refuses one that is no multiple
	 * of 4 KiB or not smaller than the buffer; a good one is admitted */
	{
		struct avfs_service big = { .rate = 1000000, .buffer = 256 * MiB,
					    .direction = AVFS_READ };

		if (avfs_reserve_io(fd, &big, 128u << 20) != -EINVAL ||
		    avfs_reserve_io(fd, &hd, 4097) != -EINVAL ||
		    avfs_reserve_io(fd, &hd, 16 * MiB) != -EINVAL ||
		    avfs_reserve_io(fd, &hd, 256 << 10) || avfs_release(fd))
			ret = ret ? ret : 19;
	}
	/* the freed time is admitted again: one more stream fits where the last was refused */
	if (avfs_reserve(fds[n], &hd))
		ret = ret ? ret : 13;
	/* a greedy reader above its rate (1 MB/s, a 2 MiB bucket): 12 reads of 1 MiB at once.
	 * Two are real-time, the rest wait for tokens or idle time (parked); every one
	 * completes with the right data, and no more are real-time than the rate allows */
	{
		struct avfs_service slow = { .rate = 1000000, .buffer = 2 * MiB,
					     .direction = AVFS_READ };
		avfs_asyncio_t a[12], *list[12];
		uint8_t *g = avfs_buf_alloc(12 * MiB);
		int64_t t0 = avfs_clock_ns();
		double secs;
		int good = 0;

		/* room for it: its 1.57 s period is shorter than the HD streams' 6.7 s, so under
		 * the round model it shortens every stream's rounds; with them gone it fits */
		for (int i = 0; i <= n; i++)
			avfs_release(fds[i]);
		if (!g || avfs_reserve(fd, &slow))
			return ret ? ret : 14;
		for (int i = 0; i < 12; i++) {
			a[i] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)i * MiB,
						 .aio_buf = g + (size_t)i * MiB, .aio_nbytes = MiB };
			list[i] = &a[i];
			if (avfs_asyncio_start(&a[i], AVFS_READ))
				return ret ? ret : 15;
		}
		while (avfs_asyncio_poll(list, 12, 10000) > 0 && good < 12) {
			good = 0;
			for (int i = 0; i < 12; i++)
				good += avfs_asyncio_check(&a[i], AVFS_NOWAIT) == 0 &&
					a[i].aio_ret == MiB &&
					pattern_bad(g + (size_t)i * MiB, (uint64_t)i * MiB, MiB, 0) < 0;
		}
		secs = (double)(avfs_clock_ns() - t0) / 1e9;
		if (good != 12 || avfs_stream_stats(fd, &st))
			return ret ? ret : 16;
		note("greedy reader at 1 MB/s: 12 x 1 MiB done in %.2f s, %llu of them real-time",
		     secs, (unsigned long long)st.requests);
		if (st.requests < 2 || (double)st.requests > 2 + secs * 1e6 / MiB + 1)
			ret = ret ? ret : 17;
	}
	return ret;
}

/* HD reservations until the disk is full, on files res-WHO-*: their count in shared->aux;
 * then, if arg is non-NULL, hold them until killed */
static int reserve_all(void *arg)
{
	struct avfs_service hd = { .rate = 2423750, .buffer = 16 * MiB, .direction = AVFS_READ };
	const char *who = arg ? "b" : "c";
	int n = 0;

	for (int fd; n < 64 && (fd = res_file(who, n)) >= 0 && !avfs_reserve(fd, &hd);)
		n++;
	shared->aux = n;
	if (arg)
		pause();
	return 0;
}

/* issue 16: a detached reservation on a directory through libavio: admitted, refused when
 * malformed or beyond the daemon's buffer memory, released by id (once) */
static int detached(void *arg)
{
	struct avfs_service svc = { .rate = 2000000, .buffer = 8 * MiB,
				    .direction = AVFS_WRITE };
	char p[256];
	int dirfd, fd, ret = 0;
	int64_t id, bad;

	(void)arg;
	path_of(p, sizeof(p), "cam");
	if (mkdir(p, 0755) && errno != EEXIST)
		return 2;
	dirfd = open(p, O_RDONLY | O_DIRECTORY);
	if (dirfd < 0)
		return 3;
	id = avfs_reserve_detached(dirfd, &svc, -1);
	if (id <= 0) {
		note("avfs_reserve_detached: %lld", (long long)id);
		return 4;
	}
	fd = open_file("cam/seg0", O_WRONLY | O_CREAT | O_TRUNC);
	if (fd < 0 || pwrite(fd, p, sizeof(p), 0) != (ssize_t)sizeof(p) || fsync(fd))
		ret = ret ? ret : 5;	/* a covered writer, as usual */
	if (fd >= 0)
		close(fd);
	if (avfs_reserve_detached(dirfd, &svc, -2) != -EINVAL)
		ret = ret ? ret : 6;
	svc.buffer = 1ull << 40;	/* beyond the daemon's memory for buffers */
	if ((bad = avfs_reserve_detached(dirfd, &svc, 1000)) != -ENOBUFS) {
		note("a 1 TiB buffer: %lld", (long long)bad);
		ret = ret ? ret : 7;
	}
	if (avfs_release_detached(dirfd, (uint64_t)id) ||
	    avfs_release_detached(dirfd, (uint64_t)id) != -ENOENT)
		ret = ret ? ret : 8;
	close(dirfd);
	return ret;
}

static void test_reservations(void)
{
	pid_t pid;
	int held, again;

	check(in_child("reservations", 60, reservations, NULL),
	      "reservations: reserve, EEXIST, EBADF, EINVAL, derived deadlines, stats, EBUSY, release");
	check(in_child("detached", 30, detached, NULL),
	      "detached on a directory: admitted, EINVAL, ENOBUFS, released by id once");
	/* a process holding reservations is killed: they are freed (its whole set fits again) */
	usleep(200000);	/* the daemon frees the last child's reservations as it leaves */
	shared->aux = 0;
	pid = fork();
	if (pid == 0)
		_exit(reserve_all("hold"));
	for (int i = 0; i < 500 && !shared->aux; i++)
		usleep(10000);
	held = shared->aux;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	usleep(200000);
	shared->aux = 0;
	again = in_child("after the kill", 30, reserve_all, NULL) ? shared->aux : -1;
	check(held > 0 && again == held,
	      "a killed client's %d reservations are freed (%d admitted again)", held, again);
}

/* a libavio process forks: the child opens its own connection, both go on reading */
static int fork_reader(void *arg)
{
	/* b is the parent's after the fork, kid the child's: the region is shared memory, so
	 * the two must not read into the same buffer at once */
	uint8_t *b = avfs_buf_alloc(MiB), *kid = avfs_buf_alloc(MiB);
	int fd = open_file("data", O_RDONLY), st;
	ssize_t r;
	pid_t pid;

	(void)arg;
	if (!b || !kid || fd < 0 || avio_sync(fd, AVFS_READ, b, 0, MiB, 0) != MiB)
		return 2;
	pid = fork();
	if (pid == 0) {
		uint8_t *nb = avfs_buf_alloc(MiB);

		/* an inherited buffer (now a copy) and one of the child's own region */
		if (!nb || avio_sync(fd, AVFS_READ, kid, 2 * MiB, MiB, 0) != MiB ||
		    avio_sync(fd, AVFS_READ, nb, 3 * MiB, MiB, 0) != MiB)
			_exit(3);
		_exit(pattern_bad(kid, 2 * MiB, MiB, 0) >= 0 ||
		      pattern_bad(nb, 3 * MiB, MiB, 0) >= 0 ? 4 : 0);
	}
	if (pid < 0)
		return 5;
	r = avio_sync(fd, AVFS_READ, b, MiB, MiB, 0);
	if (r != MiB || pattern_bad(b, MiB, MiB, 0) >= 0) {
		note("fork: the parent's read after the fork: %zd", r);
		return 5;
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 6;
	return avio_sync(fd, AVFS_READ, b, 4 * MiB, MiB, 0) == MiB &&
	       pattern_bad(b, 4 * MiB, MiB, 0) < 0 ? 0 : 7;
}

static void after_bad_client(const char *what)
{
	check(daemon_alive(), "%s: avfsd still alive", what);
	check(in_child(what, 10, normal_client, NULL), "%s: a normal libavio client still works",
	      what);
}

static void test_bad_clients(void)
{
	struct avfs_msg_hdr h;
	uint8_t buf[256];
	int32_t ores = 0;
	int s, handle;

	/* (a) a truncated message, then close */
	s = raw_connect();
	{
		struct avfs_msg_hdr th = { .magic = AVFS_PROTO_MAGIC, .type = AVFS_MSG_IO, .len = 48 };

		check(s >= 0 && send(s, &th, 10, MSG_NOSIGNAL) == 10, "(a) sent 10 bytes of a header");
	}
	close(s);
	usleep(100000);
	after_bad_client("(a) truncated message");

	/* (b) garbage bytes: the daemon drops the connection */
	s = raw_connect();
	{
		uint8_t junk[4096];

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(i * 37 + 11);
		check(s >= 0 && send(s, junk, sizeof(junk), MSG_NOSIGNAL) > 0, "(b) sent 4 KiB of garbage");
		check(raw_closed(s, 5000), "(b) the daemon closed the garbage connection");
	}
	close(s);
	after_bad_client("(b) garbage");

	/* (b2) a header announcing 4 GiB of payload */
	s = raw_connect();
	{
		struct avfs_msg_hdr bh = { .magic = AVFS_PROTO_MAGIC, .type = AVFS_MSG_IO,
					   .len = 0xffffffffu };

		check(s >= 0 && send(s, &bh, sizeof(bh), MSG_NOSIGNAL) == sizeof(bh) &&
		      raw_closed(s, 5000), "(b2) a 4 GiB payload length: connection closed");
	}
	close(s);
	after_bad_client("(b2) huge length");

	/* (c) HELLO, then many requests and never a reply read; stays connected meanwhile */
	s = raw_connect();
	handle = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ, &ores) : -1;
	check(handle >= 0, "(c) HELLO and OPEN (%d)", ores);
	if (handle >= 0) {
		int sent = 0;
		int64_t until = avfs_clock_ns() + 5000000000ll;

		fcntl(s, F_SETFL, O_NONBLOCK);
		while (sent < 4000 && avfs_clock_ns() < until) {
			struct avfs_msg_io io = { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
						  .where = AVFS_IO_INLINE,
						  .offset = (uint64_t)(sent % 48) * MiB,
						  .nbytes = MiB };

			if (raw_send(s, AVFS_MSG_IO, 100 + (uint64_t)sent, &io, sizeof(io), NULL, 0))
				sent++;
			else
				usleep(1000);
		}
		note("(c) sent %d 1 MiB inline reads without reading a reply", sent);
		/* the other clients go on while this one sits on its socket */
		after_bad_client("(c) client that never reads");
		/* the daemon gives a client 3 s without reading; reading now would be progress,
		 * so look for the hang-up without taking a byte */
		check(hung_up(s, 10000), "(c) the daemon dropped the client that never reads");
	}
	close(s);
	after_bad_client("(c) after the drop");

	/* (d) disconnect in the middle of requests */
	s = raw_connect();
	handle = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ | AVFS_OPEN_WRITE, &ores) : -1;
	check(handle >= 0, "(d) HELLO and OPEN");
	if (handle >= 0) {
		bool ok = true;

		for (int i = 0; i < 16 && ok; i++) {
			struct avfs_msg_io io = { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
						  .where = AVFS_IO_INLINE,
						  .offset = (uint64_t)(i % 4) * 16 * MiB,
						  .nbytes = 16 * MiB };

			ok = raw_send(s, AVFS_MSG_IO, 10 + (uint64_t)i, &io, sizeof(io), NULL, 0);
		}
		check(ok, "(d) 16 reads of 16 MiB sent");
	}
	close(s);
	after_bad_client("(d) disconnect mid-request");
	/* (d2) a write whose payload is cut off by the disconnect */
	s = raw_connect();
	handle = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ | AVFS_OPEN_WRITE, &ores) : -1;
	if (handle >= 0) {
		struct avfs_msg_io io = { .handle = (uint32_t)handle, .op = AVFS_IO_WRITE,
					  .where = AVFS_IO_INLINE, .offset = 48 * MiB, .nbytes = MiB };
		struct avfs_msg_hdr wh = { .magic = AVFS_PROTO_MAGIC, .type = AVFS_MSG_IO,
					   .len = sizeof(io) + MiB, .tag = 9 };
		static uint8_t half[MiB / 2];

		memset(half, 0xcc, sizeof(half));
		check(send(s, &wh, sizeof(wh), MSG_NOSIGNAL) == sizeof(wh) &&
		      send(s, &io, sizeof(io), MSG_NOSIGNAL) == sizeof(io) &&
		      send(s, half, sizeof(half), MSG_NOSIGNAL) > 0, "(d2) half a write's payload sent");
	}
	close(s);
	after_bad_client("(d2) write cut off");
	{
		uint8_t *b = malloc(MiB);
		int fd = open_file("data", O_RDONLY);

		check(fd >= 0 && b && pread(fd, b, MiB, 48 * MiB) == MiB && pattern_bad(b, 48 * MiB, MiB, 0) < 0,
		      "(d2) the cut-off write changed nothing");
		close(fd);
		free(b);
	}

	/* (e) requests the daemon refuses, one by one, on a connection that stays up */
	s = raw_connect();
	handle = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ | AVFS_OPEN_WRITE, &ores) : -1;
	check(handle >= 0, "(e) HELLO and OPEN");
	if (handle >= 0) {
		static uint8_t data[MiB];
		struct { const char *what; struct avfs_msg_io io; int64_t want; } cases[] = {
			{ "deadline in the past", { .handle = (uint32_t)handle, .op = AVFS_IO_WRITE,
			  .offset = 52 * MiB, .nbytes = MiB, .deadline = 1 }, -ETIME },
			{ "misaligned offset", { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
			  .offset = 512, .nbytes = 4096 }, -EINVAL },
			{ "misaligned size", { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
			  .offset = 0, .nbytes = 4000 }, -EINVAL },
			{ "32 MiB", { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
			  .offset = 0, .nbytes = 32 * MiB }, -EINVAL },
			{ "offset 2^62", { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
			  .offset = 1ull << 62, .nbytes = 4096 }, -EINVAL },
			{ "unknown handle", { .handle = 999, .op = AVFS_IO_READ,
			  .offset = 0, .nbytes = 4096 }, -EBADF },
			{ "bad op", { .handle = (uint32_t)handle, .op = 7,
			  .offset = 0, .nbytes = 4096 }, -EBADF },
			{ "shared memory never given", { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
			  .where = AVFS_IO_SHM, .offset = 0, .nbytes = 4096 }, -EINVAL },
		};

		memset(data, 0x99, sizeof(data));
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			bool w = cases[i].io.op == AVFS_IO_WRITE;
			int64_t res = 1;

			if (raw_send(s, AVFS_MSG_IO, 50 + i, &cases[i].io, sizeof(cases[i].io),
				     w ? data : NULL, w ? MiB : 0) &&
			    raw_recv(s, &h, buf, sizeof(buf), 5000) && h.tag == 50 + i)
				memcpy(&res, buf, sizeof(res));
			check(res == cases[i].want, "(e) %s: %lld, want %lld", cases[i].what,
			      (long long)res, (long long)cases[i].want);
		}
		{
			uint8_t *b = malloc(MiB);
			int fd = open_file("data", O_RDONLY);

			check(fd >= 0 && b && pread(fd, b, MiB, 52 * MiB) == MiB &&
			      pattern_bad(b, 52 * MiB, MiB, 0) < 0, "(e) the late write changed nothing");
			close(fd);
			free(b);
		}
		{
			struct avfs_msg_shm sm = { .size = 1 << 20 };
			int32_t res = 1;

			if (raw_send(s, AVFS_MSG_SHM, 77, &sm, sizeof(sm), NULL, 0) &&
			    raw_recv(s, &h, buf, sizeof(buf), 5000))
				memcpy(&res, buf, sizeof(res));
			check(res == -EINVAL, "(e) SHM without a descriptor: -EINVAL (%d)", res);
		}
		{
			struct avfs_msg_io io = { .handle = (uint32_t)handle, .op = AVFS_IO_READ,
						  .offset = 4 * MiB, .nbytes = 8192 };
			static uint8_t rb[8192 + 64];
			int64_t res = 0;

			if (raw_send(s, AVFS_MSG_IO, 88, &io, sizeof(io), NULL, 0) &&
			    raw_recv(s, &h, rb, sizeof(rb), 5000) && h.tag == 88)
				memcpy(&res, rb, 8);
			check(res == 8192 && pattern_bad(rb + 8, 4 * MiB, 8192, 0) < 0,
			      "(e) the connection still serves a good read (%lld)", (long long)res);
		}
	}
	close(s);
	after_bad_client("(e) refused requests");

	/* (f) a wrong protocol version */
	s = raw_connect();
	{
		struct avfs_msg_hello hello = { .version = 99 };
		int32_t res = 0;

		if (s >= 0 && raw_send(s, AVFS_MSG_HELLO, 1, &hello, sizeof(hello), NULL, 0) &&
		    raw_recv(s, &h, buf, sizeof(buf), 5000))
			memcpy(&res, buf, sizeof(res));
		check(res < 0, "(f) HELLO version 99 refused (%d)", res);
	}
	close(s);

	/* (g) 300 idle connections at once */
	{
		int fds[300], n = 0;

		for (n = 0; n < 300; n++)
			if ((fds[n] = raw_connect()) < 0)
				break;
		check(n == 300, "(g) 300 idle connections accepted (%d)", n);
		after_bad_client("(g) 300 idle connections");
		while (n--)
			close(fds[n]);
	}
	usleep(100000);
	after_bad_client("(g) after closing them");
}

/* ---- access control: a client reaches a file only as its uid could ---- */

static int as_nobody(void *arg)
{
	int32_t res = 0;
	int s, fd, h;
	uint8_t *b;
	ssize_t r;

	(void)arg;
	if (!become(NOBODY, 0))
		return 2;
	s = raw_connect();
	h = s >= 0 ? raw_hello_open(s, "secret", AVFS_OPEN_READ, &res) : -1;
	check(h < 0 && res == -EACCES, "uid %d: OPEN_PATH of a 0600 root file: -EACCES (%d)",
	      NOBODY, res);
	close(s);
	s = raw_connect();
	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_WRITE, &res) : -1;
	check(h < 0 && res == -EACCES, "uid %d: OPEN_PATH for writing of a 0644 root file: "
	      "-EACCES (%d)", NOBODY, res);
	close(s);
	s = raw_connect();
	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ, &res) : -1;
	check(h >= 0, "uid %d: OPEN_PATH for reading of a 0644 root file (%d)", NOBODY, res);
	close(s);
	check(open_file("secret", O_RDONLY) < 0 && errno == EACCES,
	      "uid %d: open(2) of the 0600 file through the mount: EACCES", NOBODY);
	fd = open_file("data", O_RDONLY);
	b = avfs_buf_alloc(MiB);
	r = fd >= 0 && b ? avio_sync(fd, AVFS_READ, b, 0, MiB, 0) : -1;
	check(r == MiB && pattern_bad(b, 0, MiB, 0) < 0,
	      "uid %d: libavio read of a 0644 file (%zd)", NOBODY, r);
	return 0;
}

/* ---- where a file lies (avfs_placement, PLACE) ---- */

/* The data file's extents, read by an ordinary user; and the hostile cases: a handle not open
 * for reading, an unknown one, a descriptor of a file its holder may not read (passed on by
 * root) */
static int placement(void *arg)
{
	int secret = open_file("secret", O_RDONLY), wo = open_file("data", O_WRONLY), fd, s, h, n;
	struct avfs_msg_place m = { 0 };
	struct avfs_msg_place_reply rep;
	struct avfs_extent e[8];
	uint64_t next = 0, sum = 0;
	bool ordered = true;
	int32_t res = 0;

	(void)arg;
	check(avfs_placement(wo, 0, e, 8) == -EBADF, "placement of a write-only descriptor: -EBADF");
	s = raw_connect();
	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_WRITE, &res) : -1;
	m.handle = (uint32_t)h;
	check(h >= 0 && raw_call(s, AVFS_MSG_PLACE, 7, &m, sizeof(m), NULL, 0, &rep, sizeof(rep),
				 2000) && rep.res == -EBADF && !rep.count,
	      "PLACE on a handle open for writing only: -EBADF");
	m.handle = 999;
	check(raw_call(s, AVFS_MSG_PLACE, 8, &m, sizeof(m), NULL, 0, &rep, sizeof(rep), 2000) &&
	      rep.res == -EBADF, "PLACE on an unknown handle: -EBADF");
	close(s);
	if (!become(NOBODY, 0))
		return 2;
	fd = open_file("data", O_RDONLY);
	while ((n = avfs_placement(fd, next, e, 8)) > 0) {
		for (int i = 0; i < n; i++) {
			ordered &= e[i].file_off >= next && e[i].dev_off > 0 &&
				   !(e[i].dev_off % 4096) && e[i].len >= MiB;
			sum += e[i].len;
			next = e[i].file_off + e[i].len;
		}
	}
	check(!n && ordered && sum == DATA_SIZE,
	      "uid %d: the extents of a 64 MiB file, in file order, cover it (%llu bytes, %d)",
	      NOBODY, (unsigned long long)sum, n);
	n = avfs_placement(secret, 0, e, 8);
	check(secret >= 0 && n == -EACCES, "uid %d: placement of a 0600 root file through a "
	      "descriptor root passed on: -EACCES (%d)", NOBODY, n);
	return 0;
}

/* ---- the daemon killed while requests are in flight ---- */

static int killed_mid_request(void *arg)
{
	enum { N = 24 };
	int *pipefd = arg, fd = open_file("data", O_RDONLY), i, notconn = 0, bad = 0;
	avfs_asyncio_t a[N];
	uint8_t *b = NULL, *o = NULL;
	int64_t done;
	char c = 1;

	if (fd < 0 || !(b = avfs_buf_alloc((size_t)N / 2 * 16 * MiB)) ||
	    posix_memalign((void **)&o, 4096, (size_t)N / 2 * 16 * MiB))
		return 2;
	for (i = 0; i < N; i++) {
		uint8_t *buf = i % 2 ? o + (size_t)i / 2 * 16 * MiB : b + (size_t)i / 2 * 16 * MiB;

		a[i] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)(i % 4) * 16 * MiB,
					 .aio_buf = buf, .aio_nbytes = 16 * MiB,
					 .aio_deadline = i % 3 == 0 ? avfs_clock_ns() + 30000000000ll : 0 };
		if (avfs_asyncio_start(&a[i], AVFS_READ))
			return 3;
	}
	if (write(pipefd[1], &c, 1) != 1)
		return 4;
	for (i = 0; i < N; i++) {
		if (avfs_asyncio_check(&a[i], AVFS_WAIT))
			bad++;
		else if (a[i].aio_ret == -ENOTCONN)
			notconn++;
		else if (a[i].aio_ret != 16 * MiB)
			bad++;
	}
	done = avfs_clock_ns();
	note("killed mid-request: %d of %d requests completed with -ENOTCONN, %d other errors, "
	     "all complete %.3f s after the kill", notconn, N, bad,
	     (double)(done - shared->kill_ns) / 1e9);
	check(!bad, "every request completed: its data or -ENOTCONN");
	check(notconn > 0, "requests in flight at the kill completed with -ENOTCONN");
	check(done - shared->kill_ns < 2000000000ll, "all complete within 2 s of the kill");
	{
		int64_t t0 = avfs_clock_ns();
		ssize_t r = avio_sync(fd, AVFS_READ, b, 0, MiB, 0);

		/* the descriptor is on the dead mount too: fstat() fails, hence -EBADF */
		check((r == -ENOTCONN || r == -EBADF) && avfs_clock_ns() - t0 < 1000000000ll,
		      "a later start fails at once: -ENOTCONN or -EBADF (%zd)", r);
	}
	check(avfs_completion_fd() == -ENOTCONN, "avfs_completion_fd() is -ENOTCONN");
	return 0;
}

static void test_kill_mid_request(void)
{
	int pipefd[2];
	pid_t pid;
	char c;
	int st;
	const char *const um[] = { "fusermount3", "-u", "-z", mnt, NULL };

	if (pipe(pipefd))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setenv("AVFS_SHM_SIZE", "256M", 1);
		_exit(killed_mid_request(pipefd));
	}
	close(pipefd[1]);
	if (read(pipefd[0], &c, 1) != 1) {
		check(false, "the client started its requests");
	} else {
		shared->kill_ns = avfs_clock_ns();
		kill(daemon_pid, SIGKILL);
	}
	for (int i = 0; i < 3000 && waitpid(pid, &st, WNOHANG) != pid; i++)
		usleep(10000);
	if (kill(pid, 0) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		check(false, "the client returned after the kill");
	}
	daemon_wait(10);
	run(10, um);
	close(pipefd[0]);
}

int main(void)
{
	uint8_t *b;
	int fd, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = harness_setup("avio");
	if (rc)
		return rc;
	daemon_allow_other = true;	/* the access-control checks run as another uid */
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return 1;
	unsetenv("AVFS_SOCKET");	/* found through the mount's extended attribute */
	chmod(work_dir, 0755);	/* uid 1000 reaches the mount and the socket */

	check(harness_mkfs(), "mkfs.avfs --size 2G --block-size 1M");
	if (!daemon_start()) {
		check(false, "avfsd mounts the image");
		goto out;
	}
	/* the data file every scenario reads, written through the mount */
	b = malloc(DATA_SIZE);
	fd = open_file("data", O_RDWR | O_CREAT | O_TRUNC);
	pattern_fill(b, 0, DATA_SIZE, 0);
	check(fd >= 0 && pwrite(fd, b, DATA_SIZE, 0) == DATA_SIZE && !fsync(fd),
	      "64 MiB data file written through the mount");
	close(fd);
	free(b);
	fd = open_file("secret", O_WRONLY | O_CREAT | O_TRUNC);
	check(fd >= 0 && write(fd, "secret\n", 7) == 7 && !fchmod(fd, 0600), "a 0600 root file");
	close(fd);

	check(in_child("basics", 60, basics, NULL), "basics: the client process finished");
	check(in_child("late reader", 15, late_reader, NULL), "late reader: the process finished");
	fd = open_file("ahead", O_WRONLY | O_CREAT | O_TRUNC);
	b = malloc(24 * MiB);
	pattern_fill(b, 0, 24 * MiB, 0);
	check(fd >= 0 && b && pwrite(fd, b, 24 * MiB, 0) == 24 * MiB && !fsync(fd),
	      "a 24 MiB file for the read-ahead reader");
	close(fd);
	free(b);
	check(in_child("read-ahead", 30, ahead_reader, NULL), "read-ahead: the process finished");
	test_reservations();
	check(in_child("fork", 30, fork_reader, NULL),
	      "fork: parent and child each read through their own connection");
	test_many_clients();
	check(in_child("access control", 30, as_nobody, NULL), "access control: the process finished");
	check(in_child("placement", 30, placement, NULL), "placement: the process finished");
	test_bad_clients();
	check(daemon_stop(), "clean unmount after all those clients (avfsd exits 0)");
	check(fsck_clean(), "fsck.avfs -n clean");
	if (daemon_start())
		test_kill_mid_request();
	else
		check(false, "remount for the kill test");
out:
	return harness_finish();
}
