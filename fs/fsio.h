/*
 * fsio.h — the synchronous driver of the file system core: it performs the core's plans and
 * the data I/O of reads and writes on a disk backend, one request at a time. For mkfs.avfs,
 * fsck.avfs, tests and the crash harness; avfsd drives the same core asynchronously.
 */
#ifndef AVFS_FSIO_H
#define AVFS_FSIO_H

#include "disk.h"
#include "fs.h"

struct avfs_mount_report {
	uint64_t replayed_txn, replayed_blocks;
	uint64_t repaired_primary;	/* primary copies taken from the backup region */
	uint64_t repaired_backup;	/* backup copies found bad (rewritten unless read-only) */
	uint64_t rewrite_failed;	/* of repaired_primary: the home refused the rewrite */
	uint64_t lost_blocks;		/* bad in both copies (FORCE mounts only) */
	uint64_t orphans_freed;		/* inodes unlinked while open before a crash, freed */
	bool used_backup_super;
	uint64_t journal_unreadable;	/* journal blocks that could not be read */
	/* FORCE mounts only: the journal could not be trusted from some point on (journal_why
	 * says where and why); what replayed before it stays, the rest is dropped and the next
	 * anchor written fresh (unless read-only) */
	bool journal_discarded;
	char journal_why[200];
};

/* How far long work is, for a tool's progress line: fn(arg, step, done, total) with done and
 * total in bytes, called as the work goes (often: the tool decides when to show it). */
struct avfs_fsio_progress {
	void (*fn)(void *arg, const char *step, uint64_t done, uint64_t total);
	void *arg;
};

struct avfs_fsio {
	struct avfs_disk *d;
	const struct avfs_fsio_progress *pg;	/* while mounting; NULL: none */
	struct avfs_fs *fs;
	uint64_t commits;		/* transactions committed through this driver */
	void (*on_commit)(void *arg, uint64_t n);	/* after each commit is on disk (tests) */
	void *on_commit_arg;
	size_t autocommit;		/* commit when this many blocks are dirty */
	char why[256];
};

#define AVFS_MOUNT_FORCE (1u << 1)	/* fsck: load even when a block is bad in both copies */
#define AVFS_MOUNT_CHECK_BACKUP (1u << 2)	/* also read and verify every backup copy */
#define AVFS_MOUNT_KEEP_ORPHANS (1u << 3)	/* fsck: leave unlinked inodes to the check */

/* Execute a plan on d. 0 or the first -errno. */
int avfs_fsio_run(struct avfs_disk *d, const struct avfs_plan *p);

/* Format d. o->size 0 = the whole device. 0 or -errno with why. */
int avfs_fsio_mkfs(struct avfs_disk *d, const struct avfs_mkfs_opts *o, struct avfs_super *sb,
		   char *why, size_t whylen);
/* The same, saying how far the writing is through pg (NULL: as avfs_fsio_mkfs). */
int avfs_fsio_mkfs_progress(struct avfs_disk *d, const struct avfs_mkfs_opts *o,
			    struct avfs_super *sb, const struct avfs_fsio_progress *pg, char *why,
			    size_t whylen);

/* Mount: superblock (or its backup), journal replay, load with repair from the backup region,
 * then (unless AVFS_MOUNT_RDONLY) write the repairs and the replayed blocks home, and free
 * (one commit) the inodes a crash left allocated with nlink 0 (unless KEEP_ORPHANS).
 * 0 or -errno with why. */
int avfs_fsio_mount(struct avfs_disk *d, unsigned flags, struct avfs_fsio **out,
		    struct avfs_mount_report *rep, char *why, size_t whylen);
/* Free the orphans a crash left (after a mount with AVFS_MOUNT_KEEP_ORPHANS, e.g. once a check
 * passed), committing. How many, or -errno (-EROFS on a read-only mount). */
int64_t avfs_fsio_free_orphans(struct avfs_fsio *io);
/* The same, saying how far the loading of the metadata is through pg (NULL: none). */
int avfs_fsio_mount_progress(struct avfs_disk *d, unsigned flags,
			     const struct avfs_fsio_progress *pg, struct avfs_fsio **out,
			     struct avfs_mount_report *rep, char *why, size_t whylen);
/* Free the orphans still open (nothing can use them after this), commit, empty the journal,
 * free memory. The disk stays open (the caller's). */
int avfs_fsio_unmount(struct avfs_fsio *io);
/* Free without writing anything (a crash, or after a read-only mount). */
void avfs_fsio_abandon(struct avfs_fsio *io);

int avfs_fsio_sync(struct avfs_fsio *io);	/* commit the running transaction */
/* Commit if the transaction has grown past io->autocommit blocks, or the core says a commit
 * is due (avfs_fs_commit_due). Callers of the core's operations call it after each one; the
 * fsio operations below also commit and retry once when the core answers -EAGAIN. */
int avfs_fsio_maybe_commit(struct avfs_fsio *io);

/* Execute a data plan (fs.h) in order: READ ops land in dst, ZERO ops clear it, WRITE ops take
 * the caller's bytes from src (reading kept pages first). 0 or the first -errno. */
int avfs_fsio_run_data(struct avfs_fsio *io, const struct avfs_data_plan *p, void *dst,
		       const void *src);
/* Read, write, truncate through the core's data plans. */
int64_t avfs_fsio_read(struct avfs_fsio *io, uint64_t ino, uint64_t off, void *buf, size_t len);
int64_t avfs_fsio_write(struct avfs_fsio *io, uint64_t ino, uint64_t off, const void *buf,
			size_t len);
int avfs_fsio_truncate(struct avfs_fsio *io, uint64_t ino, uint64_t size);
/* avfs_fs_fallocate, zeroing the old last page's stale tail first when the size grows. */
int avfs_fsio_fallocate(struct avfs_fsio *io, uint64_t ino, uint64_t off, uint64_t len,
			bool keep_size);
/* avfs_fs_punch, then zeros written over the edges it leaves (FALLOC_FL_PUNCH_HOLE). */
int avfs_fsio_punch(struct avfs_fsio *io, uint64_t ino, uint64_t off, uint64_t len);

/* Resolve an absolute path ("/a/b") to an inode. 0 or -errno. */
int avfs_fsio_resolve(struct avfs_fsio *io, const char *path, uint64_t *ino);

int64_t avfs_fsio_now(void);

#endif
