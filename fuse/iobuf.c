/*
 * iobuf.c — the FUSE front end's data buffers (iobuf.h): large ones inside one transparent
 * huge page, so that the block layer does not cut a 1 MiB request at the queue's segment
 * limit, and kept for reuse; small ones plain. Memory only: no descriptor, no clock.
 */
#include "iobuf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define PAGE 4096u

static bool large(size_t len)
{
	return len >= AVFS_IOBUF_MIN && len <= AVFS_IOBUF_HUGE;
}

/* Fresh anonymous memory, one huge page aligned: never touched before, so that its first
 * fault can take a huge page (memory from malloc may already hold small pages). */
static void *huge_map(void)
{
	size_t span = 2 * (size_t)AVFS_IOBUF_HUGE;
	uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *b;

	if (m == MAP_FAILED)
		return NULL;
	b = (uint8_t *)(((uintptr_t)m + AVFS_IOBUF_HUGE - 1) & ~((uintptr_t)AVFS_IOBUF_HUGE - 1));
	if (b > m)
		munmap(m, (size_t)(b - m));
	if (b + AVFS_IOBUF_HUGE < m + span)
		munmap(b + AVFS_IOBUF_HUGE, (size_t)(m + span - (b + AVFS_IOBUF_HUGE)));
	/* best effort: without THP (or without a free huge page) the buffer is one of 4 KiB
	 * pages, and a large request is cut by the kernel as before */
	(void)madvise(b, AVFS_IOBUF_HUGE, MADV_HUGEPAGE);
	return b;
}

void *avfs_iobuf_get(struct avfs_iobuf_pool *p, size_t len)
{
	void *b = NULL;

	if (!large(len))
		return posix_memalign(&b, PAGE, len ? len : PAGE) ? NULL : b;
	if (p->nfree)
		return p->free[--p->nfree];
	return huge_map();
}

void avfs_iobuf_put(struct avfs_iobuf_pool *p, void *buf, size_t len)
{
	if (!buf)
		return;
	if (!large(len))
		free(buf);
	else if (p->nfree < AVFS_IOBUF_KEEP)
		p->free[p->nfree++] = buf;
	else
		munmap(buf, AVFS_IOBUF_HUGE);
}

void avfs_iobuf_drain(struct avfs_iobuf_pool *p)
{
	while (p->nfree)
		munmap(p->free[--p->nfree], AVFS_IOBUF_HUGE);
}

size_t avfs_iobuf_cost(size_t len)
{
	return large(len) ? AVFS_IOBUF_HUGE : (len + PAGE - 1) / PAGE * PAGE;
}
