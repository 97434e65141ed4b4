/*
 * engine.c — the engine's public entry points (engine.h): thin checks, then the module that
 * owns the work; the one completion path of a front-end request (QoS metrics, its
 * reservation's statistics, then the front end's done()); the wake time, given to the driver
 * whenever it changes. Settings beyond the scheduler's live here too.
 */
#include "engine_i.h"
#include "units.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ll
#define NS 1000000000ll

void avfs_engine_conf_default(struct avfs_engine_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->policy = &avfs_sched_tm;
	avfs_sched_conf_default(&c->sched);
	avfs_admit_conf_default(&c->admit, &c->sched.model, 4u << 20);
	c->lbs = 512;
	c->commit_period_ns = 5 * NS;
	c->commit_dirty = 64;
	c->commit_wait_ns = 10 * NS;	/* docs/DESIGN.md, "A commit pulls its data writes" */
	c->bw = AVFS_BW_PARK;
	c->chunk_fua = true;
	c->wb_max = 256ull << 20;
	c->wb_be_max = 8ull << 20;
	/* twice a 512 KiB x 8 client's buffer, from 2.5 MiB over 30 s (docs/DESIGN.md,
	 * "Bigger commands, read-ahead that starts small") */
	c->ra_bytes = 8ull << 20;
	c->ra_start = 5ull << 19;
	c->ra_ramp_ns = 30 * NS;
}

/* A size setting up to max (named maxname), 0 meaning off. */
static int size_setting(const char *name, const char *value, uint64_t max, const char *maxname,
			uint64_t *out, char *why, size_t whylen)
{
	uint64_t v;

	if (avfs_parse_size(value, &v) || v > max) {
		snprintf(why, whylen, "%s: '%s' is not a size up to %s (0: off)", name, value,
			 maxname);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* A time setting from 10 ms to 600 s, 0 meaning `zero` (said in the message). */
static int time_setting(const char *name, const char *value, const char *zero, int64_t *out,
			char *why, size_t whylen)
{
	struct avfs_sched_conf tmp;
	int err;

	/* a time like the scheduler's: borrow its parser through a setting of that unit */
	avfs_sched_conf_default(&tmp);
	err = avfs_sched_conf_set(&tmp, "be-age", value, why, whylen);
	if (err && strcmp(value, "0")) {
		snprintf(why, whylen, "%s: '%s' is not a time from 10ms to 600s (or 0: %s)", name,
			 value, zero);
		return err;
	}
	*out = strcmp(value, "0") ? tmp.be_age_ns : 0;
	return 0;
}

int avfs_engine_conf_set(struct avfs_engine_conf *c, const char *name, const char *value,
			 char *why, size_t whylen)
{
	if (!strcmp(name, "bw")) {
		if (!strcmp(value, "park"))
			c->bw = AVFS_BW_PARK;
		else if (!strcmp(value, "at-once"))
			c->bw = AVFS_BW_AT_ONCE;
		else if (!strcmp(value, "uncharged"))
			c->bw = AVFS_BW_UNCHARGED;
		else {
			snprintf(why, whylen, "bw: '%s' is none of park, at-once, uncharged", value);
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(name, "write-behind"))
		return size_setting(name, value, 16ull << 30, "16G", &c->wb_max, why, whylen);
	if (!strcmp(name, "write-behind-be"))
		return size_setting(name, value, 1ull << 30, "1G", &c->wb_be_max, why, whylen);
	if (!strcmp(name, "read-ahead"))
		return size_setting(name, value, 64ull << 20, "64M", &c->ra_bytes, why, whylen);
	if (!strcmp(name, "read-ahead-start"))
		return size_setting(name, value, 64ull << 20, "64M", &c->ra_start, why, whylen);
	if (!strcmp(name, "read-ahead-ramp"))
		return time_setting(name, value, "the whole read-ahead at once", &c->ra_ramp_ns,
				    why, whylen);
	if (!strcmp(name, "commit-period"))
		return time_setting(name, value, "only when asked", &c->commit_period_ns, why,
				    whylen);
	if (!strcmp(name, "commit-wait"))
		return time_setting(name, value, "data writes keep their deadlines",
				    &c->commit_wait_ns, why, whylen);
	return avfs_sched_conf_set(&c->sched, name, value, why, whylen);
}

/* ---- the wake time ---- */

static int64_t wake(const struct avfs_engine *e)
{
	int64_t at = e->d.hold_at, b = bw_wake(e), c = e->fs ? e->cm.next_at : 0;
	int64_t p = cm_pull_at(e);

	if (b && (!at || b < at))
		at = b;
	if (c && (!at || c < at))
		at = c;
	if (p && (!at || p < at))
		at = p;
	return at;
}

static void rearm(struct avfs_engine *e)
{
	int64_t at = wake(e);

	if (at != e->armed) {
		e->armed = at;
		if (e->ops.arm)
			e->ops.arm(e->ops.ctx, at);
	}
}

int64_t avfs_engine_wake(const struct avfs_engine *e)
{
	return wake(e);
}

/* ---- front-end requests ---- */

/* The one completion path: metrics, the reservation's figures, the front end. */
static void finish_fio(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	int64_t res = f->priv.res;
	uint64_t bytes = res > 0 ? (uint64_t)res : 0;

	if (!f->priv.canceled && !f->priv.ahead) {
		if (res == -ETIME)	/* failed by its deadline: once per front end's request */
			e->m.etime++;
		if (f->sched_deadline)
			avfs_qos_add(&e->m.rt, f->sched_deadline, now, bytes, res < 0 ? (int)res : 0);
		else if (res >= 0) {
			e->m.be_requests++;
			e->m.be_bytes += bytes;
		}
	}
	bw_fio_done(e, f, now);
	wb_fio_done(e, f);
	e->nfio--;
	*(f->priv.live_prev ? &f->priv.live_prev->priv.live_next : &e->live) = f->priv.live_next;
	if (f->priv.live_next)
		f->priv.live_next->priv.live_prev = f->priv.live_prev;
	f->done(f, f->priv.canceled ? -ECANCELED : res, now);
}

static void wake_parked(struct avfs_engine *e, int64_t now)
{
	if (e->bw.nparked)
		bw_be_idle(e, now);
}

/* f is the engine's from now until done: counted and listed. */
static void take(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	memset(&f->priv, 0, sizeof(f->priv));
	f->sched_deadline = 0;
	f->disk_ns = 0;
	f->arrival = now;
	e->nfio++;
	f->priv.live_next = e->live;
	if (e->live)
		e->live->priv.live_prev = f;
	e->live = f;
}

int avfs_engine_io(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	struct avfs_estream *s = NULL;

	if (!f || !f->done)
		return -EINVAL;
	if (f->zero_tail ? !f->ino || !f->write || f->len :
	    !f->buf || !f->len || f->len > AVFS_DISK_MAX_IO || f->cap < f->len ||
	    f->off + f->len < f->off)
		return -EINVAL;
	if (!f->ino && (f->off % e->c.lbs || f->len % e->c.lbs || f->off + f->len > e->dev_size ||
			(uintptr_t)f->buf % 4096))
		return -EINVAL;	/* raw: whole device blocks, an aligned buffer */
	if (f->ino && !e->fs)
		return -EINVAL;
	if (f->deadline && f->deadline <= now) {
		e->m.etime++;
		return -ETIME;	/* already too late: never issued */
	}
	if (f->stream && !(s = bw_stream(e, f->stream)))
		return -ENOENT;
	take(e, f, now);
	if (f->write && f->ino)
		ra_drop(e, f->ino, now);	/* what was read ahead of it may be stale */
	if (s)
		bw_io(e, s, f, now);
	else if (!ra_read(e, f, now))
		fio_start(e, f, f->deadline, false, now);
	/* the pieces read-ahead wants after f: requests like f, in no figure */
	for (struct avfs_fio *p; (p = ra_next(e));) {
		take(e, p, now);
		p->priv.ahead = true;
		fio_start(e, p, p->deadline, false, now);
	}
	rearm(e);
	return 0;
}

int avfs_engine_cancel(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	int err = 0;

	if (f->priv.canceled || (!f->priv.parked && !f->priv.pending))
		return -ENOENT;	/* done already: the front end's again */
	if (!bw_unpark(e, f)) {	/* a parked request is in no queue yet */
		if (!f->priv.started)
			return -ENOENT;
		err = ra_unwait(e, f) || cm_unwait_space(e, f) ? 0 : fio_withdraw(e, f, now);
		if (err)
			return err;
	}
	f->priv.canceled = true;
	f->priv.res = -ECANCELED;
	finish_fio(e, f, now);
	if (e->bw.nparked && !e->d.be_pending)
		e->bw.idle_at = now;	/* the disk is free for them: at the next tick */
	rearm(e);
	return 0;
}

/* ---- the driver's side ---- */

int avfs_engine_new(struct avfs_engine **out, const struct avfs_engine_conf *c,
		    struct avfs_fs *fs, uint64_t dev_size, const struct avfs_engine_ops *ops,
		    int64_t now, char *why, size_t whylen)
{
	struct avfs_engine *e;
	int err;

	*out = NULL;
	if (!c || !ops || !ops->submit || !dev_size || !c->lbs || (c->lbs & (c->lbs - 1)) ||
	    c->lbs > 4096) {
		if (why)
			snprintf(why, whylen, "engine: bad configuration");
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->c = *c;
	if (!e->c.policy)
		e->c.policy = &avfs_sched_tm;
	e->ops = *ops;
	e->fs = fs;
	e->dev_size = dev_size;
	e->block_size = fs ? avfs_fs_block_size(fs) : 4u << 20;
	e->on_be_idle = wake_parked;
	e->on_fio_done = finish_fio;
	e->on_space = fio_space_retry;
	e->on_ckpt = cm_ckpt_event;
	err = dsp_init(e, why, whylen);
	if (!err)
		err = bw_init(e, why, whylen);
	if (!err && (err = ra_init(e)) && why)
		snprintf(why, whylen, "engine: no memory");
	if (err) {
		avfs_engine_free(e);
		return err;
	}
	/* commits are their journal writes, the checkpoint after them (fs.h, ckpt.c) */
	if (fs && (err = avfs_fs_lazy_checkpoint(fs))) {
		if (why)
			snprintf(why, whylen, "engine: no memory");
		avfs_engine_free(e);
		return err;
	}
	cm_init(e, now);
	avfs_metrics_reset(&e->m, now);
	*out = e;
	rearm(e);
	return 0;
}

void avfs_engine_free(struct avfs_engine *e)
{
	if (!e)
		return;
	cm_fini(e);
	ck_fini(e);
	bw_fini(e);
	dsp_fini(e);
	/* the device requests still held: the scheduler (which points at them) is gone now */
	for (struct avfs_fio *f = e->live; f; f = f->priv.live_next)
		fio_forget(f);
	ra_fini(e);
	wb_fini(e);
	free(e->cm.out);
	free(e->ck.out);
	free(e);
}

void avfs_engine_complete(struct avfs_engine *e, uint64_t cookie, int64_t res, int64_t now)
{
	dsp_complete(e, cookie, res, now);
	rearm(e);
}

void avfs_engine_tick(struct avfs_engine *e, int64_t now)
{
	unsigned gen;

	dsp_tick(e, now);
	bw_tick(e, now);
	cm_tick(e, now);
	if (cm_pull_due(e, now, &gen))
		fio_pull_gen(e, gen, now + e->c.commit_wait_ns, now);
	rearm(e);
}

bool avfs_engine_idle(const struct avfs_engine *e)
{
	return !e->nfio && !e->cm.qn && !ck_busy(e) && dsp_idle(e);
}

/* ---- commits ---- */

void avfs_engine_commit(struct avfs_engine *e, int64_t now)
{
	wb_hurry(e, now);
	cm_request(e, now);
	rearm(e);
}

void avfs_engine_changed(struct avfs_engine *e, int64_t now)
{
	cm_changed(e, now);
	rearm(e);
}

int avfs_engine_commit_now(struct avfs_engine *e, int64_t now)
{
	int err = cm_now(e, now);

	rearm(e);
	return err;
}

bool avfs_engine_durable(const struct avfs_engine *e)
{
	return cm_durable(e);
}

uint64_t avfs_engine_commits(const struct avfs_engine *e, unsigned *queued)
{
	if (queued)
		*queued = (unsigned)e->cm.qn;
	return e->cm.done;
}

void avfs_engine_checkpoint(struct avfs_engine *e, int64_t now)
{
	ck_start(e, now);	/* (a failure to start is logged) */
	rearm(e);
}

uint64_t avfs_engine_checkpoints(const struct avfs_engine *e)
{
	return e->ck.done;
}

double avfs_engine_commit_max_s(const struct avfs_engine *e, int64_t now)
{
	double s = e->cm.max_s;

	if (e->cm.qn && (double)(now - e->cm.t0) / NS > s)
		s = (double)(now - e->cm.t0) / NS;
	return s;
}

const char *avfs_engine_failure(const struct avfs_engine *e)
{
	return cm_failure(e);
}

/* ---- reservations ---- */

int64_t avfs_engine_reserve(struct avfs_engine *e, const struct avfs_service_req *r, uint64_t ino,
			    void *owner, unsigned flags, int64_t now, struct avfs_admit_left *left,
			    char *why, size_t whylen)
{
	if (!r || flags & ~(AVFS_RESERVE_UNCHECKED | AVFS_RESERVE_DIR | AVFS_RESERVE_BUFFERED))
		return -EINVAL;
	return bw_reserve(e, r, ino, owner, flags, now, left, why, whylen);
}

int avfs_engine_release(struct avfs_engine *e, uint64_t id, int64_t now)
{
	int err = bw_release(e, id, now);

	rearm(e);
	return err;
}

int64_t avfs_engine_margin(const struct avfs_engine *e)
{
	return e->c.sched.margin_ns;
}

struct avfs_estream *avfs_engine_stream(struct avfs_engine *e, uint64_t id)
{
	return bw_stream(e, id);
}

struct avfs_estream *avfs_engine_stream_at(struct avfs_engine *e, size_t i)
{
	return i < e->bw.n ? e->bw.v[i] : NULL;
}

size_t avfs_engine_stream_count(const struct avfs_engine *e)
{
	return e->bw.n;
}

static bool covers(const struct avfs_estream *s, uint32_t uid, bool write)
{
	return !s->owner && s->req.write == write && (!s->uid_only || s->cover_uid == uid);
}

uint64_t avfs_engine_stream_cover(const struct avfs_engine *e, uint64_t ino, uint64_t dir,
				  uint32_t uid, bool write)
{
	uint64_t by_dir = 0;

	for (size_t i = 0; i < e->bw.n; i++) {
		const struct avfs_estream *s = e->bw.v[i];

		if (!covers(s, uid, write))
			continue;
		if (!s->dir && s->ino == ino)
			return s->id;
		if (s->dir && dir && s->ino == dir && !by_dir)
			by_dir = s->id;
	}
	return by_dir;
}

struct avfs_admit *avfs_engine_admit(struct avfs_engine *e)
{
	return e->bw.admit;
}

/* ---- what it knows ---- */

struct avfs_sched *avfs_engine_sched(struct avfs_engine *e)
{
	return &e->d.sched;
}

struct avfs_fs *avfs_engine_fs(struct avfs_engine *e)
{
	return e->fs;
}

const struct avfs_engine_conf *avfs_engine_conf(const struct avfs_engine *e)
{
	return &e->c;
}

const struct avfs_metrics *avfs_engine_metrics(const struct avfs_engine *e)
{
	return &e->m;
}

void avfs_engine_metrics_reset(struct avfs_engine *e, int64_t now)
{
	avfs_metrics_reset(&e->m, now);
}

void avfs_engine_ra_counts(const struct avfs_engine *e, struct avfs_engine_ra_counts *out)
{
	ra_counts(e, out);
}

void avfs_engine_ra_stop(struct avfs_engine *e, int64_t now)
{
	ra_stop(e, now);
	rearm(e);
}

uint64_t avfs_engine_be_pending(const struct avfs_engine *e)
{
	return e->d.be_pending;
}

size_t avfs_engine_parked(const struct avfs_engine *e)
{
	return e->bw.nparked;
}
