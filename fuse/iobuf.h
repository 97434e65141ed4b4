/*
 * iobuf.h — the FUSE front end's data buffers. A large one lies inside one 2 MiB transparent
 * huge page where the kernel gives one (MADV_HUGEPAGE), so that its pages are physically
 * contiguous and an O_DIRECT request of up to 1 MiB reaches the device as one command: from
 * 4 KiB pages scattered in memory, the block layer cuts a request at the queue's max_segments
 * (128 on a loop device: 512 KiB) and the second command of a write costs a disk rotation.
 * Large buffers are kept in a small pool for reuse (no page fault or zeroing per request).
 * Single-threaded (the loop's thread). It does not decide sizes or alignment within a page.
 */
#ifndef AVFS_IOBUF_H
#define AVFS_IOBUF_H

#include <stddef.h>

#define AVFS_IOBUF_HUGE (2u << 20)	/* one huge page: the most a pooled buffer holds */
#define AVFS_IOBUF_MIN (64u << 10)	/* below this: a plain page-aligned allocation */
#define AVFS_IOBUF_KEEP 16		/* free large buffers kept at most (32 MiB) */

struct avfs_iobuf_pool {
	void *free[AVFS_IOBUF_KEEP];	/* free large buffers, each AVFS_IOBUF_HUGE aligned */
	unsigned nfree;
};

/* A page-aligned buffer of len bytes (len 0: one page); one of AVFS_IOBUF_MIN..AVFS_IOBUF_HUGE
 * bytes lies inside one huge page (its start aligned to AVFS_IOBUF_HUGE). NULL without memory.
 * Give it back with avfs_iobuf_put and the same len. */
void *avfs_iobuf_get(struct avfs_iobuf_pool *p, size_t len);
/* The memory a buffer of avfs_iobuf_get(p, len) holds: a whole huge page for a large one. */
size_t avfs_iobuf_cost(size_t len);
/* Give back a buffer of avfs_iobuf_get(p, len); NULL is ignored. */
void avfs_iobuf_put(struct avfs_iobuf_pool *p, void *buf, size_t len);
/* Free the buffers the pool keeps. */
void avfs_iobuf_drain(struct avfs_iobuf_pool *p);

#endif
