/*
 * checkpoint.c — the lazy checkpoint (jbd2's; fs.h): turning it on, and the plan that writes
 * the committed images not yet home — the latest one of each block, so a block changed by
 * several transactions is written once — home and to the backup region, then moves the
 * journal's tail past their transactions. It does not commit or keep the images (journal.c
 * does, as commits are done) and runs nothing (a driver does).
 */
#include "fs_i.h"

#include <errno.h>
#include <stdlib.h>

int avfs_fs_lazy_checkpoint(struct avfs_fs *fs)
{
	if (fs->lazy)
		return 0;
	fs->cimg = calloc(fs->nmeta, sizeof(*fs->cimg));
	if (!fs->cimg || avfs_bitmap_init(&fs->ckpt, fs->nmeta) ||
	    avfs_bitmap_init(&fs->ck_again, fs->nmeta)) {
		free(fs->cimg);
		fs->cimg = NULL;
		avfs_bitmap_free(&fs->ckpt);
		avfs_bitmap_free(&fs->ck_again);
		return -ENOMEM;
	}
	/* what the log holds now is durable and home (the recovery plan wrote it there) */
	fs->dpos = fs->jtail = fs->lpos;
	fs->dseq = fs->next_seq;
	fs->lazy = true;
	return 0;
}

bool avfs_fs_checkpoint_due(const struct avfs_fs *fs)
{
	return fs->lazy && !fs->ck_out && fs->dpos > fs->jtail &&
	       fs->used >= (fs->log_blocks + 3) / 4;
}

int avfs_fs_checkpoint(struct avfs_fs *fs, struct avfs_plan **out)
{
	struct avfs_plan *p;
	uint64_t *ms = NULL, k = 0;
	int err = -ENOMEM;

	*out = NULL;
	if (!fs->lazy || (!fs->ckpt.nset && fs->dpos <= fs->jtail))
		return 0;
	if (avfs_fs_rdonly(fs))
		return -EROFS;
	if (fs->ck_out)
		return -EBUSY;
	p = fs_plan_new();
	if (!p || (fs->ckpt.nset && !(ms = malloc(fs->ckpt.nset * sizeof(*ms)))))
		goto fail;
	for (uint64_t m = avfs_bitmap_find_set(&fs->ckpt, 0, fs->nmeta); m != UINT64_MAX;
	     m = avfs_bitmap_find_set(&fs->ckpt, m + 1, fs->nmeta))
		ms[k++] = m;
	/* the images as they are now (later commits replace fs->cimg's, not these); the home
	 * copies of the superblock before its backup (fs_plan_images) */
	if (fs_plan_images(fs, p, ms, k, NULL, NULL, fs->cimg))
		goto fail;
	/* once they are durable, the tail moves past every transaction done so far: the
	 * superblock with FUA (log space it frees is written only after it) */
	if ((k && fs_plan_flush(p)) || fs_plan_jsuper(fs, p, fs_log_index(fs, fs->dpos), fs->dseq))
		goto fail;
	p->ops[p->n - 1].fua = true;
	p->moves_tail = true;
	p->tail_abs = fs->dpos;
	p->tail_pos = fs_log_index(fs, fs->dpos);
	p->tail_seq = fs->dseq;
	p->ck_home = ms;
	p->nck = k;
	fs->ck_out = true;
	*out = p;
	return 0;
fail:
	free(ms);
	avfs_plan_free(p);
	return err;
}
