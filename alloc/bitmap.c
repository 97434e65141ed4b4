/*
 * bitmap.c — the in-memory bitmap: 64-bit words, searches one word at a time with ctz,
 * (de)serialisation of bit ranges a byte at a time. Keeps bits past nbits at 0 so that
 * searches and serialisation never see garbage there. No I/O, no locking.
 */
#include "bitmap.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t nwords(uint64_t nbits)
{
	return nbits / 64 + (nbits % 64 != 0);
}

int avfs_bitmap_init(struct avfs_bitmap *b, uint64_t nbits)
{
	uint64_t nw = nwords(nbits);

	b->nbits = 0;
	b->nset = 0;
	b->words = NULL;
	if (nbits == 0 || nw > SIZE_MAX / sizeof(uint64_t))
		return -EINVAL;
	b->words = calloc((size_t)nw, sizeof(uint64_t));
	if (!b->words)
		return -ENOMEM;
	b->nbits = nbits;
	return 0;
}

void avfs_bitmap_free(struct avfs_bitmap *b)
{
	free(b->words);
	b->words = NULL;
	b->nbits = 0;
	b->nset = 0;
}

bool avfs_bitmap_test(const struct avfs_bitmap *b, uint64_t i)
{
	if (i >= b->nbits)
		return false;
	return (b->words[i / 64] >> (i % 64)) & 1;
}

int avfs_bitmap_set(struct avfs_bitmap *b, uint64_t i)
{
	uint64_t bit = 1ull << (i % 64);

	if (i >= b->nbits)
		return -EINVAL;
	if (b->words[i / 64] & bit)
		return -EEXIST;
	b->words[i / 64] |= bit;
	b->nset++;
	return 0;
}

int avfs_bitmap_clear(struct avfs_bitmap *b, uint64_t i)
{
	uint64_t bit = 1ull << (i % 64);

	if (i >= b->nbits)
		return -EINVAL;
	if (!(b->words[i / 64] & bit))
		return -ENOENT;
	b->words[i / 64] &= ~bit;
	b->nset--;
	return 0;
}

/*
 * First bit in [from, to) whose value xor flip is 1: flip = 0 finds set bits, ~0 clear ones.
 * Bits past nbits read as 0 and so flip to 1 for a zero search; the final i < to check,
 * with to <= nbits, is what keeps them from being reported.
 */
static uint64_t find(const struct avfs_bitmap *b, uint64_t from, uint64_t to, uint64_t flip)
{
	uint64_t w, last, x;

	if (to > b->nbits)
		to = b->nbits;
	if (from >= to)
		return UINT64_MAX;
	w = from / 64;
	last = (to - 1) / 64;
	x = (b->words[w] ^ flip) & (~0ull << (from % 64));
	for (;;) {
		if (x) {
			uint64_t i = w * 64 + (uint64_t)__builtin_ctzll(x);

			return i < to ? i : UINT64_MAX;
		}
		if (w == last)
			return UINT64_MAX;
		x = b->words[++w] ^ flip;
	}
}

uint64_t avfs_bitmap_find_zero(const struct avfs_bitmap *b, uint64_t from, uint64_t to)
{
	return find(b, from, to, ~0ull);
}

uint64_t avfs_bitmap_find_set(const struct avfs_bitmap *b, uint64_t from, uint64_t to)
{
	return find(b, from, to, 0);
}

/* cnt (1..8) bits from pos, which must be < nbits; bits past nbits read as 0 (invariant). */
static unsigned get_bits(const struct avfs_bitmap *b, uint64_t pos, unsigned cnt)
{
	uint64_t w = pos / 64;
	unsigned sh = pos % 64;
	uint64_t v = b->words[w] >> sh;

	/* sh + cnt > 64 implies sh > 56, so the shift below is in range. */
	if (sh + cnt > 64 && w + 1 < nwords(b->nbits))
		v |= b->words[w + 1] << (64 - sh);
	return (unsigned)(v & ((1u << cnt) - 1));
}

/* Write cnt (1..8) bits at pos; the caller guarantees pos + cnt <= nbits. */
static void put_bits(struct avfs_bitmap *b, uint64_t pos, unsigned cnt, unsigned val)
{
	uint64_t w = pos / 64;
	unsigned sh = pos % 64;
	uint64_t mask = (uint64_t)((1u << cnt) - 1);

	b->words[w] = (b->words[w] & ~(mask << sh)) | ((uint64_t)val << sh);
	if (sh + cnt > 64) {
		unsigned hi = sh + cnt - 64;
		uint64_t hmask = (1ull << hi) - 1;

		b->words[w + 1] = (b->words[w + 1] & ~hmask) | ((uint64_t)val >> (64 - sh));
	}
}

/* How many bits of [first, first+n) lie inside the bitmap, computed without overflow. */
static uint64_t in_range(const struct avfs_bitmap *b, uint64_t first, uint64_t n)
{
	if (first >= b->nbits)
		return 0;
	return n < b->nbits - first ? n : b->nbits - first;
}

void avfs_bitmap_store(const struct avfs_bitmap *b, uint64_t first, uint64_t n, uint8_t *out)
{
	uint64_t m = in_range(b, first, n);

	for (uint64_t k = 0; k < n; k += 8) {
		if (k < m) {
			unsigned cnt = m - k < 8 ? (unsigned)(m - k) : 8;

			out[k / 8] = (uint8_t)get_bits(b, first + k, cnt);
		} else {
			out[k / 8] = 0;
		}
	}
}

int avfs_bitmap_load(struct avfs_bitmap *b, uint64_t first, uint64_t n, const uint8_t *in)
{
	uint64_t m, k;

	if (first > b->nbits || n > UINT64_MAX - first)
		return -EINVAL;
	m = in_range(b, first, n);
	/* Validate before touching anything: a set bit past nbits means the block is corrupt. */
	for (k = m; k < n;) {
		if (k % 8 == 0 && n - k >= 8) {
			if (in[k / 8])
				return -EUCLEAN;
			k += 8;
		} else {
			if ((in[k / 8] >> (k % 8)) & 1)
				return -EUCLEAN;
			k++;
		}
	}
	for (k = 0; k < m; k += 8) {
		unsigned cnt = m - k < 8 ? (unsigned)(m - k) : 8;
		unsigned old = get_bits(b, first + k, cnt);
		unsigned val = in[k / 8] & ((1u << cnt) - 1);

		/* Adjust by the difference so loading a large bitmap block by block stays linear. */
		b->nset += (uint64_t)__builtin_popcount(val);
		b->nset -= (uint64_t)__builtin_popcount(old);
		put_bits(b, first + k, cnt, val);
	}
	return 0;
}
