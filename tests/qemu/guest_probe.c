/*
 * guest_probe.c — runs inside the QEMU guest of tests/qemu/run.sh: QEMU's emulated SCSI disks
 * checked command by command through libsgutils2, its NVMe namespace through libnvme and io_uring
 * passthrough on the generic char device. It pins what the devices answer (the facts the SG and
 * NVMe backends rely on), not the backends themselves. Devices are found by serial, never by name.
 * Usage: guest_probe [SERIAL...] (default: vscsi0 lsi0 nvme0). Exit 0 iff every device was found
 * and every check passed; each check prints "ok SERIAL ..." or "FAIL SERIAL ...".
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <scsi/sg_cmds_basic.h>
#include <scsi/sg_lib.h>
#include <scsi/sg_pt.h>
#include <scsi/sg_unaligned.h>

/* libnvme.h brings nvme/ioctl.h (struct nvme_uring_cmd, NVME_URING_CMD_IO); <linux/nvme_ioctl.h>
 * defines the same structs and must not be included beside it */
#include <libnvme.h>
#include <liburing.h>

#define MAX_SERIALS 16
#define SCSI_TIMEOUT_S 20
#define XFER_BLOCKS 8		/* blocks per round trip */

#define SCSI_READ16 0x88
#define SCSI_WRITE16 0x8a
#define SCSI_SEEK10 0x2b	/* obsolete since SBC-3; QEMU's scsi-hd still accepts it */
#define SCSI_RW16_FUA 0x08	/* byte 1 of READ(16)/WRITE(16) */
#define SENSE_KEY_ILLEGAL_REQUEST 0x5
#define ASC_LBA_OUT_OF_RANGE 0x21

#define NVME_CMD_FLUSH 0x00
#define NVME_CMD_WRITE 0x01
#define NVME_CMD_READ 0x02
#define NVME_RW_FUA (1u << 30)	/* CDW12 */
#define NVME_STATUS_DNR 0x4000
#define NVME_STATUS_LBA_RANGE 0x0080

static int failures;

/* One check's verdict: "ok SERIAL text" or "FAIL SERIAL text". Returns ok. */
__attribute__((format(printf, 3, 4)))
static bool check(bool ok, const char *serial, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s ", ok ? "ok" : "FAIL", serial);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		failures++;
	return ok;
}

/* A prerequisite that is no finding of its own: says something only when it fails. */
static bool need(bool ok, const char *serial, const char *what)
{
	return ok || check(false, serial, "%s", what);
}

/* Cut trailing blanks (INQUIRY strings are space-padded). Returns s. */
static char *trim(char *s)
{
	size_t len = strlen(s);

	while (len && s[len - 1] == ' ')
		s[--len] = 0;
	return s;
}

/* A space-padded fixed-width field (NVMe identify strings) as a string in dst[len + 1]. */
static char *fixed_str(char *dst, const char *src, size_t len)
{
	memcpy(dst, src, len);
	dst[len] = 0;
	return trim(dst);
}

/* A small sysfs file into buf, trailing whitespace cut. 0 or -errno (buf then ""). */
static int read_sysfs(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t len;

	buf[0] = 0;
	if (!f)
		return -errno;
	len = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[len] = 0;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = 0;
	return 0;
}

/* ---- SCSI through libsgutils2 ---- */

struct pt_result {
	int ret;		/* sg_cmds_process_resp(): >= 0 good, -1 transport failure, -2 sense */
	int cat;		/* SG_LIB_CAT_* when ret == -2 */
	int key, asc, ascq;	/* decoded sense when ret == -2 */
	char text[256];		/* what went wrong, for the log */
};

/*
 * One CDB through libsgutils2's pass-through object (the path the SG backend takes for
 * READ/WRITE(16) and SEEK(10), which have no sg_ll_* helper). Prints the CDB and its outcome.
 */
static struct pt_result pt_cmd(int fd, const char *name, const uint8_t *cdb, int cdb_len,
			       uint8_t *din, int din_len, const uint8_t *dout, int dout_len)
{
	struct pt_result r = { .ret = -1 };
	uint8_t sense[64] = { 0 };
	struct sg_scsi_sense_hdr ssh;
	char hex[3 * 16 + 1] = "", k[64], a[128];
	struct sg_pt_base *pt;
	int res, i;

	for (i = 0; i < cdb_len; i++)
		snprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x%s", cdb[i], i + 1 < cdb_len ? " " : "");
	pt = construct_scsi_pt_obj_with_fd(fd, 0);
	if (!pt) {
		snprintf(r.text, sizeof(r.text), "out of memory");
		goto out;
	}
	set_scsi_pt_cdb(pt, cdb, cdb_len);
	set_scsi_pt_sense(pt, sense, sizeof(sense));
	if (din_len)
		set_scsi_pt_data_in(pt, din, din_len);
	if (dout_len)
		set_scsi_pt_data_out(pt, dout, dout_len);
	res = do_scsi_pt(pt, -1, SCSI_TIMEOUT_S, 0);
	r.ret = sg_cmds_process_resp(pt, name, res, false, 0, &r.cat);
	if (r.ret == -2) {
		if (sg_scsi_normalize_sense(sense, get_scsi_pt_sense_len(pt), &ssh)) {
			r.key = ssh.sense_key;
			r.asc = ssh.asc;
			r.ascq = ssh.ascq;
		}
		snprintf(r.text, sizeof(r.text), "%s, %s (%x/%02x/%02x)",
			 sg_get_sense_key_str(r.key, sizeof(k), k),
			 sg_get_asc_ascq_str(r.asc, r.ascq, sizeof(a), a), r.key, r.asc, r.ascq);
	} else if (r.ret == -1) {
		snprintf(r.text, sizeof(r.text), "pass-through failure (do_scsi_pt %d, os error %d)",
			 res, get_scsi_pt_os_err(pt));
	}
	destruct_scsi_pt_obj(pt);
out:
	printf("  CDB %-10s [%s] -> %s%s%s\n", name, hex, r.ret >= 0 ? "GOOD" : "ERROR",
	       r.ret < 0 ? ": " : "", r.text);
	return r;
}

static void cdb_rw16(uint8_t *cdb, uint8_t op, bool fua, uint64_t lba, uint32_t blocks)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	cdb[1] = fua ? SCSI_RW16_FUA : 0;
	sg_put_unaligned_be64(lba, cdb + 2);
	sg_put_unaligned_be32(blocks, cdb + 10);
}

static void cdb_seek10(uint8_t *cdb, uint32_t lba)
{
	memset(cdb, 0, 10);
	cdb[0] = SCSI_SEEK10;
	sg_put_unaligned_be32(lba, cdb + 2);
}

static bool is_lba_out_of_range(const struct pt_result *r)
{
	return r->ret == -2 && r->key == SENSE_KEY_ILLEGAL_REQUEST && r->asc == ASC_LBA_OUT_OF_RANGE;
}

/* The scsi_host driver of sg node NAME ("virtio_scsi", "sym53c8xx"), or "?" */
static void scsi_host_driver(const char *sgname, char *drv, size_t n)
{
	char path[512], p2[1024];
	struct dirent *e;
	DIR *d;

	snprintf(drv, n, "?");
	snprintf(path, sizeof(path), "/sys/class/scsi_generic/%s/device/../../scsi_host", sgname);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(p2, sizeof(p2), "%s/%s/proc_name", path, e->d_name);
			read_sysfs(p2, drv, n);
		}
	closedir(d);
}

static void probe_scsi(const char *sgname, const char *serial)
{
	const uint32_t nblk = XFER_BLOCKS;
	uint8_t vpd[512], rcap[32], ms[128], cdb[16];
	struct sg_simple_inquiry_resp inq;
	uint8_t *wb = NULL, *rb = NULL;
	uint64_t last_lba = 0, lba;
	uint32_t bs = 512, i;
	char path[300], drv[64], list[200] = "", err[128];
	struct pt_result r;
	int fd, resid, off, n;
	bool ok;

	snprintf(path, sizeof(path), "/dev/%s", sgname);
	scsi_host_driver(sgname, drv, sizeof(drv));
	printf("SCSI %s: %s behind %s\n", serial, path, drv);
	fd = sg_cmds_open_device(path, false, 0);
	if (!need(fd >= 0, serial, "open"))
		return;

	ok = sg_simple_inquiry(fd, &inq, true, 0) == 0;
	check(ok, serial, "INQUIRY: vendor '%s' product '%s' revision '%s' type %d",
	      ok ? trim(inq.vendor) : "", ok ? trim(inq.product) : "", ok ? trim(inq.revision) : "",
	      ok ? inq.peripheral_type : -1);
	ok = sg_ll_inquiry_v2(fd, true, 0x00, vpd, sizeof(vpd), SCSI_TIMEOUT_S, &resid, true,
			      0) == 0;
	for (n = ok ? sg_get_unaligned_be16(vpd + 2) : 0, off = 0; off < n && off < 60; off++)
		snprintf(list + 3 * off, sizeof(list) - 3 * off, " %02x", vpd[4 + off]);
	check(ok, serial, "INQUIRY VPD 00, supported pages:%s", list);
	ok = sg_ll_inquiry_v2(fd, true, 0xb0, vpd, sizeof(vpd), SCSI_TIMEOUT_S, &resid, true,
			      0) == 0;
	check(ok, serial, "INQUIRY VPD B0 block limits: max transfer %u, optimal transfer %u, "
	      "max unmap %u blocks", ok ? sg_get_unaligned_be32(vpd + 8) : 0,
	      ok ? sg_get_unaligned_be32(vpd + 12) : 0, ok ? sg_get_unaligned_be32(vpd + 20) : 0);
	ok = sg_ll_readcap_16(fd, false, 0, rcap, sizeof(rcap), true, 0) == 0;
	if (ok) {
		last_lba = sg_get_unaligned_be64(rcap);
		bs = sg_get_unaligned_be32(rcap + 8);
	}
	check(ok, serial, "READ CAPACITY(16): %llu blocks of %u bytes (%llu MiB)",
	      (unsigned long long)last_lba + 1, bs, (unsigned long long)((last_lba + 1) * bs >> 20));
	memset(ms, 0, sizeof(ms));
	ok = sg_ll_mode_sense10(fd, false, true, 0, 0x08, 0, ms, sizeof(ms), true, 0) == 0;
	off = ok ? sg_mode_page_offset(ms, sizeof(ms), false, err, sizeof(err)) : -1;
	ok = ok && off >= 0 && (ms[off] & 0x3f) == 0x08;
	check(ok, serial, "MODE SENSE(10) caching page: WCE=%d RCD=%d", ok && (ms[off + 2] & 0x04),
	      ok && (ms[off + 2] & 0x01));

	/* SEEK(10) is how the SG backend moves the head for the sub-seeks of seek splitting */
	cdb_seek10(cdb, (uint32_t)(last_lba / 2));
	r = pt_cmd(fd, "SEEK(10)", cdb, 10, NULL, 0, NULL, 0);
	check(r.ret >= 0, serial, "SEEK(10) to LBA %llu accepted%s%s",
	      (unsigned long long)last_lba / 2, r.ret < 0 ? ": " : "", r.text);
	cdb_seek10(cdb, (uint32_t)(last_lba + 10));
	r = pt_cmd(fd, "SEEK(10)", cdb, 10, NULL, 0, NULL, 0);
	check(is_lba_out_of_range(&r), serial, "SEEK(10) beyond the end: clean error: %s", r.text);

	wb = aligned_alloc(4096, nblk * bs);
	rb = aligned_alloc(4096, nblk * bs);
	if (!need(wb && rb, serial, "buffers"))
		goto out;
	for (i = 0; i < nblk * bs; i++)
		wb[i] = (uint8_t)(i * 7 + 13 + serial[0]);
	memset(rb, 0, nblk * bs);
	lba = last_lba / 3;
	cdb_rw16(cdb, SCSI_WRITE16, true, lba, nblk);
	r = pt_cmd(fd, "WRITE(16)", cdb, 16, NULL, 0, wb, nblk * bs);
	check(r.ret >= 0, serial, "WRITE(16) FUA at LBA %llu, %u blocks%s%s",
	      (unsigned long long)lba, nblk, r.ret < 0 ? ": " : "", r.text);
	cdb_rw16(cdb, SCSI_READ16, false, lba, nblk);
	r = pt_cmd(fd, "READ(16)", cdb, 16, rb, nblk * bs, NULL, 0);
	check(r.ret >= 0 && !memcmp(wb, rb, nblk * bs), serial,
	      "READ(16) at LBA %llu returns what WRITE(16) wrote%s%s", (unsigned long long)lba,
	      r.ret < 0 ? ": " : "", r.text);

	cdb_rw16(cdb, SCSI_READ16, false, last_lba, 2);	/* one block past the end */
	r = pt_cmd(fd, "READ(16)", cdb, 16, rb, 2 * bs, NULL, 0);
	check(is_lba_out_of_range(&r), serial, "READ(16) across the end: clean error: %s", r.text);

	check(sg_ll_sync_cache_10(fd, false, false, 0, 0, 0, true, 0) == 0, serial,
	      "SYNCHRONIZE CACHE(10)");
out:
	free(wb);
	free(rb);
	sg_cmds_close_device(fd);
}

/* ---- NVMe: libnvme identify, io_uring passthrough ---- */

/*
 * One NVMe I/O command on the generic char device through IORING_OP_URING_CMD.
 * Returns cqe->res: 0 success, > 0 the NVMe status (SCT/SC/DNR), < 0 -errno.
 */
static int nvme_uring_io(struct io_uring *ring, int fd, uint32_t nsid, uint8_t opcode,
			 uint64_t slba, uint32_t nlb, bool fua, void *buf, uint32_t len)
{
	struct nvme_uring_cmd cmd = { .opcode = opcode, .nsid = nsid };
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int err;

	if (!sqe)
		return -EBUSY;
	if (opcode != NVME_CMD_FLUSH) {
		cmd.addr = (uint64_t)(uintptr_t)buf;
		cmd.data_len = len;
		cmd.cdw10 = (uint32_t)slba;
		cmd.cdw11 = (uint32_t)(slba >> 32);
		cmd.cdw12 = (nlb - 1) | (fua ? NVME_RW_FUA : 0);
	}
	/* with IORING_SETUP_SQE128 the command (72 bytes) fills sqe->cmd and the 64 bytes after
	 * the SQE; liburing 2.3 declares cmd as a zero-length array, so copy through a plain
	 * pointer gcc does not bound */
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = NVME_URING_CMD_IO;
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, cmd), &cmd, sizeof(cmd));
	err = io_uring_submit(ring);
	if (err < 0)
		return err;
	err = io_uring_wait_cqe(ring, &cqe);
	if (err < 0)
		return err;
	err = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return err;
}

/* The generic char device (ngXnY) of controller CTRL, from /sys/class/nvme/CTRL/. 0 or -ENOENT. */
static int nvme_generic_node(const char *ctrl, char *ng, size_t n)
{
	char path[300];
	struct dirent *e;
	int err = -ENOENT;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/nvme/%s", ctrl);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "ng", 2)) {
			snprintf(ng, n, "%s", e->d_name);
			err = 0;
			break;
		}
	closedir(d);
	return err;
}

static void probe_nvme(const char *ctrl, const char *serial)
{
	const uint32_t nlb = XFER_BLOCKS;
	struct nvme_id_ctrl id;
	struct nvme_id_ns ns;
	struct io_uring ring;
	uint8_t *wb = NULL, *rb = NULL;
	uint64_t nsze, slba;
	uint32_t nsid = 0, lbs, i;
	char path[600], ng[256], buf[64], mn[41], sn[21], fr[9];
	int fd = -1, cfd, err, fmt;

	printf("NVMe %s: /dev/%s\n", serial, ctrl);
	if (!need(nvme_generic_node(ctrl, ng, sizeof(ng)) == 0, serial, "no generic char device"))
		return;
	snprintf(path, sizeof(path), "/dev/%s", ctrl);
	cfd = open(path, O_RDONLY | O_CLOEXEC);
	if (!need(cfd >= 0, serial, "open the controller"))
		return;
	err = nvme_identify_ctrl(cfd, &id);
	close(cfd);
	if (err)
		memset(&id, 0, sizeof(id));
	check(err == 0, serial, "libnvme identify controller: vid 0x%04x model '%s' serial '%s' "
	      "firmware '%s' VWC=%d MDTS=%u", le16toh(id.vid), fixed_str(mn, id.mn, sizeof(id.mn)),
	      fixed_str(sn, id.sn, sizeof(id.sn)), fixed_str(fr, id.fr, sizeof(id.fr)),
	      id.vwc & 1, id.mdts);

	snprintf(path, sizeof(path), "/dev/%s", ng);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (!need(fd >= 0, serial, "open the generic char device"))
		return;
	if (!need(nvme_get_nsid(fd, &nsid) == 0, serial, "namespace id"))
		goto out_fd;
	err = nvme_identify_ns(fd, nsid, &ns);
	if (err)
		memset(&ns, 0, sizeof(ns));
	fmt = (ns.flbas & 0x0f) | ((ns.flbas >> 5 & 3) << 4);	/* FLBAS bits 3:0 and 6:5 */
	lbs = 1u << ns.lbaf[fmt].ds;
	nsze = le64toh(ns.nsze);
	if (!check(err == 0, serial, "libnvme identify namespace %u on /dev/%s: %llu blocks of %u "
		   "bytes, %u metadata bytes (LBA format %d)", nsid, ng, (unsigned long long)nsze,
		   lbs, le16toh(ns.lbaf[fmt].ms), fmt))
		goto out_fd;
	snprintf(path, sizeof(path), "/sys/class/nvme/%s/%sn%u/queue/max_hw_sectors_kb", ctrl, ctrl,
		 nsid);
	read_sysfs(path, buf, sizeof(buf));
	printf("  kernel max_hw_sectors_kb %s\n", buf);

	err = io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32);
	if (!check(err == 0, serial, "io_uring with SQE128|CQE32%s%s", err ? ": " : "",
		   err ? strerror(-err) : ""))
		goto out_fd;
	wb = aligned_alloc(4096, nlb * lbs);
	rb = aligned_alloc(4096, nlb * lbs);
	if (!need(wb && rb, serial, "buffers"))
		goto out_ring;
	for (i = 0; i < nlb * lbs; i++)
		wb[i] = (uint8_t)(i * 31 + 5);
	memset(rb, 0, nlb * lbs);
	slba = nsze / 3;
	err = nvme_uring_io(&ring, fd, nsid, NVME_CMD_WRITE, slba, nlb, true, wb, nlb * lbs);
	check(err == 0, serial, "passthrough WRITE FUA at LBA %llu, %u blocks (res %d)",
	      (unsigned long long)slba, nlb, err);
	err = nvme_uring_io(&ring, fd, nsid, NVME_CMD_READ, slba, nlb, false, rb, nlb * lbs);
	check(err == 0 && !memcmp(wb, rb, nlb * lbs), serial,
	      "passthrough READ at LBA %llu returns what WRITE wrote (res %d)",
	      (unsigned long long)slba, err);
	err = nvme_uring_io(&ring, fd, nsid, NVME_CMD_FLUSH, 0, 0, false, NULL, 0);
	check(err == 0, serial, "passthrough FLUSH (res %d)", err);
	err = nvme_uring_io(&ring, fd, nsid, NVME_CMD_READ, nsze, 1, false, rb, lbs);
	check(err == (NVME_STATUS_DNR | NVME_STATUS_LBA_RANGE), serial,
	      "passthrough READ past the end: clean error: status 0x%x (%s)", (unsigned)err,
	      err == (NVME_STATUS_DNR | NVME_STATUS_LBA_RANGE) ? "LBA out of range, DNR" :
	      "expected 0x4080");
out_ring:
	free(wb);
	free(rb);
	io_uring_queue_exit(&ring);
out_fd:
	close(fd);
}

/* ---- discovery ---- */

/* The unit serial number (INQUIRY VPD 80) of sg node PATH into buf. 0 or -errno. */
static int scsi_serial(const char *path, char *buf, size_t n)
{
	uint8_t vpd[256];
	int fd, resid = 0, err = 0;

	fd = sg_cmds_open_device(path, true, 0);
	if (fd < 0)
		return fd;
	if (sg_ll_inquiry_v2(fd, true, 0x80, vpd, sizeof(vpd), SCSI_TIMEOUT_S, &resid, false, 0))
		err = -EIO;
	else
		snprintf(buf, n, "%.*s", (int)sg_get_unaligned_be16(vpd + 2), (char *)vpd + 4);
	sg_cmds_close_device(fd);
	return err;
}

static int wanted(const char *serial, const char **want, int nwant)
{
	int i;

	for (i = 0; i < nwant; i++)
		if (!strcmp(serial, want[i]))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	static const char *defaults[] = { "vscsi0", "lsi0", "nvme0" };
	const char **want = argc > 1 ? (const char **)argv + 1 : defaults;
	int nwant = argc > 1 ? argc - 1 : 3;
	bool found[MAX_SERIALS] = { false };
	char path[300], serial[128];
	struct dirent *e;
	DIR *d;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nwant > MAX_SERIALS) {
		fprintf(stderr, "guest_probe: at most %d serials\n", MAX_SERIALS);
		return 2;
	}
	d = opendir("/sys/class/scsi_generic");
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		if (scsi_serial(path, serial, sizeof(serial)) || (i = wanted(serial, want, nwant)) < 0)
			continue;
		found[i] = true;
		probe_scsi(e->d_name, serial);
	}
	if (d)
		closedir(d);
	d = opendir("/sys/class/nvme");
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/nvme/%s/serial", e->d_name);
		if (read_sysfs(path, serial, sizeof(serial)) || (i = wanted(serial, want, nwant)) < 0)
			continue;
		found[i] = true;
		probe_nvme(e->d_name, serial);
	}
	if (d)
		closedir(d);
	for (i = 0; i < nwant; i++)
		if (!found[i])
			check(false, want[i], "no device with this serial");
	printf("guest_probe: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
