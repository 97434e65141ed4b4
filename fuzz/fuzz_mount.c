/*
 * fuzz_mount.c — libFuzzer target: avfsd's mount of a tiny image (fuzzimg.h) on a memory disk
 * (replay written home, orphans freed), a walk of the whole tree as `ls -lR` and `cat` would,
 * then changes (mkdir, a file written, renamed and unlinked), a commit and an unmount. Flag bit
 * 2 mounts read-only instead (walk only).
 */
#include "fuzzimg.h"
#include "memdisk.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOW 1700000000000000000ll

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dev[FUZZ_DEV_SIZE], buf[100000];
	unsigned flags = fuzz_img_decode(data, size, dev);
	struct avfs_fsio *io = NULL;
	struct avfs_disk *d;
	uint64_t dir, ino;
	char why[256];

	if (flags & FUZZ_F_RESEAL)
		fuzz_img_reseal(dev);
	if (avfs_memdisk_open_image(dev, FUZZ_DEV_SIZE, 512, &d))
		abort();
	if (avfs_fsio_mount(d, flags & 2 ? AVFS_MOUNT_RDONLY : 0, &io, NULL, why, sizeof(why)))
		goto out;
	fuzz_walk(io);
	if (flags & 2) {
		avfs_fsio_abandon(io);
		goto out;
	}
	memset(buf, 0x5a, sizeof(buf));
	if (!avfs_fs_mkdir(io->fs, AVFS_ROOT_INO, "fz", 0755, 0, 0, NOW, &dir) &&
	    !avfs_fs_mknod(io->fs, dir, "f", 0100644, 0, 0, NOW, &ino)) {
		avfs_fsio_write(io, ino, 0, buf, sizeof(buf));
		avfs_fsio_truncate(io, ino, 5000);
		avfs_fs_rename(io->fs, dir, "f", AVFS_ROOT_INO, "g", 0, NOW);
		avfs_fs_unlink(io->fs, AVFS_ROOT_INO, "g", NOW);
		avfs_fs_rmdir(io->fs, AVFS_ROOT_INO, "fz", NOW);
	}
	avfs_fsio_maybe_commit(io);
	fuzz_walk(io);
	avfs_fsio_unmount(io);
out:
	avfs_disk_close(d);
	return 0;
}
