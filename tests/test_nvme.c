/* test_nvme.c — NVMe status decoding (disk/nvme.c) with canned completion statuses, QEMU's answer among them, and avfs_nvme_identify/avfs_nvme_open refusing what is not an NVMe namespace. */
#include "memdisk.h"
#include "nvme.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>	/* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* ------------------------------------------------------------------ status ---- */

/* Proves: every row of nvme.h's table maps as documented, with the status as passthrough
 * returns it in cqe->res (SC bits 0..7, SCT 8..10, More 13, DNR 14); CRD, More and DNR do not
 * change the errno; a negative cqe->res (a kernel error) passes through. */
static void test_nvme_status_table(void **state)
{
	static const struct {
		int status;
		int err;
	} rows[] = {
		{ 0x0000, 0 },			/* Successful Completion */
		{ 0x4080, -EINVAL },		/* QEMU's answer to a READ past the end: DNR + LBA range */
		{ 0x0080, -EINVAL },		/* the same without DNR */
		{ 0x6080, -EINVAL },		/* ... with More */
		{ 0x1880, -EINVAL },		/* ... with a Command Retry Delay */
		{ 0x4001, -EOPNOTSUPP },	/* Invalid Command Opcode */
		{ 0x4002, -EINVAL },		/* Invalid Field in Command */
		{ 0x400b, -EINVAL },		/* Invalid Namespace or Format */
		{ 0x0013, -EINVAL },		/* PRP Offset Invalid */
		{ 0x0015, -EACCES },		/* Operation Denied */
		{ 0x001d, -EBUSY },		/* Sanitize In Progress */
		{ 0x0020, -EROFS },		/* Namespace is Write Protected */
		{ 0x0081, -ENOSPC },		/* Capacity Exceeded */
		{ 0x0082, -EAGAIN },		/* Namespace Not Ready */
		{ 0x0083, -EBADE },		/* Reservation Conflict */
		{ 0x0084, -EBUSY },		/* Format In Progress */
		{ 0x0004, -EIO },		/* Data Transfer Error */
		{ 0x0006, -EIO },		/* Internal Error */
		{ 0x0007, -EIO },		/* Command Abort Requested */
		{ 0x0008, -EIO },		/* Command Aborted due to SQ Deletion */
		{ 0x00ff, -EIO },		/* a generic code no table knows */
		{ 0x0181, -EILSEQ },		/* Invalid Protection Information */
		{ 0x4182, -EROFS },		/* Attempted Write to Read Only Range */
		{ 0x0180, -EIO },		/* Conflicting Attributes: command specific, other */
		{ 0x0280, -EIO },		/* Write Fault */
		{ 0x4281, -EIO },		/* Unrecovered Read Error */
		{ 0x0282, -EIO },		/* End-to-end Guard Check Error */
		{ 0x0285, -EILSEQ },		/* Compare Failure */
		{ 0x0286, -EACCES },		/* Access Denied */
		{ 0x0300, -EIO },		/* Internal Path Error */
		{ 0x0703, -EIO },		/* vendor specific */
		{ 0x0401, -EIO },		/* reserved status code type */
		{ -EINTR, -EINTR },		/* the kernel's own errors pass through */
		{ -EIO, -EIO },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int got = avfs_nvme_status_errno(rows[i].status);

		if (got != rows[i].err)
			fail_msg("status 0x%04x: %d, expected %d", (unsigned)rows[i].status, got,
				 rows[i].err);
		assert_non_null(avfs_nvme_status_str(rows[i].status));
		assert_true(avfs_nvme_status_str(rows[i].status)[0] != '\0');
	}
}

/* Proves: the texts are the specification's (through libnvme), decoded from SCT/SC alone —
 * 0x4080 reads "LBA Out of Range" like 0x0080; a negative status gives strerror's text. */
static void test_nvme_status_text(void **state)
{
	(void)state;
	assert_non_null(strstr(avfs_nvme_status_str(0x4080), "LBA Out of Range"));
	assert_string_equal(avfs_nvme_status_str(0x4080), avfs_nvme_status_str(0x0080));
	assert_non_null(strstr(avfs_nvme_status_str(0x0281), "Unrecovered Read Error"));
	assert_non_null(strstr(avfs_nvme_status_str(0x0002), "Invalid Field"));
	assert_true(avfs_nvme_status_str(0x0000)[0] != '\0');
	assert_true(avfs_nvme_status_str(0x07ff)[0] != '\0');
	assert_string_equal(avfs_nvme_status_str(-ENOENT), strerror(ENOENT));
	/* a status and the same code type with another code read differently */
	assert_string_not_equal(avfs_nvme_status_str(0x0080), avfs_nvme_status_str(0x0081));
}

/* ------------------------------------------------------------------ not NVMe ---- */

/* A fresh directory under $TMPDIR (or /tmp) into dir, holding an image file of size bytes
 * whose path goes into image. */
static void make_image(char *dir, size_t dirlen, char *image, size_t imagelen, off_t size)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(dir, dirlen, "%s/avfs-nvme-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(image, imagelen, "%s/image", dir);
	fd = open(image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

/* Proves: what is not an NVMe namespace is refused cleanly by both entry points, with no
 * handle, nothing written to *out and nothing leaked (ASan): an image file, a directory and
 * /dev/null give -ENOTTY, a missing path -ENOENT, bad arguments -EINVAL. */
static void test_nvme_not_nvme(void **state)
{
	char dir[PATH_MAX], image[PATH_MAX + 16], missing[PATH_MAX + 16];
	const char *not_nvme[3] = { image, dir, "/dev/null" };
	struct avfs_disk *d = (struct avfs_disk *)0x1;
	struct avfs_nvme_ident id, untouched;

	(void)state;
	make_image(dir, sizeof(dir), image, sizeof(image), 1 << 20);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	memset(&id, 0xa5, sizeof(id));
	untouched = id;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(avfs_nvme_identify(not_nvme[i], &id), -ENOTTY);
		assert_int_equal(avfs_nvme_open(not_nvme[i], 0, &d), -ENOTTY);
		assert_int_equal(avfs_nvme_open(not_nvme[i], AVFS_NVME_RDONLY, &d), -ENOTTY);
	}
	assert_int_equal(avfs_nvme_identify(missing, &id), -ENOENT);
	assert_int_equal(avfs_nvme_open(missing, 0, &d), -ENOENT);
	assert_memory_equal(&id, &untouched, sizeof(id));
	assert_ptr_equal(d, (struct avfs_disk *)0x1);	/* never written on failure */

	assert_int_equal(avfs_nvme_identify(NULL, &id), -EINVAL);
	assert_int_equal(avfs_nvme_identify(image, NULL), -EINVAL);
	assert_int_equal(avfs_nvme_open(NULL, 0, &d), -EINVAL);
	assert_int_equal(avfs_nvme_open(image, 0, NULL), -EINVAL);
	assert_int_equal(avfs_nvme_open(image, 0x80, &d), -EINVAL);

	unlink(image);
	rmdir(dir);
}

/* Proves: avfs_nvme_info answers only for its own backend's disks (a memdisk is refused). */
static void test_nvme_info_other_backend(void **state)
{
	struct avfs_nvme_ident id;
	struct avfs_disk *d;

	(void)state;
	assert_int_equal(avfs_memdisk_open(1 << 20, 512, &d), 0);
	assert_int_equal(avfs_nvme_info(d, &id), -EINVAL);
	assert_int_equal(avfs_nvme_info(NULL, &id), -EINVAL);
	assert_int_equal(avfs_nvme_info(d, NULL), -EINVAL);
	avfs_disk_close(d);
}

/* Proves: a block device that is not NVMe (a loop device, which answers NVME_IOCTL_ID with
 * EINVAL rather than ENOTTY) is refused with -ENOTTY by identify and open. Needs root and
 * loop devices, else skipped. */
static void test_nvme_loop_device(void **state)
{
	char dir[PATH_MAX], image[PATH_MAX + 16], cmd[PATH_MAX + 64], loopdev[64] = "";
	struct avfs_nvme_ident id;
	struct avfs_disk *d = NULL;
	int ret_id, ret_open;
	FILE *p;

	(void)state;
	if (access("/dev/loop-control", F_OK) || geteuid() != 0) {
		fprintf(stderr, "skip: loop devices unavailable (or not root)\n");
		skip();
	}
	make_image(dir, sizeof(dir), image, sizeof(image), 4 << 20);
	snprintf(cmd, sizeof(cmd), "losetup --find --show '%s' 2>&1", image);
	p = popen(cmd, "r");
	if (!p || !fgets(loopdev, sizeof(loopdev), p) || pclose(p) != 0 ||
	    strncmp(loopdev, "/dev/loop", 9)) {
		unlink(image);
		rmdir(dir);
		fprintf(stderr, "skip: losetup failed: %s\n", loopdev);
		skip();
	}
	loopdev[strcspn(loopdev, "\n")] = '\0';

	ret_id = avfs_nvme_identify(loopdev, &id);
	ret_open = avfs_nvme_open(loopdev, AVFS_NVME_RDONLY, &d);
	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", loopdev);
	if (system(cmd) != 0)
		fprintf(stderr, "losetup -d %s failed\n", loopdev);
	unlink(image);
	rmdir(dir);
	if (!ret_open)
		avfs_disk_close(d);
	assert_int_equal(ret_id, -ENOTTY);
	assert_int_equal(ret_open, -ENOTTY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvme_status_table),
		cmocka_unit_test(test_nvme_status_text),
		cmocka_unit_test(test_nvme_not_nvme),
		cmocka_unit_test(test_nvme_info_other_backend),
		cmocka_unit_test(test_nvme_loop_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
