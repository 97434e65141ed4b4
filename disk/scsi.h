/*
 * scsi.h — SCSI commands as bytes: the CDBs the SG_IO backend issues, and the decoding of
 * what a device answers (sense data, status, libsgutils2's categories) into -errno and text.
 * Pure: no descriptor, no I/O, no clock; the sg backend (disk/sg.c) issues the commands.
 */
#ifndef AVFS_SCSI_H
#define AVFS_SCSI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Operation codes of the commands AVFS issues itself (identification goes through
 * libsgutils2's sg_ll_* helpers). */
enum avfs_scsi_opcode {
	AVFS_SCSI_TEST_UNIT_READY = 0x00,
	AVFS_SCSI_SEEK10 = 0x2b,	/* obsolete since SBC-2, still accepted by many disks and QEMU */
	AVFS_SCSI_SYNC_CACHE10 = 0x35,
	AVFS_SCSI_READ16 = 0x88,
	AVFS_SCSI_WRITE16 = 0x8a,
};

#define AVFS_SCSI_CDB_MAX 16		/* the longest CDB built here */
#define AVFS_SCSI_SENSE_MAX 64		/* sense buffer size the backend hands the kernel */
#define AVFS_SCSI_RW16_FUA 0x08		/* READ(16)/WRITE(16) byte 1 bit 3: force unit access */

/* READ(16) or WRITE(16) of blocks logical blocks at lba into cdb[16], FUA if fua (SBC-4
 * 5.16/5.46: FUA on a write completes only once the data is on the medium). DPO, group and
 * protection fields are zero. Returns 16 (the CDB length). blocks == 0 is a legal CDB that
 * transfers nothing; the backend never issues it. */
int avfs_scsi_cdb_rw16(uint8_t *cdb, bool write, uint64_t lba, uint32_t blocks, bool fua);

/* SEEK(10) to lba into cdb[10]. Returns 10, or -EOVERFLOW when lba does not fit the 32-bit
 * field (beyond 2 TiB with 512-byte blocks: such a disk cannot be pre-positioned there). */
int avfs_scsi_cdb_seek10(uint8_t *cdb, uint64_t lba);

/* SYNCHRONIZE CACHE(10) of blocks blocks from lba into cdb[10] (0, 0 = the whole medium),
 * IMMED clear: GOOD only once the cache is on the medium. Returns 10. */
int avfs_scsi_cdb_sync_cache10(uint8_t *cdb, uint32_t lba, uint16_t blocks);

/* TEST UNIT READY into cdb[6]. Returns 6. */
int avfs_scsi_cdb_test_unit_ready(uint8_t *cdb);

/* Length of the CDB that starts with opcode, from its group code (SPC-4 4.2.5.1):
 * 6, 10, 12 or 16; 0 for a group this module does not know (variable length, vendor). */
int avfs_scsi_cdb_len(uint8_t opcode);

/* A name for the commands above ("WRITE(16)", "SEEK(10)"...), "OPCODE 0xNN" otherwise.
 * Returns buf. */
const char *avfs_scsi_cdb_name(const uint8_t *cdb, char *buf, size_t n);

/* "WRITE(16) 8a 08 00 ..." into buf (n >= 64 holds any CDB of this module). Returns buf. */
char *avfs_scsi_cdb_str(const uint8_t *cdb, int len, char *buf, size_t n);

/*
 * A command's outcome as AVFS sees it. The mapping (one table, in avfs_scsi_sense_errno):
 *
 *   sense key / status                       -errno        retry  notes
 *   GOOD, CONDITION MET                      0
 *   0 NO SENSE, 1 RECOVERED ERROR, F COMPLETED 0                  data is good; short transfers
 *                                                                  are caught by the residual
 *   2 NOT READY  04/01 becoming ready,
 *                04/07 operation in progress -EAGAIN
 *                3A/xx medium not present    -ENOMEDIUM
 *                anything else               -EBUSY
 *   3 MEDIUM ERROR                           -EIO                 info = failing LBA when valid
 *   4 HARDWARE ERROR                         -EIO
 *   5 ILLEGAL REQUEST  20/00 invalid opcode  -EOPNOTSUPP          (how an absent SEEK answers)
 *                anything else (21/00 LBA    -EINVAL              issue 8: "illegal request →
 *                out of range, 24/00 invalid                      −EINVAL"; avfs_disk_check gives
 *                field in CDB, 25/00 ...)                         -EINVAL for out of range too
 *   6 UNIT ATTENTION                         -EAGAIN       yes    reset, mode change: reissue once
 *   7 DATA PROTECT                           -EROFS
 *   8 BLANK CHECK, 9 vendor, A COPY ABORTED  -EIO
 *   B ABORTED COMMAND  10/xx protection info -EILSEQ
 *                anything else               -EIO          yes    transient (parity, overlap)
 *   D VOLUME OVERFLOW                        -ENOSPC
 *   E MISCOMPARE                             -EILSEQ
 *   status BUSY, TASK SET FULL, ACA ACTIVE   -EBUSY
 *   status RESERVATION CONFLICT              -EBADE               as the kernel's BLK_STS_NEXUS
 *   status TASK ABORTED                      -EIO
 *   command timeout                          -ETIMEDOUT
 *   transport error, malformed response      -EIO / -EPROTO
 *   OS error from the pass-through           that -errno
 */
struct avfs_scsi_sense {
	int err;		/* 0 or -errno, by the table above */
	bool retry;		/* worth reissuing the command once, at once */
	bool have_sense;	/* key/asc/ascq below come from parsed sense data */
	uint8_t key, asc, ascq;
	bool info_valid;	/* INFORMATION field present with its VALID bit set */
	uint64_t info;		/* for medium errors: the first LBA that failed */
	char text[160];		/* "Medium Error: Unrecovered read error, LBA 4660" */
};

/* The errno of a sense key with its additional sense code and qualifier (table above);
 * *retry (if not NULL) says whether one immediate reissue may succeed. */
int avfs_scsi_sense_errno(uint8_t key, uint8_t asc, uint8_t ascq, bool *retry);

/* The errno of a libsgutils2 result category (SG_LIB_CAT_*, as sg_cmds_process_resp and the
 * sg_ll_* helpers return them; SG_LIB_OS_BASE_ERR + e is the OS error e; a negative value is
 * a -errno and -1 is -EIO), for when no sense data is at hand. */
int avfs_scsi_cat_errno(int cat, bool *retry);

/*
 * Decode a finished command. sense/sense_len: the sense buffer the device returned (NULL or
 * 0 if none); parsed through libsgutils2 (fixed 0x70/0x71 and descriptor 0x72/0x73 formats),
 * it takes precedence. Otherwise cat (a libsgutils2 category, 0 = clean) decides.
 * Fills *out (text included) and returns out->err.
 */
int avfs_scsi_decode(int cat, const uint8_t *sense, int sense_len, struct avfs_scsi_sense *out);

#endif
