/*
 * sysfs_i.h — what the hardware backends (uring.c, sg.c, nvme.c) read from sysfs about a
 * device: one number from one file. Private to disk/; which files mean what is the caller's.
 */
#ifndef AVFS_DISK_SYSFS_I_H
#define AVFS_DISK_SYSFS_I_H

#include <stdint.h>

/* The unsigned number a small sysfs file holds ("1\n", "512\n"). The value, or -errno:
 * -ENOENT and the like when there is no such file, -EIO when it holds no number up to
 * INT64_MAX. */
int64_t disk_sysfs_u64(const char *path);

#endif
