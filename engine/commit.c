/*
 * commit.c — ordered commits (SPEC §3, ordered mode): a transaction's data writes reach the
 * disk before the commit record that makes them reachable. Each data write carries the commit
 * generation it belongs to; a commit closes the generation and queues the core's plan; plans
 * run one after the other in commit order, one operation at a time — writes through the
 * scheduler as best effort, the FLUSH (once every data write of the generation it commits is
 * complete) through the dispatch layer. A commit normally waits for the one under way; when
 * the running transaction is full (the core's -EAGAIN, fs.h's credits), cm_now() commits at
 * once and queues the plan behind it. Periodic commits and commits of a large transaction
 * start here too. It does not build plans (the fs core does) or decide what a write is
 * (fileio.c tells it).
 */
#include "engine_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ll

static void step(struct avfs_engine *e, int64_t now);

void cm_init(struct avfs_engine *e, int64_t now)
{
	e->cm.next_at = e->c.commit_period_ns ? now + e->c.commit_period_ns : 0;
}

void cm_fini(struct avfs_engine *e)
{
	struct avfs_commit *c = &e->cm;

	while (c->qn) {
		avfs_plan_free(c->q[c->qhead].plan);
		c->qhead = (c->qhead + 1) % AVFS_CM_QUEUE;
		c->qn--;
	}
}

static void told(struct avfs_engine *e, int err)
{
	if (e->ops.committed)
		e->ops.committed(e->ops.ctx, e->cm.done, err);
}

/* Writes waiting for freed blocks whose commits are done (all of them after a failure) try
 * again. A retry may commit (cm_now) and wait again: the list is taken first. */
static void space_ready(struct avfs_engine *e, bool all, int64_t now)
{
	struct avfs_fio *f = e->cm.space_head, *go = NULL, **tail = &go;

	e->cm.space_head = NULL;
	while (f) {
		struct avfs_fio *next = f->priv.space_next;

		f->priv.space_next = NULL;
		if (all || e->cm.done >= f->priv.space_after) {
			*tail = f;
			tail = &f->priv.space_next;
		} else {
			f->priv.space_next = e->cm.space_head;
			e->cm.space_head = f;
		}
		f = next;
	}
	while (go) {
		f = go;
		go = f->priv.space_next;
		f->priv.space_next = NULL;
		e->on_space(e, f, now);
	}
}

bool cm_wait_space(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	/* a few rounds: frees of the running transaction go into a commit here; one that could
	 * not be queued (a full queue) is caught by the next round */
	if (!e->fs || f->priv.space_waits >= 3 || !avfs_fs_data_freeing(e->fs))
		return false;
	if (avfs_fs_dirty_blocks(e->fs))
		cm_now(e, now);
	if (!c->qn)
		return false;	/* nothing under way would free a block */
	f->priv.space_waits++;
	f->priv.space_after = c->done + c->qn;
	f->priv.space_next = c->space_head;
	c->space_head = f;
	return true;
}

bool cm_unwait_space(struct avfs_engine *e, struct avfs_fio *f)
{
	for (struct avfs_fio **pp = &e->cm.space_head; *pp; pp = &(*pp)->priv.space_next)
		if (*pp == f) {
			*pp = f->priv.space_next;
			f->priv.space_next = NULL;
			return true;
		}
	return false;
}

const char *cm_failure(const struct avfs_engine *e)
{
	return e->cm.failure[0] ? e->cm.failure : NULL;
}

bool cm_durable(const struct avfs_engine *e)
{
	/* after a failed commit memory is ahead of the disk: nothing is durable any more */
	return !e->fs || (!e->cm.failure[0] && !e->cm.qn && !e->cm.unflushed &&
			  !avfs_fs_dirty_blocks(e->fs));
}

/* The plan at the head failed at its operation c->i: what failed, for the log and for
 * avfs-admin status (the first failure only: the file system is read-only from then on). */
static void note_failure(struct avfs_engine *e, int err)
{
	struct avfs_commit *c = &e->cm;
	const struct avfs_plan *p = c->q[c->qhead].plan;
	const struct avfs_plan_op *o = c->i < p->n ? &p->ops[c->i] : NULL;
	char what[160];

	if (c->failure[0])
		return;	/* read-only since an earlier failure (a checkpoint's), said then */
	if (!o)
		snprintf(what, sizeof(what), "the commit");
	else if (o->kind == AVFS_PLAN_FLUSH)
		snprintf(what, sizeof(what), "a FLUSH of the commit");
	else
		avfs_fs_describe(e->fs, o->off, o->len, what, sizeof(what));
	snprintf(c->failure, sizeof(c->failure), "%s%s failed: %s", o && o->kind ==
		 AVFS_PLAN_WRITE ? "writing " : "", what, strerror(-err));
	elog(e, 0, "commit failed: %s%s (%s); the file system is read-only until remounted",
	     o && o->kind == AVFS_PLAN_WRITE ? "writing " : "", what, strerror(-err));
}

/* The plan at the head is done (err 0) or failed: then every plan after it fails unrun. */
static void plan_end(struct avfs_engine *e, int err, int64_t now)
{
	struct avfs_commit *c = &e->cm;
	double s = (double)(now - c->t0) / NS;

	if (err)
		note_failure(e, err);
	do {
		avfs_fs_plan_done(e->fs, c->q[c->qhead].plan, err);
		avfs_plan_free(c->q[c->qhead].plan);
		c->qhead = (c->qhead + 1) % AVFS_CM_QUEUE;
		c->qn--;
	} while (err && c->qn);
	c->i = 0;
	c->busy = c->flushing = c->ck_ready = c->flush_after = c->post_flush = false;
	c->t0 = now;	/* the next plan begins now */
	if (err) {
		told(e, err);
		space_ready(e, true, now);
		return;
	}
	if (s > c->max_s)
		c->max_s = s;
	c->done++;
	told(e, 0);
	if (avfs_fs_checkpoint_due(e->fs))
		ck_start(e, now);	/* (a failure to start is logged; the next commit tries) */
	if (c->qn)
		step(e, now);
	else if (c->wanted)
		cm_request(e, now);
	space_ready(e, false, now);
}

/* One operation of the plan is done: the next, or the end on failure. */
static void op_done(struct avfs_engine *e, int res, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	if (!c->qn)
		return;
	if (res < 0) {
		plan_end(e, res, now);
		return;
	}
	c->i++;
	step(e, now);
}

static void write_done(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now)
{
	free(q);
	e->cm.out = NULL;
	e->cm.busy = false;
	if (res >= 0 && e->cm.flush_after) {
		e->cm.flush_after = false;
		e->cm.post_flush = true;
		step(e, now);
	} else {
		op_done(e, res, now);
	}
	ck_kick(e, now);	/* a checkpoint's write may go now */
}

static void flush_done(struct avfs_engine *e, int res, int64_t now)
{
	e->cm.flushing = false;
	e->cm.post_flush = false;
	op_done(e, res, now);
	ck_kick(e, now);	/* ... or its FLUSH */
}

void cm_ckpt_event(struct avfs_engine *e, int err, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	if (!err) {
		step(e, now);	/* a plan waiting for the checkpoint or its FLUSH goes on */
		if (!c->qn && c->wanted)
			cm_request(e, now);
		return;
	}
	/* the transactions are in the journal (a remount replays them), but what is home and
	 * what memory says may differ now: read-only, as after a failed commit */
	elog(e, 0, "checkpoint failed: %s (%s); the file system is read-only until remounted",
	     e->ck.what, strerror(-err));
	if (!c->failure[0])
		snprintf(c->failure, sizeof(c->failure), "%s failed: %s", e->ck.what,
			 strerror(-err));
	if (c->qn)
		plan_end(e, err, now);	/* the commits queued fail unrun */
	else
		told(e, err);
	space_ready(e, true, now);
}

/* Run the head plan one operation at a time: its order is the point. */
static void step(struct avfs_engine *e, int64_t now)
{
	struct avfs_commit *c = &e->cm;
	const struct avfs_plan *p;
	const struct avfs_plan_op *o;
	struct avfs_ereq *q;
	int err;

	if (!c->qn || c->busy || c->flushing)
		return;
	p = c->q[c->qhead].plan;
	if (c->post_flush) {	/* (flush_after) */
		if (e->ck.flushing)
			return;	/* one FLUSH at a time: stepped again when the checkpoint's ends */
		c->flushing = true;
		dsp_flush(e, flush_done, now);
		return;
	}
	if (c->i == 0 && p->after_ckpt && !c->ck_ready) {
		/* it writes where transactions before it are: they go home first (every one
		 * of them is durable now, being ahead of it) */
		err = ck_start(e, now);
		if (err > 0)
			return;	/* stepped again when the checkpoint ends */
		if (err < 0) {
			plan_end(e, err, now);
			return;
		}
		c->ck_ready = true;
	}
	if (c->i == p->n) {
		plan_end(e, 0, now);
		return;
	}
	o = &p->ops[c->i];
	if (o->kind == AVFS_PLAN_FLUSH) {
		/* the barrier: the data of the transaction this plan commits is on the device */
		if (c->writes[c->q[c->qhead].gen % AVFS_CM_QUEUE])
			return;	/* stepped again as those writes complete */
		if (e->ck.flushing)
			return;	/* one FLUSH at a time: stepped again when the checkpoint's ends */
		c->flushing = true;
		c->unflushed = 0;	/* this FLUSH covers every data write completed so far */
		dsp_flush(e, flush_done, now);
		return;
	}
	q = dsp_meta_req(o, write_done);
	if (!q) {
		plan_end(e, -ENOMEM, now);
		return;
	}
	c->busy = true;
	c->out = q;
	c->flush_after = o->fua && e->c.sched.chunk && o->len > e->c.sched.chunk;
	ck_yield(e);	/* a checkpoint's write still waiting goes after this one */
	err = dsp_submit(e, q, now);
	if (err) {
		c->busy = false;
		c->out = NULL;
		free(q);
		plan_end(e, err, now);
	}
}

/* Commit the running transaction and queue its plan. 0, or -EBUSY (the queue is full), or
 * the core's -errno (told). */
static int commit(struct avfs_engine *e, int64_t now)
{
	struct avfs_commit *c = &e->cm;
	struct avfs_plan *p = NULL;
	int err;

	if (c->qn == AVFS_CM_QUEUE - 1)
		return -EBUSY;	/* a generation's counter would be shared: wait */
	if (c->failure[0]) {	/* read-only since a commit failed: no commit is durable now */
		told(e, -EIO);
		return -EIO;
	}
	err = avfs_fs_commit(e->fs, now + e->c.wall_offset_ns, &p);
	if (err) {
		elog(e, 0, "commit failed: %s (%s)", strerror(-err), avfs_fs_why(e->fs));
		told(e, err);
		return err;
	}
	if (e->c.commit_period_ns)
		c->next_at = now + e->c.commit_period_ns;
	if (!p && c->unflushed) {
		/* no metadata changed, but data was written in place since the last FLUSH: a plan
		 * of one FLUSH (after the generation's writes, as any commit's) makes it durable */
		p = calloc(1, sizeof(*p));
		if (p && !(p->ops = calloc(1, sizeof(*p->ops)))) {
			free(p);
			p = NULL;
		}
		if (!p) {
			told(e, -ENOMEM);
			return -ENOMEM;
		}
		p->ops[0].kind = AVFS_PLAN_FLUSH;
		p->n = p->cap = 1;
	}
	if (!p) {	/* nothing changed: already durable once the queue is */
		if (!c->qn) {
			c->done++;
			told(e, 0);
		}
		return 0;
	}
	/* data writes planned from now on belong to the next transaction */
	c->q[(c->qhead + c->qn) % AVFS_CM_QUEUE] = (struct avfs_queued_plan){ .plan = p,
										.gen = c->gen };
	c->gen++;
	if (!c->qn++) {
		c->i = 0;
		c->t0 = now;
	}
	step(e, now);
	return 0;
}

void cm_request(struct avfs_engine *e, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	if (!e->fs)
		return;
	c->wanted = true;
	if (c->qn)
		return;	/* one at a time; this one follows */
	c->wanted = false;
	commit(e, now);
}

int cm_now(struct avfs_engine *e, int64_t now)
{
	if (!e->fs)
		return -EINVAL;
	e->cm.wanted = false;
	return commit(e, now);
}

void cm_changed(struct avfs_engine *e, int64_t now)
{
	/* keep transactions small: for the journal, and so that an operation rarely finds the
	 * running transaction full (fs.h's credits) */
	if (e->fs && (avfs_fs_dirty_blocks(e->fs) > e->c.commit_dirty ||
		      avfs_fs_commit_due(e->fs)))
		cm_request(e, now);
}

void cm_tick(struct avfs_engine *e, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	if (!e->fs || !c->next_at || now < c->next_at)
		return;
	c->next_at = now + e->c.commit_period_ns;
	if (avfs_fs_dirty_blocks(e->fs))
		cm_request(e, now);
}

int64_t cm_pull_at(const struct avfs_engine *e)
{
	const struct avfs_commit *c = &e->cm;

	if (!e->fs || !e->c.commit_wait_ns || !c->qn ||
	    !c->writes[c->q[c->qhead].gen % AVFS_CM_QUEUE])
		return 0;
	return (c->pulled_at > c->t0 ? c->pulled_at : c->t0) + e->c.commit_wait_ns;
}

bool cm_pull_due(struct avfs_engine *e, int64_t now, unsigned *gen)
{
	int64_t at = cm_pull_at(e);

	if (!at || now < at)
		return false;
	e->cm.pulled_at = now;
	*gen = e->cm.q[e->cm.qhead].gen;
	return true;
}

unsigned cm_write_begin(struct avfs_engine *e)
{
	e->cm.writes[e->cm.gen % AVFS_CM_QUEUE]++;
	return e->cm.gen;
}

void cm_write_end(struct avfs_engine *e, unsigned gen, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	if (c->writes[gen % AVFS_CM_QUEUE])
		c->writes[gen % AVFS_CM_QUEUE]--;
	c->unflushed++;
	if (c->qn && !c->writes[gen % AVFS_CM_QUEUE])
		step(e, now);	/* a commit may be waiting for these */
}
