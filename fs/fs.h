/*
 * fs.h — the AVFS file system core (sans-I/O, SPEC §2): format geometry, the in-memory
 * metadata (every live metadata block is held as its 4 KiB image), inodes, directories,
 * block maps, ZRR allocation, and the journal. It never touches a device: operations change
 * memory and return *plans* (ordered writes and flushes) that a driver executes; the data
 * I/O of a file range is a data plan (reads, zero-fills, read-modify-writes). Operations
 * reserve their transaction credits first and fail whole ("transactions" below). Drivers:
 * fs/fsio.c (synchronous, for tools and tests), avfsd's event loop and the simulator.
 */
#ifndef AVFS_FS_H
#define AVFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format.h"

struct avfs_fs;

/* ---- format ---- */

/* A measured service-time model (mkfs.avfs --profile), in the superblock's units. */
struct avfs_mkfs_measured {
	uint64_t rate_max, rate_min;	/* bytes/s at LBA 0 and at the end */
	uint64_t seek_avg_ns, rotation_ns;
};

struct avfs_mkfs_opts {
	uint64_t size;		/* device bytes */
	uint32_t block_shift;	/* data block size log2, 16..32 (0 = 22, 4 MiB) */
	uint32_t zones;		/* 0 = SPEC §4 rule; else that many (<= AVFS_ZONES_MAX) */
	uint64_t seed;		/* first ZRR zone, UUID */
	uint64_t inodes;	/* 0 = default */
	uint64_t journal_blocks;	/* 0 = default */
	uint64_t dyn_blocks;	/* dynamic metadata blocks, 0 = default */
	uint32_t alloc_policy;	/* 0 ZRR, 1 contiguous first-fit in runs (baseline), 2 ZRR in runs */
	uint32_t alloc_run;	/* policies 1, 2: blocks a run (0 = AVFS_ALLOC_RUN_BYTES' worth) */
	const char *disk_model;	/* fills the service-time parameters; NULL = avfs-250g */
	const struct avfs_mkfs_measured *measured;	/* or these, as model "profiled" */
	int64_t now_ns;		/* format time (for timestamps) */
};

/* Compute the geometry of a format. 0, -EINVAL (bad option, with why), -ENOSPC (device
 * too small for even one data block, with why). */
int avfs_fs_geometry(const struct avfs_mkfs_opts *o, struct avfs_super *sb, char *why,
		     size_t whylen);

/* ---- plans: what a driver must do, in order ---- */

enum avfs_plan_kind { AVFS_PLAN_WRITE, AVFS_PLAN_FLUSH };

struct avfs_plan_op {
	uint8_t kind;
	uint8_t fua;
	uint64_t off;		/* device byte offset, 4 KiB aligned */
	uint32_t len;
	const uint8_t *buf;	/* owned by the plan */
};

struct avfs_plan {
	struct avfs_plan_op *ops;
	size_t n, cap;
	uint8_t **bufs;		/* buffers to free with the plan */
	size_t nbufs, capbufs;
	uint64_t tail_pos, tail_seq;	/* a checkpoint: the journal tail to adopt when done */
	bool moves_tail;	/* a checkpoint plan (avfs_fs_checkpoint) */
	uint64_t tail_abs;	/* ... its tail as an absolute log position */
	/* a commit with the lazy checkpoint on: its blocks and their committed images (in the
	 * plan's buffers), kept for the checkpoint once the plan is done; the log after it */
	uint64_t *ck_home;
	const uint8_t **ck_img;
	size_t nck;
	uint64_t end_abs, end_seq;
	bool after_ckpt;	/* it reuses log space: run it only after a checkpoint of every
				 * transaction before it (avfs_fs_checkpoint) is done */
	uint64_t *freed;	/* data blocks to release to the allocator when done */
	size_t nfreed;
	uint64_t *sfreed;	/* small-file units to release when done (fs/small.c) */
	size_t nsfreed;
};

void avfs_plan_free(struct avfs_plan *p);

/* ---- mkfs ---- */

/* Build a freshly formatted file system in memory and the plan that writes it (primary,
 * backup, journal anchors). The fs stays usable (mounted) after the plan is done. */
int avfs_fs_format(const struct avfs_super *geometry, int64_t now_ns, struct avfs_fs **out,
		   struct avfs_plan **plan);

/* ---- mount (driven by fs/fsio.c or any driver) ---- */

#define AVFS_MOUNT_RDONLY (1u << 0)	/* never produce writes (fsck -n) */
#define AVFS_MOUNT_NOACL (1u << 4)	/* no POSIX ACLs (as ext4's -o noacl): ACL attributes
					 * refused and not listed, creates take the umask alone,
					 * a chmod leaves a stored ACL as it is */
#define AVFS_MOUNT_NOSMALL (1u << 5)	/* no new small files (fs/small.c): every file takes
					 * whole data blocks, as before format 3; small files
					 * already there stay readable and writable */

/* Check a superblock image. 0, or -EUCLEAN / -EINVAL with why. */
int avfs_fs_check_super(const uint8_t *img, uint64_t dev_size, struct avfs_super *out,
			char *why, size_t whylen);
/* Byte offset of the backup superblock on a device of dev_size bytes (the last 4 KiB). */
uint64_t avfs_fs_backup_super_off(uint64_t dev_size);
/* Byte offset of metadata block m's backup copy, or UINT64_MAX for journal blocks. */
uint64_t avfs_fs_backup_off(const struct avfs_super *sb, uint64_t m);

int avfs_fs_open(const struct avfs_super *sb, unsigned flags, struct avfs_fs **out);
void avfs_fs_close(struct avfs_fs *fs);	/* frees memory only */

/* Verify a metadata block image for home m (magic, UUID, home, CRC, and type if not 0).
 * 0 or -EUCLEAN. */
int avfs_fs_verify_block(const struct avfs_fs *fs, uint64_t m, const uint8_t *img,
			 uint32_t type);

/* What a replay did and how far it read. */
struct avfs_replay {
	uint64_t ntxn, nblocks;	/* transactions and block images applied */
	uint64_t tail;		/* the log index it started at */
	uint64_t reach;		/* log blocks [tail, tail + reach) (modulo the log) were read */
	/* a committed transaction (CRC good) carrying an image it could never have written (a
	 * home outside its region, a wrong type, a superblock with another geometry): neither it
	 * nor any later one was applied (avfs_fs_why says which and why); 0 = none */
	uint64_t rejected_seq;
	uint64_t end_seq;	/* the sequence after the last transaction applied */
};

/* Replay: given the whole journal log area (log_blocks images, in order), find the committed
 * transactions from the journal superblocks' tail, check every image of each, apply them to
 * memory. jsa/jsb: the two journal superblocks. 0 (see out->rejected_seq), -EUCLEAN (both
 * journal superblocks damaged, with avfs_fs_why), -ENOMEM. */
int avfs_fs_replay(struct avfs_fs *fs, const uint8_t *jsa, const uint8_t *jsb, const uint8_t *log,
		   struct avfs_replay *out);
/* Replay without a trusted anchor (fsck: a journal superblock unreadable, or both damaged):
 * the chain of committed transactions, from the tail sequence of a readable anchor on (if
 * any), that reaches the highest sequence is found by scanning the log, and replayed. Redo in
 * order is safe from any transaction on: each was written home right after its commit.
 * 0 (nothing found: out zeroed) or -ENOMEM. */
int avfs_fs_replay_scan(struct avfs_fs *fs, const uint8_t *jsa, const uint8_t *jsb,
			const uint8_t *log, struct avfs_replay *out);
/* Give up on the rest of the journal (fsck -y: a block of it unreadable, a transaction
 * rejected, both anchors damaged): what replay applied stays, the next transaction's
 * sequence is put above every one still readable in the log (jsa, jsb and log may hold
 * zeroed blocks for unreadable ones), the head moves past unreadable log blocks (bad: one
 * flag per log block, or NULL), and the next anchor is written to both copies. */
void avfs_fs_journal_discard(struct avfs_fs *fs, const uint8_t *jsa, const uint8_t *jsb,
			     const uint8_t *log, const uint8_t *bad);
/* Was block m written by replay (so its home copies are stale)? */
bool avfs_fs_replayed(const struct avfs_fs *fs, uint64_t m);

/* Take block m into memory (a verified image). */
int avfs_fs_load(struct avfs_fs *fs, uint64_t m, const uint8_t *img);
/* Blocks that must be loaded: static ones always, dynamic ones as the (loaded) metadata
 * bitmap says. Call after the bitmap blocks are loaded. */
bool avfs_fs_block_live(const struct avfs_fs *fs, uint64_t m);
/* After every live block is loaded: build allocation state, check counts. */
int avfs_fs_mount_finish(struct avfs_fs *fs, char *why, size_t whylen);
/* Plan writing blocks whose home (or backup) copy is stale or bad, plus a fresh journal
 * anchor; marks them as needing rewrite. */
int avfs_fs_mark_rewrite(struct avfs_fs *fs, uint64_t m, bool primary, bool backup);
int avfs_fs_recovery_plan(struct avfs_fs *fs, struct avfs_plan **plan);

/* ---- transactions ----
 *
 * Credits, as jbd2's: every operation that changes metadata first reserves, in the running
 * transaction, room for every metadata block it may dirty (the journal must be able to hold
 * the transaction) and the memory for every metadata block it may allocate; only then does
 * it change anything, and then it cannot fail. So an operation happens whole or fails with
 * nothing changed, and nothing aborts. Besides each operation's own errors:
 *   -EAGAIN  the running transaction has no room left for this operation. Commit it
 *            (avfs_fs_commit: the running transaction is empty as soon as that returns,
 *            whenever its plan runs) and call again. Never returned when the running
 *            transaction is empty, so the call after a commit cannot get it.
 *   -ENOSPC  also: the operation alone needs more than a transaction can hold
 *            (avfs_fs_txn_capacity; avfs_fs_why says so) — a journal too small for the file
 *            it frees or truncates; truncating in steps, committing between, gets there.
 *   -ENOMEM  the images of the metadata blocks it would allocate.
 * A driver keeps -EAGAIN rare by committing when avfs_fs_commit_due says so (and may commit
 * earlier, by time or dirty blocks). avfs_fs_commit may be called again before the previous
 * plan has run: plans are self-contained, and run one after the other in commit order (a
 * failed plan breaks the fs: later ones are reported failed without running). */

/* Blocks changed and not yet committed. */
size_t avfs_fs_dirty_blocks(const struct avfs_fs *fs);
/* Metadata blocks one transaction can hold: what the journal fits, the superblock included. */
size_t avfs_fs_txn_capacity(const struct avfs_fs *fs);
/* The running transaction holds half its capacity or more: commit now, and an operation
 * sees -EAGAIN only when it alone needs more than the other half. */
bool avfs_fs_commit_due(const struct avfs_fs *fs);
/* The plan that commits the running transaction (ordered: the caller has completed every
 * data write the transaction makes reachable) and checkpoints it to home and backup.
 * *plan is NULL when nothing changed. 0, -EROFS, -ENOMEM (nothing changed: call again). */
int avfs_fs_commit(struct avfs_fs *fs, int64_t now_ns, struct avfs_plan **plan);
/* The driver reports the plan's outcome. 0 on success; on failure the fs turns read-only
 * (-EROFS afterwards) — memory may be ahead of the disk, and only a remount can tell. A
 * checkpoint (avfs_fs_checkpoint) the driver stopped running: -ECANCELED, nothing lost. */
void avfs_fs_plan_done(struct avfs_fs *fs, struct avfs_plan *plan, int err);
/* A plan that moves the journal tail to the head: the lazy checkpoint's pending images home
 * first (no checkpoint plan may be out: -EBUSY). */
int avfs_fs_journal_reset(struct avfs_fs *fs, struct avfs_plan **plan);

/* ---- the lazy checkpoint (jbd2's; fs/checkpoint.c) ----
 *
 * Off (the default), a commit's plan writes the journal and then checkpoints the committed
 * blocks home and to the backup region at once. On, a commit's plan is a FLUSH (the data it
 * makes reachable durable: ordered mode) and the transaction — descriptors, images and commit
 * record, whose CRC replay verifies — as one FUA write (two when it wraps the log's end): the
 * commit is durable when that write is. The committed images are kept, the latest per block,
 * and avfs_fs_checkpoint writes them home later, a block changed by several transactions
 * once, before the journal's tail moves past them. A commit whose transaction would not fit
 * the log (plan->after_ckpt) runs only after a checkpoint of everything before it. Blocks
 * freed by a transaction are reusable once its commit is done (its record stays in the log
 * until its checkpoint is). */

/* Turn it on (after the recovery plan, before the first commit). 0 or -ENOMEM. */
int avfs_fs_lazy_checkpoint(struct avfs_fs *fs);
/* The log holds a quarter of its size or more that a checkpoint would free. */
bool avfs_fs_checkpoint_due(const struct avfs_fs *fs);
/* The plan that writes every durable committed image not yet home (home, then backup) and
 * then moves the journal's tail past them: one at a time (-EBUSY while one is out). *plan
 * NULL when there is nothing to do. Its outcome goes to avfs_fs_plan_done. 0, -EBUSY,
 * -ENOMEM, -EROFS. */
int avfs_fs_checkpoint(struct avfs_fs *fs, struct avfs_plan **plan);

/* ---- inodes and directories (inode numbers; FUSE low-level style) ---- */

struct avfs_stat {
	uint64_t ino;
	uint32_t mode, uid, gid, nlink;
	uint64_t size;
	uint64_t blocks512;	/* allocated space in 512-byte units */
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint32_t generation;
	uint32_t blksize;
	uint32_t rdev;		/* devices: the kernel's 32-bit device number */
};

int avfs_fs_getattr(struct avfs_fs *fs, uint64_t ino, struct avfs_stat *st);
/* Lookup name in dir. 0 and *ino, -ENOENT, -ENOTDIR, -ENAMETOOLONG. */
int avfs_fs_lookup(struct avfs_fs *fs, uint64_t dir, const char *name, uint64_t *ino);
/* Create a regular file (or fifo/socket/device node: mode's type), a directory, a symlink. */
int avfs_fs_mknod(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino);
/* The same with a device number for a character or block device (the kernel's 32-bit
 * encoding, kept in the inode; ignored for other types). */
int avfs_fs_mknod_dev(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		      uint32_t rdev, uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino);
/* Create as a kernel with POSIX ACLs asks (FUSE_CAP_POSIX_ACL with FUSE_CAP_DONT_MASK): mode
 * (a type of avfs_fs_mknod_dev's or S_IFDIR, and permissions) comes without the umask; the
 * directory's default ACL, if it has one, is inherited and masks the mode (the kernel's
 * posix_acl_create), else umask does (AVFS_MOUNT_NOACL: umask always). The functions above
 * and below inherit the same way, with no umask. */
int avfs_fs_create(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		   uint32_t rdev, uint32_t umask, uint32_t uid, uint32_t gid, int64_t now,
		   uint64_t *ino);
int avfs_fs_mkdir(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino);
int avfs_fs_symlink(struct avfs_fs *fs, uint64_t dir, const char *name, const char *target,
		    uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino);
int avfs_fs_readlink(struct avfs_fs *fs, uint64_t ino, char *buf, size_t len);
int avfs_fs_link(struct avfs_fs *fs, uint64_t ino, uint64_t dir, const char *name, int64_t now);
/* Remove a name of a non-directory. The inode and its blocks are freed at the last link,
 * unless the inode is open (avfs_fs_open_ref): then it stays allocated with nlink 0, an
 * orphan without a name, until its last avfs_fs_open_unref. The same holds for the target
 * a rename replaces. */
int avfs_fs_unlink(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now);
int avfs_fs_rmdir(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now);
#define AVFS_RENAME_NOREPLACE 1u
#define AVFS_RENAME_EXCHANGE 2u
int avfs_fs_rename(struct avfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir,
		   const char *nname, unsigned flags, int64_t now);

/* ---- open files (POSIX: an unlinked file lives while it is open) ---- */

/* Count one more open handle of a live non-directory (the count is memory only: every
 * mount starts at 0). 0, -ENOENT / -EINVAL (no such inode), -EISDIR, -ENFILE (the count
 * would overflow). */
int avfs_fs_open_ref(struct avfs_fs *fs, uint64_t ino);
/* Drop one handle. At the last one, an inode without links is freed with its blocks into
 * the running transaction (on a read-only fs it stays for the next read-write mount).
 * 1 when the inode was freed, 0 otherwise, -EINVAL when ino holds no handle; -EAGAIN or
 * -ENOSPC (credits, see "transactions") with the handle still counted: after -EAGAIN,
 * commit and drop it again. */
int avfs_fs_open_unref(struct avfs_fs *fs, uint64_t ino);
/* Free, into the running transaction, every inode left allocated with nlink 0 (unlinked
 * while open when the file system last stopped: a crash keeps them on disk). Inodes still
 * open are skipped unless even_open (the last user of the fs is gone: unmount). Returns how
 * many were freed, -EROFS, or -EAGAIN when the running transaction was too full to free the
 * first. It stops when the transaction fills: until it returns 0, commit and call again (as
 * a read-write mount does, fs/fsio.c). An orphan too large for any transaction stays. */
int64_t avfs_fs_free_orphans(struct avfs_fs *fs, bool even_open);

/* readdir: calls fn for each entry from cookie on ("." and ".." first); fn returns
 * non-zero to stop. next is the cookie that resumes after this entry. */
typedef int (*avfs_filldir_fn)(void *arg, const char *name, uint64_t ino, uint32_t type,
			       uint64_t next);
int avfs_fs_readdir(struct avfs_fs *fs, uint64_t dir, uint64_t cookie, avfs_filldir_fn fn,
		    void *arg);

#define AVFS_SET_MODE (1u << 0)
#define AVFS_SET_UID (1u << 1)
#define AVFS_SET_GID (1u << 2)
#define AVFS_SET_SIZE (1u << 3)
#define AVFS_SET_ATIME (1u << 4)
#define AVFS_SET_MTIME (1u << 5)
/* Change attributes (a mode change also updates an access ACL's entries, posix_acl_chmod).
 * Shrinking frees blocks and uninitializes pages past the end (no I/O).
 * Bytes past the end inside the last page may be stale on disk: before the size grows (a
 * truncate up, a fallocate past the end) the driver zeroes them (avfs_fs_plan_zero_tail; a
 * write's plan does it itself), so that they never show inside the file. */
int avfs_fs_setattr(struct avfs_fs *fs, uint64_t ino, unsigned set, const struct avfs_stat *st,
		    int64_t now);
/* ---- extended attributes (format version 2: format.h, docs/FORMAT.md) ----
 * Names "user.*", "trusted.*", "security.*" (something after the dot) and the POSIX ACLs
 * "system.posix_acl_access" / "system.posix_acl_default" (in the kernel's posix_acl_xattr
 * form), up to AVFS_NAME_MAX bytes with the prefix; all of an inode's together in one metadata
 * block (AVFS_XATTR_ROOM bytes, a 4-byte header and padding to 4 bytes each), as ext4 without
 * shared blocks. Who may read or change which attribute is the caller's (the kernel checks,
 * on the mount); the core keeps the rules of the kernel's xattr_permission that depend on the
 * inode alone: user.* only on regular files and directories, no ACL on a symlink, a default
 * ACL only on a directory. A mount with AVFS_MOUNT_NOACL has no ACLs: their names are refused
 * (-EOPNOTSUPP) and not listed, and creates and chmod leave them alone. Common errors: -ENOENT / -EINVAL (inode), -ERANGE (a name empty or
 * longer than 255 bytes), -EOPNOTSUPP (a namespace AVFS does not keep), -EINVAL ("user." with
 * nothing after), -EUCLEAN (a damaged attribute block: fsck.avfs). */
#define AVFS_XATTR_CREATE 1u	/* XATTR_CREATE: fail with -EEXIST when name exists */
#define AVFS_XATTR_REPLACE 2u	/* XATTR_REPLACE: fail with -ENODATA when it does not */
/* The value of name: its length, copied to buf unless size is 0. -ENODATA (no such attribute;
 * also user.* on other types), -ERANGE (size is not 0 and too small). */
int avfs_fs_getxattr(struct avfs_fs *fs, uint64_t ino, const char *name, void *buf, size_t size);
/* The names, each NUL-terminated, as listxattr(2): their total length, copied unless size is
 * 0 (-ERANGE when too small). trusted: list trusted.* too (the caller may read them). */
int avfs_fs_listxattr(struct avfs_fs *fs, uint64_t ino, bool trusted, char *buf, size_t size);
/* Set name to len bytes of value (flags: AVFS_XATTR_*), ctime changes. An access ACL also sets
 * the mode's permission bits, and is kept only when it says more than they do (as Linux file
 * systems do). 0, -EEXIST / -ENODATA (flags), -E2BIG (over 64 KiB, XATTR_SIZE_MAX), -ENOSPC
 * (the inode's attributes would outgrow their block, or no metadata block is free), -EPERM
 * (user.* on another type), -EACCES (a default ACL on a non-directory), -EINVAL (a malformed
 * ACL, bad flags), -EROFS, -EAGAIN (credits). Nothing changes on failure. */
int avfs_fs_setxattr(struct avfs_fs *fs, uint64_t ino, const char *name, const void *value,
		     size_t len, unsigned flags, int64_t now);
/* Remove name (ctime changes). 0, -ENODATA, -EPERM (user.* on another type), -EROFS, -EAGAIN. */
int avfs_fs_removexattr(struct avfs_fs *fs, uint64_t ino, const char *name, int64_t now);

/* Access time, as a read of ino at `now` changes it under the mount's rule (mount(8)):
 * AVFS_ATIME_RELATIME when atime is not after mtime or ctime, or is 24 h old or more (Linux's
 * default); AVFS_ATIME_STRICT always; AVFS_ATIME_NO never. 1 when atime changed (the inode
 * joins the running transaction), 0 when not, or -errno (-EAGAIN: credits; a read-only fs
 * changes nothing and answers 0). */
enum avfs_atime { AVFS_ATIME_RELATIME, AVFS_ATIME_STRICT, AVFS_ATIME_NO };
int avfs_fs_touch_atime(struct avfs_fs *fs, uint64_t ino, enum avfs_atime rule, int64_t now);
/* Where the initialized page holding byte `size` (<= the file size) lives: 0 and *dev_off with
 * *keep bytes of it to keep; 1 when there is nothing to zero (page-aligned, a hole, not
 * initialized, not a regular file). avfs_fs_plan_zero_tail gives the same as a data plan. */
int avfs_fs_tail_page(struct avfs_fs *fs, uint64_t ino, uint64_t size, uint64_t *dev_off,
		      uint32_t *keep);

/* ---- file data ---- */

/* One data block's worth of a mapping. */
struct avfs_bext {
	uint64_t file_off;	/* start of the data block in the file */
	uint64_t dev_off;	/* its device byte offset, or 0 for a hole */
	uint32_t valid;		/* initialized 4 KiB pages before this operation */
	uint32_t valid_after;	/* ... after it (writes) */
};

/* Map [off, off + len) for reading (clamped to the size): one avfs_bext per data block
 * touched; bytes beyond `valid` pages or in holes read as zeros. Returns the count, or
 * -errno; at most max entries (the caller loops). */
int avfs_fs_map_read(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		     struct avfs_bext *ext, unsigned max);
/* Prepare a write of [off, off + len): allocate missing blocks (ZRR), extend valid pages and
 * the size, set mtime. The driver must then, per block: write zeros over pages
 * [valid, first written page) and the data (read-modify-write of partial pages: pages below
 * `valid` are read from the device, others are zeros) — before the commit. */
int avfs_fs_map_write(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		      int64_t now, struct avfs_bext *ext, unsigned max);
/* Is ino a small file (fs/small.c) whose extent ends before end? A preallocation to end must
 * first move it to a whole block: avfs_fs_plan_zero_tail does (-EOPNOTSUPP before). */
bool avfs_fs_small_past(struct avfs_fs *fs, uint64_t ino, uint64_t end);
/* Preallocate [off, off + len) (pages stay uninitialized: they read as zeros). keep_size:
 * FALLOC_FL_KEEP_SIZE. Without it the size may grow: as for a truncate up, the driver first
 * zeroes the stale bytes past the old size (avfs_fs_plan_zero_tail). */
int avfs_fs_fallocate(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		      bool keep_size, int64_t now);

/* SEEK_DATA (hole false) or SEEK_HOLE (hole true) from off, as lseek(2) answers: data is
 * the initialized pages of mapped blocks (preallocated, never-written pages and unmapped
 * blocks are holes), in page units; the end of the file is a hole. The offset found, or
 * -ENXIO (off at or past the size, or no data after off), -errno. Changes nothing. */
int64_t avfs_fs_seek(struct avfs_fs *fs, uint64_t ino, uint64_t off, bool hole);
/* Punch a hole in [off, off + len) of ino (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, the
 * size unchanged; the range is clamped at it): whole data blocks inside the range are freed
 * (reusable once the transaction is on disk, as every free), and pages at the end of a
 * block's initialized ones are uninitialized (they read as zeros, no I/O). What is left to
 * zero — the bytes of partial blocks that lie before initialized data — is returned in
 * zero[0..*nzero) (file ranges, at most 2): the driver writes zeros there (a data write,
 * ordered before the commit like any). mtime and ctime change. 0, or -errno (-EAGAIN: credits;
 * -ENOSPC: the blocks of one punch do not fit a transaction: punch less at a time). */
struct avfs_range {
	uint64_t off, len;
};
int avfs_fs_punch(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len, int64_t now,
		  struct avfs_range zero[2], unsigned *nzero);
/* Data blocks freed by transactions not yet on disk: free in statfs, but reusable only once
 * their commit is done (a write that finds no block may wait for that commit). */
uint64_t avfs_fs_data_freeing(const struct avfs_fs *fs);

/* ---- data plans: the device I/O of a file range (reads, zero-fills, read-modify-writes) ----
 * The rules of file data live here once, for every driver: pages at or past a block's
 * `valid` count and holes read as zeros; a write zero-fills never-initialized pages between
 * `valid` and its data, keeps the initialized bytes around a partial page (read-modify-
 * write), and zeroes the stale bytes past the old size that a write or a truncate beyond it
 * would bring inside the file. Ops are in file order; each stays within one data block. */
enum avfs_dop_kind {
	AVFS_DOP_READ = 1,	/* read dev_len bytes at dev_off (whole pages); the caller's bytes are
				 * [skip, skip + len) of them, for [buf_off, buf_off + len) */
	AVFS_DOP_ZERO,		/* the caller's bytes [buf_off, buf_off + len) are zeros (a hole, pages
				 * never written): no I/O */
	AVFS_DOP_WRITE,		/* write dev_len bytes at dev_off (whole pages): at skip, the caller's
				 * bytes [buf_off, buf_off + len) (zeros with AVFS_DOP_ZEROS); bytes
				 * [0, keep_head) of the first page and the last keep_tail bytes of the
				 * last page come from the device (read them first: read-modify-write);
				 * every other byte of the pages is zero. A small file's move is one op:
				 * zeros (AVFS_DOP_ZEROS, len 0, skip = dev_len) whose first keep_head
				 * bytes, over as many pages as they take, come from src_off */
};
#define AVFS_DOP_ZEROS 1u	/* WRITE: the data are zeros, not the caller's bytes */

struct avfs_dop {
	uint8_t kind;		/* enum avfs_dop_kind */
	uint8_t flags;		/* AVFS_DOP_ZEROS */
	uint32_t skip;		/* READ, WRITE: offset of the caller's first byte in the pages */
	uint32_t keep_head;	/* WRITE: 0 .. min(skip, AVFS_PAGE); in a move (src_off set, no
				 * caller bytes, keep_tail 0) up to skip */
	uint32_t keep_tail;	/* WRITE: bytes after the data in the last page kept from the device */
	uint64_t dev_off;	/* READ, WRITE: page aligned */
	uint64_t dev_len;	/* READ, WRITE: a multiple of AVFS_PAGE, within one data block */
	uint64_t buf_off;	/* position in the caller's buffer (the range's first byte is 0);
				 * 0 for AVFS_DOP_ZEROS writes */
	uint64_t len;		/* the caller's bytes (ZERO: bytes to clear) */
	uint64_t src_off;	/* WRITE: 0, or where keep_head and keep_tail come from instead
				 * of dev_off (same page offsets): a small file's data moving to
				 * a new place; the read goes after every earlier write of it */
};

struct avfs_data_plan {
	struct avfs_dop *ops;
	size_t n, cap;
	uint64_t bytes;		/* read: bytes the read returns (clamped at the size, 0 at or past
				 * it); write: bytes the plan writes (a short write when space ran out) */
	bool whole;		/* the caller's, for a write: whole blocks (a reservation's
				 * stream, a deadline): the file is not made small, and a small
				 * one moves to a whole block now (ZRR) rather than ever later */
};

void avfs_data_plan_init(struct avfs_data_plan *p);
void avfs_data_plan_free(struct avfs_data_plan *p);	/* the ops; init again to reuse */
/* The planners below replace what p held (keeping its ops array for reuse). */
/* Plan a read of [off, off + len) of ino, clamped at its size. In file order. Changes nothing.
 * 0 or -errno (-ENOENT, -EISDIR, -EINVAL, -ENOMEM; -EUCLEAN for a corrupt block map). */
int avfs_fs_plan_read(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		      struct avfs_data_plan *p);
/* Plan a write of [off, off + len) of ino: allocation (ZRR), size and mtime change now, in the
 * running transaction (as avfs_fs_map_write). Ops touch disjoint pages, so they may run in any
 * order and at once; all must be on the device before the commit that carries this
 * transaction (ordered mode). When space runs out part-way the plan covers the prefix that
 * fits (p->bytes < len, the size grows only to its end); -ENOSPC when nothing fits. So does
 * a range whose block maps alone exceed one transaction. 0 or -errno (-EAGAIN: commit first,
 * see "transactions"). */
int avfs_fs_plan_write(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		       int64_t now, struct avfs_data_plan *p);
/* Plan zeroing the stale bytes past `size` in the page holding it, before the size grows
 * beyond it (a truncate up). An empty plan when there is nothing to zero; p->bytes is 0 (no
 * byte of the caller's). Changes nothing, except for a small file (size must be its size):
 * it moves to a whole block, in the running transaction, and the plan copies its pages (the
 * tail zeroed on the way). 0 or -errno (-EAGAIN: credits, -ENOSPC). */
int avfs_fs_plan_zero_tail(struct avfs_fs *fs, uint64_t ino, uint64_t size,
			   struct avfs_data_plan *p);

struct avfs_statfs {
	uint64_t block_size, blocks, bfree;	/* data blocks */
	uint64_t units, ufree;	/* the same in 4 KiB units, with the free units of small-file
				 * blocks (fs/small.c) counted free */
	uint64_t files, ffree;
	uint32_t namemax;
	uint32_t nzones;
};
int avfs_fs_statfs(struct avfs_fs *fs, struct avfs_statfs *st);

/* Data block size, the superblock, the data block -> zone map (for tests and the simulator). */
uint64_t avfs_fs_block_size(const struct avfs_fs *fs);
const struct avfs_super *avfs_fs_super(const struct avfs_fs *fs);
uint32_t avfs_fs_zone_of_dev(const struct avfs_fs *fs, uint64_t dev_off);
/* The last error's explanation (mount and format failures). */
const char *avfs_fs_why(const struct avfs_fs *fs);
/* What the device bytes [off, off + len) hold, for a log line: "inode table block 37",
 * "superblock block 0, backup copy", "metadata blocks 257-260 (data bitmap, inode table)" (a
 * run: every kind in it), "data block 5 at byte ...". Into buf (n bytes, terminated). */
void avfs_fs_describe(const struct avfs_fs *fs, uint64_t off, uint64_t len, char *buf, size_t n);
/* Read access to a loaded metadata block image (fsck), NULL if not loaded. */
const uint8_t *avfs_fs_block(const struct avfs_fs *fs, uint64_t m);
bool avfs_fs_rdonly(const struct avfs_fs *fs);

#endif
