/*
 * engine_i.h — the engine's private parts and how its modules call each other. Layers, each
 * calling only those below it (callbacks upward go through the function pointers in struct
 * avfs_engine, set by engine.c):
 *
 *   engine.c    the public entry points, the wake time, the completion of front-end requests
 *   rahead.c    read-ahead for deadline streams: the daemon's buffer in front of a client's
 *   bwclass.c   reservations and the bandwidth class: charge, park, spare
 *   fileio.c    a front-end request into device requests (data plans: reads, zero-fills,
 *               read-modify-writes)
 *   commit.c    ordered commits: generations, the barrier, FLUSH, the plan's writes
 *   ckpt.c      the lazy checkpoint's plans, in the background, after the commits' writes
 *   dispatch.c  the scheduler and the device: slots, commands, FLUSH, completions
 *   metrics.c, trace.c, wberr.c, wbuf.c   leaves: counting, the trace's text, files' write
 *               errors, write-behind's accounting
 * (and elog() below, the log line any layer may write)
 */
#ifndef AVFS_ENGINE_I_H
#define AVFS_ENGINE_I_H

#include "engine.h"
#include "fs.h"

#include <stdarg.h>
#include <stdio.h>

/* One device request through the scheduler: a part of a front-end request, a read of a
 * read-modify-write, or a write of a commit's plan. */
struct avfs_ereq {
	struct avfs_io io;	/* first: the scheduler hands it back */
	uint8_t *buf;		/* the device's side of the transfer */
	uint8_t *own;		/* a buffer it owns (a bounce, a page to merge), freed with it */
	struct avfs_fio *f;	/* its front-end request; NULL for a commit's write */
	struct avfs_ereq *next;	/* on f->priv.parts */
	/* called when it completed or failed (res bytes or -errno); the owner frees it */
	void (*done)(struct avfs_engine *e, struct avfs_ereq *q, int res, int64_t now);
	enum avfs_trace_class cls;	/* when best effort (RT when it has a deadline) */
	int64_t label;		/* the trace's stream */
	unsigned gen;		/* a data write: the commit generation it belongs to */
	bool data_write;	/* counted by commit.c until done (ordered mode) */
	bool be_counted;	/* counted in be_pending */
	bool queued;		/* in the scheduler */
	bool dispatched;	/* a command of it reached the device */
	bool spare;		/* best effort nobody else asked for: not counted in be_pending */
	int64_t service_ns;	/* its commands' time on the device */
	/* fileio.c: a read that a write waits for (read-modify-write), or a bounced read */
	struct avfs_ereq *then;	/* the write to complete (merge into) when this read is done */
	uint32_t at;		/* the page's offset in then->own */
	uint32_t keep_head, keep_tail;	/* bytes of the page to merge: [0, head), [4096 - tail, 4096)
					 * (a small file's move: head over all its pages, no tail) */
	int waits;		/* what it waits for before it is sent: a write, its reads; either,
				 * the earlier write of the same pages it must follow */
	/* fileio.c: data writes in the order they were planned, until complete (a later write or
	 * read-modify-write read of the same pages waits for the last of them) */
	struct avfs_ereq *w_prev, *w_next;
	uint64_t w_off, w_len;	/* the device bytes it writes */
	uint64_t w_seq;		/* a data write's number in planning order (from 1) */
	uint64_t follows;	/* it is sent after every data write numbered below this that
				 * overlaps [io.off, io.off + io.len), one after the other */
	struct avfs_ereq *waiters;	/* requests waiting for this write to complete */
	struct avfs_ereq *wait_next;	/* on the waiters of the write it waits for */
	bool in_wlist;
	uint64_t copy_to, copy_len;	/* a bounced read: bytes for f->buf at copy_to, from own + skip */
	uint32_t skip;
};

struct avfs_dispatch {
	struct avfs_sched sched;
	struct avfs_sched_cmd *slots;	/* commands on the device, by cookie */
	int64_t *slot_at;		/* when each went */
	struct iovec **slot_iov;	/* a coalesced command's pieces, by cookie (grown once to
					 * AVFS_SCHED_COALESCE_MAX, kept until the engine is freed) */
	unsigned nslots;
	int64_t hold_at;		/* the scheduler's WAIT, 0: none */
	uint64_t be_pending;
	bool kicking, again;		/* kick() is running: a nested call only asks it to loop */
	/* FLUSH: one at a time, through a slot like any command */
	bool flush_wanted, flush_inflight;
	int64_t flush_at;
	void (*flush_done)(struct avfs_engine *e, int res, int64_t now);
};

#define AVFS_CM_QUEUE 16	/* plans queued at the most, plus one generation being written */

struct avfs_queued_plan {
	struct avfs_plan *plan;
	unsigned gen;		/* the generation whose data writes it makes reachable */
};

struct avfs_commit {
	struct avfs_queued_plan q[AVFS_CM_QUEUE];	/* plans in commit order; the head runs */
	size_t qhead, qn;
	size_t i;		/* the head plan's next operation */
	unsigned gen;		/* data writes planned now belong to this generation */
	unsigned writes[AVFS_CM_QUEUE];	/* data writes not yet complete, by generation */
	bool wanted;		/* another commit once the queue is empty */
	bool busy;		/* a write of the head plan is out */
	bool flushing;
	bool ck_ready;		/* the head plan reuses log space (after_ckpt): checkpointed */
	bool flush_after;	/* the write out is a chunked FUA one: FUA went on its last chunk
				 * only (mixer.c), so a FLUSH follows it ... */
	bool post_flush;	/* ... now, before the plan's next operation */
	struct avfs_ereq *out;	/* the plan's write that is out (busy) */
	uint64_t done;		/* commits on disk */
	uint64_t unflushed;	/* data writes completed since the last FLUSH was issued: a commit
				 * with no metadata change still flushes them (sync, fsync) */
	struct avfs_fio *space_head;	/* writes that found no free block while blocks freed by
					 * a commit under way wait for it (cm_wait_space) */
	int64_t next_at;	/* the periodic commit */
	int64_t t0;		/* the head plan began */
	int64_t pulled_at;	/* its data writes were last pulled (cm_pull_due) */
	double max_s;
	char failure[200];	/* the first commit that failed: what and why ("" none) */
};

/* The checkpoint under way (ckpt.c). */
struct avfs_ckpt {
	struct avfs_plan *plan;	/* NULL: none */
	size_t i;		/* its next operation */
	struct avfs_ereq *out;	/* its write that is out */
	bool flushing;		/* its FLUSH is out */
	uint64_t done;		/* checkpoints done */
	char what[160];		/* what failed: "writing inode table block 37" */
};

struct avfs_bw {
	struct avfs_admit *admit;
	struct avfs_estream **v;
	size_t n, cap;
	size_t nparked;
	int64_t idle_at;	/* a tick is wanted then: the last best-effort request was canceled
				 * with requests parked (they go in the tick, not inside a cancel) */
};

/* A file whose write failed (wberr.c): its error epoch, errseq-style. */
struct avfs_wberr {
	uint64_t ino;
	uint32_t gen;		/* the inode's generation then: a reused number starts clean */
	uint64_t seq;		/* the epoch: bumped by an error after the last one was seen */
	bool seen;		/* an open file description has reported it */
};

struct avfs_engine {
	struct avfs_engine_conf c;
	struct avfs_engine_ops ops;
	struct avfs_fs *fs;	/* NULL: raw requests only */
	uint64_t dev_size;
	uint64_t block_size;
	struct avfs_dispatch d;
	struct avfs_commit cm;
	struct avfs_ckpt ck;
	struct avfs_bw bw;
	struct avfs_metrics m;
	int64_t armed;		/* the time last given to ops.arm */
	size_t nfio;		/* front-end requests taken and not done ... */
	struct avfs_fio *live;	/* ... listed (their parts are freed with the engine) */
	struct avfs_ereq *wfirst, *wlast;	/* data writes not complete, in planning order */
	uint64_t wseq;				/* the last data write's w_seq */
	uint64_t wb_total;	/* write-behind: bytes of held writes, every stream (wbuf.c) */
	uint64_t wb_be_total;	/* ... and of held best-effort writes */
	struct ra_state *ra;	/* read-ahead's windows (rahead.c) */
	struct avfs_wberr *wb;	/* files whose writes failed (wberr.c) */
	size_t nwb, capwb;
	/* upward calls (set by engine.c) */
	void (*on_be_idle)(struct avfs_engine *e, int64_t now);	/* be_pending fell to 0 */
	void (*on_fio_done)(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
	/* a write waiting for space may try again (the commits it waited for are done) */
	void (*on_space)(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
	/* the checkpoint ended (err: failed), or its FLUSH did (a commit may go on) */
	void (*on_ckpt)(struct avfs_engine *e, int err, int64_t now);
};

/* A line for the driver's log (ops.log), from any layer. */
static inline void __attribute__((format(printf, 3, 4)))
elog(struct avfs_engine *e, int level, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!e->ops.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e->ops.log(e->ops.ctx, level, msg);
}

/* dispatch.c */
int dsp_init(struct avfs_engine *e, char *why, size_t whylen);
void dsp_fini(struct avfs_engine *e);
/* Into the scheduler (and kick). 0, or -errno (-ETIME: its deadline passed; not kept). */
int dsp_submit(struct avfs_engine *e, struct avfs_ereq *q, int64_t now);
/* A metadata write of a plan (a commit's, a checkpoint's) as a best-effort request of the
 * commits' flow, not yet submitted; NULL: no memory. */
struct avfs_ereq *dsp_meta_req(const struct avfs_plan_op *o,
			       void (*done)(struct avfs_engine *e, struct avfs_ereq *q, int res,
					    int64_t now));
/* Out of the scheduler again (not dispatched): 0, or -EBUSY / -ENOENT. */
int dsp_withdraw(struct avfs_engine *e, struct avfs_ereq *q);
void dsp_kick(struct avfs_engine *e, int64_t now);
void dsp_complete(struct avfs_engine *e, uint64_t cookie, int64_t res, int64_t now);
/* Issue a FLUSH when a slot is free, before the scheduler's next command. */
void dsp_flush(struct avfs_engine *e, void (*done)(struct avfs_engine *e, int res, int64_t now),
	       int64_t now);
void dsp_tick(struct avfs_engine *e, int64_t now);
bool dsp_idle(const struct avfs_engine *e);

/* commit.c */
void cm_init(struct avfs_engine *e, int64_t now);
void cm_fini(struct avfs_engine *e);
void cm_request(struct avfs_engine *e, int64_t now);
/* Commit the running transaction now, its plan queued behind any under way (the running
 * transaction is full: fs.h's -EAGAIN). 0 or -errno. */
int cm_now(struct avfs_engine *e, int64_t now);
void cm_changed(struct avfs_engine *e, int64_t now);
void cm_tick(struct avfs_engine *e, int64_t now);
/* Hold f, a write that found no free data block, until the commits now queued (the running
 * transaction's included: committed here) are done and their freed blocks reusable; then
 * e->on_space(f). false when nothing is being freed or f waited before (answer -ENOSPC). */
bool cm_wait_space(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
/* f waits no more (canceled): true when it was waiting. */
bool cm_unwait_space(struct avfs_engine *e, struct avfs_fio *f);
/* Nothing to make durable: no change, no commit under way, no data write unflushed. */
bool cm_durable(const struct avfs_engine *e);
/* The first commit failure (what failed, why), NULL: none. */
const char *cm_failure(const struct avfs_engine *e);
/* Ordered mode lets the head commit wait for its transaction's data writes, and a real-time
 * one may be held to a deadline a large buffer away (a recording's: a minute). When that
 * commit has waited commit_wait (since it began or since the last pull) for them: when (0:
 * it does not wait for any, or commit_wait is 0) ... */
int64_t cm_pull_at(const struct avfs_engine *e);
/* ... and, at or after that time, true with the generation whose writes must be due sooner
 * (fio_pull_gen); the next pull is commit_wait later. */
bool cm_pull_due(struct avfs_engine *e, int64_t now, unsigned *gen);
/* A data write begins (its generation) / ends (may let a waiting commit go on). */
unsigned cm_write_begin(struct avfs_engine *e);
void cm_write_end(struct avfs_engine *e, unsigned gen, int64_t now);

/* The checkpoint ended or its FLUSH did (e->on_ckpt): a commit waiting for it goes on; a
 * failure fails the commits. */
void cm_ckpt_event(struct avfs_engine *e, int err, int64_t now);

/* ckpt.c */
void ck_fini(struct avfs_engine *e);
/* Start a checkpoint of everything durable not yet home (fs.h). 1: one is under way (this
 * one or an earlier), 0: nothing to do, -errno: it could not start (logged). */
int ck_start(struct avfs_engine *e, int64_t now);
bool ck_busy(const struct avfs_engine *e);
/* A commit's write is about to go: the checkpoint's, if still in the scheduler, steps back. */
void ck_yield(struct avfs_engine *e);
/* A commit's write or FLUSH ended: the checkpoint goes on. */
void ck_kick(struct avfs_engine *e, int64_t now);

/* fileio.c */
/* Plan f and send its parts (deadline 0: best effort; spare: not counted as best effort
 * pending). f->done runs through e->fio_done when all are complete. */
void fio_start(struct avfs_engine *e, struct avfs_fio *f, int64_t deadline, bool spare,
	       int64_t now);
/* Its parts back out of the scheduler (none on the device): 0 (freed, f done with -ECANCELED
 * by the caller), -EBUSY. */
int fio_withdraw(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
/* f waited for freed blocks (cm_wait_space): plan it again. */
void fio_space_retry(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
/* Free its parts, completing nothing (they are all done, or the engine is being freed). */
void fio_forget(struct avfs_fio *f);
/* Its parts not on the device go as best effort from now on (out of the scheduler and in
 * again; those not sent yet will go so): a held write an fsync waits for (wbuf.c). It may
 * complete f (a part refused). */
void fio_hurry(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
/* Data writes of commit generation gen still in the scheduler and due after dl are due at dl
 * (out of the scheduler and in again, at most 8 parts of a request a call): a commit has
 * waited for them long enough (cm_pull_due). Requests may complete (a part refused). */
void fio_pull_gen(struct avfs_engine *e, unsigned gen, int64_t dl, int64_t now);

/* wberr.c */
/* A write of ino failed after it was planned: a new error epoch for its file. */
void wb_set(struct avfs_engine *e, uint64_t ino);
void wb_fini(struct avfs_engine *e);

/* wbuf.c */
/* f is done: its held bytes are the stream's and the engine's no more. */
void wb_fio_done(struct avfs_engine *e, struct avfs_fio *f);
/* A commit is asked for (an fsync): held writes waiting for their deadlines go now. */
void wb_hurry(struct avfs_engine *e, int64_t now);

/* rahead.c */
#define RA_WINDOWS 64	/* files read ahead at once (the least recently read goes) */
int ra_init(struct avfs_engine *e);
void ra_fini(struct avfs_engine *e);
/* A client read (taken: counted and listed): true when read-ahead took it — answered from
 * memory already, or waiting for a piece on the way; false: the caller starts it. Either way
 * it may want pieces: ra_next(). */
bool ra_read(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
/* The next piece to read ahead (a request the caller takes and starts like a client's, with
 * its deadline), NULL when none is wanted now. */
struct avfs_fio *ra_next(struct avfs_engine *e);
/* A write of ino: what was read ahead of it goes. */
void ra_drop(struct avfs_engine *e, uint64_t ino, int64_t now);
/* No more read-ahead: every piece dropped (those on the device thrown away when they land). */
void ra_stop(struct avfs_engine *e, int64_t now);
/* A canceled client read that waited for a piece waits no more: true if it was waiting. */
bool ra_unwait(struct avfs_engine *e, struct avfs_fio *f);
void ra_counts(const struct avfs_engine *e, struct avfs_engine_ra_counts *out);

/* bwclass.c */
int bw_init(struct avfs_engine *e, char *why, size_t whylen);
void bw_fini(struct avfs_engine *e);
void bw_io(struct avfs_engine *e, struct avfs_estream *s, struct avfs_fio *f, int64_t now);
void bw_fio_done(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
bool bw_unpark(struct avfs_engine *e, struct avfs_fio *f);
void bw_tick(struct avfs_engine *e, int64_t now);
void bw_be_idle(struct avfs_engine *e, int64_t now);
int64_t bw_wake(const struct avfs_engine *e);
int64_t bw_reserve(struct avfs_engine *e, const struct avfs_service_req *r, uint64_t ino,
		   void *owner, unsigned flags, int64_t now, struct avfs_admit_left *left,
		   char *why, size_t whylen);
int bw_release(struct avfs_engine *e, uint64_t id, int64_t now);
struct avfs_estream *bw_stream(const struct avfs_engine *e, uint64_t id);

#endif
