/*
 * scsi.c — CDB construction and the decoding of SCSI outcomes into -errno and text.
 * Sense parsing and the standard texts come from libsgutils2 (sg_lib: pure functions);
 * nothing here opens, issues or waits: disk/sg.c does.
 */
#include "scsi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <scsi/sg_lib.h>
#include <scsi/sg_unaligned.h>

/* sense keys (SPC-4 table 52) */
enum {
	SK_NO_SENSE = 0x0,
	SK_RECOVERED = 0x1,
	SK_NOT_READY = 0x2,
	SK_MEDIUM = 0x3,
	SK_HARDWARE = 0x4,
	SK_ILLEGAL = 0x5,
	SK_UNIT_ATTENTION = 0x6,
	SK_DATA_PROTECT = 0x7,
	SK_ABORTED = 0xb,
	SK_VOLUME_OVERFLOW = 0xd,
	SK_MISCOMPARE = 0xe,
	SK_COMPLETED = 0xf,
};

int avfs_scsi_cdb_rw16(uint8_t *cdb, bool write, uint64_t lba, uint32_t blocks, bool fua)
{
	memset(cdb, 0, 16);
	cdb[0] = write ? AVFS_SCSI_WRITE16 : AVFS_SCSI_READ16;
	cdb[1] = fua ? AVFS_SCSI_RW16_FUA : 0;
	sg_put_unaligned_be64(lba, cdb + 2);
	sg_put_unaligned_be32(blocks, cdb + 10);
	return 16;
}

int avfs_scsi_cdb_seek10(uint8_t *cdb, uint64_t lba)
{
	if (lba > UINT32_MAX)
		return -EOVERFLOW;
	memset(cdb, 0, 10);
	cdb[0] = AVFS_SCSI_SEEK10;
	sg_put_unaligned_be32((uint32_t)lba, cdb + 2);
	return 10;
}

int avfs_scsi_cdb_sync_cache10(uint8_t *cdb, uint32_t lba, uint16_t blocks)
{
	memset(cdb, 0, 10);
	cdb[0] = AVFS_SCSI_SYNC_CACHE10;
	sg_put_unaligned_be32(lba, cdb + 2);
	sg_put_unaligned_be16(blocks, cdb + 7);
	return 10;
}

int avfs_scsi_cdb_test_unit_ready(uint8_t *cdb)
{
	memset(cdb, 0, 6);
	cdb[0] = AVFS_SCSI_TEST_UNIT_READY;
	return 6;
}

int avfs_scsi_cdb_len(uint8_t opcode)
{
	switch (opcode >> 5) {
	case 0:
		return 6;
	case 1:
	case 2:
		return 10;
	case 4:
		return 16;
	case 5:
		return 12;
	default:
		return 0;	/* 3: variable length / reserved; 6, 7: vendor specific */
	}
}

const char *avfs_scsi_cdb_name(const uint8_t *cdb, char *buf, size_t n)
{
	const char *name = NULL;

	switch (cdb[0]) {
	case AVFS_SCSI_TEST_UNIT_READY:
		name = "TEST UNIT READY";
		break;
	case AVFS_SCSI_SEEK10:
		name = "SEEK(10)";
		break;
	case AVFS_SCSI_SYNC_CACHE10:
		name = "SYNCHRONIZE CACHE(10)";
		break;
	case AVFS_SCSI_READ16:
		name = "READ(16)";
		break;
	case AVFS_SCSI_WRITE16:
		name = "WRITE(16)";
		break;
	}
	if (name)
		snprintf(buf, n, "%s", name);
	else
		snprintf(buf, n, "OPCODE 0x%02x", cdb[0]);
	return buf;
}

char *avfs_scsi_cdb_str(const uint8_t *cdb, int len, char *buf, size_t n)
{
	size_t at;

	if (!n)
		return buf;
	avfs_scsi_cdb_name(cdb, buf, n);
	at = strlen(buf);
	for (int i = 0; i < len && at + 3 < n; i++)
		at += (size_t)snprintf(buf + at, n - at, " %02x", cdb[i]);
	return buf;
}

int avfs_scsi_sense_errno(uint8_t key, uint8_t asc, uint8_t ascq, bool *retry)
{
	bool again = false;
	int err;

	switch (key) {
	case SK_NO_SENSE:
	case SK_RECOVERED:
	case SK_COMPLETED:
		err = 0;
		break;
	case SK_NOT_READY:
		if (asc == 0x04 && (ascq == 0x01 || ascq == 0x07))
			err = -EAGAIN;	/* becoming ready / operation in progress: it will pass */
		else if (asc == 0x3a)
			err = -ENOMEDIUM;
		else
			err = -EBUSY;	/* stopped, needs START STOP UNIT, formatting... */
		break;
	case SK_MEDIUM:
	case SK_HARDWARE:
		err = -EIO;
		break;
	case SK_ILLEGAL:
		/* the device does not know the command at all: an optional feature is absent */
		err = asc == 0x20 && ascq == 0x00 ? -EOPNOTSUPP : -EINVAL;
		break;
	case SK_UNIT_ATTENTION:
		/* reported once per event (reset, mode parameters changed, ...); the command
		 * itself was not executed, so reissuing it is safe */
		err = -EAGAIN;
		again = true;
		break;
	case SK_DATA_PROTECT:
		err = -EROFS;
		break;
	case SK_ABORTED:
		if (asc == 0x10) {
			err = -EILSEQ;	/* protection information check failed: not transient */
		} else {
			err = -EIO;
			again = true;	/* parity, overlapped command, target reset: transient */
		}
		break;
	case SK_VOLUME_OVERFLOW:
		err = -ENOSPC;
		break;
	case SK_MISCOMPARE:
		err = -EILSEQ;
		break;
	default:
		err = -EIO;	/* blank check, vendor specific, copy aborted, reserved */
		break;
	}
	if (retry)
		*retry = again;
	return err;
}

int avfs_scsi_cat_errno(int cat, bool *retry)
{
	bool again = false;
	int err;

	if (cat < 0) {
		err = cat == -1 ? -EIO : cat;
		goto out;
	}
	if (cat > SG_LIB_OS_BASE_ERR && cat < SG_LIB_CAT_MALFORMED) {
		err = -(cat - SG_LIB_OS_BASE_ERR);	/* sg_convert_errno() */
		goto out;
	}
	switch (cat) {
	case SG_LIB_CAT_CLEAN:
	case SG_LIB_CAT_NO_SENSE:
	case SG_LIB_CAT_RECOVERED:
	case SG_LIB_CAT_CONDITION_MET:
		err = 0;
		break;
	case SG_LIB_CAT_NOT_READY:
		err = -EBUSY;
		break;
	case SG_LIB_CAT_MEDIUM_HARD:
	case SG_LIB_CAT_MEDIUM_HARD_WITH_INFO:
	case SG_LIB_CAT_COPY_ABORTED:
	case SG_LIB_CAT_TASK_ABORTED:
		err = -EIO;
		break;
	case SG_LIB_CAT_ILLEGAL_REQ:
	case SG_LIB_CAT_ILLEGAL_REQ_WITH_INFO:
	case SG_LIB_LBA_OUT_OF_RANGE:
		err = -EINVAL;
		break;
	case SG_LIB_CAT_INVALID_OP:
		err = -EOPNOTSUPP;
		break;
	case SG_LIB_CAT_UNIT_ATTENTION:
		err = -EAGAIN;
		again = true;
		break;
	case SG_LIB_CAT_DATA_PROTECT:
		err = -EROFS;
		break;
	case SG_LIB_CAT_ABORTED_COMMAND:
		err = -EIO;
		again = true;
		break;
	case SG_LIB_CAT_PROTECTION:
	case SG_LIB_CAT_PROTECTION_WITH_INFO:
	case SG_LIB_CAT_MISCOMPARE:
		err = -EILSEQ;
		break;
	case SG_LIB_CAT_RES_CONFLICT:
		err = -EBADE;
		break;
	case SG_LIB_CAT_BUSY:
	case SG_LIB_CAT_TS_FULL:
	case SG_LIB_CAT_ACA_ACTIVE:
		err = -EBUSY;
		break;
	case SG_LIB_CAT_TIMEOUT:
		err = -ETIMEDOUT;
		break;
	case SG_LIB_CAT_MALFORMED:
		err = -EPROTO;
		break;
	default:
		err = -EIO;	/* SG_LIB_CAT_SENSE, SG_LIB_CAT_OTHER, anything newer */
		break;
	}
out:
	if (retry)
		*retry = again;
	return err;
}

/* A category's words, for the text when there is no sense data to quote. */
static const char *cat_str(int cat)
{
	switch (cat) {
	case SG_LIB_CAT_CLEAN:
		return "GOOD";
	case SG_LIB_CAT_NOT_READY:
		return "Not Ready";
	case SG_LIB_CAT_MEDIUM_HARD:
	case SG_LIB_CAT_MEDIUM_HARD_WITH_INFO:
		return "Medium or Hardware Error";
	case SG_LIB_CAT_ILLEGAL_REQ:
	case SG_LIB_CAT_ILLEGAL_REQ_WITH_INFO:
		return "Illegal Request";
	case SG_LIB_LBA_OUT_OF_RANGE:
		return "Illegal Request: Logical block address out of range";
	case SG_LIB_CAT_INVALID_OP:
		return "Illegal Request: Invalid command operation code";
	case SG_LIB_CAT_UNIT_ATTENTION:
		return "Unit Attention";
	case SG_LIB_CAT_DATA_PROTECT:
		return "Data Protect";
	case SG_LIB_CAT_ABORTED_COMMAND:
		return "Aborted Command";
	case SG_LIB_CAT_RES_CONFLICT:
		return "status: Reservation Conflict";
	case SG_LIB_CAT_BUSY:
		return "status: Busy";
	case SG_LIB_CAT_TS_FULL:
		return "status: Task Set Full";
	case SG_LIB_CAT_ACA_ACTIVE:
		return "status: ACA Active";
	case SG_LIB_CAT_TASK_ABORTED:
		return "status: Task Aborted";
	case SG_LIB_CAT_TIMEOUT:
		return "command timed out";
	case SG_LIB_CAT_MALFORMED:
		return "malformed response";
	case SG_LIB_CAT_SENSE:
		return "unrecognised sense data";
	default:
		return NULL;
	}
}

/* Whether sense holds at least its sense key: libsgutils2 accepts a buffer cut short after
 * the response code and reports key 0, which would turn a CHECK CONDITION into "no sense". */
static bool sense_has_key(const uint8_t *sense, int len)
{
	switch (sense[0] & 0x7f) {
	case 0x70:
	case 0x71:
		return len >= 3;	/* fixed: key in byte 2 */
	case 0x72:
	case 0x73:
		return len >= 2;	/* descriptor: key in byte 1 */
	default:
		return false;
	}
}

int avfs_scsi_decode(int cat, const uint8_t *sense, int sense_len, struct avfs_scsi_sense *out)
{
	struct sg_scsi_sense_hdr ssh;
	char key[48], asc[128];
	const char *a, *c;
	size_t at;

	memset(out, 0, sizeof(*out));
	if (!sense || sense_len <= 0 || !sense_has_key(sense, sense_len) ||
	    !sg_scsi_normalize_sense(sense, sense_len, &ssh)) {
		out->err = avfs_scsi_cat_errno(cat, &out->retry);
		if ((c = cat_str(cat)))
			snprintf(out->text, sizeof(out->text), "%s", c);
		else if (out->err)
			snprintf(out->text, sizeof(out->text), "%s (category %d)",
				 strerror(-out->err), cat);
		else
			snprintf(out->text, sizeof(out->text), "GOOD");
		return out->err;
	}
	out->have_sense = true;
	out->key = ssh.sense_key & 0xf;
	out->asc = ssh.asc;
	out->ascq = ssh.ascq;
	out->err = avfs_scsi_sense_errno(out->key, out->asc, out->ascq, &out->retry);
	/* fixed format: bytes 3..6 with the VALID bit; descriptor format: descriptor 0 */
	out->info_valid = sg_get_sense_info_fld(sense, sense_len, &out->info);

	sg_get_sense_key_str(out->key, sizeof(key), key);
	a = sg_get_asc_ascq_str(out->asc, out->ascq, sizeof(asc), asc);
	if (!strncmp(a, "Additional sense: ", 18))
		a += 18;	/* libsgutils2's prefix says nothing a reader needs */
	at = (size_t)snprintf(out->text, sizeof(out->text), "%s: %s", key, a);
	if (out->info_valid && out->key == SK_MEDIUM && at < sizeof(out->text))
		snprintf(out->text + at, sizeof(out->text) - at, ", LBA %llu",
			 (unsigned long long)out->info);
	return out->err;
}
