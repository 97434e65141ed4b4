/*
 * pattern.h — for the C tests that move file data through libavio (test_avio_client,
 * test_daemon_avio): the byte every offset holds, so that a buffer read anywhere can be
 * checked without a copy of the file. Salted variants tell apart the writers of one region.
 */
#ifndef AVFS_PATTERN_H
#define AVFS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* p[0..n) = the pattern's bytes at file offsets off.. xor salt (0: the plain pattern). */
void pattern_fill(uint8_t *p, uint64_t off, size_t n, uint8_t salt);
/* The first index where p differs from pattern_fill(off, n, salt), or -1 when none does. */
long long pattern_bad(const uint8_t *p, uint64_t off, size_t n, uint8_t salt);

#endif
