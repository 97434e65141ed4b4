/*
 * engine.h — the engine between the front ends (FUSE, libavio clients, the simulator's
 * workload generators) and a disk backend (SPEC §2): it turns a front end's request on a file
 * (or on raw device bytes) into device requests through the file system's data plans, applies
 * the bandwidth class of a reservation (token bucket, parking, spare best effort),
 * feeds the scheduler and issues its commands (one on a rotating disk, `depth` on others, FUA
 * on the last chunk of a chunked data write), steps ordered commits (generation barrier, FLUSH,
 * commit record), and counts the QoS metrics and the request trace. avfsd, avfs-sim and the
 * guest mixer runner are thin adapters over it: the same code runs in real and virtual time.
 *
 * Sans-I/O: it never reads a clock, sleeps or touches a descriptor. Every call takes `now` (ns,
 * the driver's monotonic clock); it reaches the world only through struct avfs_engine_ops.
 * Single-threaded: the driver calls it from one thread.
 */
#ifndef AVFS_ENGINE_H
#define AVFS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "disk.h"	/* struct avfs_disk_req: the command handed to ops.submit (types only) */
#include "iosched.h"
#include "metrics.h"
#include "trace.h"

struct avfs_fs;
struct avfs_engine;

/* ---- requests ---- */

/* A front end's request: a range of a file (ino != 0) or of the device (ino == 0, raw: device
 * aligned). The front end owns the memory until done() has run; the fields after `priv` are
 * the engine's. */
struct avfs_fio {
	uint64_t ino;		/* the file, or 0: raw device bytes */
	uint64_t off, len;	/* byte range (a file's: any; raw: aligned to the device) */
	bool write;
	bool zero_tail;		/* a write of no data: the stale bytes past `off` (the size) in its
				 * page zeroed, before a truncate grows the file (len 0, buf NULL) */
	uint8_t *buf;		/* len bytes: read into / written from */
	uint64_t cap;		/* bytes of buf the engine may write (>= len): a read whose pages fit
				 * and whose buf is aligned for the device goes straight into buf */
	int64_t deadline;	/* the client's, ns; 0: none (a reservation's requests then get the
				 * service's deadline, others are best effort) */
	uint64_t stream;	/* the reservation to charge (avfs_engine_reserve), 0: none */
	int64_t label;		/* the trace's stream column (-1: none) */
	enum avfs_trace_class cls;	/* trace class when best effort (BE; HP for a probe) */
	bool keep_late;		/* with a deadline: failed by it (-ETIME) in the scheduler, it goes
				 * again as best effort (late, not lost), as a file write without
				 * a client deadline always does */
	bool prefetch;		/* read ahead of a client (rahead.c): nobody waits for it yet; its
				 * deadline is the one the client's read of it will carry */
	uint64_t flow;		/* best effort: whose it is, for the mixer's turns between clients
				 * (struct avfs_io's flow: the FUSE front end names the file),
				 * 0: nobody named */
	void (*done)(struct avfs_fio *f, int64_t res, int64_t now);	/* bytes or -errno */
	void *arg;		/* the front end's */
	/* what happened, valid in done() */
	int64_t sched_deadline;	/* the deadline it was scheduled with, 0: best effort */
	int64_t disk_ns;	/* time its commands spent on the device */
	int64_t arrival;	/* when the engine took it */
	struct avfs_fio_priv {
		struct avfs_ereq *parts;	/* its device requests */
		int pending;		/* parts not complete, plus guards */
		int64_t res;
		bool parked;		/* held above its reservation's rate */
		bool spare;		/* sent as best effort in time nobody asked for */
		bool started;		/* planned and its parts built */
		bool canceled;
		bool touched;		/* a command of it reached the device */
		bool planned;		/* a file write whose plan took the size from size0 to
					 * size1 (a failure puts it back: fileio.c) */
		uint64_t held;		/* answered before done: the memory it holds, counted
					 * (avfs_engine_wb_hold); 0: not so */
		uint64_t size0, size1;
		uint8_t space_waits;	/* times it waited for freed blocks (ENOSPC) */
		uint64_t space_after;	/* ... until this many commits are done */
		struct avfs_fio *space_next;	/* the writes waiting so */
		struct avfs_fio *park_next;	/* its stream's parked requests */
		struct avfs_fio *live_prev, *live_next;	/* the engine's, until done */
		bool ahead;		/* read-ahead's own read (rahead.c): in no figure */
		bool ahead_wait;	/* waiting for a piece read ahead ... */
		struct avfs_fio *ahead_next;	/* ... with these */
	} priv;
};

/* A file write that fails once planned (a device error on one of its parts, a read of its
 * read-modify-write, no memory for its parts) answers -errno and writes nothing the file
 * shows: the size its plan set goes back (unless a later write moved it), so that write(2)
 * and the size agree (a short write or an error, never both); and its file's error epoch
 * moves (avfs_engine_wberr_check). What its pages hold inside the old size is undefined, as
 * after any failed write. */

/* Take a request. 0: accepted, done() will run (possibly before this returns: a read with
 * nothing on the device, an error found while planning); -errno: refused, done() will not run
 * (-EINVAL: a bad range or buffer, -ETIME: its deadline has passed, -ENOENT: no such stream). */
int avfs_engine_io(struct avfs_engine *e, struct avfs_fio *f, int64_t now);
/* Withdraw a request no command of which has reached the device: 0 (done() runs with
 * -ECANCELED), -EBUSY (on the device, or a write already planned: it completes), -ENOENT. */
int avfs_engine_cancel(struct avfs_engine *e, struct avfs_fio *f, int64_t now);

/* ---- the driver's side ---- */

struct avfs_engine_ops {
	void *ctx;
	/* Issue one command (read, write, flush, seek); its completion comes back through
	 * avfs_engine_complete() with r->cookie — later, never from within this call. 0, or
	 * -errno (nothing issued). */
	int (*submit)(void *ctx, const struct avfs_disk_req *r);
	/* The engine wants avfs_engine_tick() at `at` (0: at no particular time); called when
	 * that time changes. */
	void (*arm)(void *ctx, int64_t at);
	/* Optional: one device request completed (the request trace). */
	void (*trace)(void *ctx, const struct avfs_trace_rec *r);
	/* Optional: a commit is on disk (err 0) or failed (-errno: the file system turned
	 * read-only); n commits done so far. */
	void (*committed)(void *ctx, uint64_t n, int err);
	/* Optional: something worth a log line (level 0 error, 1 warning, 2 info). */
	void (*log)(void *ctx, int level, const char *msg);
};

/* How a reserved stream's requests above its rate are served (papers/004 §3.1). */
enum avfs_bw_policy {
	AVFS_BW_PARK,		/* held until its tokens are due (then real time) or nobody else
				 * asks for the disk (then spare best effort, uncharged, for good) */
	AVFS_BW_AT_ONCE,	/* best effort at once, charged to the bucket's debt */
	AVFS_BW_UNCHARGED,	/* best effort at once, uncharged */
};

struct avfs_engine_conf {
	const struct avfs_sched_ops *policy;	/* the scheduler: tm unless set */
	struct avfs_sched_conf sched;	/* the model, rotational, depth, chunk, jit, predictor */
	struct avfs_admit_conf admit;	/* reservations; its model and block: the engine's */
	uint32_t lbs;			/* the device's logical block: lba = off / lbs */
	int64_t commit_period_ns;	/* commit this often when anything changed (5 s); 0: never
					 * by itself */
	size_t commit_dirty;		/* ... and when this many metadata blocks are dirty (64) */
	int64_t commit_wait_ns;		/* a commit that has waited this long for its transaction's
					 * data writes (ordered mode) has those still in the
					 * scheduler due by now + this, and again each time (10 s;
					 * 0: they keep their own deadlines) */
	int64_t wall_offset_ns;		/* the file system's timestamps: now + this */
	enum avfs_bw_policy bw;		/* AVFS_BW_PARK */
	bool chunk_fua;			/* a chunked data write carries FUA on its last chunk on a
					 * rotating disk (SPEC §6; default true) */
	uint64_t wb_max;		/* write-behind: bytes held at most, every stream (256 MiB;
					 * 0: off) */
	uint64_t wb_be_max;		/* write-behind of best-effort writes: bytes held at most,
					 * all of them (8 MiB; 0: off) */
	uint64_t ra_bytes;		/* read-ahead of a deadline stream's file (reads with a
					 * client deadline, no reservation): bytes beyond what the
					 * client asked for (8 MiB; 0: off) */
	uint64_t ra_start;		/* ... when its run of reads in order begins (2.5 MiB;
					 * 0: ra_bytes at once), growing to ra_bytes over ... */
	int64_t ra_ramp_ns;		/* ... this long (30 s; 0: ra_bytes at once) */
};

/* Defaults: tm with avfs_sched_conf_default, lbs 512, commits every 5 s or 64 dirty blocks,
 * the bandwidth class parking, FUA on the last chunk. */
void avfs_engine_conf_default(struct avfs_engine_conf *c);
/* Engine settings by name, then the scheduler's (avfs_sched_conf_set): "commit-period" (time),
 * "bw" (park, at-once, uncharged), "write-behind" (a size up to 16G, 0: off),
 * "write-behind-be" (a size up to 1G, 0: off), "read-ahead" (a size up to 64M, 0: off),
 * "read-ahead-start" (a size up to 64M, 0: the whole read-ahead at once), "read-ahead-ramp"
 * (a time, 0: the whole read-ahead at once), "commit-wait" (a time, 0: off).
 * 0, -ENOENT (unknown), -EINVAL / -ERANGE with why. */
int avfs_engine_conf_set(struct avfs_engine_conf *c, const char *name, const char *value,
			 char *why, size_t whylen);

/* An engine over fs (NULL: raw requests only, no commits) and a device of dev_size bytes.
 * c->admit's model and block size are taken from c->sched and fs. 0, or -errno with why. */
int avfs_engine_new(struct avfs_engine **out, const struct avfs_engine_conf *c,
		    struct avfs_fs *fs, uint64_t dev_size, const struct avfs_engine_ops *ops,
		    int64_t now, char *why, size_t whylen);
/* Free: requests still held are forgotten (their done() does not run, the engine's memory for
 * them is freed); drain first to have them complete. */
void avfs_engine_free(struct avfs_engine *e);

/* The device finished the command with this cookie: res bytes or -errno. */
void avfs_engine_complete(struct avfs_engine *e, uint64_t cookie, int64_t res, int64_t now);
/* Time passed (the armed time came, or any time): hold timers, parked requests, commits. */
void avfs_engine_tick(struct avfs_engine *e, int64_t now);
/* When the engine wants the next tick (0: no particular time). */
int64_t avfs_engine_wake(const struct avfs_engine *e);
/* Nothing in flight or held: no request, no command, no commit under way. */
bool avfs_engine_idle(const struct avfs_engine *e);

/* Read-ahead of deadline streams so far (rahead.c): pieces read ahead, client reads answered
 * from them, pieces dropped unused (the file changed, the reader moved or stopped, a piece
 * missed its deadline or failed). */
struct avfs_engine_ra_counts {
	uint64_t fetches, served, dropped;
};
void avfs_engine_ra_counts(const struct avfs_engine *e, struct avfs_engine_ra_counts *out);
/* Read no more ahead, and drop what is read ahead (pieces not on the device withdrawn): a
 * driver that is stopping, so that draining does not wait for pieces due seconds away. */
void avfs_engine_ra_stop(struct avfs_engine *e, int64_t now);

/* ---- commits (ordered mode: a transaction's data writes reach the disk before the commit
 * record that makes them reachable) ---- */

/* Commit the running transaction as soon as the one under way (if any) is done; committed()
 * tells when it is on disk. */
void avfs_engine_commit(struct avfs_engine *e, int64_t now);
/* The front end changed the file system: commit when the transaction has grown large. */
void avfs_engine_changed(struct avfs_engine *e, int64_t now);
/* Commit the running transaction at once, its plan queued behind those under way: what a
 * front end does when the core answers -EAGAIN (the running transaction is full, fs.h's
 * credits) before it calls again. 0 or -errno (-EBUSY: too many plans queued). */
int avfs_engine_commit_now(struct avfs_engine *e, int64_t now);
/* A mutating call of the fs core, called again once after a commit if it found the running
 * transaction full (-EAGAIN). GNU C: evaluates to the call's result. */
#define AVFS_ENGINE_FS(e, now, call) __extension__ ({					\
	int __r = (call);								\
	if (__r == -EAGAIN && !avfs_engine_commit_now((e), (now)))			\
		__r = (call);								\
	__r; })
/* Everything the front ends changed and wrote is on disk: no metadata change left, no commit
 * under way, no completed data write the device has not been told to flush. Never after a
 * commit failed (avfs_engine_failure): every commit asked for then fails with -EIO, so an
 * fsync answers EIO. */
bool avfs_engine_durable(const struct avfs_engine *e);
/* Commits done so far, and how many are queued or under way (*queued may be NULL): an fsync
 * that arrives now is durable once commits() exceeds done + queued (the commit it asks for
 * comes after them). */
uint64_t avfs_engine_commits(const struct avfs_engine *e, unsigned *queued);
/* Write home every committed metadata image not there yet, in the background behind the
 * commits' writes (the lazy checkpoint: it also starts by itself once the journal is a
 * quarter full, and before a commit reuses the journal's space). */
void avfs_engine_checkpoint(struct avfs_engine *e, int64_t now);
/* Checkpoints done so far (each moved the journal's tail past every commit before it). */
uint64_t avfs_engine_checkpoints(const struct avfs_engine *e);
/* The longest a commit took, s (one still under way counts its age). */
double avfs_engine_commit_max_s(const struct avfs_engine *e, int64_t now);
/* Why the file system went read-only: the first commit (metadata write) that failed, as
 * "writing inode table block 37 failed: Input/output error"; NULL while none has. The log
 * (ops.log) had the same line when it happened. */
const char *avfs_engine_failure(const struct avfs_engine *e);

/* ---- write errors, as Linux's errseq_t: each open file description hears of a failed
 * write of its file once ---- */

/* The sample an open file description takes when it opens ino: 0 before any error (and
 * while the latest error has not been reported to anyone: a new opener hears of it too). */
uint64_t avfs_engine_wberr_sample(struct avfs_engine *e, uint64_t ino);
/* At fsync (or a close that waits for durability): -EIO when a write of ino failed since
 * *since, which moves on (so the next check of the same description says 0); else 0. */
int avfs_engine_wberr_check(struct avfs_engine *e, uint64_t ino, uint64_t *since);

/* ---- write-behind (papers/000's write buffer, SPEC §9; wbuf.c) ---- */

/* Right after avfs_engine_io() took f (a file write): may the front end answer it now, before
 * its data is on the device, holding mem bytes of memory for it (>= f->len: its buffer)? true
 * when it is planned (its size and blocks are the file's already; not parked above its rate)
 * and, for a reserved writer's write (f->stream), the stream's held bytes stay within its
 * reserved buffer and the engine's within conf.wb_max; for a best-effort write (no stream),
 * the best-effort writes' held bytes within conf.wb_be_max (the writer's next request then
 * reaches the daemon while this one is on the device); then they count until f is done. The front end keeps f's data until done(), which still runs: a failure
 * there reaches the file's error epoch (avfs_engine_wberr_check, at fsync), as after any
 * failed write. An fsync's commit waits for every planned write (ordered mode), so durability
 * is as without it. false: answer at done() as usual. */
bool avfs_engine_wb_hold(struct avfs_engine *e, struct avfs_fio *f, uint64_t mem);
/* Bytes held so, every stream; and of best-effort writes. */
uint64_t avfs_engine_wb_total(const struct avfs_engine *e);
uint64_t avfs_engine_wb_be_total(const struct avfs_engine *e);

/* ---- reservations (SPEC §7: admission and the bandwidth class) ---- */

/* A reserved stream, as the engine keeps it. */
struct avfs_estream {
	uint64_t id;
	uint64_t ino;		/* the file it was made on (0: none), or its directory (dir) */
	bool dir;		/* ino is a directory: it covers the files in it, present and
				 * future (AVFS_RESERVE_DIR) */
	bool buffered;		/* AVFS_RESERVE_BUFFERED */
	bool uid_only;		/* it covers the I/O of one uid only: cover_uid (set by the front
				 * end after admission, as pid) */
	uint32_t cover_uid;
	uint64_t wb_bytes;	/* write-behind: bytes answered and not yet on the device
				 * (wbuf.c) */
	uint64_t wb_peak;	/* the most it held */
	uint64_t wb_waits;	/* writes that found the buffer full and waited for the device */
	struct avfs_service_req req;
	struct avfs_bucket bucket;
	struct avfs_qos qos;
	int64_t since;
	void *owner;		/* the front end's (a client), NULL: detached */
	uint32_t pid;		/* the process that made it (the front end's, for avfs-admin) */
	struct avfs_fio *park_head, *park_tail;	/* requests above its rate, in order */
	bool park_timer;	/* a tick is wanted when the head's tokens are due */
	int64_t park_due;
};

#define AVFS_RESERVE_UNCHECKED (1u << 0)	/* no admission test (experiments: overprovision) */
#define AVFS_RESERVE_DIR (1u << 1)	/* ino is a directory: the files in it are covered */
#define AVFS_RESERVE_BUFFERED (1u << 2)	/* its buffer is the daemon's memory (FUSE I/O through
					 * write-behind or read-ahead): the buffers of all such
					 * reservations stay within conf.wb_max (-ENOBUFS) */
/* Admit a service on ino for owner: its id (> 0), or -errno (-EBUSY: the disk cannot carry it,
 * -EDQUOT: the user's quota, -ENOBUFS: its buffer beyond the daemon's memory for buffers,
 * -EINVAL) with why, and *left on -EBUSY / -EDQUOT. */
int64_t avfs_engine_reserve(struct avfs_engine *e, const struct avfs_service_req *r, uint64_t ino,
			    void *owner, unsigned flags, int64_t now, struct avfs_admit_left *left,
			    char *why, size_t whylen);
/* End a reservation: its parked requests go on as best effort. 0 or -ENOENT. */
int avfs_engine_release(struct avfs_engine *e, uint64_t id, int64_t now);
struct avfs_estream *avfs_engine_stream(struct avfs_engine *e, uint64_t id);
/* The scheduler's completion margin m (ns): a real-time request due within m of now is
 * served at once (a front end's deadline for data a client already waits for); one due
 * before now fails (-ETIME). */
int64_t avfs_engine_margin(const struct avfs_engine *e);
/* The i-th reservation (0 <= i < count), NULL past the end. */
struct avfs_estream *avfs_engine_stream_at(struct avfs_engine *e, size_t i);
size_t avfs_engine_stream_count(const struct avfs_engine *e);
/* The detached reservation that covers I/O of uid on file ino, found in directory dir (0:
 * unknown), for the direction: one on the file itself first, else one on dir; either only
 * when it covers every uid or this one (SPEC §9: FUSE I/O under a reservation). Its id, 0
 * none. A directory's reservation covers the aggregate of its files: they share its bucket. */
uint64_t avfs_engine_stream_cover(const struct avfs_engine *e, uint64_t ino, uint64_t dir,
				  uint32_t uid, bool write);
struct avfs_admit *avfs_engine_admit(struct avfs_engine *e);
/* Add a quota (avfs_admit_set_quota). */

/* ---- what it knows ---- */

struct avfs_sched *avfs_engine_sched(struct avfs_engine *e);
struct avfs_fs *avfs_engine_fs(struct avfs_engine *e);
const struct avfs_engine_conf *avfs_engine_conf(const struct avfs_engine *e);
/* The QoS metrics; reset starts a new measurement at now. */
const struct avfs_metrics *avfs_engine_metrics(const struct avfs_engine *e);
void avfs_engine_metrics_reset(struct avfs_engine *e, int64_t now);
/* Best-effort requests in the scheduler (spare ones not counted): work conservation's aside. */
uint64_t avfs_engine_be_pending(const struct avfs_engine *e);
/* Reserved requests parked above their rate, every stream. */
size_t avfs_engine_parked(const struct avfs_engine *e);

#endif
