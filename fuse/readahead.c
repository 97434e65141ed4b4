/*
 * readahead.c — the FUSE front end's read-ahead slots (readahead.h): kept ranges, ranges being
 * read with their waiting requests, invalidation. No I/O, no replies, no clock.
 */
#include "readahead.h"

#include "iobuf.h"

static bool holds(const struct avfs_ra_slot *s, uint64_t ino, uint64_t off, size_t len)
{
	return s->buf && s->ino == ino && off >= s->off && off + len <= s->off + s->len;
}

struct avfs_ra_slot *avfs_ra_hit(struct avfs_ra *ra, uint64_t ino, uint64_t off, size_t len)
{
	for (int i = 0; i < AVFS_RA_SLOTS; i++) {
		struct avfs_ra_slot *s = &ra->s[i];

		if (!s->busy && holds(s, ino, off, len)) {
			s->used = ++ra->clock;
			return s;
		}
	}
	return NULL;
}

bool avfs_ra_wait(struct avfs_ra *ra, uint64_t ino, uint64_t off, size_t len,
		  struct avfs_ra_wait *w)
{
	for (int i = 0; i < AVFS_RA_SLOTS; i++) {
		struct avfs_ra_slot *s = &ra->s[i];
		struct avfs_ra_wait **pp = &s->waiters;

		if (!s->busy || s->stale || !holds(s, ino, off, len))
			continue;
		while (*pp)	/* in arrival order */
			pp = &(*pp)->next;
		w->next = NULL;
		*pp = w;
		s->used = ++ra->clock;
		return true;
	}
	return false;
}

bool avfs_ra_sequential(const struct avfs_ra *ra, uint64_t ino, uint64_t off)
{
	for (int i = 0; i < AVFS_RA_SLOTS; i++) {
		const struct avfs_ra_slot *s = &ra->s[i];

		if (s->buf && !s->stale && s->ino == ino && s->off + s->len == off)
			return true;
	}
	return off == 0;
}

bool avfs_ra_has(const struct avfs_ra *ra, uint64_t ino, uint64_t off)
{
	for (int i = 0; i < AVFS_RA_SLOTS; i++) {
		const struct avfs_ra_slot *s = &ra->s[i];

		if (s->buf && !s->stale && s->ino == ino && s->off == off)
			return true;
	}
	return false;
}

static void slot_free(struct avfs_ra *ra, struct avfs_ra_slot *s)
{
	avfs_iobuf_put(ra->bufs, s->buf, s->cap);
	*s = (struct avfs_ra_slot){ 0 };
}

struct avfs_ra_slot *avfs_ra_start(struct avfs_ra *ra, uint64_t ino, uint64_t off, size_t len,
				   uint8_t *buf, size_t cap, bool pin)
{
	struct avfs_ra_slot *free_slot = NULL, *old = NULL, *old_pinned = NULL, *v;
	int plain = 0;

	for (int i = 0; i < AVFS_RA_SLOTS; i++) {
		struct avfs_ra_slot *s = &ra->s[i];

		if (!s->buf) {
			free_slot = free_slot ? free_slot : s;
			continue;
		}
		plain += !s->pinned;
		if (s->busy)
			continue;
		if (!s->pinned && (!old || s->used < old->used))
			old = s;
		if (s->pinned && (!old_pinned || s->used < old_pinned->used))
			old_pinned = s;
	}
	v = free_slot && (pin || plain < AVFS_RA_BE_SLOTS) ? free_slot : old ? old :
	    pin ? old_pinned : NULL;
	if (!v)
		return NULL;
	if (v->buf)
		slot_free(ra, v);
	*v = (struct avfs_ra_slot){ .ino = ino, .off = off, .len = len, .buf = buf, .cap = cap,
				    .used = ++ra->clock, .busy = true, .pinned = pin };
	return v;
}

void avfs_ra_done(struct avfs_ra *ra, struct avfs_ra_slot *s, int64_t res,
		  void (*answer)(struct avfs_ra_wait *w, const uint8_t *data, size_t n, int err))
{
	struct avfs_ra_wait *w = s->waiters;

	s->waiters = NULL;
	s->len = res > 0 ? (size_t)res : 0;	/* (busy while answering: s stays as it is) */
	while (w) {
		struct avfs_ra_wait *next = w->next;
		uint64_t end = s->off + s->len;
		size_t n = w->off >= end ? 0 : end - w->off < w->len ? (size_t)(end - w->off) : w->len;

		if (res < 0)
			answer(w, NULL, 0, (int)res);
		else
			answer(w, n ? s->buf + (w->off - s->off) : NULL, n, 0);
		w = next;
	}
	s->busy = false;
	if (res <= 0 || s->stale)
		slot_free(ra, s);
}

void avfs_ra_invalidate(struct avfs_ra *ra, uint64_t ino)
{
	for (int i = 0; i < AVFS_RA_SLOTS; i++) {
		struct avfs_ra_slot *s = &ra->s[i];

		if (!s->buf || s->ino != ino)
			continue;
		if (s->busy)
			s->stale = true;
		else
			slot_free(ra, s);
	}
}

void avfs_ra_unpin(struct avfs_ra *ra, uint64_t ino)
{
	for (int i = 0; i < AVFS_RA_SLOTS; i++)
		if (ra->s[i].buf && ra->s[i].ino == ino)
			ra->s[i].pinned = false;
}

void avfs_ra_drain(struct avfs_ra *ra)
{
	for (int i = 0; i < AVFS_RA_SLOTS; i++)
		if (ra->s[i].buf && !ra->s[i].busy)
			slot_free(ra, &ra->s[i]);
}
