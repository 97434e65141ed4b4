/*
 * signature.c — signature.h over libblkid's low-level probe (every superblock and partition
 * table it finds, as wipefs lists them) and AVFS's own superblock, which libblkid does not know.
 */
#include "signature.h"

#include "format.h"
#include "fs.h"

#include <blkid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EDGE (1u << 20)	/* avfs_signature_disk reads this much at each end */

static void add(char *what, size_t len, const char *s)
{
	size_t n = strlen(what);

	if (strstr(what, s))	/* the same type twice (a GPT's primary and backup headers) */
		return;
	snprintf(what + n, len - n, "%s%s", n ? " and " : "", s);
}

static uint32_t le32_at(int fd, uint64_t off)
{
	uint8_t b[4];

	if (pread(fd, b, 4, (off_t)off) != 4)
		return 0;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int avfs_signature_fd(int fd, uint64_t size, char *what, size_t len)
{
	blkid_probe pr;
	char s[128];
	int rc;

	*what = 0;
	if (size >= 4096 && (le32_at(fd, 0) == AVFS_MAGIC ||
			     le32_at(fd, avfs_fs_backup_super_off(size)) == AVFS_MAGIC))
		add(what, len, "an AVFS file system");
	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, (blkid_loff_t)size)) {
		snprintf(what, len, "libblkid cannot probe it");
		blkid_free_probe(pr);
		return -EIO;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE |
					  BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_FORCE_GPT);
	/* each round finds one more signature (0), until none is left (1) or it fails (< 0) */
	while ((rc = blkid_do_probe(pr)) == 0) {
		const char *type = NULL, *usage = NULL;

		if (!blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL)) {
			snprintf(s, sizeof(s), "a %s partition table", type);
		} else if (!blkid_probe_lookup_value(pr, "TYPE", &type, NULL)) {
			blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
			if (usage && !strcmp(usage, "filesystem"))
				snprintf(s, sizeof(s), "%s %s file system",
					 strchr("aeiou", type[0]) ? "an" : "a", type);
			else
				snprintf(s, sizeof(s), "a %s signature (%s)", type,
					 usage ? usage : "other");
		} else {
			continue;
		}
		add(what, len, s);
	}
	blkid_free_probe(pr);
	if (rc < 0 && !*what) {
		snprintf(what, len, "libblkid failed to read it");
		return -EIO;
	}
	return *what ? 1 : 0;
}

int avfs_signature_disk(struct avfs_disk *d, char *what, size_t len)
{
	uint64_t size = d->info.size, head = size < EDGE ? size : EDGE;
	uint64_t tail_off = size > EDGE ? (size - EDGE) / d->info.lbs * d->info.lbs : 0;
	uint8_t *buf = avfs_disk_alloc_buf(d, EDGE + d->info.lbs);	/* the tail: < EDGE + lbs */
	int fd = memfd_create("avfs-signature", MFD_CLOEXEC), err = 0;
	struct avfs_disk_req r = { .op = AVFS_DISK_READ, .buf = buf, .buf_index = -1 };
	int64_t res;

	*what = 0;
	if (!buf || fd < 0 || ftruncate(fd, (off_t)size)) {
		err = !buf ? -ENOMEM : -errno;
		snprintf(what, len, "cannot make room to probe it: %s", strerror(-err));
		goto out;
	}
	/* a sparse copy of both ends, for libblkid to read as if it were the device */
	for (int i = 0; i < 2 && !err; i++) {
		r.lba = (i ? tail_off : 0) / d->info.lbs;
		r.len = (uint32_t)(i ? size - tail_off : head);
		res = avfs_disk_io_sync(d, &r);
		if (res < 0 || pwrite(fd, buf, r.len, (off_t)(r.lba * d->info.lbs)) != (ssize_t)r.len) {
			err = res < 0 ? (int)res : -EIO;
			snprintf(what, len, "cannot read it: %s", strerror(-err));
		}
	}
	if (!err)
		err = avfs_signature_fd(fd, size, what, len);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}
