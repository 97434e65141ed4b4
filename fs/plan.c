/*
 * plan.c — plans: the ordered device writes and flushes a driver executes, and the buffers
 * they own. It only builds them; what goes into a plan is for the journal, mount and mkfs.
 */
#include "fs_i.h"
#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void avfs_plan_free(struct avfs_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nbufs; i++)
		free(p->bufs[i]);
	free(p->bufs);
	free(p->ops);
	free(p->freed);
	free(p->sfreed);
	free(p->ck_home);
	free(p->ck_img);
	free(p);
}

struct avfs_plan *fs_plan_new(void)
{
	return calloc(1, sizeof(struct avfs_plan));
}

static int plan_add(struct avfs_plan *p, struct avfs_plan_op op)
{
	struct avfs_plan_op *o = avfs_grow(p->ops, &p->cap, p->n, sizeof(*o), 16);

	if (!o)
		return -ENOMEM;
	p->ops = o;
	p->ops[p->n++] = op;
	return 0;
}

static int plan_own(struct avfs_plan *p, uint8_t *buf)
{
	uint8_t **b = avfs_grow(p->bufs, &p->capbufs, p->nbufs, sizeof(*b), 16);

	if (!b)
		return -ENOMEM;
	p->bufs = b;
	p->bufs[p->nbufs++] = buf;
	return 0;
}

uint8_t *fs_plan_buf(struct avfs_plan *p, size_t len)
{
	uint8_t *b = NULL;

	if (posix_memalign((void **)&b, 4096, len ? len : 4096))
		return NULL;
	if (plan_own(p, b)) {
		free(b);
		return NULL;
	}
	return b;
}

int fs_plan_write(struct avfs_plan *p, uint64_t off, const uint8_t *img, uint32_t len, bool fua,
		  bool copy)
{
	const uint8_t *src = img;

	if (copy) {
		uint8_t *b = fs_plan_buf(p, len);

		if (!b)
			return -ENOMEM;
		memcpy(b, img, len);
		src = b;
	}
	return plan_add(p, (struct avfs_plan_op){ .kind = AVFS_PLAN_WRITE, .fua = fua, .off = off,
						 .len = len, .buf = src });
}

int fs_plan_flush(struct avfs_plan *p)
{
	if (p->n && p->ops[p->n - 1].kind == AVFS_PLAN_FLUSH)
		return 0;
	return plan_add(p, (struct avfs_plan_op){ .kind = AVFS_PLAN_FLUSH });
}
