/*
 * iosched.h — the disk scheduling interface (sans-I/O, SPEC §2, §5): a policy takes requests
 * and, each time the device can take a command, says what to do now — dispatch this command,
 * fail that request, wait until a time, or nothing. It never reads a clock or touches a
 * device; `now` is always an argument. Policies plug in through struct avfs_sched_ops:
 * the traffic mixer ("tm", sched/mixer.c) and the baselines fifo, cscan, edf, scan-edf
 * (sched/sched_base.c), which exist for comparison only.
 */
#ifndef AVFS_IOSCHED_H
#define AVFS_IOSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One request as a scheduler sees it. The caller owns the memory and keeps it alive until
 * the request completes (done() returned true, or it was failed). */
struct avfs_io {
	uint64_t id;		/* the caller's */
	uint64_t off;		/* device byte offset of the next byte to transfer */
	uint64_t len;		/* bytes left to transfer */
	uint64_t orig_off, orig_len;	/* as submitted */
	bool write;
	bool fua;		/* write: durable on completion (only the last chunk carries FUA) */
	int64_t deadline;	/* ns (the scheduler's clock); 0 = best effort */
	int64_t arrival;	/* ns, set by avfs_sched_submit */
	/* best effort: whose request it is (a file, a client; 0: nobody named). The mixer gives
	 * the flows with requests the disk in turn, the one served longest ago first, so that
	 * one greedy flow whose next request always lies ahead of the head cannot hold it;
	 * AVFS_IO_FLOW_META (the file system's commits) goes before the others. */
	uint64_t flow;
	/* read ahead of a client that does not wait for it yet (the engine's read-ahead): a
	 * command may carry it early, as its client's read would be (prefetch-carry) */
	bool prefetch;
	/* Set by the policy when a command carries more than this request (coalescing): the next
	 * request of the same command, which starts where this one ends on the device; NULL
	 * otherwise. The caller reads the chain when the command completes: done() has then
	 * completed (or failed) every request on it. */
	struct avfs_io *more;
	/* private to the policy */
	void *pv[4];
	uint64_t pk[4];
	int64_t pt[4];
	double pd[2];
};

#define AVFS_IO_FLOW_META UINT64_MAX

enum avfs_sched_kind {
	AVFS_SCHED_IDLE = 0,	/* nothing to do until a request arrives */
	AVFS_SCHED_DISPATCH,	/* issue cmd now */
	AVFS_SCHED_FAIL,	/* complete io with err (-ETIME: its deadline passed), not issued */
	AVFS_SCHED_WAIT,	/* ask again at `at` (hold timer, JIT slack) or when a request arrives */
};

struct avfs_sched_cmd {
	enum avfs_sched_kind kind;
	struct avfs_io *io;	/* DISPATCH, FAIL */
	uint64_t off;		/* DISPATCH: the command's byte range */
	uint32_t len;
	bool write, fua;
	bool seek;		/* DISPATCH: a SEEK to off (seek splitting), no transfer */
	int64_t at;		/* WAIT: when to ask again */
	int err;		/* FAIL */
};

/* The service-time model of SPEC §5.2 (papers/001 eq. (1)). */
struct avfs_svc_model {
	double tr_ns;		/* rotation period */
	double tk_ns;		/* average seek */
	double dmax, dmin;	/* bytes/s at LBA 0 and at the end */
	uint64_t lmax;		/* device bytes */
};

/* Optional knowledge of the disk's mechanics (the simulated disk has it; an SG_IO disk with a
 * profile will): for JIT seek and seek splitting. predict(): for a command at byte off issued
 * at `now`, the seek and rotational wait it would see, and the seek time over half the
 * distance (for splitting). 0, AVFS_PRED_ROT_MEAN (the seeks are predicted but the rotational
 * wait is only its expectation, half a turn: good enough to judge a split, not to time a JIT
 * wait), or -errno (nothing predicted). */
#define AVFS_PRED_ROT_MEAN 1
struct avfs_sched_predictor {
	void *ctx;
	int (*predict)(void *ctx, int64_t now, uint64_t off, int64_t *seek_ns, int64_t *rot_ns,
		       int64_t *half_seek_ns, uint64_t *mid_off);
	/* Optional, for a predictor that learns (the platter's phase, the transport): the driver
	 * tells it of each read or write as it goes to the device, and of each completion
	 * (transfer: the command moved data, so the head was over end_off at now). NULL for one
	 * that reads the disk's state (the simulated disk's model). */
	void (*issued)(void *ctx, int64_t now, uint64_t off, uint32_t len);
	void (*observe)(void *ctx, int64_t now, uint64_t end_off, bool transfer);
};

struct avfs_sched_conf {
	/* traffic mixer (papers/001 §3.3) */
	int64_t margin_ns;	/* m: desired completion margin */
	int64_t urgent_ns;	/* e: EDF window (< m) */
	int64_t be_age_ns;	/* BE requests older than this go first */
	/* semi-preemptible I/O (papers/003) */
	uint32_t chunk;		/* bytes per command, 0 = no chunking */
	bool jit;		/* just-in-time seek (needs a predictor) */
	int64_t jit_offset_ns;	/* arrive this early, against prediction error */
	uint64_t split_bytes;	/* split seeks longer than this (0 = never; needs predictor) */
	/* traffic mixer: how RT requests are held and ordered — false: papers/001's batches
	 * (hold until H, then the whole held set as one batch); true: the sweep (a C-SCAN that
	 * never stops: held between two turns while every request can wait, the hold time over
	 * the sweep's order from the head; a turn let go runs to its end, and takes the requests
	 * that arrive ahead of the head while every request keeps half the margin) */
	bool sweep;
	/* traffic mixer: a command may carry the pending requests that follow it on the device
	 * (same direction and class: a stream's next buffers) up to this many bytes, 0 = one
	 * request a command; at most AVFS_SCHED_COALESCE_MAX requests */
	uint32_t coalesce;
	/* traffic mixer: ... and up to this many (if more) while what it carries next is read
	 * ahead (io->prefetch: the engine's read-ahead of an unreserved deadline reader); a
	 * client's own requests, writes and best effort stay within `coalesce` */
	uint32_t coalesce_ahead;
	/* traffic mixer: in the reduced C-SCAN window a command carries its followers whatever
	 * they are due, as long as the request due first that it leaves can spare the time
	 * (true), or only those the window takes, due before t_d + m (false, the default: the
	 * admission model counts the mixer so; docs/DESIGN.md, "Coalescing in the reduced
	 * window") */
	bool reduced_carry;
	/* traffic mixer: a command picked by the EDF or reduced window carries the read-ahead
	 * (io->prefetch) that follows it whatever it is due, as long as the request due first
	 * that it leaves can spare the time (true, the default), or only what the window takes
	 * (false). Read-ahead is the engine's, for unreserved deadline readers only, so a
	 * reserved set — what admission counts — is served alike either way */
	bool prefetch_carry;
	/* traffic mixer, hold = batch: for this long after an RT request missed its deadline,
	 * the EDF and reduced windows stand aside and the batch goes on in its C-SCAN order,
	 * coalescing, as while the request due first cannot be met (overload; 0: only then) */
	int64_t recover_ns;
	/* traffic mixer, hold = batch: the order of a released batch's requests in the normal
	 * (C-SCAN) window — false: by LBA from the cursor; true: of the first satf_window runs
	 * in that order (a run: requests that follow each other on the disk, which one command
	 * carries), the one the predictor says the head reaches first (seek and rotational
	 * wait), provided the requests it jumps keep the margin m by the service-time model
	 * (else C-SCAN's). Needs a predictor. */
	bool satf;
	unsigned satf_window;
	/* device */
	struct avfs_svc_model model;
	bool rotational;	/* false: several commands in flight, EDF for RT (SPEC §5.6) */
	unsigned depth;		/* commands in flight on non-rotational devices */
	/* mq-deadline-like baseline (cscan) */
	int64_t read_expire_ns, write_expire_ns;
	unsigned fifo_batch, writes_starved;
	/* scan-edf baseline: deadlines rounded to this quantum, LBA order within one */
	int64_t scan_edf_quantum_ns;
	struct avfs_sched_predictor pred;
};

#define AVFS_SCHED_COALESCE_MAX 256	/* requests one coalesced command carries at the most */

/* Defaults: m 500 ms, e 100 ms, BE age 2 s, chunking off, JIT off (offset 1 ms), no
 * splitting, batches in LBA order (satf window 4), coalescing up to 4 MiB, the avfs-250g
 * model, rotational, depth 1;
 * read_expire 500 ms, write_expire 5 s, fifo_batch 16, writes_starved 2; scan-edf quantum
 * 100 ms. */
void avfs_sched_conf_default(struct avfs_sched_conf *c);

/* Settings by name (SPEC §5, STYLE 15): "margin", "urgent", "be-age", "hold", "order",
 * "satf-window", "coalesce", "chunk", "jit", "jit-offset", "split", "depth", "read-expire", "write-expire", "fifo-batch",
 * "writes-starved", "scan-edf-quantum". Values take units (500ms, 2s, 256K, on/off).
 * 0, -ENOENT (unknown name) or -ERANGE / -EINVAL with why. */
int avfs_sched_conf_set(struct avfs_sched_conf *c, const char *name, const char *value,
			char *why, size_t whylen);
/* The same from one "NAME=VALUE" argument (the tools' --set). 0, -EINVAL (no '=' or no name)
 * or avfs_sched_conf_set's errors, with why. */
int avfs_sched_conf_set_pair(struct avfs_sched_conf *c, const char *pair, char *why,
			     size_t whylen);
/* Check a whole configuration (e < m, ranges). 0 or -EINVAL with why. */
int avfs_sched_conf_check(const struct avfs_sched_conf *c, char *why, size_t whylen);
/* The settings table, for --help and avfs-admin: name, default, unit, range, meaning. */
struct avfs_sched_setting_info {
	const char *name, *unit, *range, *help;
};
const struct avfs_sched_setting_info *avfs_sched_settings(size_t *n);

/* T_S(R) of papers/001 eq. (1): alpha = 0 when the request starts where the previous one
 * in execution order ended. */
double avfs_svc_time(const struct avfs_svc_model *m, uint64_t off, uint64_t len, bool sequential);

/* What semi-preemptible I/O did (papers/003), for statistics; all zero for policies without it. */
struct avfs_sched_counters {
	uint64_t jit_waits;	/* JIT: a command held back for its predicted rotational slack */
	int64_t jit_wait_ns;	/* the slack so waited, as predicted (less the JIT offset) */
	uint64_t seek_splits;	/* SEEK commands issued halfway before a long seek */
	uint64_t chunks;	/* commands that carried part of a larger request */
	uint64_t coalesced;	/* requests carried by another request's command (coalescing) */
	uint64_t satf_picks;	/* order = satf: commands that jumped the batch's C-SCAN order */
	uint64_t overload;	/* tm: decisions in C-SCAN order because the RT request due first
				 * could not be met any more (its deadline within its own
				 * modelled service time): a stall, or more than the disk carries */
};

struct avfs_sched_ops {
	const char *name;
	int (*init)(void **ctx, const struct avfs_sched_conf *conf);
	void (*destroy)(void *ctx);
	/* take a request (io->arrival is set). 0 or -errno (nothing kept). */
	int (*submit)(void *ctx, struct avfs_io *io, int64_t now);
	/* the device can take a command: what now? */
	void (*next)(void *ctx, int64_t now, struct avfs_sched_cmd *cmd);
	/* the command dispatched by next() finished with res (bytes or -errno). Returns true when
	 * cmd->io is complete (all bytes done, or failed), false when more chunks remain. */
	bool (*done)(void *ctx, const struct avfs_sched_cmd *cmd, int64_t now, int res);
	size_t (*pending)(void *ctx);	/* requests held (not yet complete) */
	/* withdraw a request no command of which is on the device: 0 (it is forgotten; the
	 * caller completes it), -EBUSY (a command is out), -ENOENT. NULL: not supported. */
	int (*cancel)(void *ctx, struct avfs_io *io);
	/* the counters so far. NULL: the policy has none (all zero). */
	void (*counters)(void *ctx, struct avfs_sched_counters *out);
};

extern const struct avfs_sched_ops avfs_sched_tm;
extern const struct avfs_sched_ops avfs_sched_fifo;
extern const struct avfs_sched_ops avfs_sched_cscan;
extern const struct avfs_sched_ops avfs_sched_edf;
extern const struct avfs_sched_ops avfs_sched_scan_edf;

/* By name: "tm", "fifo", "cscan", "edf", "scan-edf". NULL if unknown. */
const struct avfs_sched_ops *avfs_sched_lookup(const char *name);

/* A scheduler instance: a policy, its state, and the in-flight accounting. */
struct avfs_sched {
	const struct avfs_sched_ops *ops;
	void *ctx;
	struct avfs_sched_conf conf;
	unsigned inflight;
	unsigned max_inflight;	/* 1 on rotating devices */
};

int avfs_sched_init(struct avfs_sched *s, const struct avfs_sched_ops *ops,
		    const struct avfs_sched_conf *conf);
void avfs_sched_destroy(struct avfs_sched *s);
/* Submit: a request whose deadline has already passed is refused with -ETIME (nothing kept);
 * zero or huge lengths with -EINVAL. */
int avfs_sched_submit(struct avfs_sched *s, struct avfs_io *io, int64_t now);
/* The next thing to do, honouring the in-flight limit (IDLE while the device is full). */
void avfs_sched_next(struct avfs_sched *s, int64_t now, struct avfs_sched_cmd *cmd);
bool avfs_sched_done(struct avfs_sched *s, const struct avfs_sched_cmd *cmd, int64_t now, int res);
/* The policy's semi-preemptible I/O counters (zero where it has none). */
void avfs_sched_counters(const struct avfs_sched *s, struct avfs_sched_counters *out);
/* Withdraw a queued request (see ops.cancel). -EOPNOTSUPP for policies without it. */
int avfs_sched_cancel(struct avfs_sched *s, struct avfs_io *io);

#endif
