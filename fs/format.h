/*
 * format.h — the AVFS on-disk format: the single source of truth for every structure that
 * reaches the disk (docs/FORMAT.md explains it in prose). Fixed-size, little-endian,
 * checked with _Static_assert. No code here: only layout, constants and tiny accessors.
 */
#ifndef AVFS_FORMAT_H
#define AVFS_FORMAT_H

#include <endian.h>
#include <stdint.h>

#define AVFS_MAGIC		0x53465641u	/* "AVFS" little-endian */
/* Version 2 adds extended attribute blocks (AVFS_MT_XATTR, avfs_dinode.xattr). A version 1
 * image reads as a version 2 image without any; it becomes version 2 with its first extended
 * attribute (the superblock's version rises in that transaction), so that tools reading only
 * version 1 refuse it rather than drop blocks they do not know. */
/* Version 3 adds small-file extents (AVFS_MT_SMALL, avfs_dinode.small_units) the same way:
 * an older image reads as one without any and becomes version 3 with its first. */
#define AVFS_FORMAT_VERSION		3u
#define AVFS_FORMAT_VERSION_MIN	1u	/* the oldest version this build reads */
#define AVFS_FORMAT_VERSION_XATTR	2u	/* the first with extended attributes */
#define AVFS_FORMAT_VERSION_SMALL	3u	/* the first with small-file extents */
#define AVFS_MBLOCK		4096u		/* metadata block size */
#define AVFS_MBLOCK_SHIFT	12
#define AVFS_BLOCK_MIN_SHIFT	16		/* data blocks: 64 KiB ... */
#define AVFS_BLOCK_MAX_SHIFT	32		/* ... 4 GiB */
#define AVFS_BLOCK_DEFAULT_SHIFT 22		/* 4 MiB */
#define AVFS_ROOT_INO		1u
#define AVFS_NAME_MAX		255u
#define AVFS_SYMLINK_MAX	4095u		/* bytes of a symlink target (PATH_MAX - 1) */
#define AVFS_PAGE		4096u		/* unit of "initialized" tracking in data blocks */

/* Metadata block types (avfs_mhdr.type). */
enum avfs_mtype {
	AVFS_MT_FREE = 0,
	AVFS_MT_SUPER = 1,
	AVFS_MT_JSUPER = 2,	/* journal superblock (two copies, newest valid wins) */
	AVFS_MT_JDESC = 3,	/* journal descriptor: the home numbers of the images after it */
	AVFS_MT_JCOMMIT = 4,	/* journal commit record */
	AVFS_MT_BITMAP = 5,
	AVFS_MT_INODES = 6,
	AVFS_MT_MAP = 7,	/* block map (indirect) */
	AVFS_MT_DIR = 8,	/* directory entries */
	AVFS_MT_SYMLINK = 9,
	AVFS_MT_XATTR = 10,	/* an inode's extended attributes (format version 2) */
	AVFS_MT_SMALL = 11,	/* the unit map of a small-file block (format version 3) */
};

/* Every metadata block starts with this header. crc is CRC32C of the whole 4 KiB block
 * computed with the crc field set to 0. blockno is the block's home (metadata block
 * number), so a block written to the wrong place is detected. */
struct avfs_mhdr {
	uint32_t magic;
	uint32_t crc;
	uint8_t uuid[16];
	uint64_t blockno;
	uint32_t type;
	uint32_t reserved0;
	uint64_t seq;		/* journal blocks: transaction sequence; others: 0 */
	uint8_t reserved[16];
};
_Static_assert(sizeof(struct avfs_mhdr) == 64, "mhdr");

#define AVFS_MPAYLOAD (AVFS_MBLOCK - sizeof(struct avfs_mhdr))

/* Superblock: metadata block 0; its backup is block 0 of the backup region.
 * Geometry fields never change after mkfs; the dynamic tail is journaled like any block. */
struct avfs_super {
	struct avfs_mhdr hdr;
	uint32_t version;
	uint32_t mblock_size;		/* 4096 */
	uint64_t dev_size;		/* bytes of the device when formatted */
	uint32_t block_shift;		/* data block size = 1 << block_shift */
	uint32_t nzones;
	uint64_t zone_blocks;		/* data blocks per zone (the last zone may be shorter) */
	uint64_t meta_blocks;		/* primary metadata region: blocks [0, meta_blocks) */
	uint64_t journal_start, journal_blocks;
	uint64_t mbitmap_start, mbitmap_blocks;	/* one bit per metadata block */
	uint64_t dbitmap_start, dbitmap_blocks;	/* one bit per data block */
	uint64_t ibitmap_start, ibitmap_blocks;	/* one bit per inode (bit 0 = inode 1) */
	uint64_t itable_start, itable_blocks;
	uint64_t dyn_start;		/* dynamic blocks (maps, directories, symlinks) up to meta_blocks */
	uint64_t ninodes;
	uint64_t data_off;		/* byte offset of data block 0 */
	uint64_t data_blocks;
	uint64_t backup_off;		/* byte offset of the backup metadata region */
	uint64_t seed;			/* mkfs seed (first ZRR zone) */
	uint32_t alloc_policy;		/* 0 = ZRR, 1 = contiguous first-fit in runs of
					 * alloc_run blocks (baseline), 2 = ZRR in runs of
					 * alloc_run blocks (alloc/zrr.h) */
	uint32_t root_ino;
	/* disk model for the service-time model (SPEC §5.2); profiled or from a named model */
	char disk_model[32];
	uint64_t rate_max;		/* bytes/s, outer edge */
	uint64_t rate_min;		/* bytes/s, inner edge */
	uint64_t seek_avg_ns;
	uint64_t rotation_ns;
	uint64_t mkfs_time_ns;		/* CLOCK_REALTIME at format, for humans */
	uint32_t alloc_run;		/* policy 2: blocks of a file in a zone before the next
					 * (>= 1); policy 1: a file's new run starts at a
					 * multiple of it (0: 1, plain first-fit, as images
					 * made before it); 0 for policy 0 */
	uint8_t reserved_geo[252];
	/* dynamic part: changes go through the journal */
	uint32_t last_zone;		/* zone of the latest data block allocation (ZRR) */
	uint32_t reserved_dyn0;
	uint64_t free_data, free_inodes, free_meta;	/* counts, verified by fsck */
	uint64_t generation;		/* next inode generation */
	uint64_t commit_seq;		/* sequence of the transaction that wrote this image */
};
_Static_assert(sizeof(struct avfs_super) <= AVFS_MBLOCK, "super");

/* Journal superblock: journal blocks 0 and 1 hold two copies written alternately; the
 * valid one with the higher epoch says where replay starts. Written in place, never
 * journaled (it is the journal's own anchor, as in jbd2). */
struct avfs_jsuper {
	struct avfs_mhdr hdr;
	uint64_t epoch;			/* bumped on every rewrite */
	uint64_t tail_seq;		/* sequence of the first transaction to replay */
	uint64_t tail_pos;		/* its descriptor, as an index into the log area */
	uint64_t log_blocks;		/* journal_blocks - 2 */
};

/* Descriptor: lists the home block numbers of the images that follow it in the log.
 * A transaction is one or more descriptor groups, then one commit block. */
#define AVFS_JDESC_MAX ((AVFS_MPAYLOAD - 16) / 8)
struct avfs_jdesc {
	struct avfs_mhdr hdr;		/* seq = transaction */
	uint32_t count;			/* images after this descriptor */
	uint32_t last;			/* 1: the commit block follows these images */
	uint64_t reserved;
	uint64_t home[AVFS_JDESC_MAX];
};
_Static_assert(sizeof(struct avfs_jdesc) <= AVFS_MBLOCK, "jdesc");

/* Commit: valid only if data_crc matches CRC32C over the transaction's descriptors and
 * images in log order; a torn transaction fails this and ends replay. */
struct avfs_jcommit {
	struct avfs_mhdr hdr;		/* seq = transaction */
	uint64_t nblocks;		/* descriptors + images */
	uint32_t data_crc;
	uint32_t reserved;
	uint64_t commit_time_ns;
};

/* A block pointer. Files: block = data block index + 1 (0 = hole); valid = number of
 * initialized 4 KiB pages from the block's start: bytes beyond read as zeros, so a
 * preallocated or partly written block never shows what was on the disk before.
 * Directories and map trees: block = metadata block number (0 = none), valid unused. */
struct avfs_bptr {
	uint32_t block;
	uint32_t valid;
};
_Static_assert(sizeof(struct avfs_bptr) == 8, "bptr");

#define AVFS_NDIRECT 12
#define AVFS_MAP_PER_BLOCK (AVFS_MPAYLOAD / sizeof(struct avfs_bptr))	/* 504 */

struct avfs_dinode {
	uint32_t mode;			/* 0 = free */
	uint32_t uid, gid;
	uint32_t nlink;
	uint64_t size;
	int64_t atime_ns, mtime_ns, ctime_ns, btime_ns;
	uint32_t flags;
	uint32_t generation;
	uint64_t nblocks;		/* data blocks (files) or directory blocks (dirs) mapped */
	struct avfs_bptr direct[AVFS_NDIRECT];
	uint32_t indirect;		/* metadata block of AVFS_MAP_PER_BLOCK pointers */
	uint32_t dindirect;		/* ... of pointers to such blocks */
	uint32_t tindirect;		/* ... one level more */
	uint32_t symlink_block;		/* long symlink target (metadata block), or 0 */
	uint32_t parent;		/* directories: the parent directory's inode ("..") */
	uint16_t small_unit;		/* small_units != 0: the file's data is the extent of
					 * small_units 4 KiB units from unit small_unit of the
					 * small-file block direct[0].block names (format version 3;
					 * a reserved, zero field before) */
	uint16_t small_units;
	char symlink[48];		/* short symlink target, NUL-terminated */
	uint32_t rdev;			/* character and block devices: the device number, as the
					 * kernel encodes it in 32 bits (major 12, minor 20 bits:
					 * new_encode_dev); 0 otherwise (a reserved field before) */
	uint32_t symlink_block2;	/* a target longer than AVFS_SYMLINK_BLOCK: its bytes
					 * from AVFS_SYMLINK_BLOCK on (metadata block), or 0 */
	uint32_t xattr;			/* the extended attribute block (metadata block), or 0
					 * (format version 2; a reserved, zero field before) */
	uint8_t reserved[4];
};
_Static_assert(sizeof(struct avfs_dinode) == 256, "dinode");
/* Symlink targets: up to 47 bytes in the inode (symlink[], NUL-terminated); up to
 * AVFS_SYMLINK_BLOCK - 1 in one metadata block (symlink_block, NUL-terminated); longer ones
 * fill that block without a NUL and end, NUL-terminated, in symlink_block2. The size is the
 * target's length. */
#define AVFS_SYMLINK_BLOCK ((uint32_t)AVFS_MPAYLOAD)	/* 4032 bytes of a target a block */
_Static_assert(AVFS_SYMLINK_MAX < 2 * AVFS_MPAYLOAD, "a target fits two blocks");
#define AVFS_INODES_PER_BLOCK (AVFS_MPAYLOAD / sizeof(struct avfs_dinode))	/* 15 */

/* Directory blocks: 63 slots of 64 bytes. An entry takes 1 + ceil((len - 48) / 64) slots
 * in one block; a free slot has ino 0. Entries never move, so (block index, slot) is a
 * stable readdir cookie. */
#define AVFS_DSLOT 64u
#define AVFS_DSLOTS (AVFS_MPAYLOAD / AVFS_DSLOT)	/* 63 */
#define AVFS_DNAME0 48u
struct avfs_dent {
	uint64_t ino;
	uint16_t name_len;
	uint8_t type;			/* DT_* of <dirent.h> */
	uint8_t nslots;
	uint32_t hash;			/* of the name, for fsck and quick compares */
	char name[AVFS_DNAME0];		/* continues in the following slots */
};
_Static_assert(sizeof(struct avfs_dent) == AVFS_DSLOT, "dent");

/* Extended attributes: all of an inode's in one metadata block of its own (as ext4 without
 * shared blocks: names up to 255 bytes, values up to what the block holds). Entries packed
 * from data[0], sorted by name (strcmp order), each 4-byte aligned: a struct avfs_xent, the
 * name (no NUL), the value. `used` bytes of data[] hold `count` entries; the rest is zero.
 * `ino` names the owner, so a block reached from the wrong inode is detected. */
struct avfs_xent {
	uint8_t name_len;		/* 1 .. 255: the full name, "user.x" */
	uint8_t reserved;
	uint16_t value_len;		/* bytes of the value after the name */
};
_Static_assert(sizeof(struct avfs_xent) == 4, "xent");
struct avfs_xblock {
	struct avfs_mhdr hdr;		/* type AVFS_MT_XATTR */
	uint32_t ino;
	uint16_t count;
	uint16_t used;
	uint64_t reserved;
	uint8_t data[AVFS_MPAYLOAD - 16];
};
_Static_assert(sizeof(struct avfs_xblock) == AVFS_MBLOCK, "xblock");
#define AVFS_XATTR_ROOM ((uint32_t)(AVFS_MPAYLOAD - 16))	/* 4016 bytes of entries */
#define AVFS_XENT_SIZE(nl, vl) ((sizeof(struct avfs_xent) + (nl) + (vl) + 3u) & ~3u)

/* Small-file blocks (format version 3): data blocks shared by the extents of small files,
 * each described by one dynamic metadata block of type AVFS_MT_SMALL that holds a bit per
 * 4 KiB unit of the data block (set: some inode's extent holds it). A pool block is set in
 * the data bitmap like any data block; it is freed with its last extent. A file is small
 * while its data fits AVFS_SMALL_MAX(block size) bytes; its inode's direct[0] names the pool
 * block (valid counts initialized pages of the extent), small_unit/small_units the extent.
 * Block sizes up to AVFS_SMALL_MAX_SHIFT only: the units of a block fit one map. */
#define AVFS_SMALL_MAX_SHIFT 26			/* 64 MiB: 16,384 units */
#define AVFS_SMALL_INODES 131072u		/* mkfs's default inodes: at least one per
						 * 128 KiB of the device up to this many */
#define AVFS_SMALL_MAX(bs) ((bs) / 4 < (1u << 20) ? (bs) / 4 : (1u << 20))
struct avfs_sblock {
	struct avfs_mhdr hdr;		/* type AVFS_MT_SMALL */
	uint32_t block;			/* the data block (index, not + 1) */
	uint16_t units;			/* its 4 KiB units: block size / 4096 */
	uint16_t used;			/* bits set in map */
	uint64_t reserved;
	uint8_t map[AVFS_MPAYLOAD - 16];	/* bit u: unit u in use */
};
_Static_assert(sizeof(struct avfs_sblock) == AVFS_MBLOCK, "sblock");
_Static_assert((1u << (AVFS_SMALL_MAX_SHIFT - 12)) <= 8 * (AVFS_MPAYLOAD - 16), "units fit");

#define AVFS_BITS_PER_BLOCK ((uint64_t)AVFS_MPAYLOAD * 8)	/* 32256 */

#if __BYTE_ORDER != __LITTLE_ENDIAN
#error "AVFS stores its structures little-endian and this build maps them directly"
#endif

#endif
