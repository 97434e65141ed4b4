/*
 * fuzz_fsck.c — libFuzzer target: fsck.avfs on a tiny image (fuzzimg.h): the forced mount
 * (backup copies, blocks lost in both taken as empty), the check and, unless flag bit 2 asks
 * for -n, the repair with its commits, the second look, the unmount and a plain remount and
 * walk. With AVFS_FUZZ_STRICT=1 in the environment, findings left after a repair abort: fsck
 * must leave nothing for a second run.
 */
#include "fsck.h"
#include "fuzzimg.h"
#include "memdisk.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int commit(void *arg)
{
	return avfs_fsio_sync(arg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dev[FUZZ_DEV_SIZE];
	static int strict = -1;
	unsigned flags = fuzz_img_decode(data, size, dev);
	bool repair = !(flags & 2);
	struct avfs_fsck_report r = { 0 }, again = { 0 };
	struct avfs_fsio *io = NULL;
	struct avfs_disk *d;
	char why[256];

	if (strict < 0)
		strict = getenv("AVFS_FUZZ_STRICT") && getenv("AVFS_FUZZ_STRICT")[0] == '1';
	if (flags & FUZZ_F_RESEAL)
		fuzz_img_reseal(dev);
	if (avfs_memdisk_open_image(dev, FUZZ_DEV_SIZE, 512, &d))
		abort();
	if (avfs_fsio_mount(d, AVFS_MOUNT_FORCE | AVFS_MOUNT_CHECK_BACKUP | AVFS_MOUNT_KEEP_ORPHANS |
			    (repair ? 0 : AVFS_MOUNT_RDONLY), &io, NULL, why, sizeof(why)))
		goto out;
	if (avfs_fsck_check_commit(io->fs, repair ? AVFS_FSCK_REPAIR : 0, &r,
				   repair ? commit : NULL, io) || !repair || avfs_fsio_sync(io)) {
		avfs_fsio_abandon(io);
		goto out;
	}
	if (!avfs_fsck_check(io->fs, 0, &again) && again.errors && strict) {
		for (size_t i = 0; i < again.nfindings; i++)
			fprintf(stderr, "left after repair: %s\n", again.findings[i]);
		abort();
	}
	if (avfs_fsio_unmount(io))
		goto out;
	io = NULL;
	if (!avfs_fsio_mount(d, 0, &io, NULL, why, sizeof(why))) {
		fuzz_walk(io);
		avfs_fsio_unmount(io);
	} else if (strict) {
		fprintf(stderr, "the repaired image does not mount: %s\n", why);
		abort();
	}
out:
	avfs_fsck_report_free(&r);
	avfs_fsck_report_free(&again);
	avfs_disk_close(d);
	return 0;
}
