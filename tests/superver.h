/* superver.h — for the C tests of format versions: a memory disk's image as an older or newer
 * AVFS made it. */
#ifndef AVFS_SUPERVER_H
#define AVFS_SUPERVER_H

#include <stdint.h>

struct avfs_disk;

/* Set the format version in both superblock copies of memory disk d (size bytes, unmounted),
 * their CRCs resealed. */
void superver_set(struct avfs_disk *d, uint64_t size, uint32_t version);

#endif
