/*
 * superver.c — for the C tests of format versions: rewrite the version in both superblock copies
 * of a memory disk (the home copy and the device's last block), resealed. Nothing else changes.
 */
#include "superver.h"

#include "crc32c.h"
#include "format.h"
#include "fs.h"
#include "memdisk.h"

void superver_set(struct avfs_disk *d, uint64_t size, uint32_t version)
{
	uint8_t *img = avfs_memdisk_data(d);
	uint64_t offs[2] = { 0, avfs_fs_backup_super_off(size) };

	for (int i = 0; i < 2; i++) {
		struct avfs_super *s = (struct avfs_super *)(img + offs[i]);

		s->version = version;
		s->hdr.crc = 0;
		s->hdr.crc = avfs_crc32c(0, s, AVFS_MBLOCK);
	}
}
