/*
 * simrun.c — avfs-sim's adapter over the engine: it formats and fills a simulated disk with the
 * real file system, then carries out the workload's plan (sim/workload.c) in virtual time —
 * streams (with per-class results), best-effort generators, the preemption probe — as requests
 * to the engine avfsd runs (engine/), whose commands go to the simulated disk and whose
 * completions come back from it.
 * The scheduler, data plans, bandwidth class, commits and metrics are the very same code; what
 * is the simulator's own is the clock (virtual), the disk (the model) and the front end (the
 * generators instead of FUSE and libavio). Times are virtual ns except the decision cost.
 */
#include "simrun.h"

#include "disk.h"
#include "fs.h"
#include "fsio.h"
#include "hddmodel.h"
#include "rotpred.h"
#include "simdisk.h"
#include "simengine.h"
#include "workload.h"
#include "zrr.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NS 1000000000.0
#define MIB 1048576.0
#define SCRATCH (16u << 20)	/* the data region keeps no content: one buffer serves all */

enum req_kind { RQ_STREAM, RQ_BE, RQ_HP };

struct req {
	struct avfs_fio f;
	struct run *run;
	enum req_kind kind;
	struct avfs_wl_stream *s;	/* RQ_STREAM */
	struct beclient *be;	/* RQ_BE */
	int64_t issued;		/* when it was asked for */
	bool live;		/* asked for and not done */
	struct req *next_free;
	struct req *all_next;
};

/* What the simulator adds to a workload stream: its figures. */
struct sstream {
	struct avfs_wl_stream *w;
	struct avfs_simrun_stream_res *res;	/* heterogeneous streams only */
	struct avfs_simrun_class_res *cls;	/* its class's, when the streams have classes */
	uint64_t ino;		/* its file (0: raw) */
	uint64_t stream;	/* its reservation (0: none) */
	double rt_ns, be_ns, lat_sum;
};

/* A best-effort client: one of a generator's count, one request outstanding at a time. */
struct beclient {
	struct run *r;
	const struct avfs_simrun_be *g;
	unsigned gen;		/* its generator's index (the result's bes[]) */
	struct avfs_wl_pics pics;	/* pictures: its own set */
	uint64_t ino, off, size;	/* the file it is on: a picture being written, a recording
					 * being read (sequential), the source (copy) */
	uint64_t copy_ino;	/* copy: the copy being written */
	uint32_t copy_len;	/* copy: the bytes read last, to be written next (0: read next) */
	unsigned copies;	/* copy: copies begun */
	int64_t last;		/* when its last request was asked for */
};

struct run {
	struct avfs_simdisk_split split0;	/* the drive's time split when measuring began */
	const struct avfs_simrun_opts *o;
	struct avfs_simrun_result *r;
	struct avfs_sim_engine *sim;
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_fs *fs;
	struct avfs_engine *e;
	struct avfs_rotpred rp;	/* predictor=rotpred */
	struct avfs_hdd *geom;
	struct avfs_sim_event *timer;
	int64_t timer_at;
	int64_t start, end;
	struct avfs_wl wl;
	struct sstream *ss;
	uint8_t *scratch;
	struct req *all, *free_reqs;
	uint64_t *recs;		/* inode numbers of the recordings (0 = deleted) */
	size_t nrecs;
	bool *rec_busy;
	/* BE generators: o->bes, or the one of o->be */
	const struct avfs_simrun_be *gens;
	unsigned ngens;
	struct avfs_simrun_be legacy;
	struct beclient *bc;
	unsigned nbc;
	double *gen_lat;	/* per generator: the sum of its latencies, ms */
	double hp_sum, hp_max;
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
	{
		struct avfs_engine_conf ec;

		avfs_engine_conf_default(&ec);
		o->read_ahead = ec.ra_bytes;
		o->read_ahead_start = ec.ra_start;
		o->read_ahead_ramp_ns = ec.ra_ramp_ns;
		o->commit_wait_ns = ec.commit_wait_ns;
	}
	o->block_shift = 22;
	o->alloc = AVFS_ALLOC_ZRR_RUN;	/* as mkfs.avfs formats */
	o->be = AVFS_BE_NONE;
	o->be_size = 500 << 10;
	o->predictor = "model";
}

static int64_t now(struct run *r)
{
	return (int64_t)avfs_sim_now(r->sim);
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct req *req_new(struct run *r, enum req_kind kind)
{
	struct req *q = r->free_reqs, *all;

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
	q->run = r;
	q->live = true;
	q->issued = now(r);
	q->f.buf = r->scratch;	/* timing only: the data region keeps no content */
	q->f.cap = SCRATCH;
	q->f.label = -1;
	q->f.cls = kind == RQ_HP ? AVFS_TRACE_HP : AVFS_TRACE_BE;
	q->f.arg = q;
	return q;
}

static void req_free(struct run *r, struct req *q)
{
	q->live = false;
	q->next_free = r->free_reqs;
	r->free_reqs = q;
}

/* ---- the engine's side: the simulated disk and the virtual clock ---- */

static int ops_submit(void *ctx, const struct avfs_disk_req *dr)
{
	struct run *r = ctx;

	return avfs_disk_submit(r->d, dr);
}

static void on_timer(void *arg, uint64_t t)
{
	struct run *r = arg;

	r->timer = NULL;
	avfs_engine_tick(r->e, (int64_t)t);
}

static void ops_arm(void *ctx, int64_t at)
{
	struct run *r = ctx;

	if (r->timer)
		avfs_sim_cancel(r->sim, r->timer);
	r->timer = NULL;
	if (!at)
		return;
	r->timer_at = at < now(r) ? now(r) : at;
	r->timer = avfs_sim_at(r->sim, (uint64_t)r->timer_at, on_timer, r);
}

static void ops_trace(void *ctx, const struct avfs_trace_rec *t)
{
	struct run *r = ctx;
	char line[AVFS_TRACE_LINE_MAX];

	if (r->trace && t->submit_ns >= r->start) {
		size_t n = avfs_trace_format(t, line, sizeof(line));

		fwrite(line, 1, n, r->trace);
	}
}

static void ops_log(void *ctx, int level, const char *msg)
{
	struct run *r = ctx;

	if (level == 0)
		say(r, -EIO, "%s", msg);
}

/* Completions of the simulated disk, to the engine. */
static void drain(struct run *r)
{
	struct avfs_disk_cqe c[8];
	int n;

	while ((n = avfs_disk_reap(r->d, c, 8)) > 0)
		for (int i = 0; i < n; i++)
			avfs_engine_complete(r->e, c[i].cookie, c[i].res, now(r));
}

/* The decision cost: the policy's next() timed by the wall clock (the engine reads none). A run
 * at a time per thread: the wrapper's state is the thread's. */
static __thread const struct avfs_sched_ops *timed_inner;
static __thread double *timed_acc;

static int timed_init(void **ctx, const struct avfs_sched_conf *c)
{
	return timed_inner->init(ctx, c);
}

static void timed_next(void *ctx, int64_t t, struct avfs_sched_cmd *cmd)
{
	double w0 = wall();

	timed_inner->next(ctx, t, cmd);
	*timed_acc += wall() - w0;
}

static int submit(struct run *r, struct req *q, void (*done)(struct avfs_fio *, int64_t, int64_t))
{
	int err;

	q->f.done = done;
	err = avfs_engine_io(r->e, &q->f, now(r));
	if (err)
		done(&q->f, err, now(r));	/* counted as the engine would: a refusal */
	return err;
}

/* ---- streams ---- */

static void stream_issue(struct run *r, struct sstream *ss);

/* A stream's request completed (or was refused): its stream's figures, and a greedy stream
 * asks again. */
static void stream_req_done(struct avfs_fio *f, int64_t res, int64_t t)
{
	struct req *q = f->arg;
	struct run *r = q->run;
	struct sstream *ss = &r->ss[q->s->index];
	/* the deadline it was scheduled with; refused at once because its own had passed, that
	 * one (a failed real-time request, not a best-effort one) */
	int64_t dl = f->sched_deadline ? f->sched_deadline : res == -ETIME ? f->deadline : 0;

	if (res == -ENOSPC && dl && q->issued >= r->start && !r->r->nospace++)
		r->r->nospace_s = (double)(t - r->start) / NS;
	if (q->issued >= r->start && ss->cls)
		avfs_qos_add(&ss->cls->qos, dl, t, res > 0 ? (uint64_t)res : 0,
			     res < 0 ? (int)res : 0);
	if (q->issued >= r->start && ss->res) {
		struct avfs_simrun_stream_res *sr = ss->res;
		double lat = (double)(t - q->issued) / 1e6;
		uint64_t bytes = res > 0 ? (uint64_t)res : 0;

		avfs_qos_add(&sr->qos, dl, t, bytes, res < 0 ? (int)res : 0);
		ss->lat_sum += lat;
		if (lat > sr->lat_max_ms)
			sr->lat_max_ms = lat;
		if (f->sched_deadline) {
			ss->rt_ns += (double)f->disk_ns;
			sr->rt_bytes += bytes;
		} else {
			ss->be_ns += (double)f->disk_ns;
			sr->be_bytes += bytes;
		}
	}
	req_free(r, q);
	/* not after a refusal at submission, which would come straight back */
	if (ss->w->greedy && t < r->end && !r->err && (res >= 0 || res == -ETIME))
		stream_issue(r, ss);
}

static void delete_one(struct run *r);

static void stream_issue(struct run *r, struct sstream *ss)
{
	struct avfs_wl_stream *s = ss->w;
	struct req *q;
	struct avfs_wl_req w;

	if (s->write && !s->raw) {
		struct avfs_statfs st;

		avfs_fs_statfs(r->fs, &st);
		if (st.bfree < st.blocks / 50 + 4)
			delete_one(r);	/* a DVR deletes its oldest recording to make room */
	}
	avfs_wl_next(&r->wl, s, &w);
	q = req_new(r, RQ_STREAM);
	q->s = s;
	q->f.ino = ss->ino;
	q->f.off = w.off;
	q->f.len = w.len;
	q->f.write = s->write;
	q->f.deadline = w.deadline;
	q->f.stream = ss->stream;
	q->f.label = s->index;
	submit(r, q, stream_req_done);
}

struct stream_ev {
	struct run *r;
	struct sstream *ss;
};

static void stream_event(void *arg, uint64_t t)
{
	struct stream_ev *e = arg;
	struct sstream *ss = e->ss;
	struct run *r = e->r;
	int64_t next;

	(void)t;
	if (ss->w->greedy) {
		/* as fast as its buffer allows: every slot asked for now, each completion asks
		 * again */
		for (unsigned i = 0; i < ss->w->depth && !r->err; i++)
			stream_issue(r, ss);
		return;
	}
	stream_issue(r, ss);
	next = avfs_wl_when(ss->w, ss->w->k);
	if (next < r->end)
		avfs_sim_at(r->sim, (uint64_t)next, stream_event, e);
}

/* ---- deletions ---- */

/* Delete the first recording at or after index `from` (cyclically) that no stream plays.
 * Returns true if one was deleted. */
static bool delete_from(struct run *r, size_t from)
{
	for (size_t k = 0, i = from; k < r->nrecs; k++, i = (i + 1) % r->nrecs) {
		char name[32];

		if (!r->recs[i] || r->rec_busy[i])
			continue;
		snprintf(name, sizeof(name), "rec-%05zu.ts", i);
		if (AVFS_ENGINE_FS(r->e, now(r), avfs_fs_unlink(r->fs, AVFS_ROOT_INO, name, now(r))))
			return false;
		r->recs[i] = 0;
		r->r->deleted_files++;
		avfs_engine_changed(r->e, now(r));
		return true;
	}
	return false;
}

/* A DVR makes room by deleting its oldest recording. */
static void delete_one(struct run *r)
{
	delete_from(r, 0);
}

/* A delete generator's client: a random recording no stream plays deleted, and the deletion
 * committed at once. */
static void delete_event(void *arg, uint64_t t)
{
	struct beclient *cl = arg;
	struct run *r = cl->r;

	(void)t;
	if (r->nrecs && delete_from(r, avfs_wl_rnd(&r->wl, r->nrecs))) {
		r->r->bes[cl->gen].files++;
		avfs_engine_commit(r->e, now(r));
	}
}

/* ---- best effort ---- */

static void be_next(struct beclient *cl);

static void be_event(void *arg, uint64_t t)
{
	(void)t;
	be_next(arg);
}

/* A client's request completed: its generator's figures, then its next request, at once or
 * when its cap allows. */
static void be_done(struct avfs_fio *f, int64_t res, int64_t t)
{
	struct req *q = f->arg;
	struct beclient *cl = q->be;
	struct run *r = q->run;
	struct avfs_simrun_be_res *g = &r->r->bes[cl->gen];
	double lat = (double)(t - q->issued) / 1e6, gap = 0;

	if (res >= 0) {
		g->requests++;
		g->bytes += (uint64_t)res;
	} else {
		g->errors++;
	}
	r->gen_lat[cl->gen] += lat;
	if (lat > g->lat_max_ms)
		g->lat_max_ms = lat;
	if (cl->g->rate > 0)
		gap = (double)f->len / cl->g->rate;
	if (cl->g->iops > 0 && 1 / cl->g->iops > gap)
		gap = 1 / cl->g->iops;
	req_free(r, q);
	if (gap > 0 && cl->last + (int64_t)(gap * NS) > t) {
		if (cl->last + (int64_t)(gap * NS) < r->end)
			avfs_sim_at(r->sim, (uint64_t)(cl->last + (int64_t)(gap * NS)), be_event, cl);
		return;
	}
	be_next(cl);
}

static uint64_t random_rec(struct run *r)
{
	for (int tries = 0; tries < 1000; tries++) {
		size_t i = avfs_wl_rnd(&r->wl, r->nrecs);

		if (r->recs[i])
			return r->recs[i];
	}
	return 0;
}

/* A sequential read of the client's recording from its offset on: io bytes, not across a
 * data block's end; a new random recording (from its start) when there is none, it is gone or
 * it is read to its end. 0, or -ENOENT when no recording is left. */
static int next_in_recording(struct run *r, struct beclient *cl, uint32_t io, uint64_t *ino,
			     uint64_t *off, uint64_t *len)
{
	uint64_t bs = r->wl.block_size;
	struct avfs_stat st;

	if (!cl->ino || avfs_fs_getattr(r->fs, cl->ino, &st) || cl->off + io > st.size) {
		cl->ino = random_rec(r);
		cl->off = 0;
		if (!cl->ino)
			return -ENOENT;
	}
	*ino = cl->ino;
	*off = cl->off;
	*len = io - cl->off % bs % io;
	if (*len > bs - cl->off % bs)
		*len = bs - cl->off % bs;
	cl->off += *len;
	return 0;
}

/* The pictures load's next piece: a new picture (the set before it deleted every 100) when
 * the last one is whole. 0, or -errno when its file could not be made. */
static int next_picture(struct run *r, struct beclient *cl, struct req *q)
{
	if (!cl->ino || cl->off >= cl->size) {
		char name[32];
		int first, drop;

		avfs_wl_picture(&r->wl, &cl->pics, name, sizeof(name), &cl->size, &first, &drop);
		for (int k = first; k < first + drop; k++) {
			char old[32];

			avfs_wl_picture_name(&cl->pics, k, old, sizeof(old));
			AVFS_ENGINE_FS(r->e, now(r), avfs_fs_unlink(r->fs, AVFS_ROOT_INO, old, now(r)));
		}
		if (AVFS_ENGINE_FS(r->e, now(r), avfs_fs_mknod(r->fs, AVFS_ROOT_INO, name,
				   S_IFREG | 0644, 0, 0, now(r), &cl->ino)))
			return -EIO;
		avfs_engine_changed(r->e, now(r));
		cl->off = 0;
		r->r->bes[cl->gen].files++;
	}
	q->f.ino = cl->ino;
	q->f.off = cl->off;
	q->f.len = cl->size - cl->off < cl->g->io ? cl->size - cl->off : cl->g->io;
	q->f.len = (q->f.len + 4095) & ~4095ull;	/* as a picture writer's pages */
	q->f.write = true;
	cl->off += q->f.len;
	return 0;
}

/* The copy load: read a piece of the source, then write it to the copy; a whole copy (the
 * source read to where a sequential read would leave it, or gone) is deleted and another
 * begun. 0, or -errno (no recording left, no room for a copy). */
static int next_copy(struct run *r, struct beclient *cl, struct req *q)
{
	struct avfs_stat st;
	char name[40];

	if (cl->copy_len) {	/* write what was read */
		q->f.ino = cl->copy_ino;
		q->f.off = cl->off - cl->copy_len;
		q->f.len = cl->copy_len;
		q->f.write = true;
		cl->copy_len = 0;
		return 0;
	}
	if (cl->copy_ino && (avfs_fs_getattr(r->fs, cl->ino, &st) ||
			     cl->off + cl->g->io > st.size)) {
		snprintf(name, sizeof(name), "copy%u-%05u.ts", cl->pics.id, cl->copies - 1);
		AVFS_ENGINE_FS(r->e, now(r), avfs_fs_unlink(r->fs, AVFS_ROOT_INO, name, now(r)));
		avfs_engine_changed(r->e, now(r));
		r->r->bes[cl->gen].files++;
		cl->copy_ino = 0;
	}
	if (!cl->copy_ino) {
		cl->ino = random_rec(r);
		cl->off = 0;
		if (!cl->ino)
			return -ENOENT;
		snprintf(name, sizeof(name), "copy%u-%05u.ts", cl->pics.id, cl->copies++);
		if (AVFS_ENGINE_FS(r->e, now(r), avfs_fs_mknod(r->fs, AVFS_ROOT_INO, name,
				   S_IFREG | 0644, 0, 0, now(r), &cl->copy_ino)))
			return -EIO;
		avfs_engine_changed(r->e, now(r));
	}
	if (next_in_recording(r, cl, cl->g->io, &q->f.ino, &q->f.off, &q->f.len))
		return -ENOENT;
	cl->copy_len = (uint32_t)q->f.len;
	return 0;
}

static void be_next(struct beclient *cl)
{
	struct run *r = cl->r;
	struct req *q;
	int err = 0;

	if (now(r) >= r->end || r->err)
		return;
	q = req_new(r, RQ_BE);
	q->be = cl;
	switch (cl->g->kind) {
	case AVFS_BE_PICTURES:
		err = next_picture(r, cl, q);
		break;
	case AVFS_BE_RANDOM:
		q->f.len = (cl->g->io + 4095) & ~4095u;
		if (q->f.len > r->wl.block_size)
			q->f.len = r->wl.block_size;
		q->f.off = avfs_wl_random_off(&r->wl, (uint32_t)q->f.len);
		break;
	case AVFS_BE_GREEDY:
		err = next_in_recording(r, cl, cl->g->io, &q->f.ino, &q->f.off, &q->f.len);
		break;
	case AVFS_BE_COPY:
		err = next_copy(r, cl, q);
		break;
	default:
		err = -EINVAL;
		break;
	}
	if (err) {	/* the client stops */
		req_free(r, q);
		return;
	}
	cl->last = now(r);
	submit(r, q, be_done);
}

/* ---- the high-priority probe (papers/003 Table 2) ---- */

static void hp_done(struct avfs_fio *f, int64_t res, int64_t t)
{
	struct req *q = f->arg;
	struct run *r = q->run;

	(void)res;
	if (q->issued >= r->start) {
		double ms = (double)(t - q->issued) / 1e6;

		r->r->hp_requests++;
		r->hp_sum += ms;
		if (ms > r->hp_max)
			r->hp_max = ms;
	}
	req_free(r, q);
}

static void hp_event(void *arg, uint64_t t)
{
	struct run *r = arg;
	struct req *q;
	double gap;

	(void)t;
	if (now(r) >= r->end)
		return;
	q = req_new(r, RQ_HP);
	q->f.off = r->wl.data_off + avfs_wl_rnd(&r->wl, r->wl.data_blocks * r->wl.block_size / 4096) *
		   4096;
	q->f.len = 4096;
	/* urgent: inside the EDF window, so it goes at the next preemption point */
	q->f.deadline = now(r) + r->o->conf.urgent_ns / 2;
	submit(r, q, hp_done);
	gap = -log(1.0 - (double)avfs_wl_rnd(&r->wl, 1u << 30) / (1u << 30)) / r->o->hp_rate * NS;
	avfs_sim_at(r->sim, (uint64_t)(now(r) + (int64_t)gap + 1), hp_event, r);
}

/* ---- metrics ---- */

static void finish_metrics(struct run *r)
{
	struct avfs_simrun_result *res = r->r;
	const struct avfs_metrics *m = avfs_engine_metrics(r->e);
	struct avfs_metrics_summary s;
	double dur = (double)(r->end - r->start);

	avfs_metrics_summary(m, r->end, &s);
	res->rt_requests = s.rt_requests;
	res->deadline_misses = s.misses;
	res->etime_failed = s.etime;
	res->p0 = s.p0;
	res->margin_min_ms = s.margin_min_ms;
	res->margin_p001_ms = s.margin_p001_ms;
	res->margin_p01_ms = s.margin_p01_ms;
	res->margin_p50_ms = s.margin_p50_ms;
	res->disk_utilization = s.utilization;
	res->commands = s.commands;
	{
		struct avfs_sched_counters k;

		avfs_sched_counters(avfs_engine_sched(r->e), &k);
		res->satf_picks = k.satf_picks;
		res->overload = k.overload;
	}
	avfs_engine_ra_counts(r->e, &res->ra);
	res->e_twait_ms = s.e_twait_ms;
	res->seek_p50_gb = s.seek_p50_gb;
	res->seek_p90_gb = s.seek_p90_gb;
	res->seek_frac_below_5 = s.seek_frac_below_5;
	memcpy(res->seek_class, s.seek_class, sizeof(res->seek_class));
	res->be_bytes = s.be_bytes;
	res->be_requests = s.be_requests;
	res->be_mbps = s.be_mbps;
	res->decisions = s.decisions;
	res->max_pending = s.max_pending;
	res->hp_mean_ms = res->hp_requests ? r->hp_sum / (double)res->hp_requests : 0;
	res->hp_max_ms = r->hp_max;
	res->decision_us = res->decisions ? res->decision_us / (double)res->decisions * 1e6 : 0;
	res->sim_s = dur / NS;
	avfs_simdisk_split(r->d, &res->split);
	res->split.commands -= r->split0.commands;
	res->split.seeks -= r->split0.seeks;
	res->split.waits -= r->split0.waits;
	res->split.overhead_ns -= r->split0.overhead_ns;
	res->split.seek_ns -= r->split0.seek_ns;
	res->split.rot_ns -= r->split0.rot_ns;
	res->split.xfer_ns -= r->split0.xfer_ns;
	res->split.write_rot_ns -= r->split0.write_rot_ns;
	res->commits = avfs_engine_commits(r->e, NULL);
	res->commit_max_s = avfs_engine_commit_max_s(r->e, r->end);
	res->checkpoints = avfs_engine_checkpoints(r->e);
	for (unsigned i = 0; i < res->nstreams; i++) {
		const struct sstream *ss = &r->ss[i];
		struct avfs_simrun_stream_res *sr = ss->res;
		uint64_t nreq = sr->qos.requests + sr->qos.be_requests;

		sr->mbps = (double)(sr->rt_bytes + sr->be_bytes) / (dur / NS) / 1e6;
		sr->rt_util = ss->rt_ns / dur;
		sr->be_util = ss->be_ns / dur;
		sr->lat_mean_ms = nreq ? ss->lat_sum / (double)nreq : 0;
	}
	for (unsigned i = 0; i < res->nclasses; i++)
		res->classes[i].mib_s = (double)res->classes[i].qos.bytes / (dur / NS) / MIB;
	for (unsigned i = 0; i < res->nbes; i++) {
		struct avfs_simrun_be_res *g = &res->bes[i];
		uint64_t n = g->requests + g->errors;

		g->mib_s = (double)g->bytes / (dur / NS) / MIB;
		g->lat_mean_ms = n ? r->gen_lat[i] / (double)n : 0;
	}
}

/* Requests of a class still in flight at the end whose deadline (their own, or the one they
 * were scheduled with) had passed: misses that no completion shows. */
static void count_overdue(struct run *r)
{
	for (struct req *q = r->all; q; q = q->all_next) {
		struct sstream *ss;
		int64_t dl;

		if (!q->live || q->kind != RQ_STREAM)
			continue;
		ss = &r->ss[q->s->index];
		dl = q->f.deadline ? q->f.deadline : q->f.sched_deadline;
		if (ss->cls && dl && dl < r->end)
			ss->cls->overdue++;
	}
}

/* Has a real-time request missed its deadline (late or failed: deadline_misses)? */
static bool missed(struct run *r)
{
	return avfs_engine_metrics(r->e)->rt.misses > 0;
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

/* mkfs records a named model's parameters in the superblock; others are profiled later */
static const char *named_model(const char *disk)
{
	return !strcmp(disk, "avfs-250g") || !strcmp(disk, "barracuda-500g") ||
	       !strcmp(disk, "st318437") || !strcmp(disk, "travelstar-20g") ||
	       !strcmp(disk, "ssd") ? disk : NULL;
}

int avfs_simrun_format(struct avfs_disk *d, const struct avfs_simrun_opts *o,
		       struct avfs_fsio **io, char *why, size_t whylen)
{
	struct avfs_mkfs_opts mo = { .block_shift = o->block_shift, .seed = o->seed,
				     .alloc_policy = o->alloc, .now_ns = 1, .size = o->size,
				     .disk_model = named_model(o->disk) };
	int err = avfs_fsio_mkfs(d, &mo, NULL, why, whylen);

	if (!err)
		err = avfs_fsio_mount(d, 0, io, NULL, why, whylen);
	return err;
}

int avfs_simrun_fill(struct avfs_fsio *io, const struct avfs_simrun_opts *o, int64_t t,
		     uint64_t **recs_out, size_t *nrecs_out)
{
	struct avfs_fs *fs = io->fs;
	const struct avfs_super *sb = avfs_fs_super(fs);
	uint64_t bs = 1ull << sb->block_shift;
	uint64_t target = (uint64_t)(o->fill * (double)sb->data_blocks);
	uint64_t rec_blocks = (uint64_t)(1800.0 * o->rate / (double)bs) + 1;	/* 30 min */
	uint64_t used = 0, ino[2] = { 0, 0 }, off[2] = { 0, 0 };
	size_t cap = target / rec_blocks + 4, nrecs = 0;
	uint64_t *recs = calloc(cap + 2, sizeof(*recs));
	int err = 0;

	if (!recs)
		return -ENOMEM;
	while (used < target && !err) {
		for (int k = 0; k < 2 && used < target && !err; k++) {
			struct avfs_bext e;

			if (!ino[k] || off[k] >= rec_blocks * bs) {
				char name[32];

				if (nrecs >= cap + 2)
					goto done;
				snprintf(name, sizeof(name), "rec-%05zu.ts", nrecs);
				err = avfs_fs_mknod(fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, t,
						    &ino[k]);
				if (err == -EAGAIN && !(err = avfs_fsio_sync(io)))	/* full */
					err = avfs_fs_mknod(fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0,
							    0, t, &ino[k]);
				if (err)
					break;
				recs[nrecs++] = ino[k];
				off[k] = 0;
			}
			err = avfs_fs_map_write(fs, ino[k], off[k], bs, t, &e, 1);
			if (err == -EAGAIN && !(err = avfs_fsio_sync(io)))	/* full: commit, again */
				err = avfs_fs_map_write(fs, ino[k], off[k], bs, t, &e, 1);
			if (err != 1) {
				err = err < 0 ? err : -ENOSPC;
				break;
			}
			err = 0;
			off[k] += bs;
			used++;
			err = avfs_fsio_maybe_commit(io);
		}
	}
done:
	if (!err)
		err = avfs_fsio_sync(io);
	if (err) {
		free(recs);
		return err;
	}
	*recs_out = recs;
	*nrecs_out = nrecs;
	return 0;
}

/* The scheduler's and admission's model of the disk: the superblock's (SPEC §5.2), or, for a
 * part of a named model (o->size), that part's figures as avfsd --disk-model takes them. */
static int run_model(struct run *r, const struct avfs_super *sb, struct avfs_svc_model *m)
{
	struct avfs_rotpred_params rp;

	*m = (struct avfs_svc_model){ .tr_ns = (double)sb->rotation_ns,
				      .tk_ns = (double)sb->seek_avg_ns,
				      .dmax = (double)sb->rate_max, .dmin = (double)sb->rate_min,
				      .lmax = r->d->info.size };
	if (r->o->size) {
		int err = avfs_rotpred_named(r->o->disk, r->o->size, m, &rp, &r->geom);

		if (err && err != -ENOENT)
			return err;
		m->lmax = r->o->size;
	}
	return 0;
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
		if (sp->round_ns < 0 || (sp->round_ns > 0 && (sp->greedy || !sp->per_round ||
							      sp->per_round > 1024)) ||
		    (o->nclasses && sp->cls >= o->nclasses)) {
			snprintf(why, whylen, "stream %u: a round stream asks for 1 to 1024 requests "
				 "a round and is not greedy; its class < %u", i, o->nclasses);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_gens(const struct avfs_simrun_opts *o, char *why, size_t whylen)
{
	if (o->nbes && o->be != AVFS_BE_NONE) {
		snprintf(why, whylen, "best-effort generators or one --be load, not both");
		return -EINVAL;
	}
	for (unsigned i = 0; i < o->nbes; i++) {
		const struct avfs_simrun_be *g = &o->bes[i];
		bool data = g->kind != AVFS_BE_DELETE;

		if ((g->kind != AVFS_BE_PICTURES && g->kind != AVFS_BE_RANDOM &&
		     g->kind != AVFS_BE_GREEDY && g->kind != AVFS_BE_COPY && g->kind != AVFS_BE_DELETE) ||
		    g->count > 1000 || (data && (!g->io || g->io % 4096 || g->io > (16u << 20))) ||
		    (data && g->kind != AVFS_BE_PICTURES && g->io > (1ull << o->block_shift)) ||
		    !(g->rate >= 0) || !(g->iops >= 0)) {
			snprintf(why, whylen, "generator %u: pictures, random, sequential, copy or "
				 "delete; at most 1000 clients; io a multiple of 4 KiB up to 16 MiB "
				 "and the data block; caps >= 0", i);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_opts(const struct avfs_simrun_opts *o, char *why, size_t whylen)
{
	int err;

	if (!avfs_sched_lookup(o->policy)) {
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
	if (o->predictor && strcmp(o->predictor, "model") && strcmp(o->predictor, "rotpred")) {
		snprintf(why, whylen, "predictor '%s': model or rotpred", o->predictor);
		return -EINVAL;
	}
	err = check_gens(o, why, whylen);
	if (err)
		return err;
	return o->streams ? check_streams(o, why, whylen) : 0;
}

/* The engine over the filled file system: the scheduler's model from the superblock, the
 * predictor asked for, reservations for the reserved streams. */
int avfs_simrun_set(struct avfs_simrun_opts *o, const char *pair, char *why, size_t whylen)
{
	static const char *const engine[] = { "read-ahead", "read-ahead-start",
					      "read-ahead-ramp", "commit-wait" };
	const char *eq = strchr(pair, '=');
	struct avfs_engine_conf ec;
	char name[32];
	int err;

	for (size_t i = 0; eq && i < sizeof(engine) / sizeof(engine[0]); i++) {
		if ((size_t)(eq - pair) != strlen(engine[i]) ||
		    strncmp(pair, engine[i], (size_t)(eq - pair)))
			continue;
		avfs_engine_conf_default(&ec);
		snprintf(name, sizeof(name), "%s", engine[i]);
		err = avfs_engine_conf_set(&ec, name, eq + 1, why, whylen);
		if (err)
			return err;
		if (i == 0)
			o->read_ahead = ec.ra_bytes;
		else if (i == 1)
			o->read_ahead_start = ec.ra_start;
		else if (i == 2)
			o->read_ahead_ramp_ns = ec.ra_ramp_ns;
		else
			o->commit_wait_ns = ec.commit_wait_ns;
		return 0;
	}
	return avfs_sched_conf_set_pair(&o->conf, pair, why, whylen);
}

static int start_engine(struct run *r, const struct avfs_sched_ops *policy, double *dec_acc)
{
	static __thread struct avfs_sched_ops timed;
	const struct avfs_super *sb = avfs_fs_super(r->fs);
	struct avfs_engine_conf ec;
	struct avfs_engine_ops ops = { .ctx = r, .submit = ops_submit, .arm = ops_arm,
				       .trace = r->trace ? ops_trace : NULL, .log = ops_log };
	int err;

	avfs_engine_conf_default(&ec);
	ec.sched = r->o->conf;
	err = run_model(r, sb, &ec.sched.model);
	if (err) {
		snprintf(r->why, r->whylen, "disk model: %s", strerror(-err));
		return err;
	}
	ec.sched.rotational = r->d->info.rotational;
	if (ec.sched.jit || ec.sched.split_bytes || ec.sched.satf) {
		if (r->o->predictor && !strcmp(r->o->predictor, "rotpred")) {
			struct avfs_rotpred_params rp;
			struct avfs_svc_model m;

			/* what avfsd --disk-model runs: the model's own mechanics, the platter's
			 * phase learned from completions */
			avfs_hdd_free(r->geom);
			r->geom = NULL;
			err = avfs_rotpred_named(r->o->disk, r->o->size ? r->o->size : r->d->info.size,
						 &m, &rp, &r->geom);
			if (err == -ENOENT)
				avfs_rotpred_params_from_model(&ec.sched.model, &rp);
			else if (err)
				return err;
			err = avfs_rotpred_init(&r->rp, &rp);
			if (err) {
				snprintf(r->why, r->whylen, "predictor: the model has no rotation");
				return err;
			}
			ec.sched.pred = avfs_rotpred_predictor(&r->rp);
		} else {
			ec.sched.pred = (struct avfs_sched_predictor){ .ctx = r->d, .predict = predict };
		}
	}
	ec.bw = r->o->bw_policy;
	ec.ra_bytes = r->o->read_ahead;
	ec.ra_start = r->o->read_ahead_start;
	ec.ra_ramp_ns = r->o->read_ahead_ramp_ns;
	ec.commit_wait_ns = r->o->commit_wait_ns;
	ec.lbs = r->d->info.lbs;
	ec.wall_offset_ns = 0;	/* virtual time is the file system's time too */
	timed_inner = policy;
	timed_acc = dec_acc;
	timed = *policy;
	timed.init = timed_init;
	timed.next = timed_next;
	ec.policy = &timed;
	err = avfs_sched_conf_check(&ec.sched, r->why, r->whylen);
	if (err)
		return err;
	return avfs_engine_new(&r->e, &ec, r->fs, r->o->size ? r->o->size : r->d->info.size, &ops,
			       now(r), r->why, r->whylen);
}

/* The best-effort generators' clients: o->bes, or o->be as the one client it always was. Each
 * asks from the run's start on (a delete client deletes at its time, the count of them spread
 * evenly over the run). 0 or -ENOMEM. */
static int start_generators(struct run *r)
{
	const struct avfs_simrun_opts *o = r->o;
	unsigned n = 0, ordinal[AVFS_BE_COPY + 1] = { 0 };

	if (o->nbes) {
		r->gens = o->bes;
		r->ngens = o->nbes;
	} else if (o->be != AVFS_BE_NONE) {
		r->legacy = (struct avfs_simrun_be){
			.kind = o->be == AVFS_BE_PROBE ? AVFS_BE_RANDOM : o->be, .count = 1,
			.io = o->be == AVFS_BE_PROBE ? o->be_size : o->be == AVFS_BE_RANDOM ? 4096 :
			      1u << 20 };
		r->gens = &r->legacy;
		r->ngens = 1;
	}
	if (!r->ngens)
		return 0;
	for (unsigned i = 0; i < r->ngens; i++)
		n += r->gens[i].count;
	r->r->bes = calloc(r->ngens, sizeof(*r->r->bes));
	r->gen_lat = calloc(r->ngens, sizeof(*r->gen_lat));
	r->bc = calloc(n ? n : 1, sizeof(*r->bc));
	if (!r->r->bes || !r->gen_lat || !r->bc)
		return -ENOMEM;
	r->r->nbes = r->ngens;
	for (unsigned i = 0; i < r->ngens; i++) {
		const struct avfs_simrun_be *g = &r->gens[i];

		for (unsigned k = 0; k < g->count; k++) {
			struct beclient *cl = &r->bc[r->nbc++];

			*cl = (struct beclient){ .r = r, .g = g, .gen = i };
			cl->pics.id = ordinal[g->kind]++;	/* the first: the names of old */
			if (g->kind == AVFS_BE_DELETE)
				avfs_sim_at(r->sim, (uint64_t)(r->start + (r->end - r->start) *
							       (int64_t)(k + 1) / (int64_t)(g->count + 1)),
					    delete_event, cl);
			else
				avfs_sim_at(r->sim, (uint64_t)r->start + 1, be_event, cl);
		}
	}
	return 0;
}

/* A stream's file (a playback's recording, a recording's new file) and reservation. */
static int open_stream(struct run *r, struct sstream *ss)
{
	struct avfs_wl_stream *s = ss->w;
	int64_t id;
	char why[160];

	if (s->raw) {
		ss->ino = 0;
	} else if (!s->write) {
		ss->ino = r->recs[s->rec];
		r->rec_busy[s->rec] = true;
	} else {
		int err = AVFS_ENGINE_FS(r->e, now(r), avfs_fs_mknod(r->fs, AVFS_ROOT_INO, s->name,
					 S_IFREG | 0644, 0, 0, now(r), &ss->ino));

		if (err) {
			snprintf(r->why, r->whylen, "cannot create a recording: %s", strerror(-err));
			return err;
		}
	}
	if (!s->reserved)
		return 0;
	/* an experiment's reservation: the bandwidth class without the admission test (avfs-sim
	 * reserve runs admission itself; isolation overprovisions on purpose) */
	id = avfs_engine_reserve(r->e, &s->svc, ss->ino, NULL, AVFS_RESERVE_UNCHECKED, s->t0, NULL,
				 why, sizeof(why));
	if (id < 0) {
		snprintf(r->why, r->whylen, "stream %u: reservation: %s", s->index, why);
		return (int)id;
	}
	ss->stream = (uint64_t)id;
	/* the bucket starts full when the stream starts (its phase), as the client's buffer */
	avfs_bucket_init(&avfs_engine_stream(r->e, ss->stream)->bucket, (double)s->svc.rate,
			 (double)s->svc.buffer, s->t0);
	return 0;
}

int avfs_simrun(const struct avfs_simrun_opts *o, struct avfs_simrun_result *res, char *why,
		size_t whylen)
{
	struct run r = { .o = o, .r = res, .why = why, .whylen = whylen };
	const struct avfs_sched_ops *ops = avfs_sched_lookup(o->policy);
	struct stream_ev *sev = NULL;
	struct avfs_wl_rec *wrecs = NULL;
	double w0 = wall(), dec = 0;
	const struct avfs_super *sb;
	int err;

	memset(res, 0, sizeof(*res));
	err = check_opts(o, why, whylen);
	if (err)
		return err;
	err = avfs_sim_engine_new(&r.sim);
	if (err)
		return err;
	r.scratch = aligned_alloc(4096, SCRATCH);
	if (!r.scratch) {
		err = -ENOMEM;
		goto out;
	}
	err = avfs_simdisk_open_model(r.sim, o->disk, o->seed, AVFS_SIMDISK_TRACE, &r.d);
	if (err) {
		snprintf(why, whylen, "unknown disk model '%s'", o->disk);
		goto out;
	}
	if (o->size && (o->size > r.d->info.size || o->size % r.d->info.lbs)) {
		snprintf(why, whylen, "--size: more than the model's %llu bytes, or not whole sectors",
			 (unsigned long long)r.d->info.size);
		err = -EINVAL;
		goto out;
	}
	err = avfs_simrun_format(r.d, o, &r.io, why, whylen);
	if (err)
		goto out;
	r.fs = r.io->fs;
	sb = avfs_fs_super(r.fs);
	res->zones = sb->nzones;
	res->block_size = 1ull << sb->block_shift;
	avfs_simdisk_nostore(r.d, sb->data_off, sb->backup_off);
	err = avfs_simrun_fill(r.io, o, now(&r), &r.recs, &r.nrecs);
	if (err) {
		snprintf(why, whylen, "filling the file system failed: %s", strerror(-err));
		goto out;
	}
	r.rec_busy = calloc(r.nrecs + 1, sizeof(*r.rec_busy));
	wrecs = calloc(r.nrecs + 1, sizeof(*wrecs));
	if (!r.rec_busy || !wrecs) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r.nrecs; i++) {
		struct avfs_stat st;

		wrecs[i].ino = r.recs[i];
		if (!avfs_fs_getattr(r.fs, r.recs[i], &st))
			wrecs[i].size = st.size;
	}
	res->files_filled = r.nrecs;
	res->fill_wall_s = wall() - w0;
	if (o->trace_path) {
		char head[256];

		r.trace = fopen(o->trace_path, "w");
		if (!r.trace) {
			err = -errno;
			snprintf(why, whylen, "%s: %s", o->trace_path, strerror(errno));
			goto out;
		}
		fwrite(head, 1, avfs_trace_header(head, sizeof(head)), r.trace);
	}
	/* settle: let the fill's last metadata reach the disk, then start measuring */
	avfs_sim_run_until(r.sim, avfs_sim_now(r.sim) + 1000000);
	drain(&r);
	r.start = now(&r);
	r.end = r.start + (int64_t)(o->duration_s * NS);
	avfs_simdisk_trace_clear(r.d);
	if (o->stall_ns)
		avfs_simdisk_stall(r.d, (uint64_t)(r.start + o->stall_at_ns), (uint64_t)o->stall_ns);
	err = start_engine(&r, ops, &dec);
	if (err)
		goto out;

	err = avfs_wl_init(&r.wl, o, wrecs, r.nrecs, sb->data_off, sb->data_blocks,
			   1ull << sb->block_shift, r.start, why, whylen);
	if (err)
		goto out;
	r.ss = calloc(r.wl.nstreams ? r.wl.nstreams : 1, sizeof(*r.ss));
	sev = calloc(r.wl.nstreams ? r.wl.nstreams : 1, sizeof(*sev));
	if (o->streams) {
		res->streams = calloc(r.wl.nstreams ? r.wl.nstreams : 1, sizeof(*res->streams));
		res->nstreams = r.wl.nstreams;
	}
	if (o->streams && o->nclasses) {
		res->classes = calloc(o->nclasses, sizeof(*res->classes));
		res->nclasses = o->nclasses;
	}
	if (!r.ss || !sev || (o->streams && !res->streams) || (res->nclasses && !res->classes)) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < r.wl.nstreams; i++) {
		r.ss[i].w = &r.wl.streams[i];
		r.ss[i].res = o->streams ? &res->streams[i] : NULL;
		r.ss[i].cls = res->classes ? &res->classes[o->streams[i].cls] : NULL;
		err = open_stream(&r, &r.ss[i]);
		if (err)
			goto out;
		sev[i] = (struct stream_ev){ .r = &r, .ss = &r.ss[i] };
		avfs_sim_at(r.sim, (uint64_t)r.wl.streams[i].t0, stream_event, &sev[i]);
	}
	err = start_generators(&r);
	if (err)
		goto out;
	if (o->hp_rate > 0)
		avfs_sim_at(r.sim, (uint64_t)r.start + 1000, hp_event, &r);
	avfs_engine_metrics_reset(r.e, r.start);
	avfs_simdisk_split(r.d, &r.split0);

	/* the event loop, in virtual time */
	while (!r.err && avfs_sim_next(r.sim) <= (uint64_t)r.end) {
		avfs_sim_step(r.sim);
		drain(&r);
		if (o->stop_at_miss && missed(&r)) {
			r.end = now(&r);
			break;
		}
	}
	err = r.err;
	if (!err) {
		avfs_sim_run_until(r.sim, (uint64_t)r.end);
		res->decision_us = dec;
		finish_metrics(&r);
		count_overdue(&r);
	}
	res->wall_s = wall() - w0;
out:
	if (err)
		avfs_simrun_result_free(res);
	if (r.trace)
		fclose(r.trace);
	avfs_engine_free(r.e);	/* what is still in flight is forgotten with the run */
	while (r.all) {
		struct req *q = r.all;

		r.all = q->all_next;
		free(q);
	}
	if (r.io)
		avfs_fsio_abandon(r.io);
	avfs_disk_close(r.d);
	avfs_sim_engine_free(r.sim);
	avfs_hdd_free(r.geom);
	avfs_wl_free(&r.wl);
	free(r.scratch);
	free(r.ss);
	free(r.bc);
	free(r.gen_lat);
	free(sev);
	free(wrecs);
	free(r.recs);
	free(r.rec_busy);
	return err;
}

void avfs_simrun_result_free(struct avfs_simrun_result *r)
{
	free(r->streams);
	free(r->classes);
	free(r->bes);
	r->streams = NULL;
	r->classes = NULL;
	r->bes = NULL;
	r->nstreams = r->nclasses = r->nbes = 0;
}

int avfs_simrun_model(const struct avfs_simrun_opts *o, struct avfs_svc_model *m,
		      uint64_t *block_size, char *why, size_t whylen)
{
	struct avfs_sim_engine *eng;
	struct avfs_fsio *io = NULL;
	struct run r = { .o = o };
	int err = avfs_sim_engine_new(&eng);

	if (err)
		return err;
	err = avfs_simdisk_open_model(eng, o->disk, o->seed, 0, &r.d);
	if (err) {
		snprintf(why, whylen, "unknown disk model '%s'", o->disk);
		goto out;
	}
	err = avfs_simrun_format(r.d, o, &io, why, whylen);
	if (!err) {
		const struct avfs_super *sb = avfs_fs_super(io->fs);

		err = run_model(&r, sb, m);
		*block_size = 1ull << sb->block_shift;
		avfs_fsio_abandon(io);
	}
out:
	avfs_hdd_free(r.geom);
	avfs_disk_close(r.d);
	avfs_sim_engine_free(eng);
	return err;
}
