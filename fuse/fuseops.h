/*
 * fuseops.h — avfsd's FUSE front end (libfuse3's low-level API, SPEC §9): the mount, and the
 * POSIX operations mapped onto the file system core (namespace and attributes, answered at
 * once from memory) and onto the engine (reads and writes, answered when their device requests
 * complete; fsync when the commit after it is on disk), with read-ahead (readahead.c).
 * It reads no clock (the loop hands it the time) and never blocks on the disk.
 */
#ifndef AVFS_FUSEOPS_H
#define AVFS_FUSEOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct avfs_engine;
struct avfs_fs;
struct avfs_fuse;

/* What close(2) of a file on the mount waits for (sync(2) and syncfs(2) reach no FUSE daemon
 * here, fuseops.c's op_flush says why). */
enum avfs_fuse_close {
	AVFS_CLOSE_SYNC,	/* the default: a handle opened O_RDONLY | O_NONBLOCK, as sync(1)
				 * opens its FILE arguments (`sync -f FILE`), answers once everything
				 * written before it is durable; other closes at once */
	AVFS_CLOSE_DURABLE,	/* every close so (costly: a commit per file written) */
	AVFS_CLOSE_ASYNC,	/* none: durability through fsync and the periodic commit only */
};

struct avfs_fuse_conf {
	const char *mountpoint;
	bool allow_other;
	bool ro;		/* mounted read-only (the kernel refuses writes) */
	bool noacl;		/* no POSIX ACLs: the kernel checks the modes alone (as ext4's
				 * noacl; the fs is mounted AVFS_MOUNT_NOACL) */
	const char *fsname;	/* the mount's source, as mount(8) and df show it (the device) */
	const char *options;	/* more mount options for FUSE ("nosuid,noatime"), or NULL */
	const char *socket;	/* shown in the user.avfs.socket attribute of every file */
	int atime;		/* enum avfs_atime (fs.h): relatime unless set */
	int close;		/* enum avfs_fuse_close: what a close(2) waits for (op_flush) */
	/* where the space rules' deletions are logged (retain.h), NULL: nowhere */
	void (*log)(void *ctx, bool warning, const char *line);
	void *log_ctx;
};

/* Mount the file system at c->mountpoint. 0, or -errno with why. */
int avfs_fuse_new(struct avfs_fuse **out, struct avfs_engine *e, struct avfs_fs *fs,
		  const struct avfs_fuse_conf *c, char *why, size_t whylen);
/* Unmount and free. */
void avfs_fuse_free(struct avfs_fuse *fu);
/* The descriptor to watch for requests. */
int avfs_fuse_fd(const struct avfs_fuse *fu);
/* The descriptor is readable: take one request and answer it (or start its I/O). now: the
 * loop's time; wall: the file system's time stamps (ns since the epoch). 0, -EAGAIN (nothing
 * there after all), or -ENODEV once the mount is gone. */
int avfs_fuse_process(struct avfs_fuse *fu, int64_t now, int64_t wall);
/* n commits are on disk (err 0), or a commit failed: fsync replies waiting for it go. */
void avfs_fuse_committed(struct avfs_fuse *fu, uint64_t n, int err);
/* The periodic check of the per-directory space rules (retain.h): retention deletes what passed
 * a high mark. The daemon calls it about once a second. */
void avfs_fuse_retain_tick(struct avfs_fuse *fu, int64_t now, int64_t wall);
/* The space rules' counters, NULL on a read-only mount. */
struct avfs_retain_stats;
const struct avfs_retain_stats *avfs_fuse_retain_stats(const struct avfs_fuse *fu);
/* The data of ino changed behind the mount (a libavio write): forget what was read ahead. */
void avfs_fuse_invalidate(struct avfs_fuse *fu, uint64_t ino);

#endif
