/*
 * avio.h — libavio, the AVFS real-time I/O client library (papers/001 §3.2.3, Table 1):
 * POSIX-AIO-like calls whose requests carry an absolute deadline, served by the avfsd daemon
 * over its Unix socket. This header is the whole installed API; it is not the wire protocol
 * (proto/proto.h) and it does no I/O itself on files of other file systems.
 *
 * Link with `pkg-config --cflags --libs avio`. Every call returns 0 (or a non-negative count)
 * on success and a negative errno on failure; none sets errno except avfs_buf_alloc().
 * Every call is thread-safe: the process has one connection to the daemon, shared by all
 * threads under one lock, made on first use.
 */
#ifndef AVFS_AVIO_H
#define AVFS_AVIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One asynchronous request, as struct aiocb is for POSIX AIO. Zero it (memset or `= { 0 }`)
 * before its first use, fill the public fields, then start it. The struct and its buffer
 * belong to the library from a successful avfs_asyncio_start() until the request is complete
 * (avfs_asyncio_check() returned 0 or avfs_asyncio_poll() counted it): do not free, move or
 * restart it in between. A completed struct may be started again.
 */
typedef struct avfs_asyncio {
	int aio_fildes;			/* a regular file opened with open(2) on an AVFS mount */
	off_t aio_offset;		/* byte offset; a multiple of 4096 */
	volatile void *aio_buf;		/* data; from avfs_buf_alloc() for zero copy */
	size_t aio_nbytes;		/* a multiple of 4096, 4096 .. 16 MiB */
	int64_t aio_deadline;		/* absolute CLOCK_MONOTONIC ns, 0 = best effort */
	ssize_t aio_ret;		/* bytes or -errno, valid once complete */
	/* private: */
	uint64_t __tag;			/* the request's tag on the wire */
	int __state;			/* never started / in flight / complete */
	void *__priv[2];
} avfs_asyncio_t;

/* op of avfs_asyncio_start() */
#define AVFS_READ 0
#define AVFS_WRITE 1

/* mode of avfs_asyncio_check() */
#define AVFS_WAIT 0
#define AVFS_NOWAIT 1

/* results of avfs_asyncio_cancel(): POSIX aio_cancel's three outcomes */
#define AVFS_CANCELED 0		/* AIO_CANCELED: it is complete now with aio_ret = -ECANCELED */
#define AVFS_NOTCANCELED 1	/* AIO_NOTCANCELED: already on the disk; it will complete */
#define AVFS_ALLDONE 2		/* AIO_ALLDONE: it had already completed */

/*
 * avfs_asyncio_start() - start reading (AVFS_READ) or writing (AVFS_WRITE) aio->aio_nbytes
 * bytes of aio->aio_fildes at aio->aio_offset, to be complete by aio->aio_deadline.
 *
 * The first call of the process connects to the daemon: to the socket named by the
 * environment variable AVFS_SOCKET if set, otherwise to the one the mount names in the
 * extended attribute "user.avfs.socket" of aio_fildes. A file is introduced to the daemon
 * once per (device, inode, access mode); later requests on it cost one message.
 * Buffers from avfs_buf_alloc() move no data through the socket (the daemon does its direct
 * I/O into them: a memfd sealed at its size, which the daemon requires); any other buffer
 * works with one copy through the socket. A request of such a copy that the daemon's memory
 * bounds cannot take now completes with aio_ret = -EAGAIN.
 *
 * A deadline the daemon cannot meet completes the request with aio_ret = -ETIME.
 *
 * Returns 0 when the request is in flight (aio_ret reads -EINPROGRESS until it completes), or:
 *   -EINVAL    aio NULL or aio_buf NULL; op not AVFS_READ/AVFS_WRITE; aio_offset negative or
 *              not a multiple of 4096; aio_nbytes 0, above 16 MiB or not a multiple of 4096;
 *              aio_deadline negative
 *   -EBUSY     aio is still in flight from an earlier start
 *   -EBADF     aio_fildes is not open, not a regular file, not on an AVFS mount, or not open
 *              for reading (AVFS_READ) / writing (AVFS_WRITE)
 *   -EACCES    the daemon refused this process access to the file: the daemon walks the
 *              file's path (as /proc/self/fd names it) with the process's uid and groups
 *              and needs search permission on every directory on the way, as open(2) did;
 *              a deleted file, or one reached through another mount namespace, is
 *              open to root alone
 *   -ETIME     aio_deadline is not 0 and already past: nothing was sent
 *   -ERANGE    aio_deadline is more than 600 s ahead (AVFS_PROTO_HORIZON_NS): nothing was
 *              sent
 *   -EAGAIN    the process already has the daemon's limit of requests (256) in flight
 *   -ENOTCONN  no daemon at the socket, or the connection to it was lost (lost is final:
 *              every later start fails so too)
 *   -EPROTO    the daemon speaks another protocol version
 *   -ENOMEM    out of memory
 *   other      the daemon's refusal of the file (-EMFILE: too many files for one client)
 * After a failure the request is not started (avfs_asyncio_check() on it gives -EINVAL).
 * Thread-safe; may block while the socket is full or while a new file or the shared buffer
 * region is introduced to the daemon (one round trip), never on the disk.
 */
int avfs_asyncio_start(avfs_asyncio_t *aio, int op);

/*
 * avfs_asyncio_check() - check (AVFS_NOWAIT) or wait for (AVFS_WAIT) the completion of a
 * started request. Completing a request is what reads the daemon's replies: whoever checks
 * or polls also completes other threads' requests, so no library thread is needed.
 *
 * Returns 0 when the request is complete (its result is in aio_ret: bytes transferred, or
 * -ETIME deadline passed, -ECANCELED, -EIO, -ENOSPC, -ENOTCONN the daemon went away...),
 * -EINPROGRESS (AVFS_NOWAIT only) when it is not, -EINVAL for a NULL or never-started aio or
 * a bad mode. AVFS_NOWAIT never blocks. AVFS_WAIT returns only once the request is complete;
 * if the daemon dies meanwhile, the request completes at once with aio_ret = -ENOTCONN.
 * Thread-safe; any number of threads may wait at the same time.
 */
int avfs_asyncio_check(avfs_asyncio_t *aio, int mode);

/*
 * avfs_asyncio_cancel() - ask the daemon to drop a started request.
 *
 * Returns AVFS_CANCELED (the request is complete now, aio_ret = -ECANCELED), AVFS_NOTCANCELED
 * (the daemon has already sent it to the disk: wait for it as usual), AVFS_ALLDONE (it was
 * already complete), or -EINVAL (NULL or never started). A lost connection gives
 * AVFS_ALLDONE, the request having completed with -ENOTCONN.
 * Thread-safe; blocks for one round trip to the daemon.
 */
int avfs_asyncio_cancel(avfs_asyncio_t *aio);

/*
 * avfs_asyncio_poll() - wait until at least one of the n requests of list is complete, or
 * timeout_ms milliseconds have passed (-1: no limit; 0: do not wait). NULL entries are
 * skipped; complete entries count at once.
 *
 * Returns the number of complete requests in list (each has its result in aio_ret), 0 on
 * timeout, or -EINVAL (list NULL with n > 0, n negative, an entry never started).
 * n == 0 returns 0 at once. Thread-safe.
 */
int avfs_asyncio_poll(avfs_asyncio_t *const list[], int n, int timeout_ms);

/*
 * avfs_completion_fd() - a descriptor for an application's own poll/epoll loop: it polls
 * readable when replies from the daemon may be waiting, after which the application calls
 * avfs_asyncio_check(..., AVFS_NOWAIT) or avfs_asyncio_poll(..., 0), which consume them.
 * Never read from it, write to it or close it. It also polls readable (for good) once the
 * daemon is gone. Another thread's check may consume a reply first, so readiness is a hint.
 *
 * Returns the descriptor (the connection's socket), or -ENOTCONN when the process has no
 * connection yet (before the first successful avfs_asyncio_start()) or has lost it.
 * Thread-safe.
 */
int avfs_completion_fd(void);

/*
 * avfs_buf_alloc() - len bytes (rounded up to 4096) of buffer memory, 4096-aligned, in the
 * region the process shares with the daemon (a memfd, 64 MiB unless the environment variable
 * AVFS_SHM_SIZE gives another size in bytes, with an optional K, M or G suffix).
 * Requests on these buffers move no data through the socket. Contents are unspecified.
 *
 * Returns the buffer, or NULL with errno set: EINVAL (len 0), ENOMEM (region full),
 * or the error of creating the region. Thread-safe; never blocks on I/O.
 */
void *avfs_buf_alloc(size_t len);

/*
 * avfs_buf_free() - give back a buffer of avfs_buf_alloc(). NULL is ignored; so is any
 * other pointer. The buffer must not belong to a request in flight. Thread-safe.
 */
void avfs_buf_free(void *p);

/*
 * Reservations and QoS statistics (SPEC §7). A reservation is a rate + buffer service on one
 * open file of this process: the daemon admits it only if the disk can carry it beside every
 * stream it has already admitted (and the user's quota allows it); then the file's requests
 * without a deadline of their own get one from the service (the time the rest of the buffer
 * lasts), and requests beyond the reserved rate are served as best effort (a token bucket of
 * the buffer's size), so that no stream takes time reserved for another. The reservation ends
 * with avfs_release(), or when the process closes its connection (exits).
 */
struct avfs_service {
	uint64_t rate;		/* bytes per second, > 0 */
	uint64_t buffer;	/* the client's buffer, bytes: larger than one request (512 KiB) */
	int direction;		/* AVFS_READ or AVFS_WRITE: fd must be open for it */
};

struct avfs_stream_stats {
	uint64_t requests;		/* RT requests completed */
	uint64_t deadline_misses;	/* of them, completed after their deadline or -ETIME */
	uint64_t bytes;			/* transferred */
	int64_t margin_min_ns;		/* smallest completion margin (deadline - completion) */
	uint64_t __reserved[4];
};

/*
 * avfs_reserve() - ask for a rate + buffer service on fd. Returns 0 (admitted), -EBUSY (the
 * disk cannot carry it: `avfs-admin status` shows what is left), -EDQUOT (the user's quota),
 * -EEXIST (fd's file already has one in this process), -EINVAL (svc malformed, or a buffer
 * not larger than one request), -EBADF (fd not on an AVFS mount, or not open for the
 * direction), -ENOTCONN. Thread-safe.
 */
int avfs_reserve(int fd, const struct avfs_service *svc);

/*
 * avfs_reserve_io() - avfs_reserve() for a client whose requests are io bytes each (a multiple
 * of 4096; 0: the daemon's default, 512 KiB, which avfs_reserve() takes). Admission counts the
 * service's requests a second and its period (the buffer less one request, at the rate) from
 * it: a client that asks in smaller pieces than it says costs the disk more positionings than
 * were admitted. The same returns; -EINVAL also for an io admission refuses (not a multiple of
 * 4096, above 64 MiB, not smaller than the buffer).
 */
int avfs_reserve_io(int fd, const struct avfs_service *svc, uint32_t io);

/* avfs_release() - end the service of fd. 0, -ENOENT (none), -EBADF, -ENOTCONN. */
int avfs_release(int fd);

/*
 * avfs_reserve_detached() - a detached reservation on fd's file or directory, as
 * `avfs-admin reserve PATH` makes it: it covers the reads (or writes) of the file through the
 * FUSE mount and by libavio, or those of every file in the directory, present and future (a
 * recorder's segment folder); with uid >= 0 only those of processes of that uid (-1: every
 * uid). It outlives this process, until avfs_release_detached() or the daemon's end. fd: the
 * file or directory opened for reading (not O_PATH: the mount's socket attribute is read
 * through it); the daemon checks the access asked against its modes. Returns its id
 * (> 0), or -errno as avfs_reserve(), and -ENOBUFS: its buffer beyond the daemon's memory for
 * buffers (avfsd's write-behind setting). Thread-safe.
 */
int64_t avfs_reserve_detached(int fd, const struct avfs_service *svc, int64_t uid);
/* avfs_release_detached() - end the detached reservation id (fd: any file on the same mount).
 * 0, -ENOENT, -EPERM (another user's), -ENOTCONN. */
int avfs_release_detached(int fd, uint64_t id);

/*
 * avfs_stream_stats() - the QoS statistics of fd's service into *st: 0, -ENOENT (fd has no
 * service), -EINVAL, -EBADF, -ENOTCONN. Thread-safe.
 */
int avfs_stream_stats(int fd, struct avfs_stream_stats *st);

/*
 * Where a file lies on the disk (papers/004 ch. 4): a program that reads many files (an
 * archiver, a backup, a copy of a tree) reads them fastest in the order of their first blocks,
 * as the disk is laid out, rather than in the order of the names.
 */
struct avfs_extent {
	uint64_t file_off;	/* in the file */
	uint64_t dev_off;	/* byte offset on the device: the sort key */
	uint64_t len;		/* bytes: runs of data blocks contiguous on the device; the last
				 * ends at the size rounded up to a page (a small file: its extent) */
};

/*
 * avfs_placement() - the extents of fd's file from byte off on (holes left out, file order),
 * up to max of them into ext: how many (0: nothing mapped there, an empty file or one with
 * only holes), or -EBADF (fd not on an AVFS mount, or not open for reading), -EACCES (the
 * process could not read it through the mount), -EINVAL, -ENOTCONN. fd must be open for
 * reading; the daemon checks as it does for I/O. At most 16 extents a round trip: call again
 * from the end of the last for more. Thread-safe.
 */
int avfs_placement(int fd, uint64_t off, struct avfs_extent *ext, unsigned max);

#ifdef __cplusplus
}
#endif

#endif
