/*
 * hddemu — the real-time emulated hard disk (SPEC §11, docs/HDDEMU.md): MOUNTDIR/disk, a
 * file served through FUSE one request at a time in arrival order, each answered at the
 * completion time the shared disk model (disk/hddmodel.h) computes, with the control files
 * MOUNTDIR/fast, MOUNTDIR/stats and MOUNTDIR/stall beside it. Attaching a loop device is
 * tools/hddemu-attach's job; the data's durability ends at the backing file (a FLUSH does not
 * fdatasync it).
 */
#define FUSE_USE_VERSION 35

#include "config.h"
#include "clock.h"
#include "disk.h"
#include "hddmodel.h"
#include "thread.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif
#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80	/* Linux 6.17: loop's REQ_OP_WRITE_ZEROES with NOUNMAP */
#endif

#define NS 1000000000ull
#define MAX_IO (1u << 20)	/* max_read = max_write: a loop request is at most 1 MiB */
/* Sleep until this long before a deadline, then spin: clock_nanosleep alone overshoots by
 * ~0.1 ms on average and up to ~0.7 ms here (docs/HDDEMU.md, "Timing"). */
#define SPIN_NS 250000ull
/* The longest stall `stall` takes: a drive's error recovery lasts seconds, not minutes. */
#define STALL_MAX_NS (600 * NS)

enum { INO_ROOT = 1, INO_DISK, INO_FAST, INO_STATS, INO_STALL, INO_LAST = INO_STALL };

enum job_kind { JOB_READ, JOB_WRITE, JOB_FLUSH, JOB_DISCARD };

struct job {
	struct job *next;	/* the FIFO awaiting reply, protected by emu.mu */
	fuse_req_t req;
	enum job_kind kind;
	uint64_t arrival;	/* CLOCK_MONOTONIC ns when the request reached hddemu */
	uint64_t off, len;	/* bytes, already clamped to the disk */
	/* set by serve() */
	uint64_t model_now;	/* the model's time when the request reached the drive */
	int64_t anchor;		/* the clock mapping it was served under */
	bool timed;		/* real time: the reply waits for r.end */
	struct avfs_hdd_result r;
	ssize_t res;		/* bytes or -errno */
	uint64_t io_done;	/* CLOCK_MONOTONIC ns the backing file's part was done */
	char data[];		/* the payload written, or the data read */
};

/* Seek-distance histogram: |start of a request - end of the previous one| in bytes
 * (decimal units: 1m = 10^6, 1g = 10^9, as SPEC §12 counts GB). A bucket holds the distances
 * above the previous bound and up to its own. */
static const struct {
	const char *name;
	uint64_t le;
} seek_buckets[] = {
	{ "seek_eq_0", 0 },
	{ "seek_le_1m", 1000000ull },
	{ "seek_le_128m", 128000000ull },
	{ "seek_le_1g", 1000000000ull },
	{ "seek_le_5g", 5000000000ull },
	{ "seek_le_10g", 10000000000ull },
	{ "seek_le_25g", 25000000000ull },
	{ "seek_le_50g", 50000000000ull },
	{ "seek_le_100g", 100000000000ull },
	{ "seek_gt_100g", UINT64_MAX },
};
#define NBUCKETS (sizeof(seek_buckets) / sizeof(seek_buckets[0]))

struct stats {			/* all protected by emu.mu; zeroed by `reset` */
	uint64_t requests, reads, writes, flushes, discards;
	uint64_t bytes_read, bytes_written;
	uint64_t busy_ns;	/* the model's busy time of the requests served in real time */
	uint64_t rt_ns;		/* real-time-mode wall time before rt_since */
	uint64_t rt_since;	/* CLOCK_MONOTONIC ns the current real-time stretch began */
	uint64_t seeks;		/* pairs of consecutive reads/writes */
	double seek_sum;	/* bytes */
	uint64_t seek_hist[NBUCKETS];
	uint64_t timed;		/* requests answered in real time: their timing error is known */
	double err_sum;		/* ns */
	uint64_t err_max;	/* ns */
	uint64_t late_io;	/* timed requests whose backing I/O ended after their completion time */
	uint64_t queue_max;	/* the most requests served and awaiting reply at once */
	uint64_t stalls;	/* stalls of `stall` that a request has taken */
	uint64_t stall_ns;	/* their total length */
};

struct emu {
	/* set before the threads start, read-only afterwards */
	char model[32];
	uint64_t size;		/* bytes of MOUNTDIR/disk */
	int fd;			/* the backing file */
	unsigned queue;		/* conn->max_background */
	time_t t_start;		/* the files' times */
	struct fuse_session *se;

	/* the session thread's own */
	struct avfs_hdd *hdd;
	bool punch;		/* the backing file system punches holes */
	/* the replier thread's own */
	FILE *trace;

	pthread_mutex_t mu;
	pthread_cond_t cv;	/* a job was served, or stop */
	struct job *head, **tailp;	/* served, awaiting their completion time; mu */
	unsigned qlen;		/* jobs awaiting reply; mu */
	bool stop;		/* mu: reply to what is queued without delay, then exit */
	uint64_t prev_end;	/* mu: byte after the previous read or write */
	bool have_prev;		/* mu */
	bool fast;		/* mu */
	/* The model's clock (ns). In real time: model = CLOCK_MONOTONIC - anchor. In fast mode
	 * the clock is virtual: each request arrives when the previous one ended (vclock). */
	int64_t anchor;		/* mu */
	uint64_t vclock;	/* mu */
	uint64_t last_end;	/* mu: the model's completion time of the last request */
	uint64_t stall;		/* mu: ns the next request served in real time waits (`stall`) */
	struct stats st;	/* mu */
};

static struct emu emu = {
	.fd = -1,
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Return at `target` (CLOCK_MONOTONIC ns), never before: an absolute sleep to SPIN_NS short
 * of it, then a spin, so that no error accumulates from one request to the next. */
static void sleep_until(uint64_t target)
{
	uint64_t now = (uint64_t)avfs_clock_ns();

	if (target > now + SPIN_NS) {
		uint64_t t = target - SPIN_NS;
		struct timespec ts = { .tv_sec = (time_t)(t / NS), .tv_nsec = (long)(t % NS) };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while ((uint64_t)avfs_clock_ns() < target)
		cpu_relax();
}

/* ---- modes and statistics (callers hold emu.mu) ---- */

static uint64_t __model_now(const struct emu *e, uint64_t mono)
{
	int64_t t = (int64_t)mono - e->anchor;

	return t > 0 ? (uint64_t)t : 0;
}

static void __set_fast(struct emu *e, bool on)
{
	uint64_t now = (uint64_t)avfs_clock_ns();

	if (on == e->fast)
		return;
	if (on) {
		/* the virtual clock takes over where real time is */
		e->vclock = __model_now(e, now);
		if (e->vclock < e->last_end)
			e->vclock = e->last_end;
		e->st.rt_ns += now - e->st.rt_since;
	} else {
		/* re-anchor: the next request starts now, on a clock that never runs back */
		if (e->vclock < e->last_end)
			e->vclock = e->last_end;
		e->anchor = (int64_t)now - (int64_t)e->vclock;
		e->st.rt_since = now;
	}
	e->fast = on;
}

static void __reset_stats(struct emu *e)
{
	memset(&e->st, 0, sizeof(e->st));
	e->st.rt_since = (uint64_t)avfs_clock_ns();
	e->st.queue_max = e->qlen;
}

static uint64_t __elapsed_ns(const struct emu *e)
{
	return e->st.rt_ns + (e->fast ? 0 : (uint64_t)avfs_clock_ns() - e->st.rt_since);
}

/* The `stats` file's text, malloc'ed; NULL without memory. */
static char *stats_text(struct emu *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct stats s;
	uint64_t elapsed;
	bool fast;

	if (!f)
		return NULL;
	pthread_mutex_lock(&e->mu);
	s = e->st;
	elapsed = __elapsed_ns(e);
	fast = e->fast;
	pthread_mutex_unlock(&e->mu);

	fprintf(f, "model %s\n", e->model);
	fprintf(f, "capacity %" PRIu64 "\n", e->size);
	fprintf(f, "requests %" PRIu64 "\n", s.requests);
	fprintf(f, "reads %" PRIu64 "\n", s.reads);
	fprintf(f, "writes %" PRIu64 "\n", s.writes);
	fprintf(f, "flushes %" PRIu64 "\n", s.flushes);
	fprintf(f, "discards %" PRIu64 "\n", s.discards);
	fprintf(f, "bytes_read %" PRIu64 "\n", s.bytes_read);
	fprintf(f, "bytes_written %" PRIu64 "\n", s.bytes_written);
	fprintf(f, "busy_ns %" PRIu64 "\n", s.busy_ns);
	fprintf(f, "elapsed_ns %" PRIu64 "\n", elapsed);
	fprintf(f, "utilization %.4f\n", elapsed ? (double)s.busy_ns / (double)elapsed : 0.0);
	fprintf(f, "seek_mean_bytes %.0f\n", s.seeks ? s.seek_sum / (double)s.seeks : 0.0);
	for (size_t i = 0; i < NBUCKETS; i++)
		fprintf(f, "%s %" PRIu64 "\n", seek_buckets[i].name, s.seek_hist[i]);
	fprintf(f, "timing_err_mean_us %.1f\n", s.timed ? s.err_sum / (double)s.timed / 1e3 : 0.0);
	fprintf(f, "timing_err_max_us %.1f\n", (double)s.err_max / 1e3);
	fprintf(f, "timing_late_io %" PRIu64 "\n", s.late_io);
	fprintf(f, "queue_max %" PRIu64 "\n", s.queue_max);
	fprintf(f, "fast %d\n", fast);
	fprintf(f, "stalls %" PRIu64 "\n", s.stalls);
	fprintf(f, "stall_ns_total %" PRIu64 "\n", s.stall_ns);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---- serving: one request at a time, in arrival order ---- */

static bool all_zero(const char *p, size_t n)
{
	/* overlapping memcmp: the library's vector compare does the scan */
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* Write zeros over [off, off + len) of the backing file without punching. 0 or -errno. */
static int write_zeros(struct emu *e, uint64_t off, uint64_t len)
{
	static const char zeros[65536];

	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);
		ssize_t w = pwrite(e->fd, zeros, n, (off_t)off);

		if (w < 0)
			return -errno;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* Make [off, off + len) read as zeros: a hole where the file system can, else zeros written
 * out. 0 or -errno. */
static int zero_range(struct emu *e, uint64_t off, uint64_t len)
{
	if (e->punch) {
		if (!fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			       (off_t)len))
			return 0;
		if (errno != EOPNOTSUPP && errno != ENOSYS)
			return -errno;
		e->punch = false;	/* checked at start; a file system may still refuse */
	}
	return write_zeros(e, off, len);
}

/* The backing file's part of a job. Returns bytes done or -errno. */
static ssize_t do_io(struct emu *e, struct job *j)
{
	ssize_t n;
	int err;

	switch (j->kind) {
	case JOB_READ:
		n = pread(e->fd, j->data, j->len, (off_t)j->off);
		if (n < 0)
			return -errno;
		if ((uint64_t)n < j->len)	/* a backing file shorter than the disk: zeros */
			memset(j->data + n, 0, j->len - (uint64_t)n);
		return (ssize_t)j->len;
	case JOB_WRITE:
		if (all_zero(j->data, j->len)) {
			err = zero_range(e, j->off, j->len);
			return err ? err : (ssize_t)j->len;
		}
		for (uint64_t done = 0; done < j->len; done += (uint64_t)n) {
			n = pwrite(e->fd, j->data + done, j->len - done, (off_t)(j->off + done));
			if (n < 0)
				return -errno;
		}
		return (ssize_t)j->len;
	case JOB_DISCARD:
		err = j->len ? zero_range(e, j->off, j->len) : 0;
		return err ? err : 0;
	case JOB_FLUSH:
	default:
		return 0;
	}
}

static void account(struct emu *e, const struct job *j, const struct avfs_hdd_result *r,
		    bool fast, uint64_t err_ns)
{
	struct stats *s = &e->st;

	s->requests++;
	switch (j->kind) {
	case JOB_READ:
		s->reads++;
		s->bytes_read += j->len;
		break;
	case JOB_WRITE:
		s->writes++;
		s->bytes_written += j->len;
		break;
	case JOB_FLUSH:
		s->flushes++;
		break;
	case JOB_DISCARD:
		s->discards++;
		break;
	}
	if (!fast) {
		s->busy_ns += r->busy_until - r->start;
		s->timed++;
		s->err_sum += (double)err_ns;
		if (err_ns > s->err_max)
			s->err_max = err_ns;
	}
	if (j->kind == JOB_READ || j->kind == JOB_WRITE) {
		if (e->have_prev) {
			uint64_t d = j->off > e->prev_end ? j->off - e->prev_end : e->prev_end - j->off;
			size_t b = 0;

			while (d > seek_buckets[b].le)
				b++;
			s->seeks++;
			s->seek_sum += (double)d;
			s->seek_hist[b]++;
		}
		e->prev_end = j->off + j->len;
		e->have_prev = true;
	}
}

/* In arrival order, in the session thread (the FUSE loop is single-threaded): the model's
 * completion time, then the backing file's I/O at once, so that its latency hides in the
 * time the request is modelled to take; then the job waits for the replier. */
static void serve(struct emu *e, struct job *j)
{
	enum avfs_hdd_op op = AVFS_HDD_FLUSH;
	uint64_t sector = 0, nsect = 0, at;
	bool fast;

	pthread_mutex_lock(&e->mu);
	fast = e->fast;
	j->timed = !fast;
	j->anchor = e->anchor;
	/* The model is told when the request reached us; it starts the command when the drive
	 * is free (max(arrival, previous completion)), so no error carries over. In fast mode
	 * requests reach it back to back on the virtual clock. */
	j->model_now = fast ? e->vclock : __model_now(e, j->arrival);
	at = j->model_now;
	if (!fast && e->stall) {
		/* a stall (`stall`): the command starts so long after the drive is free, and every
		 * later one queues behind it on the model's busy time */
		at = (at > e->last_end ? at : e->last_end) + e->stall;
		e->st.stalls++;
		e->st.stall_ns += e->stall;
		e->stall = 0;
	}
	pthread_mutex_unlock(&e->mu);

	if (j->kind == JOB_READ || j->kind == JOB_WRITE) {
		op = j->kind == JOB_READ ? AVFS_HDD_READ : AVFS_HDD_WRITE;
		sector = j->off / AVFS_HDD_SECTOR;
		nsect = (j->off + j->len + AVFS_HDD_SECTOR - 1) / AVFS_HDD_SECTOR - sector;
	}
	/* a discard costs a command without media access (docs/HDDEMU.md): a FLUSH */
	if (avfs_hdd_service(e->hdd, at, op, sector, (uint32_t)nsect, false, &j->r)) {
		memset(&j->r, 0, sizeof(j->r));	/* cannot happen: the range was clamped */
		j->r.start = j->r.end = j->r.busy_until = at;
	}
	j->res = do_io(e, j);
	j->io_done = (uint64_t)avfs_clock_ns();

	j->next = NULL;
	pthread_mutex_lock(&e->mu);
	if (j->r.busy_until > e->last_end)
		e->last_end = j->r.busy_until;
	if (fast)
		e->vclock = e->last_end;
	*e->tailp = j;
	e->tailp = &j->next;
	if (++e->qlen > e->st.queue_max)
		e->st.queue_max = e->qlen;
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static void reply(struct emu *e, struct job *j)
{
	static const char op_char[] = { 'R', 'W', 'F', 'D' };
	uint64_t target = 0, t_reply;
	bool timed;

	pthread_mutex_lock(&e->mu);
	timed = j->timed && !e->stop;
	pthread_mutex_unlock(&e->mu);
	if (timed) {
		target = (uint64_t)(j->anchor + (int64_t)j->r.end);
		sleep_until(target);
	}
	t_reply = (uint64_t)avfs_clock_ns();
	/* counted before it is answered: whoever sees the completion sees it in `stats` */
	pthread_mutex_lock(&e->mu);
	account(e, j, &j->r, !timed, timed && t_reply > target ? t_reply - target : 0);
	if (timed && j->io_done > target)
		e->st.late_io++;
	e->qlen--;
	pthread_mutex_unlock(&e->mu);
	if (j->res < 0)
		fuse_reply_err(j->req, (int)-j->res);
	else if (j->kind == JOB_READ)
		fuse_reply_buf(j->req, j->data, (size_t)j->res);
	else if (j->kind == JOB_WRITE)
		fuse_reply_write(j->req, (size_t)j->res);
	else
		fuse_reply_err(j->req, 0);

	if (e->trace)
		fprintf(e->trace, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%c,%" PRIu64 ",%" PRIu64
			",%" PRId64 ",%" PRIu64 "\n", j->model_now, j->r.start, j->r.end,
			op_char[j->kind], j->off, j->len, j->r.seek_cyl,
			timed ? (uint64_t)((int64_t)t_reply - j->anchor) : j->r.end);
}

/* In the same order: sleep to each request's absolute completion time, reply. */
static void *replier(void *arg)
{
	struct emu *e = arg;
	struct sched_param sp = { .sched_priority = 10 };
	bool dirty = false;

	/* Best effort: a real-time thread with a 1 ns timer slack wakes closest to the
	 * deadline. Refused without CAP_SYS_NICE; the spin covers the rest. */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	for (;;) {
		struct job *j;

		pthread_mutex_lock(&e->mu);
		while (!e->head && !e->stop) {
			if (dirty) {	/* idle: let the trace reach its file */
				pthread_mutex_unlock(&e->mu);
				fflush(e->trace);
				dirty = false;
				pthread_mutex_lock(&e->mu);
				continue;
			}
			pthread_cond_wait(&e->cv, &e->mu);
		}
		j = e->head;
		if (!j) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		e->head = j->next;
		if (!e->head)
			e->tailp = &e->head;
		pthread_mutex_unlock(&e->mu);

		reply(e, j);
		free(j);
		dirty = e->trace != NULL;
	}
	if (e->trace)
		fflush(e->trace);
	return NULL;
}

/* A job for [off, off + len) clamped to the disk (len 0 when it lies beyond), given to the
 * emulator, which replies to req; ENOMEM at once without memory for it. */
static void submit_job(enum job_kind kind, fuse_req_t req, uint64_t arrival, uint64_t off,
		       uint64_t len, const char *data)
{
	struct emu *e = &emu;
	struct job *j;

	if (off >= e->size)
		len = 0;
	else if (len > e->size - off)
		len = e->size - off;
	j = malloc(sizeof(*j) + (kind == JOB_READ || kind == JOB_WRITE ? len : 0));
	if (!j) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	j->req = req;
	j->kind = kind;
	j->arrival = arrival;
	j->off = off;
	j->len = len;
	if (data)
		memcpy(j->data, data, len);
	serve(e, j);
}

/* ---- FUSE operations ---- */

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atime = st->st_mtime = st->st_ctime = emu.t_start;
	st->st_blksize = 4096;
	if (ino == INO_ROOT) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return;
	}
	st->st_nlink = 1;
	st->st_mode = S_IFREG | (ino == INO_DISK ? 0600 : 0644);
	if (ino == INO_DISK) {
		st->st_size = (off_t)emu.size;
		st->st_blocks = (blkcnt_t)(emu.size / 512);
	}
}

static const char *const names[] = { [INO_DISK] = "disk", [INO_FAST] = "fast",
				     [INO_STATS] = "stats", [INO_STALL] = "stall" };

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct emu *e = userdata;

	conn->max_write = MAX_IO;
	conn->max_read = MAX_IO;	/* as the max_read mount option */
	conn->max_readahead = 0;
	/* how many asynchronous (loop) requests the kernel hands over at once; the rest wait
	 * in its FIFO. hddemu serves one at a time whatever this is. */
	conn->max_background = e->queue;
	conn->congestion_threshold = e->queue;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param ep;

	memset(&ep, 0, sizeof(ep));
	for (fuse_ino_t ino = INO_DISK; parent == INO_ROOT && ino <= INO_LAST; ino++) {
		if (!strcmp(name, names[ino])) {
			ep.ino = ino;
			ep.attr_timeout = ep.entry_timeout = 3600;	/* nothing ever changes */
			fill_attr(ino, &ep.attr);
			fuse_reply_entry(req, &ep);
			return;
		}
	}
	fuse_reply_err(req, ENOENT);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino < INO_ROOT || ino > INO_LAST) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	/* Sizes are fixed: the disk refuses another size; `echo 1 > fast` truncates a control
	 * file first, which changes nothing. Modes, owners and times are not kept. */
	if (ino == INO_DISK && (to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != emu.size) {
		fuse_reply_err(req, EPERM);
		return;
	}
	ll_getattr(req, ino, fi);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_ROOT) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* no page cache anywhere: every disk read and write reaches hddemu, and control
	 * files are read past their zero size */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->fh = 0;
	if (ino == INO_STATS && (fi->flags & O_ACCMODE) != O_WRONLY) {
		char *text = stats_text(&emu);	/* one snapshot per open */

		if (!text) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		fi->fh = (uint64_t)(uintptr_t)text;
	}
	if (fuse_reply_open(req, fi) == -ENOENT)	/* interrupted: no release will come */
		free((char *)(uintptr_t)fi->fh);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	free((char *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* A control file's word: the buffer without surrounding white space, NUL-terminated into
 * out[WORD_MAX]; false when it is longer or holds a NUL. */
#define WORD_MAX 32
static bool control_word(const char *buf, size_t size, char *out)
{
	while (size && (buf[size - 1] == '\n' || buf[size - 1] == ' ' || buf[size - 1] == '\t'))
		size--;
	while (size && (*buf == ' ' || *buf == '\t')) {
		buf++;
		size--;
	}
	if (size >= WORD_MAX || memchr(buf, '\0', size))
		return false;
	memcpy(out, buf, size);
	out[size] = '\0';
	return true;
}

static bool word_is(const char *buf, size_t size, const char *word)
{
	char w[WORD_MAX];

	return control_word(buf, size, w) && !strcmp(w, word);
}

/* `stall`'s text: the pending stall in the largest unit that keeps it exact ("2s", "500ms",
 * "1500us"), which the file takes back; "0" when none. */
static void stall_text(uint64_t ns, char *buf, size_t size)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} unit[] = { { "s", NS }, { "ms", 1000000 }, { "us", 1000 }, { "ns", 1 } };
	size_t i = 0;

	if (!ns) {
		snprintf(buf, size, "0\n");
		return;
	}
	while (ns % unit[i].ns)
		i++;
	snprintf(buf, size, "%" PRIu64 "%s\n", ns / unit[i].ns, unit[i].name);
}

/* A write of `stall`: a time up to STALL_MAX_NS, in real time only. 0 or -errno, and
 * nothing changed on an error. */
static int set_stall(struct emu *e, const char *buf, size_t size)
{
	char w[WORD_MAX];
	int64_t ns;
	int err = 0;

	if (!control_word(buf, size, w) || avfs_parse_time(w, &ns) || ns < 0 ||
	    (uint64_t)ns > STALL_MAX_NS)
		return -EINVAL;
	pthread_mutex_lock(&e->mu);
	if (e->fast && ns)
		err = -EBUSY;	/* fast mode has no wall time to stall: docs/HDDEMU.md */
	else
		e->stall = (uint64_t)ns;	/* a new value replaces a pending one; 0 cancels */
	pthread_mutex_unlock(&e->mu);
	return err;
}

static void reply_text(fuse_req_t req, const char *text, size_t size, off_t off)
{
	size_t len = strlen(text);

	if ((uint64_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, text + off, len - (size_t)off < size ? len - (size_t)off : size);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t arrival = (uint64_t)avfs_clock_ns();
	bool fast;

	switch (ino) {
	case INO_DISK:
		if ((uint64_t)off >= emu.size || !size) {
			fuse_reply_buf(req, NULL, 0);
			return;
		}
		submit_job(JOB_READ, req, arrival, (uint64_t)off, size, NULL);
		return;
	case INO_FAST:
		pthread_mutex_lock(&emu.mu);
		fast = emu.fast;
		pthread_mutex_unlock(&emu.mu);
		reply_text(req, fast ? "1\n" : "0\n", size, off);
		return;
	case INO_STATS:
		reply_text(req, fi->fh ? (const char *)(uintptr_t)fi->fh : "", size, off);
		return;
	case INO_STALL: {
		char text[32];

		pthread_mutex_lock(&emu.mu);
		stall_text(emu.stall, text, sizeof(text));
		pthread_mutex_unlock(&emu.mu);
		reply_text(req, text, size, off);
		return;
	}
	default:
		fuse_reply_err(req, EISDIR);
	}
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	uint64_t arrival = (uint64_t)avfs_clock_ns();

	(void)fi;
	switch (ino) {
	case INO_DISK:
		if ((uint64_t)off >= emu.size) {
			fuse_reply_err(req, size ? ENOSPC : 0);
			return;
		}
		if (!size) {
			fuse_reply_write(req, 0);
			return;
		}
		submit_job(JOB_WRITE, req, arrival, (uint64_t)off, size, buf);
		return;
	case INO_FAST:
		if (!word_is(buf, size, "0") && !word_is(buf, size, "1")) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		pthread_mutex_lock(&emu.mu);
		__set_fast(&emu, word_is(buf, size, "1"));
		pthread_mutex_unlock(&emu.mu);
		fuse_reply_write(req, size);
		return;
	case INO_STATS:
		if (!word_is(buf, size, "reset")) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		pthread_mutex_lock(&emu.mu);
		__reset_stats(&emu);
		pthread_mutex_unlock(&emu.mu);
		fuse_reply_write(req, size);
		return;
	case INO_STALL: {
		int err = set_stall(&emu, buf, size);

		if (err)
			fuse_reply_err(req, -err);
		else
			fuse_reply_write(req, size);
		return;
	}
	default:
		fuse_reply_err(req, EISDIR);
	}
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	if (ino != INO_DISK) {
		fuse_reply_err(req, 0);
		return;
	}
	submit_job(JOB_FLUSH, req, (uint64_t)avfs_clock_ns(), 0, 0, NULL);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);	/* close(2), not a cache flush: that is fsync */
}

/* From loop: discard = PUNCH_HOLE, write-zeroes = ZERO_RANGE (or WRITE_ZEROES), both with
 * KEEP_SIZE. Either leaves a hole; preallocation (mode 0) is a no-op on a disk. */
static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	const int zeroing = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_WRITE_ZEROES;

	(void)fi;
	if (ino != INO_DISK) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE) {
		fuse_reply_err(req, (uint64_t)off + (uint64_t)len > emu.size ? EFBIG : 0);
		return;
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) || (mode & ~(zeroing | FALLOC_FL_KEEP_SIZE))) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	submit_job(JOB_DISCARD, req, (uint64_t)avfs_clock_ns(), (uint64_t)off, (uint64_t)len,
		   NULL);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = emu.size / 4096;
	sv.f_files = INO_LAST - INO_ROOT + 1;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != INO_ROOT)
		fuse_reply_err(req, ENOTDIR);
	else
		fuse_reply_open(req, fi);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const char *const dnames[] = { ".", "..", "disk", "fast", "stats", "stall" };
	static const fuse_ino_t dinos[] = { INO_ROOT, INO_ROOT, INO_DISK, INO_FAST, INO_STATS,
					    INO_STALL };
	char buf[1024];
	size_t n = 0;

	(void)fi;
	if (ino != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (off_t i = off; i >= 0 && i < (off_t)(sizeof(dinos) / sizeof(dinos[0])); i++) {
		struct stat st;
		size_t need;

		fill_attr(dinos[i], &st);
		need = fuse_add_direntry(req, buf + n, sizeof(buf) - n, dnames[i], &st, i + 1);
		if (n + need > size || n + need > sizeof(buf))
			break;
		n += need;
	}
	fuse_reply_buf(req, buf, n);
}

static const struct fuse_lowlevel_ops ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.statfs = ll_statfs,
	.fallocate = ll_fallocate,
};

/* ---- SIGUSR1: toggle fast mode ---- */

static void *signal_thread(void *arg)
{
	struct emu *e = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		pthread_mutex_lock(&e->mu);
		if (e->stop) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		__set_fast(e, !e->fast);
		pthread_mutex_unlock(&e->mu);
	}
	return NULL;
}

/* ---- setup ---- */

static void usage(FILE *f)
{
	const char *const *m = avfs_hdd_model_names();

	fprintf(f,
		"usage: hddemu --model MODEL --backing FILE [options] MOUNTDIR\n"
		"  serve MOUNTDIR/disk through FUSE with the timing of a disk model, one request\n"
		"  at a time; MOUNTDIR/fast, MOUNTDIR/stats and MOUNTDIR/stall control and\n"
		"  observe it\n"
		"  --model MODEL     the disk model:");
	for (; *m; m++)
		fprintf(f, " %s", *m);
	fprintf(f,
		"\n"
		"  --backing FILE    the data (created if missing, kept sparse)\n"
		"  --size BYTES      expose only the first BYTES of the model (K/M/G/T; rounded\n"
		"                    down to 4 KiB; default: the model's capacity)\n"
		"  --queue N         requests the kernel hands over at once (1..1024, default 1)\n"
		"  --trace FILE      append one CSV line per request (docs/HDDEMU.md)\n"
		"  -f, --foreground  stay in the foreground (default: daemonize)\n"
		"  -h, --help        this text\n"
		"Stop it with fusermount3 -u MOUNTDIR or SIGTERM; SIGUSR1 toggles fast mode.\n");
}

/* Open (or create) the backing file and make it at least e->size long. 0 or -errno, with
 * the message printed. */
static int open_backing(struct emu *e, const char *path)
{
	struct stat st;
	uint64_t probe;

	e->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (e->fd < 0) {
		fprintf(stderr, "hddemu: cannot open backing file %s for writing: %s\n", path,
			strerror(errno));
		return -errno;
	}
	if (fstat(e->fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "hddemu: backing file %s: not a regular file\n", path);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size < e->size && ftruncate(e->fd, (off_t)e->size)) {
		fprintf(stderr, "hddemu: cannot extend backing file %s to %" PRIu64 " bytes: %s\n",
			path, e->size, strerror(errno));
		return -errno;
	}
	/* Can the file system punch holes? Ask beyond the end, where a hole changes nothing. */
	probe = ((uint64_t)st.st_size > e->size ? (uint64_t)st.st_size : e->size) + 4095;
	probe &= ~4095ull;
	e->punch = !fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)probe,
			      4096);
	if (!e->punch)
		fprintf(stderr, "hddemu: warning: %s: the file system cannot punch holes (%s); "
			"all-zero writes are written out and the file will not stay sparse\n",
			path, strerror(errno));
	return 0;
}

static int check_mountdir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st)) {
		fprintf(stderr, "hddemu: mount directory %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "hddemu: mount directory %s: not a directory\n", dir);
		return -ENOTDIR;
	}
	return 0;
}

/* Keep the server's own memory from ever waiting on I/O that it has to serve: the loop
 * device above it may be what reclaim writes back to. Both are best effort. */
static void avoid_reclaim_deadlock(void)
{
	prctl(PR_SET_IO_FLUSHER, 1UL, 0UL, 0UL, 0UL);
#if !defined(__SANITIZE_ADDRESS__)
	/* ASan's terabytes of shadow mappings must not be locked */
	mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT);
#endif
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "backing", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "queue", required_argument, NULL, 'q' },
		{ "trace", required_argument, NULL, 't' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *model = NULL, *backing = NULL, *trace = NULL, *mnt;
	struct avfs_hdd_params p;
	struct emu *e = &emu;
	uint64_t size = 0;
	bool foreground = false, mounted = false, handlers = false;
	pthread_t tid[2];	/* replier, signals */
	void *(*const thread_fn[2])(void *) = { replier, signal_thread };
	unsigned started = 0;
	sigset_t usr1;
	int c, err, ret = 1;
	long q;
	char *end;

	/* SIGUSR1 is for the signal thread alone (sigwait), and must not kill us before it runs */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	e->queue = 1;
	while ((c = getopt_long(argc, argv, "fhV", lopts, NULL)) != -1) {
		switch (c) {
		case 'm': model = optarg; break;
		case 'b': backing = optarg; break;
		case 't': trace = optarg; break;
		case 'f': foreground = true; break;
		case 's':
			if (avfs_parse_size(optarg, &size) || size < 4096) {
				fprintf(stderr, "hddemu: --size %s: not a size of at least 4K\n", optarg);
				return 2;
			}
			break;
		case 'q':
			errno = 0;
			q = strtol(optarg, &end, 10);
			if (errno || *end || q < 1 || q > 1024) {
				fprintf(stderr, "hddemu: --queue %s: not a number from 1 to 1024\n",
					optarg);
				return 2;
			}
			e->queue = (unsigned)q;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("hddemu %s\n", AVFS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!model || !backing || optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	mnt = argv[optind];
	if (avfs_hdd_params_lookup(model, &p)) {
		const char *const *m = avfs_hdd_model_names();

		fprintf(stderr, "hddemu: unknown model '%s' (known:", model);
		for (; *m; m++)
			fprintf(stderr, " %s", *m);
		fprintf(stderr, ")\n");
		return 2;
	}
	if (size > p.capacity) {
		fprintf(stderr, "hddemu: --size %" PRIu64 " exceeds %s's capacity of %" PRIu64
			" bytes\n", size, model, p.capacity);
		return 2;
	}
	snprintf(e->model, sizeof(e->model), "%s", model);
	/* a smaller disk is the outer part of the model's (its first bytes: a short-stroked
	 * drive), so rates and seek times stay the model's */
	e->size = size ? size & ~4095ull : p.capacity;
	e->t_start = time(NULL);
	e->tailp = &e->head;

	if (check_mountdir(mnt))
		goto out;
	err = avfs_hdd_new(&p, &e->hdd);
	if (err) {
		fprintf(stderr, "hddemu: model %s: %s\n", model, strerror(-err));
		goto out;
	}
	if (open_backing(e, backing))
		goto out;
	if (trace) {
		e->trace = fopen(trace, "ae");
		if (!e->trace) {
			fprintf(stderr, "hddemu: --trace %s: %s\n", trace, strerror(errno));
			goto out;
		}
		setvbuf(e->trace, NULL, _IOFBF, 1 << 20);
		if (ftell(e->trace) == 0)
			fprintf(e->trace, "arrival_ns,start_ns,end_ns,op,offset,length,seek_cyl,"
				"reply_ns\n");
	}
	if (fuse_opt_add_arg(&args, "hddemu") || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, "fsname=hddemu,subtype=hddemu,default_permissions,"
			     "max_read=1048576")) {
		fprintf(stderr, "hddemu: out of memory\n");
		goto out;
	}
	e->se = fuse_session_new(&args, &ops, sizeof(ops), e);
	if (!e->se)
		goto out;	/* libfuse said why */
	if (fuse_session_mount(e->se, mnt))
		goto out;
	mounted = true;
	if (fuse_set_signal_handlers(e->se))
		goto out;
	handlers = true;
	if (fuse_daemonize(foreground))
		goto out;
	avoid_reclaim_deadlock();

	pthread_mutex_lock(&e->mu);
	e->anchor = avfs_clock_ns();	/* the model's time 0 */
	__reset_stats(e);
	pthread_mutex_unlock(&e->mu);

	/* the helper threads block every signal, so that SIGTERM interrupts the session loop
	 * in this thread */
	while (started < 2 && !avfs_thread_start_nosig(&tid[started], thread_fn[started], e))
		started++;
	if (started < 2) {
		fprintf(stderr, "hddemu: cannot start threads\n");
		goto stop;
	}

	err = fuse_session_loop(e->se);
	ret = err < 0 ? 1 : 0;	/* a signal number or 0: SIGTERM and unmount are clean ends */
stop:
	pthread_mutex_lock(&e->mu);
	e->stop = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	/* the replier answers what is left at once */
	if (started > 1)
		pthread_kill(tid[1], SIGUSR1);
	while (started)
		pthread_join(tid[--started], NULL);
out:
	if (handlers)
		fuse_remove_signal_handlers(e->se);
	if (mounted)
		fuse_session_unmount(e->se);
	if (e->se)
		fuse_session_destroy(e->se);
	fuse_opt_free_args(&args);
	if (e->trace)
		fclose(e->trace);
	if (e->fd >= 0)
		close(e->fd);
	avfs_hdd_free(e->hdd);
	return ret;
}
