/*
 * simrun.c — the virtual-time driver: formats and fills a simulated disk with the real file
 * system, then runs streams and best-effort traffic through the real scheduler, issuing its
 * commands to the simulated disk and its metadata commits as best-effort writes. This is the
 * simulator's equivalent of avfsd's event loop; the scheduler and the file system core are
 * the very same code. All times are virtual (ns) except the measured decision cost.
 */
#include "simrun.h"

#include "disk.h"
#include "fs.h"
#include "fsio.h"
#include "hddmodel.h"
#include "simdisk.h"
#include "simengine.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NS 1000000000.0

enum req_kind { RQ_STREAM, RQ_BE, RQ_META, RQ_HP };

struct req {
	struct avfs_io io;
	enum req_kind kind;
	struct stream *s;
	int64_t disk_ns;	/* service time of its commands on the disk so far */
	int64_t issued;		/* when its stream asked for it (parked requests go later) */
	struct req *park_next;
	bool spare;		/* best effort in time nobody else asked for (work conservation) */
	struct req *sp_prev, *sp_next;	/* its stream's spare requests in the scheduler */
	int64_t submit;
	struct req *next_free;
	struct req *all_next;
};

struct stream {
	bool write;
	uint64_t ino;
	uint64_t fsize;		/* read streams: the file's size */
	uint64_t pos;		/* next file offset */
	int64_t t0;
	uint64_t k;		/* next request index */
	double period;		/* ns per request */
	uint32_t io;		/* bytes per request */
	/* heterogeneous streams (o->streams) */
	const struct avfs_simrun_stream *spec;	/* NULL: an NrMw stream */
	struct avfs_simrun_stream_res *res;
	struct avfs_service_req svc;	/* what its deadlines follow: the reservation or its rate */
	struct avfs_bucket bucket;	/* reserved streams */
	unsigned depth;		/* greedy: requests kept outstanding */
	bool raw;		/* raw sequential I/O over [raw_lo, raw_hi), outside the fs */
	uint64_t raw_lo, raw_hi;
	double rt_ns, be_ns;	/* disk time of its commands */
	double lat_sum;
	/* requests above the reservation, waiting for tokens or for an idle moment (FIFO) */
	struct req *park_head, *park_tail;
	struct req *spare_head, *spare_tail;	/* sent as spare, not complete, oldest first */
	bool park_timer;	/* an event will look at the head when its tokens are due */
	void *ev;		/* its struct stream_ev */
};

struct run {
	const struct avfs_simrun_opts *o;
	struct avfs_simrun_result *r;
	struct req *all;	/* every request ever allocated (freed at the end) */
	struct avfs_sim_engine *eng;
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_fs *fs;
	struct avfs_sched sched;
	struct avfs_sim_event *timer;
	int64_t timer_at;
	int64_t start, end;
	uint64_t rng;
	struct stream *streams;
	unsigned nstreams;
	/* the command on the disk (rotational: one; non-rotational: up to depth) */
	struct avfs_sched_cmd *inflight;
	unsigned ninflight_slots;
	/* requests */
	struct req *free_reqs;
	/* recordings */
	uint64_t *recs;		/* inode numbers of filled recordings (0 = deleted) */
	size_t nrecs;
	bool *rec_busy;
	/* metadata commit through the scheduler */
	struct avfs_plan *plan;
	size_t plan_i;
	int64_t plan_t0;	/* when the plan in flight began */
	/* BE generators */
	uint64_t be_ino, be_off, be_size;
	int be_files;
	bool be_active;
	/* metrics */
	double *margins;
	size_t nmargins, capmargins;
	double *seeks;		/* GB between a request's first command and the previous command */
	size_t nseeks, capseeks;
	uint64_t prev_end;
	uint64_t busy0;
	size_t trace_i;		/* the simulated disk's record of the next completion reaped */
	uint64_t be_pending;	/* best-effort requests in the scheduler, work conservation's aside */
	unsigned nparked;	/* requests parked above their reservations, every stream */
	double hp_sum, hp_max;
	double dec_wall;
	FILE *trace;
	char *why;
	size_t whylen;
	int err;
};

static void say(struct run *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct run *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->err)
		return;
	r->err = err;
	va_start(ap, fmt);
	vsnprintf(r->why, r->whylen, fmt, ap);
	va_end(ap);
}

void avfs_simrun_defaults(struct avfs_simrun_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->disk = "avfs-250g";
	o->seed = 1;
	o->nread = 8;
	o->rate = 19.39e6 / 8;
	o->io = 512 << 10;
	o->depth = 8;
	o->duration_s = 3600;
	o->fill = 0.8;
	o->policy = "tm";
	avfs_sched_conf_default(&o->conf);
	o->block_shift = 22;
	o->be = AVFS_BE_NONE;
	o->be_size = 500 << 10;
}

static uint64_t rnd(struct run *r, uint64_t n)
{
	uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return n ? z % n : z;
}

static int64_t now(struct run *r)
{
	return (int64_t)avfs_sim_now(r->eng);
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct req *req_new(struct run *r, enum req_kind kind)
{
	struct req *q = r->free_reqs;

	struct req *all;

	if (q) {
		r->free_reqs = q->next_free;
	} else {
		q = malloc(sizeof(*q));
		if (!q)
			abort();	/* the simulator has no way to go on without memory */
		q->all_next = r->all;
		r->all = q;
	}
	all = q->all_next;
	memset(q, 0, sizeof(*q));
	q->all_next = all;
	q->kind = kind;
	return q;
}

static void req_free(struct run *r, struct req *q)
{
	q->next_free = r->free_reqs;
	r->free_reqs = q;
}

/* ---- the scheduler loop ---- */

static void kick(struct run *r);

static void on_timer(void *arg, uint64_t t)
{
	struct run *r = arg;

	(void)t;
	r->timer = NULL;
	kick(r);
}

static void complete(struct run *r, struct req *q, int res);

static void kick(struct run *r)
{
	for (;;) {
		struct avfs_sched_cmd cmd;
		double w0 = wall();
		unsigned slot;

		avfs_sched_next(&r->sched, now(r), &cmd);
		r->dec_wall += wall() - w0;
		r->r->decisions++;
		if (cmd.kind == AVFS_SCHED_IDLE)
			return;
		if (cmd.kind == AVFS_SCHED_WAIT) {
			if (r->timer && r->timer_at == cmd.at)
				return;
			if (r->timer)
				avfs_sim_cancel(r->eng, r->timer);
			r->timer_at = cmd.at < now(r) ? now(r) : cmd.at;
			r->timer = avfs_sim_at(r->eng, (uint64_t)r->timer_at, on_timer, r);
			return;
		}
		if (cmd.kind == AVFS_SCHED_FAIL) {
			complete(r, (struct req *)cmd.io, cmd.err);
			continue;
		}
		for (slot = 0; slot < r->ninflight_slots && r->inflight[slot].io; slot++)
			;
		if (slot == r->ninflight_slots)
			abort();	/* the wrapper enforces the limit */
		r->inflight[slot] = cmd;
		/* SPEC §12: the seek distance between consecutively executed *requests* (the
		 * chunks of one request are not counted as requests of their own) */
		if (!cmd.seek && cmd.off == cmd.io->orig_off && now(r) >= r->start) {
			if (r->nseeks == r->capseeks) {
				r->capseeks = r->capseeks ? 2 * r->capseeks : 4096;
				r->seeks = realloc(r->seeks, r->capseeks * sizeof(double));
				if (!r->seeks)
					abort();
			}
			r->seeks[r->nseeks++] = (double)(cmd.off > r->prev_end ? cmd.off - r->prev_end :
							 r->prev_end - cmd.off) / 1e9;
		}
		if (!cmd.seek)
			r->prev_end = cmd.off + cmd.len;
		{
			struct avfs_disk_req dr = {
				.op = cmd.seek ? AVFS_DISK_SEEK : cmd.write ? AVFS_DISK_WRITE : AVFS_DISK_READ,
				.flags = cmd.fua ? AVFS_DISK_FUA : 0, .lba = cmd.off / 512, .len = cmd.len,
				.buf = NULL, .buf_index = -1, .cookie = slot,
			};
			struct req *q = (struct req *)cmd.io;
			static uint8_t *scratch;

			/* data requests carry no payload in the simulation, except metadata writes */
			if (!scratch && posix_memalign((void **)&scratch, 4096, 16u << 20))
				abort();
			dr.buf = scratch;
			if (q->kind == RQ_META && !cmd.seek)
				dr.buf = (void *)r->plan->ops[r->plan_i].buf +
					 (cmd.off - r->plan->ops[r->plan_i].off);
			if (cmd.len > (16u << 20) && !cmd.seek) {
				say(r, -EINVAL, "a command of %u bytes is larger than the simulator's buffer",
				    cmd.len);
				return;
			}
			if (avfs_disk_submit(r->d, &dr)) {
				say(r, -EIO, "the simulated disk refused a command at %llu",
				    (unsigned long long)cmd.off);
				return;
			}
		}
		if (r->r->max_pending < r->sched.ops->pending(r->sched.ctx))
			r->r->max_pending = r->sched.ops->pending(r->sched.ctx);
	}
}

/* The service time of a command that completed. The simulated disk serves its commands one
 * at a time in the order they came and records each as it completes, so the i-th completion
 * reaped is its i-th record; should a record be missing (the trace is an observer and drops
 * records when out of memory), only this figure is lost. */
static int64_t cmd_ns(struct run *r, const struct avfs_sched_cmd *cmd)
{
	size_t n;
	const struct avfs_simdisk_rec *t = avfs_simdisk_trace(r->d, &n);

	for (size_t i = r->trace_i; i < n && i < r->trace_i + 8; i++) {
		if (t[i].lba == cmd->off / 512 && t[i].len == cmd->len) {
			r->trace_i = i + 1;
			return (int64_t)(t[i].end - t[i].start);
		}
	}
	return 0;
}

static void release_parked(struct run *r);

static void drain(struct run *r)
{
	struct avfs_disk_cqe c[8];
	int n;

	while ((n = avfs_disk_reap(r->d, c, 8)) > 0) {
		for (int i = 0; i < n; i++) {
			struct avfs_sched_cmd cmd = r->inflight[c[i].cookie];

			r->inflight[c[i].cookie].io = NULL;
			((struct req *)cmd.io)->disk_ns += cmd_ns(r, &cmd);
			if (avfs_sched_done(&r->sched, &cmd, now(r), (int)c[i].res))
				complete(r, (struct req *)cmd.io, (int)(c[i].res < 0 ? c[i].res : 0));
		}
		if (r->nparked)
			release_parked(r);
		kick(r);
	}
}

static int submit(struct run *r, struct req *q)
{
	int err;

	q->submit = now(r);
	if (!q->io.deadline && !q->spare)
		r->be_pending++;
	err = avfs_sched_submit(&r->sched, &q->io, now(r));
	if (err) {
		complete(r, q, err);
		return err;
	}
	kick(r);
	return 0;
}

/* ---- streams ---- */

static uint64_t dev_of(struct run *r, uint64_t ino, uint64_t off, uint32_t len, bool write)
{
	struct avfs_bext e;
	int n = write ? avfs_fs_map_write(r->fs, ino, off, len, now(r), &e, 1)
		      : avfs_fs_map_read(r->fs, ino, off, len, &e, 1);

	if (n != 1 || !e.dev_off)
		return UINT64_MAX;
	return e.dev_off + (off - e.file_off);
}

static void delete_one(struct run *r);

/* ---- the bandwidth class (papers/004 §3.1-3.2, SPEC §7) ----
 *
 * A reserved stream's request is real-time while its token bucket (rate: the reservation,
 * size: the buffer) covers it, due when the rest of the buffer drains at the reserved rate.
 * Above the rate it is best effort; o->bw_policy says how:
 *
 * AVFS_BW_PARK (default): it waits in the stream's queue ("parked") until either its tokens
 *   are due — then it goes real-time — or no other best-effort request is in the scheduler —
 *   then it goes as best effort (work conservation, papers/004 §3.1.4: "we only enter
 *   work-conservation in the BW class when there are no BE class readers with requests
 *   pending"). What it gets so is time nobody else asked for, so it is not charged: the
 *   bucket keeps paying the reservation in real time. When its tokens come while all its
 *   requests wait in the scheduler as spare ones (a greedy stream has no more buffer to ask
 *   with), one of them is withdrawn and sent again as real-time — papers/004 looks at the
 *   tokens when it dispatches, not when a request arrives.
 * AVFS_BW_AT_ONCE: it is charged (avfs_bucket_charge's debt, down to half a bucket) and sent
 *   as best effort at once. A greedy stream then always has a request to charge, every
 *   refill goes to the debt of its next best-effort request and the bucket sits at its
 *   floor: the stream loses its real-time service and gets only its share of best effort
 *   (kept for comparison; avfs-sim isolation --bw at-once).
 * AVFS_BW_UNCHARGED: best effort at once but uncharged (avfs_bucket_take): the bucket keeps
 *   refilling, so every time it covers a request the stream's next one is real-time. What
 *   avfsd does (daemon/streams.c); avfs-sim isolation --bw uncharged. */

/* ns until the bucket holds len bytes (0: it does now), without charging it */
static int64_t bucket_wait(const struct avfs_bucket *b, uint64_t len, int64_t t)
{
	double tokens = b->tokens;

	if (t > b->last)
		tokens = fmin(b->size, tokens + b->rate * (double)(t - b->last) / NS);
	if (tokens >= (double)len)
		return 0;
	return (int64_t)ceil(((double)len - tokens) / b->rate * NS) + 1;
}

static struct req *unpark(struct run *r, struct stream *s)
{
	struct req *q = s->park_head;

	s->park_head = q->park_next;
	if (!s->park_head)
		s->park_tail = NULL;
	q->park_next = NULL;
	r->nparked--;
	return q;
}

static void park_event(void *arg, uint64_t t);

static void spare_unlink(struct stream *s, struct req *q)
{
	*(q->sp_prev ? &q->sp_prev->sp_next : &s->spare_head) = q->sp_next;
	*(q->sp_next ? &q->sp_next->sp_prev : &s->spare_tail) = q->sp_prev;
	q->sp_prev = q->sp_next = NULL;
	q->spare = false;
}

/* Withdraw the oldest of the stream's spare requests that no command has touched yet. */
static struct req *take_spare(struct run *r, struct stream *s)
{
	for (struct req *q = s->spare_head; q; q = q->sp_next) {
		if (q->io.len == q->io.orig_len && !avfs_sched_cancel(&r->sched, &q->io)) {
			spare_unlink(s, q);
			return q;
		}
	}
	return NULL;
}

/* Send what the stream's tokens cover as real-time: its parked requests in order, or, none
 * parked, one of its spare requests withdrawn from the scheduler. */
static void promote(struct run *r, struct stream *s)
{
	while ((s->park_head || s->spare_head) && !r->err) {
		struct req *q;
		int64_t wait = bucket_wait(&s->bucket, s->io, now(r));

		if (wait) {
			if (!s->park_timer && now(r) + wait < r->end) {
				s->park_timer = true;
				avfs_sim_at(r->eng, (uint64_t)(now(r) + wait), park_event, s->ev);
			}
			return;
		}
		q = s->park_head ? unpark(r, s) : take_spare(r, s);
		if (!q)
			return;	/* every spare one is on the disk already */
		if (!avfs_bucket_charge(&s->bucket, q->io.len, now(r)))
			abort();	/* bucket_wait said it holds the tokens */
		q->io.deadline = avfs_service_deadline(&s->svc, q->io.len, now(r));
		submit(r, q);
	}
}

/* Work conservation: with no other best-effort request in the scheduler, every parked
 * request goes as best effort, oldest first (all of them, so that the scheduler can order
 * them; a best-effort request arriving later waits for them in C-SCAN order, no more). */
static void release_parked(struct run *r)
{
	while (r->nparked && !r->be_pending && !r->err && now(r) < r->end) {
		struct stream *s = NULL;
		struct req *q;

		for (unsigned i = 0; i < r->nstreams; i++)
			if (r->streams[i].park_head &&
			    (!s || r->streams[i].park_head->issued < s->park_head->issued))
				s = &r->streams[i];
		q = unpark(r, s);
		q->spare = true;
		q->sp_prev = s->spare_tail;
		*(s->spare_tail ? &s->spare_tail->sp_next : &s->spare_head) = q;
		s->spare_tail = q;
		submit(r, q);
		promote(r, s);	/* (arms the event for its next tokens) */
	}
}

/* A reserved stream's new request. */
static void reserved_issue(struct run *r, struct stream *s, struct req *q)
{
	if (r->o->bw_policy == AVFS_BW_UNCHARGED) {
		if (avfs_bucket_take(&s->bucket, q->io.len, now(r)))
			q->io.deadline = avfs_service_deadline(&s->svc, q->io.len, now(r));
		submit(r, q);
		return;
	}
	if (r->o->bw_policy == AVFS_BW_AT_ONCE) {
		if (avfs_bucket_charge(&s->bucket, q->io.len, now(r)))
			q->io.deadline = avfs_service_deadline(&s->svc, q->io.len, now(r));
		submit(r, q);
		return;
	}
	if (s->park_tail)
		s->park_tail->park_next = q;
	else
		s->park_head = q;
	s->park_tail = q;
	r->nparked++;
	promote(r, s);
	release_parked(r);
}

static void stream_issue(struct run *r, struct stream *s)
{
	struct req *q = req_new(r, RQ_STREAM);
	uint64_t dev;

	if (s->raw) {
		if (s->pos + s->io > s->raw_hi)
			s->pos = s->raw_lo;
		dev = s->pos;
		goto mapped;
	}
	if (!s->write && s->pos + s->io > s->fsize)
		s->pos = 0;	/* playback loops over its recording */
	if (s->write) {
		struct avfs_statfs st;

		avfs_fs_statfs(r->fs, &st);
		if (st.bfree < st.blocks / 50 + 4)
			delete_one(r);	/* a DVR deletes its oldest recording to make room */
	}
	dev = dev_of(r, s->ino, s->pos, s->io, s->write);
	if (dev == UINT64_MAX) {
		say(r, -ENOSPC, "a %s stream cannot map its next request at %.1f s: the file system "
		    "is full", s->write ? "recording" : "playback", (double)(now(r) - r->start) / NS);
		req_free(r, q);
		s->k++;	/* never reschedule at the same instant */
		return;
	}
mapped:
	q->s = s;
	q->io.off = dev;
	q->io.len = s->io;
	q->io.write = s->write;
	if (!s->spec) {
		/* SPEC §12: the deadline is when the stream's buffer would under-run (playback)
		 * or overflow (recording): a buffer of `depth` requests (4 MiB, 1.73 s), the k-th
		 * request issued when its slot starts draining (filling), due `depth` periods
		 * later */
		q->io.deadline = s->t0 + (int64_t)((double)(r->o->depth + s->k) * s->period);
	}
	/* else best effort, unless reserved (reserved_issue() decides) */
	s->pos += s->io;
	s->k++;
	q->issued = now(r);
	if (s->spec && s->spec->reserved) {
		reserved_issue(r, s, q);
		return;
	}
	submit(r, q);
}

struct stream_ev {
	struct run *r;
	struct stream *s;
};

static void park_event(void *arg, uint64_t t)
{
	struct stream_ev *e = arg;

	(void)t;
	e->s->park_timer = false;
	promote(e->r, e->s);
}

static void stream_event(void *arg, uint64_t t)
{
	struct stream_ev *e = arg;
	struct stream *s = e->s;
	struct run *r = e->r;
	int64_t next;

	(void)t;
	if (s->spec && s->spec->greedy) {
		/* as fast as its buffer allows: every slot asked for now, each completion asks
		 * again (complete()) */
		for (unsigned i = 0; i < s->depth && !r->err; i++)
			stream_issue(r, s);
		return;
	}
	stream_issue(r, s);
	next = s->t0 + (int64_t)((double)s->k * s->period);
	if (next < r->end)
		avfs_sim_at(r->eng, (uint64_t)next, stream_event, e);
}

/* ---- best effort ---- */

static void be_next(struct run *r);

static void be_event(void *arg, uint64_t t)
{
	(void)t;
	be_next(arg);
}

static uint64_t random_rec(struct run *r)
{
	for (int tries = 0; tries < 1000; tries++) {
		size_t i = rnd(r, r->nrecs);

		if (r->recs[i])
			return r->recs[i];
	}
	return 0;
}

static void be_next(struct run *r)
{
	struct req *q;
	uint64_t dev = UINT64_MAX;
	uint32_t len = 0;
	bool write = false;

	if (now(r) >= r->end)
		return;
	switch (r->o->be) {
	case AVFS_BE_PICTURES:
		if (!r->be_ino || r->be_off >= r->be_size) {
			char name[32];
			uint64_t ino;

			/* papers/001 §4.3.2: a set of 100 pictures; the set is then deleted and
			 * written again, so the load goes on without filling the disk (each
			 * picture takes a whole data block) */
			if (r->be_files && r->be_files % 100 == 0) {
				for (int k = r->be_files - 100; k < r->be_files; k++) {
					snprintf(name, sizeof(name), "pic-%06d.jpg", k);
					avfs_fs_unlink(r->fs, AVFS_ROOT_INO, name, now(r));
				}
			}
			snprintf(name, sizeof(name), "pic-%06d.jpg", r->be_files++);
			if (avfs_fs_mknod(r->fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, now(r),
					  &ino))
				return;
			r->be_ino = ino;
			r->be_off = 0;
			r->be_size = 600000 + rnd(r, 1400000);	/* 0.6 .. 2.0 MB, mean 1.3 MB */
		}
		len = (uint32_t)(r->be_size - r->be_off < (1u << 20) ? r->be_size - r->be_off : (1u << 20));
		len = (len + 4095) & ~4095u;
		{
			struct avfs_bext e;

			if (avfs_fs_map_write(r->fs, r->be_ino, r->be_off, len, now(r), &e, 1) != 1)
				return;
			if (r->be_off + len > e.file_off + avfs_fs_block_size(r->fs))
				len = (uint32_t)(e.file_off + avfs_fs_block_size(r->fs) - r->be_off);
			dev = e.dev_off + (r->be_off - e.file_off);
		}
		r->be_off += len;
		write = true;
		break;
	case AVFS_BE_RANDOM:
	case AVFS_BE_PROBE: {
		const struct avfs_super *sb = avfs_fs_super(r->fs);
		uint64_t bs = 1ull << sb->block_shift;

		len = r->o->be == AVFS_BE_RANDOM ? 4096 : r->o->be_size;
		len = (len + 4095) & ~4095u;
		if (len > bs)
			len = (uint32_t)bs;
		dev = sb->data_off + rnd(r, sb->data_blocks) * bs + rnd(r, (bs - len) / 4096 + 1) * 4096;
		break;
	}
	case AVFS_BE_GREEDY: {
		struct avfs_stat st;

		if (!r->be_ino || avfs_fs_getattr(r->fs, r->be_ino, &st) || r->be_off + (1u << 20) > st.size) {
			r->be_ino = random_rec(r);
			r->be_off = 0;
			if (!r->be_ino)
				return;
		}
		len = 1u << 20;
		dev = dev_of(r, r->be_ino, r->be_off, len, false);
		{
			struct avfs_bext e;

			if (avfs_fs_map_read(r->fs, r->be_ino, r->be_off, len, &e, 1) == 1 &&
			    r->be_off + len > e.file_off + avfs_fs_block_size(r->fs))
				len = (uint32_t)(e.file_off + avfs_fs_block_size(r->fs) - r->be_off);
		}
		r->be_off += len;
		break;
	}
	default:
		return;
	}
	if (dev == UINT64_MAX || !len)
		return;
	q = req_new(r, RQ_BE);
	q->io.off = dev;
	q->io.len = len;
	q->io.write = write;
	submit(r, q);
}

/* ---- the high-priority probe (papers/003 Table 2) ---- */

static void hp_event(void *arg, uint64_t t)
{
	struct run *r = arg;
	const struct avfs_super *sb = avfs_fs_super(r->fs);
	struct req *q;
	double gap;

	(void)t;
	if (now(r) >= r->end)
		return;
	q = req_new(r, RQ_HP);
	q->io.off = sb->data_off + rnd(r, (sb->data_blocks << sb->block_shift) / 4096) * 4096;
	q->io.len = 4096;
	/* urgent: inside the EDF window, so it goes at the next preemption point */
	q->io.deadline = now(r) + r->o->conf.urgent_ns / 2;
	submit(r, q);
	gap = -log(1.0 - (double)rnd(r, 1u << 30) / (1u << 30)) / r->o->hp_rate * NS;
	avfs_sim_at(r->eng, (uint64_t)(now(r) + (int64_t)gap + 1), hp_event, r);
}

/* ---- metadata: commits and deletions ---- */

static void plan_step(struct run *r);

static void commit_now(struct run *r)
{
	if (!r->plan && avfs_fs_dirty_blocks(r->fs)) {
		if (avfs_fs_commit(r->fs, now(r), &r->plan)) {
			say(r, -EIO, "metadata commit failed: %s", avfs_fs_why(r->fs));
			return;
		}
		r->plan_i = 0;
		r->plan_t0 = now(r);
		plan_step(r);
	}
}

static void meta_event(void *arg, uint64_t t)
{
	struct run *r = arg;

	(void)t;
	commit_now(r);
	if (now(r) + 5 * NS < r->end)
		avfs_sim_at(r->eng, (uint64_t)(now(r) + 5 * NS), meta_event, r);
}

/* The commit plan's writes go one by one, in order, as best-effort writes; flushes cost only
 * the command overhead on the model (its write cache is off) and are taken as done. */
static void plan_step(struct run *r)
{
	while (r->plan && r->plan_i < r->plan->n && r->plan->ops[r->plan_i].kind == AVFS_PLAN_FLUSH)
		r->plan_i++;
	if (!r->plan)
		return;
	if (r->plan_i == r->plan->n) {
		double s = (double)(now(r) - r->plan_t0) / NS;

		r->r->commits++;
		if (s > r->r->commit_max_s)
			r->r->commit_max_s = s;
		avfs_fs_plan_done(r->fs, r->plan, 0);
		avfs_plan_free(r->plan);
		r->plan = NULL;
		return;
	}
	{
		struct req *q = req_new(r, RQ_META);

		q->io.off = r->plan->ops[r->plan_i].off;
		q->io.len = r->plan->ops[r->plan_i].len;
		q->io.write = true;
		submit(r, q);
	}
}

/* Delete the first recording at or after index `from` (cyclically) that no stream plays.
 * Returns true if one was deleted. */
static bool delete_from(struct run *r, size_t from)
{
	for (size_t k = 0, i = from; k < r->nrecs; k++, i = (i + 1) % r->nrecs) {
		char name[32];

		if (!r->recs[i] || r->rec_busy[i])
			continue;
		snprintf(name, sizeof(name), "rec-%05zu.ts", i);
		if (avfs_fs_unlink(r->fs, AVFS_ROOT_INO, name, now(r)))
			return false;
		r->recs[i] = 0;
		r->r->deleted_files++;
		return true;
	}
	return false;
}

/* A DVR makes room by deleting its oldest recording. */
static void delete_one(struct run *r)
{
	delete_from(r, 0);
}

/* The "delete" BE load: a random recording deleted in the middle of the streams, and the
 * deletion committed at once. */
static void delete_event(void *arg, uint64_t t)
{
	struct run *r = arg;

	(void)t;
	if (r->nrecs && delete_from(r, rnd(r, r->nrecs)))
		commit_now(r);
}

/* ---- completion and metrics ---- */

static void add_margin(struct run *r, double margin_ms)
{
	if (r->nmargins == r->capmargins) {
		r->capmargins = r->capmargins ? 2 * r->capmargins : 4096;
		r->margins = realloc(r->margins, r->capmargins * sizeof(double));
		if (!r->margins)
			abort();
	}
	r->margins[r->nmargins++] = margin_ms;
}

/* A request of a heterogeneous stream completed (or failed): its stream's figures, the run's
 * (real-time requests as RT, the rest as best effort), and a greedy stream asks again. */
static void stream_done(struct run *r, struct req *q, int res)
{
	struct stream *s = q->s;
	int64_t t = now(r);

	if (q->spare)
		spare_unlink(s, q);
	if (q->issued >= r->start) {
		struct avfs_simrun_stream_res *sr = s->res;
		double lat = (double)(t - q->issued) / 1e6;

		avfs_qos_add(&sr->qos, q->io.deadline, t, q->io.orig_len, res);
		s->lat_sum += lat;
		if (lat > sr->lat_max_ms)
			sr->lat_max_ms = lat;
		if (q->io.deadline) {
			s->rt_ns += (double)q->disk_ns;
			if (!res)
				sr->rt_bytes += q->io.orig_len;
			r->r->rt_requests++;
			if (res == -ETIME)
				r->r->etime_failed++;
			if (res || t > q->io.deadline)
				r->r->deadline_misses++;
			add_margin(r, res ? -INFINITY : (double)(q->io.deadline - t) / 1e6);
		} else {
			s->be_ns += (double)q->disk_ns;
			if (!res) {
				sr->be_bytes += q->io.orig_len;
				r->r->be_bytes += q->io.orig_len;
				r->r->be_requests++;
			}
		}
	}
	req_free(r, q);
	/* not after a refusal at submission, which would come straight back */
	if (s->spec->greedy && t < r->end && !r->err && (res >= 0 || res == -ETIME))
		stream_issue(r, s);
}

static void complete(struct run *r, struct req *q, int res)
{
	int64_t t = now(r);

	if (!q->io.deadline && !q->spare)
		r->be_pending--;
	if (r->trace)
		fprintf(r->trace, "%lld,%lld,%d,%s,%s,%llu,%llu,%lld,%d,%lld\n", (long long)q->submit,
			(long long)t, q->kind == RQ_STREAM && q->s ? (int)(q->s - r->streams) : -1,
			q->kind == RQ_STREAM ? (q->io.deadline ? "rt" : "be") : q->kind == RQ_HP ? "hp" :
			q->kind == RQ_META ? "meta" : "be", q->io.write ? "w" : "r",
			(unsigned long long)q->io.orig_off, (unsigned long long)q->io.orig_len,
			(long long)q->io.deadline, res, (long long)q->disk_ns);
	switch (q->kind) {
	case RQ_STREAM:
		if (q->s->spec) {
			stream_done(r, q, res);
			return;
		}
		if (q->submit >= r->start) {
			double margin = (double)(q->io.deadline - t) / 1e6;

			r->r->rt_requests++;
			if (res == -ETIME)
				r->r->etime_failed++;
			if (res || t > q->io.deadline)
				r->r->deadline_misses++;
			add_margin(r, res ? -INFINITY : margin);
		}
		break;
	case RQ_BE:
		if (!res) {
			r->r->be_bytes += q->io.orig_len;
			r->r->be_requests++;
		}
		req_free(r, q);
		be_next(r);
		return;
	case RQ_HP: {
		double ms = (double)(t - q->submit) / 1e6;

		r->r->hp_requests++;
		r->hp_sum += ms;
		if (ms > r->hp_max)
			r->hp_max = ms;
		break;
	}
	case RQ_META:
		if (res) {
			say(r, res, "a metadata write failed (%d)", res);
			avfs_fs_plan_done(r->fs, r->plan, res);
			avfs_plan_free(r->plan);
			r->plan = NULL;
			break;
		}
		r->plan_i++;
		req_free(r, q);
		plan_step(r);
		return;
	}
	req_free(r, q);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quant(const double *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)floor(q * (double)(n - 1));
	return v[i];
}

static void finish_metrics(struct run *r)
{
	struct avfs_simrun_result *res = r->r;
	double dur = (double)(r->end - r->start);
	size_t n, below = 0;
	const struct avfs_simdisk_rec *t = avfs_simdisk_trace(r->d, &n);
	double sum = 0, sum2 = 0;

	if (r->nmargins)
		qsort(r->margins, r->nmargins, sizeof(double), cmp_d);
	res->p0 = res->rt_requests ? (double)res->deadline_misses / (double)res->rt_requests : 0;
	if (r->nmargins) {
		res->margin_min_ms = r->margins[0];
		res->margin_p001_ms = quant(r->margins, r->nmargins, 0.001);
		res->margin_p01_ms = quant(r->margins, r->nmargins, 0.01);
		res->margin_p50_ms = quant(r->margins, r->nmargins, 0.5);
		if (isinf(res->margin_min_ms))
			res->margin_min_ms = -1e9;
		if (isinf(res->margin_p001_ms))
			res->margin_p001_ms = -1e9;
		if (isinf(res->margin_p01_ms))
			res->margin_p01_ms = -1e9;
	}
	res->disk_utilization = (double)(avfs_simdisk_busy_ns(r->d) - r->busy0) / dur;
	if (res->disk_utilization > 1)
		res->disk_utilization = 1;
	for (size_t i = 0; i < n; i++) {
		double ti = (double)(t[i].end - t[i].start);

		if ((int64_t)t[i].start < r->start)
			continue;
		sum += ti;
		sum2 += ti * ti;
		res->commands++;
	}
	/* papers/003 eq. (2): E(T_wait) = ½ ΣT_i² / (ΣT_i + T_idle), T_idle = dur − ΣT_i */
	res->e_twait_ms = dur > 0 ? 0.5 * sum2 / dur / 1e6 : 0;
	for (size_t i = 0; i < r->nseeks; i++)
		below += r->seeks[i] < 5;
	if (r->nseeks) {
		qsort(r->seeks, r->nseeks, sizeof(double), cmp_d);
		res->seek_p50_gb = quant(r->seeks, r->nseeks, 0.5);
		res->seek_p90_gb = quant(r->seeks, r->nseeks, 0.9);
		res->seek_frac_below_5 = (double)below / (double)r->nseeks;
	}
	res->be_mbps = (double)res->be_bytes * 8 / (dur / NS) / 1e6;
	res->hp_mean_ms = res->hp_requests ? r->hp_sum / (double)res->hp_requests : 0;
	res->hp_max_ms = r->hp_max;
	res->decision_us = res->decisions ? r->dec_wall / (double)res->decisions * 1e6 : 0;
	res->sim_s = dur / NS;
	if (r->plan && (double)(r->end - r->plan_t0) / NS > res->commit_max_s)
		res->commit_max_s = (double)(r->end - r->plan_t0) / NS;	/* still not done */
	for (unsigned i = 0; i < res->nstreams; i++) {
		const struct stream *s = &r->streams[i];
		struct avfs_simrun_stream_res *sr = s->res;
		uint64_t nreq = sr->qos.requests + sr->qos.be_requests;

		sr->mbps = (double)(sr->rt_bytes + sr->be_bytes) / (dur / NS) / 1e6;
		sr->rt_util = s->rt_ns / dur;
		sr->be_util = s->be_ns / dur;
		sr->lat_mean_ms = nreq ? s->lat_sum / (double)nreq : 0;
	}
}

/* ---- setup ---- */

static int predict(void *ctx, int64_t t, uint64_t off, int64_t *seek, int64_t *rot,
		   int64_t *half, uint64_t *mid)
{
	double s, ro, h;
	int err = avfs_simdisk_predict(ctx, (uint64_t)t, off, &s, &ro, &h, mid);

	*seek = (int64_t)s;
	*rot = (int64_t)ro;
	*half = (int64_t)h;
	return err;
}

/* Fill the data region to o->fill with recordings written through the real allocator, two
 * at a time (a DVR records more than one programme at once). No data moves: the blocks are
 * mapped and marked written, as hddemu's fast mode would fill a disk. */
static int fill(struct run *r)
{
	const struct avfs_super *sb = avfs_fs_super(r->fs);
	uint64_t bs = 1ull << sb->block_shift;
	uint64_t target = (uint64_t)(r->o->fill * (double)sb->data_blocks);
	uint64_t rec_blocks = (uint64_t)(1800.0 * r->o->rate / (double)bs) + 1;	/* 30 min */
	uint64_t used = 0, ino[2] = { 0, 0 }, off[2] = { 0, 0 };
	size_t cap = target / rec_blocks + 4;
	int err;

	r->recs = calloc(cap + 2, sizeof(*r->recs));
	r->rec_busy = calloc(cap + 2, sizeof(*r->rec_busy));
	if (!r->recs || !r->rec_busy)
		return -ENOMEM;
	while (used < target) {
		for (int k = 0; k < 2 && used < target; k++) {
			struct avfs_bext e;

			if (!ino[k] || off[k] >= rec_blocks * bs) {
				char name[32];

				if (r->nrecs >= cap + 2)
					return 0;
				snprintf(name, sizeof(name), "rec-%05zu.ts", r->nrecs);
				err = avfs_fs_mknod(r->fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0,
						    now(r), &ino[k]);
				if (err)
					return err;
				r->recs[r->nrecs++] = ino[k];
				off[k] = 0;
			}
			if (avfs_fs_map_write(r->fs, ino[k], off[k], bs, now(r), &e, 1) != 1)
				return -ENOSPC;
			off[k] += bs;
			used++;
			err = avfs_fsio_maybe_commit(r->io);
			if (err)
				return err;
		}
	}
	return avfs_fsio_sync(r->io);
}

/* mkfs records a named model's parameters in the superblock; others are profiled later */
static const char *named_model(const char *disk)
{
	return !strcmp(disk, "avfs-250g") || !strcmp(disk, "barracuda-500g") ||
	       !strcmp(disk, "st318437") || !strcmp(disk, "travelstar-20g") ||
	       !strcmp(disk, "ssd") ? disk : NULL;
}

/* The scheduler's and admission's model of the disk: the superblock's (SPEC §5.2). */
static struct avfs_svc_model sb_model(const struct avfs_super *sb, const struct avfs_disk *d)
{
	return (struct avfs_svc_model){ .tr_ns = (double)sb->rotation_ns,
					.tk_ns = (double)sb->seek_avg_ns,
					.dmax = (double)sb->rate_max, .dmin = (double)sb->rate_min,
					.lmax = d->info.size };
}

static int check_streams(const struct avfs_simrun_opts *o, char *why, size_t whylen)
{
	if (o->nstreams > 4096) {
		snprintf(why, whylen, "at most 4096 streams");
		return -EINVAL;
	}
	for (unsigned i = 0; i < o->nstreams; i++) {
		const struct avfs_simrun_stream *sp = &o->streams[i];

		if (!sp->io || sp->io % 4096 || sp->io > (16u << 20) ||
		    (1ull << o->block_shift) % sp->io || sp->buffer <= sp->io ||
		    sp->buffer / sp->io > 1024 || sp->rate < 0 || sp->reserve < 0 ||
		    (!sp->greedy && sp->rate <= 0) || (sp->reserved && sp->rate + sp->reserve <= 0) ||
		    !(sp->place < 1)) {
			snprintf(why, whylen, "stream %u: io must be a multiple of 4 KiB up to 16 MiB "
				 "dividing the data block, the buffer more than one request and at most "
				 "1024 of them, a rate > 0 (unless greedy), place < 1", i);
			return -EINVAL;
		}
	}
	return 0;
}

/* Set up heterogeneous stream i (the caller places it). */
static void spec_stream(struct run *r, struct stream *s, const struct avfs_simrun_stream *sp,
			struct avfs_simrun_stream_res *sr)
{
	double reserve = sp->reserve > 0 ? sp->reserve : sp->rate;

	s->spec = sp;
	s->res = sr;
	s->write = sp->write;
	s->io = sp->io;
	s->depth = (unsigned)(sp->buffer / sp->io);
	s->svc = (struct avfs_service_req){
		.rate = (uint64_t)llround(sp->reserved ? reserve : sp->rate),
		.buffer = sp->buffer, .io = sp->io, .write = sp->write,
	};
	if (!s->svc.rate)
		s->svc.rate = 1;	/* a greedy best-effort stream: no deadlines anyway */
	s->period = sp->greedy ? 0 : (double)sp->io / sp->rate * NS;
	s->t0 = r->start + (int64_t)rnd(r, sp->greedy ? 1000000 : (uint64_t)s->period);
	avfs_bucket_init(&s->bucket, (double)s->svc.rate, (double)sp->buffer, s->t0);
}

int avfs_simrun(const struct avfs_simrun_opts *o, struct avfs_simrun_result *res, char *why,
		size_t whylen)
{
	struct run r = { .o = o, .r = res, .why = why, .whylen = whylen, .rng = o->seed * 7919 + 1 };
	const struct avfs_sched_ops *ops = avfs_sched_lookup(o->policy);
	struct avfs_mkfs_opts mo = { .block_shift = o->block_shift, .seed = o->seed,
				     .alloc_policy = o->alloc, .now_ns = 1 };
	struct avfs_sched_conf conf = o->conf;
	struct stream_ev *sev = NULL;
	double w0 = wall(), wf;
	const struct avfs_super *sb;
	int err;

	memset(res, 0, sizeof(*res));
	if (!ops) {
		snprintf(why, whylen, "unknown policy '%s' (tm, fifo, cscan, edf, scan-edf)", o->policy);
		return -EINVAL;
	}
	if (!o->io || o->io % 4096 || o->io > (16u << 20) || !o->depth || o->depth > 1024 ||
	    o->rate <= 0 || o->duration_s <= 0 || o->duration_s > 1e6 || o->fill < 0 ||
	    o->fill > 0.95 || o->nread + o->nwrite > 4096) {
		snprintf(why, whylen, "bad workload: io must be a multiple of 4 KiB up to 16 MiB, "
			 "depth 1..1024, rate > 0, duration 0..1e6 s, fill 0..0.95, at most 4096 streams");
		return -EINVAL;
	}
	if ((1ull << o->block_shift) % o->io) {
		snprintf(why, whylen, "the request size must divide the data block size");
		return -EINVAL;
	}
	if (o->streams) {
		err = check_streams(o, why, whylen);
		if (err)
			return err;
	}
	err = avfs_sim_engine_new(&r.eng);
	if (err)
		return err;
	err = avfs_simdisk_open_model(r.eng, o->disk, o->seed, AVFS_SIMDISK_TRACE, &r.d);
	if (err) {
		snprintf(why, whylen, "unknown disk model '%s'", o->disk);
		goto out;
	}
	mo.disk_model = named_model(o->disk);
	err = avfs_fsio_mkfs(r.d, &mo, NULL, why, whylen);
	if (err)
		goto out;
	err = avfs_fsio_mount(r.d, 0, &r.io, NULL, why, whylen);
	if (err)
		goto out;
	r.fs = r.io->fs;
	sb = avfs_fs_super(r.fs);
	res->zones = sb->nzones;
	res->block_size = 1ull << sb->block_shift;
	avfs_simdisk_nostore(r.d, sb->data_off, sb->backup_off);
	err = fill(&r);
	if (err) {
		snprintf(why, whylen, "filling the file system failed: %s", strerror(-err));
		goto out;
	}
	res->files_filled = r.nrecs;
	wf = wall();
	res->fill_wall_s = wf - w0;

	/* the scheduler: service-time model from the superblock (SPEC §5.2) */
	conf.model = sb_model(sb, r.d);
	conf.rotational = r.d->info.rotational;
	if (conf.jit || conf.split_bytes)
		conf.pred = (struct avfs_sched_predictor){ .ctx = r.d, .predict = predict };
	err = avfs_sched_conf_check(&conf, why, whylen);
	if (err)
		goto out;
	err = avfs_sched_init(&r.sched, ops, &conf);
	if (err) {
		snprintf(why, whylen, "scheduler: %s", strerror(-err));
		goto out;
	}
	r.ninflight_slots = r.sched.max_inflight;
	r.inflight = calloc(r.ninflight_slots, sizeof(*r.inflight));
	if (o->trace_path) {
		r.trace = fopen(o->trace_path, "w");
		if (!r.trace) {
			snprintf(why, whylen, "%s: %s", o->trace_path, strerror(errno));
			err = -errno;
			goto out;
		}
		fprintf(r.trace, "submit_ns,complete_ns,stream,class,dir,offset,length,deadline_ns,result,service_ns\n");
	}
	/* settle: let the fill's last metadata reach the disk, then start measuring */
	avfs_sim_run_until(r.eng, avfs_sim_now(r.eng) + 1000000);
	r.start = now(&r);
	r.end = r.start + (int64_t)(o->duration_s * NS);
	r.busy0 = avfs_simdisk_busy_ns(r.d);
	avfs_simdisk_trace_clear(r.d);

	/* streams: read streams play random recordings from random positions; write streams
	 * record new files; phases staggered over one request period */
	r.nstreams = o->streams ? o->nstreams : o->nread + o->nwrite;
	r.streams = calloc(r.nstreams ? r.nstreams : 1, sizeof(*r.streams));
	sev = calloc(r.nstreams ? r.nstreams : 1, sizeof(*sev));
	if (o->streams) {
		res->streams = calloc(r.nstreams ? r.nstreams : 1, sizeof(*res->streams));
		res->nstreams = r.nstreams;
	}
	if (!r.streams || !sev || !r.inflight || (o->streams && !res->streams)) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < r.nstreams; i++) {
		struct stream *s = &r.streams[i];

		if (o->streams) {
			spec_stream(&r, s, &o->streams[i], &res->streams[i]);
		} else {
			s->write = i >= o->nread;
			s->io = o->io;
			s->period = (double)o->io / o->rate * NS;
			s->t0 = r.start + (int64_t)rnd(&r, (uint64_t)s->period);
		}
		if (s->spec && s->spec->place >= 0) {
			/* raw: a contiguous run of the data region from the place on */
			uint64_t bs = 1ull << sb->block_shift;
			uint64_t b = (uint64_t)(s->spec->place * (double)sb->data_blocks);

			s->raw = true;
			s->raw_lo = sb->data_off + (b < sb->data_blocks ? b : sb->data_blocks - 1) * bs;
			s->raw_hi = sb->data_off + sb->data_blocks * bs;
			s->pos = s->raw_lo;
		} else if (!s->write) {
			size_t k = rnd(&r, r.nrecs ? r.nrecs : 1);
			struct avfs_stat st;

			if (!r.nrecs) {
				snprintf(why, whylen, "read streams need recordings: --fill must be > 0");
				err = -EINVAL;
				goto out;
			}
			s->ino = r.recs[k];
			r.rec_busy[k] = true;
			avfs_fs_getattr(r.fs, s->ino, &st);
			s->fsize = st.size;
			s->pos = rnd(&r, st.size / s->io) * s->io;
		} else {
			char name[32];

			snprintf(name, sizeof(name), "live-%03u.ts", i);
			err = avfs_fs_mknod(r.fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, now(&r),
					    &s->ino);
			if (err) {
				snprintf(why, whylen, "cannot create a recording: %s", strerror(-err));
				goto out;
			}
		}
		sev[i] = (struct stream_ev){ .r = &r, .s = s };
		s->ev = &sev[i];
		avfs_sim_at(r.eng, (uint64_t)s->t0, stream_event, &sev[i]);
	}
	if (o->be == AVFS_BE_DELETE)
		avfs_sim_at(r.eng, (uint64_t)(r.start + (r.end - r.start) / 2), delete_event, &r);
	else if (o->be != AVFS_BE_NONE)
		avfs_sim_at(r.eng, (uint64_t)r.start + 1, be_event, &r);
	if (o->hp_rate > 0)
		avfs_sim_at(r.eng, (uint64_t)r.start + 1000, hp_event, &r);
	avfs_sim_at(r.eng, (uint64_t)(r.start + 5 * NS), meta_event, &r);

	/* the event loop, in virtual time */
	while (!r.err && avfs_sim_next(r.eng) <= (uint64_t)r.end) {
		avfs_sim_step(r.eng);
		drain(&r);
	}
	err = r.err;
	if (!err)
		avfs_sim_run_until(r.eng, (uint64_t)r.end);
	if (!err)
		finish_metrics(&r);
	res->wall_s = wall() - w0;
out:
	if (err) {
		free(res->streams);
		res->streams = NULL;
		res->nstreams = 0;
	}
	if (r.trace)
		fclose(r.trace);
	if (r.sched.ops)
		avfs_sched_destroy(&r.sched);
	while (r.all) {
		struct req *q = r.all;

		r.all = q->all_next;
		free(q);
	}
	if (r.plan)
		avfs_plan_free(r.plan);
	if (r.io)
		avfs_fsio_abandon(r.io);
	avfs_disk_close(r.d);
	avfs_sim_engine_free(r.eng);
	free(r.inflight);
	free(r.streams);
	free(sev);
	free(r.margins);
	free(r.seeks);
	free(r.recs);
	free(r.rec_busy);
	return err;
}

void avfs_simrun_result_free(struct avfs_simrun_result *r)
{
	free(r->streams);
	r->streams = NULL;
	r->nstreams = 0;
}

int avfs_simrun_model(const struct avfs_simrun_opts *o, struct avfs_svc_model *m,
		      uint64_t *block_size, char *why, size_t whylen)
{
	struct avfs_mkfs_opts mo = { .block_shift = o->block_shift, .seed = o->seed,
				     .alloc_policy = o->alloc, .now_ns = 1,
				     .disk_model = named_model(o->disk) };
	struct avfs_sim_engine *eng;
	struct avfs_fsio *io = NULL;
	struct avfs_disk *d = NULL;
	int err = avfs_sim_engine_new(&eng);

	if (err)
		return err;
	err = avfs_simdisk_open_model(eng, o->disk, o->seed, 0, &d);
	if (err) {
		snprintf(why, whylen, "unknown disk model '%s'", o->disk);
		goto out;
	}
	err = avfs_fsio_mkfs(d, &mo, NULL, why, whylen);
	if (!err)
		err = avfs_fsio_mount(d, 0, &io, NULL, why, whylen);
	if (!err) {
		const struct avfs_super *sb = avfs_fs_super(io->fs);

		*m = sb_model(sb, d);
		*block_size = 1ull << sb->block_shift;
		avfs_fsio_abandon(io);
	}
out:
	avfs_disk_close(d);
	avfs_sim_engine_free(eng);
	return err;
}
