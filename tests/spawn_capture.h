/* spawn_capture.h — for the C tests that run a tool (losetup...) and read what it said. */
#ifndef AVFS_SPAWN_CAPTURE_H
#define AVFS_SPAWN_CAPTURE_H

#include <stddef.h>

/* Run argv (PATH searched), capturing its stdout and stderr in out (NUL-terminated, cut to
 * outlen). Exit status, or -1 if it could not run or died of a signal. */
int spawn_capture(char *const argv[], char *out, size_t outlen);

#endif
