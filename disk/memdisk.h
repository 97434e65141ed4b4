/*
 * memdisk.h — a RAM disk backend for tests and tools: the disk.h interface over one
 * zero-filled (or copied) buffer, with every request completing at submit, and fault
 * injection (reads, writes, flushes). It models no timing, no volatile cache and no power
 * loss (see recdisk.h).
 */
#ifndef AVFS_MEMDISK_H
#define AVFS_MEMDISK_H

#include "disk.h"

/* A zero-filled RAM disk of size bytes (> 0, a multiple of lbs); lbs a power of two in
 * [512, AVFS_DISK_MAX_IO]. info: pbs = max(lbs, 4096), mem_align = lbs, not rotational,
 * no SEEK, model "mem". 0 and *out, or -EINVAL / -ENOMEM. */
int avfs_memdisk_open(uint64_t size, uint32_t lbs, struct avfs_disk **out);
/* The same, holding a copy of image (size bytes); image is not referenced afterwards. */
int avfs_memdisk_open_image(const void *image, uint64_t size, uint32_t lbs,
			    struct avfs_disk **out);

bool avfs_memdisk_is(const struct avfs_disk *d);
/* The backing bytes (info.size of them), or NULL if d is not a memdisk. Writing through
 * this pointer changes the disk's content directly, with no request and no record. */
uint8_t *avfs_memdisk_data(struct avfs_disk *d);

/* Fault injection for tests: a READ touching any byte of [off, off + len) completes with
 * -EIO and leaves its buffer untouched; writes are unaffected. One range at a time: a call
 * replaces the previous range, len 0 clears it. 0, or -EINVAL (not a memdisk, or the range
 * wraps past UINT64_MAX). */
int avfs_memdisk_fail_reads(struct avfs_disk *d, uint64_t off, uint64_t len);
/* The same for writes: a WRITE touching [off, off + len) completes with -EIO and changes no
 * byte (a dead sector the drive cannot remap); reads are unaffected. Its own range. */
int avfs_memdisk_fail_writes(struct avfs_disk *d, uint64_t off, uint64_t len);
/* Every FLUSH completes with -EIO while fail is true. 0 or -EINVAL (not a memdisk). */
int avfs_memdisk_fail_flushes(struct avfs_disk *d, bool fail);

#endif
