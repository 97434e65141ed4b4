/*
 * pattern.c — the test data pattern (see pattern.h).
 */
#include "pattern.h"

/* The byte at file offset off. */
static uint8_t pattern_byte(uint64_t off)
{
	return (uint8_t)((off >> 12) ^ (off % 251));	/* a prime cycle within a page, xor the page */
}

void pattern_fill(uint8_t *p, uint64_t off, size_t n, uint8_t salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern_byte(off + i) ^ salt;
}

long long pattern_bad(const uint8_t *p, uint64_t off, size_t n, uint8_t salt)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(pattern_byte(off + i) ^ salt))
			return (long long)i;
	return -1;
}
