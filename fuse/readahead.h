/*
 * readahead.h — the FUSE front end's read-ahead (SPEC §9): ranges of files read for sequential
 * readers, kept in a few slots; a range still being read holds the requests that arrived for
 * it, answered when it lands. The front end reads one window ahead of a sequential reader, so
 * that the device works while the kernel and the reader take the window before. Bookkeeping
 * and buffers only: it issues no I/O and answers no request itself (fuseops.c does both, this
 * module hands the waiters back), reads no clock. Single-threaded (the loop's thread).
 */
#ifndef AVFS_FUSE_READAHEAD_H
#define AVFS_FUSE_READAHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct avfs_iobuf_pool;

#define AVFS_RA_SLOTS 128	/* (the pinned ones hold at most their reservations' buffers) */
#define AVFS_RA_BE_SLOTS 16	/* of them, at most this many hold ranges of no playout buffer */

struct avfs_ra_wait {		/* a read waiting for a range being read: the caller's */
	struct avfs_ra_wait *next;
	uint64_t off;
	size_t len;
};

struct avfs_ra_slot {
	uint64_t ino, off;	/* off: page aligned */
	size_t len;		/* bytes from off: asked for while busy, read once done */
	uint8_t *buf;		/* from the pool, cap bytes; NULL: the slot is free */
	size_t cap;
	uint64_t used;		/* the cache's clock at the last use (the oldest idle one goes) */
	bool busy;		/* being read: not evicted, its waiters queued */
	bool pinned;		/* a reserved reader's playout buffer, not yet read: only another
				 * playout window evicts it (the memory is its reservation's) */
	bool stale;		/* the file changed while it was read: answers its waiters, then
				 * goes (they came before the change; no later read may see it) */
	struct avfs_ra_wait *waiters;
};

struct avfs_ra {
	struct avfs_ra_slot s[AVFS_RA_SLOTS];
	uint64_t clock;
	struct avfs_iobuf_pool *bufs;	/* where slot buffers go back */
};

/* The idle slot that keeps the bytes [off, off + len) of ino (at s->buf + off - s->off), or
 * NULL. */
struct avfs_ra_slot *avfs_ra_hit(struct avfs_ra *ra, uint64_t ino, uint64_t off, size_t len);
/* A range being read (not stale) holds [off, off + len): w (w->off, w->len set by the caller)
 * waits on it, true; false if none does. */
bool avfs_ra_wait(struct avfs_ra *ra, uint64_t ino, uint64_t off, size_t len,
		  struct avfs_ra_wait *w);
/* A read at off continues a kept range or one being read, or starts the file. */
bool avfs_ra_sequential(const struct avfs_ra *ra, uint64_t ino, uint64_t off);
/* A slot (kept or being read, not stale) starts at off. */
bool avfs_ra_has(const struct avfs_ra *ra, uint64_t ino, uint64_t off);
/* A slot for a read of len bytes of ino from off (page aligned) into buf (cap bytes from the
 * pool, now the slot's), busy until avfs_ra_done: a free slot (for a range not pinned, while
 * fewer than AVFS_RA_BE_SLOTS such are held), else the oldest idle range not pinned, else —
 * for a pinned one (a playout window) — the oldest idle pinned one. NULL when there is none
 * (buf stays the caller's). A greedy reader's windows thus never push a reserved reader's
 * playout buffer out before it is read. */
struct avfs_ra_slot *avfs_ra_start(struct avfs_ra *ra, uint64_t ino, uint64_t off, size_t len,
				   uint8_t *buf, size_t cap, bool pin);
/* The read of s ended with res (bytes from s->off, or -errno): each waiter is passed to answer
 * with its bytes (n of them at data; n 0 past the end) or the error (answer must not call
 * this module), then the range is kept (res > 0 and not stale) or freed. */
void avfs_ra_done(struct avfs_ra *ra, struct avfs_ra_slot *s, int64_t res,
		  void (*answer)(struct avfs_ra_wait *w, const uint8_t *data, size_t n, int err));
/* ino's playout windows become ordinary ranges (its reader closed it: nobody may read them). */
void avfs_ra_unpin(struct avfs_ra *ra, uint64_t ino);
/* ino's data changed: its kept ranges go, those being read turn stale. */
void avfs_ra_invalidate(struct avfs_ra *ra, uint64_t ino);
/* Free every idle range (at unmount, with nothing in flight). */
void avfs_ra_drain(struct avfs_ra *ra);

#endif
