/*
 * sim_realtime.c — avfs-sim realtime and fill (sim_realtime.h). The real-time run is a client
 * like any other: the streams' requests through libavio (with their reservations, from the
 * same seeded plan avfs-sim uses, sim/workload.c), the pictures through the FUSE mount with
 * plain POSIX calls from a second thread, and at the end the daemon's statistics over the
 * protocol (the engine's metrics, reset when the run starts). It schedules nothing itself.
 */
#include "sim_realtime.h"

#include "avio.h"
#include "client.h"
#include "clock.h"
#include "disk.h"
#include "fsio.h"
#include "jsonout.h"
#include "proto.h"
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ll
#define WAIT_MS 30000	/* a reply from the daemon */

struct rtreq {
	avfs_asyncio_t a;
	struct rtstream *s;
	bool busy;
};

struct rtstream {
	struct avfs_wl_stream *w;
	int fd;
	struct rtreq *reqs;	/* a pool: at most twice `depth` in flight */
	unsigned nreqs;
	struct avfs_simrun_stream_res *res;
	uint64_t issued, done;
};

struct rt {
	const struct avfs_simrun_opts *o;
	const char *mount;
	struct avfs_wl wl;
	struct rtstream *st;
	unsigned nst;
	int64_t start, end;
	atomic_bool stop;
	unsigned long long pictures, errors, be_reqs;
	char *why;
	size_t whylen;
};

/* ---- the daemon's statistics ---- */

static int admin(const char *mount, const char *cmd, json_object **out, char *why, size_t whylen)
{
	struct avfs_msg_hello_reply hello;
	struct avfs_msg_admin_reply rep;
	struct avfs_proto_rx rx;
	char path[AVFS_PROTO_PATH_MAX];
	void *text = NULL;
	size_t len = 0;
	int s, err;

	err = avfs_proto_socket_file(mount, path, sizeof(path));
	if (err) {
		snprintf(why, whylen, "%s: no avfsd socket named on it (%s)", mount, strerror(-err));
		return err;
	}
	s = avfs_proto_connect(path, &rx, &hello, WAIT_MS);
	if (s < 0) {
		snprintf(why, whylen, "cannot reach avfsd at %s: %s", path, strerror(-s));
		return s;
	}
	err = avfs_proto_send(s, AVFS_MSG_ADMIN, 1, cmd, strlen(cmd), -1, WAIT_MS);
	if (!err)
		err = avfs_proto_wait(s, &rx, AVFS_MSG_ADMIN, 1, &rep, sizeof(rep), &text, &len,
				      WAIT_MS);
	close(s);
	if (!err && rep.res)
		err = rep.res;
	if (err) {
		snprintf(why, whylen, "avfsd: %s: %s", cmd, strerror(-err));
		free(text);
		return err;
	}
	if (out)
		*out = json_tokener_parse(text);
	free(text);
	return 0;
}

/* The run's figures as the engine counted them (daemon/admin.c's stats document). */
static void from_stats(json_object *j, struct avfs_simrun_result *r)
{
	json_object *counts = avfs_json_get(j, "seek_distance.counts");

	r->rt_requests = (uint64_t)avfs_json_num(j, "rt.requests");
	r->deadline_misses = (uint64_t)avfs_json_num(j, "rt.misses");
	r->etime_failed = (uint64_t)avfs_json_num(j, "rt.etime");
	r->p0 = avfs_json_num(j, "rt.p0");
	r->margin_min_ms = avfs_json_num(j, "rt.margin_ms.min");
	r->margin_p001_ms = avfs_json_num(j, "rt.margin_ms.p001");
	r->margin_p01_ms = avfs_json_num(j, "rt.margin_ms.p01");
	r->margin_p50_ms = avfs_json_num(j, "rt.margin_ms.p50");
	r->disk_utilization = avfs_json_num(j, "disk_utilization");
	r->seek_p50_gb = avfs_json_num(j, "seek_distance.p50_gb");
	r->seek_p90_gb = avfs_json_num(j, "seek_distance.p90_gb");
	r->seek_frac_below_5 = avfs_json_num(j, "seek_distance.frac_below_5");
	for (size_t i = 0; counts && i < AVFS_SEEK_CLASSES &&
			   i < json_object_array_length(counts); i++)
		r->seek_class[i] = (uint64_t)json_object_get_int64(
			json_object_array_get_idx(counts, i));
	r->be_bytes = (uint64_t)avfs_json_num(j, "be.bytes");
	r->be_requests = (uint64_t)avfs_json_num(j, "be.requests");
	r->be_mbps = avfs_json_num(j, "be.mbps");
	r->e_twait_ms = avfs_json_num(j, "e_twait_ms");
	r->commands = (uint64_t)avfs_json_num(j, "commands");
	r->max_pending = (uint64_t)avfs_json_num(j, "queue.max_pending");
	r->commits = 0;
}

/* hddemu's statistics file: "name value" lines. */
static double hdd_stat(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ')
			return atof(p + n + 1);
	return -1;
}

static int hdd_file(const char *dir, bool reset, char *buf, size_t len)
{
	char path[4096];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stats", dir);
	fd = open(path, reset ? O_WRONLY : O_RDONLY);
	if (fd < 0)
		return -errno;
	n = reset ? write(fd, "reset", 5) : read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	if (!reset)
		buf[n] = 0;
	return 0;
}

/* ---- the pictures, through the mount (papers/001 §4.3.2) ---- */

static void *pictures(void *arg)
{
	struct rt *t = arg;
	/* page aligned: FUSE's direct I/O cuts a write at the user buffer's page boundaries, and
	 * an unaligned buffer would turn every picture write into a partial page (read-modify-
	 * write) besides the rest */
	static char data[1u << 20] __attribute__((aligned(4096)));
	struct avfs_wl_pics pics = { 0 };	/* the one pictures client: pic-NNNNNN.jpg */

	memset(data, 0x6b, sizeof(data));
	while (!atomic_load(&t->stop) && avfs_clock_ns() < t->end) {
		char name[32], path[4096];
		uint64_t size, done = 0;
		int first, drop, fd;

		avfs_wl_picture(&t->wl, &pics, name, sizeof(name), &size, &first, &drop);
		for (int k = first; k < first + drop; k++) {
			char old[32];

			avfs_wl_picture_name(&pics, k, old, sizeof(old));
			snprintf(path, sizeof(path), "%s/%s", t->mount, old);
			unlink(path);
		}
		snprintf(path, sizeof(path), "%s/%s", t->mount, name);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			t->errors++;
			break;
		}
		/* in requests of up to 1 MiB, whole pages, as the simulator writes them */
		while (done < size && !atomic_load(&t->stop) && avfs_clock_ns() < t->end) {
			uint64_t len = size - done < (1u << 20) ? size - done : (1u << 20);
			ssize_t n;

			len = (len + 4095) & ~4095ull;
			n = pwrite(fd, data, len, (off_t)done);
			if (n != (ssize_t)len) {
				t->errors++;
				break;
			}
			t->be_reqs++;
			done += len;
		}
		if (done >= size)
			t->pictures++;
		close(fd);
	}
	return NULL;
}

/* ---- the streams, through libavio ---- */

static struct rtreq *free_req(struct rtstream *s)
{
	for (unsigned i = 0; i < s->nreqs; i++)
		if (!s->reqs[i].busy)
			return &s->reqs[i];
	return NULL;
}

static int issue(struct rt *t, struct rtstream *s)
{
	struct avfs_wl_req w;
	struct rtreq *q = free_req(s);
	int err;

	avfs_wl_next(&t->wl, s->w, &w);
	if (!q) {	/* the daemon is this far behind: a request the stream cannot ask for */
		t->errors++;
		return 0;
	}
	q->a.aio_fildes = s->fd;
	q->a.aio_offset = (off_t)w.off;
	q->a.aio_nbytes = w.len;
	q->a.aio_deadline = w.deadline;
	err = avfs_asyncio_start(&q->a, s->w->write ? AVFS_WRITE : AVFS_READ);
	if (err == -ETIME) {	/* counted by nobody: the daemon never saw it */
		t->errors++;
		return 0;
	}
	if (err)
		return err;
	q->busy = true;
	s->issued++;
	return 0;
}

/* Collect what completed; -errno only when the connection is gone. */
static int collect(struct rt *t)
{
	for (unsigned i = 0; i < t->nst; i++) {
		struct rtstream *s = &t->st[i];

		for (unsigned k = 0; k < s->nreqs; k++) {
			struct rtreq *q = &s->reqs[k];

			if (!q->busy || avfs_asyncio_check(&q->a, AVFS_NOWAIT))
				continue;
			q->busy = false;
			s->done++;
			if (q->a.aio_ret == -ENOTCONN)
				return -ENOTCONN;
			if (q->a.aio_ret < 0 && q->a.aio_ret != -ETIME)
				t->errors++;
		}
	}
	return 0;
}

static unsigned in_flight(const struct rt *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->nst; i++)
		n += (unsigned)(t->st[i].issued - t->st[i].done);
	return n;
}

static int open_streams(struct rt *t, unsigned *reserved)
{
	uint64_t shm = 16u << 20;
	char size[32];

	/* the shared buffer region holds every stream's pool (libavio: before its first call) */
	for (unsigned i = 0; i < t->nst; i++)
		shm += (uint64_t)t->wl.streams[i].depth * 2 * t->wl.streams[i].io;
	snprintf(size, sizeof(size), "%llu", (unsigned long long)shm);
	setenv("AVFS_SHM_SIZE", size, 0);
	for (unsigned i = 0; i < t->nst; i++) {
		struct rtstream *s = &t->st[i];
		struct avfs_wl_stream *w = &t->wl.streams[i];
		char path[4096];

		s->w = w;
		if (w->raw) {
			snprintf(t->why, t->whylen, "stream %u: raw device streams need the simulator", i);
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "%s/%s", t->mount, w->name);
		s->fd = w->write ? open(path, O_RDWR | O_CREAT | O_TRUNC, 0644) : open(path, O_RDONLY);
		if (s->fd < 0) {
			int err = -errno;

			snprintf(t->why, t->whylen, "%s: %s", path, strerror(errno));
			return err;
		}
		s->nreqs = w->depth * 2;
		s->reqs = calloc(s->nreqs, sizeof(*s->reqs));
		if (!s->reqs)
			return -ENOMEM;
		for (unsigned k = 0; k < s->nreqs; k++) {
			s->reqs[k].s = s;
			s->reqs[k].a.aio_buf = avfs_buf_alloc(w->io);
			if (!s->reqs[k].a.aio_buf) {
				snprintf(t->why, t->whylen, "no shared buffer for %u requests of %u bytes",
					 s->nreqs, w->io);
				return -ENOMEM;
			}
			memset((void *)s->reqs[k].a.aio_buf, 0x5a, w->io);
		}
		if (w->reserved) {
			struct avfs_service svc = { .rate = w->svc.rate, .buffer = w->svc.buffer,
						    .direction = w->write ? AVFS_WRITE : AVFS_READ };
			int err = avfs_reserve_io(s->fd, &svc, w->io);	/* its request size */

			if (err) {
				snprintf(t->why, t->whylen, "stream %u (%s): the reservation of %.2f MB/s "
					 "was refused: %s", i, w->name, (double)svc.rate / 1e6,
					 strerror(-err));
				return err;
			}
			(*reserved)++;
		}
	}
	return 0;
}

int avfs_sim_realtime(const struct avfs_simrun_opts *o, const char *mount, const char *hddemu,
		      struct avfs_simrun_result *r, struct avfs_sim_rt_extra *x, char *why,
		      size_t whylen)
{
	struct rt t = { .o = o, .mount = mount, .why = why, .whylen = whylen };
	struct avfs_wl_rec *recs = NULL;
	size_t nrecs = 0, cap = 0;
	pthread_t pic;
	bool pic_on = false;
	json_object *j = NULL;
	char text[8192];
	int err = 0;

	memset(r, 0, sizeof(*r));
	memset(x, 0, sizeof(*x));
	x->hddemu_err_mean_us = x->hddemu_err_max_us = x->hddemu_utilization = -1;
	if ((o->be != AVFS_BE_NONE && o->be != AVFS_BE_PICTURES) || o->nbes) {
		snprintf(why, whylen, "realtime: best effort 'pictures' or 'none' (the others read "
			 "raw device places only the simulator reaches; a scenario's generators are "
			 "the simulator's)");
		return -EINVAL;
	}
	if (o->hp_rate > 0) {
		snprintf(why, whylen, "realtime: the high-priority probe needs the simulator");
		return -EINVAL;
	}
	/* the fill's recordings, as avfs-sim fill left them: rec-00000.ts, ... */
	for (;;) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/rec-%05zu.ts", mount, nrecs);
		if (stat(path, &st))
			break;
		if (nrecs == cap) {
			struct avfs_wl_rec *v = realloc(recs, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!v) {
				free(recs);
				return -ENOMEM;
			}
			recs = v;
		}
		recs[nrecs++] = (struct avfs_wl_rec){ .ino = st.st_ino, .size = (uint64_t)st.st_size };
	}
	/* the plan, from a start a moment ahead (files opened, reservations made) */
	t.start = avfs_clock_ns() + NS / 2;
	t.end = t.start + (int64_t)(o->duration_s * NS);
	err = avfs_wl_init(&t.wl, o, recs, nrecs, 0, 0, 1ull << o->block_shift, t.start, why,
			   whylen);
	if (err)
		goto out;
	t.nst = t.wl.nstreams;
	t.st = calloc(t.nst ? t.nst : 1, sizeof(*t.st));
	if (o->streams) {
		r->streams = calloc(t.nst ? t.nst : 1, sizeof(*r->streams));
		r->nstreams = t.nst;
	}
	if (!t.st || (o->streams && !r->streams)) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < t.nst; i++)
		t.st[i].fd = -1;
	err = open_streams(&t, &x->reserved);
	if (err)
		goto out;
	if (hddemu && hdd_file(hddemu, true, NULL, 0))
		hddemu = NULL;
	err = admin(mount, "reset", NULL, why, whylen);
	if (err)
		goto out;
	if (o->be == AVFS_BE_PICTURES) {
		if (pthread_create(&pic, NULL, pictures, &t)) {
			err = -EAGAIN;
			goto out;
		}
		pic_on = true;
	}
	/* the streams: each request at its time, until the end */
	for (;;) {
		int64_t now = avfs_clock_ns(), next = t.end;
		struct pollfd pfd = { .fd = avfs_completion_fd(), .events = POLLIN };
		struct timespec ts;

		for (unsigned i = 0; now < t.end && i < t.nst; i++) {
			struct rtstream *s = &t.st[i];

			while (avfs_wl_when(s->w, s->w->k) <= now && avfs_wl_when(s->w, s->w->k) < t.end) {
				err = issue(&t, s);
				if (err) {
					snprintf(why, whylen, "stream %u: %s", i, strerror(-err));
					goto out;
				}
			}
			if (avfs_wl_when(s->w, s->w->k) < next)
				next = avfs_wl_when(s->w, s->w->k);
		}
		err = collect(&t);
		if (err) {
			snprintf(why, whylen, "the daemon went away during the run");
			goto out;
		}
		if (now >= t.end && !j) {
			/* the window ends: the engine's figures now, as avfs-sim takes them at its
			 * end; what is still in flight completes without being counted */
			err = admin(mount, "stats", &j, why, whylen);
			if (err)
				goto out;
		}
		if (now >= t.end && !in_flight(&t))
			break;
		if (now >= t.end + 30 * NS) {
			snprintf(why, whylen, "%u requests still in flight 30 s after the end",
				 in_flight(&t));
			err = -ETIMEDOUT;
			goto out;
		}
		if (next <= now || now >= t.end)
			next = now + NS / 100;
		ts.tv_sec = (next - now) / NS;
		ts.tv_nsec = (next - now) % NS;
		if (pfd.fd >= 0)
			ppoll(&pfd, 1, &ts, NULL);
		else
			nanosleep(&ts, NULL);
	}
	atomic_store(&t.stop, true);
	if (pic_on)
		pthread_join(pic, NULL);
	pic_on = false;
	if (!j) {
		snprintf(why, whylen, "avfsd's stats are not JSON");
		err = -EPROTO;
		goto out;
	}
	from_stats(j, r);
	r->sim_s = o->duration_s;
	for (unsigned i = 0; r->streams && i < t.nst; i++) {
		struct avfs_stream_stats ss;

		if (t.st[i].w->reserved && !avfs_stream_stats(t.st[i].fd, &ss)) {
			r->streams[i].qos.requests = ss.requests;
			r->streams[i].qos.misses = ss.deadline_misses;
			r->streams[i].qos.bytes = ss.bytes;
			r->streams[i].qos.margin_min_ns = ss.margin_min_ns;
		}
		r->streams[i].mbps = (double)r->streams[i].qos.bytes / o->duration_s / 1e6;
	}
	if (hddemu && !hdd_file(hddemu, false, text, sizeof(text))) {
		x->hddemu_err_mean_us = hdd_stat(text, "timing_err_mean_us");
		x->hddemu_err_max_us = hdd_stat(text, "timing_err_max_us");
		x->hddemu_utilization = hdd_stat(text, "utilization");
		x->hddemu_late = (unsigned long long)hdd_stat(text, "timing_late_io");
	}
out:
	atomic_store(&t.stop, true);
	if (pic_on)
		pthread_join(pic, NULL);
	x->client_errors = t.errors;
	x->pictures = t.pictures;
	json_object_put(j);
	for (unsigned i = 0; t.st && i < t.nst; i++) {
		struct rtstream *s = &t.st[i];

		for (unsigned k = 0; k < s->nreqs; k++) {
			if (s->reqs[k].busy)
				avfs_asyncio_check(&s->reqs[k].a, AVFS_WAIT);
			avfs_buf_free((void *)s->reqs[k].a.aio_buf);
		}
		free(s->reqs);
		if (s->fd >= 0) {
			if (s->w && s->w->reserved)
				avfs_release(s->fd);
			close(s->fd);
		}
	}
	if (err) {
		free(r->streams);
		r->streams = NULL;
		r->nstreams = 0;
	}
	free(t.st);
	avfs_wl_free(&t.wl);
	free(recs);
	return err;
}

/* ---- fill ---- */

int avfs_sim_fill(const struct avfs_simrun_opts *o, const char *path, size_t *files, char *why,
		  size_t whylen)
{
	struct avfs_disk *d = NULL;
	struct avfs_fsio *io = NULL;
	uint64_t *recs = NULL;
	int err = avfs_disk_open(path, AVFS_BACKEND_URING, 0, &d, why, whylen);

	if (err)
		return err;
	if (o->size && o->size > d->info.size) {
		snprintf(why, whylen, "%s: %llu bytes, less than --size", path,
			 (unsigned long long)d->info.size);
		err = -EINVAL;
		goto out;
	}
	err = avfs_simrun_format(d, o, &io, why, whylen);
	if (!err) {
		err = avfs_simrun_fill(io, o, avfs_clock_realtime_ns(), &recs, files);
		if (err)
			snprintf(why, whylen, "filling %s: %s", path, strerror(-err));
	}
	if (!err) {
		err = avfs_fsio_unmount(io);
		io = NULL;
		if (err)
			snprintf(why, whylen, "the last commit on %s failed: %s", path, strerror(-err));
	}
out:
	if (io)
		avfs_fsio_abandon(io);
	free(recs);
	avfs_disk_close(d);
	return err;
}
