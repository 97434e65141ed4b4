/*
 * fs_i.h — the file system core's private state and the functions its files share. Not
 * installed; fsck.c, fsio.c and white-box tests include it too.
 *
 * The files form layers. A file calls only into files on lower lines, never into one that
 * calls it back, so the file-level call graph has no cycle:
 *
 *   fsio.c  fsck.c                    the synchronous driver; the checker
 *   mkfs.c                            a fresh format
 *   mount.c                           open/close, load, finish, the recovery plan
 *   checkpoint.c                      the lazy checkpoint's plans
 *   journal.c                         commit, replay, the tail
 *   namei.c                           namespace operations
 *   lifetime.c  attr.c  dataplan.c    inode death and orphans; attributes; data plans
 *   dir.c  data.c  xattr.c            directories and their index; file data mapping;
 *                                     extended attributes
 *   small.c                           small-file extents in shared data blocks
 *   bmap.c                            block maps, data block allocation
 *   inode.c                           the inode table
 *   super.c  plan.c                   geometry and superblock checks; plan building
 *   cache.c                           metadata images, dirty set, credits, meta allocation
 *   info.c  crc32c.c  acl.c           accessors and explanations; checksums; POSIX ACL rules
 */
#ifndef AVFS_FS_I_H
#define AVFS_FS_I_H

#include "bitmap.h"
#include "fs.h"
#include "why.h"
#include "zrr.h"

/* A small-file block in memory (small.c): the on-disk map is the live image of block m. */
struct fs_pool {
	uint32_t block;		/* data block index */
	uint32_t m;		/* its AVFS_MT_SMALL metadata block */
	uint32_t cursor;	/* next-fit: where the last extent ended */
	uint8_t *pend;		/* units freed by transactions not on disk yet (not reusable) */
};

/* In-memory index of one directory: name hash -> (block index, slot), and free slots per
 * block. Built on first use from the directory blocks; keeps lookups O(1). Owned by dir.c. */
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
	/* the running transaction: bitmaps sized at open, so recording a change never
	 * allocates (credits reserve everything else an operation needs first) */
	struct avfs_bitmap dirty;	/* metadata blocks it changed */
	struct avfs_bitmap pfree;	/* data blocks it freed (still set in dmap until on disk) */
	size_t txn_cap;		/* blocks one transaction may hold (the journal's size) */
	uint8_t **spare;	/* images reserved for metadata blocks operations allocate */
	size_t nspare, capspare;
	uint64_t credits, credit_base;	/* the running operation's reservation (fs_txn_begin) */
	uint64_t meta_credits, meta_allocs;
	uint64_t overruns;	/* operations that dirtied more than they reserved (a bug) */
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
	bool jsuper_both;	/* the journal was discarded: the next anchor goes to both copies */
	/* the lazy checkpoint (checkpoint.c; fs.h): off unless lazy */
	bool lazy;
	uint8_t **cimg;		/* [nmeta] a block's latest durable committed image, not yet home */
	struct avfs_bitmap ckpt;	/* the blocks that have one */
	struct avfs_bitmap ck_again;	/* ... committed again while a checkpoint is out */
	bool ck_out;		/* a checkpoint plan is out */
	uint64_t lpos;		/* the head as an absolute log position (log blocks ever written) */
	uint64_t dpos, dseq;	/* position and sequence after the last durable transaction */
	uint64_t jtail;		/* the tail the journal superblock on disk names (absolute) */
	uint64_t mhint, ihint;
	struct dirindex **dix;	/* [ninodes + 1] */
	uint32_t *opens;	/* [ninodes + 1] open handles per inode (avfs_fs_open_ref), memory
				 * only; non-zero only for live non-directories, which are freed
				 * when the count and nlink are both 0 */
	/* small-file blocks (small.c), sorted by data block */
	struct fs_pool *pools;
	size_t npools, cappools;
	uint64_t *spend;	/* unit runs the running transaction freed (FS_SRUN packed) */
	size_t nspend, capspend;
	uint64_t small_free;	/* free units in pool blocks (as on disk) */
	uint32_t pool_hint;	/* the pool block of the last extent allocated */
	char why[256];
};

#define RW_CHECK(fs) do { if (avfs_fs_rdonly(fs)) return -EROFS; } while (0)

/* ---- info.c ---- */
/* The explanation of the last failure, read by avfs_fs_why(); into a caller's buffer the
 * core writes with avfs_why() directly. */
#define fs_why(fs, ...) avfs_why((fs)->why, sizeof((fs)->why), __VA_ARGS__)
struct avfs_super *fs_sb(struct avfs_fs *fs);	/* the live superblock image */

/* ---- acl.c: POSIX ACLs as the kernel passes them (posix_acl_xattr), pure functions ---- */
#define FS_ACL_ACCESS "system.posix_acl_access"
#define FS_ACL_DEFAULT "system.posix_acl_default"
/* A well-formed ACL (posix_acl_valid's order and tags). 0 or -EINVAL. */
int fs_acl_valid(const void *v, size_t len);
/* The permission bits of *mode an access ACL gives (posix_acl_equiv_mode): 1 when the ACL says
 * more than the mode can (named entries, a mask), 0 when the mode says it all. v is valid. */
int fs_acl_mode(const void *v, size_t len, uint32_t *mode);
/* A chmod: the owner, mask (else owning group) and other entries follow mode (posix_acl_chmod). */
void fs_acl_chmod(void *v, size_t len, uint32_t mode);
/* A create: v, a copy of the directory's default ACL, becomes the new inode's access ACL and
 * masks *mode's permission bits (posix_acl_create_masq); 1 when it is to be kept (says more
 * than the mode), 0 when not. */
int fs_acl_create(void *v, size_t len, uint32_t *mode);

/* ---- super.c ---- */
/* Whether two superblock images describe the same format: UUID and every field that never
 * changes after mkfs (after the version, up to the dynamic tail). */
bool fs_super_same_geometry(const struct avfs_super *a, const struct avfs_super *b);
/* A newer image (journaled, or the live one) of the superblock home: the version only rises
 * (1 to 2 with the first extended attribute), up to what this build reads. */
bool fs_super_version_ok(const struct avfs_super *img, const struct avfs_super *home);

/* ---- cache.c ---- */
void fs_hdr_init(struct avfs_fs *fs, uint8_t *img, uint64_t m, uint32_t type);
void fs_seal(struct avfs_fs *fs, uint8_t *img);	/* the header's CRC32C */
/* A block image's header (magic, home m, UUID unless NULL, type unless 0) and CRC.
 * 0 or -EUCLEAN. */
int fs_verify_img(const uint8_t *uuid, uint64_t m, const uint8_t *img, uint32_t type);
void fs_dirty(struct avfs_fs *fs, uint64_t m);	/* m joins the running transaction */
/* Credits, as jbd2's handles: an operation that changes metadata first reserves room in the
 * running transaction for the `blocks` metadata blocks it may dirty (the superblock, which
 * every commit carries, aside) and the images of the `new_meta` blocks it may allocate; then
 * it changes without failing, and ends. 0, -EROFS; -ENOSPC when it alone exceeds what a
 * transaction holds or fewer than new_meta metadata blocks are free; -EAGAIN when only the
 * running transaction's content leaves it no room; -ENOMEM. Nothing changes on failure. */
int fs_txn_begin(struct avfs_fs *fs, uint64_t blocks, uint64_t new_meta);
void fs_txn_end(struct avfs_fs *fs);	/* counts an overrun of the reservation */
bool fs_txn_fits(const struct avfs_fs *fs, uint64_t blocks);	/* in an empty transaction */
void fs_txn_forget(struct avfs_fs *fs);	/* the dirty set emptied (mkfs's unjournaled writes) */
/* Set or clear one bit in the on-disk bitmap starting at metadata block `start`. */
void fs_set_bit(struct avfs_fs *fs, uint64_t start, uint64_t bit, bool on);
int fs_meta_alloc(struct avfs_fs *fs, uint32_t type, uint64_t *m);
void fs_meta_free(struct avfs_fs *fs, uint64_t m);
/* Is m a live dynamic metadata block of that type (a pointer found in an image)? */
bool fs_meta_ok(struct avfs_fs *fs, uint32_t m, uint32_t type);

/* ---- plan.c ---- */
struct avfs_plan *fs_plan_new(void);
uint8_t *fs_plan_buf(struct avfs_plan *p, size_t len);	/* aligned, owned by the plan */
int fs_plan_write(struct avfs_plan *p, uint64_t off, const uint8_t *img, uint32_t len,
		  bool fua, bool copy);
int fs_plan_flush(struct avfs_plan *p);

/* ---- inode.c ---- */
bool fs_ino_ok(const struct avfs_fs *fs, uint64_t ino);	/* 1 .. ninodes */
uint64_t fs_ino_block(const struct avfs_fs *fs, uint64_t ino);
struct avfs_dinode *fs_ino_raw(struct avfs_fs *fs, uint64_t ino);	/* live or not */
/* A live inode, or NULL (-ENOENT / -EINVAL in *err). */
struct avfs_dinode *fs_ino_get(struct avfs_fs *fs, uint64_t ino, int *err);
void fs_ino_dirty(struct avfs_fs *fs, uint64_t ino);
int fs_ino_alloc(struct avfs_fs *fs, uint32_t mode, uint32_t uid, uint32_t gid, int64_t now,
		 uint64_t *ino);
uint64_t fs_ino_avail(const struct avfs_fs *fs);	/* inodes free now */
/* The record goes back to the inode bitmap (its blocks are the caller's). */
void fs_ino_release(struct avfs_fs *fs, uint64_t ino);
uint8_t fs_dtype_of(uint32_t mode);	/* DT_* of <dirent.h> for an inode mode */

/* ---- bmap.c ---- */
/* Find (or with create, make) the slot of index k in an inode's tree. *slot_m: the metadata
 * block holding the slot. -ENOENT when absent, -EUCLEAN for a corrupt pointer, -EFBIG
 * beyond the tree. */
int fs_bmap_slot(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		 bool create, struct avfs_bptr **slot, uint64_t *slot_m);
/* Read slot k without creating: the pointer, or a zero one for a hole. */
int fs_bmap_get(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		struct avfs_bptr *out);
/* Free every mapped entry with index >= from. data: leaves are data blocks (files), else
 * metadata blocks (directories). */
void fs_bmap_trim(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t from,
		  bool data);
/* Free the data block at index k of a file (a hole punched), its slot cleared (map blocks
 * left empty stay). 1 freed, 0 a hole already, -EUCLEAN. */
int fs_bmap_free_one(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k);
/* A data block by ZRR after the file's block prev (UINT64_MAX: none). 0 or -ENOSPC. */
int fs_data_alloc(struct avfs_fs *fs, uint64_t prev, uint32_t *out);
/* Data block b freed (reusable once the transaction is on disk). */
void fs_data_free(struct avfs_fs *fs, uint32_t b);
uint64_t fs_data_avail(const struct avfs_fs *fs);	/* data blocks free now */
/* What changing indexes [k0, k1) of an inode's tree may cost (credits): its map blocks there
 * that exist (each may be dirtied or freed), those missing (filling every index would make
 * them), and the indexes mapped. Walks the existing nodes of the range only. */
struct fs_bmap_cost {
	uint64_t nodes, missing, mapped;
};
void fs_bmap_cost(struct avfs_fs *fs, struct avfs_dinode *di, uint64_t k0, uint64_t k1,
		  struct fs_bmap_cost *c);

/* ---- small.c: small-file extents (format.h) ---- */
/* Credits of one small-extent change: the pool map block(s), the bitmaps' blocks of a pool
 * block made or freed, the inode; one new metadata block (a pool's map). */
#define FS_SMALL_BLOCKS 8u
#define FS_SMALL_META 1u
/* The most a small file holds on this fs (0: block size too large for small files). */
uint64_t fs_small_max(const struct avfs_fs *fs);
/* The device offset of a small file's extent. */
uint64_t fs_small_dev(const struct avfs_fs *fs, const struct avfs_dinode *di);
/* Make a file with no data small, with an extent of `units` units. 0 or -ENOSPC. */
int fs_small_make(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint32_t units);
/* A small file's extent grown to `units` units: in place when the units after it are free
 * (*src = 0), else moved to a new extent (*src: the old extent's device offset, freed; the
 * driver copies its pages). 0 or -ENOSPC (nothing changed). */
int fs_small_grow(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint32_t units,
		  uint64_t *src);
/* A small file becomes an ordinary one: its data goes to block 0, a fresh data block (ZRR);
 * *src: the old extent's device offset (freed; the driver copies its pages). 0, -ENOSPC. */
int fs_small_promote(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t *src);
/* Free a small file's extent (truncated to 0, or dying): direct[0] and the fields cleared. */
void fs_small_release(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di);
/* Mount: the pools from the live AVFS_MT_SMALL blocks. Unsound ones are left out (fsck
 * reports them). 0 or -ENOMEM. */
int fs_small_load(struct avfs_fs *fs);
void fs_small_close(struct avfs_fs *fs);
/* A commit takes the running transaction's freed runs (into the plan); once it is on disk
 * they are released for reuse. */
void fs_small_commit(struct avfs_fs *fs, struct avfs_plan *p);
void fs_small_done(struct avfs_fs *fs, struct avfs_plan *p);

/* ---- dir.c ---- */
/* A live directory, or NULL (-ENOTDIR or fs_ino_get's error in *err). */
struct avfs_dinode *fs_dir_get(struct avfs_fs *fs, uint64_t dir, int *err);
/* Find name: its index slot (for deletion), location and inode; any may be NULL. */
int fs_dir_find(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, const char *name,
		size_t len, size_t *hslot, uint32_t *loc, uint64_t *ino);
/* Adding an entry takes two steps, so that an operation can reserve its credits between them
 * and then change without failing. fs_dir_prepare finds the place (a free run of slots, or a
 * new block) and grows the in-memory index for it: 0, -ENOMEM, -ENOSPC, -EUCLEAN; it
 * changes nothing on disk. fs_dir_insert puts the entry there; with the place's credits
 * reserved (and nothing else done to dir between) it does not fail. The index may rehash
 * in fs_dir_prepare: slots found before it are stale. */
struct fs_dir_place {
	uint64_t bi;		/* directory block index */
	unsigned slot;		/* first slot in it */
	bool grow;		/* bi is a new block at the end */
	uint64_t blocks, new_meta;	/* credits of the insertion */
};
int fs_dir_prepare(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, size_t len,
		   struct fs_dir_place *at);
int fs_dir_insert(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di,
		  const struct fs_dir_place *at, const char *name, size_t len, uint64_t ino,
		  uint32_t mode);
void fs_dir_del(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, size_t hslot,
		uint32_t loc);
/* Point an existing entry at another inode (rename over an existing name). */
void fs_dir_retarget(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, uint32_t loc,
		     uint64_t ino, uint32_t mode);
/* 1 when dir holds no entry, 0 when it does, or -ENOMEM (its index). */
int fs_dir_empty(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di);
/* Drop dir's index (freed, or changed behind its back): rebuilt on next use. */
void fs_dir_forget(struct avfs_fs *fs, uint64_t dir);

/* ---- xattr.c ---- */
/* ino's attribute block, or NULL: none (*err 0), or damaged (-EUCLEAN, with why). */
struct avfs_xblock *fs_xattr_block(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di,
				   int *err);
/* The entries of a block image from the first that are sound (in bounds, a name of a namespace
 * AVFS keeps, a valid ACL value, in order): their bytes, and how many in *count (fsck). */
size_t fs_xattr_prefix(const struct avfs_xblock *xb, uint16_t *count);
/* name's value in xb (NULL: none) and its length. */
const uint8_t *fs_xattr_find(const struct avfs_xblock *xb, const char *name, size_t nl,
			     uint16_t *vlen);
/* Free the attribute block of a dying inode (its bitmap bit: one block of credits). */
void fs_xattr_free(struct avfs_fs *fs, struct avfs_dinode *di);
/* A chmod to mode: an access ACL's entries follow (posix_acl_chmod). The caller holds a credit
 * for the attribute block. 0, or -EUCLEAN (a damaged block: nothing changed). */
int fs_xattr_chmod(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint32_t mode);
/* What a new inode of mode (type and permissions) in dir inherits, as the kernel's
 * posix_acl_create: with a default ACL on dir, the mode masked by it, an access ACL when it
 * says more than the mode, and for a directory the default ACL; without, mode less umask.
 * Symlinks inherit nothing. block: the new inode needs an attribute block (credits: one new
 * metadata block, two blocks). 0, -EUCLEAN, -ENOSPC (both ACLs would not fit a block). */
struct fs_inherit {
	uint32_t mode;
	bool access, dflt;
	uint16_t len;
	uint8_t acl[AVFS_XATTR_ROOM];	/* the access ACL */
};
#define fs_inherit_block(in) ((in)->access || (in)->dflt)
int fs_xattr_inherit(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *pdi, uint32_t mode,
		     uint32_t umask, struct fs_inherit *in);
/* Give the new inode ino what fs_xattr_inherit found (dir unchanged since), with its credits. */
void fs_xattr_inherit_apply(struct avfs_fs *fs, uint64_t dir, uint64_t ino,
			    struct avfs_dinode *di, const struct fs_inherit *in);

/* ---- data.c ---- */
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
/* The credits of allocating blocks [k0, k1) of a file (a write, a preallocation): the
 * metadata blocks it may dirty, the map blocks it may allocate, the data blocks it needs. */
struct fs_alloc_cost {
	uint64_t blocks, new_meta, new_data;
};
void fs_file_alloc_cost(struct avfs_fs *fs, struct avfs_dinode *di, uint64_t k0, uint64_t k1,
			struct fs_alloc_cost *c);
/* The metadata blocks fs_file_resize to size may dirty (the inode's block included). */
uint64_t fs_file_resize_cost(struct avfs_fs *fs, struct avfs_dinode *di, uint64_t size);
/* A new size: shrinking frees blocks past it and uninitializes the pages past it in its
 * block. 0 or -EFBIG. */
int fs_file_resize(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t size);

/* ---- lifetime.c ---- */
/* The credits of freeing an inode with everything it holds, and of dropping one of its names
 * (which frees it at the last one, unless it is open). */
uint64_t fs_ino_free_cost(struct avfs_fs *fs, struct avfs_dinode *di);
uint64_t fs_drop_link_cost(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di);
/* Free a live inode with its blocks, into the running transaction (also fsck's orphans). */
void fs_ino_free(struct avfs_fs *fs, uint64_t ino);
/* One name of ino is gone; at the last one it is freed unless open (an orphan then). */
void fs_drop_link(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, int64_t now);

/* ---- journal.c ---- */
/* Metadata blocks one transaction can hold in a log of log_blocks: its images, with their
 * descriptors and its commit block, must fit. */
size_t fs_journal_capacity(uint64_t log_blocks);
/* A journal superblock naming (tail, seq), to the slot after the last one written. */
int fs_plan_jsuper(struct avfs_fs *fs, struct avfs_plan *p, uint64_t tail, uint64_t seq);
/* Sealed copies of the sorted blocks ms to their homes (pass want_p) and backup copies
 * (want_b), consecutive blocks coalesced; NULL wants all. */
int fs_plan_homes(struct avfs_fs *fs, struct avfs_plan *p, const uint64_t *ms, size_t n,
		  const struct avfs_bitmap *want_p, const struct avfs_bitmap *want_b);
/* The same from the images src[m] (the lazy checkpoint's: fs->cimg). */
int fs_plan_images(struct avfs_fs *fs, struct avfs_plan *p, const uint64_t *ms, size_t n,
		   const struct avfs_bitmap *want_p, const struct avfs_bitmap *want_b,
		   uint8_t *const *src);
/* The log index of absolute log position x (fs->lpos is the head's). */
uint64_t fs_log_index(const struct avfs_fs *fs, uint64_t x);

#endif
