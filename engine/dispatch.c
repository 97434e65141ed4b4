/*
 * dispatch.c — the engine's bottom layer: the scheduler and the device. Device requests go
 * into the scheduler; whenever a slot is free (one on a rotating disk, `depth` on others) the
 * scheduler's next command goes to the device through ops.submit, a FLUSH before it when one is
 * wanted. A command that carries several requests (the mixer's coalescing) goes as one
 * device request over their buffers. Completions come back by slot; the scheduler says when a
 * request is whole, and its owner's done() runs — for each request a command carried. The
 * predictor hears of every command; the metrics count each one. It knows nothing of files,
 * streams or commits.
 */
#include "engine_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dsp_init(struct avfs_engine *e, char *why, size_t whylen)
{
	struct avfs_dispatch *d = &e->d;
	char w[160] = "";
	int err;

	err = avfs_sched_conf_check(&e->c.sched, w, sizeof(w));
	if (!err)
		err = avfs_sched_init(&d->sched, e->c.policy, &e->c.sched);
	if (err) {
		elog(e, 0, "scheduler: %s", *w ? w : strerror(-err));
		if (why)
			snprintf(why, whylen, "scheduler settings refused: %s", *w ? w : strerror(-err));
		return err;
	}
	/* slot nslots - 1 is the FLUSH's; the scheduler's commands use the others */
	d->nslots = d->sched.max_inflight + 1;
	d->slots = calloc(d->nslots, sizeof(*d->slots));
	d->slot_at = calloc(d->nslots, sizeof(*d->slot_at));
	d->slot_iov = calloc(d->nslots, sizeof(*d->slot_iov));
	if (!d->slots || !d->slot_at || !d->slot_iov) {
		if (why)
			snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void dsp_fini(struct avfs_engine *e)
{
	if (e->d.sched.ops)
		avfs_sched_destroy(&e->d.sched);
	for (unsigned i = 0; e->d.slot_iov && i < e->d.nslots; i++)
		free(e->d.slot_iov[i]);
	free(e->d.slot_iov);
	free(e->d.slots);
	free(e->d.slot_at);
}

static void be_uncount(struct avfs_engine *e, struct avfs_ereq *q, int64_t now)
{
	if (!q->be_counted)
		return;
	q->be_counted = false;
	if (--e->d.be_pending == 0 && e->on_be_idle)
		e->on_be_idle(e, now);
}

/* A request is whole (or failed): trace it, hand it to its owner. */
static void finish(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now)
{
	q->queued = false;
	if (e->ops.trace) {
		struct avfs_trace_rec r = {
			.submit_ns = q->io.arrival, .complete_ns = now, .stream = q->label,
			.cls = q->cls == AVFS_TRACE_HP || !q->io.deadline ? q->cls : AVFS_TRACE_RT,
			.write = q->io.write,
			.offset = q->io.orig_off, .length = q->io.orig_len,
			.deadline_ns = q->io.deadline, .result = res < 0 ? res : 0,
			.service_ns = q->service_ns,
		};

		e->ops.trace(e->ops.ctx, &r);
	}
	be_uncount(e, q, now);
	q->done(e, q, res, now);
}

/* The requests of a command the scheduler says are whole (or failed): the first and those it
 * carried, each to its owner. The chain is read before each is finished: its owner may free
 * it. */
static void finish_cmd(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now)
{
	while (q) {
		struct avfs_ereq *next = (struct avfs_ereq *)q->io.more;

		q->io.more = NULL;
		finish(e, q, res, now);
		q = next;
	}
}

int dsp_submit(struct avfs_engine *e, struct avfs_ereq *q, int64_t now)
{
	struct avfs_dispatch *d = &e->d;
	int err;

	err = avfs_sched_submit(&d->sched, &q->io, now);
	if (err)
		return err;
	q->queued = true;
	if (!q->io.deadline && !q->spare) {
		q->be_counted = true;
		d->be_pending++;
	}
	if (d->sched.ops->pending(d->sched.ctx) > e->m.max_pending)
		e->m.max_pending = d->sched.ops->pending(d->sched.ctx);
	dsp_kick(e, now);
	return 0;
}

struct avfs_ereq *dsp_meta_req(const struct avfs_plan_op *o,
			       void (*done)(struct avfs_engine *e, struct avfs_ereq *q, int res,
					    int64_t now))
{
	struct avfs_ereq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->io.off = o->off;
	q->io.len = o->len;
	q->io.write = true;
	q->io.fua = o->fua;
	q->io.flow = AVFS_IO_FLOW_META;	/* best effort, before the clients' (mixer.c) */
	q->buf = (uint8_t *)o->buf;
	q->cls = AVFS_TRACE_META;
	q->label = -1;
	q->done = done;
	return q;
}

int dsp_withdraw(struct avfs_engine *e, struct avfs_ereq *q)
{
	int err;

	if (!q->queued)
		return -ENOENT;
	if (q->dispatched)
		return -EBUSY;
	err = avfs_sched_cancel(&e->d.sched, &q->io);
	if (err)
		return err;
	q->queued = false;
	if (q->be_counted) {	/* taken back, not done: no "idle" verdict from this */
		q->be_counted = false;
		e->d.be_pending--;
	}
	return 0;
}

/* A coalesced command's buffers: one when they follow each other in memory (then r->buf
 * stays), else one piece a request in the slot's iovec array. 0 or -ENOMEM. */
static int gather(struct avfs_engine *e, unsigned slot, struct avfs_ereq *q,
		  struct avfs_disk_req *r)
{
	struct iovec *v = e->d.slot_iov[slot];
	uint8_t *end = q->buf + (q->io.orig_len - q->io.len) + q->io.len;
	unsigned n = 1;
	bool linear = true;

	for (struct avfs_ereq *x = (struct avfs_ereq *)q->io.more; x;
	     x = (struct avfs_ereq *)x->io.more) {
		linear = linear && x->buf == end;
		end = x->buf + x->io.len;
		n++;
	}
	if (linear)
		return 0;
	if (!v) {
		v = malloc(AVFS_SCHED_COALESCE_MAX * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->d.slot_iov[slot] = v;
	}
	n = 0;
	for (struct avfs_ereq *x = q; x; x = (struct avfs_ereq *)x->io.more, n++)
		v[n] = (struct iovec){ .iov_base = x->buf + (x->io.orig_len - x->io.len),
				       .iov_len = x->io.len };
	r->buf = NULL;
	r->iov = v;
	r->iovcnt = n;
	return 0;
}

static int issue(struct avfs_engine *e, unsigned slot, const struct avfs_sched_cmd *cmd,
		 int64_t now)
{
	struct avfs_dispatch *d = &e->d;
	struct avfs_ereq *q = (struct avfs_ereq *)cmd->io;
	struct avfs_disk_req r = {
		.op = cmd->seek ? AVFS_DISK_SEEK : cmd->write ? AVFS_DISK_WRITE : AVFS_DISK_READ,
		.flags = cmd->fua ? AVFS_DISK_FUA : 0, .lba = cmd->off / e->c.lbs, .len = cmd->len,
		.buf = cmd->seek ? NULL : q->buf + (cmd->off - q->io.orig_off), .buf_index = -1,
		.cookie = slot,
	};
	int err = 0;

	if (q->io.more)
		err = gather(e, slot, q, &r);
	d->slots[slot] = *cmd;
	d->slot_at[slot] = now;
	if (!err)
		err = e->ops.submit(e->ops.ctx, &r);
	if (err) {
		d->slots[slot].io = NULL;
		return err;
	}
	for (struct avfs_ereq *x = q; x; x = (struct avfs_ereq *)x->io.more) {
		x->dispatched = true;
		if (x->f)
			x->f->priv.touched = true;
	}
	/* SPEC §12: the seek distance between consecutively executed *requests*; the chunks of one
	 * request are not requests of their own */
	avfs_metrics_cmd_start(&e->m, cmd->off, cmd->len, cmd->off == q->io.orig_off && !cmd->seek,
			       !cmd->seek, now);
	if (q->io.more) {
		unsigned n = 0;

		for (const struct avfs_io *x = q->io.more; x; x = x->more)
			n++;
		avfs_metrics_carried(&e->m, n);
	}
	if (!cmd->seek && e->c.sched.pred.issued)	/* the transport, learned */
		e->c.sched.pred.issued(e->c.sched.pred.ctx, now, cmd->off, cmd->len);
	return 0;
}

static void issue_flush(struct avfs_engine *e, int64_t now)
{
	struct avfs_dispatch *d = &e->d;
	struct avfs_disk_req r = { .op = AVFS_DISK_FLUSH, .buf_index = -1,
				   .cookie = d->nslots - 1 };
	int err;

	d->flush_wanted = false;
	d->flush_inflight = true;
	d->flush_at = now;
	err = e->ops.submit(e->ops.ctx, &r);
	if (err) {
		d->flush_inflight = false;
		d->flush_done(e, err, now);
		return;
	}
	avfs_metrics_cmd_start(&e->m, 0, 0, false, false, now);
}

void dsp_kick(struct avfs_engine *e, int64_t now)
{
	struct avfs_dispatch *d = &e->d;

	if (d->kicking) {	/* a completion handler submitted: the running loop goes on */
		d->again = true;
		return;
	}
	d->kicking = true;
	do {
		d->again = false;
		for (;;) {
			struct avfs_sched_cmd cmd;
			unsigned slot, busy = d->sched.inflight + d->flush_inflight;
			int err;

			/* the FLUSH takes a slot like any command, and goes first */
			if (d->flush_wanted && busy < d->sched.max_inflight) {
				issue_flush(e, now);
				continue;
			}
			if (busy >= d->sched.max_inflight)
				break;
			avfs_sched_next(&d->sched, now, &cmd);
			e->m.decisions++;
			if (cmd.kind == AVFS_SCHED_IDLE)
				break;
			if (cmd.kind == AVFS_SCHED_WAIT) {
				d->hold_at = cmd.at;
				break;
			}
			d->hold_at = 0;
			if (cmd.kind == AVFS_SCHED_FAIL) {
				finish(e, (struct avfs_ereq *)cmd.io, cmd.err, now);
				continue;
			}
			for (slot = 0; slot < d->nslots - 1 && d->slots[slot].io; slot++)
				;
			err = issue(e, slot, &cmd, now);
			if (err) {
				/* the device refused the command: the request fails whole (the
				 * scheduler forgets a request whose command failed) */
				avfs_sched_done(&d->sched, &cmd, now, err);
				finish_cmd(e, (struct avfs_ereq *)cmd.io, err, now);
			}
		}
	} while (d->again);
	d->kicking = false;
}

void dsp_complete(struct avfs_engine *e, uint64_t cookie, int64_t res, int64_t now)
{
	struct avfs_dispatch *d = &e->d;
	struct avfs_sched_cmd cmd;
	struct avfs_ereq *q;

	if (cookie == d->nslots - 1 && d->flush_inflight) {
		d->flush_inflight = false;
		avfs_metrics_cmd_end(&e->m, d->flush_at, now);
		d->flush_done(e, res < 0 ? (int)res : 0, now);
		dsp_kick(e, now);
		return;
	}
	if (cookie >= d->nslots - 1 || !d->slots[cookie].io) {
		elog(e, 0, "a completion for no command (cookie %llu)",
				(unsigned long long)cookie);
		return;
	}
	cmd = d->slots[cookie];
	d->slots[cookie].io = NULL;
	q = (struct avfs_ereq *)cmd.io;
	avfs_metrics_cmd_end(&e->m, d->slot_at[cookie], now);
	if (now > d->slot_at[cookie]) {	/* a coalesced command's time, shared by bytes */
		for (struct avfs_ereq *x = q; x; x = (struct avfs_ereq *)x->io.more)
			x->service_ns += (now - d->slot_at[cookie]) *
					 (int64_t)(x == q && !x->io.more ? cmd.len : x->io.len) /
					 (int64_t)cmd.len;
	}
	/* as close to the completion as the driver knows it: the predictor's phase */
	if (res >= 0 && e->c.sched.pred.observe)
		e->c.sched.pred.observe(e->c.sched.pred.ctx, now, cmd.off + cmd.len, !cmd.seek);
	if (avfs_sched_done(&d->sched, &cmd, now, (int)res))
		finish_cmd(e, q, res < 0 ? (int)res : 0, now);
	dsp_kick(e, now);
}

void dsp_flush(struct avfs_engine *e, void (*done)(struct avfs_engine *e, int res, int64_t now),
	       int64_t now)
{
	e->d.flush_wanted = true;
	e->d.flush_done = done;
	dsp_kick(e, now);
}

void dsp_tick(struct avfs_engine *e, int64_t now)
{
	if (e->d.hold_at && e->d.hold_at <= now) {
		e->d.hold_at = 0;
		dsp_kick(e, now);
	}
}

bool dsp_idle(const struct avfs_engine *e)
{
	const struct avfs_dispatch *d = &e->d;

	return !d->sched.ops->pending(d->sched.ctx) && !d->sched.inflight && !d->flush_inflight &&
	       !d->flush_wanted;
}
