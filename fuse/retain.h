/*
 * retain.h — runs the per-directory space rules (fs/space.h) for avfsd: before a FUSE write,
 * create or preallocation that would allocate below a rule, and from the daemon's periodic
 * tick. It unlinks the victims space.c names (committing when the running transaction is
 * full), logs each through the daemon's hook and counts them for `avfs-admin stats`. It does
 * not choose victims nor parse rules (space.c), nor decide when the tick runs (the daemon).
 */
#ifndef AVFS_RETAIN_H
#define AVFS_RETAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "space.h"	/* struct avfs_retain_stats */

struct avfs_engine;
struct avfs_fs;
struct avfs_space;
struct avfs_retain;

/* A line for the daemon's log: a deletion (warning false), or a deletion that failed (true). */
typedef void (*avfs_retain_log_fn)(void *ctx, bool warning, const char *line);

/* A name retention removed: name in dir, of ino (the front end tells the kernel). */
typedef void (*avfs_retain_deleted_fn)(void *ctx, uint64_t dir, uint64_t ino, const char *name);

struct avfs_retain_hooks {
	avfs_retain_log_fn log;		/* NULL: no log */
	void *log_ctx;
	avfs_retain_deleted_fn deleted;	/* NULL: nobody to tell */
	void *deleted_ctx;
};

/* The rules of fs (a walk of its tree). 0, -ENOMEM. */
int avfs_retain_new(struct avfs_retain **out, struct avfs_engine *e, struct avfs_fs *fs,
		    const struct avfs_retain_hooks *hooks);
void avfs_retain_free(struct avfs_retain *r);
struct avfs_space *avfs_retain_space(struct avfs_retain *r);
const struct avfs_retain_stats *avfs_retain_stats(const struct avfs_retain *r);

/* Make room for need more bytes below ino (a file, or a directory for a create; 0: the
 * periodic check of every rule): delete what the rules say must go. now: the loop's time;
 * wall: time stamps. 0, or -EDQUOT (a quota below which ino lies would be passed), -ENOMEM. */
int avfs_retain_room(struct avfs_retain *r, uint64_t ino, uint64_t need, int64_t now,
		     int64_t wall);

#endif
