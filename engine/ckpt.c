/*
 * ckpt.c — the lazy checkpoint's runner (fs.h: the core builds the plan): committed metadata
 * images home and to the backup region in the background, after their commits are durable,
 * so that a commit is its journal write alone. One checkpoint at a time, one operation at a
 * time in the plan's order, and a commit's writes first: none is sent while one of a commit
 * is out, and one waiting in the scheduler steps back when a commit's comes (under a load
 * that leaves best effort only its floor, one command per be_age, the oldest first: a
 * commit's write behind a checkpoint's would wait a floor period more). It does not decide
 * when to checkpoint (commit.c does) or build plans.
 */
#include "engine_i.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void ck_step(struct avfs_engine *e, int64_t now);

void ck_fini(struct avfs_engine *e)
{
	/* not run to its end: the images stay for a later one (or the unmount's journal reset);
	 * its write, if out, is freed with the engine's requests */
	if (e->ck.plan)
		avfs_fs_plan_done(e->fs, e->ck.plan, -ECANCELED);
	avfs_plan_free(e->ck.plan);
	e->ck.plan = NULL;
}

bool ck_busy(const struct avfs_engine *e)
{
	return e->ck.plan != NULL;
}

static void end(struct avfs_engine *e, int err, int64_t now)
{
	struct avfs_ckpt *k = &e->ck;
	const struct avfs_plan_op *o = k->i < k->plan->n ? &k->plan->ops[k->i] : NULL;

	if (err && o && o->kind == AVFS_PLAN_WRITE) {
		size_t at = (size_t)snprintf(k->what, sizeof(k->what), "writing ");

		avfs_fs_describe(e->fs, o->off, o->len, k->what + at, sizeof(k->what) - at);
	} else if (err) {
		snprintf(k->what, sizeof(k->what), "%s", o ? "a FLUSH of the checkpoint" :
			 "the checkpoint");
	}
	avfs_fs_plan_done(e->fs, k->plan, err);
	avfs_plan_free(k->plan);
	k->plan = NULL;
	k->i = 0;
	if (!err)
		k->done++;
	e->on_ckpt(e, err, now);
}

/* The operation out is done: the next, or the end on failure. */
static void op_done(struct avfs_engine *e, int res, int64_t now)
{
	if (res < 0) {
		end(e, res, now);
		return;
	}
	e->ck.i++;
	ck_step(e, now);
}

static void write_done(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now)
{
	free(q);
	e->ck.out = NULL;
	op_done(e, res, now);
}

static void flush_done(struct avfs_engine *e, int res, int64_t now)
{
	e->ck.flushing = false;
	op_done(e, res, now);
	if (res >= 0)
		e->on_ckpt(e, 0, now);	/* a commit may wait for the FLUSH slot */
}

static void ck_step(struct avfs_engine *e, int64_t now)
{
	struct avfs_ckpt *k = &e->ck;
	const struct avfs_plan_op *o;
	struct avfs_ereq *q;
	int err;

	if (!k->plan || k->out || k->flushing)
		return;
	if (k->i == k->plan->n) {
		end(e, 0, now);
		return;
	}
	o = &k->plan->ops[k->i];
	if (o->kind == AVFS_PLAN_FLUSH) {
		if (e->cm.flushing)
			return;	/* one FLUSH at a time (dispatch.c): kicked when the commit's ends */
		k->flushing = true;
		dsp_flush(e, flush_done, now);
		return;
	}
	if (e->cm.out)
		return;	/* a commit's write is out: it goes first; kicked when it ends */
	q = dsp_meta_req(o, write_done);
	if (!q) {
		end(e, -ENOMEM, now);
		return;
	}
	k->out = q;
	err = dsp_submit(e, q, now);
	if (err) {
		k->out = NULL;
		free(q);
		end(e, err, now);
	}
}

int ck_start(struct avfs_engine *e, int64_t now)
{
	struct avfs_plan *p;
	int err;

	if (e->ck.plan)
		return 1;
	if (!e->fs || e->cm.failure[0])
		return 0;
	err = avfs_fs_checkpoint(e->fs, &p);
	if (err) {
		elog(e, 0, "checkpoint not started: %s", strerror(-err));
		return err;
	}
	if (!p)
		return 0;
	e->ck.plan = p;
	e->ck.i = 0;
	ck_step(e, now);
	return 1;
}

void ck_yield(struct avfs_engine *e)
{
	struct avfs_ckpt *k = &e->ck;

	/* taken back unsent, and sent again by the next ck_kick */
	if (k->out && !k->out->dispatched && !dsp_withdraw(e, k->out)) {
		free(k->out);
		k->out = NULL;
	}
}

void ck_kick(struct avfs_engine *e, int64_t now)
{
	ck_step(e, now);
}
