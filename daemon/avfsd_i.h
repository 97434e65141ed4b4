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
#include "iosched.h"

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
};

struct client;

struct daemon {
	const char *dev_path, *mnt_path;
	struct avfs_disk *d;
	struct avfs_fs *fs;
	struct avfs_sched sched;
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

/* fuse/fuseops.c */
extern const struct fuse_lowlevel_ops avfsd_fuse_ops;

#endif
