/*
 * grow.h — the one way an array that is appended to grows: to twice its capacity when it is
 * full (to a first capacity when it has none), so that n appends cost O(n) copies in all.
 * Pure: realloc only, no I/O. What the elements are and who frees the array is the caller's.
 */
#ifndef AVFS_GROW_H
#define AVFS_GROW_H

#include <stddef.h>

/* The array v (*cap elements of size bytes, n of them in use) with room for element n: v
 * itself while n < *cap; else v realloc'd to 2 * *cap elements (first when *cap is 0) and
 * *cap set to that. NULL without memory or when the bytes would overflow a size_t: then v is
 * untouched and still the caller's. */
void *avfs_grow(void *v, size_t *cap, size_t n, size_t size, size_t first);

#endif
