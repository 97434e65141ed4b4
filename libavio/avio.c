/*
 * avio.c — libavio: the client side of proto/proto.h. One connection per process, made on
 * first use and shared by all threads; requests go out as tagged messages and their replies
 * are read by whichever thread waits (no library thread). Buffer memory shared with the
 * daemon through a memfd. It does not schedule, retry or reorder anything: avfsd does.
 */
#include "avio.h"
#include "client.h"
#include "clock.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* aio->__state; anything else (a zeroed struct included) is "never started" */
#define AVIO_ST_IDLE 0
#define AVIO_ST_PENDING 0x41560001
#define AVIO_ST_DONE 0x41560002

#define AVIO_CTRL_TAG (UINT64_C(1) << 63)	/* tags of OPEN, SHM, CANCEL...; HELLO's is 0 */
#define AVIO_SLOT_BITS 16			/* IO tag = seq << 16 | slot */
#define AVIO_STALL_NS ((int64_t)AVFS_PROTO_REPLY_MS * 1000000)	/* a silent daemon is gone */
#define AVIO_SHM_DEFAULT (64u << 20)

enum avio_conn_state {
	CONN_NONE,		/* never connected, or the last attempt failed: try again */
	CONN_UP,
	CONN_DEAD,		/* lost: final; the socket stays open (see __conn_fail) */
};

struct avio_slot {
	uint64_t tag;		/* 0: free */
	avfs_asyncio_t *aio;	/* NULL with a tag: canceled, its reply still due (a zombie) */
	uint8_t op, where;
};

struct avio_file {
	uint64_t dev, ino;
	uint32_t access;	/* AVFS_OPEN_READ | AVFS_OPEN_WRITE */
	uint32_t handle;
};

/* the process's connection; every field is protected by lock */
struct avio_conn {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC; broadcast on completions, reader changes */
	enum avio_conn_state state;
	int sock;		/* used with MSG_DONTWAIT; never closed once UP (a reader may poll it) */
	int evfd;		/* wakes the reader when another thread completed requests */
	bool reader;		/* a thread polls sock without the lock (leader/follower) */
	bool kick;		/* completions since the last __conn_wake() */
	uint64_t seq;
	uint32_t max_io, queue;	/* from HELLO */
	struct avio_slot slots[AVFS_PROTO_QUEUE];
	uint32_t free_slots[AVFS_PROTO_QUEUE];
	uint32_t nfree;
	struct avio_file *files;
	size_t nfiles, files_cap;
	int shm_state;		/* 0 not shared yet, 1 shared, -1 refused: inline copies */
	/* the one control round trip in flight (the lock is held across it) */
	uint64_t ctrl_tag;
	bool ctrl_done;
	uint16_t ctrl_type;
	union avfs_proto_reply ctrl_reply;
	struct avfs_proto_rx rx;	/* the reply being read: one at a time */
};

/* the shared buffer region; protected by lock, except base/size: set once, read lock-free */
struct avio_shm {
	pthread_mutex_t lock;
	int fd;
	uint8_t *base;		/* published last, with release order */
	size_t size, npages;
	uint32_t *run;		/* run[p]: pages of the allocation starting at page p, else 0 */
	uint8_t *used;		/* per page */
};

static struct avio_conn conn = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.sock = -1,
	.evfd = -1,
};
static struct avio_shm shm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};
static pthread_once_t avio_once = PTHREAD_ONCE_INIT;

static void avio_fork_prepare(void)
{
	pthread_mutex_lock(&shm.lock);
	pthread_mutex_lock(&conn.lock);
}

static void avio_fork_parent(void)
{
	pthread_mutex_unlock(&conn.lock);
	pthread_mutex_unlock(&shm.lock);
}

static void __slot_complete(struct avio_conn *c, uint32_t i, int64_t res);

/*
 * The child of fork() starts without a connection: its first request opens its own. Requests
 * its parent had in flight are the parent's; the child's copies of them end with -ECANCELED.
 * The buffer region is a shared mapping: the child shares it again on its new connection.
 */
static void avio_fork_child(void)
{
	pthread_condattr_t attr;
	uint32_t i;

	pthread_mutex_init(&shm.lock, NULL);
	pthread_mutex_init(&conn.lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&conn.cond, &attr);
	pthread_condattr_destroy(&attr);
	for (i = 0; i < AVFS_PROTO_QUEUE; i++)
		if (conn.slots[i].tag)
			__slot_complete(&conn, i, -ECANCELED);
	if (conn.sock >= 0)
		close(conn.sock);
	if (conn.evfd >= 0)
		close(conn.evfd);
	conn.sock = conn.evfd = -1;
	conn.state = CONN_NONE;
	conn.reader = conn.kick = false;
	conn.ctrl_tag = 0;
	conn.ctrl_done = false;
	conn.nfiles = 0;	/* handles belong to the parent's connection */
	conn.shm_state = 0;
	/* the parent allocates from its region still: the child takes a region of its own on
	 * its next avfs_buf_alloc(); buffers it inherited stay mapped and go by copy */
	if (shm.fd >= 0)
		close(shm.fd);
	free(shm.run);
	free(shm.used);
	shm.fd = -1;
	shm.run = NULL;
	shm.used = NULL;
	shm.size = shm.npages = 0;
	shm.base = NULL;
}

static void avio_init(void)
{
	pthread_condattr_t attr;

	pthread_atfork(avio_fork_prepare, avio_fork_parent, avio_fork_child);

	/* a monotonic condition variable: waits end on time even if the wall clock jumps */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&conn.cond, &attr);
	pthread_condattr_destroy(&attr);
}

/* poll(2) milliseconds until `end` (INT64_MAX: forever), rounded up so we never wake early */
static int ms_until(int64_t end)
{
	int64_t left;

	if (end == INT64_MAX)
		return -1;
	left = end - avfs_clock_ns();
	if (left <= 0)
		return 0;
	left = (left + 999999) / 1000000;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static int aio_state(const avfs_asyncio_t *aio)
{
	return __atomic_load_n(&aio->__state, __ATOMIC_ACQUIRE);
}

/* ---- shared buffer region ---- */

static size_t shm_size_from_env(void)
{
	const char *s = getenv("AVFS_SHM_SIZE");
	uint64_t v;

	if (!s || !*s || avfs_parse_size(s, &v) || v < AVFS_PROTO_ALIGN || v > (1ULL << 40))
		return AVIO_SHM_DEFAULT;
	return (size_t)(v / AVFS_PROTO_ALIGN * AVFS_PROTO_ALIGN);
}

/* shm.lock held */
static int __shm_create(void)
{
	size_t size = shm_size_from_env();
	size_t npages = size / AVFS_PROTO_ALIGN;
	uint32_t *run;
	uint8_t *used;
	void *base;
	int fd, err;

	fd = memfd_create("avfs-buffers", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* sealed at its size: the daemon maps it only so (a truncation would pull pages from
	 * under requests in flight) */
	if (ftruncate(fd, (off_t)size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		goto out_close;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto out_close;
	}
	run = calloc(npages, sizeof(*run));
	used = calloc(npages, 1);
	if (!run || !used) {
		err = -ENOMEM;
		goto out_free;
	}
	shm.fd = fd;
	shm.size = size;
	shm.npages = npages;
	shm.run = run;
	shm.used = used;
	__atomic_store_n(&shm.base, (uint8_t *)base, __ATOMIC_RELEASE);
	return 0;

out_free:
	free(run);
	free(used);
	munmap(base, size);
out_close:
	close(fd);
	return err;
}

/* true if [p, p + len) lies in the region at a 4096-aligned offset *off */
static bool shm_lookup(const volatile void *p, size_t len, uint64_t *off)
{
	uint8_t *base = __atomic_load_n(&shm.base, __ATOMIC_ACQUIRE);
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;

	if (!base || a < b || a - b >= shm.size || len > shm.size - (a - b))
		return false;
	*off = a - b;
	return *off % AVFS_PROTO_ALIGN == 0;
}

void *avfs_buf_alloc(size_t len)
{
	size_t pages, p, q;
	void *ret = NULL;
	int err;

	if (!len) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&shm.lock);
	if (!shm.base) {
		err = __shm_create();
		if (err) {
			pthread_mutex_unlock(&shm.lock);
			errno = -err;
			return NULL;
		}
	}
	if (len > shm.size) {
		err = ENOMEM;
		goto out;
	}
	pages = (len + AVFS_PROTO_ALIGN - 1) / AVFS_PROTO_ALIGN;
	/* first fit: buffers are few and long-lived (a stream's ring), so a scan is enough */
	for (p = 0; p + pages <= shm.npages; p = q + 1) {
		for (q = p; q < p + pages && !shm.used[q]; q++)
			;
		if (q == p + pages) {
			memset(shm.used + p, 1, pages);
			shm.run[p] = (uint32_t)pages;
			ret = shm.base + p * AVFS_PROTO_ALIGN;
			break;
		}
	}
	err = ENOMEM;
out:
	pthread_mutex_unlock(&shm.lock);
	if (!ret)
		errno = err;
	return ret;
}

void avfs_buf_free(void *p)
{
	uint64_t off;
	size_t page;

	if (!p || !shm_lookup(p, 1, &off))
		return;
	page = off / AVFS_PROTO_ALIGN;
	pthread_mutex_lock(&shm.lock);
	if (shm.run[page]) {
		memset(shm.used + page, 0, shm.run[page]);
		shm.run[page] = 0;
	}
	pthread_mutex_unlock(&shm.lock);
}

/* ---- completions ---- */

/* completes slot i with res and frees it; the aio must not be touched after the store */
static void __slot_complete(struct avio_conn *c, uint32_t i, int64_t res)
{
	struct avio_slot *s = &c->slots[i];
	avfs_asyncio_t *aio = s->aio;

	if (aio) {
		aio->aio_ret = (ssize_t)res;
		__atomic_store_n(&aio->__state, AVIO_ST_DONE, __ATOMIC_RELEASE);
	}
	s->aio = NULL;
	s->tag = 0;
	c->free_slots[c->nfree++] = i;
	c->kick = true;
}

static struct avio_slot *__slot_find(struct avio_conn *c, uint64_t tag, uint32_t *idx)
{
	uint32_t i = (uint32_t)(tag & ((1u << AVIO_SLOT_BITS) - 1));

	if ((tag & AVIO_CTRL_TAG) || i >= AVFS_PROTO_QUEUE || !tag || c->slots[i].tag != tag)
		return NULL;
	*idx = i;
	return &c->slots[i];
}

/* wakes waiters after completions: followers on the condition, the reader through evfd */
static void __conn_wake(struct avio_conn *c)
{
	uint64_t one = 1;

	if (!c->kick)
		return;
	c->kick = false;
	pthread_cond_broadcast(&c->cond);
	if (c->reader && write(c->evfd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the reader is awake anyway */
	}
}

/*
 * The connection is lost (EOF, socket error, malformed reply, stalled daemon): every request
 * in flight completes with -ENOTCONN and the state is final. The socket is shut down but not
 * closed, so that a thread polling it wakes (POLLHUP) and no reused descriptor is polled.
 */
static void __conn_fail(struct avio_conn *c)
{
	uint32_t i;

	if (c->state == CONN_DEAD || c->state == CONN_NONE)
		return;
	for (i = 0; i < AVFS_PROTO_QUEUE; i++)
		if (c->slots[i].tag)
			__slot_complete(c, i, -ENOTCONN);
	c->ctrl_done = true;
	c->ctrl_tag = 0;
	c->state = CONN_DEAD;
	shutdown(c->sock, SHUT_RDWR);
	c->kick = true;
	__conn_wake(c);
}

/* ---- replies ---- */

/*
 * A reply's head (header and fixed struct) is in c->rx: an inline read's data goes straight
 * into its buffer, and nothing else may carry data. -EPROTO: the reply does not fit its
 * request. Replies of no request in flight (a canceled one's, control replies) are read whole.
 */
static int __rx_head(struct avio_conn *c)
{
	struct avfs_proto_rx *rx = &c->rx;
	int64_t res = rx->fixed.io.res;
	struct avio_slot *s;
	uint32_t idx;

	if (rx->type != AVFS_MSG_IO || !(s = __slot_find(c, rx->hdr.tag, &idx)) || !s->aio)
		return 0;
	if (res > (int64_t)s->aio->aio_nbytes)
		return -EPROTO;
	/* an inline read carries exactly res bytes; nothing else carries data */
	if (s->op == AVFS_IO_READ && s->where == AVFS_IO_INLINE && res > 0) {
		if (rx->rest != (size_t)res)
			return -EPROTO;
		rx->dst = (void *)(uintptr_t)s->aio->aio_buf;
	} else if (rx->rest) {
		return -EPROTO;
	}
	return 0;
}

/* the whole reply is in: complete its request or its control round trip */
static int __rx_done(struct avio_conn *c)
{
	struct avfs_proto_rx *rx = &c->rx;
	uint32_t idx;

	if (rx->type == AVFS_MSG_IO) {
		if (__slot_find(c, rx->hdr.tag, &idx))
			__slot_complete(c, idx, rx->fixed.io.res);
	} else if (c->ctrl_tag && rx->hdr.tag == c->ctrl_tag) {
		if (rx->type != c->ctrl_type)
			return -EPROTO;
		c->ctrl_reply = rx->fixed;
		c->ctrl_done = true;
	}
	/* any other reply (an unknown tag, a stale round trip) is dropped */
	return 0;
}

/*
 * Reads and dispatches every reply the socket holds, never blocking (proto/client.c parses
 * and validates; a read's data goes straight from the socket into its buffer when nothing of
 * it is buffered). Returns 0, or -ENOTCONN when the connection was lost (then every request
 * has completed).
 */
static int __conn_drain(struct avio_conn *c)
{
	int ev;

	if (c->state != CONN_UP)
		return -ENOTCONN;
	for (;;) {
		ev = avfs_proto_rx_next(c->sock, &c->rx);
		if (ev == AVFS_PROTO_RX_FIXED)
			ev = __rx_head(c);
		else if (ev == AVFS_PROTO_RX_DONE)
			ev = __rx_done(c);
		if (ev == -EAGAIN)
			break;
		if (ev) {	/* -EPROTO, EOF or a socket error: the daemon is gone to us */
			__conn_fail(c);
			return -ENOTCONN;
		}
	}
	__conn_wake(c);
	return 0;
}

/*
 * Sends one message whole (the lock keeps messages from interleaving). While the socket is
 * full it keeps reading replies, so that a daemon blocked on writing to us never deadlocks
 * with us blocked on writing to it. fd >= 0 goes along as SCM_RIGHTS.
 */
static int __send_msg(struct avio_conn *c, uint16_t type, uint64_t tag, const void *msg,
		      size_t len, const volatile void *data, size_t dlen, int fd)
{
	int64_t stall = avfs_clock_ns() + AVIO_STALL_NS;
	struct avfs_proto_tx tx;
	struct pollfd pfd;
	size_t left;
	int err;

	err = avfs_proto_tx_init(&tx, type, tag, msg, len, data, dlen, fd);
	if (err)
		return err;	/* not reached: requests are checked against AVFS_PROTO_MAX_IO */
	for (;;) {
		left = tx.left;
		err = avfs_proto_tx_send(c->sock, &tx);
		if (!err)
			return 0;
		if (err != -EAGAIN)
			break;
		if (tx.left < left)
			stall = avfs_clock_ns() + AVIO_STALL_NS;	/* it reads: progress */
		pfd = (struct pollfd){ .fd = c->sock, .events = POLLIN | POLLOUT };
		if (poll(&pfd, 1, ms_until(stall)) == 0)
			break;	/* the daemon neither reads nor writes: treat it as gone */
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			err = __conn_drain(c);
			if (err)
				return err;
		}
	}
	__conn_fail(c);
	return -ENOTCONN;
}

/*
 * One control round trip (OPEN, SHM, CANCEL, RESERVE...) with the lock held throughout; IO
 * replies that arrive meanwhile complete their requests. msg is followed by data (dlen bytes,
 * may be NULL); reply gets the reply's fixed struct.
 */
static int __ctrl_call(struct avio_conn *c, uint16_t type, const void *msg, size_t len,
		       const void *data, size_t dlen, int fd, void *reply, size_t rlen)
{
	int64_t stall;
	struct pollfd pfd;
	int err;

	c->ctrl_tag = AVIO_CTRL_TAG | ++c->seq;
	c->ctrl_type = type;
	c->ctrl_done = false;
	err = __send_msg(c, type, c->ctrl_tag, msg, len, data, dlen, fd);
	if (err)
		return err;
	stall = avfs_clock_ns() + AVIO_STALL_NS;
	for (;;) {
		err = __conn_drain(c);
		if (err)
			return err;
		if (c->ctrl_done)
			break;
		pfd.fd = c->sock;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, ms_until(stall)) == 0) {
			__conn_fail(c);
			return -ENOTCONN;
		}
	}
	c->ctrl_tag = 0;
	memcpy(reply, &c->ctrl_reply, rlen);
	return 0;
}

/*
 * Connects to the socket named by AVFS_SOCKET, else by the mount of fd, and says HELLO; a
 * failed attempt leaves CONN_NONE so that a later call retries. A daemon that is not there
 * or does not answer is -ENOTCONN; one that speaks another version -EPROTO.
 */
static int __conn_open(struct avio_conn *c, int fd)
{
	const char *path = getenv("AVFS_SOCKET");
	char xattr[AVFS_PROTO_PATH_MAX];
	struct avfs_msg_hello_reply r;
	uint32_t i;
	int s, err;

	if (!path || !*path) {
		if (avfs_proto_socket_fd(fd, xattr, sizeof(xattr)))
			return -EBADF;	/* ENODATA, ENOTSUP...: not a file of an AVFS mount */
		path = xattr;
	}
	s = avfs_proto_connect(path, &c->rx, &r, AVFS_PROTO_REPLY_MS);
	if (s == -EPROTO || s == -EMFILE || s == -ENFILE || s == -ENOMEM || s == -ENOBUFS)
		return s;	/* another version, or out of descriptors or memory */
	if (s < 0)
		return -ENOTCONN;	/* no daemon there, or it did not answer */
	c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->evfd < 0) {
		err = -errno;
		close(s);
		return err;
	}
	c->sock = s;
	c->max_io = r.max_io && r.max_io < AVFS_PROTO_MAX_IO ? r.max_io : AVFS_PROTO_MAX_IO;
	c->queue = r.queue && r.queue < AVFS_PROTO_QUEUE ? r.queue : AVFS_PROTO_QUEUE;
	c->nfree = 0;
	for (i = c->queue; i-- > 0;)	/* pop order: slot 0 first */
		c->free_slots[c->nfree++] = i;
	c->shm_state = 0;
	c->state = CONN_UP;
	return 0;
}

/*
 * OPEN_PATH: fd's path as the kernel names it, for the daemon to walk with this process's
 * credentials (search permission on each directory). 0 and *r, or -ENOENT when fd has no path
 * the daemon could walk (deleted, or none), or the round trip's -errno.
 */
static int __open_path(struct avio_conn *c, int fd, const struct stat *st, uint32_t access,
		       struct avfs_msg_open_reply *r)
{
	struct avfs_msg_open_path m = { .dev = st->st_dev, .ino = st->st_ino, .access = access };
	char proc[64], path[AVFS_PROTO_PATH_LEN + 1];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, path, sizeof(path));
	if (n <= 0 || n > (ssize_t)AVFS_PROTO_PATH_LEN || path[0] != '/')
		return -ENOENT;
	return __ctrl_call(c, AVFS_MSG_OPEN_PATH, &m, sizeof(m), path, (size_t)n, -1, r,
			   sizeof(*r));
}

/* the daemon's handle of (dev, ino) for this access, asked once and cached: by the path of fd
 * (the daemon checks the directories on the way), else by inode (root's alone) */
static int __file_handle(struct avio_conn *c, int fd, const struct stat *st, uint32_t access,
			 uint32_t *handle)
{
	struct avfs_msg_open m = { .dev = st->st_dev, .ino = st->st_ino, .access = access };
	struct avfs_msg_open_reply r;
	struct avio_file *f;
	size_t i;
	int err, by_path;

	for (i = 0; i < c->nfiles; i++) {
		f = &c->files[i];
		if (f->dev == m.dev && f->ino == m.ino && f->access == access) {
			*handle = f->handle;
			return 0;
		}
	}
	if (c->nfiles == c->files_cap) {
		size_t cap = c->files_cap ? 2 * c->files_cap : 16;

		f = realloc(c->files, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		c->files = f;
		c->files_cap = cap;
	}
	by_path = __open_path(c, fd, st, access, &r);
	if (by_path && by_path != -ENOENT)
		return by_path;
	if (by_path || r.res == -ENOENT || r.res == -EXDEV) {
		/* no path to walk, or not this one (deleted and made again, another mount
		 * namespace): by inode, which the daemon grants to root alone */
		int32_t path_res = by_path ? -ENOENT : r.res;

		err = __ctrl_call(c, AVFS_MSG_OPEN, &m, sizeof(m), NULL, 0, -1, &r, sizeof(r));
		if (err)
			return err;
		if (r.res == -EPERM)
			r.res = path_res;
	}
	if (r.res == -EXDEV || r.res == -ENOENT || r.res == -ESTALE)
		return -EBADF;	/* not a file of the daemon's mount */
	if (r.res == -EPERM)
		return -EACCES;
	if (r.res < 0)
		return r.res;
	c->files[c->nfiles++] = (struct avio_file){ m.dev, m.ino, access, r.handle };
	*handle = r.handle;
	return 0;
}

/* gives the daemon the buffer region once; if it refuses, requests fall back to copies */
static int __shm_share(struct avio_conn *c)
{
	struct avfs_msg_shm m = { .size = shm.size };
	struct avfs_msg_shm_reply r;
	int err;

	if (c->shm_state)
		return 0;
	err = __ctrl_call(c, AVFS_MSG_SHM, &m, sizeof(m), NULL, 0, shm.fd, &r, sizeof(r));
	if (err)
		return err;
	c->shm_state = r.res == 0 ? 1 : -1;
	return 0;
}

static int __conn_get(struct avio_conn *c, int fd)
{
	if (c->state == CONN_UP)
		return 0;
	if (c->state == CONN_DEAD)
		return -ENOTCONN;
	return __conn_open(c, fd);
}

static int __start(struct avio_conn *c, avfs_asyncio_t *aio, int op, const struct stat *st,
		   uint32_t access)
{
	struct avfs_msg_io m = {
		.op = op == AVFS_WRITE ? AVFS_IO_WRITE : AVFS_IO_READ,
		.where = AVFS_IO_INLINE,
		.offset = (uint64_t)aio->aio_offset,
		.nbytes = aio->aio_nbytes,
		.deadline = aio->aio_deadline,
	};
	struct avio_slot *s;
	uint64_t off;
	uint32_t i;
	int err;

	err = __conn_get(c, aio->aio_fildes);
	if (err)
		return err;
	if (aio->aio_nbytes > c->max_io)
		return -EINVAL;
	err = __file_handle(c, aio->aio_fildes, st, access, &m.handle);
	if (err)
		return err;
	if (shm_lookup(aio->aio_buf, aio->aio_nbytes, &off)) {
		err = __shm_share(c);
		if (err)
			return err;
		if (c->shm_state > 0) {
			m.where = AVFS_IO_SHM;
			m.shm_off = off;
		}
	}
	/* again: connecting or opening may have taken the last of the time */
	if (aio->aio_deadline && aio->aio_deadline <= avfs_clock_ns())
		return -ETIME;
	if (!c->nfree)	/* replies not read yet may free slots (a canceled request's, say) */
		__conn_drain(c);
	if (c->state != CONN_UP)
		return -ENOTCONN;
	if (!c->nfree)
		return -EAGAIN;
	i = c->free_slots[--c->nfree];
	s = &c->slots[i];
	s->tag = (++c->seq << AVIO_SLOT_BITS) | i;
	s->aio = aio;
	s->op = m.op;
	s->where = m.where;
	aio->__tag = s->tag;
	aio->aio_ret = -EINPROGRESS;
	__atomic_store_n(&aio->__state, AVIO_ST_PENDING, __ATOMIC_RELEASE);
	if (m.op == AVFS_IO_WRITE && m.where == AVFS_IO_INLINE)
		return __send_msg(c, AVFS_MSG_IO, s->tag, &m, sizeof(m), aio->aio_buf,
				  aio->aio_nbytes, -1);
	return __send_msg(c, AVFS_MSG_IO, s->tag, &m, sizeof(m), NULL, 0, -1);
}

/* fd's file and the access it was opened with, which must allow op: 0 or -EBADF */
static int fd_access(int fd, int op, struct stat *st, uint32_t *access)
{
	int fl;

	if (fstat(fd, st) || !S_ISREG(st->st_mode))
		return -EBADF;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH))
		return -EBADF;
	switch (fl & O_ACCMODE) {
	case O_RDONLY: *access = AVFS_OPEN_READ; break;
	case O_WRONLY: *access = AVFS_OPEN_WRITE; break;
	case O_RDWR: *access = AVFS_OPEN_READ | AVFS_OPEN_WRITE; break;
	default: return -EBADF;
	}
	if (op >= 0 && !(*access & (op == AVFS_READ ? AVFS_OPEN_READ : AVFS_OPEN_WRITE)))
		return -EBADF;
	return 0;
}

int avfs_asyncio_start(avfs_asyncio_t *aio, int op)
{
	struct avio_conn *c = &conn;
	struct stat st;
	uint32_t access;
	int err;

	if (!aio || !aio->aio_buf || (op != AVFS_READ && op != AVFS_WRITE) ||
	    aio->aio_offset < 0 || aio->aio_offset % AVFS_PROTO_ALIGN ||
	    !aio->aio_nbytes || aio->aio_nbytes > AVFS_PROTO_MAX_IO ||
	    aio->aio_nbytes % AVFS_PROTO_ALIGN || aio->aio_deadline < 0)
		return -EINVAL;
	if (aio_state(aio) == AVIO_ST_PENDING)
		return -EBUSY;
	err = fd_access(aio->aio_fildes, op, &st, &access);
	if (err)
		return err;
	/* a deadline already past, or beyond the daemon's horizon, is refused before anything
	 * is sent (or connected) */
	if (aio->aio_deadline) {
		int64_t now = avfs_clock_ns();

		if (aio->aio_deadline <= now)
			return -ETIME;
		if (aio->aio_deadline - now > AVFS_PROTO_HORIZON_NS)
			return -ERANGE;
	}

	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&c->lock);
	err = __start(c, aio, op, &st, access);
	if (err)	/* not started, even if a lost connection had completed it meanwhile */
		__atomic_store_n(&aio->__state, AVIO_ST_IDLE, __ATOMIC_RELEASE);
	__conn_wake(c);
	pthread_mutex_unlock(&c->lock);
	return err;
}

static int count_done(avfs_asyncio_t *const list[], int n)
{
	int i, done = 0;

	for (i = 0; i < n; i++)
		if (list[i] && aio_state(list[i]) == AVIO_ST_DONE)
			done++;
	return done;
}

/*
 * Waits (lock held, released while blocked) until one of list is complete or timeout_ms has
 * passed; returns how many are complete. Leader/follower: one thread at a time, the reader,
 * polls the socket without the lock; the others sleep on the condition variable. Whoever
 * completes requests wakes them all (and the reader through evfd), each checks its own.
 */
static int __wait(struct avio_conn *c, avfs_asyncio_t *const list[], int n, int timeout_ms)
{
	int64_t end = timeout_ms < 0 ? INT64_MAX : avfs_clock_ns() + (int64_t)timeout_ms * 1000000;
	struct pollfd pfd[2];
	struct timespec ts;
	uint64_t v;
	int done;

	for (;;) {
		__conn_drain(c);	/* a lost connection completes everything: seen below */
		done = count_done(list, n);
		if (done || avfs_clock_ns() >= end)
			return done;
		if (c->state != CONN_UP)
			return -ENOTCONN;	/* not reached: no request outlives its connection */
		if (!c->reader) {
			c->reader = true;
			pthread_mutex_unlock(&c->lock);
			pfd[0] = (struct pollfd){ .fd = c->sock, .events = POLLIN };
			pfd[1] = (struct pollfd){ .fd = c->evfd, .events = POLLIN };
			poll(pfd, 2, ms_until(end));
			pthread_mutex_lock(&c->lock);
			c->reader = false;
			if ((pfd[1].revents & POLLIN) && read(c->evfd, &v, sizeof(v)) < 0) {
				/* EAGAIN: another reader took the count */
			}
			pthread_cond_broadcast(&c->cond);	/* someone else may lead now */
		} else if (end == INT64_MAX) {
			pthread_cond_wait(&c->cond, &c->lock);
		} else {
			ts.tv_sec = end / 1000000000;
			ts.tv_nsec = end % 1000000000;
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		}
	}
}

int avfs_asyncio_check(avfs_asyncio_t *aio, int mode)
{
	struct avio_conn *c = &conn;
	avfs_asyncio_t *const list[1] = { aio };
	int st, done;

	if (!aio || (mode != AVFS_WAIT && mode != AVFS_NOWAIT))
		return -EINVAL;
	st = aio_state(aio);
	if (st == AVIO_ST_DONE)
		return 0;
	if (st != AVIO_ST_PENDING)
		return -EINVAL;
	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&c->lock);
	done = __wait(c, list, 1, mode == AVFS_NOWAIT ? 0 : -1);
	__conn_wake(c);
	pthread_mutex_unlock(&c->lock);
	if (done < 0)
		return done;
	return done ? 0 : -EINPROGRESS;
}

int avfs_asyncio_poll(avfs_asyncio_t *const list[], int n, int timeout_ms)
{
	struct avio_conn *c = &conn;
	int i, st, done = 0, pending = 0;

	if (n < 0 || (n > 0 && !list))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!list[i])
			continue;
		st = aio_state(list[i]);
		if (st == AVIO_ST_DONE)
			done++;
		else if (st == AVIO_ST_PENDING)
			pending++;
		else
			return -EINVAL;
	}
	if (!pending)
		return done;
	/* even with some complete: take the replies waiting, so the count is today's */
	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&c->lock);
	done = __wait(c, list, n, timeout_ms);
	__conn_wake(c);
	pthread_mutex_unlock(&c->lock);
	return done;
}

int avfs_asyncio_cancel(avfs_asyncio_t *aio)
{
	struct avio_conn *c = &conn;
	struct avfs_msg_cancel_reply r;
	struct avfs_msg_cancel m;
	struct avio_slot *s;
	uint32_t idx;
	int st, ret;

	if (!aio)
		return -EINVAL;
	st = aio_state(aio);
	if (st == AVIO_ST_DONE)
		return AVFS_ALLDONE;
	if (st != AVIO_ST_PENDING)
		return -EINVAL;
	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&c->lock);
	if (aio_state(aio) == AVIO_ST_DONE) {
		ret = AVFS_ALLDONE;
		goto out;
	}
	m.target = aio->__tag;
	ret = __ctrl_call(c, AVFS_MSG_CANCEL, &m, sizeof(m), NULL, 0, -1, &r, sizeof(r));
	if (ret) {
		/* the connection is lost: the request has completed with -ENOTCONN */
		ret = aio_state(aio) == AVIO_ST_DONE ? AVFS_ALLDONE : ret;
		goto out;
	}
	switch (r.res) {
	case AVFS_CANCEL_DONE:
		/*
		 * Complete it now, as aio_cancel does; its slot stays taken (a zombie) until the
		 * daemon's -ECANCELED reply, which may come before or after this one, frees it.
		 */
		s = __slot_find(c, m.target, &idx);
		if (s && s->aio == aio) {
			aio->aio_ret = -ECANCELED;
			__atomic_store_n(&aio->__state, AVIO_ST_DONE, __ATOMIC_RELEASE);
			s->aio = NULL;
			c->kick = true;
		}
		ret = AVFS_CANCELED;
		break;
	case AVFS_CANCEL_BUSY:
		ret = AVFS_NOTCANCELED;
		break;
	case AVFS_CANCEL_GONE:
		/* its reply precedes this one on the socket; if not, it is still coming */
		ret = aio_state(aio) == AVIO_ST_DONE ? AVFS_ALLDONE : AVFS_NOTCANCELED;
		break;
	default:
		ret = r.res < 0 ? r.res : -EPROTO;
		break;
	}
out:
	__conn_wake(c);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int avfs_completion_fd(void)
{
	struct avio_conn *c = &conn;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = c->state == CONN_UP ? c->sock : -ENOTCONN;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* the daemon's handle of fd, as its requests name it (op: the access that must be there) */
static int __handle_of(struct avio_conn *c, int fd, int op, uint32_t *handle)
{
	struct stat st;
	uint32_t access;
	int err = fd_access(fd, op, &st, &access);

	if (!err)
		err = __conn_get(c, fd);
	if (!err)
		err = __file_handle(c, fd, &st, access, handle);
	return err;
}

/*
 * A round trip about fd's file (RESERVE, RELEASE, STATS): the handle of fd (op: the access
 * that must be there, -1 any) into *handle, a field of msg, then the call; the reply into *r.
 */
static int file_call(int fd, int op, uint16_t type, void *msg, size_t len, uint32_t *handle,
		     union avfs_proto_reply *r)
{
	struct avio_conn *c = &conn;
	int err;

	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&c->lock);
	err = __handle_of(c, fd, op, handle);
	if (!err)
		err = __ctrl_call(c, type, msg, len, NULL, 0, -1, r, sizeof(*r));
	__conn_wake(c);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int avfs_reserve(int fd, const struct avfs_service *svc)
{
	return avfs_reserve_io(fd, svc, 0);
}

int avfs_reserve_io(int fd, const struct avfs_service *svc, uint32_t io)
{
	struct avfs_msg_reserve m = { 0 };
	union avfs_proto_reply r;
	int err;

	if (!svc || (svc->direction != AVFS_READ && svc->direction != AVFS_WRITE) ||
	    !svc->rate || !svc->buffer || io % 4096 || (io && io >= svc->buffer))
		return -EINVAL;
	m.rate = svc->rate;
	m.buffer = svc->buffer;
	m.io = io;
	m.write = svc->direction == AVFS_WRITE;
	err = file_call(fd, svc->direction, AVFS_MSG_RESERVE, &m, sizeof(m), &m.handle, &r);
	return err ? err : r.reserve.res;
}

int avfs_release(int fd)
{
	struct avfs_msg_release m = { 0 };
	union avfs_proto_reply r;
	int err;

	err = file_call(fd, -1, AVFS_MSG_RELEASE, &m, sizeof(m), &m.handle, &r);
	return err ? err : r.release.res;
}

int64_t avfs_reserve_detached(int fd, const struct avfs_service *svc, int64_t uid)
{
	struct avio_conn *c = &conn;
	struct avfs_msg_reserve m = { .flags = AVFS_RESERVE_DETACHED };
	struct avfs_msg_open_reply o;
	union avfs_proto_reply r;
	struct stat st;
	uint32_t access;
	int err;

	if (!svc || (svc->direction != AVFS_READ && svc->direction != AVFS_WRITE) ||
	    !svc->rate || !svc->buffer || uid < -1 || uid >= UINT32_MAX)
		return -EINVAL;
	if (fstat(fd, &st) || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
		return -EBADF;
	/* the daemon checks the access asked against the file's or directory's modes, as the
	 * mount would, whatever fd was opened for */
	access = (svc->direction == AVFS_WRITE ? AVFS_OPEN_WRITE : AVFS_OPEN_READ) |
		 (S_ISDIR(st.st_mode) ? AVFS_OPEN_DIR : 0);
	m.rate = svc->rate;
	m.buffer = svc->buffer;
	m.write = svc->direction == AVFS_WRITE;
	if (uid >= 0) {
		m.flags |= AVFS_RESERVE_UID;
		m.uid = (uint32_t)uid;
	}
	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&c->lock);
	err = __conn_get(c, fd);
	if (!err)	/* by its path only: a handle for this call, not cached */
		err = __open_path(c, fd, &st, access, &o);
	if (!err && o.res)
		err = o.res == -EXDEV || o.res == -ENOENT ? -EBADF : o.res;
	if (!err) {
		m.handle = o.handle;
		err = __ctrl_call(c, AVFS_MSG_RESERVE, &m, sizeof(m), NULL, 0, -1, &r,
				  sizeof(r));
	}
	__conn_wake(c);
	pthread_mutex_unlock(&c->lock);
	if (err)
		return err;
	return r.reserve.res ? r.reserve.res : (int64_t)r.reserve.id;
}

int avfs_release_detached(int fd, uint64_t id)
{
	struct avio_conn *c = &conn;
	struct avfs_msg_release m = { .handle = AVFS_RELEASE_BY_ID, .id = id };
	union avfs_proto_reply r;
	int err;

	if (!id)
		return -EINVAL;
	pthread_once(&avio_once, avio_init);
	pthread_mutex_lock(&c->lock);
	err = __conn_get(c, fd);
	if (!err)
		err = __ctrl_call(c, AVFS_MSG_RELEASE, &m, sizeof(m), NULL, 0, -1, &r, sizeof(r));
	__conn_wake(c);
	pthread_mutex_unlock(&c->lock);
	return err ? err : r.release.res;
}

int avfs_placement(int fd, uint64_t off, struct avfs_extent *ext, unsigned max)
{
	struct avfs_msg_place m = { .offset = off };
	union avfs_proto_reply r;
	unsigned n;
	int err;

	if (!ext && max)
		return -EINVAL;
	err = file_call(fd, AVFS_READ, AVFS_MSG_PLACE, &m, sizeof(m), &m.handle, &r);
	if (!err)
		err = r.place.res;
	if (err)
		return err;
	n = r.place.count < AVFS_PLACE_MAX ? r.place.count : AVFS_PLACE_MAX;
	if (n > max)
		n = max;
	for (unsigned i = 0; i < n; i++)
		ext[i] = (struct avfs_extent){ r.place.ext[i].file_off, r.place.ext[i].dev_off,
					       r.place.ext[i].len };
	return (int)n;
}

int avfs_stream_stats(int fd, struct avfs_stream_stats *st)
{
	struct avfs_msg_stats m = { 0 };
	union avfs_proto_reply r;
	int err;

	if (!st)
		return -EINVAL;
	err = file_call(fd, -1, AVFS_MSG_STATS, &m, sizeof(m), &m.handle, &r);
	if (!err)
		err = r.stats.res;
	if (err)
		return err;
	memset(st, 0, sizeof(*st));
	st->requests = r.stats.requests;
	st->deadline_misses = r.stats.misses;
	st->bytes = r.stats.bytes;
	st->margin_min_ns = r.stats.margin_min_ns;
	return 0;
}
