/*
 * test_daemon_hostile.c — hostile clients on avfsd's socket (issue 19, "Clients on the
 * socket"), each finding a scenario against a real avfsd and FUSE mount, as root and as other
 * uids: a truncated memfd, a descriptor on the daemon's own mount and a regular file as the
 * shared buffer, the buffer replaced under queued requests, a file in a 0700 directory,
 * connection floods, half-sent messages, detached reservations and what avfs-admin shows of
 * them, a deadline at INT64_MAX. With the argument "storm": Done-when 4, a storm of clients
 * (malformed ones and one that never reads among them) beside a reserved stream, which must
 * miss nothing, while the daemon's memory stays bounded and its descriptors come back.
 * env: AVFSD, MKFS, FSCK; STORM_SECONDS, STORM_CLIENTS, STORM_CONCURRENT, STORM_NEVER_KIB (storm:
 * 5, 100, 20, 64).
 * Arguments: none (every scenario), "only NAME" (one, see scenarios[]), "storm".
 * Exit 77 without root or FUSE.
 */
#include <avio.h>
#include "clock.h"
#include "daemon_harness.h"
#include "pattern.h"
#include "rawclient.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MiB (1u << 20)
#define DATA_SIZE (64u * MiB)
#define NOBODY 1000		/* the uid of the other user */
#define GROUP 4242		/* a group the other user may be given */
#define SERVER_MEM 64		/* MiB: the daemon's memory bound in these tests (its config) */

static struct {
	volatile int count, go;
	uint64_t secret_dev, secret_ino, grp_dev, grp_ino, aclno_dev, aclno_ino;
	/* storm */
	volatile uint64_t normal_ok, normal_refused, normal_failed, bad_closed, bad_open;
	volatile uint64_t stream_requests, stream_misses, stream_failed, stream_bytes;
	volatile int never_dropped;
	volatile int64_t failed_res;	/* the last failed request's result */
} *shared;

/* ---- helpers ---- */

static int open_file(const char *name, int flags)
{
	char p[256];

	path_of(p, sizeof(p), name);
	return open(p, flags, 0644);
}

/* a memfd of size bytes with these seals (0: none, and no sealing allowed) */
static int memfd(size_t size, int seals)
{
	int fd = memfd_create("hostile", MFD_CLOEXEC | (seals ? MFD_ALLOW_SEALING : 0));

	if (fd < 0 || ftruncate(fd, (off_t)size) || (seals && fcntl(fd, F_ADD_SEALS, seals))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* SHM of fd on s: the reply's res (1 when there was none) */
static int32_t send_shm(int s, int fd, size_t size, uint64_t tag)
{
	struct avfs_msg_shm m = { .size = size };
	struct avfs_msg_hdr h;
	int32_t buf[4] = { 1 };

	if (!raw_send_fd(s, AVFS_MSG_SHM, tag, &m, sizeof(m), fd) ||
	    !raw_recv(s, &h, buf, sizeof(buf), 5000))
		return 1;
	return buf[0];
}

/* one IO request and its reply's res (INT64_MIN: no reply within ms) */
static int64_t raw_io(int s, const struct avfs_msg_io *io, uint64_t tag, int ms)
{
	uint8_t buf[64];
	int64_t res = INT64_MIN;

	if (raw_call(s, AVFS_MSG_IO, tag, io, sizeof(*io), NULL, 0, buf, sizeof(buf), ms))
		memcpy(&res, buf, sizeof(res));
	return res;
}

static long proc_kb(const char *field)
{
	char p[64], line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", daemon_pid);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n))
			v = atol(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

/* the daemon's CPU time so far, user + system */
static double proc_cpu_s(void)
{
	char p[64], b[1024], *q;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", daemon_pid);
	f = fopen(p, "r");
	if (!f)
		return -1;
	if (fgets(b, sizeof(b), f) && (q = strrchr(b, ')')))
		sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
	fclose(f);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int daemon_fds(void)
{
	char p[64];
	DIR *d;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd", daemon_pid);
	d = opendir(p);
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2;
}

/* the daemon's descriptors back to base within 5 s */
static bool fds_back(int base)
{
	for (int i = 0; i < 50; i++) {
		if (daemon_fds() <= base)
			return true;
		usleep(100000);
	}
	note("the daemon has %d descriptors, %d before", daemon_fds(), base);
	return false;
}

/* a new connection is answered (the daemon serves) */
static bool serves(void)
{
	int s = raw_connect();
	bool ok = s >= 0 && raw_hello(s);

	if (s >= 0)
		close(s);
	return ok;
}

/* ---- the shared buffer ---- */

/* SIGBUS: a truncated memfd as the buffer, a read of a hole into it */
static int shm_truncated(void *arg)
{
	struct avfs_msg_io io = { .op = AVFS_IO_READ, .where = AVFS_IO_SHM, .nbytes = MiB };
	int32_t ores = 0, res;
	int s = raw_connect(), h, mfd;

	(void)arg;
	h = s >= 0 ? raw_hello_open(s, "sparse", AVFS_OPEN_READ, &ores) : -1;
	check(h >= 0, "SIGBUS: OPEN_PATH of a sparse file (%d)", ores);
	mfd = memfd(MiB, 0);
	res = send_shm(s, mfd, MiB, 10);
	check(res == -EINVAL, "SIGBUS: an unsealed memfd is refused as the buffer: -EINVAL (%d)",
	      res);
	check(!ftruncate(mfd, 0), "SIGBUS: the memfd truncated to 0");
	io.handle = (uint32_t)h;
	check(raw_io(s, &io, 11, 5000) == -EINVAL,
	      "SIGBUS: a read of a hole into it: -EINVAL (no buffer)");
	check(daemon_alive() && serves(), "SIGBUS: the daemon lives and serves");
	close(mfd);
	close(s);
	return 0;
}

/* deadlock: a descriptor of a file on the daemon's own mount, sent by another user */
static int shm_own_mount(void *arg)
{
	int s, fd, n = 0;
	int64_t t;
	int32_t res;

	(void)arg;
	if (!become(NOBODY, 0))
		return 2;
	fd = open_file("data", O_RDONLY);
	s = raw_connect();
	check(fd >= 0 && s >= 0 && raw_hello(s), "own mount: uid %d opened a file of the mount",
	      NOBODY);
	t = avfs_clock_ns();
	res = send_shm(s, fd, DATA_SIZE, 20);
	check(res == -EINVAL, "own mount: its descriptor refused as the buffer: -EINVAL (%d) "
	      "in %.0f ms", res, (avfs_clock_ns() - t) / 1e6);
	close(fd);	/* the daemon's copy goes through its closer: FLUSH answered meanwhile */
	close(s);
	{
		char p[256];
		struct stat st;

		path_of(p, sizeof(p), "data");
		n = stat(p, &st);
	}
	check(!n && serves(), "own mount: the mount and the socket still answer");
	return 0;
}

/* a regular file, a memfd sealed against writing: refused */
static int shm_others(void *arg)
{
	char p[128];
	int s = raw_connect(), fd, mfd;
	int32_t res;

	(void)arg;
	snprintf(p, sizeof(p), "%s/plain", work_dir);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	check(s >= 0 && raw_hello(s) && fd >= 0 && !ftruncate(fd, MiB), "a plain 1 MiB file");
	res = send_shm(s, fd, MiB, 30);
	check(res == -EINVAL, "a regular file is refused as the buffer: -EINVAL (%d)", res);
	mfd = memfd(MiB, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
	res = send_shm(s, mfd, MiB, 31);
	check(res < 0, "a memfd sealed against writing is refused (%d)", res);
	close(mfd);
	mfd = memfd(MiB, F_SEAL_SHRINK);
	res = send_shm(s, mfd, MiB, 32);
	check(res == -EINVAL, "a memfd that may still grow is refused: -EINVAL (%d)", res);
	close(mfd);
	close(fd);
	unlink(p);
	close(s);
	return 0;
}

/* the buffer replaced while requests work in it: refused, the requests complete right */
static int shm_replace(void *arg)
{
	enum { N = 16 };
	int32_t ores = 0, res, busy = 1;
	int64_t got[N];
	int s = raw_connect(), h, a, b, seen = 0, bad = 0;
	uint8_t *map;

	(void)arg;
	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ, &ores) : -1;
	a = memfd(N * MiB, F_SEAL_SHRINK | F_SEAL_GROW);
	b = memfd(MiB, F_SEAL_SHRINK | F_SEAL_GROW);
	map = a >= 0 ? mmap(NULL, N * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0) : MAP_FAILED;
	check(h >= 0 && map != MAP_FAILED && send_shm(s, a, N * MiB, 40) == 0,
	      "replace: a sealed 16 MiB memfd taken as the buffer");
	if (h < 0 || map == MAP_FAILED)
		return 1;
	memset(map, 0, N * MiB);
	for (int i = 0; i < N; i++) {
		struct avfs_msg_io io = { .handle = (uint32_t)h, .op = AVFS_IO_READ,
					  .where = AVFS_IO_SHM, .offset = (uint64_t)(N + i) * MiB,
					  .nbytes = MiB, .shm_off = (uint64_t)i * MiB };

		got[i] = INT64_MIN;
		raw_send(s, AVFS_MSG_IO, 100 + (uint64_t)i, &io, sizeof(io), NULL, 0);
	}
	{
		struct avfs_msg_shm m = { .size = MiB };

		raw_send_fd(s, AVFS_MSG_SHM, 200, &m, sizeof(m), b);
	}
	while (seen < N + 1) {
		struct avfs_msg_hdr hd;
		uint8_t buf[64];

		if (!raw_recv(s, &hd, buf, sizeof(buf), 10000))
			break;
		if (hd.tag == 200)
			memcpy(&busy, buf, sizeof(busy));
		else if (hd.tag >= 100 && hd.tag < 100 + N)
			memcpy(&got[hd.tag - 100], buf, sizeof(got[0]));
		seen++;
	}
	check(busy == -EBUSY, "replace: a new buffer while 16 reads work in the old: -EBUSY (%d)",
	      busy);
	for (int i = 0; i < N; i++)
		bad += got[i] != MiB || pattern_bad(map + (size_t)i * MiB, (uint64_t)(N + i) * MiB,
						    MiB, 0) >= 0;
	check(!bad, "replace: the 16 reads completed whole with the right data (%d wrong)", bad);
	res = send_shm(s, b, MiB, 201);
	check(res == 0, "replace: once they are done the new buffer is taken (%d)", res);
	munmap(map, N * MiB);
	close(a);
	close(b);
	close(s);
	return 0;
}

/* ---- directories: OPEN honours search permission ---- */

static int dir_nobody(void *arg)
{
	struct avfs_msg_open om = { .dev = shared->secret_dev, .ino = shared->secret_ino,
				    .access = AVFS_OPEN_READ };
	struct avfs_msg_open_reply rep = { .res = 1 };
	int32_t res = 0;
	int s, h, fd;
	uint8_t *b;
	char p[256];
	ssize_t r;

	(void)arg;
	fd = open_file("secret/f", O_RDONLY);	/* as root, before: an fd handed down */
	if (!become(NOBODY, 0))
		return 2;
	s = raw_connect();
	if (s >= 0 && raw_hello(s))
		raw_call(s, AVFS_MSG_OPEN, 5, &om, sizeof(om), NULL, 0, &rep, sizeof(rep), 5000);
	check(rep.res == -EPERM, "dirs: uid %d OPEN by inode of a file in a 0700 root directory: "
	      "-EPERM (%d)", NOBODY, rep.res);
	path_of(p, sizeof(p), "secret/f");
	h = raw_open_path(s, p, shared->secret_dev, shared->secret_ino, AVFS_OPEN_READ, &res);
	check(h < 0 && res == -EACCES, "dirs: uid %d OPEN_PATH of it: -EACCES (%d)", NOBODY, res);
	close(s);
	check(open_file("secret/f", O_RDONLY) < 0 && errno == EACCES,
	      "dirs: uid %d open(2) of it through the mount: EACCES", NOBODY);
	b = avfs_buf_alloc(MiB);
	r = fd >= 0 && b ? avio_sync(fd, AVFS_READ, b, 0, 4096, 0) : 1;
	check(r == -EACCES, "dirs: uid %d libavio read through a descriptor root opened: -EACCES "
	      "(%zd)", NOBODY, r);
	s = raw_connect();
	h = s >= 0 ? raw_hello_open(s, "acl/f", AVFS_OPEN_READ, &res) : -1;
	fd = open_file("acl/f", O_RDONLY);
	check(h >= 0 && fd >= 0, "dirs: uid %d through a directory whose ACL grants it search "
	      "(other ---): OPEN_PATH (%d), as open(2)", NOBODY, res);
	close(fd);
	close(s);
	s = raw_connect();
	path_of(p, sizeof(p), "aclno/f");
	h = s >= 0 && raw_hello(s) ? raw_open_path(s, p, shared->aclno_dev, shared->aclno_ino,
						   AVFS_OPEN_READ, &res) : -1;
	check(h < 0 && res == -EACCES && open_file("aclno/f", O_RDONLY) < 0 && errno == EACCES,
	      "dirs: uid %d through a directory whose ACL denies it (other r-x): -EACCES (%d), "
	      "as open(2)", NOBODY, res);
	close(s);
	s = raw_connect();
	path_of(p, sizeof(p), "grp/f");
	h = s >= 0 && raw_hello(s) ? raw_open_path(s, p, shared->grp_dev, shared->grp_ino,
						   AVFS_OPEN_READ, &res) : -1;
	check(h < 0 && res == -EACCES, "dirs: uid %d without group %d: OPEN_PATH in a 0710 "
	      "directory of that group: -EACCES (%d)", NOBODY, GROUP, res);
	close(s);
	return 0;
}

static int dir_group(void *arg)
{
	int32_t res = 0;
	int s, h, fd;
	uint8_t *b;
	ssize_t r;

	(void)arg;
	if (!become(NOBODY, GROUP))
		return 2;
	s = raw_connect();
	h = s >= 0 ? raw_hello_open(s, "grp/f", AVFS_OPEN_READ, &res) : -1;
	check(h >= 0, "dirs: uid %d with supplementary group %d: OPEN_PATH in the 0710 directory "
	      "(%d)", NOBODY, GROUP, res);
	close(s);
	fd = open_file("grp/f", O_RDONLY);
	b = avfs_buf_alloc(MiB);
	r = fd >= 0 && b ? avio_sync(fd, AVFS_READ, b, 0, 4096, 0) : -1;
	check(r == 4096, "dirs: and a libavio read of it (%zd)", r);
	return 0;
}

/* ---- exhaustion ---- */

static int flood(void *arg)
{
	enum { N = 100 };
	int fds[N], ok = 0;

	(void)arg;
	if (!become(NOBODY, 0))
		return 2;
	for (int i = 0; i < N; i++) {
		fds[i] = raw_connect();
		ok += fds[i] >= 0 && raw_hello(fds[i]);
	}
	shared->count = ok;
	while (!shared->go)
		usleep(10000);
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return 0;
}

static void test_flood(void)
{
	int base = daemon_fds(), st;
	pid_t pid;

	shared->count = -1;
	shared->go = 0;
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(flood(NULL));
	for (int i = 0; i < 3000 && shared->count < 0; i++)
		usleep(10000);
	check(shared->count == 64, "flood: 100 connections of uid %d, 64 served (%d)", NOBODY,
	      shared->count);
	check(serves(), "flood: root still connects and is answered");
	shared->go = 1;
	waitpid(pid, &st, 0);
	check(fds_back(base), "flood: the daemon's descriptors back to %d", base);
}

/* 12 clients each leave 12 MiB of a 16 MiB message half-sent */
static void test_partial(void)
{
	enum { N = 12 };
	static uint8_t junk[12 * MiB];
	int fds[N], base = daemon_fds(), closed = 0;
	long rss0 = proc_kb("VmRSS:"), peak = rss0;
	int64_t t0 = avfs_clock_ns();

	for (int i = 0; i < N; i++) {
		struct {
			struct avfs_msg_hdr h;
			struct avfs_msg_io io;
		} m = { { .magic = AVFS_PROTO_MAGIC, .type = AVFS_MSG_IO,
			  .len = sizeof(struct avfs_msg_io) + 16 * MiB, .tag = 1 },
			{ .op = AVFS_IO_WRITE, .nbytes = 16 * MiB } };
		size_t sent = 0;

		fds[i] = raw_connect();
		if (fds[i] < 0)
			continue;
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
		send(fds[i], &m, sizeof(m), MSG_NOSIGNAL);
		for (int k = 0; k < 200 && sent < sizeof(junk); k++) {
			ssize_t n = send(fds[i], junk + sent, sizeof(junk) - sent, MSG_NOSIGNAL);

			if (n > 0)
				sent += (size_t)n;
			else
				usleep(2000);
			peak = proc_kb("VmRSS:") > peak ? proc_kb("VmRSS:") : peak;
		}
	}
	while (closed < N && avfs_clock_ns() - t0 < 40ll * 1000000000) {
		long r = proc_kb("VmRSS:");

		peak = r > peak ? r : peak;
		closed = 0;
		for (int i = 0; i < N; i++)
			closed += fds[i] < 0 || hung_up(fds[i], 0);
		usleep(50000);
	}
	check(closed == N, "partial: 12 clients with a 16 MiB message half-sent all dropped, "
	      "within %.1f s", (avfs_clock_ns() - t0) / 1e9);
	check(peak - rss0 <= (SERVER_MEM + 32) * 1024, "partial: the daemon's RSS grew %ld MiB "
	      "(bound %d MiB + 32)", (peak - rss0) / 1024, SERVER_MEM);
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	check(fds_back(base) && serves(), "partial: descriptors back, the daemon serves");
}

/* ---- reservations ---- */

static int reserve(int s, uint32_t handle, uint64_t *id)
{
	struct avfs_msg_reserve m = { .handle = handle, .flags = AVFS_RESERVE_DETACHED,
				      .rate = 1000000, .buffer = 8 * MiB, .io = 512 << 10 };
	struct avfs_msg_reserve_reply r = { .res = 1 };

	raw_call(s, AVFS_MSG_RESERVE, 70, &m, sizeof(m), NULL, 0, &r, sizeof(r), 5000);
	*id = r.id;
	return r.res;
}

static char admin_buf[1 << 20];

/* the admin command's JSON (in admin_buf), or NULL */
static const char *admin_json(int s, const char *cmd)
{
	struct avfs_msg_hdr h;

	memset(admin_buf, 0, sizeof(admin_buf));
	if (!raw_send(s, AVFS_MSG_ADMIN, 80, cmd, strlen(cmd), NULL, 0) ||
	    !raw_recv(s, &h, admin_buf, sizeof(admin_buf) - 1, 5000))
		return NULL;
	return admin_buf + sizeof(struct avfs_msg_admin_reply);
}

/* occurrences of "field" in the admin command's JSON */
static int admin_count(int s, const char *cmd, const char *field)
{
	const char *j = admin_json(s, cmd);
	int n = 0;

	if (!j)
		return -1;
	for (const char *p = j; (p = strstr(p, field)); p++)
		n++;
	return n;
}

static int quota_nobody(void *arg)
{
	uint64_t ids[3];
	int32_t ores = 0;
	int s, h, r[3];

	(void)arg;
	if (!become(NOBODY, 0))
		return 2;
	s = raw_connect();
	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ, &ores) : -1;
	for (int i = 0; i < 3; i++)
		r[i] = h >= 0 ? reserve(s, (uint32_t)h, &ids[i]) : 1;
	check(!r[0] && !r[1] && r[2] == -EDQUOT, "quota: uid %d's third detached reservation "
	      "-EDQUOT (%d %d %d)", NOBODY, r[0], r[1], r[2]);
	check(admin_count(s, "streams", "\"pid\"") == 2 &&
	      admin_count(s, "streams", "\"inode\"") == 2 &&
	      admin_count(s, "stats", "\"pid\"") == 2,
	      "quota: uid %d sees the pid and inode of its 2 reservations, not of root's", NOBODY);
	close(s);
	return 0;
}

static void test_quota(void)
{
	int32_t ores = 0;
	uint64_t id = 0;
	int s = raw_connect(), h, n;

	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ, &ores) : -1;
	check(h >= 0 && reserve(s, (uint32_t)h, &id) == 0, "quota: root's detached reservation");
	check(in_child("quota", 30, quota_nobody, NULL), "quota: the process finished");
	n = admin_count(s, "streams", "\"pid\"");
	check(n == 3, "quota: root sees all 3 reservations in full (%d)", n);
	for (uint64_t i = 1; i < id + 8; i++) {	/* release them all by id */
		struct avfs_msg_release m = { .handle = AVFS_RELEASE_BY_ID, .id = i };
		uint8_t buf[64];

		raw_call(s, AVFS_MSG_RELEASE, 90, &m, sizeof(m), NULL, 0, buf, sizeof(buf), 5000);
	}
	check(admin_count(s, "streams", "\"id\"") == 0, "quota: all released");
	close(s);
}

/* ---- deadlines ---- */

static int horizon(void *arg)
{
	int32_t ores = 0;
	int s = raw_connect(), h, fd;
	struct avfs_msg_io io = { .op = AVFS_IO_READ, .nbytes = 4096 };
	int64_t t, r1, r2;
	uint8_t *b;

	(void)arg;
	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ, &ores) : -1;
	io.handle = (uint32_t)h;
	t = avfs_clock_ns();
	io.deadline = INT64_MAX;
	r1 = raw_io(s, &io, 60, 5000);
	io.deadline = avfs_clock_ns() + 601ll * 1000000000;
	r2 = raw_io(s, &io, 61, 5000);
	check(r1 == -ERANGE && r2 == -ERANGE, "deadline INT64_MAX and now + 601 s: -ERANGE "
	      "(%lld, %lld) within %.0f ms", (long long)r1, (long long)r2,
	      (avfs_clock_ns() - t) / 1e6);
	io.deadline = avfs_clock_ns() + 599ll * 1000000000;
	r1 = raw_io(s, &io, 62, 300);	/* the mixer may hold it until nearer its deadline */
	check(r1 == 4096 || r1 == INT64_MIN, "deadline now + 599 s: taken (%lld)", (long long)r1);
	close(s);
	fd = open_file("data", O_RDONLY);
	b = avfs_buf_alloc(4096);
	check(avio_sync(fd, AVFS_READ, b, 0, 4096, INT64_MAX) == -ERANGE,
	      "libavio: deadline INT64_MAX refused at start: -ERANGE");
	close(fd);
	return 0;
}

/* ---- the storm (Done-when 4) ---- */

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && atoi(v) > 0 ? atoi(v) : def;
}

/* the reserved stream: 4 MB/s in 512 KiB reads into shared buffers, 4 in flight; an 8 MiB
 * buffer (deadlines 1.8 s out), as a player on a disk that others share would keep */
static int stream(void *arg)
{
	enum { IO = 512 << 10, RING = 4 };
	struct avfs_service svc = { .rate = 4000000, .buffer = 8 * MiB, .direction = AVFS_READ };
	avfs_asyncio_t a[RING];
	struct avfs_stream_stats st = { 0 };
	int64_t end = avfs_clock_ns() + (int64_t)(intptr_t)arg * 1000000000;
	int64_t next = avfs_clock_ns(), period = (int64_t)IO * 1000000000 / 4000000;
	uint64_t k = 0;
	int fd = open_file("data", O_RDONLY), err;

	memset(a, 0, sizeof(a));
	err = fd >= 0 ? avfs_reserve(fd, &svc) : -EBADF;
	check(!err, "storm: the stream's reservation, 4 MB/s (%d)", err);
	if (err)
		return 1;
	for (int i = 0; i < RING; i++)
		a[i].aio_buf = avfs_buf_alloc(IO);
	while (avfs_clock_ns() < end) {
		avfs_asyncio_t *x = &a[k % RING];

		if (k >= RING) {	/* the oldest, due a buffer ago */
			avfs_asyncio_check(x, AVFS_WAIT);
			shared->stream_failed += x->aio_ret != IO;
		}
		while (avfs_clock_ns() < next)
			usleep(1000);
		next += period;
		x->aio_fildes = fd;
		x->aio_offset = (off_t)(k * IO % DATA_SIZE);
		x->aio_nbytes = IO;
		x->aio_deadline = 0;	/* the reservation's */
		if (avfs_asyncio_start(x, AVFS_READ))
			shared->stream_failed++;
		k++;
	}
	for (uint64_t i = k > RING ? k - RING : 0; i < k; i++) {
		avfs_asyncio_check(&a[i % RING], AVFS_WAIT);
		shared->stream_failed += a[i % RING].aio_ret != IO;
	}
	avfs_stream_stats(fd, &st);
	shared->stream_requests = st.requests;
	shared->stream_misses = st.deadline_misses;
	shared->stream_bytes = st.bytes;
	return 0;
}

/* sends inline reads (STORM_NEVER_KIB each, 64 KiB unless said) and never reads a reply;
 * dropped by the daemon, it stops */
static int never_reads(void *arg)
{
	uint64_t io_len = (uint64_t)env_int("STORM_NEVER_KIB", 64) << 10;
	int32_t ores = 0;
	int s = raw_connect(), h;
	int64_t end = avfs_clock_ns() + (int64_t)(intptr_t)arg * 1000000000 + 20000000000ll;

	h = s >= 0 ? raw_hello_open(s, "data", AVFS_OPEN_READ, &ores) : -1;
	if (h < 0)
		return 1;
	fcntl(s, F_SETFL, O_NONBLOCK);
	for (uint64_t t = 1; avfs_clock_ns() < end; t++) {
		struct avfs_msg_io io = { .handle = (uint32_t)h, .op = AVFS_IO_READ,
					  .offset = t % 64 * MiB, .nbytes = io_len };
		struct avfs_msg_hdr hd = { .magic = AVFS_PROTO_MAGIC, .type = AVFS_MSG_IO,
					   .len = sizeof(io), .tag = t };
		struct iovec iov[2] = { { &hd, sizeof(hd) }, { &io, sizeof(io) } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

		if (hung_up(s, 0)) {
			shared->never_dropped = 1;
			break;
		}
		if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
			usleep(10000);
	}
	return 0;
}

/* a well-formed client's request: right, refused for memory (-EAGAIN), or failed */
static void tally(bool right, int64_t res)
{
	volatile uint64_t *n = right ? &shared->normal_ok : res == -EAGAIN ?
			       &shared->normal_refused : &shared->normal_failed;

	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
	if (n == &shared->normal_failed)
		shared->failed_res = res;
}

/* one client of the storm, of kind i % 10 */
static void storm_client(int i)
{
	int32_t ores = 0;
	int s, h;

	if (!become(NOBODY + (uid_t)(i % 8), 0))	/* 200 at a time: 25 a uid, under 64 */
		_exit(2);
	s = raw_connect();
	if (s < 0)
		_exit(1);
	switch (i % 10) {
	case 0: case 1: case 2:	/* raw, inline reads */
		h = raw_hello_open(s, "data", AVFS_OPEN_READ, &ores);
		for (int k = 0; h >= 0 && k < 4; k++) {
			struct avfs_msg_io io = { .handle = (uint32_t)h, .op = AVFS_IO_READ,
						  .offset = (uint64_t)((i * 7 + k) % 60) * MiB,
						  .nbytes = 256 << 10 };
			static uint8_t buf[(256 << 10) + 64];
			int64_t res = INT64_MIN;

			if (raw_call(s, AVFS_MSG_IO, 10 + (uint64_t)k, &io, sizeof(io), NULL, 0, buf,
				     sizeof(buf), 10000))
				memcpy(&res, buf, sizeof(res));
			tally(res == 256 << 10 &&
			      pattern_bad(buf + 8, io.offset, 256 << 10, 0) < 0, res);
		}
		break;
	case 3: case 4: case 5: {	/* libavio */
		int fd = open_file("data", O_RDONLY);
		static uint8_t buf[MiB] __attribute__((aligned(4096)));
		ssize_t r = avio_sync(fd, AVFS_READ, buf, (uint64_t)(i % 60) * MiB, MiB, 0);

		tally(r == MiB && pattern_bad(buf, (uint64_t)(i % 60) * MiB, MiB, 0) < 0, r);
		break;
	}
	case 6: case 7: {	/* garbage; a 4 GiB length */
		struct avfs_msg_hdr hd = { .magic = i % 10 == 6 ? 0xdeadbeef : AVFS_PROTO_MAGIC,
					   .type = AVFS_MSG_IO, .len = UINT32_MAX };

		send(s, &hd, sizeof(hd), MSG_NOSIGNAL);
		if (raw_closed(s, 5000))
			__atomic_add_fetch(&shared->bad_closed, 1, __ATOMIC_RELAXED);
		else
			__atomic_add_fetch(&shared->bad_open, 1, __ATOMIC_RELAXED);
		break;
	}
	case 8: {	/* half a message, then gone */
		struct avfs_msg_hdr hd = { .magic = AVFS_PROTO_MAGIC, .type = AVFS_MSG_OPEN,
					   .len = sizeof(struct avfs_msg_open) };

		send(s, &hd, sizeof(hd), MSG_NOSIGNAL);
		usleep(100000);
		break;
	}
	default:	/* hello, gone */
		raw_hello(s);
		break;
	}
	usleep(500000 + (useconds_t)(i % 5) * 100000);	/* connected a while: 200 at once */
	close(s);
	_exit(0);
}

/* the storm's processes: the stream, the one that never reads, the clients */
struct procs {
	pid_t sp, np;
	int sst;		/* the stream's exit status */
	bool sdone, ndone;
	int active;		/* clients running */
};

/* one of them ended (flags: waitpid's): true, else false */
static bool reap(struct procs *p, int flags)
{
	int st;
	pid_t w = waitpid(-1, &st, flags);

	if (w <= 0)
		return false;
	if (w == p->sp)
		p->sdone = true, p->sst = st;
	else if (w == p->np)
		p->ndone = true;
	else
		p->active--;
	return true;
}

static void test_storm(void)
{
	int seconds = env_int("STORM_SECONDS", 5), total = env_int("STORM_CLIENTS", 100);
	int conc = env_int("STORM_CONCURRENT", 20), spawned = 0, base = daemon_fds();
	long rss0 = proc_kb("VmRSS:"), peak = rss0;
	int64_t t0 = avfs_clock_ns(), end = t0 + (int64_t)seconds * 1000000000;
	struct procs p = { .sst = -1 };
	int st;

	note("storm: at least %d clients, at most %d at a time, for at least %d s, beside a "
	     "reserved stream; the daemon's memory bound %d MiB", total, conc, seconds, SERVER_MEM);
	fflush(stdout);
	p.sp = fork();
	if (!p.sp)
		_exit(stream((void *)(intptr_t)(seconds + 2)));
	usleep(300000);	/* the stream runs before the storm begins */
	p.np = fork();
	if (!p.np)
		_exit(never_reads((void *)(intptr_t)seconds));
	while (spawned < total || avfs_clock_ns() < end) {
		long r = proc_kb("VmRSS:");

		peak = r > peak ? r : peak;
		while (p.active < conc && (spawned < total || avfs_clock_ns() < end)) {
			pid_t c = fork();

			if (!c)
				storm_client(spawned);
			spawned += c > 0;
			p.active += c > 0;
		}
		while (reap(&p, WNOHANG))
			;
		usleep(2000);
	}
	while (p.active > 0 && reap(&p, 0))
		;
	if (!p.sdone)
		waitpid(p.sp, &p.sst, 0);
	check(WIFEXITED(p.sst) && !WEXITSTATUS(p.sst), "storm: the stream's process finished");
	if (!p.ndone) {
		kill(p.np, SIGKILL);
		waitpid(p.np, &st, 0);
	}
	note("storm: %d clients in %.1f s; normal requests ok %llu, refused (-EAGAIN) %llu, failed "
	     "%llu; malformed closed %llu, left open %llu", spawned, (avfs_clock_ns() - t0) / 1e9,
	     (unsigned long long)shared->normal_ok, (unsigned long long)shared->normal_refused,
	     (unsigned long long)shared->normal_failed, (unsigned long long)shared->bad_closed,
	     (unsigned long long)shared->bad_open);
	check(shared->stream_requests > 0 && !shared->stream_misses && !shared->stream_failed,
	      "storm: the reserved stream: %llu RT requests, %llu misses, %llu failed, %.1f MB",
	      (unsigned long long)shared->stream_requests,
	      (unsigned long long)shared->stream_misses,
	      (unsigned long long)shared->stream_failed, shared->stream_bytes / 1e6);
	check(!shared->normal_failed && shared->normal_ok > 0,
	      "storm: every well-formed client's request answered right or refused with -EAGAIN "
	      "(the last failed: %lld)", (long long)shared->failed_res);
	check(!shared->bad_open, "storm: every malformed client dropped");
	check(shared->never_dropped, "storm: the client that never reads was dropped");
	check(peak - rss0 <= (SERVER_MEM + 48) * 1024, "storm: the daemon's RSS grew %ld MiB "
	      "(%ld to %ld; bound %d MiB + 48)", (peak - rss0) / 1024, rss0 / 1024, peak / 1024,
	      SERVER_MEM);
	check(fds_back(base), "storm: the daemon's descriptors back to %d", base);
	check(daemon_alive() && serves(), "storm: the daemon serves");
	{	/* what the daemon saw of deadlines and its disk, for the record */
		int s = raw_connect();
		const char *j = s >= 0 && raw_hello(s) ? admin_json(s, "stats") : NULL;
		const char *rt = j ? strstr(j, "\"rt\"") : NULL, *e = rt ? strchr(rt, '}') : NULL;

		if (e)
			note("storm: avfs-admin stats: %.*s}}, disk_utilization %.3f", (int)(e - rt),
			     rt, atof(strstr(j, "\"disk_utilization\"") + 19));
		if (s >= 0)
			close(s);
		note("storm: the daemon's CPU time %.1f s", proc_cpu_s());
	}
}

/* ---- the scenarios, by name (argv: "only NAME" runs one: against an older avfsd, say) ---- */

static void run_sigbus(void)
{
	check(in_child("SIGBUS", 30, shm_truncated, NULL), "SIGBUS: the process finished");
}

static void run_own_mount(void)
{
	check(in_child("own mount", 30, shm_own_mount, NULL), "own mount: the process finished");
}

static void run_others(void)
{
	check(in_child("other buffers", 30, shm_others, NULL),
	      "other buffers: the process finished");
}

static void run_replace(void)
{
	check(in_child("replace", 30, shm_replace, NULL), "replace: the process finished");
}

static void run_dirs(void)
{
	check(in_child("dirs", 30, dir_nobody, NULL), "dirs: the process finished");
	check(in_child("dirs group", 30, dir_group, NULL), "dirs group: the process finished");
}

static void run_horizon(void)
{
	check(in_child("horizon", 30, horizon, NULL), "horizon: the process finished");
}

static const struct {
	const char *name;
	void (*run)(void);
} scenarios[] = {
	{ "sigbus", run_sigbus }, { "own-mount", run_own_mount }, { "others", run_others },
	{ "replace", run_replace }, { "dirs", run_dirs }, { "flood", test_flood },
	{ "partial", test_partial }, { "quota", test_quota }, { "horizon", run_horizon },
};

/* a directory with an access ACL: other ---, uid NOBODY given `user` (rwx bits) */
static bool acl_dir(const char *name, unsigned other, unsigned user)
{
	uint32_t v[11] = { 2 };	/* version, then (tag | perm << 16, id) pairs, little-endian */
	unsigned tags[5][3] = { { 0x01, 7, 0 }, { 0x02, user, NOBODY }, { 0x04, 5, 0 },
				{ 0x10, 7, 0 }, { 0x20, other, 0 } };
	char p[256];

	for (int i = 0; i < 5; i++) {
		v[1 + 2 * i] = tags[i][0] | tags[i][1] << 16;
		v[2 + 2 * i] = tags[i][2];
	}
	path_of(p, sizeof(p), name);
	return !mkdir(p, 0755) && !setxattr(p, "system.posix_acl_access", v, sizeof(v), 0);
}

/* ---- set-up ---- */

static bool setup_files(void)
{
	uint8_t *b = malloc(DATA_SIZE);
	char p[256];
	struct stat st;
	int fd = open_file("data", O_RDWR | O_CREAT | O_TRUNC);
	bool ok = b && fd >= 0;

	if (ok) {
		pattern_fill(b, 0, DATA_SIZE, 0);
		ok = pwrite(fd, b, DATA_SIZE, 0) == DATA_SIZE && !fsync(fd);
	}
	if (fd >= 0)
		close(fd);
	free(b);
	fd = open_file("sparse", O_RDWR | O_CREAT | O_TRUNC);
	ok = ok && fd >= 0 && !ftruncate(fd, 8 * MiB);
	if (fd >= 0)
		close(fd);
	path_of(p, sizeof(p), "secret");
	ok = ok && !mkdir(p, 0700);
	path_of(p, sizeof(p), "grp");
	ok = ok && !mkdir(p, 0710) && !chown(p, 0, GROUP) && !chmod(p, 0710);
	fd = open_file("secret/f", O_WRONLY | O_CREAT | O_TRUNC);
	ok = ok && fd >= 0 && !ftruncate(fd, MiB) && !fstat(fd, &st);
	shared->secret_dev = st.st_dev;
	shared->secret_ino = st.st_ino;
	if (fd >= 0)
		close(fd);
	/* an ACL grants uid NOBODY search where the mode would not; one denies it where the
	 * mode's other bits would grant it */
	ok = ok && acl_dir("acl", 0, 1) && acl_dir("aclno", 5, 0);
	for (int i = 0; ok && i < 2; i++) {
		fd = open_file(i ? "aclno/f" : "acl/f", O_WRONLY | O_CREAT | O_TRUNC);
		ok = fd >= 0 && !ftruncate(fd, MiB) && !fstat(fd, &st);
		shared->aclno_dev = st.st_dev;
		shared->aclno_ino = st.st_ino;
		if (fd >= 0)
			close(fd);
	}
	fd = open_file("grp/f", O_WRONLY | O_CREAT | O_TRUNC);
	ok = ok && fd >= 0 && !ftruncate(fd, MiB) && !fstat(fd, &st);
	shared->grp_dev = st.st_dev;
	shared->grp_ino = st.st_ino;
	if (fd >= 0)
		close(fd);
	return ok;
}

int main(int argc, char **argv)
{
	bool storm = argc > 1 && !strcmp(argv[1], "storm");
	const char *only = argc > 2 && !strcmp(argv[1], "only") ? argv[2] : NULL;
	char conf[128];
	FILE *f;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = harness_setup(storm ? "storm" : "hostile");
	if (rc)
		return rc;
	daemon_allow_other = true;	/* other uids use the mount */
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return 1;
	unsetenv("AVFS_SOCKET");
	chmod(work_dir, 0755);
	snprintf(conf, sizeof(conf), "%s/avfsd.conf", work_dir);
	f = fopen(conf, "w");
	if (!f)
		return 1;
	fprintf(f, "server-memory %dM\nclient-memory 48M\n", SERVER_MEM);
	/* the image lies on a disk other work shares, slower at times than its model: the mixer
	 * starts real-time requests a second before their deadlines, not half a second */
	fprintf(f, "margin=1s\n");
	fclose(f);
	daemon_config = conf;

	check(harness_mkfs(), "mkfs.avfs --size 2G --block-size 1M");
	if (!daemon_start()) {
		check(false, "avfsd mounts the image");
		goto out;
	}
	check(setup_files(), "files: data (64 MiB), sparse, secret/f (0700 dir), acl/f, aclno/f "
	      "(ACL dirs), grp/f (0710 dir of group %d)", GROUP);
	if (storm) {
		test_storm();
	} else {
		for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
			if (!only || !strcmp(only, scenarios[i].name))
				scenarios[i].run();
	}
	check(daemon_alive(), "the daemon is still running");
	check(daemon_stop(), "clean unmount (avfsd exits 0)");
	check(fsck_clean(), "fsck.avfs -n clean");
out:
	return harness_finish();
}
