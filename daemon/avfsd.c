/*
 * avfsd — the AVFS daemon (SPEC §1, §9, §10): mounts a formatted device or image, serves it
 * through FUSE and to libavio clients over a Unix socket, and sends every device request
 * through the traffic mixer. One thread, one event loop on io_uring: polls on the FUSE fd,
 * the listening and client sockets, a signalfd and the disk backend's ring, with the hold
 * timer as the wait's timeout. The file system core and the scheduler are the code avfs-sim
 * runs; this file only moves events between them and the world.
 */
#include "config.h"
#include "avfsd_i.h"
#include "hddmodel.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ll
#define COMMIT_PERIOD (5 * NS)
#define CLIENT_OUT_MAX (64u << 20)	/* unread replies: beyond, stop reading its requests */
#define CLIENT_OUT_HARD (512u << 20)	/* beyond this a client is dropped */
#define CLIENT_READ_BYTES (256u << 20)	/* inline read data in flight + unread, per client */

enum { UD_FUSE = 1, UD_LISTEN, UD_SIGNAL, UD_DISK, UD_CLIENT = 16 };

int64_t avfsd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

void avfsd_log(struct daemon *dm, int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	va_list ap;

	if (level > dm->log_level)
		return;
	fprintf(stderr, "avfsd: %s: ", names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void *avfsd_alloc(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 4096, len ? len : 4096) ? NULL : p;
}

struct dreq *avfsd_dreq(uint64_t off, uint64_t len, bool write, void *buf, dreq_cb cb, void *arg)
{
	struct dreq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->io.off = off;
	q->io.len = len;
	q->io.write = write;
	q->buf = buf;
	q->cb = cb;
	q->arg = arg;
	return q;
}

void avfsd_dreq_free(struct dreq *q)
{
	free(q);
}

/* ---- clients (libavio) ---- */


static void client_drop(struct daemon *dm, struct client *c, const char *why);

static void arm_poll(struct daemon *dm, int fd, unsigned events, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&dm->ring);

	if (!sqe) {
		io_uring_submit(&dm->ring);
		sqe = io_uring_get_sqe(&dm->ring);
	}
	if (!sqe)
		return;	/* cannot happen with the ring sized for our fds */
	io_uring_prep_poll_add(sqe, fd, events);
	io_uring_sqe_set_data64(sqe, ud);
}

static void client_flush(struct daemon *dm, struct client *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!c->pollout) {
				c->pollout = true;
				arm_poll(dm, c->fd, POLLOUT, UD_CLIENT + (uint64_t)c->idx * 2 + 1);
			}
			return;
		}
		if (n <= 0) {
			client_drop(dm, c, "send failed");
			return;
		}
		c->outoff += (size_t)n;
		c->throttled_since = avfsd_now();	/* it reads: progress */
	}
	c->outoff = c->outlen = 0;
	if (c->throttled) {	/* backpressure released: read its requests again */
		c->throttled = false;
		arm_poll(dm, c->fd, POLLIN, UD_CLIENT + (uint64_t)c->idx * 2);
	}
}

void avfsd_client_send(struct daemon *dm, struct client *c, uint16_t type, uint64_t tag,
		       const void *a, size_t alen, const void *b, size_t blen)
{
	struct avfs_msg_hdr h = { .magic = AVFS_PROTO_MAGIC, .type = type | AVFS_MSG_REPLY,
				  .len = (uint32_t)(alen + blen), .tag = tag };
	size_t need = c->outlen + sizeof(h) + alen + blen;

	if (c->dead)
		return;
	if (c->outlen == c->outoff)
		c->throttled_since = avfsd_now();	/* the clock of "not reading" starts now */
	if (need - c->outoff > CLIENT_OUT_HARD) {
		client_drop(dm, c, "it does not read its replies");
		return;
	}
	if (need > c->outcap) {
		size_t cap = c->outcap ? c->outcap : 65536;
		uint8_t *o;

		while (cap < need)
			cap *= 2;
		o = realloc(c->out, cap);
		if (!o) {
			client_drop(dm, c, "out of memory");
			return;
		}
		c->out = o;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, &h, sizeof(h));
	memcpy(c->out + c->outlen + sizeof(h), a, alen);
	if (blen)
		memcpy(c->out + c->outlen + sizeof(h) + alen, b, blen);
	c->outlen += sizeof(h) + alen + blen;
	if (!c->throttled && c->outlen - c->outoff > CLIENT_OUT_MAX) {
		c->throttled = true;	/* stop taking its requests until it reads */
		c->throttled_since = avfsd_now();
	}
	client_flush(dm, c);
}

static void client_unref(struct daemon *dm, struct client *c)
{
	if (--c->refs > 0)
		return;
	if (c->shm)
		munmap(c->shm, c->shmlen);
	free(c->in);
	free(c->out);
	free(c->handles);
	dm->clients[c->idx] = NULL;
	free(c);
}

static void client_close(struct client *c)
{
	/* shutdown first: a poll still armed on the socket holds it open, and the peer must
	 * see the end of the connection now */
	shutdown(c->fd, SHUT_RDWR);
	close(c->fd);
	c->fd = -1;
}

static bool cio_cancel(struct daemon *dm, struct cio *io);

static void client_drop(struct daemon *dm, struct client *c, const char *why)
{
	if (c->dead)
		return;
	/* a client that simply went away is news only when debugging */
	avfsd_log(dm, strcmp(why, "disconnected") ? 1 : 3, "client pid %u uid %u %s%s", c->pid,
		  c->uid, strcmp(why, "disconnected") ? "dropped: " : "", why);
	c->dead = true;
	client_close(c);
	/* its queued (and parked) requests leave the disk's queue; those on the device
	 * complete, their replies going nowhere; then its reservations end */
	for (struct cio *io = c->ios, *next; io; io = next) {
		next = io->next;
		cio_cancel(dm, io);
	}
	avfsd_client_streams_end(dm, c);
	client_unref(dm, c);
}

static void cio_finish(struct daemon *dm, struct cio *io)
{
	struct client *c = io->c;
	struct avfs_msg_io_reply rep = { .res = io->canceled ? -ECANCELED : io->res };

	for (struct cio **pp = &c->ios; *pp; pp = &(*pp)->next)
		if (*pp == io) {
			*pp = io->next;
			break;
		}
	c->inflight--;
	avfsd_stream_done(dm, io, avfsd_now());
	if (!io->write && io->data)
		c->read_bytes -= io->nbytes;
	if (!io->write && io->data && rep.res > 0)
		avfsd_client_send(dm, c, AVFS_MSG_IO, io->tag, &rep, sizeof(rep), io->data, (size_t)rep.res);
	else
		avfsd_client_send(dm, c, AVFS_MSG_IO, io->tag, &rep, sizeof(rep), NULL, 0);
	if (rep.res == -ETIME)
		dm->stats_etime++;
	free(io->data);
	free(io);
	client_unref(dm, c);
}

static void cio_part_done(struct daemon *dm, struct dreq *q, int res)
{
	struct cio *io = q->arg;

	if (res < 0 && io->res >= 0)
		io->res = res;
	for (struct dreq **pp = &io->parts; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	avfsd_dreq_free(q);
	if (--io->pending == 0)
		cio_finish(dm, io);
}

static bool may(const struct client *c, const struct avfs_stat *a, uint32_t access)
{
	uint32_t bits = (access & AVFS_OPEN_READ ? 4 : 0) | (access & AVFS_OPEN_WRITE ? 2 : 0);
	uint32_t have;

	if (c->uid == 0)
		return true;
	have = c->uid == a->uid ? (a->mode >> 6) & 7 : c->gid == a->gid ? (a->mode >> 3) & 7 :
	       a->mode & 7;
	return (have & bits) == bits;
}

static void handle_open(struct daemon *dm, struct client *c, uint64_t tag,
			const struct avfs_msg_open *m)
{
	struct avfs_msg_open_reply rep = { 0 };
	struct avfs_stat a;
	void *h;

	if (m->dev != dm->mnt_dev)
		rep.res = -EXDEV;
	else if (!m->access || m->access & ~(AVFS_OPEN_READ | AVFS_OPEN_WRITE))
		rep.res = -EINVAL;
	else if (avfs_fs_getattr(dm->fs, m->ino, &a))
		rep.res = -ENOENT;
	else if (!S_ISREG(a.mode))
		rep.res = -EINVAL;
	else if (!may(c, &a, m->access))
		rep.res = -EACCES;	/* checked as the mount would, with the peer's credentials */
	else if (c->nhandles >= 4096)
		rep.res = -EMFILE;
	else if (!(h = realloc(c->handles, (c->nhandles + 1) * sizeof(*c->handles))))
		rep.res = -ENOMEM;
	else {
		c->handles = h;
		c->handles[c->nhandles].ino = m->ino;
		c->handles[c->nhandles].access = m->access;
		c->handles[c->nhandles].stream = 0;
		rep.handle = c->nhandles++;
	}
	avfsd_client_send(dm, c, AVFS_MSG_OPEN, tag, &rep, sizeof(rep), NULL, 0);
}

static void handle_io(struct daemon *dm, struct client *c, uint64_t tag, const struct avfs_msg_io *m,
		      const uint8_t *payload, size_t plen)
{
	struct avfs_msg_io_reply rep = { 0 };
	uint64_t bs = avfs_fs_block_size(dm->fs);
	int64_t now = avfsd_now();
	struct avfs_bext ext[8];
	struct cio *io;
	uint64_t ino, end;
	struct avfs_stat a;
	bool park = false;
	int n;

	if (m->handle >= c->nhandles || m->op > AVFS_IO_WRITE || m->where > AVFS_IO_SHM)
		rep.res = -EBADF;
	else if (!m->nbytes || m->nbytes > AVFS_PROTO_MAX_IO || m->offset % AVFS_PROTO_ALIGN ||
		 m->nbytes % AVFS_PROTO_ALIGN || m->offset > (1ull << 60))
		rep.res = -EINVAL;
	else if (!(c->handles[m->handle].access & (m->op == AVFS_IO_WRITE ? AVFS_OPEN_WRITE :
						     AVFS_OPEN_READ)))
		rep.res = -EBADF;
	else if (m->where == AVFS_IO_SHM && (!c->shm || m->shm_off % 4096 ||
					    m->shm_off > c->shmlen || m->nbytes > c->shmlen - m->shm_off))
		rep.res = -EINVAL;
	else if (m->op == AVFS_IO_WRITE && m->where == AVFS_IO_INLINE && plen != m->nbytes)
		rep.res = -EINVAL;
	else if (m->deadline && m->deadline <= now)
		rep.res = -ETIME;	/* already too late: never issued */
	else if (c->inflight >= AVFS_PROTO_QUEUE)
		rep.res = -EAGAIN;
	else if (m->op == AVFS_IO_READ && m->where == AVFS_IO_INLINE &&
		 c->read_bytes + (c->outlen - c->outoff) + m->nbytes > CLIENT_READ_BYTES)
		rep.res = -EAGAIN;	/* bounded memory per client: let it read what it has */
	if (rep.res) {
		if (rep.res == -ETIME)
			dm->stats_etime++;
		avfsd_client_send(dm, c, AVFS_MSG_IO, tag, &rep, sizeof(rep), NULL, 0);
		return;
	}
	ino = c->handles[m->handle].ino;
	if (avfs_fs_getattr(dm->fs, ino, &a)) {
		rep.res = -EBADF;	/* the file was deleted */
		avfsd_client_send(dm, c, AVFS_MSG_IO, tag, &rep, sizeof(rep), NULL, 0);
		return;
	}
	io = calloc(1, sizeof(*io));
	if (!io) {
		rep.res = -ENOMEM;
		avfsd_client_send(dm, c, AVFS_MSG_IO, tag, &rep, sizeof(rep), NULL, 0);
		return;
	}
	io->c = c;
	io->tag = tag;
	io->write = m->op == AVFS_IO_WRITE;
	/* its reservation, if any: the service's deadline and the bandwidth class */
	io->deadline = avfsd_stream_charge(dm, c, m->handle, m->nbytes, m->deadline, now,
					   &io->stream, &park);
	io->client_deadline = m->deadline;
	io->want = m->nbytes;
	if (io->write)
		avfsd_ra_invalidate(dm, ino);	/* FUSE readers must not see old data */
	if (m->where == AVFS_IO_SHM) {
		io->target = c->shm + m->shm_off;	/* zero copy: the device works in it */
	} else {
		io->data = avfsd_alloc(m->nbytes);
		if (!io->data) {
			free(io);
			rep.res = -ENOMEM;
			avfsd_client_send(dm, c, AVFS_MSG_IO, tag, &rep, sizeof(rep), NULL, 0);
			return;
		}
		if (io->write)
			memcpy(io->data, payload, m->nbytes);
		else
			c->read_bytes += m->nbytes;
		io->target = io->data;
		io->nbytes = m->nbytes;
	}
	end = m->offset + m->nbytes;
	if (!io->write) {
		if (m->offset >= a.size)
			end = m->offset;
		else if (end > a.size)
			end = a.size;
		io->res = (int64_t)(end - m->offset);	/* shm or bounce: holes are zeroed below */
	} else {
		io->res = (int64_t)m->nbytes;
		/* a write past a partly written last page: its stale tail must not appear */
		if (m->offset > a.size && a.size % AVFS_PAGE) {
			uint64_t dev;
			uint32_t keep;

			if (!avfs_fs_tail_page(dm->fs, ino, a.size, &dev, &keep)) {
				rep.res = -EINVAL;	/* libavio writes whole pages: refuse the hole */
				free(io->data);
				free(io);
				avfsd_client_send(dm, c, AVFS_MSG_IO, tag, &rep, sizeof(rep), NULL, 0);
				return;
			}
		}
	}
	c->inflight++;
	c->refs++;
	io->next = c->ios;
	c->ios = io;
	io->pending = 1;	/* guard */
	for (uint64_t pos = m->offset; pos < end;) {
		n = io->write ? avfs_fs_map_write(dm->fs, ino, pos, end - pos, (int64_t)time(NULL) * NS,
						  ext, 8)
			      : avfs_fs_map_read(dm->fs, ino, pos, end - pos, ext, 8);
		if (n <= 0) {
			io->res = n < 0 ? n : -EIO;
			break;
		}
		for (int i = 0; i < n && pos < end; i++) {
			uint64_t hi = ext[i].file_off + bs < end ? ext[i].file_off + bs : end;
			uint64_t vend = ext[i].file_off + (uint64_t)ext[i].valid * AVFS_PAGE;
			uint64_t lo = pos;
			struct dreq *q;

			if (!io->write) {
				/* uninitialized pages and holes read as zeros */
				uint64_t rend = ext[i].dev_off ? (vend < hi ? vend : hi) : lo;

				if (rend < hi)
					memset(io->target + (rend > lo ? rend : lo) - m->offset, 0,
					       hi - (rend > lo ? rend : lo));
				hi = rend > lo ? rend : lo;
				if (hi == lo) {
					pos = ext[i].file_off + bs < end ? ext[i].file_off + bs : end;
					continue;
				}
			} else if (ext[i].valid < (lo - ext[i].file_off) / AVFS_PAGE) {
				/* pages between the initialized part and the data: zeros (rare for
				 * streams, which append) */
				uint64_t z0 = vend, z1 = lo;
				uint8_t *zb = avfsd_alloc(z1 - z0);

				if (!zb) {
					io->res = -ENOMEM;
					break;
				}
				memset(zb, 0, z1 - z0);
				q = avfsd_dreq(ext[i].dev_off + (z0 - ext[i].file_off), z1 - z0, true, zb,
					       cio_part_done, io);
				q->data_write = true;
				io->pending++;
				q->next = io->parts;
				io->parts = q;
				if (avfsd_submit(dm, q))
					cio_part_done(dm, q, -EIO);
				/* (zb is freed with the process' bounce buffers: small, rare) */
			}
			q = avfsd_dreq(ext[i].dev_off + (lo - ext[i].file_off), hi - lo, io->write,
				       io->target + (lo - m->offset), cio_part_done, io);
			if (!q) {
				io->res = -ENOMEM;
				break;
			}
			q->io.deadline = io->deadline;
			q->stream = io->stream;
			q->data_write = io->write;
			io->pending++;
			q->next = io->parts;
			io->parts = q;
			if (!park && avfsd_submit(dm, q))
				cio_part_done(dm, q, q->io.deadline && q->io.deadline <= avfsd_now() ?
						      -ETIME : -EIO);
			if (io->deadline)
				dm->stats_rt++;
			else
				dm->stats_be++;
			pos = ext[i].file_off + bs < end ? ext[i].file_off + bs : end;
			pos = pos < hi ? pos : hi;
			pos = hi;
		}
	}
	if (park) {
		if (io->res < 0 || !io->parts) {
			avfsd_cio_submit(dm, io);	/* nothing to hold, or an error to report */
		} else {
			avfsd_stream_park(dm, io);
			avfsd_streams_tick(dm, now);
		}
	}
	if (--io->pending == 0)
		cio_finish(dm, io);
}

void avfsd_cio_submit(struct daemon *dm, struct cio *io)
{
	io->pending++;	/* a guard: the last failing part must not free io under us */
	for (struct dreq *q = io->parts, *next; q; q = next) {
		next = q->next;
		if (avfsd_submit(dm, q))
			cio_part_done(dm, q, q->io.deadline && q->io.deadline <= avfsd_now() ?
					      -ETIME : -EIO);
	}
	if (--io->pending == 0)
		cio_finish(dm, io);
}

/* Withdraw io if no part of it has reached the device: true when it is canceled (and
 * completed with -ECANCELED if nothing else holds it). */
static bool cio_cancel(struct daemon *dm, struct cio *io)
{
	if (io->canceled)
		return false;
	for (struct dreq *q = io->parts; q; q = q->next)
		if (q->dispatched)
			return false;	/* a part is on the device: all of it completes */
	if (!avfsd_stream_unpark(dm, io)) {	/* a parked read is in no queue yet */
		for (struct dreq *q = io->parts; q; q = q->next) {
			if (avfs_sched_cancel(&dm->sched, &q->io)) {
				/* cannot happen with no part dispatched; never leave a part behind */
				avfsd_log(dm, 0, "cancel: the scheduler kept a queued request");
				return false;
			}
			if (!q->io.deadline && !q->spare)
				dm->be_pending--;
		}
	}
	io->canceled = true;
	while (io->parts) {
		struct dreq *q = io->parts;

		io->parts = q->next;
		avfsd_dreq_free(q);
		io->pending--;
	}
	if (io->pending == 0)
		cio_finish(dm, io);
	return true;
}

static void handle_cancel(struct daemon *dm, struct client *c, uint64_t tag,
			  const struct avfs_msg_cancel *m)
{
	struct avfs_msg_cancel_reply rep = { .res = AVFS_CANCEL_GONE };

	for (struct cio *io = c->ios; io; io = io->next) {
		if (io->tag != m->target)
			continue;
		rep.res = AVFS_CANCEL_BUSY;
		if (io->parts && cio_cancel(dm, io))
			rep.res = AVFS_CANCEL_DONE;	/* its -ECANCELED is on its way */
		break;
	}
	avfsd_client_send(dm, c, AVFS_MSG_CANCEL, tag, &rep, sizeof(rep), NULL, 0);
}

static void client_input(struct daemon *dm, struct client *c)
{
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t n;

		if (c->incap - c->inlen < 65536) {
			size_t cap = c->incap ? c->incap * 2 : 131072;
			uint8_t *in;

			if (cap > 2 * (size_t)AVFS_PROTO_MAX_PAYLOAD + 65536) {
				client_drop(dm, c, "message too large");
				return;
			}
			in = realloc(c->in, cap);
			if (!in) {
				client_drop(dm, c, "out of memory");
				return;
			}
			c->in = in;
			c->incap = cap;
		}
		iov.iov_base = c->in + c->inlen;
		iov.iov_len = c->incap - c->inlen;
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			client_drop(dm, c, n == 0 ? "disconnected" : "receive failed");
			return;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				int fd;
				struct stat st;

				memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
				/* the client's buffer memory, mapped once; a second one replaces it */
				if (!fstat(fd, &st) && st.st_size > 0 && st.st_size <= (1ll << 34)) {
					void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
						       MAP_SHARED, fd, 0);

					if (p != MAP_FAILED) {
						if (c->shm)
							munmap(c->shm, c->shmlen);
						c->shm = p;
						c->shmlen = (size_t)st.st_size;
					}
				}
				close(fd);
			}
		}
		c->inlen += (size_t)n;
	}
	/* parse whole messages */
	while (!c->dead && c->inlen >= sizeof(struct avfs_msg_hdr)) {
		struct avfs_msg_hdr h;
		const uint8_t *pl;

		memcpy(&h, c->in, sizeof(h));
		if (h.magic != AVFS_PROTO_MAGIC || h.len > AVFS_PROTO_MAX_PAYLOAD) {
			client_drop(dm, c, "malformed message");
			return;
		}
		if (c->inlen < sizeof(h) + h.len)
			break;
		pl = c->in + sizeof(h);
		switch (h.type) {
		case AVFS_MSG_HELLO: {
			struct avfs_msg_hello_reply rep = { .version = AVFS_PROTO_VERSION,
							    .max_io = AVFS_PROTO_MAX_IO,
							    .queue = AVFS_PROTO_QUEUE };
			struct avfs_msg_hello m;

			if (h.len != sizeof(m)) {
				client_drop(dm, c, "malformed HELLO");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			rep.res = m.version == AVFS_PROTO_VERSION ? 0 : -EPROTONOSUPPORT;
			avfsd_client_send(dm, c, AVFS_MSG_HELLO, h.tag, &rep, sizeof(rep), NULL, 0);
			break;
		}
		case AVFS_MSG_OPEN: {
			struct avfs_msg_open m;

			if (h.len != sizeof(m)) {
				client_drop(dm, c, "malformed OPEN");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			handle_open(dm, c, h.tag, &m);
			break;
		}
		case AVFS_MSG_CLOSE:
			if (h.len != sizeof(struct avfs_msg_close)) {
				client_drop(dm, c, "malformed CLOSE");
				return;
			}
			break;	/* handles are cheap and live as long as the connection */
		case AVFS_MSG_IO: {
			struct avfs_msg_io m;

			if (h.len < sizeof(m)) {
				client_drop(dm, c, "malformed IO");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			handle_io(dm, c, h.tag, &m, pl + sizeof(m), h.len - sizeof(m));
			break;
		}
		case AVFS_MSG_CANCEL: {
			struct avfs_msg_cancel m;

			if (h.len != sizeof(m)) {
				client_drop(dm, c, "malformed CANCEL");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			handle_cancel(dm, c, h.tag, &m);
			break;
		}
		case AVFS_MSG_RESERVE: {
			struct avfs_msg_reserve m;

			if (h.len != sizeof(m)) {
				client_drop(dm, c, "malformed RESERVE");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			avfsd_handle_reserve(dm, c, h.tag, &m);
			break;
		}
		case AVFS_MSG_RELEASE: {
			struct avfs_msg_release m;

			if (h.len != sizeof(m)) {
				client_drop(dm, c, "malformed RELEASE");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			avfsd_handle_release(dm, c, h.tag, &m);
			break;
		}
		case AVFS_MSG_STATS: {
			struct avfs_msg_stats m;

			if (h.len != sizeof(m)) {
				client_drop(dm, c, "malformed STATS");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			avfsd_handle_stats(dm, c, h.tag, &m);
			break;
		}
		case AVFS_MSG_ADMIN:
			if (h.len > 256) {
				client_drop(dm, c, "malformed ADMIN");
				return;
			}
			avfsd_handle_admin(dm, c, h.tag, (const char *)pl, h.len);
			break;
		case AVFS_MSG_TRACE: {
			struct avfs_msg_trace m;

			if (h.len != sizeof(m)) {
				client_drop(dm, c, "malformed TRACE");
				return;
			}
			memcpy(&m, pl, sizeof(m));
			avfsd_handle_trace(dm, c, h.tag, &m);
			break;
		}
		case AVFS_MSG_SHM: {
			struct avfs_msg_shm_reply rep = { .res = c->shm ? 0 : -EINVAL };

			avfsd_client_send(dm, c, AVFS_MSG_SHM, h.tag, &rep, sizeof(rep), NULL, 0);
			break;
		}
		default:
			client_drop(dm, c, "unknown message type");
			return;
		}
		if (c->dead)
			return;
		memmove(c->in, c->in + sizeof(h) + h.len, c->inlen - sizeof(h) - h.len);
		c->inlen -= sizeof(h) + h.len;
	}
	if (c->dead)
		return;
	if (c->outlen - c->outoff > CLIENT_OUT_MAX) {
		c->throttled = true;	/* re-armed when its replies drain */
		c->throttled_since = avfsd_now();
	}
	else
		arm_poll(dm, c->fd, POLLIN, UD_CLIENT + (uint64_t)c->idx * 2);
}

static void accept_clients(struct daemon *dm)
{
	for (;;) {
		int fd = accept4(dm->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr;
		socklen_t len = sizeof(cr);
		struct client *c;
		size_t i;

		if (fd < 0)
			break;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
			close(fd);
			continue;
		}
		for (i = 0; i < dm->nclients && dm->clients[i]; i++)
			;
		if (i == dm->nclients) {
			if (dm->nclients >= 1024) {
				avfsd_log(dm, 1, "too many clients: refusing pid %d", cr.pid);
				close(fd);
				continue;
			}
			if (dm->nclients == dm->capclients) {
				size_t cap = dm->capclients ? 2 * dm->capclients : 16;
				struct client **cl = realloc(dm->clients, cap * sizeof(*cl));

				if (!cl) {
					close(fd);
					continue;
				}
				dm->clients = cl;
				dm->capclients = cap;
			}
			dm->nclients++;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->pid = (uint32_t)cr.pid;
		c->refs = 1;
		c->idx = (int)i;
		dm->clients[i] = c;
		avfsd_log(dm, 3, "client pid %d uid %d connected", cr.pid, cr.uid);
		arm_poll(dm, fd, POLLIN, UD_CLIENT + i * 2);
	}
	arm_poll(dm, dm->listen_fd, POLLIN, UD_LISTEN);
}

/* ---- the scheduler and the device ---- */

static void kick(struct daemon *dm);
static void commit_step(struct daemon *dm);

int avfsd_submit(struct daemon *dm, struct dreq *q)
{
	int err;

	q->gen = dm->gen;
	if (q->data_write)
		dm->writes[q->gen & 1]++;
	/* SPEC §6, papers/003 §3.1.3: a chunked data write goes with FUA on its last chunk (the
	 * mixer puts it there), so that the drive's write-back adds no seek behind the next
	 * request; the commit's flush still makes everything durable */
	q->io.fua = q->data_write && dm->sched.conf.chunk && q->io.len > dm->sched.conf.chunk &&
		    dm->sched.conf.rotational;
	err = avfs_sched_submit(&dm->sched, &q->io, avfsd_now());
	if (err) {
		if (q->data_write)
			dm->writes[q->gen & 1]--;
		return err;
	}
	if (!q->io.deadline && !q->spare)
		dm->be_pending++;
	kick(dm);
	return 0;
}

static void finish_dreq(struct daemon *dm, struct dreq *q, int res)
{
	avfsd_dreq_done(dm, q, res, avfsd_now());
	if (!q->io.deadline && !q->spare)
		dm->be_pending--;
	if (q->data_write) {
		dm->writes[q->gen & 1]--;
		if (dm->plan)
			commit_step(dm);	/* a commit may be waiting for these */
	}
	q->cb(dm, q, res);
}

static void kick(struct daemon *dm)
{
	for (;;) {
		struct avfs_sched_cmd cmd;
		unsigned s;

		avfs_sched_next(&dm->sched, avfsd_now(), &cmd);
		if (cmd.kind == AVFS_SCHED_IDLE)
			return;
		if (cmd.kind == AVFS_SCHED_WAIT) {
			dm->hold_at = cmd.at;
			return;
		}
		if (cmd.kind == AVFS_SCHED_FAIL) {
			finish_dreq(dm, (struct dreq *)cmd.io, cmd.err);
			continue;
		}
		for (s = 0; s < dm->nslots && dm->slots[s].io; s++)
			;
		dm->slots[s] = cmd;
		{
			struct dreq *q = (struct dreq *)cmd.io;

			q->dispatched = true;
			struct avfs_disk_req r = {
				.op = cmd.seek ? AVFS_DISK_SEEK : cmd.write ? AVFS_DISK_WRITE : AVFS_DISK_READ,
				.flags = cmd.fua ? AVFS_DISK_FUA : 0, .lba = cmd.off / dm->d->info.lbs,
				.len = cmd.len, .buf = q->buf + (cmd.off - q->io.orig_off), .buf_index = -1,
				.cookie = s,
			};
			int err = avfs_disk_submit(dm->d, &r);

			if (!err)
				avfsd_cmd_start(dm, s, &cmd, avfsd_now());
			if (!err && dm->predicting && !cmd.seek)	/* the transport, learned */
				avfs_rotpred_issued(&dm->rotpred, avfsd_now(), cmd.off, cmd.len);
			if (err) {
				dm->slots[s].io = NULL;
				avfs_sched_done(&dm->sched, &cmd, avfsd_now(), err);
				finish_dreq(dm, q, err);
			}
		}
	}
}

static void disk_completions(struct daemon *dm)
{
	struct avfs_disk_cqe c[16];
	int n;

	while ((n = avfs_disk_reap(dm->d, c, 16)) > 0) {
		int64_t reaped = avfsd_now();

		for (int i = 0; i < n; i++) {
			if (c[i].cookie == UINT64_MAX) {	/* the commit's FLUSH */
				dm->flush_inflight = false;
				if (c[i].res < 0)
					avfsd_log(dm, 0, "flush failed: %s", strerror((int)-c[i].res));
				if (dm->plan) {
					if (c[i].res < 0) {
						avfs_fs_plan_done(dm->fs, dm->plan, (int)c[i].res);
						avfs_plan_free(dm->plan);
						dm->plan = NULL;
					} else {
						dm->plan_i++;
						commit_step(dm);
					}
				}
				continue;
			}
			{
				struct avfs_sched_cmd cmd = dm->slots[c[i].cookie];
				int res = c[i].res < 0 ? (int)c[i].res : 0;

				dm->slots[c[i].cookie].io = NULL;
				/* as close to the completion as we know it: the predictor's phase */
				if (dm->predicting && c[i].res >= 0)
					avfs_rotpred_observe(&dm->rotpred, reaped, cmd.off + cmd.len,
							     !cmd.seek);
				avfsd_cmd_end(dm, (unsigned)c[i].cookie, (struct dreq *)cmd.io,
					      avfsd_now());
				if (avfs_sched_done(&dm->sched, &cmd, avfsd_now(), (int)c[i].res))
					finish_dreq(dm, (struct dreq *)cmd.io, res);
			}
		}
	}
	kick(dm);
}

/* ---- commits (ordered mode) ---- */

static void answer_fsyncs(struct daemon *dm, int err)
{
	struct fsync_wait **pp = &dm->fsyncs;

	while (*pp) {
		struct fsync_wait *w = *pp;

		if (err || dm->commits_done > w->after) {
			*pp = w->next;
			fuse_reply_err(w->req, err ? EIO : 0);
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

static void meta_done(struct daemon *dm, struct dreq *q, int res)
{
	dm->plan_busy = false;
	avfsd_dreq_free(q);
	if (!dm->plan)
		return;
	if (res < 0) {
		avfsd_log(dm, 0, "metadata write failed: %s; read-only until remounted",
			  strerror(-res));
		avfs_fs_plan_done(dm->fs, dm->plan, res);
		avfs_plan_free(dm->plan);
		dm->plan = NULL;
		answer_fsyncs(dm, res);
		return;
	}
	dm->plan_i++;
	commit_step(dm);
}

/* Run the plan one operation at a time: writes go through the scheduler as best effort; a
 * FLUSH waits until the data writes of this transaction are complete (ordered mode: data
 * before the commit record), then flushes the device. */
static void commit_step(struct daemon *dm)
{
	struct avfs_plan *p = dm->plan;
	const struct avfs_plan_op *o;

	if (!p || dm->flush_inflight || dm->plan_busy)
		return;	/* one operation of the plan at a time: its order is the point */
	if (dm->plan_i == p->n) {
		avfs_fs_plan_done(dm->fs, p, 0);
		avfs_plan_free(p);
		dm->plan = NULL;
		dm->commits_done++;
		answer_fsyncs(dm, 0);
		if (dm->commit_wanted)
			avfsd_commit_soon(dm);
		return;
	}
	o = &p->ops[dm->plan_i];
	if (o->kind == AVFS_PLAN_FLUSH) {
		struct avfs_disk_req r = { .op = AVFS_DISK_FLUSH, .buf_index = -1, .cookie = UINT64_MAX };

		if (dm->writes[(dm->gen - 1) & 1])
			return;	/* called again as those writes complete */
		dm->flush_inflight = true;
		if (avfs_disk_submit(dm->d, &r)) {
			dm->flush_inflight = false;
			meta_done(dm, avfsd_dreq(0, 0, false, NULL, NULL, NULL), -EIO);
		}
		return;
	}
	{
		struct dreq *q = avfsd_dreq(o->off, o->len, true, (void *)o->buf, meta_done, NULL);

		dm->plan_busy = true;
		if (!q || avfsd_submit(dm, q))
			meta_done(dm, q ? q : avfsd_dreq(0, 0, false, NULL, NULL, NULL), -EIO);
	}
}

void avfsd_commit_soon(struct daemon *dm)
{
	int err;

	dm->commit_wanted = true;
	if (dm->plan)
		return;	/* one at a time; this one follows */
	dm->commit_wanted = false;
	err = avfs_fs_commit(dm->fs, (int64_t)time(NULL) * NS, &dm->plan);
	if (err) {
		avfsd_log(dm, 0, "commit failed: %s (%s)", strerror(-err), avfs_fs_why(dm->fs));
		answer_fsyncs(dm, err);
		return;
	}
	dm->next_commit = avfsd_now() + COMMIT_PERIOD;
	if (!dm->plan) {	/* nothing changed: already durable */
		dm->commits_done++;
		answer_fsyncs(dm, 0);
		return;
	}
	dm->gen++;	/* data writes issued from now on belong to the next transaction */
	dm->plan_i = 0;
	commit_step(dm);
}

/* ---- setup and main loop ---- */

static int listen_on(struct daemon *dm, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		avfsd_log(dm, 0, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	snprintf(dm->sock_path, sizeof(dm->sock_path), "%s", path);
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);	/* a stale socket of a dead daemon (the device lock says none runs) */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		int err = -errno;

		close(fd);
		return err;
	}
	chmod(path, 0666);	/* access is checked per file with the peer's credentials */
	dm->listen_fd = fd;
	return 0;
}

/* The device number of the mount at path, from /proc/self/mountinfo (the last mount there). */
static uint64_t mount_dev(const char *path)
{
	char real[4096], line[8192];
	uint64_t dev = 0;
	FILE *f;

	if (!realpath(path, real))
		return 0;
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		char mp[4096];

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) == 3 && !strcmp(mp, real))
			dev = makedev(maj, min);
	}
	fclose(f);
	return dev;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: avfsd [--foreground] [--socket PATH] [--config FILE] [--disk-model NAME]\n"
		"             [--allow-other] [--verbose] [--set NAME=VALUE] DEVICE MOUNTPOINT\n"
		"  Mounts an AVFS file system (made by mkfs.avfs) and serves it through FUSE and to\n"
		"  libavio clients. SIGTERM, SIGINT or fusermount3 -u: drain, commit, unmount, exit 0.\n"
		"  --socket PATH      client socket (default /run/avfs/<device name>.sock)\n"
		"  --config FILE      scheduler settings (NAME=VALUE) and admission settings and\n"
		"                     quotas (docs/ADMIN.md), one per line, # comments\n"
		"  --disk-model NAME  service-time parameters of a named model instead of the\n"
		"                     superblock's (avfs-250g, barracuda-500g, st318437, ...)\n"
		"  --set NAME=VALUE   one scheduler setting (see avfs-sim --help for the list)\n"
		"  --backend NAME     how to drive the device (docs/ADMIN.md): uring (io_uring,\n"
		"                     O_DIRECT: image files, any block device), sg (SCSI commands\n"
		"                     over SG_IO: READ/WRITE(16) with FUA, SEEK(10) for the\n"
		"                     sub-seeks of split), nvme (NVMe passthrough on /dev/ngXnY),\n"
		"                     or auto (default: sg on a SCSI disk when split is set,\n"
		"                     io_uring otherwise)\n");
}

/* One line on what the device is and how it is driven (the same facts avfs-admin status shows). */
static void log_disk(struct daemon *dm)
{
	const struct avfs_disk_info *in = &dm->d->info;
	const struct avfs_disk_ident *id = &dm->d->ident;
	char who[200] = "", limit[48] = "";

	if (*id->transport)
		snprintf(who, sizeof(who), ", %s %s %s %s serial '%s'", id->transport, id->vendor,
			 id->product, id->firmware, id->serial);
	if (id->max_transfer)
		snprintf(limit, sizeof(limit), ", max transfer %u bytes", id->max_transfer);
	avfsd_log(dm, 2, "disk %s: backend %s%s, %llu bytes, lbs %u, %s%s%s, SEEK %s",
		  dm->dev_path, id->backend, who, (unsigned long long)in->size, in->lbs,
		  in->rotational ? "rotational" : "non-rotational",
		  id->wce_known ? (id->wce ? ", write cache on" : ", write cache off") : "", limit,
		  in->has_seek ? "yes" : "no");
}

static int apply_setting(struct daemon *dm, struct avfs_sched_conf *c, const char *nv)
{
	char name[64], why[160];
	const char *eq = strchr(nv, '=');

	if (!eq || eq == nv || (size_t)(eq - nv) >= sizeof(name)) {
		avfsd_log(dm, 0, "setting '%s': NAME=VALUE", nv);
		return -EINVAL;
	}
	memcpy(name, nv, (size_t)(eq - nv));
	name[eq - nv] = 0;
	if (avfs_sched_conf_set(c, name, eq + 1, why, sizeof(why))) {
		avfsd_log(dm, 0, "%s", why);
		return -EINVAL;
	}
	dm->depth_set |= !strcmp(name, "depth");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "disk-model", required_argument, NULL, 'm' },
		{ "backend", required_argument, NULL, 'b' },
		{ "allow-other", no_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "set", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct daemon dmv = { .listen_fd = -1, .sig_fd = -1, .lock_fd = -1, .log_level = 2 };
	struct daemon *dm = &dmv;
	struct avfs_sched_conf conf;
	const char *sock = NULL, *config = NULL, *model = NULL;
	enum avfs_backend backend = AVFS_BACKEND_AUTO;
	struct avfs_rotpred_params named = { 0 };
	bool foreground = false;
	struct avfs_fsio *io = NULL;
	struct avfs_mount_report rep;
	char why[256] = "", sockbuf[108];
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	sigset_t mask;
	struct stat st;
	int c, err, ret = 1;

	avfs_sched_conf_default(&conf);
	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': foreground = true; break;
		case 's': sock = optarg; break;
		case 'c': config = optarg; break;
		case 'm': model = optarg; break;
		case 'b':
			if (avfs_backend_parse(optarg, &backend)) {
				avfsd_log(dm, 0, "--backend %s: one of auto, uring, sg, nvme", optarg);
				return 2;
			}
			break;
		case 'o': dm->allow_other = true; break;
		case 'v': dm->log_level = 3; break;
		case 'S':
			if (apply_setting(dm, &conf, optarg))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("avfsd %s\n", AVFS_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 2 != argc) {
		usage(stderr);
		return 2;
	}
	dm->dev_path = argv[optind];
	dm->mnt_path = argv[optind + 1];
	if (config) {
		FILE *f = fopen(config, "r");
		char line[256];

		if (!f) {
			avfsd_log(dm, 0, "cannot read %s: %s", config, strerror(errno));
			return 2;
		}
		while (fgets(line, sizeof(line), f)) {
			char *s = line + strspn(line, " \t");

			s[strcspn(s, "\r\n#")] = 0;
			if (!strchr(s, '=') || strcspn(s, " \t") < strcspn(s, "="))
				continue;	/* an admission setting: streams.c reads those */
			if (*s && apply_setting(dm, &conf, s)) {
				fclose(f);
				return 2;
			}
		}
		fclose(f);
	}
	if (stat(dm->mnt_path, &st) || !S_ISDIR(st.st_mode)) {
		avfsd_log(dm, 0, "mount point %s is not a directory", dm->mnt_path);
		return 2;
	}
	/* into the background before any ring exists (rings belong to their creator); logs
	 * stay on stderr */
	if (!foreground && daemon(0, 1)) {
		avfsd_log(dm, 0, "cannot go to the background: %s", strerror(errno));
		return 1;
	}
	/* one daemon per device: an exclusive lock, held while we live */
	dm->lock_fd = open(dm->dev_path, O_RDONLY | O_CLOEXEC);
	if (dm->lock_fd < 0) {
		avfsd_log(dm, 0, "cannot open %s: %s", dm->dev_path, strerror(errno));
		return 1;
	}
	if (flock(dm->lock_fd, LOCK_EX | LOCK_NB)) {
		avfsd_log(dm, 0, "%s is in use by another avfsd (locked): refusing", dm->dev_path);
		return 1;
	}
	err = avfs_disk_open(dm->dev_path, backend, conf.split_bytes ? AVFS_OPEN_SEEK : 0,
			     &dm->d, why, sizeof(why));
	if (err) {
		avfsd_log(dm, 0, "%s", why);
		return 1;
	}
	log_disk(dm);
	if (conf.split_bytes && !dm->d->info.has_seek) {
		avfsd_log(dm, 0, "split needs SEEK commands, which the %s backend does not give "
			  "(--backend sg on a SCSI disk does)", dm->d->ident.backend);
		goto out;
	}
	err = avfs_fsio_mount(dm->d, 0, &io, &rep, why, sizeof(why));
	if (err) {
		avfsd_log(dm, 0, "cannot mount %s: %s", dm->dev_path, why);
		goto out;
	}
	dm->fs = io->fs;
	avfsd_log(dm, 2, "mounted %s: journal replayed %llu transactions, %llu blocks repaired "
		  "from the backup region", dm->dev_path, (unsigned long long)rep.replayed_txn,
		  (unsigned long long)rep.repaired_primary);
	if (rep.orphans_freed)
		avfsd_log(dm, 2, "freed %llu orphan inodes (files unlinked while open before the "
			  "last stop)", (unsigned long long)rep.orphans_freed);
	{
		const struct avfs_super *sb = avfs_fs_super(dm->fs);
		struct avfs_sched_conf mc;

		avfs_sched_conf_default(&mc);
		conf.model = (struct avfs_svc_model){ .tr_ns = (double)sb->rotation_ns,
						      .tk_ns = (double)sb->seek_avg_ns,
						      .dmax = (double)sb->rate_max,
						      .dmin = (double)sb->rate_min,
						      .lmax = dm->d->info.size };
		/* a named model's service-time parameters (SPEC §5.2), of the part of it the
		 * device is (its outer part when smaller: an emulated disk, hddemu --size), and its
		 * mechanics for the predictor */
		if (model && avfs_rotpred_named(model, dm->d->info.size, &conf.model, &named,
						&dm->geom)) {
			avfsd_log(dm, 0, "--disk-model %s: not a rotating disk model (%s)", model,
				  "see avfs-sim --help for the names");
			goto out;
		}
		if (conf.model.dmax <= 0 || conf.model.dmin <= 0)
			conf.model = mc.model, conf.model.lmax = dm->d->info.size;
	}
	conf.rotational = dm->d->info.rotational || !dm->d->info.is_blockdev;
	if (!conf.rotational && !dm->depth_set)	/* SPEC §5.6: several commands in flight */
		conf.depth = AVFSD_FLASH_DEPTH;
	if (conf.jit || conf.split_bytes) {	/* papers/003 §3.2: a predictor of the platter */
		struct avfs_rotpred_params rp = named;

		if (!model)
			avfs_rotpred_params_from_model(&conf.model, &rp);
		if (avfs_rotpred_init(&dm->rotpred, &rp)) {
			avfsd_log(dm, 0, "jit/split: the disk model has no rotation to predict");
			goto out;
		}
		conf.pred = (struct avfs_sched_predictor){ .ctx = &dm->rotpred,
							   .predict = avfs_rotpred_predict };
		dm->predicting = true;
	}
	err = avfs_sched_init(&dm->sched, &avfs_sched_tm, &conf);
	if (err) {
		avfsd_log(dm, 0, "scheduler settings refused: %s", strerror(-err));
		goto out;
	}
	dm->nslots = dm->sched.max_inflight;
	dm->slots = calloc(dm->nslots, sizeof(*dm->slots));
	err = avfsd_streams_init(dm, config, why, sizeof(why));
	if (err) {
		avfsd_log(dm, 0, "admission settings refused: %s", why);
		goto out;
	}
	if (!sock) {
		const char *base = strrchr(dm->dev_path, '/');

		mkdir("/run/avfs", 0755);
		snprintf(sockbuf, sizeof(sockbuf), "/run/avfs/%s.sock", base ? base + 1 : dm->dev_path);
		sock = sockbuf;
	}
	err = listen_on(dm, sock);
	if (err) {
		avfsd_log(dm, 0, "cannot listen on %s: %s", sock, strerror(-err));
		goto out;
	}
	/* FUSE, low level; kernel permission checks against our modes */
	fuse_opt_add_arg(&args, "avfsd");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, dm->allow_other ? "default_permissions,allow_other,fsname=avfs,"
				"subtype=avfs,max_read=1048576" :
				"default_permissions,fsname=avfs,subtype=avfs,max_read=1048576");
	dm->se = fuse_session_new(&args, &avfsd_fuse_ops, sizeof(avfsd_fuse_ops), dm);
	fuse_opt_free_args(&args);
	if (!dm->se || fuse_session_mount(dm->se, dm->mnt_path)) {
		avfsd_log(dm, 0, "cannot mount FUSE at %s", dm->mnt_path);
		goto out;
	}
	dm->fuse_fd = fuse_session_fd(dm->se);
	dm->mnt_dev = mount_dev(dm->mnt_path);	/* never stat() our own mount: it would wait on us */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	dm->sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (io_uring_queue_init(256, &dm->ring, 0)) {
		avfsd_log(dm, 0, "io_uring setup failed");
		goto out;
	}
	avfsd_log(dm, 2, "serving %s on %s, clients on %s", dm->dev_path, dm->mnt_path,
		  dm->sock_path);
	arm_poll(dm, dm->fuse_fd, POLLIN, UD_FUSE);
	arm_poll(dm, dm->listen_fd, POLLIN, UD_LISTEN);
	arm_poll(dm, dm->sig_fd, POLLIN, UD_SIGNAL);
	arm_poll(dm, avfs_disk_poll_fd(dm->d), POLLIN, UD_DISK);
	dm->next_commit = avfsd_now() + COMMIT_PERIOD;

	/* the event loop */
	while (!dm->exiting || dm->plan || dm->sched.ops->pending(dm->sched.ctx)) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts;
		int64_t now = avfsd_now(), until = dm->next_commit;
		unsigned head, seen = 0;

		if (dm->hold_at && dm->hold_at < until)
			until = dm->hold_at;
		if (dm->nparked) {	/* parked reads whose tokens come due */
			int64_t due = avfsd_streams_tick(dm, now);

			if (due && due < until)
				until = due;
		}
		if (now + NS / 2 < until)
			until = now + NS / 2;	/* look at throttled clients twice a second */
		if (until < now)
			until = now;
		ts.tv_sec = (until - now) / NS;
		ts.tv_nsec = (until - now) % NS;
		/* the hold timer is this wait's timeout (a TIMEOUT SQE inside liburing) */
		err = io_uring_submit_and_wait_timeout(&dm->ring, &cqe, 1, &ts, NULL);
		if (err < 0 && err != -ETIME && err != -EINTR) {
			avfsd_log(dm, 0, "event loop: %s", strerror(-err));
			break;
		}
		io_uring_for_each_cqe(&dm->ring, head, cqe) {
			uint64_t ud = io_uring_cqe_get_data64(cqe);

			seen++;
			if (ud == UD_FUSE) {
				int n = fuse_session_receive_buf(dm->se, &dm->fbuf);

				if (n == -EINTR || n == -EAGAIN) {
					arm_poll(dm, dm->fuse_fd, POLLIN, UD_FUSE);
				} else if (n <= 0 || fuse_session_exited(dm->se)) {
					avfsd_log(dm, 2, "unmounted: draining and committing");
					dm->exiting = true;
				} else {
					fuse_session_process_buf(dm->se, &dm->fbuf);
					arm_poll(dm, dm->fuse_fd, POLLIN, UD_FUSE);
				}
			} else if (ud == UD_LISTEN) {
				accept_clients(dm);
			} else if (ud == UD_SIGNAL) {
				struct signalfd_siginfo si;

				while (read(dm->sig_fd, &si, sizeof(si)) == sizeof(si)) {
					avfsd_log(dm, 2, "signal %u: draining, committing, unmounting",
						  si.ssi_signo);
					dm->exiting = true;
				}
				arm_poll(dm, dm->sig_fd, POLLIN, UD_SIGNAL);
			} else if (ud == UD_DISK) {
				disk_completions(dm);
				arm_poll(dm, avfs_disk_poll_fd(dm->d), POLLIN, UD_DISK);
			} else if (ud >= UD_CLIENT) {
				size_t i = (ud - UD_CLIENT) / 2;
				struct client *cl = i < dm->nclients ? dm->clients[i] : NULL;

				if (cl && !cl->dead) {
					if ((ud - UD_CLIENT) % 2) {
						cl->pollout = false;
						client_flush(dm, cl);
					} else {
						client_input(dm, cl);
					}
				}
			}
		}
		io_uring_cq_advance(&dm->ring, seen);
		/* a client whose replies have not moved for 3 s is not reading them at all:
		 * drop it (SPEC §14), the others go on */
		for (size_t i = 0; i < dm->nclients; i++) {
			struct client *cl = dm->clients[i];

			if (cl && !cl->dead && cl->outlen > cl->outoff &&
			    avfsd_now() - cl->throttled_since > 3 * NS)
				client_drop(dm, cl, "it does not read its replies");
		}
		disk_completions(dm);	/* completions that raced with the poll */
		if (dm->trace_buf)
			avfsd_trace_tick(dm, avfsd_now());
		now = avfsd_now();
		if (dm->hold_at && dm->hold_at <= now) {
			dm->hold_at = 0;
			kick(dm);
		}
		if (now >= dm->next_commit || (dm->exiting && !dm->plan &&
					       avfs_fs_dirty_blocks(dm->fs))) {
			dm->next_commit = now + COMMIT_PERIOD;
			if (avfs_fs_dirty_blocks(dm->fs) || dm->fsyncs)
				avfsd_commit_soon(dm);
		}
	}
	/* drained: the last commit is on disk; leave an empty journal and a clean mount */
	ret = avfs_fsio_unmount(io) ? 1 : 0;
	io = NULL;
	dm->fs = NULL;
	if (ret)
		avfsd_log(dm, 0, "final commit failed");
	else
		avfsd_log(dm, 2, "clean shutdown of %s", dm->dev_path);
out:
	if (dm->se) {
		fuse_session_unmount(dm->se);
		fuse_session_destroy(dm->se);
	}
	free(dm->fbuf.mem);
	for (size_t i = 0; i < dm->nclients; i++) {
		struct client *c = dm->clients[i];

		if (!c)
			continue;
		if (!c->dead)
			client_close(c);
		if (c->shm)
			munmap(c->shm, c->shmlen);
		free(c->in);
		free(c->out);
		free(c->handles);
		while (c->ios) {
			struct cio *io = c->ios;

			c->ios = io->next;
			free(io->data);
			free(io);
		}
		free(c);
	}
	free(dm->clients);
	avfsd_streams_fini(dm);
	avfs_hdd_free(dm->geom);
	for (int i = 0; i < 8; i++)
		free(dm->ra[i].buf);
	if (dm->listen_fd >= 0) {
		close(dm->listen_fd);
		unlink(dm->sock_path);
	}
	if (dm->sched.ops)
		avfs_sched_destroy(&dm->sched);
	if (io)
		avfs_fsio_abandon(io);
	avfs_disk_close(dm->d);
	free(dm->slots);
	return ret;
}
