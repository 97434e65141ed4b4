/*
 * fsck.h — the file system checker of the core (SPEC §10, §14): verifies a mounted
 * struct avfs_fs in memory against every invariant of the format and, on request, repairs it
 * into the running transaction. Sans-I/O: it reads no device and prints nothing; the driver
 * (tools/fsck.avfs.c) mounts, reports and commits.
 */
#ifndef AVFS_FSCK_H
#define AVFS_FSCK_H

#include <stddef.h>
#include <stdint.h>

#include "fs.h"

struct avfs_fsck_report {
	/* what the file system holds (after repairs, with AVFS_FSCK_REPAIR) */
	uint64_t inodes;		/* live inodes */
	uint64_t files, dirs, symlinks, other;
	uint64_t data_blocks_used;	/* data blocks reachable from live inodes */
	uint64_t meta_blocks_used;	/* dynamic metadata blocks (maps, directories, symlinks,
					 * extended attributes) */
	uint64_t dir_entries;		/* names in directories ("." and ".." not stored) */
	/* inodes with nlink 0 and no name: unlinked while open when the file system stopped.
	 * Expected after a crash (the next read-write mount frees them), so not errors and not
	 * among the findings; freed with AVFS_FSCK_REPAIR (then no longer in inodes, files) */
	uint64_t orphans;
	uint64_t errors;		/* findings (each is one line of findings[], see below) */
	uint64_t fixed;			/* findings repaired (AVFS_FSCK_REPAIR) */
	/* one human-readable line per finding, e.g. "inode 17: nlink 2 but 1 name"; past
	 * AVFS_FSCK_MAX_FINDINGS lines a last one says how many more were counted */
	char **findings;
	size_t nfindings;
};

#define AVFS_FSCK_MAX_FINDINGS 10000

#define AVFS_FSCK_REPAIR 1u	/* repair what is found, into the running transaction */

/*
 * Check fs (freshly mounted: no transaction running, no deferred frees). With
 * AVFS_FSCK_REPAIR every repair goes through fs_dirty / fs_set_bit, so the caller's
 * avfs_fsio_sync commits it; unreachable inodes are linked into /lost+found (created if
 * missing) as "#<ino>". rep is filled from zero (free it with avfs_fsck_report_free even on
 * error). Returns 0 — findings are not failures — or -ENOMEM, -EROFS (REPAIR on a read-only
 * fs), -EINVAL (NULL argument), or an error of the commit hook.
 * Bounded in time and memory by the geometry: O(inodes + metadata blocks + data blocks).
 */
int avfs_fsck_check(struct avfs_fs *fs, unsigned flags, struct avfs_fsck_report *rep);

/*
 * The same, calling commit(arg) at consistent points whenever the running transaction has
 * grown past a quarter of the journal, so that a large repair never makes a transaction
 * the journal cannot hold (the driver commits, e.g. with avfs_fsio_sync). commit may be
 * NULL. Its non-zero return stops the check and is returned.
 */
typedef int (*avfs_fsck_commit_fn)(void *arg);
int avfs_fsck_check_commit(struct avfs_fs *fs, unsigned flags, struct avfs_fsck_report *rep,
			   avfs_fsck_commit_fn commit, void *arg);

/* Free the findings; rep may be zeroed or already freed. */
void avfs_fsck_report_free(struct avfs_fsck_report *rep);

#endif
