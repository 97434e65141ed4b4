/*
 * mount.c — an fs object's life in memory: open and close, the sans-I/O steps of a mount
 * after replay (take each verified block, which blocks are live, finish: allocation state
 * and checks) and the recovery plan that writes replayed and repaired blocks home.
 */
#include "fs_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BITS AVFS_BITS_PER_BLOCK

int avfs_fs_open(const struct avfs_super *sb, unsigned flags, struct avfs_fs **out)
{
	struct avfs_fs *fs = calloc(1, sizeof(*fs));
	int err = -ENOMEM;

	if (!fs)
		return -ENOMEM;
	fs->sb = *sb;
	fs->flags = flags;
	fs->nmeta = sb->meta_blocks;
	fs->blocks = calloc(fs->nmeta, sizeof(*fs->blocks));
	fs->dix = calloc(sb->ninodes + 1, sizeof(*fs->dix));
	/* large arrays come from mmap: untouched pages of an idle inode range cost nothing */
	fs->opens = calloc(sb->ninodes + 1, sizeof(*fs->opens));
	if (!fs->blocks || !fs->dix || !fs->opens)
		goto fail;
	if (avfs_bitmap_init(&fs->mmap, fs->nmeta) || avfs_bitmap_init(&fs->dmap, sb->data_blocks) ||
	    avfs_bitmap_init(&fs->imap, sb->ninodes) || avfs_bitmap_init(&fs->dirty, fs->nmeta) ||
	    avfs_bitmap_init(&fs->pfree, sb->data_blocks) ||
	    avfs_bitmap_init(&fs->replayed, fs->nmeta) ||
	    avfs_bitmap_init(&fs->rewrite_p, fs->nmeta) ||
	    avfs_bitmap_init(&fs->rewrite_b, fs->nmeta))
		goto fail;
	fs->log_start = sb->journal_start + 2;
	fs->log_blocks = sb->journal_blocks - 2;
	fs->txn_cap = fs_journal_capacity(fs->log_blocks);
	fs->next_seq = 1;
	fs->tail_seq = 1;
	fs->mhint = sb->dyn_start;
	*out = fs;
	return 0;
fail:
	avfs_fs_close(fs);
	return err;
}

void avfs_fs_close(struct avfs_fs *fs)
{
	if (!fs)
		return;
	if (fs->blocks)
		for (uint64_t m = 0; m < fs->nmeta; m++)
			free(fs->blocks[m]);
	if (fs->dix)
		for (uint64_t i = 0; i <= fs->sb.ninodes; i++)
			fs_dir_forget(fs, i);
	free(fs->dix);
	free(fs->opens);
	free(fs->blocks);
	avfs_bitmap_free(&fs->mmap);
	avfs_bitmap_free(&fs->dmap);
	avfs_bitmap_free(&fs->imap);
	avfs_bitmap_free(&fs->dirty);
	avfs_bitmap_free(&fs->pfree);
	avfs_bitmap_free(&fs->replayed);
	avfs_bitmap_free(&fs->rewrite_p);
	avfs_bitmap_free(&fs->rewrite_b);
	if (fs->cimg)
		for (uint64_t m = 0; m < fs->nmeta; m++)
			free(fs->cimg[m]);
	free(fs->cimg);
	avfs_bitmap_free(&fs->ckpt);
	avfs_bitmap_free(&fs->ck_again);
	fs_small_close(fs);
	while (fs->nspare)
		free(fs->spare[--fs->nspare]);
	free(fs->spare);
	free(fs);
}

int avfs_fs_load(struct avfs_fs *fs, uint64_t m, const uint8_t *img)
{
	if (m >= fs->nmeta)
		return -EINVAL;
	if (avfs_bitmap_test(&fs->replayed, m))
		return 0;	/* the journal's copy is newer */
	if (!fs->blocks[m] && posix_memalign((void **)&fs->blocks[m], 64, AVFS_MBLOCK))
		return -ENOMEM;
	memcpy(fs->blocks[m], img, AVFS_MBLOCK);
	return 0;
}

bool avfs_fs_block_live(const struct avfs_fs *fs, uint64_t m)
{
	const uint8_t *bm;
	uint64_t i;

	if (m >= fs->nmeta)
		return false;
	if (m >= fs->sb.journal_start && m < fs->sb.journal_start + fs->sb.journal_blocks)
		return false;
	if (m < fs->sb.dyn_start)
		return true;
	bm = fs->blocks[fs->sb.mbitmap_start + m / BITS];
	if (!bm)
		return false;
	i = m % BITS;
	return bm[sizeof(struct avfs_mhdr) + i / 8] >> (i % 8) & 1;
}

static int load_bitmap(struct avfs_fs *fs, struct avfs_bitmap *b, uint64_t start, uint64_t n)
{
	for (uint64_t k = 0; k * BITS < n; k++) {
		uint64_t cnt = n - k * BITS < BITS ? n - k * BITS : BITS;
		const uint8_t *img = fs->blocks[start + k];

		if (!img || avfs_bitmap_load(b, k * BITS, cnt, img + sizeof(struct avfs_mhdr)))
			return -EUCLEAN;	/* missing, or bits set beyond the end */
	}
	return 0;
}

int avfs_fs_mount_finish(struct avfs_fs *fs, char *why, size_t whylen)
{
	struct avfs_super *sb = fs_sb(fs);

	if (!sb || fs_verify_img(fs->sb.hdr.uuid, 0, fs->blocks[0], AVFS_MT_SUPER)) {
		avfs_why(why, whylen, "superblock missing after load");
		return -EUCLEAN;
	}
	/* the journaled superblock image carries the dynamic fields; the geometry must be the one
	 * checked against the device (replay refuses others: this is the last line) */
	if (!fs_super_same_geometry(sb, &fs->sb) || !fs_super_version_ok(sb, &fs->sb) ||
	    sb->last_zone >= fs->sb.nzones) {
		avfs_why(why, whylen, "the superblock (block 0) replayed from the journal disagrees "
			 "with the geometry");
		return -EUCLEAN;
	}
	fs->sb.version = sb->version;	/* a replayed transaction may have raised it */
	for (uint64_t m = 0; m < fs->sb.dyn_start; m++) {
		if (m >= fs->sb.journal_start && m < fs->sb.journal_start + fs->sb.journal_blocks)
			continue;
		if (!fs->blocks[m]) {
			avfs_why(why, whylen, "metadata block %llu was not loaded",
			       (unsigned long long)m);
			return -EUCLEAN;
		}
	}
	if (load_bitmap(fs, &fs->mmap, fs->sb.mbitmap_start, fs->nmeta) ||
	    load_bitmap(fs, &fs->dmap, fs->sb.dbitmap_start, fs->sb.data_blocks) ||
	    load_bitmap(fs, &fs->imap, fs->sb.ibitmap_start, fs->sb.ninodes)) {
		avfs_why(why, whylen, "a bitmap block is missing");
		return -EUCLEAN;
	}
	for (uint64_t m = 0; m < fs->sb.dyn_start; m++) {
		if (!avfs_bitmap_test(&fs->mmap, m)) {
			avfs_why(why, whylen, "metadata bitmap does not reserve static block %llu",
			       (unsigned long long)m);
			return -EUCLEAN;
		}
	}
	for (uint64_t m = fs->sb.dyn_start; m < fs->nmeta; m++) {
		if (avfs_bitmap_test(&fs->mmap, m) && !fs->blocks[m]) {
			avfs_why(why, whylen, "live metadata block %llu was not loaded",
			       (unsigned long long)m);
			return -EUCLEAN;
		}
	}
	if (!avfs_bitmap_test(&fs->imap, 0)) {
		avfs_why(why, whylen, "the root inode is not allocated");
		return -EUCLEAN;
	}
	if (avfs_alloc_init(&fs->alloc, (enum avfs_alloc_policy)fs->sb.alloc_policy, &fs->dmap,
			    fs->sb.nzones, sb->last_zone, fs->sb.alloc_run)) {
		avfs_why(why, whylen, "allocator refused the geometry");
		return -EUCLEAN;
	}
	if (fs_small_load(fs)) {
		avfs_why(why, whylen, "out of memory for the small-file blocks");
		return -ENOMEM;
	}
	return 0;
}

int avfs_fs_mark_rewrite(struct avfs_fs *fs, uint64_t m, bool primary, bool backup)
{
	if (m >= fs->nmeta)
		return -EINVAL;
	if (primary)
		avfs_bitmap_set(&fs->rewrite_p, m);
	if (backup)
		avfs_bitmap_set(&fs->rewrite_b, m);
	return 0;
}

int avfs_fs_recovery_plan(struct avfs_fs *fs, struct avfs_plan **out)
{
	struct avfs_plan *p;
	uint64_t *ms = NULL;
	size_t n = 0;
	struct avfs_bitmap want_p, want_b;
	int err = -ENOMEM;

	*out = NULL;
	if (avfs_fs_rdonly(fs))
		return -EROFS;
	p = fs_plan_new();
	ms = malloc(fs->nmeta * sizeof(*ms));
	if (!p || !ms || avfs_bitmap_init(&want_p, fs->nmeta) ||
	    avfs_bitmap_init(&want_b, fs->nmeta))
		goto out;
	for (uint64_t m = 0; m < fs->nmeta; m++) {
		bool rp = avfs_bitmap_test(&fs->replayed, m) || avfs_bitmap_test(&fs->rewrite_p, m);
		bool rb = avfs_bitmap_test(&fs->replayed, m) || avfs_bitmap_test(&fs->rewrite_b, m);

		if (!fs->blocks[m] || !(rp || rb))
			continue;
		if (rp)
			avfs_bitmap_set(&want_p, m);
		if (rb)
			avfs_bitmap_set(&want_b, m);
		ms[n++] = m;
	}
	err = fs_plan_homes(fs, p, ms, n, &want_p, &want_b);
	if (err)
		goto out;
	/* once the homes are durable, the journal can start afresh after the replayed part */
	if (fs_plan_flush(p) || fs_plan_jsuper(fs, p, fs->head, fs->next_seq) ||
	    (fs->jsuper_both && fs_plan_jsuper(fs, p, fs->head, fs->next_seq)) || fs_plan_flush(p))
		goto out;
	fs->jsuper_both = false;
	fs->tail = fs->head;
	fs->tail_seq = fs->next_seq;
	fs->used = 0;
	for (uint64_t m = 0; m < fs->nmeta; m++) {
		if (avfs_bitmap_test(&fs->rewrite_p, m))
			avfs_bitmap_clear(&fs->rewrite_p, m);
		if (avfs_bitmap_test(&fs->rewrite_b, m))
			avfs_bitmap_clear(&fs->rewrite_b, m);
		if (avfs_bitmap_test(&fs->replayed, m))
			avfs_bitmap_clear(&fs->replayed, m);
	}
	*out = p;
	p = NULL;
	err = 0;
out:
	avfs_bitmap_free(&want_p);
	avfs_bitmap_free(&want_b);
	free(ms);
	avfs_plan_free(p);
	return err;
}
