/*
 * mkfs.c — a new file system: the images of a fresh format (bitmaps, inode table, the root
 * directory) and the plan that writes them in a crash-safe order, the superblock last. The
 * geometry comes from super.c.
 */
#include "fs_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int avfs_fs_format(const struct avfs_super *geo, int64_t now_ns, struct avfs_fs **out,
		   struct avfs_plan **plan)
{
	struct avfs_fs *fs;
	struct avfs_plan *p;
	struct avfs_dinode *root;
	uint64_t *ms;
	uint8_t *zero;
	int err = avfs_fs_open(geo, 0, &fs);

	if (err)
		return err;
	p = fs_plan_new();
	ms = malloc(geo->dyn_start * sizeof(*ms));
	err = -ENOMEM;
	if (!p || !ms)
		goto fail;
	for (uint64_t m = 0; m < geo->dyn_start; m++) {
		uint32_t type;

		if (m >= geo->journal_start && m < geo->journal_start + geo->journal_blocks)
			continue;
		type = m == 0 ? AVFS_MT_SUPER : m < geo->itable_start ? AVFS_MT_BITMAP : AVFS_MT_INODES;
		if (posix_memalign((void **)&fs->blocks[m], 64, AVFS_MBLOCK))
			goto fail;
		memset(fs->blocks[m], 0, AVFS_MBLOCK);
		fs_hdr_init(fs, fs->blocks[m], m, type);
	}
	memcpy(fs->blocks[0], geo, sizeof(*geo));
	fs_hdr_init(fs, fs->blocks[0], 0, AVFS_MT_SUPER);
	for (uint64_t m = 0; m < geo->dyn_start; m++) {
		avfs_bitmap_set(&fs->mmap, m);
		fs_set_bit(fs, geo->mbitmap_start, m, true);
	}
	avfs_bitmap_set(&fs->imap, 0);
	fs_set_bit(fs, geo->ibitmap_start, 0, true);
	root = (struct avfs_dinode *)(fs->blocks[geo->itable_start] + sizeof(struct avfs_mhdr));
	root->mode = S_IFDIR | 0755;
	root->nlink = 2;
	root->parent = AVFS_ROOT_INO;
	root->atime_ns = root->mtime_ns = root->ctime_ns = root->btime_ns = now_ns;
	root->generation = 1;
	fs_sb(fs)->generation = 2;
	if (avfs_alloc_init(&fs->alloc, (enum avfs_alloc_policy)geo->alloc_policy, &fs->dmap,
			    geo->nzones, geo->last_zone, geo->alloc_run))
		goto fail;
	/* the format's writes are not journaled: forget the dirty list it built */
	fs_txn_forget(fs);

	/* 1. invalidate any old superblock first, so a crash mid-format leaves no valid file
	 *    system pointing at half-written metadata */
	zero = fs_plan_buf(p, AVFS_MBLOCK);
	if (!zero)
		goto fail;
	memset(zero, 0, AVFS_MBLOCK);
	if (fs_plan_write(p, 0, zero, AVFS_MBLOCK, false, false) ||
	    fs_plan_write(p, avfs_fs_backup_super_off(geo->dev_size), zero, AVFS_MBLOCK, false,
			  false) ||
	    fs_plan_flush(p))
		goto fail;
	/* 2. bitmaps and inode table, home and backup; the journal's anchors; a zeroed first
	 *    log block so that no stale transaction can follow the tail */
	{
		size_t n = 0;

		for (uint64_t m = geo->mbitmap_start; m < geo->dyn_start; m++) {
			fs_seal(fs, fs->blocks[m]);
			ms[n++] = m;
		}
		if (fs_plan_homes(fs, p, ms, n, NULL, NULL))
			goto fail;
	}
	fs->jepoch = 0;
	if (fs_plan_jsuper(fs, p, 0, 1) || fs_plan_jsuper(fs, p, 0, 1) ||
	    fs_plan_write(p, fs->log_start * AVFS_MBLOCK, zero, AVFS_MBLOCK, false, false) ||
	    fs_plan_flush(p))
		goto fail;
	/* 3. the superblock last: only now is this a file system */
	fs_seal(fs, fs->blocks[0]);
	ms[0] = 0;
	if (fs_plan_homes(fs, p, ms, 1, NULL, NULL) || fs_plan_flush(p))
		goto fail;
	fs->sb = *(struct avfs_super *)fs->blocks[0];
	fs->head = fs->tail = 0;
	fs->used = 0;
	fs->next_seq = fs->tail_seq = 1;
	free(ms);
	(void)now_ns;
	*out = fs;
	*plan = p;
	return 0;
fail:
	free(ms);
	avfs_plan_free(p);
	avfs_fs_close(fs);
	return err;
}
