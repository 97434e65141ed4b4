/*
 * diskio.h — for the C tests of the disk backends and the test-support disks (test_disk,
 * test_recdisk): one synchronous request in a line, and reproducible data to write with it.
 */
#ifndef AVFS_TEST_DISKIO_H
#define AVFS_TEST_DISKIO_H

#include <stddef.h>
#include <stdint.h>

#include "disk.h"

/* p[0..n) from a linear congruential sequence started at seed: the same seed, the same bytes. */
void seed_fill(uint8_t *p, size_t n, uint32_t seed);
/* One request on d (no registered buffer), waited for: avfs_disk_io_sync's result. */
int64_t disk_io(struct avfs_disk *d, enum avfs_disk_op op, uint64_t lba, uint32_t len, void *buf,
		uint32_t flags);

#endif
