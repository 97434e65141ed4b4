/* test_scsi.c — SCSI CDB construction and sense decoding (disk/scsi.c) with canned sense buffers, QEMU's answers among them, and avfs_sg_open (disk/sg.c) refusing what is not a SCSI disk. */
#include "scsi.h"
#include "sg.h"

#include "spawn_capture.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scsi/sg_lib.h>

#include <setjmp.h>	/* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* ------------------------------------------------------------------ CDBs ---- */

/* Proves: READ(16) carries opcode 0x88, a 64-bit big-endian LBA in bytes 2-9, a 32-bit
 * transfer length in 10-13, and no FUA unless asked. */
static void test_scsi_cdb_read16(void **state)
{
	static const uint8_t want[16] = { 0x88, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
					  0xef, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00 };
	uint8_t cdb[16];

	(void)state;
	memset(cdb, 0xee, sizeof(cdb));
	assert_int_equal(avfs_scsi_cdb_rw16(cdb, false, 0x0123456789abcdefull, 0x01020304, false),
			 16);
	assert_memory_equal(cdb, want, 16);
	assert_int_equal(avfs_scsi_cdb_rw16(cdb, false, 0, 1, true), 16);
	assert_int_equal(cdb[1], 0x08);	/* FUA is legal on a read too (bypasses the cache) */
}

/* Proves: WRITE(16) is opcode 0x8a; FUA sets byte 1 bit 3 and nothing else; the largest
 * LBA and transfer length survive. */
static void test_scsi_cdb_write16_fua(void **state)
{
	static const uint8_t fua[16] = { 0x8a, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xaa,
					 0xaa, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00 };
	uint8_t cdb[16];

	(void)state;
	/* the command QEMU's guest log shows: WRITE(16) FUA at LBA 174762, 8 blocks */
	avfs_scsi_cdb_rw16(cdb, true, 174762, 8, true);
	assert_memory_equal(cdb, fua, 16);
	avfs_scsi_cdb_rw16(cdb, true, 174762, 8, false);
	assert_int_equal(cdb[1], 0x00);
	assert_memory_equal(cdb + 2, fua + 2, 14);

	avfs_scsi_cdb_rw16(cdb, true, UINT64_MAX, UINT32_MAX, true);
	assert_int_equal(cdb[0], 0x8a);
	assert_int_equal(cdb[1], AVFS_SCSI_RW16_FUA);
	for (int i = 2; i < 14; i++)
		assert_int_equal(cdb[i], 0xff);
	assert_int_equal(cdb[14], 0);
	assert_int_equal(cdb[15], 0);
}

/* Proves: SEEK(10) is 0x2b with a 32-bit LBA in bytes 2-5; an LBA that does not fit is
 * refused (-EOVERFLOW) rather than truncated to a wrong place. */
static void test_scsi_cdb_seek10(void **state)
{
	static const uint8_t want[10] = { 0x2b, 0, 0x00, 0x03, 0xff, 0xff, 0, 0, 0, 0 };
	uint8_t cdb[10];

	(void)state;
	assert_int_equal(avfs_scsi_cdb_seek10(cdb, 0x3ffff), 10);
	assert_memory_equal(cdb, want, 10);
	assert_int_equal(avfs_scsi_cdb_seek10(cdb, UINT32_MAX), 10);
	assert_int_equal(cdb[2] & cdb[3] & cdb[4] & cdb[5], 0xff);
	memset(cdb, 0x5a, sizeof(cdb));
	assert_int_equal(avfs_scsi_cdb_seek10(cdb, (uint64_t)UINT32_MAX + 1), -EOVERFLOW);
	assert_int_equal(cdb[0], 0x5a);	/* untouched */
}

/* Proves: SYNCHRONIZE CACHE(10) of the whole medium is 35 00 followed by zeros (IMMED
 * clear), and a range lands in bytes 2-5 and 7-8; TEST UNIT READY is six zero bytes. */
static void test_scsi_cdb_sync_cache_and_tur(void **state)
{
	static const uint8_t whole[10] = { 0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t range[10] = { 0x35, 0, 0x12, 0x34, 0x56, 0x78, 0, 0xab, 0xcd, 0 };
	static const uint8_t tur[6] = { 0 };
	uint8_t cdb[10];

	(void)state;
	memset(cdb, 0xee, sizeof(cdb));
	assert_int_equal(avfs_scsi_cdb_sync_cache10(cdb, 0, 0), 10);
	assert_memory_equal(cdb, whole, 10);
	avfs_scsi_cdb_sync_cache10(cdb, 0x12345678, 0xabcd);
	assert_memory_equal(cdb, range, 10);
	memset(cdb, 0xee, sizeof(cdb));
	assert_int_equal(avfs_scsi_cdb_test_unit_ready(cdb), 6);
	assert_memory_equal(cdb, tur, 6);
}

/* Proves: CDB lengths follow the group code; names and the trace text are what the guest
 * suite greps for ("WRITE(16) 8a 08 ..."). */
static void test_scsi_cdb_names_and_text(void **state)
{
	uint8_t cdb[16];
	char buf[96];

	(void)state;
	assert_int_equal(avfs_scsi_cdb_len(0x00), 6);
	assert_int_equal(avfs_scsi_cdb_len(0x2b), 10);
	assert_int_equal(avfs_scsi_cdb_len(0x35), 10);
	assert_int_equal(avfs_scsi_cdb_len(0x88), 16);
	assert_int_equal(avfs_scsi_cdb_len(0x8a), 16);
	assert_int_equal(avfs_scsi_cdb_len(0xa0), 12);
	assert_int_equal(avfs_scsi_cdb_len(0x7f), 0);

	avfs_scsi_cdb_rw16(cdb, true, 174762, 8, true);
	assert_string_equal(avfs_scsi_cdb_str(cdb, 16, buf, sizeof(buf)),
			    "WRITE(16) 8a 08 00 00 00 00 00 02 aa aa 00 00 00 08 00 00");
	avfs_scsi_cdb_seek10(cdb, 0);
	assert_string_equal(avfs_scsi_cdb_str(cdb, 10, buf, sizeof(buf)),
			    "SEEK(10) 2b 00 00 00 00 00 00 00 00 00");
	avfs_scsi_cdb_sync_cache10(cdb, 0, 0);
	assert_string_equal(avfs_scsi_cdb_name(cdb, buf, sizeof(buf)), "SYNCHRONIZE CACHE(10)");
	cdb[0] = 0x88;
	assert_string_equal(avfs_scsi_cdb_name(cdb, buf, sizeof(buf)), "READ(16)");
	cdb[0] = 0xc1;
	assert_string_equal(avfs_scsi_cdb_name(cdb, buf, sizeof(buf)), "OPCODE 0xc1");
	/* a short buffer truncates, never overflows */
	avfs_scsi_cdb_rw16(cdb, false, 1, 1, false);
	avfs_scsi_cdb_str(cdb, 16, buf, 16);
	assert_true(strlen(buf) < 16);
	assert_int_equal(strncmp(buf, "READ(16)", 8), 0);
}

/* ------------------------------------------------------------------ sense ---- */

#define FIXED(valid, key, info, asc, ascq)                                                   \
	{ (valid) ? 0xf0 : 0x70, 0x00, (key), (uint8_t)((info) >> 24), (uint8_t)((info) >> 16), \
	  (uint8_t)((info) >> 8), (uint8_t)(info), 0x0a, 0, 0, 0, 0, (asc), (ascq), 0, 0, 0, 0 }

struct sense_case {
	const char *name;
	uint8_t sense[32];
	int len;
	int err;
	bool retry;
	bool info_valid;
	uint64_t info;
	const char *text;	/* exact text, or NULL */
	const char *has;	/* a part of the text, or NULL */
};

/* Every sense key, and the answers QEMU's scsi-hd gives (notes/qemu-guest-testing.md). */
static const struct sense_case sense_cases[] = {
	/* QEMU, exactly as its scsi-hd builds fixed sense (70 00 key 00... 0a ... asc ascq) */
	{ "qemu invalid opcode (REPORT SUPPORTED OPCODES, SEEK(6), vendor)",
	  FIXED(0, 0x5, 0, 0x20, 0x00), 18, -EOPNOTSUPP, false, false, 0,
	  "Illegal Request: Invalid command operation code", NULL },
	{ "qemu LBA out of range (SEEK(10), READ(16) past the end)",
	  FIXED(0, 0x5, 0, 0x21, 0x00), 18, -EINVAL, false, false, 0,
	  "Illegal Request: Logical block address out of range", NULL },
	{ "qemu invalid field in CDB (GET LBA STATUS)",
	  FIXED(0, 0x5, 0, 0x24, 0x00), 18, -EINVAL, false, false, 0,
	  "Illegal Request: Invalid field in cdb", NULL },
	/* medium errors: the failing LBA when the VALID bit says the field means something */
	{ "medium error, fixed, VALID, LBA in the information field",
	  FIXED(1, 0x3, 0x12345678, 0x11, 0x00), 18, -EIO, false, true, 0x12345678,
	  "Medium Error: Unrecovered read error, LBA 305419896", NULL },
	{ "medium error, fixed, VALID clear: no LBA",
	  FIXED(0, 0x3, 0x12345678, 0x0c, 0x00), 18, -EIO, false, false, 0,
	  "Medium Error: Write error", NULL },
	{ "medium error, descriptor format, 64-bit LBA in the information descriptor",
	  { 0x72, 0x03, 0x11, 0x00, 0, 0, 0, 0x0c,
	    0x00, 0x0a, 0x80, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a },
	  20, -EIO, false, true, 0x123456789aull,
	  "Medium Error: Unrecovered read error, LBA 78187493530", NULL },
	{ "illegal request, descriptor format, LBA out of range",
	  { 0x72, 0x05, 0x21, 0x00, 0, 0, 0, 0x00 }, 8, -EINVAL, false, false, 0,
	  "Illegal Request: Logical block address out of range", NULL },
	{ "deferred error, fixed format 0x71", { 0x71, 0, 0x4, 0, 0, 0, 0, 0x0a, 0, 0, 0, 0, 0x44,
						 0x00, 0, 0, 0, 0 },
	  18, -EIO, false, false, 0, NULL, "Hardware Error" },
	/* not ready */
	{ "not ready, becoming ready", FIXED(0, 0x2, 0, 0x04, 0x01), 18, -EAGAIN, false, false, 0,
	  NULL, "Not Ready: Logical unit is in process of becoming ready" },
	{ "not ready, initializing command required", FIXED(0, 0x2, 0, 0x04, 0x02), 18, -EBUSY,
	  false, false, 0, NULL, "Not Ready" },
	{ "not ready, medium not present", FIXED(0, 0x2, 0, 0x3a, 0x00), 18, -ENOMEDIUM, false,
	  false, 0, "Not Ready: Medium not present", NULL },
	/* unit attention: retried once by the backend */
	{ "unit attention, power on or reset", FIXED(0, 0x6, 0, 0x29, 0x00), 18, -EAGAIN, true,
	  false, 0, "Unit Attention: Power on, reset, or bus device reset occurred", NULL },
	{ "unit attention, mode parameters changed", FIXED(0, 0x6, 0, 0x2a, 0x01), 18, -EAGAIN,
	  true, false, 0, "Unit Attention: Mode parameters changed", NULL },
	/* the rest of the keys */
	{ "no sense", FIXED(0, 0x0, 0, 0x00, 0x00), 18, 0, false, false, 0, NULL, "No Sense" },
	{ "recovered error", FIXED(0, 0x1, 0, 0x17, 0x01), 18, 0, false, false, 0, NULL,
	  "Recovered Error" },
	{ "hardware error", FIXED(0, 0x4, 0, 0x44, 0x00), 18, -EIO, false, false, 0, NULL,
	  "Hardware Error" },
	{ "data protect, write protected", FIXED(0, 0x7, 0, 0x27, 0x00), 18, -EROFS, false, false,
	  0, "Data Protect: Write protected", NULL },
	{ "blank check", FIXED(0, 0x8, 0, 0x00, 0x00), 18, -EIO, false, false, 0, NULL,
	  "Blank Check" },
	{ "aborted command, parity: transient", FIXED(0, 0xb, 0, 0x47, 0x00), 18, -EIO, true,
	  false, 0, NULL, "Aborted Command" },
	{ "aborted command, guard check failed: not transient", FIXED(0, 0xb, 0, 0x10, 0x01), 18,
	  -EILSEQ, false, false, 0, NULL, "Aborted Command" },
	{ "volume overflow", FIXED(0, 0xd, 0, 0x00, 0x00), 18, -ENOSPC, false, false, 0, NULL,
	  "Volume Overflow" },
	{ "miscompare", FIXED(0, 0xe, 0, 0x1d, 0x00), 18, -EILSEQ, false, false, 0, NULL,
	  "Miscompare" },
};

/* Proves: each canned sense buffer (fixed and descriptor format, QEMU's own among them)
 * decodes to the documented errno, retry flag, information field and text. */
static void test_scsi_sense_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(sense_cases) / sizeof(sense_cases[0]); i++) {
		const struct sense_case *c = &sense_cases[i];
		bool desc = (c->sense[0] & 0x7f) >= 0x72;
		struct avfs_scsi_sense r;
		/* the category is what libsgutils2 itself makes of the buffer */
		int cat = sg_err_category_sense(c->sense, c->len);
		int err = avfs_scsi_decode(cat, c->sense, c->len, &r);

		print_message("  %s: %d %s\n", c->name, r.err, r.text);
		assert_int_equal(err, c->err);
		assert_int_equal(r.err, c->err);
		assert_true(r.have_sense);
		assert_int_equal(r.key, (desc ? c->sense[1] : c->sense[2]) & 0xf);
		assert_int_equal(r.retry, c->retry);
		assert_int_equal(r.info_valid, c->info_valid);
		if (c->info_valid)
			assert_int_equal(r.info, c->info);
		if (c->text)
			assert_string_equal(r.text, c->text);
		if (c->has)
			assert_non_null(strstr(r.text, c->has));
		/* the same answer from the key alone */
		assert_int_equal(avfs_scsi_sense_errno(r.key, r.asc, r.ascq, NULL), c->err);
	}
}

/* Proves: QEMU's out-of-range answer is the category libsgutils2 calls
 * SG_LIB_LBA_OUT_OF_RANGE (22), and that category alone decodes to -EINVAL like the sense. */
static void test_scsi_sense_qemu_categories(void **state)
{
	static const uint8_t oor[18] = FIXED(0, 0x5, 0, 0x21, 0x00);
	static const uint8_t inv[18] = FIXED(0, 0x5, 0, 0x20, 0x00);
	struct avfs_scsi_sense r;

	(void)state;
	assert_int_equal(sg_err_category_sense(oor, sizeof(oor)), SG_LIB_LBA_OUT_OF_RANGE);
	assert_int_equal(sg_err_category_sense(inv, sizeof(inv)), SG_LIB_CAT_INVALID_OP);
	assert_int_equal(avfs_scsi_decode(SG_LIB_LBA_OUT_OF_RANGE, NULL, 0, &r), -EINVAL);
	assert_false(r.have_sense);
	assert_string_equal(r.text, "Illegal Request: Logical block address out of range");
	assert_int_equal(avfs_scsi_decode(SG_LIB_CAT_INVALID_OP, NULL, 0, &r), -EOPNOTSUPP);
}

/* Proves: without sense data the category decides: statuses, timeouts, OS errors as
 * sg_convert_errno() encodes them, negative values, and the retry flag. */
static void test_scsi_category_errno(void **state)
{
	static const struct {
		int cat, err;
		bool retry;
	} t[] = {
		{ SG_LIB_CAT_CLEAN, 0, false },
		{ SG_LIB_CAT_RECOVERED, 0, false },
		{ SG_LIB_CAT_NO_SENSE, 0, false },
		{ SG_LIB_CAT_CONDITION_MET, 0, false },
		{ SG_LIB_CAT_NOT_READY, -EBUSY, false },
		{ SG_LIB_CAT_MEDIUM_HARD, -EIO, false },
		{ SG_LIB_CAT_MEDIUM_HARD_WITH_INFO, -EIO, false },
		{ SG_LIB_CAT_ILLEGAL_REQ, -EINVAL, false },
		{ SG_LIB_CAT_ILLEGAL_REQ_WITH_INFO, -EINVAL, false },
		{ SG_LIB_LBA_OUT_OF_RANGE, -EINVAL, false },
		{ SG_LIB_CAT_INVALID_OP, -EOPNOTSUPP, false },
		{ SG_LIB_CAT_UNIT_ATTENTION, -EAGAIN, true },
		{ SG_LIB_CAT_DATA_PROTECT, -EROFS, false },
		{ SG_LIB_CAT_ABORTED_COMMAND, -EIO, true },
		{ SG_LIB_CAT_PROTECTION, -EILSEQ, false },
		{ SG_LIB_CAT_MISCOMPARE, -EILSEQ, false },
		{ SG_LIB_CAT_RES_CONFLICT, -EBADE, false },
		{ SG_LIB_CAT_BUSY, -EBUSY, false },
		{ SG_LIB_CAT_TS_FULL, -EBUSY, false },
		{ SG_LIB_CAT_TASK_ABORTED, -EIO, false },
		{ SG_LIB_CAT_TIMEOUT, -ETIMEDOUT, false },
		{ SG_LIB_CAT_MALFORMED, -EPROTO, false },
		{ SG_LIB_CAT_SENSE, -EIO, false },
		{ SG_LIB_CAT_OTHER, -EIO, false },
		{ SG_LIB_OS_BASE_ERR + ENOTTY, -ENOTTY, false },
		{ SG_LIB_OS_BASE_ERR + ENOMEM, -ENOMEM, false },
		{ -1, -EIO, false },
		{ -ENODEV, -ENODEV, false },
	};
	struct avfs_scsi_sense r;
	bool retry;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		retry = !t[i].retry;
		assert_int_equal(avfs_scsi_cat_errno(t[i].cat, &retry), t[i].err);
		assert_int_equal(retry, t[i].retry);
		assert_int_equal(avfs_scsi_decode(t[i].cat, NULL, 0, &r), t[i].err);
		assert_int_equal(r.retry, t[i].retry);
		assert_true(r.text[0] != '\0');
	}
	assert_int_equal(avfs_scsi_cat_errno(SG_LIB_CAT_BUSY, NULL), -EBUSY);
}

/* Proves: sense that libsgutils2 cannot parse (bad response code) or that stops before its
 * sense key falls back to the category instead of being read as "no sense" (success), and a
 * GOOD outcome decodes to 0 with text GOOD. */
static void test_scsi_sense_unparseable(void **state)
{
	static const uint8_t junk[18] = { 0x00, 0x00, 0x03, 0, 0, 0, 0, 0x0a };
	static const uint8_t one[1] = { 0x70 };
	struct avfs_scsi_sense r;

	(void)state;
	assert_int_equal(avfs_scsi_decode(SG_LIB_CAT_SENSE, junk, sizeof(junk), &r), -EIO);
	assert_false(r.have_sense);
	assert_string_equal(r.text, "unrecognised sense data");
	assert_int_equal(avfs_scsi_decode(SG_LIB_CAT_OTHER, one, sizeof(one), &r), -EIO);
	assert_false(r.have_sense);
	assert_int_equal(avfs_scsi_decode(SG_LIB_CAT_CLEAN, NULL, 0, &r), 0);
	assert_string_equal(r.text, "GOOD");
	assert_int_equal(avfs_scsi_decode(SG_LIB_CAT_CLEAN, junk, 0, &r), 0);
}

/* ------------------------------------------------------------------ avfs_sg_open ---- */

/* Proves: what is not a SCSI disk is refused cleanly, with no handle and nothing leaked
 * (ASan): an image file and a directory and /dev/null give -ENOTTY, a missing path its
 * open error, bad arguments -EINVAL. */
static void test_scsi_sg_open_not_scsi(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], image[PATH_MAX + 16], missing[PATH_MAX + 16];
	struct avfs_disk *d = (struct avfs_disk *)0x1;
	struct avfs_sg_ident id;
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/avfs-scsi-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(image, sizeof(image), "%s/image", dir);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	fd = open(image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);

	assert_int_equal(avfs_sg_open(image, 0, &d), -ENOTTY);
	assert_int_equal(avfs_sg_open(image, AVFS_SG_RDONLY, &d), -ENOTTY);
	assert_int_equal(avfs_sg_open(dir, 0, &d), -ENOTTY);
	assert_int_equal(avfs_sg_open(dir, AVFS_SG_RDONLY, &d), -ENOTTY);
	assert_int_equal(avfs_sg_open("/dev/null", 0, &d), -ENOTTY);
	assert_int_equal(avfs_sg_open(missing, 0, &d), -ENOENT);
	assert_ptr_equal(d, (struct avfs_disk *)0x1);	/* never written on failure */

	assert_int_equal(avfs_sg_open(NULL, 0, &d), -EINVAL);
	assert_int_equal(avfs_sg_open(image, 0, NULL), -EINVAL);
	assert_int_equal(avfs_sg_open(image, 0x80, &d), -EINVAL);
	assert_int_equal(avfs_sg_info(NULL, &id), -EINVAL);

	unlink(image);
	rmdir(dir);
}

/* Proves: a block device that does not speak SCSI (a loop device: SG_IO is not its ioctl)
 * is refused with -ENOTTY after the INQUIRY fails, not taken for a disk. Needs root and
 * loop devices, else skipped. */
static void test_scsi_sg_open_loop_device(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], image[PATH_MAX + 16], out[512], loopdev[64];
	struct avfs_disk *d = NULL;
	int fd, st, ret;

	(void)state;
	if (access("/dev/loop-control", F_OK) || geteuid() != 0) {
		fprintf(stderr, "skip: loop devices unavailable (or not root)\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/avfs-scsi-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(image, sizeof(image), "%s/image", dir);
	fd = open(image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4 << 20), 0);
	close(fd);
	st = spawn_capture((char *const[]){ "losetup", "--find", "--show", image, NULL }, out,
			   sizeof(out));
	if (st != 0) {
		unlink(image);
		rmdir(dir);
		fprintf(stderr, "skip: losetup failed: %s\n", out);
		skip();
	}
	out[strcspn(out, "\n")] = '\0';
	assert_true(strncmp(out, "/dev/loop", 9) == 0 && strlen(out) < sizeof(loopdev));
	memcpy(loopdev, out, strlen(out) + 1);

	ret = avfs_sg_open(loopdev, AVFS_SG_RDONLY, &d);
	spawn_capture((char *const[]){ "losetup", "-d", loopdev, NULL }, out, sizeof(out));
	unlink(image);
	rmdir(dir);
	if (!ret)
		avfs_disk_close(d);
	assert_int_equal(ret, -ENOTTY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scsi_cdb_read16),
		cmocka_unit_test(test_scsi_cdb_write16_fua),
		cmocka_unit_test(test_scsi_cdb_seek10),
		cmocka_unit_test(test_scsi_cdb_sync_cache_and_tur),
		cmocka_unit_test(test_scsi_cdb_names_and_text),
		cmocka_unit_test(test_scsi_sense_table),
		cmocka_unit_test(test_scsi_sense_qemu_categories),
		cmocka_unit_test(test_scsi_category_errno),
		cmocka_unit_test(test_scsi_sense_unparseable),
		cmocka_unit_test(test_scsi_sg_open_not_scsi),
		cmocka_unit_test(test_scsi_sg_open_loop_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
