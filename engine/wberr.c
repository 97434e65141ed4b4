/*
 * wberr.c — the write errors of files, errseq-style (Linux's errseq_t, lib/errseq.c): a file
 * write that failed after it was planned bumps its file's error epoch; an open file
 * description samples the epoch when it opens and learns of an error once, when the epoch has
 * moved since its sample (fsync, a close that waits for durability). Memory only, a small
 * table of the files that had an error; it does not decide what a failed write undoes
 * (fileio.c) nor who asks (the front ends keep the samples).
 */
#include "engine_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WB_MAX 1024	/* files remembered at once; a full table forgets a seen error first */

/* The record of ino, when the file that had the error still is that inode (the same
 * generation: an inode number freed and reused starts clean). */
static struct avfs_wberr *find(struct avfs_engine *e, uint64_t ino)
{
	struct avfs_stat st;

	for (size_t i = 0; i < e->nwb; i++) {
		struct avfs_wberr *w = &e->wb[i];

		if (w->ino != ino)
			continue;
		if (e->fs && !avfs_fs_getattr(e->fs, ino, &st) && st.generation == w->gen)
			return w;
		*w = e->wb[--e->nwb];	/* another file now */
		return NULL;
	}
	return NULL;
}

void wb_set(struct avfs_engine *e, uint64_t ino)
{
	struct avfs_wberr *w = find(e, ino);
	struct avfs_stat st;

	if (!w) {
		if (!e->fs || avfs_fs_getattr(e->fs, ino, &st))
			return;
		if (e->nwb == WB_MAX) {	/* forget a seen one, else the oldest */
			size_t k = 0;

			for (size_t i = 0; i < e->nwb; i++)
				if (e->wb[i].seen) {
					k = i;
					break;
				}
			memmove(&e->wb[k], &e->wb[k + 1], (e->nwb - k - 1) * sizeof(*e->wb));
			e->nwb--;
		}
		if (e->nwb == e->capwb) {
			size_t cap = e->capwb ? 2 * e->capwb : 8;
			struct avfs_wberr *v = realloc(e->wb, cap * sizeof(*v));

			if (!v)
				return;	/* without memory the error goes unreported to fsync */
			e->wb = v;
			e->capwb = cap;
		}
		w = &e->wb[e->nwb++];
		*w = (struct avfs_wberr){ .ino = ino, .gen = st.generation };
	}
	/* as errseq_set: a new epoch only when the last error was seen, so that errors nobody
	 * has looked at yet are reported once, together */
	if (!w->seq || w->seen)
		w->seq++;
	w->seen = false;
}

uint64_t avfs_engine_wberr_sample(struct avfs_engine *e, uint64_t ino)
{
	struct avfs_wberr *w = find(e, ino);

	/* as errseq_sample: an error nobody has seen yet is reported to a new opener too */
	return w && w->seen ? w->seq : 0;
}

int avfs_engine_wberr_check(struct avfs_engine *e, uint64_t ino, uint64_t *since)
{
	struct avfs_wberr *w = find(e, ino);

	if (!w || w->seq == *since)
		return 0;
	*since = w->seq;
	w->seen = true;
	return -EIO;
}

void wb_fini(struct avfs_engine *e)
{
	free(e->wb);
	e->wb = NULL;
	e->nwb = e->capwb = 0;
}
