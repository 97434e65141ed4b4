/*
 * wlat.c — an LD_PRELOAD timer of a program's file writes, as the program sees them (issue 16:
 * bench/recorder.sh times ffmpeg's segment writes on ext4 and on an AVFS mount).
 *
 * It wraps open/open64/openat/openat64 and dup/dup2/dup3 (to learn which descriptors name
 * files under $WLAT_PREFIX), write, pwrite/pwrite64, writev and close: each such call on a
 * descriptor opened under the prefix is timed with CLOCK_MONOTONIC around the real call. At
 * exit the process writes $WLAT_DIR/wlat.PID:
 *   # wlat pid PID calls N dropped D t0_ns T
 *   o LAT_US T_MS PATH      one line per open of a file under the prefix
 *   w LAT_US T_MS PATH      one line per write (write, pwrite, writev)
 *   c LAT_US T_MS PATH      one line per close
 * (LAT_US: the call's latency; T_MS: from the process's start, t0_ns on CLOCK_MONOTONIC, to
 * the call's start.) The analysis is the reader's (recorder.sh); wlat judges nothing. Without
 * WLAT_DIR it times nothing.
 *
 * It does not time reads, fsync, or calls on descriptors it did not see opened (stdout,
 * stderr, sockets), and it keeps at most MAX_CALLS calls (the rest counted as dropped). Two
 * clock reads per call and one atomic increment are all it adds, where strace -T would stop
 * the process twice per system call (ptrace) and want CPU of its own on a busy machine.
 */
#ifndef _GNU_SOURCE	/* the build defines it */
#define _GNU_SOURCE
#endif
/* The build asks for 64-bit file offsets, which renames open to open64 in the headers: this file
 * defines both symbols itself (off_t is 64 bits on the targets it is for either way). */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 1024
#define MAX_CALLS (1 << 20)
#define MAX_PATHS 4096

struct call {
	uint32_t lat_us;	/* saturated at UINT32_MAX */
	uint32_t t_ms;		/* start, since t0 */
	uint16_t path;		/* index into paths */
	char op;		/* 'o', 'w' or 'c' */
};

static struct call calls[MAX_CALLS];
static atomic_uint ncalls;
static char *paths[MAX_PATHS];	/* each opened file once per open; index 0 is unused */
static atomic_uint npaths = 1;
static _Atomic uint16_t fd_path[MAX_FDS];	/* the path index of a timed descriptor, else 0 */
static const char *prefix;
static size_t prefix_len;
static int64_t t0;
static int enabled;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_close)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((constructor)) static void wlat_init(void)
{
	real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
	real_pwrite64 = (ssize_t (*)(int, const void *, size_t, off64_t))
		dlsym(RTLD_NEXT, "pwrite64");
	real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	real_dup = (int (*)(int))dlsym(RTLD_NEXT, "dup");
	real_dup2 = (int (*)(int, int))dlsym(RTLD_NEXT, "dup2");
	real_dup3 = (int (*)(int, int, int))dlsym(RTLD_NEXT, "dup3");
	real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	real_open64 = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
	real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
	real_openat64 = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat64");
	prefix = getenv("WLAT_PREFIX");
	prefix_len = prefix ? strlen(prefix) : 0;
	enabled = getenv("WLAT_DIR") != NULL;
	t0 = now_ns();
}

static void record(char op, int64_t start, int64_t end, unsigned path)
{
	unsigned i = atomic_fetch_add(&ncalls, 1);
	int64_t us = (end - start) / 1000;

	if (i >= MAX_CALLS)
		return;
	calls[i] = (struct call){
		.lat_us = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us,
		.t_ms = (uint32_t)((start - t0) / 1000000),
		.path = (uint16_t)path,
		.op = op,
	};
}

static unsigned timed_fd(int fd)
{
	return enabled && fd >= 0 && fd < MAX_FDS ? fd_path[fd] : 0;
}

/* after an open that returned fd: time the descriptor when path is under the prefix */
static void opened(int fd, const char *path, int64_t start)
{
	unsigned i;
	char *copy;

	if (!enabled || fd < 0 || fd >= MAX_FDS || !path ||
	    (prefix_len && strncmp(path, prefix, prefix_len)))
		return;
	i = atomic_fetch_add(&npaths, 1);
	if (i >= MAX_PATHS || !(copy = strdup(path)))
		return;
	paths[i] = copy;
	fd_path[fd] = (uint16_t)i;
	record('o', start, now_ns(), i);
}

/* the mode argument exists only with O_CREAT or O_TMPFILE */
static mode_t mode_of(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

#define OPEN_WRAPPER(name, real, ...) \
	{ \
		va_list ap; \
		mode_t mode; \
		int64_t start = now_ns(); \
		int fd; \
		va_start(ap, flags); \
		mode = mode_of(flags, ap); \
		va_end(ap); \
		fd = real(__VA_ARGS__, flags, mode); \
		opened(fd, path, start); \
		return fd; \
	}

int open(const char *path, int flags, ...) OPEN_WRAPPER(open, real_open, path)
int open64(const char *path, int flags, ...) OPEN_WRAPPER(open64, real_open64, path)
int openat(int dirfd, const char *path, int flags, ...)
	OPEN_WRAPPER(openat, real_openat, dirfd, path)
int openat64(int dirfd, const char *path, int flags, ...)
	OPEN_WRAPPER(openat64, real_openat64, dirfd, path)

#define TIMED(op, fd, call) \
	{ \
		unsigned p = timed_fd(fd); \
		int64_t start; \
		__typeof__(call) r; \
		if (!p) \
			return call; \
		start = now_ns(); \
		r = call; \
		{ \
			int e = errno; \
			record(op, start, now_ns(), p); \
			errno = e; \
		} \
		return r; \
	}

ssize_t write(int fd, const void *buf, size_t n) TIMED('w', fd, real_write(fd, buf, n))
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
	TIMED('w', fd, real_pwrite(fd, buf, n, off))
ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
	TIMED('w', fd, real_pwrite64(fd, buf, n, off))
ssize_t writev(int fd, const struct iovec *iov, int n) TIMED('w', fd, real_writev(fd, iov, n))

int close(int fd)
{
	unsigned p = timed_fd(fd);
	int64_t start;
	int r, e;

	if (!p)
		return real_close(fd);
	fd_path[fd] = 0;	/* before: the number may be reused as soon as it is closed */
	start = now_ns();
	r = real_close(fd);
	e = errno;
	record('c', start, now_ns(), p);
	errno = e;
	return r;
}

/* a copy of a timed descriptor is timed as the same file (dd writes its output as fd 1) */
static int duped(int oldfd, int newfd)
{
	unsigned p = timed_fd(oldfd);

	if (enabled && newfd >= 0 && newfd < MAX_FDS && newfd != oldfd)
		fd_path[newfd] = (uint16_t)p;
	return newfd;
}

int dup(int fd)
{
	return duped(fd, real_dup(fd));
}

int dup2(int oldfd, int newfd)
{
	return duped(oldfd, real_dup2(oldfd, newfd));
}

int dup3(int oldfd, int newfd, int flags)
{
	return duped(oldfd, real_dup3(oldfd, newfd, flags));
}

__attribute__((destructor)) static void wlat_report(void)
{
	const char *dir = getenv("WLAT_DIR");
	unsigned n = atomic_load(&ncalls), i;
	char name[PATH_MAX];
	FILE *f;

	if (!dir)
		return;
	enabled = 0;
	snprintf(name, sizeof(name), "%s/wlat.%d", dir, (int)getpid());
	f = fopen(name, "w");
	if (!f)
		return;
	fprintf(f, "# wlat pid %d calls %u dropped %u t0_ns %lld\n", (int)getpid(),
		n > MAX_CALLS ? MAX_CALLS : n, n > MAX_CALLS ? n - MAX_CALLS : 0, (long long)t0);
	for (i = 0; i < n && i < MAX_CALLS; i++)
		fprintf(f, "%c %u %u %s\n", calls[i].op, calls[i].lat_us, calls[i].t_ms,
			paths[calls[i].path] ? paths[calls[i].path] : "?");
	fclose(f);
}
