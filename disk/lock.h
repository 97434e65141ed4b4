/*
 * lock.h — one writer per device: the lock avfsd holds while it serves a device or an image,
 * and mkfs.avfs and fsck.avfs -y while they write one. It is an flock on the device node or the
 * image file, and for a block device also the kernel's exclusive claim (an O_EXCL open), which
 * fails while the kernel has the device mounted or in use (a partition of it mounted, a
 * device-mapper or RAID member). An image attached to a loop device is refused as well: what
 * uses the loop device could write it. It reads nothing from the device and writes nothing.
 */
#ifndef AVFS_LOCK_H
#define AVFS_LOCK_H

#include <stddef.h>

/*
 * Take path's lock: the descriptor that holds it (>= 0; close it to let go), or -EBUSY when
 * something else holds or uses the device (why says what, and what to do), or the -errno of
 * opening it (why says so).
 */
int avfs_disk_lock(const char *path, char *why, size_t whylen);

/*
 * Whether path is in use, without taking anything for long: 0 free, -EBUSY in use (why
 * says by what), other -errno when it cannot be told.
 */
int avfs_disk_in_use(const char *path, char *why, size_t whylen);

#endif
