/*
 * fileio.c — a front end's request into device requests. A file's range becomes the fs core's
 * data plan (avfs_fs_plan_read / avfs_fs_plan_write): reads of initialized pages, zero-fills of
 * holes, writes with their partial pages read-modify-written; raw device ranges go as they are.
 * Where the caller's buffer fits the device's pages the transfer goes straight into or out of
 * it; otherwise through a bounce buffer. Data writes are counted in their commit generation
 * (ordered mode). It does not decide deadlines (bwclass.c, engine.c do) nor compute what to
 * zero or merge (the core's plan says).
 */
#include "engine_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE AVFS_PAGE
#define ALIGN 4096u	/* O_DIRECT buffers: the largest alignment any backend asks for */

static void *alloc_buf(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, ALIGN, len ? len : ALIGN) ? NULL : p;
}

static bool aligned(const void *p)
{
	return ((uintptr_t)p & (ALIGN - 1)) == 0;
}

static void part_free(struct avfs_ereq *q)
{
	free(q->own);
	free(q);
}

void fio_forget(struct avfs_fio *f)
{
	while (f->priv.parts) {
		struct avfs_ereq *q = f->priv.parts;

		f->priv.parts = q->next;
		part_free(q);
	}
}

/* A planned file write failed (issue 19: a 3 MiB write through the mount returned 1,048,528
 * while the size became 2,097,104): its file's error epoch moves (fsync reports it), and the
 * size its plan set goes back, unless a later write moved it since, so that the caller's
 * error and the size agree. Shrinking uninitializes the pages past the size, so nothing this
 * write may have left half-written shows when the file grows again. */
static void write_failed(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	struct avfs_stat st;
	int err;

	wb_set(e, f->ino);
	if (f->priv.size1 <= f->priv.size0 || avfs_fs_getattr(e->fs, f->ino, &st) ||
	    st.size != f->priv.size1)
		return;
	st.size = f->priv.size0;
	err = avfs_fs_setattr(e->fs, f->ino, AVFS_SET_SIZE, &st, now + e->c.wall_offset_ns);
	if (err == -EAGAIN && !cm_now(e, now))	/* the transaction was full: again */
		err = avfs_fs_setattr(e->fs, f->ino, AVFS_SET_SIZE, &st, now + e->c.wall_offset_ns);
	if (err)
		elog(e, 1, "a failed write of inode %llu left its size at %llu, not %llu: %s",
		     (unsigned long long)f->ino, (unsigned long long)f->priv.size1,
		     (unsigned long long)f->priv.size0, strerror(-err));
	else
		cm_changed(e, now);
}

/* All of f's parts are done (or it failed before any went): the engine finishes it. */
static void put(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	if (--f->priv.pending > 0)
		return;
	fio_forget(f);
	if (f->priv.planned && f->priv.res < 0)
		write_failed(e, f, now);
	e->on_fio_done(e, f, now);
}

static void fail(struct avfs_fio *f, int err)
{
	if (err < 0 && f->priv.res >= 0)
		f->priv.res = err;
}

static void unlink_part(struct avfs_fio *f, struct avfs_ereq *q)
{
	for (struct avfs_ereq **pp = &f->priv.parts; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			return;
		}
}

static void wlist_del(struct avfs_engine *e, struct avfs_ereq *q, int64_t now);

static bool late_write_again(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now);

/* A part done: its write's generation, its bounce copied out, its time counted. */
static void part_done(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now)
{
	struct avfs_fio *f = q->f;

	if (late_write_again(e, q, res, now))
		return;

	f->disk_ns += q->service_ns;
	if (q->data_write) {
		cm_write_end(e, q->gen, now);
		wlist_del(e, q, now);
	}
	if (res < 0)
		fail(f, res);
	else if (q->copy_len)
		memcpy(f->buf + q->copy_to, q->own + q->skip, q->copy_len);
	unlink_part(f, q);
	part_free(q);
	put(e, f, now);
}

static struct avfs_ereq *part_new(struct avfs_fio *f, uint64_t off, uint64_t len, bool write,
				  int64_t deadline, bool spare)
{
	struct avfs_ereq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->io.off = off;
	q->io.len = len;
	q->io.write = write;
	q->io.deadline = deadline;
	q->io.flow = f->flow;
	q->io.prefetch = f->prefetch;
	q->spare = spare;
	q->f = f;
	q->cls = f->cls;
	q->label = f->label;
	q->done = part_done;
	q->next = f->priv.parts;
	f->priv.parts = q;
	f->priv.pending++;
	return q;
}

/* A part of a file write whose deadline is the service's (not the client's) and passed before
 * it reached the device (refused at submission after it waited for a read-modify-write read or
 * an earlier write of its pages, or failed by the mixer as too late) goes again as best effort:
 * late (f's deadline stays: a miss), never lost — a held write's failure would reach only a
 * later fsync. So does any request marked keep_late (a FUSE reader's playout window, due by
 * the front end: a POSIX reader cannot be told -ETIME). true: sent again. (Measured on
 * hddemu, a 2 MB/s writer of 32,900-byte writes beside a greedy reader: its appends chain
 * through their shared pages, so that once late they stay late; neither the service's
 * deadline counted again from now nor an urgent one breaks the chain — the mixer fails the
 * latter again.) */
static bool late_write_again(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now)
{
	if (res != -ETIME || !q->f || !q->f->ino || !q->io.deadline || q->dispatched ||
	    (!q->f->keep_late && (!q->f->write || q->f->deadline)))
		return false;
	q->io.deadline = 0;
	return !dsp_submit(e, q, now);
}

/* Send q; a refusal (its deadline passed, a bad range) completes it with the error. */
static void send(struct avfs_engine *e, struct avfs_ereq *q, int64_t now)
{
	int err = dsp_submit(e, q, now);

	if (err && !late_write_again(e, q, err, now))
		q->done(e, q, err, now);
}

/* ---- the order of writes to the same pages ----
 * Two requests may write parts of one page (two small appends): the second one's read-modify-
 * write must read the page after the first one's write, or it writes old bytes back; and two
 * writes of the same page must land in the order they were planned. So a data write, the read
 * of its read-modify-write, or a read, waits for every earlier data write of the same pages
 * that is not complete: for the last one when planned, then (unblock) for any other still
 * under way — a range over several earlier writes (a small file's move reads its whole
 * extent, written by up to 8 libavio requests in flight) waits for each. Rare otherwise
 * (libavio writes whole pages; the kernel serializes a file's FUSE writes), so the list of
 * writes in flight is searched from its end. */

/* The last incomplete data write numbered below `below` that overlaps [off, off + len). */
static struct avfs_ereq *last_overlap(struct avfs_engine *e, uint64_t off, uint64_t len,
				      uint64_t below)
{
	for (struct avfs_ereq *w = e->wlast; w; w = w->w_prev)
		if (w->w_seq < below && w->w_off < off + len && off < w->w_off + w->w_len)
			return w;
	return NULL;
}

static void wait_on(struct avfs_ereq *q, struct avfs_ereq *before)
{
	if (!before)
		return;
	q->waits++;
	q->wait_next = before->waiters;
	before->waiters = q;
}

static void wlist_add(struct avfs_engine *e, struct avfs_ereq *q)
{
	q->w_off = q->io.off;	/* (io.orig_off is set only when it reaches the scheduler) */
	q->w_len = q->io.len;
	q->w_prev = e->wlast;
	*(e->wlast ? &e->wlast->w_next : &e->wfirst) = q;
	e->wlast = q;
	q->in_wlist = true;
	q->w_seq = ++e->wseq;
	q->follows = q->w_seq;	/* every earlier write of its pages */
}

static void unblock(struct avfs_engine *e, struct avfs_ereq *q, int64_t now);

/* q is complete (or will never go): out of the list, and what waited for it goes on. */
static void wlist_del(struct avfs_engine *e, struct avfs_ereq *q, int64_t now)
{
	struct avfs_ereq *w = q->waiters;

	if (!q->in_wlist)
		return;
	*(q->w_prev ? &q->w_prev->w_next : &e->wfirst) = q->w_next;
	*(q->w_next ? &q->w_next->w_prev : &e->wlast) = q->w_prev;
	q->in_wlist = false;
	q->waiters = NULL;
	while (w) {
		struct avfs_ereq *next = w->wait_next;

		w->wait_next = NULL;
		unblock(e, w, now);
		w = next;
	}
}

static void data_write_flags(struct avfs_engine *e, struct avfs_ereq *q)
{
	const struct avfs_sched_conf *s = &e->c.sched;

	q->data_write = true;
	q->gen = cm_write_begin(e);
	/* SPEC §6, papers/003 §3.1.3: a chunked data write goes with FUA on its last chunk (the
	 * mixer puts it there), so that the drive's write-back adds no seek behind the next
	 * request; the commit's FLUSH still makes everything durable */
	q->io.fua = e->c.chunk_fua && s->chunk && q->io.len > s->chunk && s->rotational;
}

/* A read of a read-modify-write is done: merge its kept bytes into the write waiting for it,
 * and send the write once it waits for nothing more. */
static void rmw_read_done(struct avfs_engine *e, struct avfs_ereq *r, int res, int64_t now)
{
	struct avfs_fio *f = r->f;
	struct avfs_ereq *w = r->then;

	if (late_write_again(e, r, res, now))
		return;
	f->disk_ns += r->service_ns;
	if (res < 0) {
		fail(f, res);
	} else {
		memcpy(w->own + r->at, r->own, r->keep_head);
		memcpy(w->own + r->at + PAGE - r->keep_tail, r->own + PAGE - r->keep_tail,
		       r->keep_tail);
	}
	unlink_part(f, r);
	part_free(r);
	f->priv.pending++;	/* a guard: the write may complete at once */
	unblock(e, w, now);
	put(e, f, now);
	put(e, f, now);
}

/* One thing q waited for is done: send it when it waits for nothing more — no read, and no
 * earlier write of its pages (a write whose request failed meanwhile does not go with a page
 * it could not merge). */
static void unblock(struct avfs_engine *e, struct avfs_ereq *q, int64_t now)
{
	struct avfs_ereq *before;

	if (--q->waits > 0)
		return;
	if (q->data_write && q->f->priv.res < 0) {
		q->done(e, q, (int)q->f->priv.res, now);
		return;
	}
	before = last_overlap(e, q->io.off, q->io.len, q->follows);
	if (before)
		wait_on(q, before);	/* another earlier write of its pages: that one too */
	else
		send(e, q, now);
}

/* The read of one page of w to merge (at its offset at), from w's own pages or, when a small
 * file moves, from src (its old place: then head may span all its pages, in one read). */
static int rmw_read(struct avfs_engine *e, struct avfs_fio *f, struct avfs_ereq *w,
		    uint64_t src, uint32_t at, uint32_t head, uint32_t tail, int64_t deadline,
		    bool spare)
{
	uint64_t len = head > PAGE ? ((uint64_t)head + PAGE - 1) / PAGE * PAGE : PAGE;
	struct avfs_ereq *r = part_new(f, (src ? src : w->io.off) + at, len, false, deadline,
				       spare);

	if (!r)
		return -ENOMEM;
	/* the pages as the earlier writes of them leave them (never w, which waits for r) */
	r->follows = w->w_seq;
	wait_on(r, last_overlap(e, r->io.off, len, r->follows));
	r->own = alloc_buf(len);
	if (!r->own)
		return -ENOMEM;
	r->buf = r->own;
	r->then = w;
	r->at = at;
	r->keep_head = head;
	r->keep_tail = tail;
	r->done = rmw_read_done;
	w->waits++;
	return 0;
}

/* The device request of op o: on the caller's buffer (direct) or on a buffer of its own. */
static struct avfs_ereq *part_of(struct avfs_fio *f, const struct avfs_dop *o, bool write,
				 bool direct, int64_t deadline, bool spare)
{
	struct avfs_ereq *q = part_new(f, o->dev_off, o->dev_len, write, deadline, spare);

	if (!q)
		return NULL;
	if (direct) {
		q->buf = f->buf + o->buf_off;
		return q;
	}
	q->own = alloc_buf(o->dev_len);
	q->buf = q->own;
	return q->own ? q : NULL;	/* (a part without its buffer is freed with f's parts) */
}

/* Build the parts of one op of a plan; reads and ready writes are listed in *go to be sent. */
static int op_parts(struct avfs_engine *e, struct avfs_fio *f, const struct avfs_dop *o,
		    int64_t deadline, bool spare)
{
	struct avfs_ereq *q, *before;
	uint8_t *dst = f->buf ? f->buf + o->buf_off : NULL;	/* (none for a zero_tail) */

	switch (o->kind) {
	case AVFS_DOP_ZERO:
		memset(dst, 0, o->len);
		return 0;
	case AVFS_DOP_READ:
		/* straight into the caller's buffer where its pages fit, else through a bounce */
		q = part_of(f, o, false, !o->skip && aligned(dst) && o->buf_off + o->dev_len <= f->cap,
			    deadline, spare);
		if (!q)
			return -ENOMEM;
		/* a write answered before it reached the device (write-behind, wbuf.c), or one of
		 * another request in flight, may still be under way: the read sees its pages as
		 * every earlier write leaves them */
		q->follows = e->wseq + 1;
		wait_on(q, last_overlap(e, o->dev_off, o->dev_len, q->follows));
		if (q->buf == dst)
			return 0;
		q->copy_to = o->buf_off;
		q->copy_len = o->len;
		q->skip = o->skip;
		return 0;
	case AVFS_DOP_WRITE:
		/* straight from the caller's buffer when it is whole pages, else assembled */
		before = last_overlap(e, o->dev_off, o->dev_len, UINT64_MAX);
		q = part_of(f, o, true, !(o->flags & AVFS_DOP_ZEROS) && !o->skip && !o->keep_head &&
			    !o->keep_tail && o->len == o->dev_len && dst && aligned(dst),
			    deadline, spare);
		if (!q)
			return -ENOMEM;
		data_write_flags(e, q);
		wlist_add(e, q);
		if (q->buf != dst) {
			memset(q->own, 0, o->dev_len);
			if (!(o->flags & AVFS_DOP_ZEROS) && dst)
				memcpy(q->own + o->skip, dst, o->len);
		}
		if (!o->keep_head && !o->keep_tail) {
			wait_on(q, before);
			return 0;
		}
		/* the partial first and last pages keep the bytes around the data: read them first
		 * (one read when they are the same page), after the earlier writes of them; a
		 * small file's move reads them, all its pages at once, from its old place, and the
		 * write still goes after the earlier ones of its own pages (unblock checks again
		 * when its reads are done) */
		if (o->src_off)
			wait_on(q, before);
		if (o->dev_len == PAGE)
			return rmw_read(e, f, q, o->src_off, 0, o->keep_head, o->keep_tail, deadline,
					spare);
		if (o->keep_head && rmw_read(e, f, q, o->src_off, 0, o->keep_head, 0, deadline,
					     spare))
			return -ENOMEM;
		if (o->keep_tail && rmw_read(e, f, q, o->src_off, (uint32_t)(o->dev_len - PAGE), 0,
					     o->keep_tail, deadline, spare))
			return -ENOMEM;
		return 0;
	}
	return -EINVAL;
}

/* Send the parts that wait for nothing: reads, and writes with no page to merge. They are
 * listed first: a send that fails at once completes its part (and a read of a
 * read-modify-write may finish its write) while the list is walked. The caller holds a guard. */
static void send_ready(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	struct avfs_ereq *q, *one[8], **v = one;
	size_t n = 0, k = 0;

	for (q = f->priv.parts; q; q = q->next)
		n += !q->waits && !q->queued && !q->dispatched;
	if (n > 8 && !(v = malloc(n * sizeof(*v)))) {
		v = one;	/* without memory: one at a time, each walk from the start */
		while ((q = f->priv.parts)) {
			while (q && (q->waits || q->queued || q->dispatched))
				q = q->next;
			if (!q)
				break;
			send(e, q, now);
		}
		return;
	}
	for (q = f->priv.parts; q; q = q->next)
		if (!q->waits && !q->queued && !q->dispatched)
			v[k++] = q;
	for (k = 0; k < n; k++)
		send(e, v[k], now);
	if (v != one)
		free(v);
}

void fio_start(struct avfs_engine *e, struct avfs_fio *f, int64_t deadline, bool spare,
	       int64_t now)
{
	struct avfs_data_plan p;
	struct avfs_ereq *q, *next;
	int err = 0;

	f->sched_deadline = deadline;
	f->priv.spare = spare;
	f->priv.started = true;
	f->priv.pending = 1;	/* a guard while the parts are built and sent */
	avfs_data_plan_init(&p);
	p.whole = f->stream || deadline;	/* streams keep whole blocks and ZRR */
	if (!f->ino) {
		q = part_new(f, f->off, f->len, f->write, deadline, spare);
		if (!q) {
			err = -ENOMEM;
		} else {
			struct avfs_ereq *before = f->write ?
				last_overlap(e, f->off, f->len, UINT64_MAX) : NULL;

			q->buf = f->buf;
			if (f->write) {
				data_write_flags(e, q);
				wlist_add(e, q);
				wait_on(q, before);
			}
			p.bytes = f->len;
		}
	} else if (f->zero_tail) {
		err = avfs_fs_plan_zero_tail(e->fs, f->ino, f->off, &p);
		if (err == -EAGAIN && !cm_now(e, now))	/* (a small file's move: credits) */
			err = avfs_fs_plan_zero_tail(e->fs, f->ino, f->off, &p);
	} else if (f->write) {
		struct avfs_stat st;

		f->priv.size0 = avfs_fs_getattr(e->fs, f->ino, &st) ? 0 : st.size;
		err = avfs_fs_plan_write(e->fs, f->ino, f->off, f->len, now + e->c.wall_offset_ns,
					 &p);
		if (err == -EAGAIN && !cm_now(e, now))	/* the transaction was full: again */
			err = avfs_fs_plan_write(e->fs, f->ino, f->off, f->len,
						 now + e->c.wall_offset_ns, &p);
		/* no free block, but blocks freed by commits not yet done (a file just deleted):
		 * those commits first, then again, before the front end sees ENOSPC */
		if (err == -ENOSPC && cm_wait_space(e, f, now)) {
			avfs_data_plan_free(&p);
			return;	/* f stays taken (its guard held): fio_space_retry plans it */
		}
		/* from here on a failure must undo what the plan did to the size */
		f->priv.planned = !err;
		f->priv.size1 = !err && !avfs_fs_getattr(e->fs, f->ino, &st) ? st.size : 0;
	} else {
		err = avfs_fs_plan_read(e->fs, f->ino, f->off, f->len, &p);
	}
	for (size_t i = 0; !err && i < p.n; i++)
		err = op_parts(e, f, &p.ops[i], deadline, spare);
	f->priv.res = err ? err : (int64_t)p.bytes;
	avfs_data_plan_free(&p);
	if (err) {
		/* nothing was sent: every part ends here (a write's generation too) */
		for (q = f->priv.parts; q; q = next) {
			next = q->next;
			if (q->data_write) {
				cm_write_end(e, q->gen, now);
				wlist_del(e, q, now);
			}
			f->priv.pending--;
		}
	} else {
		send_ready(e, f, now);
	}
	if (f->ino && f->write)
		cm_changed(e, now);
	put(e, f, now);
}

void fio_space_retry(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	fio_start(e, f, f->sched_deadline, f->priv.spare, now);
}

int fio_withdraw(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	struct avfs_ereq *q, *next;

	if (f->priv.touched)
		return -EBUSY;	/* a command of it reached the device: it completes */
	for (q = f->priv.parts; q; q = q->next)
		if ((q->data_write && f->ino) || q->then || q->waits)
			return -EBUSY;	/* a planned file write: its blocks are mapped already; a
					 * read waiting for a write of its pages: listed there */
	for (q = f->priv.parts; q; q = q->next)
		if (q->queued && dsp_withdraw(e, q))
			return -EBUSY;	/* cannot happen: none was dispatched */
	for (q = f->priv.parts; q; q = next) {
		next = q->next;
		if (q->data_write) {	/* a raw write never sent */
			cm_write_end(e, q->gen, now);
			wlist_del(e, q, now);
		}
		part_free(q);
		f->priv.pending--;
	}
	f->priv.parts = NULL;
	return 0;
}

/* f's parts not on the device and due after dl are due at dl (0: best effort, and so are those
 * not sent yet): out of the scheduler and in again, at most 8 (the rest keep their deadlines). */
static void pull(struct avfs_engine *e, struct avfs_fio *f, int64_t dl, int64_t now)
{
	struct avfs_ereq *q, *v[8];
	size_t n = 0, k = 0;

	for (q = f->priv.parts; q; q = q->next) {
		if (q->dispatched || !q->io.deadline || (dl && q->io.deadline <= dl))
			continue;
		if (!dl)
			q->io.deadline = 0;	/* (one still waiting goes so when it is sent) */
		if (q->queued && n < 8 && !dsp_withdraw(e, q)) {
			q->io.deadline = dl;
			v[n++] = q;
		}
	}
	f->priv.pending++;	/* a guard: a refused part completes f */
	for (k = 0; k < n; k++)
		send(e, v[k], now);
	put(e, f, now);
}

void fio_hurry(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	f->sched_deadline = 0;
	pull(e, f, 0, now);
}

void fio_pull_gen(struct avfs_engine *e, unsigned gen, int64_t dl, int64_t now)
{
	struct avfs_fio *f, *next;

	for (f = e->live; f; f = next) {
		next = f->priv.live_next;	/* (f may complete) */
		for (struct avfs_ereq *q = f->priv.parts; q; q = q->next)
			if (q->data_write && q->gen == gen && q->queued && !q->dispatched &&
			    q->io.deadline > dl) {
				pull(e, f, dl, now);
				break;
			}
	}
}
