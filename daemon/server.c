/*
 * server.c — the server side of the wire protocol (proto/proto.h) for libavio and avfs-admin.
 * A client is a connection with its credentials (SO_PEERCRED, SO_PEERGROUPS), its handles, its
 * requests in the engine and its buffers; messages are checked against one table of {type,
 * size, handler}; a client that sends garbage, never reads its replies, leaves a message
 * half-sent or exhausts its memory is dropped alone. What clients make the daemon hold is
 * counted per client and in total against struct avfs_server_limits. A descriptor a client
 * sends is never stat'ed before it is known to be a sealed memfd (one on avfsd's own mount
 * would make the daemon wait for itself) and is closed by the closer thread. I/O,
 * reservations and cancels go to the engine; the data path is the engine's (fileio.c), the
 * bandwidth class too (bwclass.c).
 */
#include "server.h"

#include "admin.h"
#include "closer.h"
#include "format.h"	/* AVFS_ROOT_INO */
#include "fs.h"
#include "log.h"
#include "loop.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

#define NS 1000000000ll
#define MAX_CLIENTS 1024
#define ROOT_SLOTS 32			/* the last client slots: root's alone */
#define CLIENT_OUT_MAX (64u << 20)	/* unread replies: beyond, stop reading its requests */
#define STALL_NS (3 * NS)		/* throttled, replies unread this long: not reading */
#define PARTIAL_NS (5 * NS)		/* a message begun this long ago and not whole: dropped */
#define IN_MIN (64u << 10)		/* the input buffer between large messages */
#define OUT_KEEP (1u << 20)		/* an output buffer larger than this goes once drained */
#define MAX_PASSED_FDS 253		/* SCM_MAX_FD: descriptors one message may carry */
#define TRACE_FLUSH (64u << 10)

struct handle {
	uint64_t ino;
	uint32_t access;	/* AVFS_OPEN_READ | AVFS_OPEN_WRITE */
	uint64_t stream;	/* its reservation, 0 none */
};

struct cio;

struct client {
	struct avfs_server *s;
	int fd;
	int win, wout;		/* loop watches: requests in, replies out */
	uint32_t uid, gid, pid;
	gid_t *groups;		/* supplementary groups (SO_PEERGROUPS at connect) */
	int ngroups;
	bool admin;		/* root, or of the admin group: sees every reservation in full */
	bool dead;
	int refs;		/* the connection, and each request still in the engine */
	unsigned inflight;
	uint8_t *in;		/* received bytes */
	size_t inlen, incap;
	uint8_t *out;		/* replies not yet sent */
	size_t outlen, outoff, outcap;
	bool throttled;		/* not reading requests until its replies drain */
	bool paused;		/* not reading: the daemon's memory bound (resumed by the tick) */
	int64_t stalled_since;	/* its replies last moved */
	int64_t partial_since;	/* a message began and is not whole yet; 0: none */
	uint64_t mem;		/* bytes it makes the daemon hold: in, out, copies */
	int passed_fd;		/* a descriptor sent with its bytes, for SHM; -1 none */
	uint8_t *shm;		/* the client's memfd, mapped */
	size_t shmlen;
	unsigned shm_users;	/* its requests in the engine that work in shm */
	struct handle *handles;
	uint32_t nhandles;
	struct cio *ios;	/* its requests in the engine */
	uint64_t trace_tag;	/* avfs-admin trace: its request, 0 none */
	int64_t trace_until;
};

struct cio {			/* one libavio request */
	struct avfs_fio f;	/* the engine's request */
	struct client *c;
	uint64_t tag;
	uint8_t *data;		/* a bounce (inline data) or NULL (shm) */
	uint64_t nbytes;	/* of data: counted in the client's memory */
	struct cio *next;
};

struct avfs_server {
	struct avfs_server_conf c;
	struct avfs_server_limits lim;
	struct avfsd_closer *closer;	/* closes what clients sent (closer.h) */
	char *mnt;		/* the mount point, canonical: OPEN_PATH's paths start with it */
	uint64_t mem;		/* what all clients make the daemon hold (client.mem summed) */
	uint64_t refused;	/* connections refused since the last line about it */
	int64_t refused_logged;	/* when that line was written */
	struct avfs_loop *l;
	struct avfs_engine *e;
	struct avfs_fs *fs;
	int fd;
	int wlisten;
	char path[108];
	int64_t now;		/* the current iteration's time */
	struct client *clients[MAX_CLIENTS];
	size_t nclients;	/* slots in use up to here */
	char *trace_buf;	/* CSV lines not yet sent to the tracing clients */
	size_t trace_len, trace_cap;
};

static void client_drop(struct client *c, const char *why);
static void client_flush(struct client *c);

/* unread replies beyond which a client's requests wait (a quarter of its memory, at most
 * CLIENT_OUT_MAX: it is throttled long before its bound drops it) */
static size_t out_max(const struct avfs_server *s)
{
	return s->lim.client_mem / 4 < CLIENT_OUT_MAX ? s->lim.client_mem / 4 : CLIENT_OUT_MAX;
}

/* delta bytes more (or fewer) held for c */
static void mem_charge(struct client *c, int64_t delta)
{
	c->mem += (uint64_t)delta;
	c->s->mem += (uint64_t)delta;
}

/* ---- replies ---- */

static void send_reply(struct client *c, uint16_t type, uint64_t tag, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	struct avfs_msg_hdr h = { .magic = AVFS_PROTO_MAGIC, .type = type | AVFS_MSG_REPLY,
				  .len = (uint32_t)(alen + blen), .tag = tag };
	struct avfs_server *s = c->s;
	size_t need;

	if (c->dead)
		return;
	if (c->outlen == c->outoff)
		c->stalled_since = s->now;	/* the clock of "not reading" starts now */
	if (c->outoff && c->outlen + sizeof(h) + alen + blen > c->outcap) {
		/* what was sent goes first: the buffer holds unread replies only */
		memmove(c->out, c->out + c->outoff, c->outlen - c->outoff);
		c->outlen -= c->outoff;
		c->outoff = 0;
	}
	need = c->outlen + sizeof(h) + alen + blen;
	if (need > c->outcap) {
		size_t cap = c->outcap ? c->outcap : 65536;
		uint8_t *o;

		while (cap < need && cap < OUT_KEEP)
			cap *= 2;
		if (cap < need)	/* large: by the MiB, not doubled */
			cap = (need + OUT_KEEP - 1) / OUT_KEEP * OUT_KEEP;
		/* the data of admitted reads was counted as they were issued and moves here:
		 * what rounding the buffer adds may pass the bound by as much */
		if (c->mem + (cap - c->outcap) > s->lim.client_mem + 2 * OUT_KEEP) {
			client_drop(c, "its unread replies exceed its memory bound");
			return;
		}
		o = realloc(c->out, cap);
		if (!o) {
			client_drop(c, "out of memory");
			return;
		}
		mem_charge(c, (int64_t)(cap - c->outcap));
		c->out = o;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, &h, sizeof(h));
	memcpy(c->out + c->outlen + sizeof(h), a, alen);
	if (blen)
		memcpy(c->out + c->outlen + sizeof(h) + alen, b, blen);
	c->outlen += sizeof(h) + alen + blen;
	if (!c->throttled && (c->outlen - c->outoff > out_max(s) || s->mem > s->lim.server_mem)) {
		c->throttled = true;	/* stop taking its requests until it reads */
		c->stalled_since = s->now;
	}
	client_flush(c);
}

static void client_flush(struct client *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			avfs_loop_arm(c->s->l, c->wout, POLLOUT);
			return;
		}
		if (n <= 0) {
			client_drop(c, "send failed");
			return;
		}
		c->outoff += (size_t)n;
		c->stalled_since = c->s->now;	/* it reads: progress */
	}
	c->outoff = c->outlen = 0;
	if (c->outcap > OUT_KEEP) {	/* a burst is over: its memory goes back */
		mem_charge(c, -(int64_t)c->outcap);
		free(c->out);
		c->out = NULL;
		c->outcap = 0;
	}
	if (c->throttled) {	/* backpressure released: read its requests again */
		c->throttled = false;
		if (c->partial_since)
			c->partial_since = c->s->now;	/* its half-sent message waited for us */
		if (!c->paused)
			avfs_loop_arm(c->s->l, c->win, POLLIN);
	}
}

/* ---- the life of a client ---- */

static void client_free(struct client *c)
{
	if (c->shm)
		munmap(c->shm, c->shmlen);
	c->s->mem -= c->mem;
	free(c->in);
	free(c->out);
	free(c->handles);
	free(c->groups);
	free(c);
}

static void client_unref(struct client *c)
{
	struct avfs_server *s = c->s;

	if (--c->refs > 0)
		return;
	for (size_t i = 0; i < s->nclients; i++)
		if (s->clients[i] == c)
			s->clients[i] = NULL;
	client_free(c);
}

static void client_close(struct client *c)
{
	avfs_loop_del(c->s->l, c->win);
	avfs_loop_del(c->s->l, c->wout);
	/* shutdown first: a poll still armed on the socket holds it open, and the peer must
	 * see the end of the connection now */
	shutdown(c->fd, SHUT_RDWR);
	close(c->fd);
	c->fd = -1;
	avfsd_closer_close(c->s->closer, c->passed_fd);
	c->passed_fd = -1;
}

/* Its reservations end (those it made detached stay). */
static void streams_end(struct client *c, const char *why)
{
	struct avfs_engine *e = c->s->e;

	for (size_t i = avfs_engine_stream_count(e); i-- > 0;) {
		struct avfs_estream *st = avfs_engine_stream_at(e, i);

		if (st->owner != c)
			continue;
		avfsd_log(AVFSD_INFO, "reservation %llu of uid %u on inode %llu ended: %s; %llu RT "
			  "requests, %llu misses", (unsigned long long)st->id, st->req.uid,
			  (unsigned long long)st->ino, why, (unsigned long long)st->qos.requests,
			  (unsigned long long)st->qos.misses);
		avfs_engine_release(e, st->id, c->s->now);
	}
}

static void client_drop(struct client *c, const char *why)
{
	bool news = strcmp(why, "disconnected");

	if (c->dead)
		return;
	/* a client that simply went away is news only when debugging */
	avfsd_log(news ? AVFSD_WARNING : AVFSD_DEBUG, "client pid %u uid %u %s%s", c->pid, c->uid,
		  news ? "dropped: " : "", why);
	c->dead = true;
	client_close(c);
	/* its queued (and parked) requests leave the disk's queue; those on the device
	 * complete, their replies going nowhere; then its reservations end */
	for (struct cio *io = c->ios, *next; io; io = next) {
		next = io->next;
		avfs_engine_cancel(c->s->e, &io->f, c->s->now);
	}
	streams_end(c, "its client is gone");
	c->trace_tag = 0;
	client_unref(c);
}

/* ---- requests ---- */

static void cio_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct cio *io = (struct cio *)f;
	struct client *c = io->c;
	struct avfs_msg_io_reply rep = { .res = res };

	c->s->now = now;	/* a reply queued now starts the clock of "not reading" now */
	for (struct cio **pp = &c->ios; *pp; pp = &(*pp)->next)
		if (*pp == io) {
			*pp = io->next;
			break;
		}
	c->inflight--;
	if (!io->data)
		c->shm_users--;
	mem_charge(c, -(int64_t)io->nbytes);	/* its data moves to the replies (counted there) */
	if (!f->write && io->data && res > 0)
		send_reply(c, AVFS_MSG_IO, io->tag, &rep, sizeof(rep), io->data, (size_t)res);
	else
		send_reply(c, AVFS_MSG_IO, io->tag, &rep, sizeof(rep), NULL, 0);
	free(io->data);
	free(io);
	client_unref(c);
}

static bool in_group(const struct client *c, uint32_t gid)
{
	if (c->gid == gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* The access ACL of a (the kernel's posix_acl_permission over its xattr form: a version
 * word 2, then entries of tag, permissions and id, little-endian) for c wanting bits: 1
 * granted, 0 denied (also an ACL that cannot be read or makes no sense, as the kernel's -EIO),
 * -1 none: the mode decides. */
static int acl_may(struct avfs_server *s, const struct client *c, const struct avfs_stat *a,
		   uint32_t bits)
{
	enum { USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 0x10, OTHER = 0x20 };
	static uint8_t v[65536];	/* XATTR_SIZE_MAX; the loop's thread alone */
	int n = avfs_fs_getxattr(s->fs, a->ino, "system.posix_acl_access", v, sizeof(v));
	size_t k, m, ne;
	bool found = false;

	if (n == -ENODATA || n == -EOPNOTSUPP)
		return -1;
	if (n < 4 || (n - 4) % 8 || v[0] != 2 || v[1] || v[2] || v[3])
		return 0;
	ne = (size_t)(n - 4) / 8;
#define TAG(i) (uint16_t)(v[4 + 8 * (i)] | v[5 + 8 * (i)] << 8)
#define PERM(i) (uint16_t)(v[6 + 8 * (i)] | v[7 + 8 * (i)] << 8)
#define ID(i) ((uint32_t)v[8 + 8 * (i)] | (uint32_t)v[9 + 8 * (i)] << 8 | \
	       (uint32_t)v[10 + 8 * (i)] << 16 | (uint32_t)v[11 + 8 * (i)] << 24)
	for (k = 0; k < ne; k++) {
		uint16_t tag = TAG(k);

		if ((tag == USER_OBJ && c->uid == a->uid) || (tag == OTHER && !found))
			return (PERM(k) & bits) == bits;	/* no mask applies */
		if (tag == OTHER)
			return 0;	/* of a matching group, none granted it */
		if (tag == USER && ID(k) == c->uid)
			break;
		if ((tag == GROUP_OBJ && in_group(c, a->gid)) ||
		    (tag == GROUP && in_group(c, ID(k)))) {
			found = true;
			if ((PERM(k) & bits) == bits)
				break;
		}
	}
	if (k == ne)
		return 0;	/* no ACL_OTHER entry */
	for (m = k + 1; m < ne && TAG(m) != MASK; m++)
		;
	return (PERM(k) & (m < ne ? PERM(m) : 7) & bits) == bits;
#undef TAG
#undef PERM
#undef ID
}

/* May c do bits (4 read, 2 write, 1 search) to a, as the kernel's generic_permission would
 * decide: the owner by the mode's owner bits, others by the access ACL if the file has one,
 * else by the mode. Root may everything. */
static bool may(struct avfs_server *s, const struct client *c, const struct avfs_stat *a,
		uint32_t bits)
{
	uint32_t have;
	int acl;

	if (c->uid == 0)
		return true;
	if (c->uid != a->uid && (a->mode & 070) && (acl = acl_may(s, c, a, bits)) >= 0)
		return acl;
	have = c->uid == a->uid ? (a->mode >> 6) & 7 : in_group(c, a->gid) ? (a->mode >> 3) & 7 :
	       a->mode & 7;
	return (have & bits) == bits;
}

static uint32_t access_bits(uint32_t access)
{
	return (access & AVFS_OPEN_READ ? 4 : 0) | (access & AVFS_OPEN_WRITE ? 2 : 0);
}

static void *alloc_aligned(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 4096, len ? len : 4096) ? NULL : p;
}

/* The reservation a request of handle h is charged to: its own, or a detached one on the
 * file (avfs-admin reserve) covering c's uid, for a handle open that way. 0 none. (A handle
 * knows no directory of its file: a directory's reservation covers FUSE I/O only.) */
static uint64_t stream_of(struct avfs_server *s, const struct client *c, const struct handle *h,
			  bool write)
{
	if (h->stream)
		return h->stream;
	if (!(h->access & (write ? AVFS_OPEN_WRITE : AVFS_OPEN_READ)))
		return 0;
	return avfs_engine_stream_cover(s->e, h->ino, 0, c->uid, write);
}

/* ---- message handlers: the payload's size is checked by the table ---- */

typedef void (*msg_fn)(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		       uint32_t len);

static void on_hello(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		     uint32_t len)
{
	struct avfs_msg_hello_reply rep = { .version = AVFS_PROTO_VERSION,
					    .max_io = AVFS_PROTO_MAX_IO, .queue = AVFS_PROTO_QUEUE };
	struct avfs_msg_hello m;

	(void)s, (void)len;
	memcpy(&m, pl, sizeof(m));
	rep.res = m.version == AVFS_PROTO_VERSION ? 0 : -EPROTONOSUPPORT;
	send_reply(c, AVFS_MSG_HELLO, tag, &rep, sizeof(rep), NULL, 0);
}

/* A handle of c on ino for access, the file's own mode checked: into rep. */
static void open_handle(struct avfs_server *s, struct client *c, uint64_t ino, uint32_t access,
			struct avfs_msg_open_reply *rep)
{
	struct avfs_stat a;
	void *h;

	if (!(access & (AVFS_OPEN_READ | AVFS_OPEN_WRITE)) ||
	    access & ~(AVFS_OPEN_READ | AVFS_OPEN_WRITE | AVFS_OPEN_DIR))
		rep->res = -EINVAL;
	else if (avfs_fs_getattr(s->fs, ino, &a))
		rep->res = -ENOENT;
	else if (access & AVFS_OPEN_DIR && !S_ISDIR(a.mode))
		rep->res = -ENOTDIR;	/* directory semantics asked of a non-directory */
	else if (!(access & AVFS_OPEN_DIR) && !S_ISREG(a.mode))
		rep->res = -EINVAL;
	else if (!may(s, c, &a, access_bits(access)))
		rep->res = -EACCES;	/* checked as the mount would, with the peer's credentials */
	else if (c->nhandles >= 4096)
		rep->res = -EMFILE;
	else if (!(h = realloc(c->handles, (c->nhandles + 1) * sizeof(*c->handles))))
		rep->res = -ENOMEM;
	else {
		c->handles = h;
		c->handles[c->nhandles] = (struct handle){ .ino = ino, .access = access };
		rep->handle = c->nhandles++;
	}
}

/* By inode: no path, so no directory to check; root's alone (it may search every one). */
static void on_open(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		    uint32_t len)
{
	struct avfs_msg_open_reply rep = { 0 };
	struct avfs_msg_open m;

	(void)len;
	memcpy(&m, pl, sizeof(m));
	if (m.dev != s->c.mnt_dev)
		rep.res = -EXDEV;
	else if (c->uid)
		rep.res = -EPERM;	/* it would pass over the directories' permissions */
	else
		open_handle(s, c, m.ino, m.access, &rep);
	send_reply(c, AVFS_MSG_OPEN, tag, &rep, sizeof(rep), NULL, 0);
}

/* The inode at path p[0..n) (absolute, under the mount point), walked from the root as c: each
 * directory on the way must be one c may search. 0, or -EXDEV (not under the mount point),
 * -EINVAL ("." or ".." in it: the kernel's paths have none), -EACCES, -ENOENT, -ENOTDIR,
 * -ENAMETOOLONG. */
static int walk(struct avfs_server *s, const struct client *c, const char *p, size_t n,
		uint64_t *ino)
{
	size_t ml = s->mnt ? strlen(s->mnt) : 0, i;
	uint64_t cur = AVFS_ROOT_INO;
	char name[256];

	if (!s->mnt)
		return -EXDEV;
	if (ml == 1)
		ml = 0;	/* mounted on / */
	if (memchr(p, 0, n))
		return -EINVAL;
	if (n < ml || memcmp(p, s->mnt, ml) || (n > ml && p[ml] != '/'))
		return -EXDEV;
	for (i = ml;;) {
		struct avfs_stat a;
		size_t j;
		int err;

		while (i < n && p[i] == '/')
			i++;
		if (i == n)
			break;
		for (j = i; j < n && p[j] != '/'; j++)
			;
		if (j - i >= sizeof(name))
			return -ENAMETOOLONG;
		memcpy(name, p + i, j - i);
		name[j - i] = 0;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			return -EINVAL;
		if (avfs_fs_getattr(s->fs, cur, &a))
			return -ENOENT;
		if (!S_ISDIR(a.mode))
			return -ENOTDIR;
		if (!may(s, c, &a, 1))
			return -EACCES;
		err = avfs_fs_lookup(s->fs, cur, name, &cur);
		if (err)
			return err;
		i = j;
	}
	*ino = cur;
	return 0;
}

static void on_open_path(struct avfs_server *s, struct client *c, uint64_t tag,
			 const uint8_t *pl, uint32_t len)
{
	struct avfs_msg_open_reply rep = { 0 };
	struct avfs_msg_open_path m;
	uint64_t ino = 0;

	memcpy(&m, pl, sizeof(m));
	if (m.dev != s->c.mnt_dev)
		rep.res = -EXDEV;
	else if (!(rep.res = walk(s, c, (const char *)pl + sizeof(m), len - sizeof(m), &ino)) &&
		 ino != m.ino)
		rep.res = -ENOENT;	/* another file is there now */
	if (!rep.res)
		open_handle(s, c, ino, m.access, &rep);
	send_reply(c, AVFS_MSG_OPEN_PATH, tag, &rep, sizeof(rep), NULL, 0);
}

static void on_close(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		     uint32_t len)
{
	(void)s, (void)c, (void)tag, (void)pl, (void)len;
	/* handles are cheap and live as long as the connection */
}

static int io_check(struct avfs_server *s, struct client *c, const struct avfs_msg_io *m,
		    uint32_t plen)
{
	if (m->handle >= c->nhandles || m->op > AVFS_IO_WRITE || m->where > AVFS_IO_SHM ||
	    c->handles[m->handle].access & AVFS_OPEN_DIR)
		return -EBADF;	/* (a directory's handle is for RESERVE only) */
	if (!m->nbytes || m->nbytes > AVFS_PROTO_MAX_IO || m->offset % AVFS_PROTO_ALIGN ||
	    m->nbytes % AVFS_PROTO_ALIGN || m->offset > (1ull << 60))
		return -EINVAL;
	if (!(c->handles[m->handle].access & (m->op == AVFS_IO_WRITE ? AVFS_OPEN_WRITE :
						AVFS_OPEN_READ)))
		return -EBADF;
	if (m->where == AVFS_IO_SHM && (!c->shm || m->shm_off % 4096 || m->shm_off > c->shmlen ||
					m->nbytes > c->shmlen - m->shm_off))
		return -EINVAL;
	if (m->op == AVFS_IO_WRITE && m->where == AVFS_IO_INLINE && plen != m->nbytes)
		return -EINVAL;
	if (m->deadline && m->deadline <= s->now)
		return -ETIME;	/* already too late: never issued (the engine counts it) */
	if (m->deadline && m->deadline - s->now > AVFS_PROTO_HORIZON_NS)
		return -ERANGE;	/* no stream plans that far ahead; the mixer's sums stay finite */
	if (c->inflight >= AVFS_PROTO_QUEUE)
		return -EAGAIN;
	if (m->where == AVFS_IO_INLINE && (c->mem + m->nbytes > s->lim.client_mem ||
					   s->mem + m->nbytes > s->lim.server_mem))
		return -EAGAIN;	/* bounded memory: let it (and the others) read what they have */
	return 0;
}

static void on_io(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		  uint32_t len)
{
	struct avfs_msg_io_reply rep = { 0 };
	struct avfs_msg_io m;
	struct avfs_stat a;
	struct cio *io = NULL;
	bool write;
	int err;

	memcpy(&m, pl, sizeof(m));
	err = io_check(s, c, &m, len - (uint32_t)sizeof(m));
	write = m.op == AVFS_IO_WRITE;
	if (!err && avfs_fs_getattr(s->fs, c->handles[m.handle].ino, &a))
		err = -EBADF;	/* the file was deleted */
	if (!err && !(io = calloc(1, sizeof(*io))))
		err = -ENOMEM;
	if (err)
		goto refuse;
	io->c = c;
	io->tag = tag;
	io->f = (struct avfs_fio){
		.ino = c->handles[m.handle].ino, .off = m.offset, .len = m.nbytes, .write = write,
		.cap = m.nbytes, .deadline = m.deadline, .cls = AVFS_TRACE_BE, .done = cio_done,
		.stream = stream_of(s, c, &c->handles[m.handle], write),
	};
	io->f.label = io->f.stream ? (int64_t)io->f.stream : -1;
	if (m.where == AVFS_IO_SHM) {
		io->f.buf = c->shm + m.shm_off;	/* zero copy: the device works in it */
		c->shm_users++;	/* mapped until it is done: SHM may not replace it */
	} else {
		io->data = alloc_aligned(m.nbytes);
		if (!io->data) {
			err = -ENOMEM;
			goto refuse;
		}
		if (write)
			memcpy(io->data, pl + sizeof(m), m.nbytes);
		io->nbytes = m.nbytes;
		io->f.buf = io->data;
		mem_charge(c, (int64_t)io->nbytes);
	}
	if (write && s->c.wrote)
		s->c.wrote(s->c.wrote_ctx, io->f.ino);	/* FUSE readers must not see old data */
	c->inflight++;
	c->refs++;
	io->next = c->ios;
	c->ios = io;
	err = avfs_engine_io(s->e, &io->f, s->now);
	if (!err)
		return;
	/* refused by the engine: undo, answer */
	c->ios = io->next;
	c->inflight--;
	c->refs--;
	if (!io->data)
		c->shm_users--;
	mem_charge(c, -(int64_t)io->nbytes);
refuse:
	if (io)
		free(io->data);
	free(io);
	rep.res = err;
	send_reply(c, AVFS_MSG_IO, tag, &rep, sizeof(rep), NULL, 0);
}

static void on_cancel(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		      uint32_t len)
{
	struct avfs_msg_cancel_reply rep = { .res = AVFS_CANCEL_GONE };
	struct avfs_msg_cancel m;

	(void)len;
	memcpy(&m, pl, sizeof(m));
	for (struct cio *io = c->ios; io; io = io->next) {
		if (io->tag != m.target)
			continue;
		/* 0: its -ECANCELED reply went before this one */
		rep.res = avfs_engine_cancel(s->e, &io->f, s->now) ? AVFS_CANCEL_BUSY :
								     AVFS_CANCEL_DONE;
		break;
	}
	send_reply(c, AVFS_MSG_CANCEL, tag, &rep, sizeof(rep), NULL, 0);
}

/*
 * The client's buffer memory: fd, sent with the SHM message. F_GET_SEALS comes first, before
 * anything that could reach a file system: only a memfd answers it (any other descriptor gives
 * EINVAL without a request to its file system), and fstat of a file on avfsd's own mount would
 * wait for avfsd itself. The seals keep the mapping whole (no SIGBUS from a truncation). 0 or
 * -errno with why; fd stays the caller's.
 */
static int shm_take(struct client *c, int fd, const char **why)
{
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;
	void *p;

	if (seals < 0) {
		*why = "not a memfd";
		return -EINVAL;
	}
	if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		*why = "a memfd not sealed against shrinking and growing";
		return -EINVAL;
	}
	if (fstat(fd, &st)) {	/* a memfd: its file system is shmem or hugetlbfs */
		*why = "fstat failed";
		return -errno;
	}
	if (c->uid && st.st_uid != c->uid) {
		*why = "another user's memfd";
		return -EPERM;
	}
	if (st.st_size <= 0 || st.st_size > (1ll << 34) || st.st_size % AVFS_PROTO_ALIGN) {
		*why = "its size is not a multiple of 4 KiB up to 16 GiB";
		return -EINVAL;
	}
	if (c->shm_users) {
		*why = "requests still work in the one before";
		return -EBUSY;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		*why = "it cannot be mapped for writing";
		return -errno;
	}
	if (c->shm)
		munmap(c->shm, c->shmlen);
	c->shm = p;
	c->shmlen = (size_t)st.st_size;
	return 0;
}

static void on_shm(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		   uint32_t len)
{
	struct avfs_msg_shm_reply rep = { .res = -EINVAL };
	const char *why = "no descriptor came with it";
	int fd = c->passed_fd;

	(void)pl, (void)len;
	c->passed_fd = -1;
	if (fd >= 0) {
		rep.res = shm_take(c, fd, &why);
		avfsd_closer_close(s->closer, fd);	/* the mapping, if any, holds the memfd */
	}
	if (rep.res)
		avfsd_log(AVFSD_INFO, "buffer memory of pid %u uid %u refused: %s", c->pid, c->uid,
			  why);
	send_reply(c, AVFS_MSG_SHM, tag, &rep, sizeof(rep), NULL, 0);
}

/* The detached reservations of uid (the one just admitted among them) within the quota of
 * detached ones (struct avfs_server_limits)? If not, why. Their disk time is the utilization
 * avfs-admin streams shows. */
static bool detached_fits(struct avfs_server *s, uint32_t uid, char *why, size_t whylen)
{
	struct avfs_admit *adm = avfs_engine_admit(s->e);
	uint32_t n = 0;
	double u = 0;

	for (size_t i = 0; i < avfs_engine_stream_count(s->e); i++) {
		const struct avfs_estream *st = avfs_engine_stream_at(s->e, i);
		const struct avfs_stream_info *si;

		if (st->owner || st->req.uid != uid)
			continue;
		n++;
		si = avfs_admit_find(adm, st->id);
		u += si ? si->cost.u : 0;
	}
	if (n <= s->lim.detached_streams && u <= s->lim.detached_share + 1e-9)
		return true;
	snprintf(why, whylen, "detached of uid %u: %u, %u%% of disk time; quota %u, %u%%", uid, n,
		 (unsigned)(100 * u + 0.5), s->lim.detached_streams,
		 (unsigned)(100 * s->lim.detached_share + 0.5));
	return false;
}

static void on_reserve(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		       uint32_t len)
{
	struct avfs_msg_reserve_reply rep = { .quota_streams = UINT32_MAX,
					      .quota_rate = UINT64_MAX };
	struct avfs_admit_left left = { 0 };
	struct avfs_msg_reserve m;
	struct avfs_service_req req;
	int64_t id;

	memset(&m, 0, sizeof(m));
	memcpy(&m, pl, len < sizeof(m) ? len : sizeof(m));
	req = (struct avfs_service_req){ .rate = m.rate, .buffer = m.buffer, .io = m.io,
					 .write = m.write != 0, .uid = c->uid };
	if (m.handle >= c->nhandles || m.flags & ~(AVFS_RESERVE_DETACHED | AVFS_RESERVE_UID) ||
	    m.write > 1 || (len < sizeof(m) && m.flags & AVFS_RESERVE_UID)) {
		rep.res = -EINVAL;
		snprintf(rep.why, sizeof(rep.why), "bad handle or flags");
	} else if (!(m.flags & AVFS_RESERVE_DETACHED) &&
		   (m.flags & AVFS_RESERVE_UID || c->handles[m.handle].access & AVFS_OPEN_DIR)) {
		rep.res = -EINVAL;
		snprintf(rep.why, sizeof(rep.why), "a reservation on a directory or for one uid "
			 "is a detached one");
	} else if (!(c->handles[m.handle].access & (m.write ? AVFS_OPEN_WRITE : AVFS_OPEN_READ))) {
		rep.res = -EBADF;
		snprintf(rep.why, sizeof(rep.why), "the file is not open for %s",
			 m.write ? "writing" : "reading");
	} else if (c->handles[m.handle].stream) {
		rep.res = -EEXIST;
		snprintf(rep.why, sizeof(rep.why), "the file already has a reservation (%llu)",
			 (unsigned long long)c->handles[m.handle].stream);
	} else {
		bool detached = m.flags & AVFS_RESERVE_DETACHED;

		bool dir = c->handles[m.handle].access & AVFS_OPEN_DIR;

		id = avfs_engine_reserve(s->e, &req, c->handles[m.handle].ino, detached ? NULL : c,
					 (dir ? AVFS_RESERVE_DIR : 0) |
					 (detached ? AVFS_RESERVE_BUFFERED : 0), s->now, &left,
					 rep.why, sizeof(rep.why));
		if (id < 0) {
			rep.res = (int32_t)id;
			rep.left_rate = left.rate;
			rep.quota_rate = left.quota_rate;
			rep.quota_streams = left.quota_streams;
			rep.left_util_ppm = (uint32_t)(left.util * 1e6);
		} else if (detached && c->uid && !detached_fits(s, c->uid, rep.why,
								    sizeof(rep.why))) {
			avfs_engine_release(s->e, (uint64_t)id, s->now);	/* never in use */
			rep.res = -EDQUOT;
		} else {
			struct avfs_estream *st = avfs_engine_stream(s->e, (uint64_t)id);

			st->pid = c->pid;
			st->uid_only = m.flags & AVFS_RESERVE_UID;
			st->cover_uid = m.uid;
			if (!detached)
				c->handles[m.handle].stream = st->id;
			rep.id = st->id;
			avfs_admit_left(avfs_engine_admit(s->e), NULL, &left);
			rep.left_util_ppm = (uint32_t)(left.util * 1e6);
			char only[32] = "";

			if (st->uid_only)
				snprintf(only, sizeof(only), ", uid %u only", st->cover_uid);
			avfsd_log(AVFSD_INFO, "reservation %llu: uid %u pid %u %s %llu, %s %.2f "
				  "MB/s, buffer %.1f MiB%s%s; load now %.1f %%",
				  (unsigned long long)st->id, c->uid, c->pid,
				  st->dir ? "directory" : "inode",
				  (unsigned long long)st->ino, req.write ? "write" : "read",
				  (double)req.rate / 1e6, (double)req.buffer / (1 << 20),
				  detached ? ", detached" : "", only,
				  100 * avfs_admit_load(avfs_engine_admit(s->e)));
		}
	}
	if (rep.res && rep.res != -EINVAL && rep.res != -EBADF && rep.res != -EEXIST)
		avfsd_log(AVFSD_INFO, "reservation refused to uid %u pid %u: %s", c->uid, c->pid,
			  rep.why);
	send_reply(c, AVFS_MSG_RESERVE, tag, &rep, sizeof(rep), NULL, 0);
}

static void on_release(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		       uint32_t len)
{
	struct avfs_msg_release_reply rep = { 0 };
	struct avfs_msg_release m;
	struct avfs_estream *st = NULL;

	(void)len;
	memcpy(&m, pl, sizeof(m));
	if (m.handle == AVFS_RELEASE_BY_ID) {
		st = avfs_engine_stream(s->e, m.id);
		if (!st)
			rep.res = -ENOENT;
		else if (c->uid && c->uid != st->req.uid)
			rep.res = -EPERM;
	} else if (m.handle >= c->nhandles) {
		rep.res = -EINVAL;
	} else if (!(st = avfs_engine_stream(s->e, c->handles[m.handle].stream))) {
		rep.res = -ENOENT;
	}
	if (!rep.res) {
		struct client *owner = st->owner;

		for (uint32_t h = 0; owner && h < owner->nhandles; h++)
			if (owner->handles[h].stream == st->id)
				owner->handles[h].stream = 0;
		avfsd_log(AVFSD_INFO, "reservation %llu of uid %u on inode %llu ended: %s; %llu RT "
			  "requests, %llu misses", (unsigned long long)st->id, st->req.uid,
			  (unsigned long long)st->ino,
			  m.handle == AVFS_RELEASE_BY_ID ? "released by id" : "released",
			  (unsigned long long)st->qos.requests, (unsigned long long)st->qos.misses);
		avfs_engine_release(s->e, st->id, s->now);
	}
	send_reply(c, AVFS_MSG_RELEASE, tag, &rep, sizeof(rep), NULL, 0);
}

static void on_stats(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		     uint32_t len)
{
	struct avfs_msg_stats_reply rep = { 0 };
	struct avfs_msg_stats m;
	struct avfs_estream *st;

	(void)len;
	memcpy(&m, pl, sizeof(m));
	st = m.handle < c->nhandles ? avfs_engine_stream(s->e, c->handles[m.handle].stream) : NULL;
	if (!st) {
		rep.res = m.handle < c->nhandles ? -ENOENT : -EINVAL;
	} else {
		rep.requests = st->qos.requests;
		rep.misses = st->qos.misses;
		rep.bytes = st->qos.bytes;
		rep.margin_min_ns = st->qos.margin_min_ns;
	}
	send_reply(c, AVFS_MSG_STATS, tag, &rep, sizeof(rep), NULL, 0);
}

/* Where the handle's file lies: its mapped blocks from m.offset on, runs merged. */
static void on_place(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		     uint32_t len)
{
	struct avfs_msg_place_reply rep = { 0 };
	struct avfs_bext ext[64];
	struct avfs_msg_place m;
	struct avfs_stat a = { 0 };
	uint64_t bs = avfs_fs_block_size(s->fs), at;

	(void)len;
	memcpy(&m, pl, sizeof(m));
	if (m.handle >= c->nhandles || !(c->handles[m.handle].access & AVFS_OPEN_READ) ||
	    c->handles[m.handle].access & AVFS_OPEN_DIR)	/* a directory's: RESERVE only */
		rep.res = -EBADF;
	else if (avfs_fs_getattr(s->fs, c->handles[m.handle].ino, &a))
		rep.res = -EBADF;	/* (deleted since it was opened) */
	rep.block_size = bs;
	rep.size = rep.res ? 0 : a.size;
	for (at = m.offset / bs * bs; !rep.res && at < a.size && rep.count < AVFS_PLACE_MAX;) {
		int n = avfs_fs_map_read(s->fs, c->handles[m.handle].ino, at, a.size - at, ext, 64);

		if (n < 0)
			rep.res = n;
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			struct avfs_place_ext *x = rep.count ? &rep.ext[rep.count - 1] : NULL;
			/* the block's bytes up to the end of the file, in whole pages: a small
			 * file's extent (fs/small.c) is no longer than that either */
			uint64_t blen = a.size - ext[i].file_off < bs ? a.size - ext[i].file_off : bs;

			blen = (blen + 4095) / 4096 * 4096;
			if (!ext[i].dev_off)
				continue;	/* a hole */
			if (x && x->file_off + x->len == ext[i].file_off &&
			    x->dev_off + x->len == ext[i].dev_off) {
				x->len += blen;
				continue;
			}
			if (rep.count == AVFS_PLACE_MAX)
				break;
			rep.ext[rep.count++] = (struct avfs_place_ext){ ext[i].file_off,
									ext[i].dev_off, blen };
		}
		at = ext[n - 1].file_off + bs;
	}
	if (rep.res)
		rep.count = 0;
	send_reply(c, AVFS_MSG_PLACE, tag, &rep, sizeof(rep), NULL, 0);
}

static void on_admin(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		     uint32_t len)
{
	struct avfs_msg_admin_reply rep = { 0 };
	int err = 0;
	char *text;

	if (len == 5 && !memcmp(pl, "reset", 5)) {	/* a new measurement begins now */
		if (c->uid)
			rep.res = -EPERM;
		else
			avfs_engine_metrics_reset(s->e, s->now);
		send_reply(c, AVFS_MSG_ADMIN, tag, &rep, sizeof(rep), "{}", rep.res ? 0 : 2);
		return;
	}
	text = avfsd_admin_json(s->c.view, s->e, avfs_server_clients(s), (const char *)pl, len,
				s->now, c->admin ? AVFSD_ADMIN_ALL : c->uid, &err);

	rep.res = err;
	send_reply(c, AVFS_MSG_ADMIN, tag, &rep, sizeof(rep), text ? text : "",
		   text ? strlen(text) : 0);
	free(text);
}

static bool tracing(const struct avfs_server *s)
{
	for (size_t i = 0; i < s->nclients; i++)
		if (s->clients[i] && !s->clients[i]->dead && s->clients[i]->trace_tag)
			return true;
	return false;
}

static void trace_flush(struct avfs_server *s, int64_t now, int64_t *next)
{
	for (size_t i = 0; i < s->nclients; i++) {
		struct client *c = s->clients[i];
		struct avfs_msg_trace_reply rep = { 0 };

		if (!c || c->dead || !c->trace_tag)
			continue;
		if (s->trace_len)
			send_reply(c, AVFS_MSG_TRACE, c->trace_tag, &rep, sizeof(rep), s->trace_buf,
				   s->trace_len);
		if (c->dead)
			continue;
		if (now >= c->trace_until) {
			rep.done = 1;
			send_reply(c, AVFS_MSG_TRACE, c->trace_tag, &rep, sizeof(rep), NULL, 0);
			c->trace_tag = 0;
			avfsd_log(AVFSD_INFO, "trace for pid %u ended", c->pid);
		} else if (next && (!*next || c->trace_until < *next)) {
			*next = c->trace_until;
		}
	}
	s->trace_len = 0;
	if (!tracing(s)) {
		free(s->trace_buf);
		s->trace_buf = NULL;
		s->trace_cap = 0;
	}
}

static void on_trace(struct avfs_server *s, struct client *c, uint64_t tag, const uint8_t *pl,
		     uint32_t len)
{
	struct avfs_msg_trace_reply rep = { 0 };
	struct avfs_msg_trace m;
	char head[256];

	(void)len;
	memcpy(&m, pl, sizeof(m));
	if (c->uid)
		rep.res = -EPERM;	/* a trace shows every user's requests */
	else if (m.duration_ns < 1000000 || m.duration_ns > 86400ull * NS)
		rep.res = -EINVAL;
	else if (c->trace_tag)
		rep.res = -EBUSY;
	if (rep.res) {
		rep.done = 1;
		send_reply(c, AVFS_MSG_TRACE, tag, &rep, sizeof(rep), NULL, 0);
		return;
	}
	trace_flush(s, s->now, NULL);	/* lines before this trace go to earlier ones */
	send_reply(c, AVFS_MSG_TRACE, tag, &rep, sizeof(rep), head,
		   avfs_trace_header(head, sizeof(head)));
	c->trace_tag = tag;
	c->trace_until = s->now + (int64_t)m.duration_ns;
	avfsd_log(AVFSD_INFO, "trace for pid %u: %.1f s", c->pid, (double)m.duration_ns / NS);
}

/* The messages: type, payload size (fixed: min == max), handler. */
static const struct {
	uint16_t type;
	uint32_t min, max;
	const char *name;
	msg_fn fn;
} messages[] = {
	{ AVFS_MSG_HELLO, sizeof(struct avfs_msg_hello), sizeof(struct avfs_msg_hello), "HELLO",
	  on_hello },
	{ AVFS_MSG_OPEN, sizeof(struct avfs_msg_open), sizeof(struct avfs_msg_open), "OPEN",
	  on_open },
	{ AVFS_MSG_CLOSE, sizeof(struct avfs_msg_close), sizeof(struct avfs_msg_close), "CLOSE",
	  on_close },
	{ AVFS_MSG_IO, sizeof(struct avfs_msg_io), AVFS_PROTO_MAX_PAYLOAD, "IO", on_io },
	{ AVFS_MSG_CANCEL, sizeof(struct avfs_msg_cancel), sizeof(struct avfs_msg_cancel),
	  "CANCEL", on_cancel },
	{ AVFS_MSG_SHM, 0, AVFS_PROTO_MAX_PAYLOAD, "SHM", on_shm },
	{ AVFS_MSG_RESERVE, AVFS_MSG_RESERVE_V1, sizeof(struct avfs_msg_reserve),
	  "RESERVE", on_reserve },
	{ AVFS_MSG_RELEASE, sizeof(struct avfs_msg_release), sizeof(struct avfs_msg_release),
	  "RELEASE", on_release },
	{ AVFS_MSG_STATS, sizeof(struct avfs_msg_stats), sizeof(struct avfs_msg_stats), "STATS",
	  on_stats },
	{ AVFS_MSG_ADMIN, 0, 256, "ADMIN", on_admin },
	{ AVFS_MSG_TRACE, sizeof(struct avfs_msg_trace), sizeof(struct avfs_msg_trace), "TRACE",
	  on_trace },
	{ AVFS_MSG_OPEN_PATH, sizeof(struct avfs_msg_open_path) + 1,
	  sizeof(struct avfs_msg_open_path) + AVFS_PROTO_PATH_LEN, "OPEN_PATH", on_open_path },
	{ AVFS_MSG_PLACE, sizeof(struct avfs_msg_place), sizeof(struct avfs_msg_place), "PLACE",
	  on_place },
};

/* ---- input ---- */

/* Descriptors that came with the bytes just read: the first waits for its SHM message, the
 * rest (and one it replaces) go to the closer, untouched. */
static void take_fds(struct client *c, struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			avfsd_closer_close(c->s->closer, c->passed_fd);
			c->passed_fd = fd;
		}
	}
}

/* The input buffer at cap bytes: 0, or -ENOMEM (dropped). */
static int in_resize(struct client *c, size_t cap)
{
	uint8_t *in = realloc(c->in, cap);

	if (!in) {
		client_drop(c, "out of memory");
		return -ENOMEM;
	}
	mem_charge(c, (int64_t)cap - (int64_t)c->incap);
	c->in = in;
	c->incap = cap;
	return 0;
}

/*
 * Read what the socket has, at most until the buffer holds a whole first message: the buffer
 * grows to the size its header announces, within the client's memory bound (else dropped) and
 * the daemon's (else paused: the tick resumes it). It stops after descriptors arrive, so that
 * they meet the message they came with. false when the client was dropped.
 */
static bool receive(struct client *c)
{
	struct avfs_server *s = c->s;

	if (!c->incap && in_resize(c, IN_MIN))
		return false;
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
		struct iovec iov;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct avfs_msg_hdr h;
		ssize_t n;

		if (c->inlen == c->incap) {
			size_t want;

			memcpy(&h, c->in, sizeof(h));
			if (h.magic != AVFS_PROTO_MAGIC || h.len > AVFS_PROTO_MAX_PAYLOAD)
				return true;	/* malformed: the caller says so */
			want = sizeof(h) + h.len;
			if (want <= c->incap)
				return true;	/* a whole message: handle it first */
			if (c->mem + (want - c->incap) > s->lim.client_mem) {
				client_drop(c, "a message beyond its memory bound");
				return false;
			}
			if (s->mem + (want - c->incap) > s->lim.server_mem) {
				c->paused = true;	/* the daemon's bound: wait */
				return true;
			}
			if (in_resize(c, want))
				return false;
		}
		iov.iov_base = c->in + c->inlen;
		iov.iov_len = c->incap - c->inlen;
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n <= 0) {
			client_drop(c, n == 0 ? "disconnected" : "receive failed");
			return false;
		}
		c->inlen += (size_t)n;
		if (mh.msg_controllen) {
			take_fds(c, &mh);
			return true;
		}
	}
}

static void client_input(void *ctx, int64_t now)
{
	struct client *c = ctx;
	struct avfs_server *s = c->s;
	size_t used = 0;

	s->now = now;
	c->refs++;	/* a guard: a handler may drop it */
	if (!receive(c))
		goto out;
	/* whole messages, each through the table */
	while (!c->dead && c->inlen - used >= sizeof(struct avfs_msg_hdr)) {
		struct avfs_msg_hdr h;
		size_t k;

		memcpy(&h, c->in + used, sizeof(h));
		if (h.magic != AVFS_PROTO_MAGIC || h.len > AVFS_PROTO_MAX_PAYLOAD) {
			client_drop(c, "malformed message");
			break;
		}
		if (c->inlen - used < sizeof(h) + h.len)
			break;
		for (k = 0; k < sizeof(messages) / sizeof(messages[0]); k++)
			if (messages[k].type == h.type)
				break;
		if (k == sizeof(messages) / sizeof(messages[0])) {
			client_drop(c, "unknown message type");
			break;
		}
		if (h.len < messages[k].min || h.len > messages[k].max) {
			char why[32];

			snprintf(why, sizeof(why), "malformed %s", messages[k].name);
			client_drop(c, why);
			break;
		}
		messages[k].fn(s, c, h.tag, c->in + used + sizeof(h), h.len);
		used += sizeof(h) + h.len;
	}
	if (c->dead)
		goto out;
	memmove(c->in, c->in + used, c->inlen - used);
	c->inlen -= used;
	if (c->passed_fd >= 0 && !c->inlen) {
		/* it came with messages that were not SHM: not kept (a descriptor of a file on
		 * the mount held here would keep the mount busy) */
		avfsd_closer_close(s->closer, c->passed_fd);
		c->passed_fd = -1;
	}
	if (c->incap > IN_MIN && c->inlen <= IN_MIN && in_resize(c, IN_MIN))
		goto out;	/* a large message is done: its memory goes back */
	if (!c->inlen)
		c->partial_since = 0;
	else if (used || !c->partial_since)
		c->partial_since = now;	/* the clock of a half-sent message */
	if (c->outlen - c->outoff > out_max(s)) {
		c->throttled = true;	/* re-armed when its replies drain */
		c->stalled_since = now;
	} else if (!c->throttled && !c->paused) {
		avfs_loop_arm(s->l, c->win, POLLIN);
	}
out:
	client_unref(c);
}

static void client_output(void *ctx, int64_t now)
{
	struct client *c = ctx;

	c->s->now = now;
	if (!c->dead)
		client_flush(c);
}

/* The supplementary groups of the peer of fd (SO_PEERGROUPS: as they were at connect) into
 * c; none where the kernel cannot say (older than 4.13): then only its gid counts. */
static int peer_groups(struct client *c)
{
	socklen_t len = 32 * sizeof(gid_t);

	for (int tries = 0; tries < 3; tries++) {
		gid_t *g = realloc(c->groups, len ? len : sizeof(gid_t));

		if (!g)
			return -ENOMEM;
		c->groups = g;
		if (!getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
			c->ngroups = (int)(len / sizeof(gid_t));
			return 0;
		}
		if (errno != ERANGE)
			return 0;
	}
	return 0;
}

/* A connection refused: a line, but not one per connection of a flood. */
static void refuse(struct avfs_server *s, int fd, const struct ucred *cr, const char *why)
{
	close(fd);
	s->refused++;
	if (s->refused_logged && s->now - s->refused_logged < NS)
		return;
	avfsd_log(AVFSD_WARNING, "connection of pid %d uid %d refused: %s (%llu refused in all "
		  "since the last such line)", cr->pid, cr->uid, why,
		  (unsigned long long)s->refused);
	s->refused = 0;
	s->refused_logged = s->now;
}

static void accept_clients(void *ctx, int64_t now)
{
	struct avfs_server *s = ctx;

	s->now = now;
	for (;;) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr;
		socklen_t len = sizeof(cr);
		struct client *c;
		size_t i, used = 0, mine = 0;

		if (fd < 0)
			break;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
			close(fd);
			continue;
		}
		for (i = 0; i < s->nclients; i++) {
			used += s->clients[i] != NULL;
			mine += s->clients[i] && !s->clients[i]->dead && s->clients[i]->uid == cr.uid;
		}
		for (i = 0; i < s->nclients && s->clients[i]; i++)
			;
		if (i == MAX_CLIENTS) {
			refuse(s, fd, &cr, "every client slot is taken");
			continue;
		}
		if (cr.uid && used >= MAX_CLIENTS - ROOT_SLOTS) {
			refuse(s, fd, &cr, "the last client slots are root's");
			continue;
		}
		if (cr.uid && mine >= s->lim.clients_per_uid) {
			refuse(s, fd, &cr, "its uid has as many connections as it may have "
			       "(clients-per-uid)");
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		*c = (struct client){ .s = s, .fd = fd, .uid = cr.uid, .gid = cr.gid,
				      .pid = (uint32_t)cr.pid, .refs = 1, .passed_fd = -1 };
		if (peer_groups(c)) {
			close(fd);
			free(c);
			continue;
		}
		c->admin = !c->uid || (s->lim.admin_gid != AVFS_SERVER_NO_GID &&
				       in_group(c, s->lim.admin_gid));
		c->win = avfs_loop_add(s->l, fd, client_input, c);
		c->wout = avfs_loop_add(s->l, fd, client_output, c);
		if (c->win < 0 || c->wout < 0) {
			avfsd_log(AVFSD_WARNING, "no room to watch pid %d: refusing it", cr.pid);
			avfs_loop_del(s->l, c->win);
			avfs_loop_del(s->l, c->wout);
			close(fd);
			free(c->groups);
			free(c);
			continue;
		}
		s->clients[i] = c;
		if (i == s->nclients)
			s->nclients++;
		avfsd_log(AVFSD_DEBUG, "client pid %d uid %d connected", cr.pid, cr.uid);
		avfs_loop_arm(s->l, c->win, POLLIN);
	}
	avfs_loop_arm(s->l, s->wlisten, POLLIN);
}

/* ---- the server ---- */

/* Something listens at a: another daemon's socket, which must not be taken over (its clients
 * would reach the wrong device). */
static bool listening(const struct sockaddr_un *a)
{
	int t = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool yes = t >= 0 && !connect(t, (const struct sockaddr *)a, sizeof(*a));

	if (t >= 0)
		close(t);
	return yes;
}

int avfs_server_new(struct avfs_server **out, struct avfs_loop *l, struct avfs_engine *e,
		    struct avfs_fs *fs, const struct avfs_server_conf *c, char *why, size_t whylen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct avfs_server *s;
	int err;

	if (strlen(c->path) >= sizeof(a.sun_path)) {
		snprintf(why, whylen, "socket path too long: %s", c->path);
		return -ENAMETOOLONG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = *c;
	if (c->lim)
		s->lim = *c->lim;
	else
		avfs_server_limits_default(&s->lim);
	s->fd = -1;
	err = avfsd_closer_new(&s->closer);
	if (err) {
		snprintf(why, whylen, "cannot start the closer thread: %s", strerror(-err));
		free(s);
		return err;
	}
	if (c->mountpoint) {	/* as the kernel writes paths: no symlink, no "..", no "//" */
		s->mnt = realpath(c->mountpoint, NULL);
		if (!s->mnt)
			s->mnt = strdup(c->mountpoint);
		if (!s->mnt) {
			err = -ENOMEM;
			goto fail;
		}
	}
	s->l = l;
	s->e = e;
	s->fs = fs;
	snprintf(s->path, sizeof(s->path), "%s", c->path);
	strcpy(a.sun_path, c->path);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (listening(&a)) {
		snprintf(why, whylen, "socket %s is in use by another avfsd: give this one its own "
			 "(--socket, -o socket=PATH, or leave it to the default, which is unique per "
			 "device)", c->path);
		close(s->fd);
		avfsd_closer_free(s->closer);
		free(s->mnt);
		free(s);
		return -EADDRINUSE;
	}
	unlink(c->path);	/* a stale socket of a dead daemon */
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) || listen(s->fd, 64)) {
		err = -errno;
		goto fail;
	}
	chmod(c->path, 0666);	/* access is checked per file with the peer's credentials */
	s->wlisten = avfs_loop_add(l, s->fd, accept_clients, s);
	err = s->wlisten < 0 ? s->wlisten : avfs_loop_arm(l, s->wlisten, POLLIN);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	snprintf(why, whylen, "cannot listen on %s: %s", c->path, strerror(-err));
	if (s->fd >= 0)
		close(s->fd);
	avfsd_closer_free(s->closer);
	free(s->mnt);
	free(s);
	return err;
}

void avfs_server_free(struct avfs_server *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nclients; i++) {
		struct client *c = s->clients[i];

		if (!c)
			continue;
		if (!c->dead)
			client_close(c);
		while (c->ios) {	/* none with the engine idle; forgotten if so */
			struct cio *io = c->ios;

			c->ios = io->next;
			free(io->data);
			free(io);
		}
		client_free(c);
	}
	avfs_loop_del(s->l, s->wlisten);
	close(s->fd);
	unlink(s->path);
	avfsd_closer_free(s->closer);
	free(s->mnt);
	free(s->trace_buf);
	free(s);
}

void avfs_server_trace(struct avfs_server *s, const struct avfs_trace_rec *r, int64_t now)
{
	if (!s->trace_buf && !tracing(s))
		return;
	if (s->trace_len + AVFS_TRACE_LINE_MAX > s->trace_cap) {
		size_t cap = s->trace_cap ? s->trace_cap * 2 : 2 * TRACE_FLUSH;
		char *b = realloc(s->trace_buf, cap);

		if (!b)
			return;	/* a trace line lost, nothing else */
		s->trace_buf = b;
		s->trace_cap = cap;
	}
	s->trace_len += avfs_trace_format(r, s->trace_buf + s->trace_len,
					  s->trace_cap - s->trace_len);
	if (s->trace_len >= TRACE_FLUSH)
		trace_flush(s, now, NULL);
}

int64_t avfs_server_tick(struct avfs_server *s, int64_t now)
{
	int64_t next = 0;

	s->now = now;
	/* a client whose replies piled up beyond the throttle and have not moved for 3 s is not
	 * reading them at all; one that left a message half-sent for 5 s will not send the
	 * rest: drop them (SPEC §14), the others go on. A client with a few replies unread is
	 * left alone however long it sleeps: it holds little. */
	for (size_t i = 0; i < s->nclients; i++) {
		struct client *c = s->clients[i];
		int64_t t = 0;

		if (!c || c->dead)
			continue;
		if (c->paused && s->mem < s->lim.server_mem) {
			c->paused = false;	/* memory came back: read it again */
			if (c->partial_since)
				c->partial_since = now;
			if (!c->throttled)
				avfs_loop_arm(s->l, c->win, POLLIN);
		}
		if (c->throttled && c->outlen > c->outoff) {
			if (now - c->stalled_since > STALL_NS) {
				client_drop(c, "it does not read its replies");
				continue;
			}
			t = c->stalled_since + STALL_NS + 1;
		}
		if (c->partial_since && !c->throttled && !c->paused) {
			if (now - c->partial_since > PARTIAL_NS) {
				client_drop(c, "a message left half-sent for 5 s");
				continue;
			}
			if (!t || c->partial_since + PARTIAL_NS + 1 < t)
				t = c->partial_since + PARTIAL_NS + 1;
		}
		if (c->paused && (!t || now + NS / 10 < t))
			t = now + NS / 10;	/* look at the memory again soon */
		if (t && (!next || t < next))
			next = t;
	}
	if (s->trace_buf || tracing(s)) {
		int64_t t = 0;

		trace_flush(s, now, &t);
		if (t && (!next || t < next))
			next = t;
	}
	return next;
}

size_t avfs_server_clients(const struct avfs_server *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nclients; i++)
		n += s->clients[i] && !s->clients[i]->dead;
	return n;
}

const char *avfs_server_path(const struct avfs_server *s)
{
	return s->path;
}
