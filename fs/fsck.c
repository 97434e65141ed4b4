/*
 * fsck.c — the checker of the core: recomputes what the inodes, block maps and directories
 * reach, compares it with the bitmaps, link counts and counters, and repairs into the running
 * transaction. Sans-I/O: it never reads a device (blocks the mount did not load stay
 * invisible to it) and never prints; the driver (tools/fsck.avfs.c) does both.
 *
 * Passes, in order (each repair must only rely on what the passes before it made true):
 *  1. inodes and block maps: modes, pointer ranges and types, blocks claimed twice,
 *     nblocks, symlink targets, extended attribute blocks; builds what is in use ("seen" bitmaps, owner of each
 *     dynamic metadata block).
 *  2. the tree from the root with an explicit stack: every entry, parent pointers, names
 *     counted per inode, every directory entered at most once (of two names of one
 *     directory the one in the directory its ".." names wins; the other is removed).
 *  3. bitmaps (on disk and in memory) against pass 1.
 *  4. orphans: a non-directory with nlink 0 and no name was unlinked while open (POSIX
 *     keeps it until the last close; a crash leaves it): counted, not an error, and freed
 *     through the core on repair. Other unreachable inodes are linked into /lost+found as
 *     "#<ino>" through the core (needs the bitmaps of pass 3); only the top of an orphaned
 *     subtree gets a name, its walk reaches the rest.
 *  5. link counts; 6. superblock counters.
 * Blocks claimed twice: the lower inode keeps them, the later reference becomes a hole
 * (no data is copied: that would be I/O).
 * Everything read from an image is range-checked before it is followed; loops are bounded
 * by the geometry (each directory is entered once, map trees are three levels deep).
 */
#include "fsck.h"

#include "crc32c.h"
#include "fs_i.h"
#include "grow.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HDR sizeof(struct avfs_mhdr)
#define PER AVFS_MAP_PER_BLOCK
#define BITS AVFS_BITS_PER_BLOCK

/* One entry of the per-directory name table (duplicate names). */
struct name_slot {
	uint32_t hash;
	uint32_t m;		/* metadata block of the entry; 0 = empty */
	uint32_t slot;
};

/* An entry naming directory t from a directory that t's parent pointer does not name: it is
 * taken only if the walk does not reach t through its parent first, so that of two names of
 * one directory the one matching ".." survives. */
struct deferred {
	uint64_t dir, t;
	uint32_t m, slot;
};

struct ck {
	struct avfs_fs *fs;
	struct avfs_fsck_report *rep;
	bool repair;
	int err;			/* first failure (-ENOMEM, the commit hook's) */
	avfs_fsck_commit_fn commit;
	void *carg;
	uint64_t ninodes, nmeta, ndata;
	uint32_t max_valid;		/* pages per data block */
	struct avfs_bitmap dseen;	/* data blocks reached (bit b = data block b) */
	struct avfs_bitmap mseen;	/* metadata blocks in use: static ones + reached */
	struct avfs_bitmap ilive;	/* live inodes (bit i = inode i + 1) */
	struct avfs_bitmap visited;	/* directories entered by the walk (bit i = inode i) */
	struct avfs_bitmap attached;	/* orphans given a name by pass 4 (bit i = inode i) */
	struct avfs_bitmap orphan_child;	/* named by an unreachable directory */
	struct avfs_bitmap unlinked;	/* nlink 0, no name: unlinked while open (bit i = inode i) */
	uint32_t *owner;		/* [nmeta]: inode owning a dynamic block, 0 = none */
	uint32_t *cnt;			/* [ninodes + 1]: names (files) or subdirectories (dirs) */
	uint64_t *stack;
	size_t nstack, capstack;
	struct deferred *defs;		/* entries naming a directory from outside its ".." */
	size_t ndefs, capdefs, defs_done;
	struct name_slot *names;	/* open addressing, power-of-two capacity */
	size_t ncap, nnames;
	uint64_t lf;			/* /lost+found, 0 = none yet */
	bool lf_failed;
	int link_err;			/* why the last orphan could not be linked */
	uint64_t dropped;		/* findings counted beyond AVFS_FSCK_MAX_FINDINGS */
	bool version_said;		/* extended attributes on a format 1 image: said once */
	bool small_said;		/* small files on an image before format 3: said once */
	uint32_t *spool;		/* [ndata]: the sound AVFS_MT_SMALL map of a pool data
					 * block, 0 = not a pool block (NULL: no pool at all) */
	uint8_t **useen;		/* [ndata]: units of a pool block reached from inodes */
	uint32_t units;			/* units per data block */
	size_t fcap;			/* capacity of rep->findings */
};

/* ---- findings ---- */

static void finding(struct ck *ck, bool fixed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void finding(struct ck *ck, bool fixed, const char *fmt, ...)
{
	struct avfs_fsck_report *rep = ck->rep;
	char *line = NULL, *out = NULL, **f;
	va_list ap;
	int n;

	rep->errors++;
	if (fixed)
		rep->fixed++;
	if (rep->nfindings >= AVFS_FSCK_MAX_FINDINGS) {
		ck->dropped++;
		return;
	}
	f = avfs_grow(rep->findings, &ck->fcap, rep->nfindings, sizeof(*f), 16);
	if (!f) {
		ck->err = -ENOMEM;
		return;
	}
	rep->findings = f;
	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0 || asprintf(&out, "%s%s", line, fixed ? " (fixed)" : "") < 0) {
		if (n >= 0)
			free(line);
		ck->err = -ENOMEM;
		return;
	}
	free(line);
	rep->findings[rep->nfindings++] = out;
}

/* A name as it may be shown: unprintable bytes as \xNN; out holds 4 * 255 + 1. */
static const char *shown(const char *name, size_t len, char *out)
{
	char *o = out;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (isprint(c) && c != '\\')
			*o++ = (char)c;
		else
			o += sprintf(o, "\\x%02x", c);
	}
	*o = 0;
	return out;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	default: return "inode";
	}
}


static bool mode_valid(uint32_t mode)
{
	return fs_dtype_of(mode) != DT_UNKNOWN && !(mode & ~(uint32_t)(S_IFMT | 07777));
}

/* ---- access to the images, every pointer checked ---- */

static uint64_t ino_block(const struct ck *ck, uint64_t ino)
{
	return ck->fs->sb.itable_start + (ino - 1) / AVFS_INODES_PER_BLOCK;
}

/* The inode's image, or NULL when out of range or its table block is missing. */
static struct avfs_dinode *dinode(struct ck *ck, uint64_t ino)
{
	uint8_t *b;

	if (ino < 1 || ino > ck->ninodes)
		return NULL;
	b = ck->fs->blocks[ino_block(ck, ino)];
	if (!b)
		return NULL;
	return (struct avfs_dinode *)(b + HDR) + (ino - 1) % AVFS_INODES_PER_BLOCK;
}

static bool live(const struct ck *ck, uint64_t ino)
{
	return ino >= 1 && avfs_bitmap_test(&ck->ilive, ino - 1);
}

static bool live_dir(struct ck *ck, uint64_t ino)
{
	struct avfs_dinode *di = dinode(ck, ino);

	return live(ck, ino) && di && S_ISDIR(di->mode);
}

/* A dynamic metadata block that is loaded and says it is block m of this type. */
static bool meta_ok(const struct ck *ck, uint64_t m, uint32_t type)
{
	const struct avfs_mhdr *h;

	if (m < ck->fs->sb.dyn_start || m >= ck->nmeta || !ck->fs->blocks[m])
		return false;
	h = (const struct avfs_mhdr *)ck->fs->blocks[m];
	return h->magic == AVFS_MAGIC && h->blockno == m && h->type == type;
}

static void drop_dix(struct ck *ck, uint64_t ino)
{
	if (ino <= ck->ninodes)
		fs_dir_forget(ck->fs, ino);
}

/* A repair changed inode ino (and maybe what its directory index was built from). */
static void touch_inode(struct ck *ck, uint64_t ino)
{
	fs_dirty(ck->fs, ino_block(ck, ino));
	drop_dix(ck, ino);
}

static void maybe_commit(struct ck *ck)
{
	int err;

	if (!ck->repair || !ck->commit || ck->err ||
	    avfs_fs_dirty_blocks(ck->fs) < ck->fs->log_blocks / 4)
		return;
	err = ck->commit(ck->carg);
	if (err)
		ck->err = err;
}

/* A repair through the core found its running transaction full (-EAGAIN, fs.h): commit, so
 * that the same call has room. True when the caller should call again. */
static bool made_room(struct ck *ck, int err)
{
	if (err != -EAGAIN || !ck->commit || ck->err)
		return false;
	if ((err = ck->commit(ck->carg)))
		ck->err = err;
	return !err;
}

/* ---- pass 1: inodes and block maps ---- */

struct mapwalk {
	uint64_t ino;
	bool dir;		/* leaves are directory blocks, else data blocks */
	uint64_t count;		/* leaves kept */
	uint64_t end;		/* 1 + the highest index kept */
};

static void claim_meta(struct ck *ck, uint64_t m, uint64_t ino)
{
	avfs_bitmap_set(&ck->mseen, m);
	ck->owner[m] = (uint32_t)ino;
}

static void leaf(struct ck *ck, struct mapwalk *w, struct avfs_bptr *p, uint64_t holder,
		 uint64_t k)
{
	const char *why = NULL;
	uint64_t b = p->block;

	if (!b)
		return;
	if (!w->dir) {
		if (b > ck->ndata)
			why = "is beyond the data region";
		else if (ck->spool && ck->spool[b - 1])
			why = "is a small-file block";
		else if (avfs_bitmap_test(&ck->dseen, b - 1))
			why = "is already used by another file (or twice by this one)";
		if (why) {
			finding(ck, ck->repair, "inode %llu: block %llu -> data block %llu %s",
				(unsigned long long)w->ino, (unsigned long long)k,
				(unsigned long long)(b - 1), why);
			goto clear;
		}
		avfs_bitmap_set(&ck->dseen, b - 1);
		if (p->valid > ck->max_valid) {
			/* unknown how much was written: zeros never show foreign data */
			finding(ck, ck->repair, "inode %llu: block %llu claims %u initialized pages "
				"(at most %u): reset to none", (unsigned long long)w->ino,
				(unsigned long long)k, p->valid, ck->max_valid);
			if (ck->repair) {
				p->valid = 0;
				fs_dirty(ck->fs, holder);
			}
		}
	} else {
		if (!meta_ok(ck, b, AVFS_MT_DIR))
			why = "is not a directory block";
		else if (avfs_bitmap_test(&ck->mseen, b))
			why = "is already used elsewhere";
		if (why) {
			finding(ck, ck->repair, "directory %llu: block %llu -> metadata block %llu %s",
				(unsigned long long)w->ino, (unsigned long long)k,
				(unsigned long long)b, why);
			goto clear;
		}
		claim_meta(ck, b, w->ino);
	}
	w->count++;
	w->end = k + 1;
	return;
clear:
	if (ck->repair) {
		*p = (struct avfs_bptr){ 0 };
		fs_dirty(ck->fs, holder);
		if (w->dir)
			drop_dix(ck, w->ino);
	}
}

/* A map node of `level` (1: its slots are leaves) whose number is *ref, held in block holder;
 * valid: the rest of the parent's pointer (NULL for the inode's roots). */
static void node(struct ck *ck, struct mapwalk *w, uint32_t *ref, uint32_t *valid,
		 uint64_t holder, int level, uint64_t first)
{
	uint64_t m = *ref, span = level == 3 ? (uint64_t)PER * PER : level == 2 ? PER : 1;
	struct avfs_bptr *s;

	if (!m)
		return;
	if (!meta_ok(ck, m, AVFS_MT_MAP) || avfs_bitmap_test(&ck->mseen, m)) {
		finding(ck, ck->repair, "inode %llu: map block %llu (file blocks from %llu) %s",
			(unsigned long long)w->ino, (unsigned long long)m, (unsigned long long)first,
			meta_ok(ck, m, AVFS_MT_MAP) ? "is already used elsewhere" :
						      "is not a valid map block");
		if (ck->repair) {
			*ref = 0;
			if (valid)
				*valid = 0;
			fs_dirty(ck->fs, holder);
			drop_dix(ck, w->ino);
		}
		return;
	}
	claim_meta(ck, m, w->ino);
	s = (struct avfs_bptr *)(ck->fs->blocks[m] + HDR);
	for (uint64_t i = 0; i < PER && !ck->err; i++) {
		if (level == 1)
			leaf(ck, w, &s[i], m, first + i);
		else
			node(ck, w, &s[i].block, &s[i].valid, m, level - 1, first + i * span);
	}
	maybe_commit(ck);
}

static bool has_pointers(const struct avfs_dinode *di)
{
	for (int i = 0; i < AVFS_NDIRECT; i++)
		if (di->direct[i].block)
			return true;
	return di->indirect || di->dindirect || di->tindirect || di->nblocks;
}

static void walk_map(struct ck *ck, uint64_t ino, struct avfs_dinode *di)
{
	struct mapwalk w = { .ino = ino, .dir = S_ISDIR(di->mode) };
	uint64_t ib = ino_block(ck, ino);
	uint64_t expect;

	for (uint64_t k = 0; k < AVFS_NDIRECT; k++)
		leaf(ck, &w, &di->direct[k], ib, k);
	node(ck, &w, &di->indirect, NULL, ib, 1, AVFS_NDIRECT);
	node(ck, &w, &di->dindirect, NULL, ib, 2, AVFS_NDIRECT + PER);
	node(ck, &w, &di->tindirect, NULL, ib, 3, AVFS_NDIRECT + PER + (uint64_t)PER * PER);
	/* files count their blocks; a directory's nblocks is how many indexes it spans */
	expect = w.dir ? w.end : w.count;
	if (di->nblocks != expect) {
		finding(ck, ck->repair, "inode %llu: nblocks %llu but %llu %s",
			(unsigned long long)ino, (unsigned long long)di->nblocks,
			(unsigned long long)expect,
			w.dir ? "directory blocks in its map" : "data blocks mapped");
		if (ck->repair) {
			di->nblocks = expect;
			touch_inode(ck, ino);
		}
	}
	if (w.dir && di->size != expect * AVFS_MBLOCK) {
		finding(ck, ck->repair, "directory %llu: size %llu but %llu blocks",
			(unsigned long long)ino, (unsigned long long)di->size,
			(unsigned long long)expect);
		if (ck->repair) {
			di->size = expect * AVFS_MBLOCK;
			touch_inode(ck, ino);
		}
	}
}

/* A symlink's target: its length, or -1 when it cannot be read. */
static int64_t symlink_len(struct ck *ck, const struct avfs_dinode *di)
{
	size_t n;

	if (di->symlink_block) {
		uint64_t m = di->symlink_block, m2 = di->symlink_block2;
		size_t n2;

		if (!meta_ok(ck, m, AVFS_MT_SYMLINK) || avfs_bitmap_test(&ck->mseen, m))
			return -1;
		n = strnlen((const char *)ck->fs->blocks[m] + HDR, AVFS_SYMLINK_BLOCK);
		if (!m2)	/* one block: NUL-terminated in it */
			return n == 0 || n == AVFS_SYMLINK_BLOCK ? -1 : (int64_t)n;
		/* two: the first full, the rest NUL-terminated in the second */
		if (n < AVFS_SYMLINK_BLOCK || m2 == m || !meta_ok(ck, m2, AVFS_MT_SYMLINK) ||
		    avfs_bitmap_test(&ck->mseen, m2))
			return -1;
		n2 = strnlen((const char *)ck->fs->blocks[m2] + HDR,
			     AVFS_SYMLINK_MAX - AVFS_SYMLINK_BLOCK + 1);
		return n + n2 > AVFS_SYMLINK_MAX ? -1 : (int64_t)(n + n2);	/* (n2 0: 4,032) */
	}
	if (di->symlink_block2)
		return -1;	/* a second block without a first */
	n = strnlen(di->symlink, sizeof(di->symlink));
	return n == 0 || n == sizeof(di->symlink) ? -1 : (int64_t)n;
}

/* An inode's extended attribute block: its own (type, owner, not claimed twice), its entries
 * sound (bounds, names of a namespace AVFS keeps, valid ACLs, in order). A bad block is
 * dropped, bad entries from the first on (the sound ones before stay). */
static void check_xattr(struct ck *ck, uint64_t ino, struct avfs_dinode *di)
{
	uint64_t m = di->xattr;
	struct avfs_xblock *xb = meta_ok(ck, m, AVFS_MT_XATTR) ?
				 (struct avfs_xblock *)ck->fs->blocks[m] : NULL;
	const char *why = !xb ? "is not an extended attribute block" :
			  avfs_bitmap_test(&ck->mseen, m) ? "is already used elsewhere" :
			  xb->ino != ino ? "belongs to another inode" : NULL;
	uint16_t n = 0;
	size_t ok = 0;

	if (!why) {
		ok = fs_xattr_prefix(xb, &n);
		if (!n && xb->count)
			why = "holds no sound entry";
	}
	if (why) {
		finding(ck, ck->repair, "inode %llu: extended attribute block %llu %s%s",
			(unsigned long long)ino, (unsigned long long)m, why,
			ck->repair ? ": its attributes dropped" : "");
		if (ck->repair) {
			di->xattr = 0;
			touch_inode(ck, ino);
		}
		return;
	}
	if (ok != xb->used || n != xb->count) {
		finding(ck, ck->repair, "inode %llu: extended attribute block %llu: %u entries in "
			"%u bytes, but only the first %u (%zu bytes) are sound%s",
			(unsigned long long)ino, (unsigned long long)m, xb->count, xb->used, n, ok,
			ck->repair ? ": the others dropped" : "");
		if (ck->repair) {
			xb->used = (uint16_t)ok;
			xb->count = n;
			memset(xb->data + ok, 0, AVFS_XATTR_ROOM - ok);
			fs_dirty(ck->fs, m);
		}
	}
	claim_meta(ck, m, ino);
	if (ck->fs->sb.version < AVFS_FORMAT_VERSION_XATTR && !ck->version_said) {
		ck->version_said = true;
		finding(ck, ck->repair, "inode %llu has extended attributes, but the image is format "
			"%u%s", (unsigned long long)ino, ck->fs->sb.version,
			ck->repair ? ": made format 2" : "");
		if (ck->repair) {
			ck->fs->sb.version = fs_sb(ck->fs)->version = AVFS_FORMAT_VERSION_XATTR;
			fs_dirty(ck->fs, 0);
		}
	}
}

/* ---- small-file extents (format.h) ---- */

static bool ubit(const uint8_t *map, uint32_t u)
{
	return map[u / 8] >> (u % 8) & 1;
}

/* The sound pool maps: type, a data block in range not named twice, its units, bits only
 * below them. The others are not claimed (the bitmap pass frees them) and extents in them
 * are dropped. */
static void find_pools(struct ck *ck)
{
	struct avfs_fs *fs = ck->fs;

	if (!fs_small_max(fs))
		return;
	for (uint64_t m = fs->sb.dyn_start; m < ck->nmeta && !ck->err; m++) {
		const struct avfs_sblock *sb = (const struct avfs_sblock *)fs->blocks[m];
		const char *why = NULL;

		if (!sb || !avfs_fs_block_live(fs, m) || !meta_ok(ck, m, AVFS_MT_SMALL))
			continue;
		if (!ck->spool && !(ck->spool = calloc(ck->ndata, sizeof(*ck->spool))))
			ck->err = -ENOMEM;
		if (!ck->useen && !(ck->useen = calloc(ck->ndata, sizeof(*ck->useen))))
			ck->err = -ENOMEM;
		if (ck->err)
			return;
		if (sb->block >= ck->ndata)
			why = "names a data block beyond the data region";
		else if (sb->units != ck->units)
			why = "has a wrong unit count";
		else if (ck->spool[sb->block])
			why = "names the data block of another small-file map";
		if (why) {
			finding(ck, ck->repair, "small-file map %llu %s%s", (unsigned long long)m,
				why, ck->repair ? ": freed, its extents dropped" : "");
			continue;
		}
		ck->spool[sb->block] = (uint32_t)m;
	}
}

static void drop_small(struct ck *ck, uint64_t ino, struct avfs_dinode *di, const char *why)
{
	finding(ck, ck->repair, "inode %llu: small-file extent (block %u, units %u+%u) %s%s",
		(unsigned long long)ino, di->direct[0].block, di->small_unit, di->small_units, why,
		ck->repair ? ": its data dropped" : "");
	if (!ck->repair)
		return;
	memset(di->direct, 0, sizeof(di->direct));
	di->small_unit = di->small_units = 0;
	di->nblocks = 0;
	touch_inode(ck, ino);
}

/* A small file: its extent inside a sound pool, no unit shared, nothing else mapped. */
static void check_small(struct ck *ck, uint64_t ino, struct avfs_dinode *di)
{
	uint64_t b = di->direct[0].block;
	uint32_t u0 = di->small_unit, n = di->small_units;
	uint8_t **seen;
	bool other = di->indirect || di->dindirect || di->tindirect;

	for (int i = 1; i < AVFS_NDIRECT; i++)
		other |= di->direct[i].block != 0;
	if (!b || b > ck->ndata || !ck->spool || !ck->spool[b - 1]) {
		drop_small(ck, ino, di, "is not in a small-file block");
		return;
	}
	if ((uint64_t)n * AVFS_PAGE > fs_small_max(ck->fs) || u0 + n > ck->units) {
		drop_small(ck, ino, di, "is out of range");
		return;
	}
	seen = &ck->useen[b - 1];
	if (!*seen && !(*seen = calloc(1, ck->units / 8 + 1))) {
		ck->err = -ENOMEM;
		return;
	}
	for (uint32_t u = u0; u < u0 + n; u++) {
		if (ubit(*seen, u)) {
			drop_small(ck, ino, di, "shares units with another file");
			return;
		}
	}
	for (uint32_t u = u0; u < u0 + n; u++)
		(*seen)[u / 8] |= (uint8_t)(1u << (u % 8));
	if (other || di->nblocks != 1 || di->direct[0].valid > n) {
		finding(ck, ck->repair, "inode %llu: small file with other block pointers, nblocks "
			"%llu or %u initialized pages (of %u)%s", (unsigned long long)ino,
			(unsigned long long)di->nblocks, di->direct[0].valid, n,
			ck->repair ? ": cleared" : "");
		if (ck->repair) {
			memset(&di->direct[1], 0, sizeof(di->direct) - sizeof(di->direct[0]));
			di->indirect = di->dindirect = di->tindirect = 0;
			di->nblocks = 1;
			if (di->direct[0].valid > n)
				di->direct[0].valid = 0;	/* unknown: zeros, never foreign data */
			touch_inode(ck, ino);
		}
	}
	if (ck->fs->sb.version < AVFS_FORMAT_VERSION_SMALL && !ck->small_said) {
		ck->small_said = true;
		finding(ck, ck->repair, "inode %llu is a small file, but the image is format %u%s",
			(unsigned long long)ino, ck->fs->sb.version, ck->repair ? ": made format 3" : "");
		if (ck->repair) {
			ck->fs->sb.version = fs_sb(ck->fs)->version = AVFS_FORMAT_VERSION_SMALL;
			fs_dirty(ck->fs, 0);
		}
	}
}

/* Each sound pool's map against the extents found: units marked but no file's (leaks) and
 * units in a file's extent marked free; a pool no extent uses is freed (not claimed). */
static void pass_pools(struct ck *ck)
{
	for (uint64_t b = 0; ck->spool && b < ck->ndata && !ck->err; b++) {
		uint64_t m = ck->spool[b];
		struct avfs_sblock *sb;
		const uint8_t *seen = ck->useen[b];
		uint32_t used = 0, leak = 0, lost = 0;

		if (!m)
			continue;
		sb = (struct avfs_sblock *)ck->fs->blocks[m];
		for (uint32_t u = 0; u < ck->units; u++) {
			bool want = seen && ubit(seen, u), have = ubit(sb->map, u);

			used += want;
			leak += have && !want;
			lost += want && !have;
		}
		for (uint32_t u = ck->units; u < 8 * (uint32_t)sizeof(sb->map); u++)
			leak += ubit(sb->map, u);
		if (leak || lost)
			finding(ck, ck->repair, "small-file map %llu (data block %llu): %u units marked "
				"in use that no file holds, %u held but marked free%s",
				(unsigned long long)m, (unsigned long long)b, leak, lost,
				ck->repair ? ": map rebuilt" : "");
		else if (sb->used != used)
			finding(ck, ck->repair, "small-file map %llu: used %u but %u units in use",
				(unsigned long long)m, sb->used, used);
		if (ck->repair && (leak || lost || sb->used != used)) {
			memset(sb->map, 0, sizeof(sb->map));
			if (seen)
				memcpy(sb->map, seen, ck->units / 8);
			sb->used = (uint16_t)used;
			fs_dirty(ck->fs, m);
		}
		if (!used)
			continue;	/* not claimed: the bitmap pass frees it and its block */
		claim_meta(ck, m, 0);
		avfs_bitmap_set(&ck->dseen, b);
	}
}

static void free_inode_image(struct ck *ck, uint64_t ino, struct avfs_dinode *di)
{
	memset(di, 0, sizeof(*di));
	touch_inode(ck, ino);
}

static void reinit_root(struct ck *ck, struct avfs_dinode *di)
{
	int64_t t = di->mtime_ns;

	memset(di, 0, sizeof(*di));
	di->mode = S_IFDIR | 0755;
	di->nlink = 2;
	di->parent = AVFS_ROOT_INO;
	di->atime_ns = di->mtime_ns = di->ctime_ns = di->btime_ns = t;
	di->generation = 1;
	touch_inode(ck, AVFS_ROOT_INO);
}

static void pass_inodes(struct ck *ck)
{
	for (uint64_t ino = 1; ino <= ck->ninodes && !ck->err; ino++) {
		struct avfs_dinode *di = dinode(ck, ino);
		uint32_t t;

		if (!di)
			continue;
		if (ino == AVFS_ROOT_INO && (!mode_valid(di->mode) || !S_ISDIR(di->mode))) {
			finding(ck, ck->repair, "root inode: mode 0%o is not a directory%s", di->mode,
				ck->repair ? ": made an empty one (its names go to /lost+found)" : "");
			if (!ck->repair)
				continue;
			reinit_root(ck, di);
		}
		if (!di->mode)
			continue;
		if (!mode_valid(di->mode)) {
			finding(ck, ck->repair, "inode %llu: invalid mode 0%o%s",
				(unsigned long long)ino, di->mode, ck->repair ? ": inode freed" : "");
			if (ck->repair)
				free_inode_image(ck, ino, di);
			continue;
		}
		t = di->mode & S_IFMT;
		if (t == S_IFLNK) {
			int64_t len = symlink_len(ck, di);

			if (len < 0) {
				finding(ck, ck->repair, "symlink %llu: target unreadable%s",
					(unsigned long long)ino, ck->repair ? ": inode freed" : "");
				if (ck->repair) {
					free_inode_image(ck, ino, di);
					continue;
				}
			} else {
				if (di->size != (uint64_t)len) {
					finding(ck, ck->repair, "symlink %llu: size %llu but target of %lld "
						"bytes", (unsigned long long)ino,
						(unsigned long long)di->size, (long long)len);
					if (ck->repair) {
						di->size = (uint64_t)len;
						touch_inode(ck, ino);
					}
				}
				if (di->symlink_block)
					claim_meta(ck, di->symlink_block, ino);
				if (di->symlink_block2)
					claim_meta(ck, di->symlink_block2, ino);
			}
		} else if (di->symlink_block || di->symlink_block2) {
			finding(ck, ck->repair, "%s %llu: has a symlink block (%u, %u)",
				type_name(di->mode), (unsigned long long)ino, di->symlink_block,
				di->symlink_block2);
			if (ck->repair) {
				di->symlink_block = di->symlink_block2 = 0;
				touch_inode(ck, ino);
			}
		}
		if (di->rdev && t != S_IFCHR && t != S_IFBLK) {
			finding(ck, ck->repair, "%s %llu: has a device number (0x%x)",
				type_name(di->mode), (unsigned long long)ino, di->rdev);
			if (ck->repair) {
				di->rdev = 0;
				touch_inode(ck, ino);
			}
		}
		if (di->xattr)
			check_xattr(ck, ino, di);
		avfs_bitmap_set(&ck->ilive, ino - 1);
		if (t == S_IFREG && di->small_units)
			check_small(ck, ino, di);
		else if (di->small_units || di->small_unit)
			drop_small(ck, ino, di, "is not a regular file but has a small-file extent");
		if (t == S_IFREG && di->small_units) {
			/* checked above */
		} else if (t == S_IFREG || t == S_IFDIR) {
			walk_map(ck, ino, di);
		} else if (has_pointers(di)) {
			finding(ck, ck->repair, "%s %llu: has block pointers", type_name(di->mode),
				(unsigned long long)ino);
			if (ck->repair) {
				memset(di->direct, 0, sizeof(di->direct));
				di->indirect = di->dindirect = di->tindirect = 0;
				di->nblocks = 0;
				touch_inode(ck, ino);
			}
		}
		maybe_commit(ck);
	}
}

/* ---- directory blocks (only those pass 1 gave to the directory) ---- */

typedef void (*dirblock_fn)(struct ck *ck, uint64_t dir, uint64_t bi, uint64_t m, int mode);

static void dir_node(struct ck *ck, uint64_t dir, uint64_t m, int level, uint64_t first,
		     dirblock_fn fn, int mode)
{
	uint64_t span = level == 3 ? (uint64_t)PER * PER : level == 2 ? PER : 1;
	const struct avfs_bptr *s;

	if (!m || m >= ck->nmeta || ck->owner[m] != dir || !meta_ok(ck, m, AVFS_MT_MAP))
		return;
	s = (const struct avfs_bptr *)(ck->fs->blocks[m] + HDR);
	for (uint64_t i = 0; i < PER && !ck->err; i++) {
		uint64_t c = s[i].block;

		if (level > 1)
			dir_node(ck, dir, c, level - 1, first + i * span, fn, mode);
		else if (c && c < ck->nmeta && ck->owner[c] == dir && meta_ok(ck, c, AVFS_MT_DIR))
			fn(ck, dir, first + i, c, mode);
	}
}

static void for_each_dir_block(struct ck *ck, uint64_t dir, dirblock_fn fn, int mode)
{
	struct avfs_dinode *di = dinode(ck, dir);

	if (!di)
		return;
	for (uint64_t k = 0; k < AVFS_NDIRECT && !ck->err; k++) {
		uint64_t c = di->direct[k].block;

		if (c && c < ck->nmeta && ck->owner[c] == dir && meta_ok(ck, c, AVFS_MT_DIR))
			fn(ck, dir, k, c, mode);
	}
	dir_node(ck, dir, di->indirect, 1, AVFS_NDIRECT, fn, mode);
	dir_node(ck, dir, di->dindirect, 2, AVFS_NDIRECT + PER, fn, mode);
	dir_node(ck, dir, di->tindirect, 3, AVFS_NDIRECT + PER + (uint64_t)PER * PER, fn, mode);
}

/* The metadata block at directory index k, following any valid map (used for /lost+found,
 * whose new blocks pass 1 never saw), or 0. */
static uint64_t dir_lookup(struct ck *ck, struct avfs_dinode *di, uint64_t k)
{
	uint64_t m;
	int levels;

	if (k < AVFS_NDIRECT) {
		m = di->direct[k].block;
		return meta_ok(ck, m, AVFS_MT_DIR) ? m : 0;
	}
	k -= AVFS_NDIRECT;
	if (k < PER)
		m = di->indirect, levels = 1;
	else if ((k -= PER) < (uint64_t)PER * PER)
		m = di->dindirect, levels = 2;
	else if ((k -= (uint64_t)PER * PER) < (uint64_t)PER * PER * PER)
		m = di->tindirect, levels = 3;
	else
		return 0;
	for (int l = levels - 1; l >= 0; l--) {
		uint64_t div = l == 2 ? (uint64_t)PER * PER : l == 1 ? PER : 1;

		if (!meta_ok(ck, m, AVFS_MT_MAP))
			return 0;
		m = ((const struct avfs_bptr *)(ck->fs->blocks[m] + HDR))[(k / div) % PER].block;
	}
	return meta_ok(ck, m, AVFS_MT_DIR) ? m : 0;
}

/* ---- pass 2: the tree ---- */

static size_t dent_slots(size_t len)
{
	return len <= AVFS_DNAME0 ? 1 : 1 + (len - AVFS_DNAME0 + AVFS_DSLOT - 1) / AVFS_DSLOT;
}

static struct avfs_dent *dslot(uint8_t *img, unsigned s)
{
	return (struct avfs_dent *)(img + HDR + (size_t)s * AVFS_DSLOT);
}

/* The same rule as the core's dent_valid: what it does not take for an entry is free. */
static bool dent_sound(const struct ck *ck, uint8_t *img, unsigned s)
{
	const struct avfs_dent *d = dslot(img, s);

	return d->ino && d->ino <= ck->ninodes && d->nslots >= 1 &&
	       s + d->nslots <= AVFS_DSLOTS && d->name_len >= 1 && d->name_len <= AVFS_NAME_MAX &&
	       dent_slots(d->name_len) == d->nslots;
}

static void dent_name(uint8_t *img, unsigned s, char *out)
{
	const struct avfs_dent *d = dslot(img, s);
	size_t len = d->name_len, first = len < AVFS_DNAME0 ? len : AVFS_DNAME0;

	memcpy(out, d->name, first);
	if (len > first)
		memcpy(out + first, (const uint8_t *)d + AVFS_DSLOT, len - first);
	out[len] = 0;
}

static bool name_bad(const char *name, size_t len)
{
	return memchr(name, '/', len) || memchr(name, 0, len) || (len == 1 && name[0] == '.') ||
	       (len == 2 && name[0] == '.' && name[1] == '.');
}

static void names_reset(struct ck *ck)
{
	if (ck->ncap > 1024) {
		free(ck->names);
		ck->names = NULL;
		ck->ncap = 0;
	} else if (ck->names) {
		memset(ck->names, 0, ck->ncap * sizeof(*ck->names));
	}
	ck->nnames = 0;
}

static int names_grow(struct ck *ck)
{
	size_t cap = ck->ncap ? ck->ncap * 2 : 64;
	struct name_slot *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < ck->ncap; i++) {
		size_t j;

		if (!ck->names[i].m)
			continue;
		for (j = ck->names[i].hash & (cap - 1); n[j].m; j = (j + 1) & (cap - 1))
			;
		n[j] = ck->names[i];
	}
	free(ck->names);
	ck->names = n;
	ck->ncap = cap;
	return 0;
}

/* Is the name already in this directory? If not, remember it. 1 = duplicate, 0, -ENOMEM. */
static int names_add(struct ck *ck, const char *name, size_t len, uint32_t hash, uint64_t m,
		     unsigned s)
{
	char other[AVFS_NAME_MAX + 1];
	size_t j;

	if ((ck->nnames + 1) * 10 >= ck->ncap * 7 && names_grow(ck))
		return -ENOMEM;
	for (j = hash & (ck->ncap - 1); ck->names[j].m; j = (j + 1) & (ck->ncap - 1)) {
		const struct name_slot *e = &ck->names[j];

		if (e->hash != hash || dslot(ck->fs->blocks[e->m], e->slot)->name_len != len)
			continue;
		dent_name(ck->fs->blocks[e->m], e->slot, other);
		if (!memcmp(other, name, len))
			return 1;
	}
	ck->names[j] = (struct name_slot){ .hash = hash, .m = (uint32_t)m, .slot = s };
	ck->nnames++;
	return 0;
}

static int push(struct ck *ck, uint64_t dir)
{
	uint64_t *s = avfs_grow(ck->stack, &ck->capstack, ck->nstack, sizeof(*s), 256);

	if (!s)
		return -ENOMEM;
	ck->stack = s;
	ck->stack[ck->nstack++] = dir;
	return 0;
}

enum { SCAN_WALK, SCAN_MARK };

static void del_entry(struct ck *ck, uint64_t dir, uint64_t m, unsigned s)
{
	if (!ck->repair)
		return;
	memset(dslot(ck->fs->blocks[m], s), 0, (size_t)dslot(ck->fs->blocks[m], s)->nslots *
	       AVFS_DSLOT);
	fs_dirty(ck->fs, m);
	drop_dix(ck, dir);
}

static int defer(struct ck *ck, uint64_t dir, uint64_t t, uint64_t m, unsigned s)
{
	struct deferred *d = avfs_grow(ck->defs, &ck->capdefs, ck->ndefs, sizeof(*d), 64);

	if (!d) {
		ck->err = -ENOMEM;
		return -ENOMEM;
	}
	ck->defs = d;
	ck->defs[ck->ndefs++] = (struct deferred){ .dir = dir, .t = t, .m = (uint32_t)m,
						   .slot = s };
	return 0;
}

/* Directory t enters the tree under dir. 0 or -ENOMEM (in ck->err too). */
static int accept_dir(struct ck *ck, uint64_t dir, uint64_t t, const char *name)
{
	struct avfs_dinode *ti = dinode(ck, t);

	avfs_bitmap_set(&ck->visited, t);
	if (ti->parent != dir) {
		finding(ck, ck->repair, "directory %llu: parent %u but it is in directory %llu",
			(unsigned long long)t, ti->parent, (unsigned long long)dir);
		if (ck->repair) {
			ti->parent = (uint32_t)dir;
			touch_inode(ck, t);
		}
	}
	if (ck->cnt[dir] < UINT32_MAX)
		ck->cnt[dir]++;
	if (dir == AVFS_ROOT_INO && !strcmp(name, "lost+found"))
		ck->lf = t;
	ck->rep->dir_entries++;
	if (push(ck, t)) {
		ck->err = -ENOMEM;
		return -ENOMEM;
	}
	return 0;
}

/* One directory block: check (SCAN_WALK) or only note what it names (SCAN_MARK). */
static void scan_block(struct ck *ck, uint64_t dir, uint64_t bi, uint64_t m, int mode)
{
	uint8_t *img = ck->fs->blocks[m];
	char name[AVFS_NAME_MAX + 1], show[4 * AVFS_NAME_MAX + 1];

	for (unsigned s = 0; s < AVFS_DSLOTS && !ck->err;) {
		struct avfs_dent *d = dslot(img, s);
		struct avfs_dinode *ti;
		unsigned n;
		uint32_t h;
		uint64_t t;
		int dup;

		if (!d->ino) {
			s++;
			continue;
		}
		if (!dent_sound(ck, img, s)) {
			if (mode == SCAN_WALK) {
				finding(ck, ck->repair, "directory %llu: block %llu slot %u holds a "
					"corrupt entry", (unsigned long long)dir,
					(unsigned long long)bi, s);
				if (ck->repair) {
					memset(d, 0, AVFS_DSLOT);
					fs_dirty(ck->fs, m);
					drop_dix(ck, dir);
				}
			}
			s++;
			continue;
		}
		n = d->nslots;
		t = d->ino;
		dent_name(img, s, name);
		if (name_bad(name, d->name_len)) {
			if (mode == SCAN_WALK) {
				finding(ck, ck->repair, "directory %llu: invalid name '%s'%s",
					(unsigned long long)dir, shown(name, d->name_len, show),
					ck->repair ? ": entry removed" : "");
				del_entry(ck, dir, m, s);
			}
			s += n;
			continue;
		}
		if (!live(ck, t)) {
			if (mode == SCAN_WALK) {
				finding(ck, ck->repair, "directory %llu: '%s' names free inode %llu%s",
					(unsigned long long)dir, shown(name, d->name_len, show),
					(unsigned long long)t, ck->repair ? ": entry removed" : "");
				del_entry(ck, dir, m, s);
			}
			s += n;
			continue;
		}
		ti = dinode(ck, t);
		if (mode == SCAN_MARK) {
			avfs_bitmap_set(&ck->orphan_child, t);
			s += n;
			continue;
		}
		if (S_ISDIR(ti->mode) && avfs_bitmap_test(&ck->visited, t)) {
			finding(ck, ck->repair, "directory %llu: '%s' names directory %llu, which is "
				"already in the tree (a loop or a hard-linked directory)%s",
				(unsigned long long)dir, shown(name, d->name_len, show),
				(unsigned long long)t, ck->repair ? ": entry removed" : "");
			del_entry(ck, dir, m, s);
			s += n;
			continue;
		}
		h = avfs_crc32c(0, name, d->name_len);
		dup = names_add(ck, name, d->name_len, h, m, s);
		if (dup < 0) {
			ck->err = dup;
			return;
		}
		if (dup) {
			finding(ck, ck->repair, "directory %llu: name '%s' appears twice%s",
				(unsigned long long)dir, shown(name, d->name_len, show),
				ck->repair ? ": later entry removed" : "");
			del_entry(ck, dir, m, s);
			s += n;
			continue;
		}
		if (d->hash != h) {
			finding(ck, ck->repair, "directory %llu: '%s' has a wrong name hash",
				(unsigned long long)dir, shown(name, d->name_len, show));
			if (ck->repair) {
				d->hash = h;
				fs_dirty(ck->fs, m);
				drop_dix(ck, dir);
			}
		}
		if (d->type != fs_dtype_of(ti->mode)) {
			finding(ck, ck->repair, "directory %llu: '%s' has type %u but inode %llu is a %s",
				(unsigned long long)dir, shown(name, d->name_len, show), d->type,
				(unsigned long long)t, type_name(ti->mode));
			if (ck->repair) {
				d->type = fs_dtype_of(ti->mode);
				fs_dirty(ck->fs, m);
			}
		}
		if (S_ISDIR(ti->mode)) {
			if (ti->parent != dir) {
				if (defer(ck, dir, t, m, s))
					return;
				s += n;
				continue;
			}
			if (accept_dir(ck, dir, t, name))
				return;
			s += n;
			maybe_commit(ck);
			continue;
		} else if (ck->cnt[t] < UINT32_MAX) {
			ck->cnt[t]++;
		}
		ck->rep->dir_entries++;
		s += n;
		maybe_commit(ck);
	}
}

static void drain(struct ck *ck)
{
	while (ck->nstack && !ck->err) {
		uint64_t dir = ck->stack[--ck->nstack];

		names_reset(ck);
		for_each_dir_block(ck, dir, scan_block, SCAN_WALK);
	}
	ck->nstack = 0;
}

/* Enter every directory below start (already marked visited), each once; then settle the
 * deferred entries: extra names of directories reached meanwhile go, the others enter. */
static void walk_from(struct ck *ck, uint64_t start)
{
	char name[AVFS_NAME_MAX + 1], show[4 * AVFS_NAME_MAX + 1];

	if (push(ck, start)) {
		ck->err = -ENOMEM;
		return;
	}
	drain(ck);
	while (ck->defs_done < ck->ndefs && !ck->err) {
		struct deferred df = ck->defs[ck->defs_done++];
		uint8_t *img = ck->fs->blocks[df.m];
		struct avfs_dent *d = dslot(img, df.slot);

		if (d->ino != df.t || !dent_sound(ck, img, df.slot))
			continue;	/* cannot be: entries never move */
		dent_name(img, df.slot, name);
		if (avfs_bitmap_test(&ck->visited, df.t)) {
			finding(ck, ck->repair, "directory %llu: '%s' names directory %llu, which is "
				"already in the tree (a loop or a hard-linked directory)%s",
				(unsigned long long)df.dir, shown(name, d->name_len, show),
				(unsigned long long)df.t, ck->repair ? ": entry removed" : "");
			del_entry(ck, df.dir, df.m, df.slot);
			continue;
		}
		if (accept_dir(ck, df.dir, df.t, name))
			return;
		drain(ck);
	}
}

static void pass_tree(struct ck *ck)
{
	struct avfs_dinode *root = dinode(ck, AVFS_ROOT_INO);

	if (!live_dir(ck, AVFS_ROOT_INO))
		return;	/* reported by pass 1; everything is an orphan */
	if (root->parent != AVFS_ROOT_INO) {
		finding(ck, ck->repair, "root directory: parent %u (must be itself)", root->parent);
		if (ck->repair) {
			root->parent = AVFS_ROOT_INO;
			touch_inode(ck, AVFS_ROOT_INO);
		}
	}
	avfs_bitmap_set(&ck->visited, AVFS_ROOT_INO);
	walk_from(ck, AVFS_ROOT_INO);
}

/* ---- pass 3: bitmaps ---- */

static bool bit_of(const uint8_t *p, uint64_t i)
{
	return p[i / 8] >> (i % 8) & 1;
}

static void bitmap_run(struct ck *ck, const char *what, const char *unit, uint64_t bias,
		       uint64_t a, uint64_t b, unsigned key)
{
	bool c = key & 4, dk = key & 2, mm = key & 1;
	char range[64];

	if (a == b)
		snprintf(range, sizeof(range), "%s %llu", unit, (unsigned long long)(a + bias));
	else
		snprintf(range, sizeof(range), "%ss %llu-%llu", unit, (unsigned long long)(a + bias),
			 (unsigned long long)(b + bias));
	if (dk == mm)
		finding(ck, ck->repair, "%s bitmap: %s %s but marked %s", what, range,
			c ? "in use" : "free", c ? "free" : "in use");
	else
		finding(ck, ck->repair, "%s bitmap: %s %s, but marked %s on disk and %s in memory",
			what, range, c ? "in use" : "free", dk ? "in use" : "free",
			mm ? "in use" : "free");
}

static void check_bitmap(struct ck *ck, const char *what, const char *unit, uint64_t bias,
			 uint64_t start, uint64_t nblocks, const struct avfs_bitmap *want,
			 struct avfs_bitmap *mem)
{
	uint8_t *want_b = malloc(AVFS_MPAYLOAD), *mem_b = malloc(AVFS_MPAYLOAD);

	if (!want_b || !mem_b) {
		ck->err = -ENOMEM;
		goto out;
	}
	for (uint64_t k = 0; k < nblocks && !ck->err; k++) {
		uint8_t *img = ck->fs->blocks[start + k], *disk;
		uint64_t first = k * BITS, cnt, run_a = 0;
		unsigned run_key = 0;

		if (!img)
			continue;	/* the mount refuses this; nothing to compare */
		disk = img + HDR;
		cnt = first < want->nbits ? (want->nbits - first < BITS ? want->nbits - first : BITS)
					  : 0;
		avfs_bitmap_store(want, first, BITS, want_b);
		avfs_bitmap_store(mem, first, BITS, mem_b);
		/* blocks freed by a running transaction stay set in memory until it commits */
		for (uint64_t b = mem == &ck->fs->dmap ?
				  avfs_bitmap_find_set(&ck->fs->pfree, first, first + BITS) : UINT64_MAX;
		     b != UINT64_MAX; b = avfs_bitmap_find_set(&ck->fs->pfree, b + 1, first + BITS))
			mem_b[(b - first) / 8] &= (uint8_t)~(1u << ((b - first) % 8));
		if (!memcmp(want_b, disk, AVFS_MPAYLOAD) && !memcmp(want_b, mem_b, AVFS_MPAYLOAD))
			continue;
		/* runs of bits with the same (wanted, disk, memory) disagreement */
		for (uint64_t i = 0; i < BITS;) {
			bool whole = !(i % 8) && want_b[i / 8] == disk[i / 8] &&
				     want_b[i / 8] == mem_b[i / 8];
			unsigned key;

			if (whole) {
				key = 0;	/* a whole agreeing byte */
			} else {
				bool c = bit_of(want_b, i), dk = bit_of(disk, i), mm = bit_of(mem_b, i);

				key = (c == dk && c == mm) ? 0 : 8u | c << 2 | dk << 1 | mm;
			}
			if (key != run_key) {
				if (run_key)
					bitmap_run(ck, what, unit, bias, first + run_a, first + i - 1,
						   run_key);
				run_key = key;
				run_a = i;
			}
			i += whole ? 8 : 1;
		}
		if (run_key)
			bitmap_run(ck, what, unit, bias, first + run_a, first + BITS - 1, run_key);
		if (ck->repair) {
			memcpy(disk, want_b, AVFS_MPAYLOAD);
			fs_dirty(ck->fs, start + k);
			if (cnt)
				avfs_bitmap_load(mem, first, cnt, want_b);
			maybe_commit(ck);
		}
	}
out:
	free(want_b);
	free(mem_b);
}

static void pass_bitmaps(struct ck *ck)
{
	struct avfs_fs *fs = ck->fs;

	check_bitmap(ck, "metadata", "block", 0, fs->sb.mbitmap_start, fs->sb.mbitmap_blocks,
		     &ck->mseen, &fs->mmap);
	check_bitmap(ck, "data", "block", 0, fs->sb.dbitmap_start, fs->sb.dbitmap_blocks,
		     &ck->dseen, &fs->dmap);
	check_bitmap(ck, "inode", "inode", 1, fs->sb.ibitmap_start, fs->sb.ibitmap_blocks,
		     &ck->ilive, &fs->imap);
	/* blocks freed by the running transaction stay taken until it commits */
	if (ck->repair)
		for (uint64_t b = avfs_bitmap_find_set(&fs->pfree, 0, fs->pfree.nbits);
		     b != UINT64_MAX; b = avfs_bitmap_find_set(&fs->pfree, b + 1, fs->pfree.nbits))
			avfs_bitmap_set(&fs->dmap, b);
}

/* ---- pass 4: orphans ---- */

static void fix_nlink(struct ck *ck, uint64_t ino, struct avfs_dinode *di);

static bool unreached(struct ck *ck, uint64_t ino)
{
	struct avfs_dinode *di;

	if (!live(ck, ino) || ino == AVFS_ROOT_INO || !(di = dinode(ck, ino)) ||
	    avfs_bitmap_test(&ck->unlinked, ino))
		return false;
	return S_ISDIR(di->mode) ? !avfs_bitmap_test(&ck->visited, ino) : !ck->cnt[ino];
}

/* Files unlinked while open: what a crash leaves between unlink and the last close. The
 * next read-write mount would free them; a repair does it now (pass 3 made the bitmaps the
 * core frees from agree with what pass 1 found, so only this inode's blocks go). */
static void pass_unlinked(struct ck *ck)
{
	for (uint64_t ino = AVFS_ROOT_INO + 1; ino <= ck->ninodes && !ck->err; ino++) {
		struct avfs_dinode *di = dinode(ck, ino);

		if (!live(ck, ino) || !di || S_ISDIR(di->mode) || di->nlink || ck->cnt[ino])
			continue;
		ck->rep->orphans++;
		avfs_bitmap_set(&ck->unlinked, ino);
		if (!ck->repair)
			continue;
		fs_ino_free(ck->fs, ino);
		avfs_bitmap_clear(&ck->ilive, ino - 1);
		maybe_commit(ck);
	}
}

/* /lost+found: the one the walk found in the root, or a new one. 0 if impossible. */
static uint64_t lost_found(struct ck *ck)
{
	struct avfs_dinode *root = dinode(ck, AVFS_ROOT_INO);
	uint64_t lf;
	int err;

	if (ck->lf && live_dir(ck, ck->lf))
		return ck->lf;
	if (ck->lf_failed || !live_dir(ck, AVFS_ROOT_INO)) {
		ck->link_err = ck->lf_failed ? ck->link_err : -ENOTDIR;
		return 0;
	}
	fix_nlink(ck, AVFS_ROOT_INO, root);	/* a wild count would make mkdir refuse */
	err = avfs_fs_mkdir(ck->fs, AVFS_ROOT_INO, "lost+found", 0700, 0, 0, root->mtime_ns, &lf);
	if (made_room(ck, err))
		err = avfs_fs_mkdir(ck->fs, AVFS_ROOT_INO, "lost+found", 0700, 0, 0, root->mtime_ns,
				    &lf);
	if (err) {
		if (err == -ENOMEM)
			ck->err = err;
		ck->lf_failed = true;
		ck->link_err = err;
		return 0;
	}
	avfs_bitmap_set(&ck->ilive, lf - 1);
	avfs_bitmap_set(&ck->visited, lf);
	ck->cnt[lf] = 0;
	ck->cnt[AVFS_ROOT_INO]++;	/* mkdir counted it in the root's nlink */
	ck->rep->dir_entries++;
	ck->lf = lf;
	return lf;
}

/* After linking a directory orphan as a file (the core links no directories), give its
 * new entry the directory type. The core's index says in which block it went. */
static void fix_lf_dtype(struct ck *ck, uint64_t lf, uint64_t ino)
{
	struct avfs_dinode *ldi = dinode(ck, lf);
	struct dirindex *x = ck->fs->dix[lf];
	uint64_t nb = ldi->nblocks;

	for (uint64_t pass = 0; pass < 2; pass++) {
		uint64_t from = pass ? 0 : (x ? x->hint : nb), to = pass ? nb : from + 1;

		for (uint64_t bi = from; bi < to && bi < nb; bi++) {
			uint64_t m = dir_lookup(ck, ldi, bi);

			for (unsigned s = 0; m && s < AVFS_DSLOTS; s++) {
				struct avfs_dent *d = dslot(ck->fs->blocks[m], s);

				if (d->ino == ino && dent_sound(ck, ck->fs->blocks[m], s)) {
					d->type = DT_DIR;
					fs_dirty(ck->fs, m);
					return;
				}
			}
		}
	}
}

static bool link_orphan(struct ck *ck, uint64_t ino, struct avfs_dinode *di, char *name,
			size_t namelen)
{
	uint64_t lf = lost_found(ck);
	struct avfs_dinode *ldi;
	uint32_t mode = di->mode;
	int err = -EEXIST;

	if (!lf)
		return false;
	ldi = dinode(ck, lf);
	/* any count but 0 (the core gives no name to an unlinked inode); pass 5 sets the
	 * final one */
	di->nlink = 1;
	for (unsigned k = 0; k < 100 && err == -EEXIST;) {
		if (k)
			snprintf(name, namelen, "#%llu.%u", (unsigned long long)ino, k);
		else
			snprintf(name, namelen, "#%llu", (unsigned long long)ino);
		di->mode = S_ISDIR(mode) ? (S_IFREG | (mode & 07777)) : mode;
		err = avfs_fs_link(ck->fs, ino, lf, name, ldi->mtime_ns);
		di->mode = mode;
		if (made_room(ck, err))
			err = -EEXIST;	/* the same name again, now with room */
		else
			k++;
	}
	if (err) {
		if (err == -ENOMEM)
			ck->err = err;
		ck->link_err = err;
		return false;
	}
	if (S_ISDIR(mode)) {
		fix_lf_dtype(ck, lf, ino);
		di->parent = (uint32_t)lf;
		ldi->nlink++;
		if (ck->cnt[lf] < UINT32_MAX)
			ck->cnt[lf]++;
		/* only counts changed: the core kept both directory indexes up to date */
		fs_dirty(ck->fs, ino_block(ck, lf));
	}
	fs_dirty(ck->fs, ino_block(ck, ino));
	ck->rep->dir_entries++;
	return true;
}

static void attach(struct ck *ck, uint64_t ino)
{
	struct avfs_dinode *di = dinode(ck, ino);
	char name[64];
	bool ok = false;

	if (ck->repair)
		ok = link_orphan(ck, ino, di, name, sizeof(name));
	if (ck->repair && ok)
		finding(ck, true, "%s %llu: unreachable: linked as /lost+found/%s", type_name(di->mode),
			(unsigned long long)ino, name);
	else
		finding(ck, false, "%s %llu: unreachable%s%s%s", type_name(di->mode),
			(unsigned long long)ino, ck->repair ? " (cannot link it into /lost+found: " : "",
			ck->repair ? strerror(-ck->link_err) : "", ck->repair ? ")" : "");
	/* from here on it counts as named, whether or not the name could be made, so that its
	 * subtree is checked and it is reported once */
	avfs_bitmap_set(&ck->attached, ino);
	if (S_ISDIR(di->mode)) {
		avfs_bitmap_set(&ck->visited, ino);
		walk_from(ck, ino);
	} else if (ck->cnt[ino] < UINT32_MAX) {
		ck->cnt[ino]++;
	}
	maybe_commit(ck);
}

static void pass_orphans(struct ck *ck)
{
	bool any = false;

	pass_unlinked(ck);
	for (uint64_t ino = 1; ino <= ck->ninodes && !any; ino++)
		any = unreached(ck, ino);
	if (!any)
		return;
	/* the tops of orphaned subtrees first, so that a subtree comes back whole */
	for (uint64_t ino = 1; ino <= ck->ninodes && !ck->err; ino++) {
		if (unreached(ck, ino) && S_ISDIR(dinode(ck, ino)->mode))
			for_each_dir_block(ck, ino, scan_block, SCAN_MARK);
	}
	for (uint64_t ino = 1; ino <= ck->ninodes && !ck->err; ino++)
		if (unreached(ck, ino) && !avfs_bitmap_test(&ck->orphan_child, ino))
			attach(ck, ino);
	/* what is left sits in cycles of unreachable directories */
	for (uint64_t ino = 1; ino <= ck->ninodes && !ck->err; ino++)
		if (unreached(ck, ino))
			attach(ck, ino);
}

/* ---- pass 5: link counts and the census ---- */

/* Names of a file, 2 + subdirectories of a directory, as the walk counted them. */
static void fix_nlink(struct ck *ck, uint64_t ino, struct avfs_dinode *di)
{
	bool dir = S_ISDIR(di->mode);
	uint64_t want = dir ? 2 + (uint64_t)ck->cnt[ino] : ck->cnt[ino];

	if (want > UINT32_MAX)
		want = UINT32_MAX;
	if (di->nlink == want)
		return;
	/* an orphan's count is part of its linking into /lost+found */
	if (!avfs_bitmap_test(&ck->attached, ino))
		finding(ck, ck->repair, "%s %llu: nlink %u but %llu %s", type_name(di->mode),
			(unsigned long long)ino, di->nlink, (unsigned long long)want,
			dir ? "(2 + subdirectories)" : want == 1 ? "name" : "names");
	if (ck->repair) {
		di->nlink = (uint32_t)want;
		touch_inode(ck, ino);
		maybe_commit(ck);
	}
}

static void pass_links(struct ck *ck)
{
	struct avfs_fsck_report *rep = ck->rep;

	for (uint64_t ino = 1; ino <= ck->ninodes && !ck->err; ino++) {
		struct avfs_dinode *di = dinode(ck, ino);

		if (!live(ck, ino) || !di)
			continue;
		rep->inodes++;
		if (S_ISDIR(di->mode))
			rep->dirs++;
		else if (S_ISREG(di->mode))
			rep->files++;
		else if (S_ISLNK(di->mode))
			rep->symlinks++;
		else
			rep->other++;
		fix_nlink(ck, ino, di);
	}
}

/* ---- pass 6: the superblock ---- */

static void pass_super(struct ck *ck)
{
	struct avfs_fs *fs = ck->fs;
	struct avfs_super *sb = fs_sb(fs);
	const struct avfs_bitmap *d = ck->repair ? &fs->dmap : &ck->dseen;
	const struct avfs_bitmap *mm = ck->repair ? &fs->mmap : &ck->mseen;
	const struct avfs_bitmap *im = ck->repair ? &fs->imap : &ck->ilive;
	uint64_t dused = d->nset - (ck->repair ? fs->pfree.nset : 0);
	struct {
		const char *name;
		uint64_t *field, want;
	} c[] = {
		{ "free_data", &sb->free_data, ck->ndata - dused },
		{ "free_inodes", &sb->free_inodes, ck->ninodes - im->nset },
		{ "free_meta", &sb->free_meta, ck->nmeta - mm->nset },
	};
	/* (the version may rise: fs_super_version_ok; the mount took the live one's) */
	size_t geo = offsetof(struct avfs_super, last_zone) - offsetof(struct avfs_super, mblock_size);

	ck->rep->data_blocks_used = dused;
	ck->rep->meta_blocks_used = mm->nset > fs->sb.dyn_start ? mm->nset - fs->sb.dyn_start : 0;
	if (memcmp(&sb->mblock_size, &fs->sb.mblock_size, geo) || sb->version != fs->sb.version) {
		finding(ck, ck->repair, "superblock: geometry differs from the one mounted");
		if (ck->repair) {
			memcpy(&sb->mblock_size, &fs->sb.mblock_size, geo);
			sb->version = fs->sb.version;
			fs_dirty(fs, 0);
		}
	}
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (*c[i].field == c[i].want)
			continue;
		finding(ck, ck->repair, "superblock: %s %llu but %llu counted", c[i].name,
			(unsigned long long)*c[i].field, (unsigned long long)c[i].want);
		if (ck->repair) {
			*c[i].field = c[i].want;
			fs_dirty(fs, 0);
		}
	}
	if (sb->last_zone >= fs->sb.nzones || fs->alloc.last_zone >= fs->sb.nzones) {
		finding(ck, ck->repair, "superblock: last_zone %u not below the %u zones",
			sb->last_zone, fs->sb.nzones);
		if (ck->repair) {
			sb->last_zone = 0;
			fs->alloc.last_zone = 0;
			fs_dirty(fs, 0);
		}
	}
}

/* ---- entry points ---- */

static void ck_free(struct ck *ck)
{
	avfs_bitmap_free(&ck->dseen);
	avfs_bitmap_free(&ck->mseen);
	avfs_bitmap_free(&ck->ilive);
	avfs_bitmap_free(&ck->visited);
	avfs_bitmap_free(&ck->attached);
	avfs_bitmap_free(&ck->orphan_child);
	avfs_bitmap_free(&ck->unlinked);
	for (uint64_t b = 0; ck->useen && b < ck->ndata; b++)
		free(ck->useen[b]);
	free(ck->useen);
	free(ck->spool);
	free(ck->owner);
	free(ck->cnt);
	free(ck->stack);
	free(ck->names);
	free(ck->defs);
}

int avfs_fsck_check_commit(struct avfs_fs *fs, unsigned flags, struct avfs_fsck_report *rep,
			   avfs_fsck_commit_fn commit, void *arg)
{
	struct ck ck = { .fs = fs, .rep = rep, .repair = flags & AVFS_FSCK_REPAIR,
			 .commit = commit, .carg = arg };
	int err = -ENOMEM;

	if (!fs || !rep)
		return -EINVAL;
	memset(rep, 0, sizeof(*rep));
	if (ck.repair && avfs_fs_rdonly(fs))
		return -EROFS;
	if (!fs->blocks[0])
		return -EINVAL;	/* not mounted */
	ck.ninodes = fs->sb.ninodes;
	ck.nmeta = fs->nmeta;
	ck.ndata = fs->sb.data_blocks;
	ck.max_valid = (uint32_t)(avfs_fs_block_size(fs) / AVFS_PAGE);
	ck.units = ck.max_valid;
	ck.owner = calloc(ck.nmeta, sizeof(*ck.owner));
	ck.cnt = calloc(ck.ninodes + 1, sizeof(*ck.cnt));
	if (!ck.owner || !ck.cnt || avfs_bitmap_init(&ck.dseen, ck.ndata) ||
	    avfs_bitmap_init(&ck.mseen, ck.nmeta) || avfs_bitmap_init(&ck.ilive, ck.ninodes) ||
	    avfs_bitmap_init(&ck.visited, ck.ninodes + 1) ||
	    avfs_bitmap_init(&ck.attached, ck.ninodes + 1) ||
	    avfs_bitmap_init(&ck.orphan_child, ck.ninodes + 1) ||
	    avfs_bitmap_init(&ck.unlinked, ck.ninodes + 1))
		goto out;
	/* the static region is always in use (the mount insists); the journal has no images */
	for (uint64_t m = 0; m < fs->sb.dyn_start && m < ck.nmeta; m++)
		avfs_bitmap_set(&ck.mseen, m);

	find_pools(&ck);
	if (!ck.err)
		pass_inodes(&ck);
	if (!ck.err)
		pass_pools(&ck);
	if (!ck.err)
		pass_tree(&ck);
	if (!ck.err)
		pass_bitmaps(&ck);
	if (!ck.err)
		pass_orphans(&ck);
	if (!ck.err)
		pass_links(&ck);
	if (!ck.err)
		pass_super(&ck);
	if (!ck.err && ck.repair && rep->fixed) {
		/* the allocator's view of the pools follows the repaired maps */
		fs_small_close(fs);
		if (fs_small_load(fs))
			ck.err = -ENOMEM;
	}
	maybe_commit(&ck);
	if (ck.dropped && rep->nfindings < AVFS_FSCK_MAX_FINDINGS + 1) {
		char *line = NULL;
		char **f = realloc(rep->findings, (rep->nfindings + 1) * sizeof(*f));

		if (f) {
			rep->findings = f;
			if (asprintf(&line, "... and %llu more findings not listed",
				     (unsigned long long)ck.dropped) >= 0)
				rep->findings[rep->nfindings++] = line;
		}
	}
	err = ck.err;
out:
	ck_free(&ck);
	return err;
}

int avfs_fsck_check(struct avfs_fs *fs, unsigned flags, struct avfs_fsck_report *rep)
{
	return avfs_fsck_check_commit(fs, flags, rep, NULL, NULL);
}

void avfs_fsck_report_free(struct avfs_fsck_report *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->nfindings; i++)
		free(rep->findings[i]);
	free(rep->findings);
	rep->findings = NULL;
	rep->nfindings = 0;
}
