/*
 * inode.c — inodes, block-map trees, directories and the namespace operations of the core,
 * all on the in-memory metadata images; every change marks its blocks dirty for the
 * running transaction. Data is never touched here: data I/O is returned as extents.
 * Anything read from a block is range-checked before it is followed (corrupt images).
 */
#include "fs_i.h"

#include "crc32c.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PER AVFS_MAP_PER_BLOCK
#define HDR sizeof(struct avfs_mhdr)
#define MAX_LINKS 65000u

/* ---- inodes ---- */

static bool ino_ok(const struct avfs_fs *fs, uint64_t ino)
{
	return ino >= 1 && ino <= fs->sb.ninodes;
}

static uint64_t ino_block(const struct avfs_fs *fs, uint64_t ino)
{
	return fs->sb.itable_start + (ino - 1) / AVFS_INODES_PER_BLOCK;
}

static struct avfs_dinode *ino_raw(struct avfs_fs *fs, uint64_t ino)
{
	uint8_t *b = fs->blocks[ino_block(fs, ino)];

	return (struct avfs_dinode *)(b + HDR) + (ino - 1) % AVFS_INODES_PER_BLOCK;
}

/* A live inode, or NULL (-ENOENT / -EINVAL in *err). */
static struct avfs_dinode *ino_get(struct avfs_fs *fs, uint64_t ino, int *err)
{
	struct avfs_dinode *di = NULL;

	if (!ino_ok(fs, ino)) {
		*err = -EINVAL;
		return NULL;
	}
	di = ino_raw(fs, ino);
	if (!di->mode || !avfs_bitmap_test(&fs->imap, ino - 1)) {
		*err = -ENOENT;
		return NULL;
	}
	return di;
}

void fs_ino_dirty(struct avfs_fs *fs, uint64_t ino)
{
	fs_dirty(fs, ino_block(fs, ino));
}

static int ino_alloc(struct avfs_fs *fs, uint32_t mode, uint32_t uid, uint32_t gid, int64_t now,
		     uint64_t *out)
{
	uint64_t i = avfs_bitmap_find_zero(&fs->imap, fs->ihint, fs->sb.ninodes);
	struct avfs_dinode *di = NULL;
	struct avfs_super *sb = fs_sb(fs);

	if (i == UINT64_MAX)
		i = avfs_bitmap_find_zero(&fs->imap, 0, fs->ihint);
	if (i == UINT64_MAX)
		return -ENOSPC;
	avfs_bitmap_set(&fs->imap, i);
	fs_set_bit(fs, fs->sb.ibitmap_start, i, true);
	sb->free_inodes--;
	fs_dirty(fs, 0);
	fs->ihint = i + 1;
	di = ino_raw(fs, i + 1);
	memset(di, 0, sizeof(*di));
	di->mode = mode;
	di->uid = uid;
	di->gid = gid;
	di->nlink = 1;
	di->atime_ns = di->mtime_ns = di->ctime_ns = di->btime_ns = now;
	di->generation = (uint32_t)sb->generation++;
	fs_ino_dirty(fs, i + 1);
	*out = i + 1;
	return 0;
}

/* ---- block-map trees ---- */

static bool map_ok(struct avfs_fs *fs, uint32_t m, uint32_t type)
{
	const struct avfs_mhdr *h;

	if (m < fs->sb.dyn_start || m >= fs->nmeta || !avfs_bitmap_test(&fs->mmap, m) ||
	    !fs->blocks[m])
		return false;
	h = (const struct avfs_mhdr *)fs->blocks[m];
	return h->type == type;
}

static struct avfs_bptr *map_slots(struct avfs_fs *fs, uint32_t m)
{
	return (struct avfs_bptr *)(fs->blocks[m] + HDR);
}

/* Follow (or with create, make) one map-block pointer stored in metadata block holder. */
static int map_child(struct avfs_fs *fs, uint32_t *ptr, bool create, uint64_t holder)
{
	uint64_t m;
	int err;

	if (*ptr)
		return map_ok(fs, *ptr, AVFS_MT_MAP) ? 0 : -EUCLEAN;
	if (!create)
		return -ENOENT;
	err = fs_meta_alloc(fs, AVFS_MT_MAP, &m);
	if (err)
		return err;
	*ptr = (uint32_t)m;
	fs_dirty(fs, holder);
	return 0;
}

/* Find (or with create, make) the slot of index k in an inode's tree. *slot_m: the metadata
 * block holding the slot. -ENOENT when absent, -EUCLEAN for a corrupt pointer, -EFBIG
 * beyond the tree. */
static int bmap_slot(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		     bool create, struct avfs_bptr **slot, uint64_t *slot_m)
{
	uint32_t *root;
	int levels, err;
	uint64_t idx;

	if (k < AVFS_NDIRECT) {
		*slot = &di->direct[k];
		*slot_m = ino_block(fs, ino);
		return 0;
	}
	k -= AVFS_NDIRECT;
	if (k < PER) {
		root = &di->indirect, levels = 1;
	} else if ((k -= PER) < (uint64_t)PER * PER) {
		root = &di->dindirect, levels = 2;
	} else if ((k -= (uint64_t)PER * PER) < (uint64_t)PER * PER * PER) {
		root = &di->tindirect, levels = 3;
	} else {
		return -EFBIG;
	}
	err = map_child(fs, root, create, ino_block(fs, ino));
	if (err)
		return err;
	idx = *root;
	for (int l = levels - 1; l >= 0; l--) {
		uint64_t div = l == 2 ? (uint64_t)PER * PER : l == 1 ? PER : 1;
		struct avfs_bptr *s = &map_slots(fs, (uint32_t)idx)[(k / div) % PER];

		if (l == 0) {
			*slot = s;
			*slot_m = idx;
			return 0;
		}
		err = map_child(fs, &s->block, create, idx);
		if (err)
			return err;
		idx = s->block;
	}
	return -EUCLEAN;	/* not reached */
}

/* Read slot k without creating: the pointer, or a zero one for a hole. */
static int bmap_get(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		    struct avfs_bptr *out)
{
	struct avfs_bptr *s;
	uint64_t m;
	int err = bmap_slot(fs, ino, di, k, false, &s, &m);

	if (err == -ENOENT) {
		*out = (struct avfs_bptr){ 0 };
		return 0;
	}
	if (err)
		return err;
	*out = *s;
	return 0;
}

static void data_free(struct avfs_fs *fs, uint32_t b)
{
	struct avfs_super *sb = fs_sb(fs);

	if (b >= fs->sb.data_blocks || !avfs_bitmap_test(&fs->dmap, b))
		return;
	fs_set_bit(fs, fs->sb.dbitmap_start, b, false);
	sb->free_data++;
	fs_dirty(fs, 0);
	if (fs->npfree == fs->cappfree) {
		size_t cap = fs->cappfree ? 2 * fs->cappfree : 64;
		uint64_t *p = realloc(fs->pfree, cap * sizeof(*p));

		if (!p)
			abort();	/* the bitmap image already says free */
		fs->pfree = p;
		fs->cappfree = cap;
	}
	fs->pfree[fs->npfree++] = b;
}

static int data_alloc(struct avfs_fs *fs, uint64_t prev, uint32_t *out)
{
	int64_t b = avfs_alloc_block(&fs->alloc, prev);

	if (b == -EINVAL)
		b = avfs_alloc_block(&fs->alloc, UINT64_MAX);
	if (b < 0)
		return (int)b;
	fs_set_bit(fs, fs->sb.dbitmap_start, (uint64_t)b, true);
	fs_sb(fs)->free_data--;
	fs_dirty(fs, 0);
	*out = (uint32_t)b;
	return 0;
}

/* Free, below one tree node, every leaf with index >= from (relative to the node's first
 * index); free map blocks left empty. Returns true when the node is now empty. */
static bool tree_trim(struct avfs_fs *fs, uint32_t node, int level, uint64_t first, uint64_t from,
		      bool data, uint64_t *freed)
{
	uint64_t span = level == 2 ? (uint64_t)PER * PER : level == 1 ? PER : 1;
	struct avfs_bptr *s;
	bool empty = true;

	if (!map_ok(fs, node, AVFS_MT_MAP))
		return false;	/* corrupt: leave it for fsck */
	s = map_slots(fs, node);
	for (uint64_t i = 0; i < PER; i++) {
		uint64_t lo = first + i * span;

		if (!s[i].block)
			continue;
		if (lo + span <= from) {
			empty = false;
			continue;
		}
		if (level == 0) {
			if (lo >= from) {
				if (data)
					data_free(fs, s[i].block - 1);
				else
					fs_meta_free(fs, s[i].block);
				s[i] = (struct avfs_bptr){ 0 };
				fs_dirty(fs, node);
				(*freed)++;
			} else {
				empty = false;
			}
		} else if (tree_trim(fs, s[i].block, level - 1, lo, from, data, freed)) {
			fs_meta_free(fs, s[i].block);
			s[i] = (struct avfs_bptr){ 0 };
			fs_dirty(fs, node);
		} else {
			empty = false;
		}
	}
	return empty;
}

/* Free every mapped entry with index >= from. data: leaves are data blocks (files), else
 * metadata blocks (directories). */
static void bmap_trim(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t from,
		      bool data)
{
	uint64_t freed = 0;
	uint32_t *roots[3] = { &di->indirect, &di->dindirect, &di->tindirect };
	uint64_t base[3] = { AVFS_NDIRECT, AVFS_NDIRECT + PER, AVFS_NDIRECT + PER + (uint64_t)PER * PER };

	for (uint64_t k = from; k < AVFS_NDIRECT; k++) {
		if (!di->direct[k].block)
			continue;
		if (data)
			data_free(fs, di->direct[k].block - 1);
		else
			fs_meta_free(fs, di->direct[k].block);
		di->direct[k] = (struct avfs_bptr){ 0 };
		freed++;
	}
	for (int l = 0; l < 3; l++) {
		if (!*roots[l])
			continue;
		if (tree_trim(fs, *roots[l], l, base[l], from, data, &freed)) {
			fs_meta_free(fs, *roots[l]);
			*roots[l] = 0;
		}
	}
	di->nblocks = di->nblocks > freed ? di->nblocks - freed : 0;
	fs_ino_dirty(fs, ino);
}

/* ---- directories ---- */

void dirindex_free(struct dirindex *d)
{
	if (!d)
		return;
	free(d->keys);
	free(d->locs);
	free(d->freec);
	free(d);
}

static uint32_t name_hash(const char *name, size_t len)
{
	return avfs_crc32c(0, name, len);
}

static size_t dent_slots(size_t len)
{
	return len <= AVFS_DNAME0 ? 1 : 1 + (len - AVFS_DNAME0 + AVFS_DSLOT - 1) / AVFS_DSLOT;
}

static struct avfs_dent *dslot(uint8_t *img, unsigned s)
{
	return (struct avfs_dent *)(img + HDR + (size_t)s * AVFS_DSLOT);
}

/* Copy an entry's name out of its slots. */
static void dent_name(uint8_t *img, unsigned s, char *out)
{
	struct avfs_dent *d = dslot(img, s);
	size_t len = d->name_len, first = len < AVFS_DNAME0 ? len : AVFS_DNAME0;

	memcpy(out, d->name, first);
	if (len > first)
		memcpy(out + first, (uint8_t *)d + AVFS_DSLOT, len - first);
	out[len] = 0;
}

static bool dent_valid(const struct avfs_fs *fs, uint8_t *img, unsigned s)
{
	struct avfs_dent *d = dslot(img, s);

	return d->ino && d->ino <= fs->sb.ninodes && d->nslots >= 1 &&
	       s + d->nslots <= AVFS_DSLOTS && d->name_len >= 1 && d->name_len <= AVFS_NAME_MAX &&
	       dent_slots(d->name_len) == d->nslots;
}

static int dix_grow(struct dirindex *x)
{
	size_t cap = x->cap ? x->cap * 2 : 64;
	uint32_t *keys, *locs;

	while (x->n * 2 >= cap)
		cap *= 2;
	keys = calloc(cap, sizeof(*keys));
	locs = calloc(cap, sizeof(*locs));
	if (!keys || !locs) {
		free(keys);
		free(locs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->cap; i++) {
		size_t j;

		if (!x->locs[i] || x->locs[i] == UINT32_MAX)
			continue;
		for (j = x->keys[i] & (cap - 1); locs[j]; j = (j + 1) & (cap - 1))
			;
		keys[j] = x->keys[i];
		locs[j] = x->locs[i];
	}
	free(x->keys);
	free(x->locs);
	x->keys = keys;
	x->locs = locs;
	x->cap = cap;
	x->used = x->n;
	return 0;
}

static int dix_put(struct dirindex *x, uint32_t hash, uint32_t loc)
{
	size_t j;

	if ((x->used + 1) * 10 >= x->cap * 7) {
		int err = dix_grow(x);

		if (err)
			return err;
	}
	for (j = hash & (x->cap - 1); x->locs[j] && x->locs[j] != UINT32_MAX; j = (j + 1) & (x->cap - 1))
		;
	if (!x->locs[j])
		x->used++;
	x->keys[j] = hash;
	x->locs[j] = loc + 1;
	x->n++;
	return 0;
}

static int dix_blocks(struct dirindex *x, size_t nblk)
{
	if (nblk > x->capblk) {
		size_t cap = x->capblk ? x->capblk : 16;
		uint8_t *f;

		while (cap < nblk)
			cap *= 2;
		f = realloc(x->freec, cap);
		if (!f)
			return -ENOMEM;
		x->freec = f;
		x->capblk = cap;
	}
	for (size_t i = x->nblk; i < nblk; i++)
		x->freec[i] = AVFS_DSLOTS;
	if (nblk > x->nblk)
		x->nblk = nblk;
	return 0;
}

/* The metadata block of directory block bi, or 0 if absent/corrupt. */
static uint32_t dir_block(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, uint64_t bi)
{
	struct avfs_bptr p;

	if (bmap_get(fs, dir, di, bi, &p) || !p.block || !map_ok(fs, p.block, AVFS_MT_DIR))
		return 0;
	return p.block;
}

static struct dirindex *dix_get(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, int *err)
{
	struct dirindex *x = fs->dix[dir];

	if (x)
		return x;
	x = calloc(1, sizeof(*x));
	if (!x || dix_blocks(x, di->nblocks > 1u << 24 ? 1u << 24 : di->nblocks)) {
		dirindex_free(x);
		*err = -ENOMEM;
		return NULL;
	}
	for (uint64_t bi = 0; bi < x->nblk; bi++) {
		uint32_t m = dir_block(fs, dir, di, bi);
		uint8_t *img;

		if (!m)
			continue;	/* a lost directory block: its names are gone, fsck says so */
		img = fs->blocks[m];
		for (unsigned s = 0; s < AVFS_DSLOTS;) {
			struct avfs_dent *d = dslot(img, s);

			if (!dent_valid(fs, img, s)) {
				s++;
				continue;
			}
			if (dix_put(x, d->hash, (uint32_t)(bi << 6 | s))) {
				dirindex_free(x);
				*err = -ENOMEM;
				return NULL;
			}
			x->freec[bi] -= d->nslots;
			s += d->nslots;
		}
	}
	fs->dix[dir] = x;
	return x;
}

/* Find name: its index slot (for deletion) and location. */
static int dir_find(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, const char *name,
		    size_t len, size_t *hslot, uint32_t *loc, uint64_t *ino)
{
	int err = 0;
	struct dirindex *x = dix_get(fs, dir, di, &err);
	uint32_t h = name_hash(name, len);
	char buf[AVFS_NAME_MAX + 1];

	if (!x)
		return err;
	if (!x->cap)
		return -ENOENT;
	for (size_t j = h & (x->cap - 1); x->locs[j]; j = (j + 1) & (x->cap - 1)) {
		uint32_t l = x->locs[j] - 1;
		uint32_t m;
		struct avfs_dent *d;

		if (x->locs[j] == UINT32_MAX || x->keys[j] != h)
			continue;
		m = dir_block(fs, dir, di, l >> 6);
		if (!m)
			continue;
		d = dslot(fs->blocks[m], l & 63);
		if (d->name_len != len || !dent_valid(fs, fs->blocks[m], l & 63))
			continue;
		dent_name(fs->blocks[m], l & 63, buf);
		if (memcmp(buf, name, len))
			continue;
		if (hslot)
			*hslot = j;
		if (loc)
			*loc = l;
		if (ino)
			*ino = d->ino;
		return 0;
	}
	return -ENOENT;
}

uint8_t fs_dtype_of(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	default: return DT_UNKNOWN;
	}
}

static void dir_touch(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, int64_t now)
{
	di->mtime_ns = di->ctime_ns = now;
	fs_ino_dirty(fs, dir);
}

/* Add an entry. Nothing changes on failure. */
static int dir_add(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, const char *name,
		   size_t len, uint64_t ino, uint32_t mode)
{
	int err = 0;
	struct dirindex *x = dix_get(fs, dir, di, &err);
	size_t need = dent_slots(len);
	uint64_t bi = UINT64_MAX;
	unsigned s = 0;
	uint32_t m = 0;
	struct avfs_dent *d;
	uint32_t h = name_hash(name, len);

	if (!x)
		return err;
	if ((x->used + 1) * 10 >= x->cap * 7 && (err = dix_grow(x)))
		return err;
	/* a block with a free run of `need` slots: the hint first, then any */
	for (size_t pass = 0; pass < 2 && bi == UINT64_MAX; pass++) {
		size_t from = pass == 0 ? x->hint : 0, to = pass == 0 ? x->hint + 1 : x->nblk;

		for (size_t b = from; b < to && b < x->nblk && bi == UINT64_MAX; b++) {
			uint8_t *img;
			unsigned run = 0;

			if (x->freec[b] < need || !(m = dir_block(fs, dir, di, b)))
				continue;
			img = fs->blocks[m];
			for (unsigned k = 0; k < AVFS_DSLOTS;) {
				if (dent_valid(fs, img, k)) {
					k += dslot(img, k)->nslots;
					run = 0;
					continue;
				}
				if (++run == need) {
					bi = b;
					s = k + 1 - (unsigned)need;
					break;
				}
				k++;
			}
		}
	}
	if (bi == UINT64_MAX) {
		struct avfs_bptr *slot;
		uint64_t sm, nm;

		bi = x->nblk;
		if (bi >= (1u << 24))
			return -ENOSPC;	/* 63 * 16 M slots: beyond any sane directory */
		err = dix_blocks(x, bi + 1);
		if (err)
			return err;
		x->nblk = bi;	/* committed only once the block exists */
		err = fs_meta_alloc(fs, AVFS_MT_DIR, &nm);
		if (err)
			return err;
		err = bmap_slot(fs, dir, di, bi, true, &slot, &sm);
		if (err) {
			fs_meta_free(fs, nm);
			return err;
		}
		slot->block = (uint32_t)nm;
		fs_dirty(fs, sm);
		x->nblk = bi + 1;
		x->freec[bi] = AVFS_DSLOTS;
		di->nblocks = bi + 1;
		di->size = (bi + 1) * AVFS_MBLOCK;
		fs_ino_dirty(fs, dir);
		m = (uint32_t)nm;
		s = 0;
	} else {
		m = dir_block(fs, dir, di, bi);
	}
	d = dslot(fs->blocks[m], s);
	memset(d, 0, need * AVFS_DSLOT);
	d->ino = ino;
	d->name_len = (uint16_t)len;
	d->type = fs_dtype_of(mode);
	d->nslots = (uint8_t)need;
	d->hash = h;
	memcpy(d->name, name, len < AVFS_DNAME0 ? len : AVFS_DNAME0);
	if (len > AVFS_DNAME0)
		memcpy((uint8_t *)d + AVFS_DSLOT, name + AVFS_DNAME0, len - AVFS_DNAME0);
	fs_dirty(fs, m);
	x->freec[bi] -= (uint8_t)need;
	x->hint = bi;
	dix_put(x, h, (uint32_t)(bi << 6 | s));	/* cannot fail: grown above */
	return 0;
}

static void dir_del(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, size_t hslot,
		    uint32_t loc)
{
	struct dirindex *x = fs->dix[dir];
	uint32_t m = dir_block(fs, dir, di, loc >> 6);
	struct avfs_dent *d = dslot(fs->blocks[m], loc & 63);
	unsigned n = d->nslots;

	memset(d, 0, (size_t)n * AVFS_DSLOT);
	fs_dirty(fs, m);
	x->freec[loc >> 6] += (uint8_t)n;
	x->locs[hslot] = UINT32_MAX;	/* tombstone */
	x->n--;
}

/* Point an existing entry at another inode (rename over an existing name). */
static void dir_retarget(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, uint32_t loc,
			 uint64_t ino, uint32_t mode)
{
	uint32_t m = dir_block(fs, dir, di, loc >> 6);
	struct avfs_dent *d = dslot(fs->blocks[m], loc & 63);

	d->ino = ino;
	d->type = fs_dtype_of(mode);
	fs_dirty(fs, m);
}

static int check_name(const char *name, size_t *len)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, AVFS_NAME_MAX + 1);
	if (n == 0)
		return -ENOENT;
	if (n > AVFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', n))
		return -EINVAL;
	*len = n;
	return 0;
}

static bool dot_or_dotdot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* A valid name not yet present in dir: 0 and its length, else -EEXIST or the name's error. */
static int name_free(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *pdi, const char *name,
		     size_t *len)
{
	int err = check_name(name, len);

	if (err)
		return err;
	if (dot_or_dotdot(name))
		return -EEXIST;
	err = dir_find(fs, dir, pdi, name, *len, NULL, NULL, NULL);
	if (err != -ENOENT)
		return err ? err : -EEXIST;
	return 0;
}

static struct avfs_dinode *dir_get(struct avfs_fs *fs, uint64_t dir, int *err)
{
	struct avfs_dinode *di = ino_get(fs, dir, err);

	if (di && !S_ISDIR(di->mode)) {
		*err = -ENOTDIR;
		return NULL;
	}
	return di;
}

/* ---- inode lifetime ---- */

static void ino_free(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di)
{
	struct avfs_super *sb = fs_sb(fs);

	bmap_trim(fs, ino, di, 0, !S_ISDIR(di->mode));
	if (di->symlink_block)
		fs_meta_free(fs, di->symlink_block);
	memset(di, 0, sizeof(*di));
	fs_ino_dirty(fs, ino);
	avfs_bitmap_clear(&fs->imap, ino - 1);
	fs_set_bit(fs, fs->sb.ibitmap_start, ino - 1, false);
	sb->free_inodes++;
	fs_dirty(fs, 0);
	if (ino - 1 < fs->ihint)
		fs->ihint = ino - 1;
	dirindex_free(fs->dix[ino]);
	fs->dix[ino] = NULL;
}

void fs_ino_free(struct avfs_fs *fs, uint64_t ino)
{
	ino_free(fs, ino, ino_raw(fs, ino));
}

/* One name of ino is gone. At the last one the inode goes too, unless it is open: then it
 * stays allocated, nameless with nlink 0, until its last handle is dropped
 * (avfs_fs_open_unref) or, after a crash, until the next read-write mount
 * (avfs_fs_free_orphans). Directories are never open here (avfs_fs_open_ref). */
static void drop_link(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, int64_t now)
{
	if (S_ISDIR(di->mode) || (di->nlink <= 1 && !fs->opens[ino])) {
		ino_free(fs, ino, di);
		return;
	}
	di->nlink = di->nlink > 1 ? di->nlink - 1 : 0;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
}

/* ---- public operations ---- */

#define RW_CHECK(fs) do { if (avfs_fs_rdonly(fs)) return -EROFS; } while (0)

int avfs_fs_getattr(struct avfs_fs *fs, uint64_t ino, struct avfs_stat *st)
{
	int err = 0;
	struct avfs_dinode *di = ino_get(fs, ino, &err);

	if (!di)
		return err;
	memset(st, 0, sizeof(*st));
	st->ino = ino;
	st->mode = di->mode;
	st->uid = di->uid;
	st->gid = di->gid;
	st->nlink = di->nlink;
	st->size = di->size;
	st->atime_ns = di->atime_ns;
	st->mtime_ns = di->mtime_ns;
	st->ctime_ns = di->ctime_ns;
	st->generation = di->generation;
	st->blksize = S_ISREG(di->mode) ? (uint32_t)(avfs_fs_block_size(fs) > (1u << 20) ?
						      (1u << 20) : avfs_fs_block_size(fs)) : AVFS_MBLOCK;
	st->blocks512 = S_ISDIR(di->mode) ? di->nblocks * (AVFS_MBLOCK / 512) :
			di->nblocks * (avfs_fs_block_size(fs) / 512);
	return 0;
}

int avfs_fs_lookup(struct avfs_fs *fs, uint64_t dir, const char *name, uint64_t *ino)
{
	int err = 0;
	size_t len;
	struct avfs_dinode *di = dir_get(fs, dir, &err);

	if (!di)
		return err;
	if ((err = check_name(name, &len)))
		return err;
	if (!strcmp(name, ".")) {
		*ino = dir;
		return 0;
	}
	if (!strcmp(name, "..")) {
		*ino = ino_ok(fs, di->parent) ? di->parent : AVFS_ROOT_INO;
		return 0;
	}
	return dir_find(fs, dir, di, name, len, NULL, NULL, ino);
}

static int create_common(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
			 uint32_t uid, uint32_t gid, int64_t now, uint64_t *out,
			 struct avfs_dinode **odi, struct avfs_dinode **opdi)
{
	int err = 0;
	size_t len;
	struct avfs_dinode *pdi = dir_get(fs, dir, &err), *di;
	uint64_t ino;

	RW_CHECK(fs);
	if (!pdi)
		return err;
	if ((err = name_free(fs, dir, pdi, name, &len)))
		return err;
	err = ino_alloc(fs, mode, uid, gid, now, &ino);
	if (err)
		return err;
	di = ino_raw(fs, ino);
	pdi = ino_raw(fs, dir);	/* (same block cache: pointers stay valid) */
	err = dir_add(fs, dir, pdi, name, len, ino, mode);
	if (err) {
		ino_free(fs, ino, di);
		return err;
	}
	dir_touch(fs, dir, pdi, now);
	*out = ino;
	*odi = di;
	*opdi = pdi;
	return 0;
}

int avfs_fs_mknod(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino)
{
	struct avfs_dinode *di, *pdi;
	uint32_t t = mode & S_IFMT;

	if (t == 0)
		mode |= S_IFREG;
	else if (t != S_IFREG && t != S_IFIFO && t != S_IFSOCK && t != S_IFCHR && t != S_IFBLK)
		return -EINVAL;
	return create_common(fs, dir, name, mode, uid, gid, now, ino, &di, &pdi);
}

int avfs_fs_mkdir(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino)
{
	struct avfs_dinode *di, *pdi;
	int err;

	if (ino_ok(fs, dir)) {
		struct avfs_dinode *p = ino_raw(fs, dir);

		if (p->mode && p->nlink >= MAX_LINKS)
			return -EMLINK;
	}
	err = create_common(fs, dir, name, S_IFDIR | (mode & 07777), uid, gid, now, ino, &di, &pdi);
	if (err)
		return err;
	di->nlink = 2;
	di->parent = (uint32_t)dir;
	pdi->nlink++;
	fs_ino_dirty(fs, *ino);
	fs_ino_dirty(fs, dir);
	return 0;
}

int avfs_fs_symlink(struct avfs_fs *fs, uint64_t dir, const char *name, const char *target,
		    uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino)
{
	struct avfs_dinode *di, *pdi;
	size_t tl = target ? strnlen(target, AVFS_SYMLINK_MAX + 1) : 0;
	uint64_t m = 0;
	int err;

	if (tl == 0)
		return -ENOENT;
	if (tl > AVFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	err = create_common(fs, dir, name, S_IFLNK | 0777, uid, gid, now, ino, &di, &pdi);
	if (err)
		return err;
	if (tl < sizeof(di->symlink)) {
		memcpy(di->symlink, target, tl);
	} else {
		err = fs_meta_alloc(fs, AVFS_MT_SYMLINK, &m);
		if (err) {
			size_t len = strlen(name), hs;
			uint32_t loc;

			if (!dir_find(fs, dir, pdi, name, len, &hs, &loc, NULL))
				dir_del(fs, dir, pdi, hs, loc);
			ino_free(fs, *ino, di);
			return err;
		}
		memcpy(fs->blocks[m] + HDR, target, tl);
		di->symlink_block = (uint32_t)m;
	}
	di->size = tl;
	fs_ino_dirty(fs, *ino);
	return 0;
}

int avfs_fs_readlink(struct avfs_fs *fs, uint64_t ino, char *buf, size_t len)
{
	int err = 0;
	struct avfs_dinode *di = ino_get(fs, ino, &err);
	const char *src;
	size_t n;

	if (!di)
		return err;
	if (!S_ISLNK(di->mode))
		return -EINVAL;
	if (di->symlink_block) {
		if (!map_ok(fs, di->symlink_block, AVFS_MT_SYMLINK))
			return -EUCLEAN;
		src = (const char *)fs->blocks[di->symlink_block] + HDR;
		n = strnlen(src, AVFS_SYMLINK_MAX);
	} else {
		src = di->symlink;
		n = strnlen(src, sizeof(di->symlink));
	}
	if (!len)
		return -EINVAL;
	if (n >= len)
		n = len - 1;
	memcpy(buf, src, n);
	buf[n] = 0;
	return (int)n;
}

int avfs_fs_link(struct avfs_fs *fs, uint64_t ino, uint64_t dir, const char *name, int64_t now)
{
	int err = 0;
	size_t len;
	struct avfs_dinode *di, *pdi;

	RW_CHECK(fs);
	di = ino_get(fs, ino, &err);
	if (!di)
		return err;
	pdi = dir_get(fs, dir, &err);
	if (!pdi)
		return err;
	if (S_ISDIR(di->mode))
		return -EPERM;
	if (!di->nlink)
		return -ENOENT;	/* unlinked while open: as Linux, no new name for it */
	if (di->nlink >= MAX_LINKS)
		return -EMLINK;
	if ((err = name_free(fs, dir, pdi, name, &len)))
		return err;
	err = dir_add(fs, dir, pdi, name, len, ino, di->mode);
	if (err)
		return err;
	di->nlink++;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	dir_touch(fs, dir, pdi, now);
	return 0;
}

static int remove_common(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now,
			 bool want_dir)
{
	int err = 0;
	size_t len, hs;
	uint32_t loc;
	uint64_t ino;
	struct avfs_dinode *pdi = dir_get(fs, dir, &err), *di;

	RW_CHECK(fs);
	if (!pdi)
		return err;
	if ((err = check_name(name, &len)))
		return err;
	if (want_dir && !strcmp(name, "."))
		return -EINVAL;
	if (want_dir && !strcmp(name, ".."))
		return -ENOTEMPTY;
	if (!want_dir && dot_or_dotdot(name))
		return -EISDIR;
	err = dir_find(fs, dir, pdi, name, len, &hs, &loc, &ino);
	if (err)
		return err;
	di = ino_get(fs, ino, &err);
	if (!di)
		return -EUCLEAN;	/* an entry naming a free inode: fsck's business */
	if (want_dir) {
		struct dirindex *x;

		if (!S_ISDIR(di->mode))
			return -ENOTDIR;
		x = dix_get(fs, ino, di, &err);
		if (!x)
			return err;
		if (x->n)
			return -ENOTEMPTY;
	} else if (S_ISDIR(di->mode)) {
		return -EISDIR;
	}
	dir_del(fs, dir, pdi, hs, loc);
	if (want_dir) {
		pdi->nlink--;
		fs_ino_dirty(fs, dir);
	}
	drop_link(fs, ino, di, now);
	dir_touch(fs, dir, pdi, now);
	return 0;
}

int avfs_fs_unlink(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now)
{
	return remove_common(fs, dir, name, now, false);
}

int avfs_fs_rmdir(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now)
{
	return remove_common(fs, dir, name, now, true);
}

/* ---- open files ---- */

int avfs_fs_open_ref(struct avfs_fs *fs, uint64_t ino)
{
	int err = 0;
	struct avfs_dinode *di = ino_get(fs, ino, &err);

	if (!di)
		return err;
	if (S_ISDIR(di->mode))
		return -EISDIR;	/* rmdir frees at once: a directory never becomes an orphan */
	if (fs->opens[ino] == UINT32_MAX)
		return -ENFILE;
	fs->opens[ino]++;
	return 0;
}

/* Can ino, allocated with no name left, be freed (a type the core makes, not a directory)? */
static bool orphan(struct avfs_fs *fs, uint64_t ino, const struct avfs_dinode *di)
{
	return avfs_bitmap_test(&fs->imap, ino - 1) && di->mode && !di->nlink &&
	       !S_ISDIR(di->mode) && fs_dtype_of(di->mode) != DT_UNKNOWN;
}

int avfs_fs_open_unref(struct avfs_fs *fs, uint64_t ino)
{
	struct avfs_dinode *di;

	if (!ino_ok(fs, ino) || !fs->opens[ino])
		return -EINVAL;
	if (--fs->opens[ino])
		return 0;
	di = ino_raw(fs, ino);
	if (!orphan(fs, ino, di) || avfs_fs_rdonly(fs))
		return 0;	/* still named; or left for the next read-write mount */
	ino_free(fs, ino, di);
	return 1;
}

int64_t avfs_fs_free_orphans(struct avfs_fs *fs, bool even_open)
{
	int64_t n = 0;

	RW_CHECK(fs);
	for (uint64_t i = avfs_bitmap_find_set(&fs->imap, 0, fs->sb.ninodes); i != UINT64_MAX;
	     i = avfs_bitmap_find_set(&fs->imap, i + 1, fs->sb.ninodes)) {
		struct avfs_dinode *di = ino_raw(fs, i + 1);

		if (!orphan(fs, i + 1, di) || (fs->opens[i + 1] && !even_open))
			continue;
		ino_free(fs, i + 1, di);
		fs->opens[i + 1] = 0;
		n++;
	}
	return n;
}

/* Is `anc` the directory `d` or one of its ancestors? Bounded walk (a corrupt loop ends). */
static bool is_ancestor(struct avfs_fs *fs, uint64_t anc, uint64_t d)
{
	for (uint64_t steps = 0; steps <= fs->sb.ninodes; steps++) {
		struct avfs_dinode *di;

		if (d == anc)
			return true;
		if (d == AVFS_ROOT_INO || !ino_ok(fs, d))
			return false;
		di = ino_raw(fs, d);
		d = di->parent;
	}
	return true;	/* a loop: refuse the rename */
}

int avfs_fs_rename(struct avfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir,
		   const char *nname, unsigned flags, int64_t now)
{
	int err = 0, derr;
	size_t olen, nlen, ohs, nhs;
	uint32_t oloc, nloc;
	uint64_t sino, dino = 0;
	struct avfs_dinode *opdi, *npdi, *sdi, *ddi = NULL;

	RW_CHECK(fs);
	if (flags & ~(AVFS_RENAME_NOREPLACE | AVFS_RENAME_EXCHANGE) ||
	    (flags & AVFS_RENAME_NOREPLACE && flags & AVFS_RENAME_EXCHANGE))
		return -EINVAL;
	opdi = dir_get(fs, odir, &err);
	if (!opdi)
		return err;
	npdi = dir_get(fs, ndir, &err);
	if (!npdi)
		return err;
	if ((err = check_name(oname, &olen)) || (err = check_name(nname, &nlen)))
		return err;
	if (dot_or_dotdot(oname) || dot_or_dotdot(nname))
		return -EBUSY;
	err = dir_find(fs, odir, opdi, oname, olen, &ohs, &oloc, &sino);
	if (err)
		return err;
	sdi = ino_get(fs, sino, &err);
	if (!sdi)
		return -EUCLEAN;
	derr = dir_find(fs, ndir, npdi, nname, nlen, &nhs, &nloc, &dino);
	if (derr && derr != -ENOENT)
		return derr;
	if (!derr) {
		ddi = ino_get(fs, dino, &err);
		if (!ddi)
			return -EUCLEAN;
	}
	if (flags & AVFS_RENAME_EXCHANGE) {
		if (!ddi)
			return -ENOENT;
		if (sino == dino)
			return 0;
		if (odir != ndir && ((S_ISDIR(sdi->mode) && is_ancestor(fs, sino, ndir)) ||
				     (S_ISDIR(ddi->mode) && is_ancestor(fs, dino, odir))))
			return -EINVAL;
		dir_retarget(fs, odir, opdi, oloc, dino, ddi->mode);
		dir_retarget(fs, ndir, npdi, nloc, sino, sdi->mode);
		if (odir != ndir) {
			if (S_ISDIR(sdi->mode)) {
				sdi->parent = (uint32_t)ndir;
				opdi->nlink--;
				npdi->nlink++;
			}
			if (S_ISDIR(ddi->mode)) {
				ddi->parent = (uint32_t)odir;
				npdi->nlink--;
				opdi->nlink++;
			}
		}
		sdi->ctime_ns = ddi->ctime_ns = now;
		fs_ino_dirty(fs, sino);
		fs_ino_dirty(fs, dino);
		dir_touch(fs, odir, opdi, now);
		dir_touch(fs, ndir, npdi, now);
		return 0;
	}
	if (ddi && (flags & AVFS_RENAME_NOREPLACE))
		return -EEXIST;
	if (ddi && sino == dino)
		return 0;	/* POSIX: two links to one file, nothing to do */
	if (S_ISDIR(sdi->mode)) {
		if (odir != ndir && is_ancestor(fs, sino, ndir))
			return -EINVAL;
		if (ddi && !S_ISDIR(ddi->mode))
			return -ENOTDIR;
		if (ddi) {
			struct dirindex *x = dix_get(fs, dino, ddi, &err);

			if (!x)
				return err;
			if (x->n)
				return -ENOTEMPTY;
		}
		if (!ddi && odir != ndir && npdi->nlink >= MAX_LINKS)
			return -EMLINK;
	} else if (ddi && S_ISDIR(ddi->mode)) {
		return -EISDIR;
	}
	/* the new name first: if it cannot be made, nothing has changed */
	if (ddi) {
		dir_retarget(fs, ndir, npdi, nloc, sino, sdi->mode);
	} else {
		err = dir_add(fs, ndir, npdi, nname, nlen, sino, sdi->mode);
		if (err)
			return err;
		/* the add may have grown the index: find the old name again */
		err = dir_find(fs, odir, opdi, oname, olen, &ohs, &oloc, NULL);
		if (err)
			return -EUCLEAN;
	}
	dir_del(fs, odir, opdi, ohs, oloc);
	if (ddi) {
		if (S_ISDIR(ddi->mode))
			npdi->nlink--;
		drop_link(fs, dino, ddi, now);
	}
	if (S_ISDIR(sdi->mode) && odir != ndir) {
		sdi->parent = (uint32_t)ndir;
		opdi->nlink--;
		npdi->nlink++;
	}
	sdi->ctime_ns = now;
	fs_ino_dirty(fs, sino);
	dir_touch(fs, odir, opdi, now);
	dir_touch(fs, ndir, npdi, now);
	return 0;
}

int avfs_fs_readdir(struct avfs_fs *fs, uint64_t dir, uint64_t cookie, avfs_filldir_fn fn,
		    void *arg)
{
	int err = 0;
	struct avfs_dinode *di = dir_get(fs, dir, &err);
	char name[AVFS_NAME_MAX + 1];

	if (!di)
		return err;
	if (cookie == 0 && fn(arg, ".", dir, DT_DIR, 1))
		return 0;
	if (cookie <= 1 && fn(arg, "..", ino_ok(fs, di->parent) ? di->parent : AVFS_ROOT_INO,
			      DT_DIR, 2))
		return 0;
	if (cookie < 2)
		cookie = 2;
	for (uint64_t bi = (cookie - 2) / AVFS_DSLOTS; bi < di->nblocks; bi++) {
		uint32_t m = dir_block(fs, dir, di, bi);
		uint8_t *img;

		if (!m)
			continue;
		img = fs->blocks[m];
		for (unsigned s = 0; s < AVFS_DSLOTS;) {
			uint64_t at = 2 + bi * AVFS_DSLOTS + s;
			struct avfs_dent *d = dslot(img, s);

			if (!dent_valid(fs, img, s)) {
				s++;
				continue;
			}
			if (at >= cookie) {
				dent_name(img, s, name);
				if (fn(arg, name, d->ino, d->type, at + d->nslots))
					return 0;
			}
			s += d->nslots;
		}
	}
	return 0;
}

int avfs_fs_tail_page(struct avfs_fs *fs, uint64_t ino, uint64_t size, uint64_t *dev_off,
		      uint32_t *keep)
{
	int err = 0;
	struct avfs_dinode *di = ino_get(fs, ino, &err);
	uint64_t bs = avfs_fs_block_size(fs);
	struct avfs_bptr p;

	if (!di)
		return err;
	if (!(size % AVFS_PAGE) || !S_ISREG(di->mode) || size > di->size)
		return 1;
	if ((err = bmap_get(fs, ino, di, size / bs, &p)))
		return err;
	if (!p.block || (size % bs) / AVFS_PAGE >= p.valid || p.block > fs->sb.data_blocks)
		return 1;
	*dev_off = fs->sb.data_off + (uint64_t)(p.block - 1) * bs + (size % bs) / AVFS_PAGE * AVFS_PAGE;
	*keep = size % AVFS_PAGE;
	return 0;
}

static int set_size(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t size)
{
	uint64_t bs = avfs_fs_block_size(fs);
	uint64_t keep = (size + bs - 1) / bs;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (size < di->size) {
		bmap_trim(fs, ino, di, keep, true);
		if (size % bs) {
			struct avfs_bptr *s;
			uint64_t m;
			uint32_t pages = (uint32_t)((size % bs + AVFS_PAGE - 1) / AVFS_PAGE);

			if (!bmap_slot(fs, ino, di, size / bs, false, &s, &m) && s->valid > pages) {
				s->valid = pages;
				fs_dirty(fs, m);
			}
		}
	}
	di->size = size;
	fs_ino_dirty(fs, ino);
	return 0;
}

int avfs_fs_setattr(struct avfs_fs *fs, uint64_t ino, unsigned set, const struct avfs_stat *st,
		    int64_t now)
{
	int err = 0;
	struct avfs_dinode *di = NULL;

	RW_CHECK(fs);
	di = ino_get(fs, ino, &err);
	if (!di)
		return err;
	if (set & ~(AVFS_SET_MODE | AVFS_SET_UID | AVFS_SET_GID | AVFS_SET_SIZE | AVFS_SET_ATIME |
		    AVFS_SET_MTIME))
		return -EINVAL;
	if (set & AVFS_SET_SIZE) {
		if (S_ISDIR(di->mode))
			return -EISDIR;
		if (!S_ISREG(di->mode))
			return -EINVAL;
		err = set_size(fs, ino, di, st->size);
		if (err)
			return err;
		di->mtime_ns = now;
	}
	if (set & AVFS_SET_MODE)
		di->mode = (di->mode & S_IFMT) | (st->mode & 07777);
	if (set & AVFS_SET_UID)
		di->uid = st->uid;
	if (set & AVFS_SET_GID)
		di->gid = st->gid;
	if (set & AVFS_SET_ATIME)
		di->atime_ns = st->atime_ns;
	if (set & AVFS_SET_MTIME)
		di->mtime_ns = st->mtime_ns;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	return 0;
}

/* ---- data mapping ---- */

int fs_file_get(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode **out)
{
	int err = 0;
	struct avfs_dinode *di = ino_get(fs, ino, &err);

	if (!di)
		return err;
	if (S_ISDIR(di->mode))
		return -EISDIR;
	if (!S_ISREG(di->mode))
		return -EINVAL;
	*out = di;
	return 0;
}

static uint64_t dev_of(const struct avfs_fs *fs, uint32_t block)
{
	return fs->sb.data_off + (uint64_t)(block - 1) * (1ull << fs->sb.block_shift);
}

int fs_block_read(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		  struct avfs_bext *e)
{
	uint64_t bs = avfs_fs_block_size(fs);
	struct avfs_bptr p;
	int err = bmap_get(fs, ino, di, k, &p);

	if (err)
		return err;
	if (p.block > fs->sb.data_blocks || p.valid > bs / AVFS_PAGE)
		return -EUCLEAN;
	*e = (struct avfs_bext){ .file_off = k * bs, .dev_off = p.block ? dev_of(fs, p.block) : 0,
				 .valid = p.block ? p.valid : 0, .valid_after = p.block ? p.valid : 0 };
	return 0;
}

int avfs_fs_map_read(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		     struct avfs_bext *ext, unsigned max)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end;
	unsigned n = 0;
	int err = fs_file_get(fs, ino, &di);

	if (err)
		return err;
	if (off >= di->size || !len)
		return 0;
	end = off + len < off || off + len > di->size ? di->size : off + len;
	for (uint64_t k = off / bs; k * bs < end && n < max; k++) {
		if ((err = fs_block_read(fs, ino, di, k, &ext[n])))
			return err;
		n++;
	}
	return (int)n;
}

/* The data block of the nearest mapped index below k (the ZRR "previous block"). */
static uint64_t prev_block(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k)
{
	for (uint64_t i = k; i > 0 && k - i < 64; i--) {
		struct avfs_bptr p;

		if (!bmap_get(fs, ino, di, i - 1, &p) && p.block && p.block <= fs->sb.data_blocks)
			return p.block - 1;
	}
	return UINT64_MAX;
}

static int map_alloc(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		     struct avfs_bptr **slot)
{
	uint64_t m;
	uint32_t b = 0;
	int err = bmap_slot(fs, ino, di, k, true, slot, &m);

	if (err)
		return err;
	if ((*slot)->block) {
		if ((*slot)->block > fs->sb.data_blocks)
			return -EUCLEAN;
		return 0;
	}
	err = data_alloc(fs, prev_block(fs, ino, di, k), &b);
	if (err)
		return err;
	**slot = (struct avfs_bptr){ .block = b + 1, .valid = 0 };
	fs_dirty(fs, m);
	di->nblocks++;
	fs_ino_dirty(fs, ino);
	return 0;
}

int fs_block_write(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		   uint32_t pages, struct avfs_bext *e)
{
	struct avfs_bptr *s;
	uint64_t sm;
	int err = map_alloc(fs, ino, di, k, &s);

	if (err)
		return err;
	if (s->valid > avfs_fs_block_size(fs) / AVFS_PAGE)
		return -EUCLEAN;
	*e = (struct avfs_bext){ .file_off = k * avfs_fs_block_size(fs),
				 .dev_off = dev_of(fs, s->block), .valid = s->valid,
				 .valid_after = s->valid > pages ? s->valid : pages };
	if (e->valid_after != s->valid) {
		s->valid = e->valid_after;
		if (!bmap_slot(fs, ino, di, k, false, &s, &sm))
			fs_dirty(fs, sm);
	}
	return 0;
}

int fs_write_check(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		   struct avfs_dinode **di)
{
	int err;

	RW_CHECK(fs);
	if ((err = fs_file_get(fs, ino, di)))
		return err;
	if (off + len < off || off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	return 0;
}

int avfs_fs_map_write(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len, int64_t now,
		      struct avfs_bext *ext, unsigned max)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end = off + len;
	unsigned n = 0;
	int err = fs_write_check(fs, ino, off, len, &di);

	if (err || !len)
		return err;
	for (uint64_t k = off / bs; k * bs < end && n < max; k++) {
		uint64_t hi = (k + 1) * bs < end ? (k + 1) * bs : end;

		if ((err = fs_block_write(fs, ino, di, k, (uint32_t)((hi - k * bs + AVFS_PAGE - 1) /
								      AVFS_PAGE), &ext[n])))
			return n ? (int)n : err;
		if (hi > di->size)
			di->size = hi;
		n++;
	}
	di->mtime_ns = di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	return (int)n;
}

int avfs_fs_fallocate(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		      bool keep_size, int64_t now)
{
	struct avfs_dinode *di = NULL;
	uint64_t bs = avfs_fs_block_size(fs), end = off + len;
	int err = fs_write_check(fs, ino, off, len, &di);

	if (err)
		return err;
	if (!len)
		return -EINVAL;
	if ((end - off + bs - 1) / bs > avfs_fs_super(fs)->free_data + (off % bs ? 1 : 0) + 1) {
		/* quick refusal of what cannot fit (exact check below) */
		uint64_t need = 0;

		for (uint64_t k = off / bs; k * bs < end; k++) {
			struct avfs_bptr p;

			if ((err = bmap_get(fs, ino, di, k, &p)))
				return err;
			need += !p.block;
			if (need > avfs_fs_super(fs)->free_data)
				return -ENOSPC;
		}
	}
	for (uint64_t k = off / bs; k * bs < end; k++) {
		struct avfs_bptr *s;

		if ((err = map_alloc(fs, ino, di, k, &s)))
			return err;	/* blocks taken so far stay: they read as zeros */
	}
	if (!keep_size && end > di->size)
		di->size = end;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	return 0;
}

int avfs_fs_statfs(struct avfs_fs *fs, struct avfs_statfs *st)
{
	const struct avfs_super *sb = avfs_fs_super(fs);

	memset(st, 0, sizeof(*st));
	st->block_size = avfs_fs_block_size(fs);
	st->blocks = fs->sb.data_blocks;
	st->bfree = sb->free_data;
	st->files = fs->sb.ninodes;
	st->ffree = sb->free_inodes;
	st->namemax = AVFS_NAME_MAX;
	st->nzones = fs->sb.nzones;
	return 0;
}
