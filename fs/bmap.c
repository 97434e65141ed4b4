/*
 * bmap.c — block maps: the pointer trees from a block index of a file (or directory) to its
 * data block (or directory block), and the allocation and release of the data blocks they
 * point to. Anything read from a map block is range-checked before it is followed.
 */
#include "fs_i.h"

#include <errno.h>
#include <string.h>

#define PER AVFS_MAP_PER_BLOCK
#define HDR sizeof(struct avfs_mhdr)

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
		return fs_meta_ok(fs, *ptr, AVFS_MT_MAP) ? 0 : -EUCLEAN;
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
int fs_bmap_slot(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		 bool create, struct avfs_bptr **slot, uint64_t *slot_m)
{
	uint32_t *root;
	int levels, err;
	uint64_t idx;

	if (k < AVFS_NDIRECT) {
		*slot = &di->direct[k];
		*slot_m = fs_ino_block(fs, ino);
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
	err = map_child(fs, root, create, fs_ino_block(fs, ino));
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
int fs_bmap_get(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k,
		struct avfs_bptr *out)
{
	struct avfs_bptr *s;
	uint64_t m;
	int err = fs_bmap_slot(fs, ino, di, k, false, &s, &m);

	if (err == -ENOENT) {
		*out = (struct avfs_bptr){ 0 };
		return 0;
	}
	if (err)
		return err;
	*out = *s;
	return 0;
}

int fs_data_alloc(struct avfs_fs *fs, uint64_t prev, uint32_t *out)
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

void fs_data_free(struct avfs_fs *fs, uint32_t b)
{
	struct avfs_super *sb = fs_sb(fs);

	if (b >= fs->sb.data_blocks || !avfs_bitmap_test(&fs->dmap, b) ||
	    avfs_bitmap_test(&fs->pfree, b))
		return;
	fs_set_bit(fs, fs->sb.dbitmap_start, b, false);
	sb->free_data++;
	fs_dirty(fs, 0);
	/* reusable once the transaction is on disk (avfs_fs_plan_done): before, a crash would
	 * leave the old owner pointing at new data */
	avfs_bitmap_set(&fs->pfree, b);
}

uint64_t fs_data_avail(const struct avfs_fs *fs)
{
	return fs->sb.data_blocks - fs->dmap.nset;
}

uint64_t avfs_fs_data_freeing(const struct avfs_fs *fs)
{
	const struct avfs_super *sb = avfs_fs_super(fs);
	uint64_t avail = fs_data_avail(fs);

	/* the superblock counts a block free at once; the allocator once its commit is done */
	return sb->free_data > avail ? sb->free_data - avail : 0;
}

int fs_bmap_free_one(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t k)
{
	struct avfs_bptr *s;
	uint64_t m;
	int err = fs_bmap_slot(fs, ino, di, k, false, &s, &m);

	if (err == -ENOENT || (!err && !s->block))
		return 0;
	if (err)
		return err;
	fs_data_free(fs, s->block - 1);
	*s = (struct avfs_bptr){ 0 };
	fs_dirty(fs, m);
	if (di->nblocks)
		di->nblocks--;
	fs_ino_dirty(fs, ino);
	return 1;
}

/* Free, below one tree node, every leaf with index >= from (relative to the node's first
 * index); free map blocks left empty. Returns true when the node is now empty. */
static bool tree_trim(struct avfs_fs *fs, uint32_t node, int level, uint64_t first, uint64_t from,
		      bool data, uint64_t *freed)
{
	uint64_t span = level == 2 ? (uint64_t)PER * PER : level == 1 ? PER : 1;
	struct avfs_bptr *s;
	bool empty = true;

	if (!fs_meta_ok(fs, node, AVFS_MT_MAP))
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
					fs_data_free(fs, s[i].block - 1);
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
void fs_bmap_trim(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint64_t from,
		  bool data)
{
	uint64_t freed = 0;
	uint32_t *roots[3] = { &di->indirect, &di->dindirect, &di->tindirect };
	uint64_t base[3] = { AVFS_NDIRECT, AVFS_NDIRECT + PER, AVFS_NDIRECT + PER + (uint64_t)PER * PER };

	for (uint64_t k = from; k < AVFS_NDIRECT; k++) {
		if (!di->direct[k].block)
			continue;
		if (data)
			fs_data_free(fs, di->direct[k].block - 1);
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

/* ---- credits: what a change of a range of indexes may cost ---- */

/* Indexes under one node of height h (0: a map block of pointers to leaves). */
static uint64_t span(int h)
{
	return h == 0 ? PER : h == 1 ? (uint64_t)PER * PER : (uint64_t)PER * PER * PER;
}

/* The nodes of a missing subtree of height h that covering [a, b) (relative) would create. */
static uint64_t nodes_over(uint64_t a, uint64_t b, int h)
{
	uint64_t n = 0;

	for (int l = 0; l <= h; l++)
		n += (b - 1) / span(l) - a / span(l) + 1;
	return n;
}

/* Walk the nodes of one subtree that hold indexes of [a, b) (relative to its first). */
static void cost_walk(struct avfs_fs *fs, uint32_t node, int h, uint64_t a, uint64_t b,
		      struct fs_bmap_cost *c)
{
	uint64_t child = h ? span(h - 1) : 1;
	const struct avfs_bptr *s;

	if (!node) {
		c->missing += nodes_over(a, b, h);
		return;
	}
	if (!fs_meta_ok(fs, node, AVFS_MT_MAP))
		return;	/* corrupt: the change stops at it with -EUCLEAN */
	c->nodes++;
	s = map_slots(fs, node);
	for (uint64_t i = a / child; i <= (b - 1) / child; i++) {
		uint64_t lo = i * child;

		if (!h)
			c->mapped += s[i].block != 0;
		else
			cost_walk(fs, s[i].block, h - 1, a > lo ? a - lo : 0,
				  b < lo + child ? b - lo : child, c);
	}
}

void fs_bmap_cost(struct avfs_fs *fs, struct avfs_dinode *di, uint64_t k0, uint64_t k1,
		  struct fs_bmap_cost *c)
{
	uint32_t roots[3] = { di->indirect, di->dindirect, di->tindirect };
	uint64_t base = AVFS_NDIRECT;

	memset(c, 0, sizeof(*c));
	for (uint64_t k = k0; k < k1 && k < AVFS_NDIRECT; k++)
		c->mapped += di->direct[k].block != 0;
	for (int h = 0; h < 3; base += span(h), h++) {
		if (k1 <= base || k0 >= base + span(h))
			continue;
		cost_walk(fs, roots[h], h, k0 > base ? k0 - base : 0,
			  k1 - base < span(h) ? k1 - base : span(h), c);
	}
}
