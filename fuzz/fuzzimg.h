/*
 * fuzzimg.h — what the image fuzz targets share: a tiny AVFS image (1 MiB, 64 KiB data
 * blocks) coded as the fuzz input (its non-zero 4 KiB blocks, trailing zeros trimmed), the
 * resealing that lets a mutation reach the parsers past the CRCs (block CRCs and the journal
 * commit records' data CRCs recomputed), and a bounded walk of a mounted tree. Test code
 * only: not linked into anything shipped.
 */
#ifndef AVFS_FUZZIMG_H
#define AVFS_FUZZIMG_H

#include <stddef.h>
#include <stdint.h>

#include "fsio.h"

#define FUZZ_DEV_SIZE (1u << 20)	/* the image: 256 blocks of 4 KiB */

/* Input: one flags byte, then records of { u8 block, u16 length (<= 4096), length bytes }: the
 * block's first bytes, the rest zero. Blocks named by no record are zero. */
#define FUZZ_F_RESEAL 1u	/* recompute every CRC after decoding (else mutations meet them) */

/* Decode data into dev (FUZZ_DEV_SIZE bytes, zeroed first); the flags byte. */
unsigned fuzz_img_decode(const uint8_t *data, size_t size, uint8_t *dev);
/* The other way, for seeds: flags and dev's non-zero blocks into out (cap bytes). Length
 * written, or 0 if it does not fit. */
size_t fuzz_img_encode(unsigned flags, const uint8_t *dev, uint8_t *out, size_t cap);
/* Recompute one block's header CRC. */
void fuzz_img_seal(uint8_t *img);
/* Recompute the CRC of every block that carries the AVFS magic, and the data CRC of every
 * journal commit record over the blocks before it in the log. */
void fuzz_img_reseal(uint8_t *dev);

/* Look at everything a mounted tree holds, as `ls -lR` and `cat` would: each directory's
 * names, each inode's attributes, symlink targets, the first bytes of files. Bounded: depth 8,
 * 2,000 names. */
void fuzz_walk(struct avfs_fsio *io);

#endif
