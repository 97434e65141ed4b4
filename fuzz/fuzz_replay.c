/*
 * fuzz_replay.c — libFuzzer target: a read-only mount of a tiny image (fuzzimg.h), which is
 * the superblock check, the journal's replay (every image of every committed transaction
 * checked before it is applied) and the load of what replay left: the path a hostile journal
 * takes. Flag bits of the input pick fsck's mount (FORCE, CHECK_BACKUP) or avfsd's.
 */
#include "fuzzimg.h"
#include "memdisk.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dev[FUZZ_DEV_SIZE];
	unsigned flags = fuzz_img_decode(data, size, dev), mflags = AVFS_MOUNT_RDONLY;
	struct avfs_mount_report rep;
	struct avfs_fsio *io = NULL;
	struct avfs_disk *d;
	char why[256];

	if (flags & FUZZ_F_RESEAL)
		fuzz_img_reseal(dev);
	if (flags & 2)
		mflags |= AVFS_MOUNT_FORCE | AVFS_MOUNT_KEEP_ORPHANS;
	if (flags & 4)
		mflags |= AVFS_MOUNT_CHECK_BACKUP;
	if (avfs_memdisk_open_image(dev, FUZZ_DEV_SIZE, 512, &d))
		abort();
	if (!avfs_fsio_mount(d, mflags, &io, &rep, why, sizeof(why)))
		avfs_fsio_abandon(io);
	avfs_disk_close(d);
	return 0;
}
