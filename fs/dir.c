/*
 * dir.c — directories: entries in directory blocks, their in-memory hash index (name CRC32C
 * -> block, slot) that makes lookups and inserts O(1), and readdir with stable cookies. It
 * places and removes entries; what a name means (links, renames) is namei.c's.
 */
#include "fs_i.h"

#include "crc32c.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HDR sizeof(struct avfs_mhdr)
#define DIR_BLOCKS_MAX (1u << 24)	/* 63 * 16 M slots: beyond any sane directory */

static void dirindex_free(struct dirindex *d)
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

	if (fs_bmap_get(fs, dir, di, bi, &p) || !p.block || !fs_meta_ok(fs, p.block, AVFS_MT_DIR))
		return 0;
	return p.block;
}

static struct dirindex *dix_get(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, int *err)
{
	struct dirindex *x = fs->dix[dir];

	if (x)
		return x;
	x = calloc(1, sizeof(*x));
	if (!x || dix_blocks(x, di->nblocks > DIR_BLOCKS_MAX ? DIR_BLOCKS_MAX : di->nblocks)) {
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

/* The most directory blocks a directory can span: the index's limit, and no more than the
 * dynamic metadata region holds. */
static uint64_t dir_blocks_max(const struct avfs_fs *fs)
{
	uint64_t dyn = fs->sb.meta_blocks - fs->sb.dyn_start;

	return dyn < DIR_BLOCKS_MAX ? dyn : DIR_BLOCKS_MAX;
}

struct avfs_dinode *fs_dir_get(struct avfs_fs *fs, uint64_t dir, int *err)
{
	struct avfs_dinode *di = fs_ino_get(fs, dir, err);

	if (di && !S_ISDIR(di->mode)) {
		*err = -ENOTDIR;
		return NULL;
	}
	/* every walk over the directory runs to nblocks: a damaged count must not make it
	 * run for 2^32 rounds */
	if (di && di->nblocks > dir_blocks_max(fs)) {
		fs_why(fs, "directory inode %llu (metadata block %llu) spans %llu blocks, more than "
		       "the %llu a directory can have: run fsck.avfs -y",
		       (unsigned long long)dir, (unsigned long long)fs_ino_block(fs, dir),
		       (unsigned long long)di->nblocks, (unsigned long long)dir_blocks_max(fs));
		*err = -EUCLEAN;
		return NULL;
	}
	return di;
}

void fs_dir_forget(struct avfs_fs *fs, uint64_t dir)
{
	dirindex_free(fs->dix[dir]);
	fs->dix[dir] = NULL;
}

int fs_dir_empty(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di)
{
	int err = 0;
	struct dirindex *x = dix_get(fs, dir, di, &err);

	return x ? !x->n : err;
}

/* Find name: its index slot (for deletion) and location. */
int fs_dir_find(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, const char *name,
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

/* Where an entry of len name bytes goes in dir, and what putting it there costs. Only the
 * index changes (it grows for one more entry); nothing on disk does. */
int fs_dir_prepare(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, size_t len,
		   struct fs_dir_place *at)
{
	int err = 0;
	struct dirindex *x = dix_get(fs, dir, di, &err);
	size_t need = dent_slots(len);
	struct fs_bmap_cost c;

	if (!x)
		return err;
	if ((x->used + 1) * 10 >= x->cap * 7 && (err = dix_grow(x)))
		return err;
	*at = (struct fs_dir_place){ .blocks = 1 };	/* the entry's block */
	/* a block with a free run of `need` slots: the hint first, then any */
	for (size_t pass = 0; pass < 2; pass++) {
		size_t from = pass == 0 ? x->hint : 0, to = pass == 0 ? x->hint + 1 : x->nblk;

		for (size_t b = from; b < to && b < x->nblk; b++) {
			uint32_t m = x->freec[b] < need ? 0 : dir_block(fs, dir, di, b);
			unsigned run = 0;

			for (unsigned k = 0; m && k < AVFS_DSLOTS;) {
				if (dent_valid(fs, fs->blocks[m], k)) {
					k += dslot(fs->blocks[m], k)->nslots;
					run = 0;
					continue;
				}
				if (++run == need) {
					at->bi = b;
					at->slot = k + 1 - (unsigned)need;
					return 0;
				}
				k++;
			}
		}
	}
	/* a new block at the end, with the map blocks on its way */
	at->bi = x->nblk;
	at->grow = true;
	if (at->bi >= DIR_BLOCKS_MAX)
		return -ENOSPC;
	if ((err = dix_blocks(x, at->bi + 1)))
		return err;
	x->nblk = at->bi;	/* committed only once the block exists */
	fs_bmap_cost(fs, di, at->bi, at->bi + 1, &c);
	at->new_meta = 1 + c.missing;	/* the block itself is the entry's */
	at->blocks += c.nodes + c.missing + (at->new_meta < fs->sb.mbitmap_blocks ?
					     at->new_meta : fs->sb.mbitmap_blocks);
	return 0;
}

int fs_dir_insert(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di,
		  const struct fs_dir_place *at, const char *name, size_t len, uint64_t ino,
		  uint32_t mode)
{
	struct dirindex *x = fs->dix[dir];
	size_t need = dent_slots(len);
	uint32_t h = name_hash(name, len), m;
	struct avfs_dent *d;
	int err;

	if (at->grow) {
		struct avfs_bptr *slot;
		uint64_t sm, nm;

		if ((err = fs_meta_alloc(fs, AVFS_MT_DIR, &nm)))
			return err;
		if ((err = fs_bmap_slot(fs, dir, di, at->bi, true, &slot, &sm))) {
			fs_meta_free(fs, nm);
			return err;
		}
		slot->block = (uint32_t)nm;
		fs_dirty(fs, sm);
		x->nblk = at->bi + 1;
		x->freec[at->bi] = AVFS_DSLOTS;
		di->nblocks = at->bi + 1;
		di->size = (at->bi + 1) * AVFS_MBLOCK;
		fs_ino_dirty(fs, dir);
	}
	m = dir_block(fs, dir, di, at->bi);
	d = dslot(fs->blocks[m], at->slot);
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
	x->freec[at->bi] -= (uint8_t)need;
	x->hint = at->bi;
	dix_put(x, h, (uint32_t)(at->bi << 6 | at->slot));	/* cannot fail: prepared */
	return 0;
}

void fs_dir_del(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, size_t hslot,
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
void fs_dir_retarget(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, uint32_t loc,
		     uint64_t ino, uint32_t mode)
{
	uint32_t m = dir_block(fs, dir, di, loc >> 6);
	struct avfs_dent *d = dslot(fs->blocks[m], loc & 63);

	d->ino = ino;
	d->type = fs_dtype_of(mode);
	fs_dirty(fs, m);
}

int avfs_fs_readdir(struct avfs_fs *fs, uint64_t dir, uint64_t cookie, avfs_filldir_fn fn,
		    void *arg)
{
	int err = 0;
	struct avfs_dinode *di = fs_dir_get(fs, dir, &err);
	char name[AVFS_NAME_MAX + 1];

	if (!di)
		return err;
	if (cookie == 0 && fn(arg, ".", dir, DT_DIR, 1))
		return 0;
	if (cookie <= 1 && fn(arg, "..", fs_ino_ok(fs, di->parent) ? di->parent : AVFS_ROOT_INO,
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
