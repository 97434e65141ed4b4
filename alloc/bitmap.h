/*
 * bitmap.h — an in-memory bitmap with word-at-a-time search and (de)serialisation of bit
 * ranges to the little-endian byte layout of the on-disk bitmap blocks (SPEC §3).
 * Sans-I/O and unlocked: it never reads or writes a device; the caller serialises access.
 */
#ifndef AVFS_BITMAP_H
#define AVFS_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

struct avfs_bitmap {
	uint64_t nbits;		/* bits 0 .. nbits-1 */
	uint64_t nset;		/* how many are set; kept exact by every mutator */
	uint64_t *words;	/* ceil(nbits / 64) words; bits past nbits are always 0 */
};

/* All bits clear. 0, -EINVAL for 0 bits (or a size that cannot be addressed), -ENOMEM. */
int avfs_bitmap_init(struct avfs_bitmap *b, uint64_t nbits);
/* Release the words; b may be zeroed or already freed. */
void avfs_bitmap_free(struct avfs_bitmap *b);

/* Bit i; false when i is out of range. */
bool avfs_bitmap_test(const struct avfs_bitmap *b, uint64_t i);
/* 0, -EEXIST if bit i was already set, -EINVAL if i >= nbits. */
int avfs_bitmap_set(struct avfs_bitmap *b, uint64_t i);
/* 0, -ENOENT if bit i was already clear, -EINVAL if i >= nbits. */
int avfs_bitmap_clear(struct avfs_bitmap *b, uint64_t i);

/* First clear bit in [from, to) (to is clamped to nbits), or UINT64_MAX if none. */
uint64_t avfs_bitmap_find_zero(const struct avfs_bitmap *b, uint64_t from, uint64_t to);
/* First set bit in [from, to) (to is clamped to nbits), or UINT64_MAX if none. */
uint64_t avfs_bitmap_find_set(const struct avfs_bitmap *b, uint64_t from, uint64_t to);

/*
 * Serialise bits [first, first+n) into ceil(n/8) bytes: bit k of the range is bit k%8 of
 * byte k/8. Bits of the range at or past nbits are written as 0 and so are the unused high
 * bits of the last byte, so the tail of the last on-disk bitmap block comes out clean.
 */
void avfs_bitmap_store(const struct avfs_bitmap *b, uint64_t first, uint64_t n, uint8_t *out);
/*
 * The inverse of store: bits [first, first+n) take their values from in, nset is adjusted.
 * 0; -EINVAL if first > nbits or first+n overflows; -EUCLEAN if in sets a bit at or past
 * nbits (a corrupt bitmap block). On error nothing is changed.
 */
int avfs_bitmap_load(struct avfs_bitmap *b, uint64_t first, uint64_t n, const uint8_t *in);

#endif
