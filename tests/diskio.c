/*
 * diskio.c — the disk tests' request and data helpers (see diskio.h).
 */
#include "diskio.h"

void seed_fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

int64_t disk_io(struct avfs_disk *d, enum avfs_disk_op op, uint64_t lba, uint32_t len, void *buf,
		uint32_t flags)
{
	struct avfs_disk_req r = { .op = op, .flags = flags, .lba = lba, .len = len, .buf = buf,
				   .buf_index = -1 };

	return avfs_disk_io_sync(d, &r);
}
