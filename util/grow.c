/*
 * grow.c — the growth of appended-to arrays (grow.h). Nothing else: the arrays are the
 * callers'.
 */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

void *avfs_grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t c = *cap ? 2 * *cap : first;
	void *p;

	if (n < *cap)
		return v;
	if (!size || c < *cap || c > SIZE_MAX / size)
		return NULL;	/* doubling overflowed, or the bytes would */
	p = realloc(v, c * size);
	if (p)
		*cap = c;
	return p;
}
