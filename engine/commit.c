/*
 * commit.c — ordered commits (SPEC §3, ordered mode): a transaction's data writes reach the
 * disk before the commit record that makes them reachable. Each data write carries the commit
 * generation it belongs to; a commit bumps the generation and runs the core's plan one
 * operation at a time — its writes through the scheduler as best effort, its FLUSH (once every
 * data write of the generation it commits is complete) through the dispatch layer. Periodic
 * commits and commits of a large transaction are started here too. It does not build plans
 * (the fs core does) or decide what a write is (fileio.c tells it).
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
	if (e->cm.plan)
		avfs_plan_free(e->cm.plan);
	e->cm.plan = NULL;
}

static void told(struct avfs_engine *e, int err)
{
	if (e->ops.committed)
		e->ops.committed(e->ops.ctx, e->cm.done, err);
}

static void plan_end(struct avfs_engine *e, int err, int64_t now)
{
	struct avfs_commit *c = &e->cm;
	double s = (double)(now - c->t0) / NS;

	avfs_fs_plan_done(e->fs, c->plan, err);
	avfs_plan_free(c->plan);
	c->plan = NULL;
	c->busy = c->flushing = false;
	if (err) {
		elog(e, 0, "commit failed: %s; the file system is read-only until "
				"remounted", strerror(-err));
		told(e, err);
		return;
	}
	if (s > c->max_s)
		c->max_s = s;
	c->done++;
	told(e, 0);
	if (c->wanted)
		cm_request(e, now);
}

/* One operation of the plan is done: the next, or the end on failure. */
static void op_done(struct avfs_engine *e, int res, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	if (!c->plan)
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
	op_done(e, res, now);
}

static void flush_done(struct avfs_engine *e, int res, int64_t now)
{
	e->cm.flushing = false;
	op_done(e, res, now);
}

/* Run the plan one operation at a time: its order is the point. */
static void step(struct avfs_engine *e, int64_t now)
{
	struct avfs_commit *c = &e->cm;
	const struct avfs_plan_op *o;
	struct avfs_ereq *q;
	int err;

	if (!c->plan || c->busy || c->flushing)
		return;
	if (c->i == c->plan->n) {
		plan_end(e, 0, now);
		return;
	}
	o = &c->plan->ops[c->i];
	if (o->kind == AVFS_PLAN_FLUSH) {
		/* the barrier: the data of the transaction this commit carries is on the device */
		if (c->writes[(c->gen - 1) & 1])
			return;	/* stepped again as those writes complete */
		c->flushing = true;
		dsp_flush(e, flush_done, now);
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		plan_end(e, -ENOMEM, now);
		return;
	}
	q->io.off = o->off;
	q->io.len = o->len;
	q->io.write = true;
	q->io.fua = o->fua;
	q->buf = (uint8_t *)o->buf;
	q->cls = AVFS_TRACE_META;
	q->label = -1;
	q->done = write_done;
	c->busy = true;
	c->out = q;
	err = dsp_submit(e, q, now);
	if (err) {
		c->busy = false;
		c->out = NULL;
		free(q);
		plan_end(e, err, now);
	}
}

void cm_request(struct avfs_engine *e, int64_t now)
{
	struct avfs_commit *c = &e->cm;
	int err;

	if (!e->fs)
		return;
	c->wanted = true;
	if (c->plan)
		return;	/* one at a time; this one follows */
	c->wanted = false;
	err = avfs_fs_commit(e->fs, now + e->c.wall_offset_ns, &c->plan);
	if (err) {
		elog(e, 0, "commit failed: %s (%s)", strerror(-err), avfs_fs_why(e->fs));
		told(e, err);
		return;
	}
	if (e->c.commit_period_ns)
		c->next_at = now + e->c.commit_period_ns;
	if (!c->plan) {	/* nothing changed: already durable */
		c->done++;
		told(e, 0);
		return;
	}
	c->gen++;	/* data writes planned from now on belong to the next transaction */
	c->i = 0;
	c->t0 = now;
	step(e, now);
}

void cm_changed(struct avfs_engine *e, int64_t now)
{
	/* keep transactions small enough for the journal */
	if (e->fs && avfs_fs_dirty_blocks(e->fs) > e->c.commit_dirty)
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

unsigned cm_write_begin(struct avfs_engine *e)
{
	e->cm.writes[e->cm.gen & 1]++;
	return e->cm.gen;
}

void cm_write_end(struct avfs_engine *e, unsigned gen, int64_t now)
{
	struct avfs_commit *c = &e->cm;

	if (c->writes[gen & 1])
		c->writes[gen & 1]--;
	if (c->plan && !c->writes[gen & 1])
		step(e, now);	/* a commit may be waiting for these */
}
