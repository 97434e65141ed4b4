/*
 * why.h — the one way a function says why it failed: a message formatted into the caller's
 * buffer beside the -errno it returns. Pure (vsnprintf only); it never prints.
 */
#ifndef AVFS_WHY_H
#define AVFS_WHY_H

#include <stddef.h>

/* Format into why[len], truncated to fit; nothing when why is NULL or len is 0 (the caller
 * did not ask). */
void avfs_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
