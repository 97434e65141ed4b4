/*
 * avfsd_i.h — private state of the daemon shared by its event loop (daemon/avfsd.c) and its
 * FUSE front end (fuse/fuseops.c). Single-threaded: everything here is touched only by the
 * event loop thread. Not installed.
 */
#ifndef AVFS_AVFSD_I_H
#define AVFS_AVFSD_I_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <liburing.h>

#include "disk.h"
#include "fs.h"
#include "fsio.h"
#include "admit.h"
#include "iosched.h"
#include "proto.h"
#include "rotpred.h"

struct daemon;
struct dreq;

typedef void (*dreq_cb)(struct daemon *dm, struct dreq *q, int res);

/* One device request through the scheduler (data or metadata). */
struct dreq {
	struct avfs_io io;	/* first: the scheduler hands it back */
	dreq_cb cb;
	void *arg;
	uint8_t *buf;		/* aligned memory the device reads into / writes from */
	bool data_write;	/* counts for ordered-mode commits */
	unsigned gen;		/* commit generation it belongs to */
	struct dreq *next;	/* on an op's list */
	uint64_t stream;	/* the reservation of its libavio request, 0 none (traces) */
	int64_t service_ns;	/* time its commands spent on the device (traces) */
	bool spare;		/* a parked stream request sent as best effort in idle time */
	bool dispatched;	/* a command of it has gone to the device: no cancel any more */
};

/* ---- clients (libavio, avfs-admin) ---- */

struct client {
	int fd;
	uint32_t uid, gid, pid;
	bool dead;
	int refs;		/* requests of this client still in the daemon */
	unsigned inflight;
	uint8_t *in;		/* received bytes */
	size_t inlen, incap;
	uint8_t *out;		/* replies not yet sent */
	size_t outlen, outoff, outcap;
	bool pollout;
	bool throttled;		/* not reading requests until its replies drain */
	int64_t throttled_since;
	uint64_t read_bytes;	/* inline read data in flight */
	uint8_t *shm;		/* the client's memfd, mapped */
	size_t shmlen;
	struct { uint64_t ino; uint32_t access; uint64_t stream; } *handles;	/* stream: 0 none */
	uint32_t nhandles;
	struct cio *ios;	/* requests in the daemon */
	int idx;
	uint64_t trace_tag;	/* avfs-admin trace: its request, 0 none */
	int64_t trace_until;
};

struct cio {			/* one libavio request */
	struct client *c;
	uint64_t tag;
	bool write, canceled;
	int pending;
	int64_t res;
	uint64_t nbytes;
	uint8_t *data;		/* bounce (inline) or NULL (shm) */
	uint8_t *target;	/* where data goes/comes: bounce or shm */
	struct dreq *parts;
	struct cio *next;
	uint64_t stream;	/* the reservation it was charged to, 0 none */
	int64_t deadline;	/* as scheduled: 0 best effort */
	bool parked;		/* above its stream's rate: held until its tokens or idle time */
	uint64_t want;		/* bytes asked for */
	int64_t client_deadline;	/* the client's own (0: none) */
	struct cio *park_next;
};

/* A reservation (SPEC §7): an admitted service, its bandwidth bucket and its QoS. */
struct dstream {
	uint64_t id;		/* the admitter's */
	uint64_t ino;
	struct client *owner;	/* NULL: detached (avfs-admin reserve), ended by id */
	uint32_t uid, pid;
	struct avfs_service_req req;
	struct avfs_bucket bucket;
	struct avfs_qos qos;
	int64_t since;
	struct cio *park_head, *park_tail;	/* reads above its rate, in order */
};

/* Commands in flight on a non-rotational device unless "depth" says otherwise (SPEC §5.6). */
#define AVFSD_FLASH_DEPTH 16

struct daemon {
	const char *dev_path, *mnt_path;
	struct avfs_disk *d;
	struct avfs_fs *fs;
	struct avfs_sched sched;
	struct avfs_rotpred rotpred;	/* jit/split on a real disk: the platter's phase */
	struct avfs_hdd *geom;		/* --disk-model's mechanics, for rotpred */
	bool predicting;		/* rotpred is the scheduler's predictor */
	bool depth_set;			/* "depth" was given (--set, --config) */
	struct io_uring ring;
	struct fuse_session *se;
	struct fuse_buf fbuf;
	int fuse_fd;
	int listen_fd;
	char sock_path[108];
	int sig_fd;
	int lock_fd;
	uint64_t mnt_dev;	/* st_dev of the mount, for libavio's OPEN */
	struct client **clients;
	size_t nclients, capclients;
	int64_t hold_at;	/* the scheduler's hold timer, 0 = none */
	struct avfs_sched_cmd *slots;	/* commands on the device */
	unsigned nslots;
	/* ordered-mode commits */
	struct avfs_plan *plan;
	size_t plan_i;
	unsigned gen;			/* current commit generation (data writes tag with it) */
	unsigned writes[2];		/* data writes in flight per generation parity */
	bool commit_wanted;
	int64_t next_commit;		/* periodic commit time */
	struct fsync_wait *fsyncs;	/* replies waiting for a commit */
	uint64_t commits_done;
	bool flush_inflight;
	bool plan_busy;			/* a write of the plan is on its way */
	bool exiting;
	bool allow_other;
	int log_level;
	uint64_t stats_rt, stats_be, stats_etime;
	/* admission control and QoS statistics (daemon/streams.c) */
	struct avfs_admit *admit;
	struct dstream **streams;
	size_t nstreams, capstreams;
	struct avfs_qos qos_all;	/* every RT request, reserved or not */
	int64_t stats_since, busy_ns, busy_from;
	unsigned busy_n;		/* commands on the device */
	int64_t *slot_at;		/* dispatch time of each command on the device */
	uint64_t head;			/* where the last command ended */
	uint64_t seek_bins[8];		/* seek distances: 0, <1, <5, <20, <50, <100, <200, ≥200 GB */
	uint64_t be_bytes, be_done, rt_bytes;
	size_t max_pending;
	uint64_t be_pending;		/* BE requests in the scheduler, spare ones not counted */
	size_t nparked;			/* parked libavio reads of all streams */
	char *trace_buf;		/* CSV lines not yet sent to the tracing clients */
	size_t trace_len, trace_cap;
	/* FUSE read-ahead inside the data block: a few recently read ranges */
	struct ra_entry {
		uint64_t ino, off;
		size_t len;
		uint8_t *buf;
		uint64_t used;
	} ra[8];
	uint64_t ra_clock;
};

/* Forget cached read-ahead of ino (it was written, truncated or deleted). */
void avfsd_ra_invalidate(struct daemon *dm, uint64_t ino);

struct fsync_wait {
	fuse_req_t req;
	uint64_t after;		/* reply once commits_done > after */
	struct fsync_wait *next;
};

int64_t avfsd_now(void);
void avfsd_log(struct daemon *dm, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queue a device request through the scheduler. cb runs on completion (res bytes / -errno). */
int avfsd_submit(struct daemon *dm, struct dreq *q);
struct dreq *avfsd_dreq(uint64_t off, uint64_t len, bool write, void *buf, dreq_cb cb, void *arg);
void avfsd_dreq_free(struct dreq *q);
/* Ask for a commit; fsync waiters are answered when it is on disk. */
void avfsd_commit_soon(struct daemon *dm);
void *avfsd_alloc(size_t len);

/* Submit every part of io (a parked read let go): a part the scheduler refuses fails. */
void avfsd_cio_submit(struct daemon *dm, struct cio *io);
/* Queue a reply to a client (a header and up to two parts of payload). */
void avfsd_client_send(struct daemon *dm, struct client *c, uint16_t type, uint64_t tag,
		       const void *a, size_t alen, const void *b, size_t blen);

/* daemon/streams.c: reservations, admission, QoS statistics, traces */
int avfsd_streams_init(struct daemon *dm, const char *config, char *why, size_t whylen);
void avfsd_streams_fini(struct daemon *dm);
void avfsd_handle_reserve(struct daemon *dm, struct client *c, uint64_t tag,
			  const struct avfs_msg_reserve *m);
void avfsd_handle_release(struct daemon *dm, struct client *c, uint64_t tag,
			  const struct avfs_msg_release *m);
void avfsd_handle_stats(struct daemon *dm, struct client *c, uint64_t tag,
			const struct avfs_msg_stats *m);
void avfsd_handle_admin(struct daemon *dm, struct client *c, uint64_t tag, const char *cmd,
			size_t len);
void avfsd_handle_trace(struct daemon *dm, struct client *c, uint64_t tag,
			const struct avfs_msg_trace *m);
/* The client is going: its reservations end, its trace stops. */
void avfsd_client_streams_end(struct daemon *dm, struct client *c);
/* A libavio request of nbytes on handle h: its reservation (0 none) and the deadline it is
 * scheduled with — the client's, or the service's if it gave none; 0 when the stream is
 * above its rate (best effort). */
int64_t avfsd_stream_charge(struct daemon *dm, struct client *c, uint32_t h, uint64_t nbytes,
			    int64_t deadline, int64_t now, uint64_t *stream, bool *park);
/* Hold io (a read above its stream's rate, parts built, none submitted) in its stream. */
void avfsd_stream_park(struct daemon *dm, struct cio *io);
/* Take io out of its stream's parked requests (a cancel): true if it was parked. */
bool avfsd_stream_unpark(struct daemon *dm, struct cio *io);
/* Send parked reads whose tokens are due (real-time) or, with no other best effort waiting,
 * as spare best effort. Returns when it wants to be called again (0: no parked read). */
int64_t avfsd_streams_tick(struct daemon *dm, int64_t now);
/* A libavio request completed: its stream's and the global QoS. */
void avfsd_stream_done(struct daemon *dm, const struct cio *io, int64_t now);
/* Device commands: utilization and seek statistics. */
void avfsd_cmd_start(struct daemon *dm, unsigned slot, const struct avfs_sched_cmd *cmd,
		     int64_t now);
void avfsd_cmd_end(struct daemon *dm, unsigned slot, struct dreq *q, int64_t now);
/* A device request completed: BE statistics and the trace line. */
void avfsd_dreq_done(struct daemon *dm, const struct dreq *q, int res, int64_t now);
/* Send buffered trace lines; end traces whose time is up. Returns the next time it wants. */
int64_t avfsd_trace_tick(struct daemon *dm, int64_t now);

/* fuse/fuseops.c */
extern const struct fuse_lowlevel_ops avfsd_fuse_ops;

#endif
