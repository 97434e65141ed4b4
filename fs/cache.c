/*
 * cache.c — the metadata block cache: every live metadata block as its 4 KiB image, block
 * headers and checksums, the running transaction's dirty set and credits, and the allocation
 * of dynamic metadata blocks. What the images hold (inodes, maps, directories) is for the
 * files above; what a transaction becomes on disk is journal.c's.
 */
#include "fs_i.h"

#include "crc32c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BITS AVFS_BITS_PER_BLOCK

void fs_hdr_init(struct avfs_fs *fs, uint8_t *img, uint64_t m, uint32_t type)
{
	struct avfs_mhdr *h = (struct avfs_mhdr *)img;

	memset(h, 0, sizeof(*h));
	h->magic = AVFS_MAGIC;
	memcpy(h->uuid, fs->sb.hdr.uuid, 16);
	h->blockno = m;
	h->type = type;
}

void fs_seal(struct avfs_fs *fs, uint8_t *img)
{
	struct avfs_mhdr *h = (struct avfs_mhdr *)img;

	(void)fs;
	h->crc = 0;
	h->crc = avfs_crc32c(0, img, AVFS_MBLOCK);
}

int fs_verify_img(const uint8_t *uuid, uint64_t m, const uint8_t *img, uint32_t type)
{
	const struct avfs_mhdr *h = (const struct avfs_mhdr *)img;
	uint8_t tmp[AVFS_MBLOCK];
	uint32_t crc;

	if (h->magic != AVFS_MAGIC || h->blockno != m || (uuid && memcmp(h->uuid, uuid, 16)))
		return -EUCLEAN;
	if (type && h->type != type)
		return -EUCLEAN;
	memcpy(tmp, img, AVFS_MBLOCK);
	((struct avfs_mhdr *)tmp)->crc = 0;
	crc = avfs_crc32c(0, tmp, AVFS_MBLOCK);
	return crc == h->crc ? 0 : -EUCLEAN;
}

int avfs_fs_verify_block(const struct avfs_fs *fs, uint64_t m, const uint8_t *img, uint32_t type)
{
	return fs_verify_img(fs->sb.hdr.uuid, m, img, type);
}

void fs_dirty(struct avfs_fs *fs, uint64_t m)
{
	avfs_bitmap_set(&fs->dirty, m);	/* (-EEXIST when it already was: fine) */
}

size_t avfs_fs_dirty_blocks(const struct avfs_fs *fs)
{
	return fs->dirty.nset;
}

/* Blocks the running transaction holds at its commit: the superblock goes with every one. */
static uint64_t txn_held(const struct avfs_fs *fs)
{
	return fs->dirty.nset + !avfs_bitmap_test(&fs->dirty, 0);
}

bool fs_txn_fits(const struct avfs_fs *fs, uint64_t blocks)
{
	return blocks + 1 <= fs->txn_cap;
}

size_t avfs_fs_txn_capacity(const struct avfs_fs *fs)
{
	return fs->txn_cap;
}

bool avfs_fs_commit_due(const struct avfs_fs *fs)
{
	return txn_held(fs) >= fs->txn_cap / 2;
}

/* Images for n metadata blocks an operation may allocate, so that fs_meta_alloc cannot fail
 * for memory once the operation has begun changing things. 0 or -ENOMEM. */
static int spare_reserve(struct avfs_fs *fs, uint64_t n)
{
	if (n > fs->capspare) {
		uint8_t **s = realloc(fs->spare, n * sizeof(*s));

		if (!s)
			return -ENOMEM;
		fs->spare = s;
		fs->capspare = n;
	}
	while (fs->nspare < n) {
		if (posix_memalign((void **)&fs->spare[fs->nspare], 64, AVFS_MBLOCK))
			return -ENOMEM;
		fs->nspare++;
	}
	return 0;
}

int fs_txn_begin(struct avfs_fs *fs, uint64_t blocks, uint64_t new_meta)
{
	int err;

	if (avfs_fs_rdonly(fs))
		return -EROFS;
	if (!fs_txn_fits(fs, blocks)) {
		fs_why(fs, "an operation of %llu metadata blocks does not fit one transaction "
		       "(%zu): the journal is too small for it", (unsigned long long)blocks,
		       fs->txn_cap);
		return -ENOSPC;
	}
	if (txn_held(fs) + blocks > fs->txn_cap)
		return -EAGAIN;	/* a commit makes room: fs_txn_fits said so */
	if (new_meta > fs->nmeta - fs->mmap.nset)
		return -ENOSPC;
	if ((err = spare_reserve(fs, new_meta)))
		return err;
	fs->credits = blocks + !avfs_bitmap_test(&fs->dirty, 0);	/* the superblock's room */
	fs->credit_base = fs->dirty.nset;
	fs->meta_credits = new_meta;
	fs->meta_allocs = 0;
	return 0;
}

void fs_txn_end(struct avfs_fs *fs)
{
	if (fs->dirty.nset - fs->credit_base > fs->credits || fs->meta_allocs > fs->meta_credits) {
		fs->overruns++;
		fs_why(fs, "an operation dirtied %llu blocks and allocated %llu for credits of "
		       "%llu and %llu", (unsigned long long)(fs->dirty.nset - fs->credit_base),
		       (unsigned long long)fs->meta_allocs, (unsigned long long)fs->credits,
		       (unsigned long long)fs->meta_credits);
	}
}

void fs_txn_forget(struct avfs_fs *fs)
{
	for (uint64_t m = avfs_bitmap_find_set(&fs->dirty, 0, fs->nmeta); m != UINT64_MAX;
	     m = avfs_bitmap_find_set(&fs->dirty, m + 1, fs->nmeta))
		avfs_bitmap_clear(&fs->dirty, m);
}

/* Set or clear one bit in the on-disk bitmap that starts at metadata block `start`. */
void fs_set_bit(struct avfs_fs *fs, uint64_t start, uint64_t bit, bool on)
{
	uint64_t m = start + bit / BITS, i = bit % BITS;
	uint8_t *p = fs->blocks[m] + sizeof(struct avfs_mhdr);

	if (on)
		p[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		p[i / 8] &= (uint8_t)~(1u << (i % 8));
	fs_dirty(fs, m);
}

int fs_meta_alloc(struct avfs_fs *fs, uint32_t type, uint64_t *out)
{
	uint64_t m = avfs_bitmap_find_zero(&fs->mmap, fs->mhint, fs->nmeta);
	uint8_t *img;

	if (m == UINT64_MAX)
		m = avfs_bitmap_find_zero(&fs->mmap, fs->sb.dyn_start, fs->mhint);
	if (m == UINT64_MAX)
		return -ENOSPC;
	if (!fs->blocks[m] && fs->nspare)
		fs->blocks[m] = fs->spare[--fs->nspare];	/* reserved by fs_txn_begin */
	if (!fs->blocks[m] && posix_memalign((void **)&fs->blocks[m], 64, AVFS_MBLOCK))
		return -ENOMEM;
	fs->meta_allocs++;
	img = fs->blocks[m];
	memset(img, 0, AVFS_MBLOCK);
	fs_hdr_init(fs, img, m, type);
	avfs_bitmap_set(&fs->mmap, m);
	fs_set_bit(fs, fs->sb.mbitmap_start, m, true);
	fs_sb(fs)->free_meta--;
	fs_dirty(fs, 0);
	fs_dirty(fs, m);
	fs->mhint = m + 1;
	*out = m;
	return 0;
}

void fs_meta_free(struct avfs_fs *fs, uint64_t m)
{
	if (m < fs->sb.dyn_start || m >= fs->nmeta || !avfs_bitmap_test(&fs->mmap, m))
		return;
	/* The block is only ever written again through the journal, and replay applies
	 * transactions in order, so a later reuse always overwrites this version: no revoke
	 * record is needed (metadata and data blocks never share a region). */
	avfs_bitmap_clear(&fs->mmap, m);
	fs_set_bit(fs, fs->sb.mbitmap_start, m, false);
	fs_sb(fs)->free_meta++;
	fs_dirty(fs, 0);
	if (m < fs->mhint)
		fs->mhint = m;
}

bool fs_meta_ok(struct avfs_fs *fs, uint32_t m, uint32_t type)
{
	const struct avfs_mhdr *h;

	if (m < fs->sb.dyn_start || m >= fs->nmeta || !avfs_bitmap_test(&fs->mmap, m) ||
	    !fs->blocks[m])
		return false;
	h = (const struct avfs_mhdr *)fs->blocks[m];
	return h->type == type;
}
