/*
 * fuzz_super.c — libFuzzer target: the superblock check (fs/super.c) and, for a superblock it
 * accepts, opening an fs object with that geometry (every table is sized from it). Input: a
 * superblock image (resealed), then optionally 8 bytes of device size (at most 64 MiB).
 */
#include "fs.h"
#include "fuzzimg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dev[AVFS_MBLOCK];
	uint64_t dev_size = FUZZ_DEV_SIZE;
	struct avfs_super sb;
	struct avfs_fs *fs;
	char why[256];

	memset(dev, 0, AVFS_MBLOCK);
	memcpy(dev, data, size < AVFS_MBLOCK ? size : AVFS_MBLOCK);
	if (size >= AVFS_MBLOCK + 8) {
		memcpy(&dev_size, data + AVFS_MBLOCK, 8);
		dev_size %= 64ull << 20;
	}
	fuzz_img_seal(dev);
	if (avfs_fs_check_super(dev, dev_size, &sb, why, sizeof(why)))
		return 0;
	for (uint64_t m = 0; m < 4; m++)
		(void)avfs_fs_backup_off(&sb, m * sb.meta_blocks / 4);
	if (!avfs_fs_open(&sb, AVFS_MOUNT_RDONLY, &fs))
		avfs_fs_close(fs);
	return 0;
}
