/*
 * nvme_backend.c — the NVMe passthrough backend (disk/nvme.c) against a real NVMe controller,
 * for the QEMU guest suite (issue 8): libnvme identification through the block node and the
 * generic char node, WRITE FUA + READ round trip, FLUSH, a request larger than one command
 * (split by the backend), an out-of-range READ answered by the device, SEEK refused, the queue
 * bound and the ring's poll fd, a read-only open, close with requests in flight.
 * Standalone (no cmocka): exit 0 when every check passed, 1 with "FAIL ..." lines otherwise,
 * 77 when there is no NVMe namespace at all.
 *
 * Usage: nvme_backend [--scratch] [DEVICE|SERIAL...]
 *   DEVICE  /dev/ngXnY or /dev/nvmeXnY
 *   SERIAL  a controller's serial number (QEMU's -device nvme,serial=): its first namespace
 *   none    the first namespace of every controller under /sys/class/nvme
 * Writes go only to QEMU's controller (model "QEMU NVMe Ctrl") unless --scratch says the given
 * namespaces may be overwritten; others get the read-only checks.
 * With AVFS_NVME_TRACE=1 the backend prints every command it issues on stderr.
 */
#include "disk.h"
#include "guest.h"
#include "nvme.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One request, synchronously. raw: straight to the backend, so that the device itself judges
 * it (avfs_disk_submit refuses an out-of-range request before any command). The completion's
 * result, or the submit error. */
static int64_t io(struct avfs_disk *d, enum avfs_disk_op op, uint64_t lba, uint32_t len,
		  void *buf, uint32_t flags, bool raw)
{
	static uint64_t cookie = 1;
	struct avfs_disk_req r = {
		.op = op, .flags = flags, .lba = lba, .len = len, .buf = buf, .buf_index = -1,
		.cookie = cookie++,
	};

	return guest_io(d, &r, raw);
}

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i >> 9) * 37 + i * 13 + seed);
}

static const char *err_str(int64_t res)
{
	return res < 0 ? strerror((int)-res) : "no error";
}

/* ------------------------------------------------------------------ identification ---- */

static void show_ident(const char *node, const struct avfs_nvme_ident *id)
{
	INFO("  identify %s: vid 0x%04x model '%s' serial '%s' firmware '%s'", node, id->vid,
	     id->model, id->serial, id->firmware);
	INFO("  identify %s: nsid %" PRIu32 ", %" PRIu64 " blocks, LBA format %u: %" PRIu32
	     " B data + %u B metadata, VWC %s, MDTS %" PRIu32 " bytes%s", node, id->nsid,
	     id->nsze, id->lbaf, id->lba_data, id->lba_meta, id->vwc ? "present" : "absent",
	     id->mdts, id->mdts ? "" : " (no limit)");
}

/* Identify through both nodes; they must describe the same namespace. 0, or -1. */
static int check_identify(const char *ng, const char *blk, struct avfs_nvme_ident *id)
{
	struct avfs_nvme_ident viablk;
	int ret = avfs_nvme_identify(ng, id);

	if (ret) {
		FAIL("%s: avfs_nvme_identify: %s (%d)", ng, strerror(-ret), ret);
		return -1;
	}
	show_ident(ng, id);
	if (!id->model[0] || !id->serial[0] || !id->nsid || !id->nsze || !id->lba_data)
		FAIL("%s: identification incomplete", ng);
	ret = avfs_nvme_identify(blk, &viablk);
	if (ret)
		FAIL("%s: avfs_nvme_identify of the block node: %s (%d)", blk, strerror(-ret), ret);
	else if (memcmp(id, &viablk, sizeof(viablk)))
		FAIL("%s: the block node identifies another namespace than %s", blk, ng);
	else
		INFO("  identify %s (block node): the same controller and namespace", blk);
	return 0;
}

/* What open made of the identification: info, d->ident, avfs_nvme_info. */
static void check_disk_fields(const char *ng, struct avfs_disk *d, const struct avfs_nvme_ident *id)
{
	const struct avfs_disk_ident *di = &d->ident;
	struct avfs_nvme_ident again;
	char vendor[16];

	INFO("  info: size %" PRIu64 " lbs %" PRIu32 " pbs %" PRIu32 " mem_align %" PRIu32
	     " rotational %d has_seek %d is_blockdev %d model '%s'", d->info.size, d->info.lbs,
	     d->info.pbs, d->info.mem_align, d->info.rotational, d->info.has_seek,
	     d->info.is_blockdev, d->info.model);
	INFO("  ident: transport %s backend %s vendor %s product '%s' serial '%s' firmware '%s' "
	     "'%s' wce %s max_transfer %" PRIu32 " rotation_rate %" PRIu32, di->transport,
	     di->backend, di->vendor, di->product, di->serial, di->firmware, di->lba_format,
	     di->wce_known ? (di->wce ? "on" : "off") : "unknown", di->max_transfer,
	     di->rotation_rate);
	snprintf(vendor, sizeof(vendor), "0x%04x", id->vid);
	if (avfs_nvme_info(d, &again) || memcmp(&again, id, sizeof(again)))
		FAIL("%s: avfs_nvme_info differs from avfs_nvme_identify", ng);
	if (d->info.size != id->nsze * id->lba_data || d->info.lbs != id->lba_data ||
	    d->info.rotational || d->info.has_seek || !d->info.is_blockdev)
		FAIL("%s: info does not match the identification", ng);
	if (strcmp(di->transport, "nvme") || strcmp(di->backend, "nvme") ||
	    strcmp(di->vendor, vendor) || strcmp(di->product, id->model) ||
	    strcmp(di->serial, id->serial) || strcmp(di->firmware, id->firmware) ||
	    strncmp(di->lba_format, "LBAF ", 5) || !di->wce_known || di->wce != id->vwc ||
	    di->rotation_rate != 1 || !di->max_transfer || di->max_transfer % d->info.lbs ||
	    (id->mdts && di->max_transfer > id->mdts))
		FAIL("%s: d->ident does not match the identification", ng);
}

/* ------------------------------------------------------------------ I/O ---- */

static void check_out_of_range(const char *ng, struct avfs_disk *d, uint8_t *buf)
{
	const uint32_t lbs = d->info.lbs;
	const uint64_t blocks = d->info.size / lbs;
	int64_t res;

	if ((res = io(d, AVFS_DISK_SEEK, 0, 0, NULL, 0, false)) != -EOPNOTSUPP)
		FAIL("%s: SEEK: %" PRId64 ", expected -EOPNOTSUPP", ng, res);
	if ((res = io(d, AVFS_DISK_READ, blocks - 1, 2 * lbs, buf, 0, false)) != -EINVAL)
		FAIL("%s: avfs_disk_submit of a READ past the end: %" PRId64, ng, res);
	/* sent anyway: QEMU answers 0x4080 (DNR, LBA Out of Range), which the backend decodes
	 * and prints once (the "avfs nvme" line) */
	res = io(d, AVFS_DISK_READ, blocks - 1, 2 * lbs, buf, 0, true);
	if (res != -EINVAL)
		FAIL("%s: READ past the end sent to the device: %" PRId64 " (%s), expected -EINVAL",
		     ng, res, err_str(res));
	else
		INFO("  READ past the end (LBA %" PRIu64 ", 2 blocks) sent to the device: completed "
		     "with -EINVAL (%s)", blocks - 1, err_str(res));
	res = io(d, AVFS_DISK_READ, blocks, lbs, buf, 0, true);
	if (res != -EINVAL)
		FAIL("%s: READ of the block after the last: %" PRId64 ", expected -EINVAL", ng, res);
	if ((res = io(d, AVFS_DISK_READ, blocks - 1, lbs, buf, 0, false)) != lbs)
		FAIL("%s: READ of the last block: %" PRId64 " (%s)", ng, res, err_str(res));
}

/* the result of the queued read with this cookie: cookie 0 is the big one */
static int64_t expect_len(uint64_t cookie, void *len)
{
	const uint32_t *big_lbs = len;

	return big_lbs[cookie == 0 ? 0 : 1];
}

/* AVFS_NVME_QUEUE requests (one of them split into several commands) queued at once; the next
 * gets -EBUSY; every completion comes back through the poll fd. */
static void check_queue(const char *ng, struct avfs_disk *d)
{
	const uint32_t lbs = d->info.lbs, big = 2 * d->ident.max_transfer + lbs;
	/* the big read starts one block into a page: its pieces span a page more than their
	 * length (max_transfer must leave room for that) */
	uint8_t *buf = avfs_disk_alloc_buf(d, (size_t)lbs * (AVFS_NVME_QUEUE + 1) + big);
	struct avfs_disk_req r = { .op = AVFS_DISK_READ, .len = lbs, .buf_index = -1 };
	uint32_t lens[2] = { big, lbs };
	int ret;

	if (!buf || avfs_disk_poll_fd(d) < 0) {
		FAIL("%s: no buffer or no poll fd", ng);
		free(buf);
		return;
	}
	for (unsigned i = 0; i < AVFS_NVME_QUEUE; i++) {
		r.lba = i == 0 ? 1024 : i;
		r.len = i == 0 ? big : lbs;	/* the first one in several commands */
		r.buf = buf + (i == 0 ? lbs : big + (size_t)(i + 1) * lbs);
		r.cookie = i;
		if ((ret = avfs_disk_submit(d, &r)))
			FAIL("%s: submit %u of %u: %s", ng, i, AVFS_NVME_QUEUE, strerror(-ret));
	}
	r.len = lbs;
	r.buf = buf + big + lbs;
	if ((ret = avfs_disk_submit(d, &r)) != -EBUSY)
		FAIL("%s: submit past the queue bound: %d, expected -EBUSY", ng, ret);
	if (guest_drain(ng, d, AVFS_NVME_QUEUE, expect_len, lens))
		INFO("  queue: %u reads queued (one of %" PRIu32 " bytes, split), the next -EBUSY, "
		     "all completed through the poll fd", AVFS_NVME_QUEUE, big);
	free(buf);
}

static void check_writes(const char *ng, struct avfs_disk *d)
{
	const uint32_t lbs = d->info.lbs, xfer = d->ident.max_transfer;
	const uint64_t blocks = d->info.size / lbs;
	uint32_t big = 2 * xfer + lbs;	/* three commands: xfer, xfer, one block */
	uint8_t *w = avfs_disk_alloc_buf(d, big), *rd = avfs_disk_alloc_buf(d, big);
	uint64_t lba;
	int64_t res;

	if (!w || !rd || (uint64_t)big * 4 > d->info.size) {
		FAIL("%s: no buffers, or a namespace too small for the write checks", ng);
		goto out;
	}
	/* WRITE FUA + READ round trip */
	lba = blocks / 3;
	pattern(w, 8 * lbs, 1);
	memset(rd, 0, 8 * lbs);
	if ((res = io(d, AVFS_DISK_WRITE, lba, 8 * lbs, w, AVFS_DISK_FUA, false)) != 8 * lbs)
		FAIL("%s: WRITE FUA at LBA %" PRIu64 ": %" PRId64 " (%s)", ng, lba, res, err_str(res));
	else if ((res = io(d, AVFS_DISK_READ, lba, 8 * lbs, rd, 0, false)) != 8 * lbs)
		FAIL("%s: READ at LBA %" PRIu64 ": %" PRId64 " (%s)", ng, lba, res, err_str(res));
	else if (memcmp(w, rd, 8 * lbs))
		FAIL("%s: READ after WRITE FUA: data differs", ng);
	else
		INFO("  WRITE FUA + READ at LBA %" PRIu64 ", 8 blocks: data matches", lba);

	/* a plain WRITE (no FUA), then FLUSH */
	pattern(w, lbs, 2);
	if ((res = io(d, AVFS_DISK_WRITE, lba + 8, lbs, w, 0, false)) != lbs)
		FAIL("%s: WRITE without FUA: %" PRId64 " (%s)", ng, res, err_str(res));
	if ((res = io(d, AVFS_DISK_FLUSH, 0, 0, NULL, 0, false)) != 0)
		FAIL("%s: FLUSH: %" PRId64 " (%s)", ng, res, err_str(res));
	else
		INFO("  WRITE without FUA, then FLUSH: ok");

	/* larger than one command: the kernel refuses a passthrough command above its limit,
	 * so success means the backend split it */
	lba = blocks / 2;
	pattern(w, big, 3);
	memset(rd, 0, big);
	res = io(d, AVFS_DISK_WRITE, lba, big, w, AVFS_DISK_FUA, false);
	if (res != big) {
		FAIL("%s: WRITE FUA of %" PRIu32 " bytes (max transfer %" PRIu32 "): %" PRId64 " (%s)",
		     ng, big, xfer, res, err_str(res));
	} else {
		res = io(d, AVFS_DISK_READ, lba, big, rd, 0, false);
		if (res != big || memcmp(w, rd, big))
			FAIL("%s: READ of %" PRIu32 " bytes: %" PRId64 "%s", ng, big, res,
			     res == big ? ", data differs" : "");
		else
			INFO("  split: %" PRIu32 " bytes (> max transfer %" PRIu32 ") written with FUA "
			     "and read back, one request each: data matches", big, xfer);
	}
out:
	free(w);
	free(rd);
}

/* Read-only opens, through the generic node and through the block node (the backend then
 * drives the generic node): writes refused at submit, reads served; and close with requests
 * still in flight waits for them (no hang, no crash; the buffer is freed only after close). */
static void check_rdonly(const char *path)
{
	struct avfs_disk *d;
	uint8_t *buf;
	int64_t res;
	int ret = avfs_nvme_open(path, AVFS_NVME_RDONLY, &d);

	if (ret) {
		FAIL("%s: read-only open: %s", path, strerror(-ret));
		return;
	}
	buf = avfs_disk_alloc_buf(d, 4 * (size_t)d->info.lbs);
	if ((res = io(d, AVFS_DISK_WRITE, 0, d->info.lbs, buf, 0, false)) != -EBADF)
		FAIL("%s: WRITE on a read-only open: %" PRId64 ", expected -EBADF", path, res);
	else if ((res = io(d, AVFS_DISK_READ, 0, d->info.lbs, buf, 0, false)) != d->info.lbs)
		FAIL("%s: READ on a read-only open: %" PRId64 " (%s)", path, res, err_str(res));
	else
		INFO("  read-only open of %s: WRITE refused with -EBADF, READ ok", path);
	for (unsigned i = 0; buf && i < 4; i++) {
		struct avfs_disk_req r = {
			.op = AVFS_DISK_READ, .lba = i, .len = d->info.lbs,
			.buf = buf + i * d->info.lbs, .buf_index = -1, .cookie = i,
		};

		if (avfs_disk_submit(d, &r))
			FAIL("%s: submit before close", path);
	}
	avfs_disk_close(d);
	free(buf);
	INFO("  close of %s with 4 reads in flight: waited for them", path);
}

static void check_namespace(const char *ng, const char *blk, bool scratch)
{
	struct avfs_nvme_ident id;
	struct avfs_disk *d;
	uint8_t *buf;
	int fail0 = failures, ret;

	INFO("NVMe namespace %s (block node %s)", ng, blk);
	if (check_identify(ng, blk, &id))
		return;
	ret = avfs_nvme_open(ng, 0, &d);
	if (ret) {
		FAIL("%s: avfs_nvme_open: %s (%d)", ng, strerror(-ret), ret);
		return;
	}
	check_disk_fields(ng, d, &id);
	scratch = scratch || !strcmp(id.model, "QEMU NVMe Ctrl");
	buf = avfs_disk_alloc_buf(d, 2 * (size_t)d->info.lbs);
	if (buf)
		check_out_of_range(ng, d, buf);
	check_queue(ng, d);
	{
		struct iovec iov = { .iov_base = buf, .iov_len = 2 * (size_t)d->info.lbs };
		struct avfs_disk_req r = {
			.op = AVFS_DISK_READ, .lba = 1, .len = d->info.lbs, .buf = buf, .buf_index = 0,
		};

		if ((ret = avfs_disk_register_buffers(d, &iov, 1)))
			FAIL("%s: register_buffers: %d", ng, ret);
		else if (avfs_disk_io_sync(d, &r) != d->info.lbs)
			FAIL("%s: READ into a registered buffer", ng);
		else
			INFO("  registered buffer: READ into it ok");
	}
	if (scratch)
		check_writes(ng, d);
	else
		INFO("  not QEMU's controller and no --scratch: write checks skipped");
	free(buf);
	avfs_disk_close(d);

	check_rdonly(ng);
	check_rdonly(blk);	/* the block node: the backend drives its generic node */
	INFO("NVMe namespace %s (%s): %s", ng, id.serial, failures == fail0 ? "OK" : "FAILED");
}

/* ------------------------------------------------------------------ discovery ---- */

/* The first namespace of controller ctrl ("nvme0"): /dev/ngXnY into ng and /dev/nvmeXnY
 * into blk. 0 or -ENOENT. */
static int ctrl_namespace(const char *ctrl, char *ng, char *blk, size_t n)
{
	char dir[300];
	struct dirent *e;
	unsigned a, b, best_b = UINT32_MAX, best_a = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/sys/class/nvme/%s", ctrl);
	d = opendir(dir);
	while (d && (e = readdir(d)))
		if (sscanf(e->d_name, "ng%un%u", &a, &b) == 2 && b < best_b) {
			best_a = a;
			best_b = b;
		}
	if (d)
		closedir(d);
	if (best_b == UINT32_MAX)
		return -ENOENT;
	snprintf(ng, n, "/dev/ng%un%u", best_a, best_b);
	snprintf(blk, n, "/dev/nvme%un%u", best_a, best_b);
	return 0;
}

/* Run the checks on the first namespace of each controller whose serial is serial (or of
 * every controller: serial NULL). The number of namespaces checked. */
static int check_controllers(const char *serial, bool scratch)
{
	DIR *dir = opendir("/sys/class/nvme");
	struct dirent *e;
	int n = 0;

	while (dir && (e = readdir(dir))) {
		char path[300], sn[64] = "", ng[64], blk[64];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/nvme/%s/serial", e->d_name);
		f = fopen(path, "r");
		if (!f || !fgets(sn, sizeof(sn), f))
			sn[0] = '\0';
		if (f)
			fclose(f);
		sn[strcspn(sn, " \n")] = '\0';
		if ((serial && strcmp(sn, serial)) || ctrl_namespace(e->d_name, ng, blk, sizeof(ng)))
			continue;
		INFO("controller %s, serial '%s'", e->d_name, sn);
		check_namespace(ng, blk, scratch);
		n++;
	}
	if (dir)
		closedir(dir);
	return n;
}

int main(int argc, char **argv)
{
	bool scratch = false;
	int ndev = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scratch")) {
			scratch = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s [--scratch] [DEVICE|SERIAL...]\n", argv[0]);
			return 0;
		}
	}
	for (int i = 1; i < argc; i++) {
		char ng[64], blk[64];
		unsigned a, b;

		if (argv[i][0] == '-')
			continue;
		ndev++;
		if (argv[i][0] != '/') {
			if (!check_controllers(argv[i], scratch))
				FAIL("no NVMe controller with serial '%s'", argv[i]);
		} else if (sscanf(argv[i], "/dev/nvme%un%u", &a, &b) == 2 ||
			   sscanf(argv[i], "/dev/ng%un%u", &a, &b) == 2) {
			snprintf(ng, sizeof(ng), "/dev/ng%un%u", a, b);
			snprintf(blk, sizeof(blk), "/dev/nvme%un%u", a, b);
			check_namespace(ng, blk, scratch);
		} else {
			FAIL("%s: not an NVMe namespace node (/dev/ngXnY or /dev/nvmeXnY)", argv[i]);
		}
	}
	if (!ndev) {
		ndev = check_controllers(NULL, scratch);
		if (!ndev) {
			printf("SKIP no NVMe namespace found under /sys/class/nvme\n");
			return 77;
		}
	}
	printf("nvme_backend: %d namespace(s) named or found, %d failure(s)\n", ndev, failures);
	return failures ? 1 : 0;
}
