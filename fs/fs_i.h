/*
 * fs_i.h — private state of the file system core shared by fs.c (format, journal, mount)
 * and inode.c (inodes, block maps, directories, data mapping). Not installed.
 */
#ifndef AVFS_FS_I_H
#define AVFS_FS_I_H

#include "bitmap.h"
#include "fs.h"
#include "zrr.h"

#include <stdarg.h>

/* In-memory index of one directory: name hash -> (block index, slot), and free slots per
 * block. Built on first use from the directory blocks; keeps lookups O(1). */
struct dirindex {
	uint32_t *keys;		/* name hash; */
	uint32_t *locs;		/* (bi << 6 | slot) + 1; 0 = empty, UINT32_MAX = tombstone */
	size_t cap, n, used;	/* used = live + tombstones */
	uint8_t *freec;		/* free slots per directory block */
	size_t nblk, capblk;
	size_t hint;		/* block to try first for inserts */
};

struct avfs_fs {
	struct avfs_super sb;	/* geometry (the live image is blocks[0]) */
	unsigned flags;
	bool broken;		/* a plan failed: read-only until remount */
	uint64_t nmeta;
	uint8_t **blocks;	/* [nmeta] images of live metadata blocks; NULL = not loaded */
	struct avfs_bitmap mmap;	/* metadata blocks in use */
	struct avfs_bitmap dmap;	/* data blocks in use, including frees not yet committed */
	struct avfs_bitmap imap;	/* inodes in use (bit i = inode i + 1) */
	struct avfs_alloc alloc;
	uint64_t *pfree;	/* data blocks freed by the running transaction */
	size_t npfree, cappfree;
	uint64_t *txn;		/* metadata blocks dirtied by the running transaction */
	size_t ntxn, captxn;
	struct avfs_bitmap txnmark;
	struct avfs_bitmap replayed;
	struct avfs_bitmap rewrite_p, rewrite_b;	/* stale home / backup copies */
	/* journal */
	uint64_t log_start;	/* metadata block of log index 0 */
	uint64_t log_blocks;
	uint64_t head;		/* log index where the next transaction goes */
	uint64_t tail;		/* oldest log index still needed */
	uint64_t used;		/* blocks between tail and head */
	uint64_t next_seq;
	uint64_t tail_seq;
	uint64_t jepoch;
	uint64_t mhint, ihint;
	struct dirindex **dix;	/* [ninodes + 1] */
	uint32_t *opens;	/* [ninodes + 1] open handles per inode (avfs_fs_open_ref), memory
				 * only; non-zero only for live non-directories, which are freed
				 * when the count and nlink are both 0 */
	char why[256];
};

void fs_why(struct avfs_fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint8_t *fs_blk(struct avfs_fs *fs, uint64_t m);
void fs_dirty(struct avfs_fs *fs, uint64_t m);
int fs_meta_alloc(struct avfs_fs *fs, uint32_t type, uint64_t *m);
void fs_meta_free(struct avfs_fs *fs, uint64_t m);
void fs_set_bit(struct avfs_fs *fs, uint64_t start, uint64_t bit, bool on);
void fs_hdr_init(struct avfs_fs *fs, uint8_t *img, uint64_t m, uint32_t type);
void fs_seal(struct avfs_fs *fs, uint8_t *img);
int fs_plan_write(struct avfs_plan *p, uint64_t off, const uint8_t *img, uint32_t len,
		  bool fua, bool copy);
int fs_plan_flush(struct avfs_plan *p);
struct avfs_super *fs_sb(struct avfs_fs *fs);
void dirindex_free(struct dirindex *d);
/* Free a live inode with its blocks, into the running transaction (fsck's orphans). */
void fs_ino_free(struct avfs_fs *fs, uint64_t ino);
uint8_t fs_dtype_of(uint32_t mode);	/* DT_* of <dirent.h> for an inode mode */
void fs_ino_dirty(struct avfs_fs *fs, uint64_t ino);
/* A live regular file: 0, -ENOENT / -EINVAL, -EISDIR (a directory), -EINVAL (another type). */
int fs_file_get(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode **di);
/* The checks of a write (or preallocation) of [off, off + len) of ino: 0 and *di, or -EROFS,
 * the inode's error (fs_file_get), -EFBIG (the range ends past INT64_MAX). */
int fs_write_check(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		   struct avfs_dinode **di);
/* Data block k of a file as a read sees it (valid_after = valid). 0 or -EUCLEAN. */
int fs_block_read(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		  struct avfs_bext *e);
/* Data block k made ready for a write that ends at page `pages` of it: allocated (ZRR) if it
 * is a hole, valid raised to `pages`. 0, -ENOSPC, -EUCLEAN. */
int fs_block_write(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		   uint32_t pages, struct avfs_bext *e);

#endif
