/*
 * sg_backend.c — the SG_IO backend (disk/sg.c) against real SCSI disks, for the QEMU guest suite
 * (issue 8): identification through each node (sg, sd, bsg), WRITE FUA + READ round trip,
 * FLUSH, SEEK, an out-of-range read decoded from the device's sense data, a 1 MiB write in four
 * chunks with FUA on the last only (checked from the backend's own AVFS_SG_TRACE lines), a request
 * larger than one command, the queue bound and the completion eventfd.
 * Standalone (no cmocka): exit 0 when every check passed, 1 with "FAIL ..." lines otherwise,
 * 77 when there is no SCSI disk at all.
 *
 * Usage: sg_backend [--scratch] [DEVICE|SERIAL...]
 *   DEVICE  /dev/sgN, /dev/sdX or /dev/bsg/H:C:T:L
 *   SERIAL  a unit serial number (VPD 0x80, QEMU's scsi-hd serial=): found among the sg nodes
 *   none    every SCSI disk under /sys/class/scsi_generic
 * Writes go only to QEMU's emulated disks (INQUIRY "QEMU" / "QEMU HARDDISK") unless --scratch
 * says the given disks may be overwritten; other disks get the read-only checks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memfd_create: meson defines it, a hand build may not */
#endif
#include "disk.h"
#include "guest.h"
#include "sg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK (256u * 1024)	/* the caller's chunk of the 1 MiB write */
#define NCHUNK 4

static struct avfs_disk_req mkreq(enum avfs_disk_op op, uint64_t lba, uint32_t len, void *buf,
				  uint32_t flags)
{
	static uint64_t cookie = 1000;
	struct avfs_disk_req r = {
		.op = op, .flags = flags, .lba = lba, .len = len, .buf = buf, .buf_index = -1,
		.cookie = cookie++,
	};

	return r;
}

static void fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 9));
}

/* ------------------------------------------------------------------ trace capture ---- */

/* The backend traces on stderr from its I/O thread: point fd 2 at a memfd while a step runs,
 * then read the lines back (and pass them on to the real stderr). */
struct capture {
	int saved;
	int mfd;
};

static int capture_start(struct capture *c)
{
	fflush(stderr);
	c->mfd = memfd_create("sg-trace", MFD_CLOEXEC);
	c->saved = dup(2);
	if (c->mfd < 0 || c->saved < 0 || dup2(c->mfd, 2) < 0)
		return -1;
	return 0;
}

/* Stop capturing; the captured text, NUL-terminated (free it), or NULL. */
static char *capture_stop(struct capture *c)
{
	off_t len;
	char *text;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	len = lseek(c->mfd, 0, SEEK_END);
	text = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (text && pread(c->mfd, text, (size_t)len, 0) == len) {
		text[len] = '\0';
		fputs(text, stderr);
	} else {
		free(text);
		text = NULL;
	}
	close(c->mfd);
	return text;
}

/* From trace lines "sg: WRITE(16) 8a FF L0 .. L7 N0 .. N3 00 00 -> GOOD", check that the
 * commands of the last chunk [fua_lba, end_lba) carry FUA and those before it do not. */
static void check_fua_trace(const char *path, const char *text, uint64_t first_lba,
			    uint64_t fua_lba, uint64_t end_lba)
{
	const char *p = text;
	uint64_t next = first_lba;
	int writes = 0, fua = 0;

	while ((p = strstr(p, "sg: WRITE(16) "))) {
		unsigned b[16];
		uint64_t lba = 0;
		uint32_t blocks = 0;
		const char *eol = strchr(p, '\n');

		if (sscanf(p, "sg: WRITE(16) %x %x %x %x %x %x %x %x %x %x %x %x %x %x %x %x",
			   &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7], &b[8], &b[9],
			   &b[10], &b[11], &b[12], &b[13], &b[14], &b[15]) != 16) {
			FAIL("%s: unreadable trace line: %.120s", path, p);
			return;
		}
		for (int i = 2; i < 10; i++)
			lba = lba << 8 | b[i];
		for (int i = 10; i < 14; i++)
			blocks = blocks << 8 | b[i];
		if (!eol || !strstr(p, "-> GOOD") || strstr(p, "-> GOOD") > eol)
			FAIL("%s: chunk write not GOOD: %.120s", path, p);
		if (lba != next)
			FAIL("%s: WRITE(16) at LBA %" PRIu64 ", expected %" PRIu64, path, lba, next);
		next = lba + blocks;
		writes++;
		if (b[1] & 0x08) {
			fua++;
			if (lba < fua_lba)
				FAIL("%s: FUA on a WRITE(16) before the last chunk (LBA %" PRIu64 ")",
				     path, lba);
		} else if (lba >= fua_lba) {
			FAIL("%s: WRITE(16) of the last chunk without FUA (LBA %" PRIu64 ")", path,
			     lba);
		}
		p += 14;
	}
	if (next != end_lba)
		FAIL("%s: chunk writes covered LBAs %" PRIu64 "..%" PRIu64 ", expected ..%" PRIu64,
		     path, first_lba, next, end_lba);
	if (writes < NCHUNK || !fua)
		FAIL("%s: trace shows %d WRITE(16), %d with FUA (want >= %d and >= 1)", path, writes,
		     fua, NCHUNK);
	else
		INFO("  chunked write: %d WRITE(16) commands traced, FUA only on the %d command(s) "
		     "of the last chunk", writes, fua);
}

/* ------------------------------------------------------------------ checks ---- */

static void show_ident(const char *path, struct avfs_disk *d)
{
	struct avfs_sg_ident id;

	if (avfs_sg_info(d, &id)) {
		FAIL("%s: avfs_sg_info refused an sg disk", path);
		return;
	}
	INFO("  ident: vendor '%s' product '%s' rev '%s' serial '%s' node %s", id.vendor,
	     id.product, id.revision, id.serial, id.node);
	INFO("  ident: %" PRIu64 " bytes, lbs %" PRIu32 " pbs %" PRIu32 ", max transfer %" PRIu32
	     " bytes, rotation rate %" PRIu32 ", WCE %s, SEEK(10) %s", id.capacity, id.lbs, id.pbs,
	     id.max_transfer, id.rotation_rate,
	     id.wce_known ? (id.wce ? "on" : "off") : "unknown", id.has_seek ? "yes" : "no");
	INFO("  info: size %" PRIu64 " lbs %" PRIu32 " pbs %" PRIu32 " mem_align %" PRIu32
	     " rotational %d has_seek %d is_blockdev %d model '%s'", d->info.size, d->info.lbs,
	     d->info.pbs, d->info.mem_align, d->info.rotational, d->info.has_seek,
	     d->info.is_blockdev, d->info.model);
	if (!id.capacity || id.capacity != d->info.size || !id.lbs || id.lbs != d->info.lbs ||
	    id.pbs < id.lbs || !id.max_transfer || id.max_transfer % id.lbs)
		FAIL("%s: inconsistent identification", path);
	if (!id.vendor[0] || !id.product[0])
		FAIL("%s: INQUIRY vendor/product missing", path);
}

/* Open through one more node of the same disk, identify, read a block, close. */
static void check_other_node(const char *path, const char *serial, uint64_t size)
{
	struct avfs_disk *d;
	struct avfs_sg_ident id;
	struct avfs_disk_req r;
	void *buf;
	int ret = avfs_sg_open(path, AVFS_SG_RDONLY, &d);

	if (ret) {
		FAIL("%s: avfs_sg_open: %s", path, strerror(-ret));
		return;
	}
	avfs_sg_info(d, &id);
	buf = avfs_disk_alloc_buf(d, d->info.lbs);
	r = mkreq(AVFS_DISK_READ, 0, d->info.lbs, buf, 0);
	if (strcmp(id.serial, serial) || d->info.size != size)
		FAIL("%s: another disk than its sg node ('%s', %" PRIu64 " bytes)", path, id.serial,
		     d->info.size);
	else if (!buf || guest_io(d, &r, false) != d->info.lbs)
		FAIL("%s: READ(16) of LBA 0 through this node", path);
	else
		INFO("  %s node %s: same disk, READ(16) of LBA 0 GOOD", id.node, path);
	free(buf);
	avfs_disk_close(d);
}

/* The sd and bsg nodes of the SCSI device behind an sg node (by sysfs), if present. */
static void check_sibling_nodes(const char *sgpath, const char *serial, uint64_t size)
{
	const char *name = strrchr(sgpath, '/');
	char dir[PATH_MAX], node[PATH_MAX + 300];
	const char *sub[] = { "block", "bsg" };

	if (!name || strncmp(name + 1, "sg", 2))
		return;	/* given as sd or bsg: its siblings are not looked for */
	for (int i = 0; i < 2; i++) {
		struct dirent *e;
		DIR *d;

		snprintf(dir, sizeof(dir), "/sys/class/scsi_generic/%s/device/%s", name + 1, sub[i]);
		d = opendir(dir);
		if (!d)
			continue;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				break;
		if (e) {
			snprintf(node, sizeof(node), "/dev/%s%s", i ? "bsg/" : "", e->d_name);
			if (!access(node, F_OK))
				check_other_node(node, serial, size);
		}
		closedir(d);
	}
}

static void check_writes(const char *path, struct avfs_disk *d, const struct avfs_sg_ident *id)
{
	const uint32_t lbs = d->info.lbs;
	const uint64_t blocks = d->info.size / lbs;
	uint32_t big = NCHUNK * CHUNK;
	struct avfs_disk_req r;
	struct capture cap;
	char *trace;
	uint8_t *w, *rd;
	uint64_t lba;
	int64_t res;

	if (big < 2 * id->max_transfer + lbs)
		big = 2 * id->max_transfer + lbs;	/* the "larger than one command" request */
	if ((uint64_t)big * 3 > d->info.size) {
		FAIL("%s: disk too small for the write checks", path);
		return;
	}
	w = avfs_disk_alloc_buf(d, big);
	rd = avfs_disk_alloc_buf(d, big);
	if (!w || !rd) {
		FAIL("out of memory");
		goto out;
	}

	/* WRITE(16) FUA + READ(16) round trip */
	lba = blocks / 3;
	fill(w, 8 * lbs, 1);
	memset(rd, 0, 8 * lbs);
	r = mkreq(AVFS_DISK_WRITE, lba, 8 * lbs, w, AVFS_DISK_FUA);
	if ((res = guest_io(d, &r, false)) != 8 * lbs)
		FAIL("%s: WRITE FUA at LBA %" PRIu64 ": %" PRId64, path, lba, res);
	r = mkreq(AVFS_DISK_READ, lba, 8 * lbs, rd, 0);
	if ((res = guest_io(d, &r, false)) != 8 * lbs)
		FAIL("%s: READ at LBA %" PRIu64 ": %" PRId64, path, lba, res);
	else if (memcmp(w, rd, 8 * lbs))
		FAIL("%s: READ after WRITE FUA: data differs", path);
	else
		INFO("  WRITE(16) FUA + READ(16) at LBA %" PRIu64 ", 8 blocks: data matches", lba);

	/* FLUSH: SYNCHRONIZE CACHE(10) */
	r = mkreq(AVFS_DISK_FLUSH, 0, 0, NULL, 0);
	if ((res = guest_io(d, &r, false)) != 0)
		FAIL("%s: FLUSH: %" PRId64, path, res);
	else
		INFO("  FLUSH (SYNCHRONIZE CACHE(10)): GOOD");

	/* 1 MiB as four chunks submitted together, FUA on the last only, as the mixer issues a
	 * chunked write (SPEC §6); the trace must show exactly that */
	lba = blocks / 2;
	lba -= lba % (d->info.pbs / lbs);
	fill(w, NCHUNK * CHUNK, 2);
	if (capture_start(&cap)) {
		FAIL("cannot capture stderr");
		goto out;
	}
	for (unsigned i = 0; i < NCHUNK; i++) {
		r = mkreq(AVFS_DISK_WRITE, lba + (uint64_t)i * CHUNK / lbs, CHUNK, w + i * CHUNK,
			  i == NCHUNK - 1 ? AVFS_DISK_FUA : 0);
		if (avfs_disk_submit(d, &r))
			FAIL("%s: submit of chunk %u refused", path, i);
	}
	for (unsigned got = 0; got < NCHUNK;) {
		struct avfs_disk_cqe cqe[NCHUNK];
		int n = avfs_disk_reap(d, cqe, NCHUNK);

		for (int i = 0; i < n; i++)
			if (cqe[i].res != CHUNK)
				FAIL("%s: chunk write: %" PRId64, path, cqe[i].res);
		got += n > 0 ? (unsigned)n : 0;
		if (n == 0 && avfs_disk_wait(d))
			break;
	}
	trace = capture_stop(&cap);
	if (!trace)
		FAIL("%s: no trace captured (AVFS_SG_TRACE)", path);
	else
		check_fua_trace(path, trace, lba, lba + (uint64_t)(NCHUNK - 1) * CHUNK / lbs,
				lba + (uint64_t)NCHUNK * CHUNK / lbs);
	free(trace);
	memset(rd, 0, NCHUNK * CHUNK);
	r = mkreq(AVFS_DISK_READ, lba, NCHUNK * CHUNK, rd, 0);
	if ((res = guest_io(d, &r, false)) != NCHUNK * CHUNK || memcmp(w, rd, NCHUNK * CHUNK))
		FAIL("%s: reading the chunked write back in one request: %" PRId64 "%s", path, res,
		     res == NCHUNK * CHUNK ? ", data differs" : "");
	else
		INFO("  1 MiB read back in one request: data matches");

	/* a request larger than one command: split by the backend, FUA on each piece */
	lba = blocks / 5;
	fill(w, big, 3);
	memset(rd, 0, big);
	r = mkreq(AVFS_DISK_WRITE, lba, big, w, AVFS_DISK_FUA);
	res = guest_io(d, &r, false);
	if (res != big) {
		FAIL("%s: WRITE of %" PRIu32 " bytes (max transfer %" PRIu32 "): %" PRId64, path,
		     big, id->max_transfer, res);
	} else {
		r = mkreq(AVFS_DISK_READ, lba, big, rd, 0);
		res = guest_io(d, &r, false);
		if (res != big || memcmp(w, rd, big))
			FAIL("%s: READ of %" PRIu32 " bytes: %" PRId64, path, big, res);
		else
			INFO("  %" PRIu32 " bytes (> max transfer %" PRIu32 ") written and read in "
			     "one request each: data matches", big, id->max_transfer);
	}
out:
	free(w);
	free(rd);
}

static int64_t expect_lbs(uint64_t cookie, void *lbs)
{
	(void)cookie;
	return *(const uint32_t *)lbs;
}

/* Fill the queue, see -EBUSY past it, the eventfd readable, every completion come back. */
static void check_queue(const char *path, struct avfs_disk *d)
{
	const uint32_t lbs = d->info.lbs;
	uint8_t *buf = avfs_disk_alloc_buf(d, (size_t)lbs * AVFS_SG_QUEUE);
	struct avfs_disk_req r;
	int ret;

	if (!buf || avfs_disk_poll_fd(d) < 0) {
		FAIL("%s: no buffer or no poll fd", path);
		free(buf);
		return;
	}
	for (unsigned i = 0; i < AVFS_SG_QUEUE; i++) {
		r = mkreq(AVFS_DISK_READ, i, lbs, buf + (size_t)i * lbs, 0);
		if ((ret = avfs_disk_submit(d, &r)))
			FAIL("%s: submit %u of %u: %s", path, i, AVFS_SG_QUEUE, strerror(-ret));
	}
	r = mkreq(AVFS_DISK_READ, 0, lbs, buf, 0);
	if ((ret = avfs_disk_submit(d, &r)) != -EBUSY)
		FAIL("%s: submit past the queue bound: %d, expected -EBUSY", path, ret);
	if (guest_drain(path, d, AVFS_SG_QUEUE, expect_lbs, (void *)&lbs))
		INFO("  queue: %u reads queued, the next -EBUSY, all completed through the poll fd",
		     AVFS_SG_QUEUE);
	free(buf);
}

static void check_disk(const char *path, bool scratch)
{
	struct avfs_sg_ident id;
	struct avfs_disk *d, *ro;
	struct avfs_disk_req r;
	uint64_t blocks;
	uint8_t *buf;
	int64_t res;
	int fail0 = failures, ret;

	INFO("SCSI disk %s", path);
	ret = avfs_sg_open(path, 0, &d);
	if (ret) {
		FAIL("%s: avfs_sg_open: %s (%d)", path, strerror(-ret), ret);
		return;
	}
	show_ident(path, d);
	avfs_sg_info(d, &id);
	blocks = d->info.size / d->info.lbs;
	scratch = scratch || (!strcmp(id.vendor, "QEMU") && !strcmp(id.product, "QEMU HARDDISK"));
	buf = avfs_disk_alloc_buf(d, 2 * d->info.lbs);

	/* SEEK(10): in range GOOD; beyond the end the device's 5/21/00, decoded */
	if (id.has_seek) {
		r = mkreq(AVFS_DISK_SEEK, blocks / 2, 0, NULL, 0);
		if ((res = guest_io(d, &r, false)) != 0)
			FAIL("%s: SEEK to LBA %" PRIu64 ": %" PRId64, path, blocks / 2, res);
		r = mkreq(AVFS_DISK_SEEK, blocks - 1, 0, NULL, 0);
		if ((res = guest_io(d, &r, false)) != 0)
			FAIL("%s: SEEK to the last LBA: %" PRId64, path, res);
		r = mkreq(AVFS_DISK_SEEK, blocks + 10, 0, NULL, 0);
		res = guest_io(d, &r, true);
		if (blocks + 10 > UINT32_MAX ? res != -EOVERFLOW : res != -EINVAL)
			FAIL("%s: SEEK beyond the end: %" PRId64 ", expected -EINVAL", path, res);
		else
			INFO("  SEEK(10) in range GOOD; beyond the end: clean %s", strerror((int)-res));
	} else {
		r = mkreq(AVFS_DISK_SEEK, 0, 0, NULL, 0);
		if ((res = guest_io(d, &r, false)) != -EOPNOTSUPP)
			FAIL("%s: SEEK on a disk without it: %" PRId64, path, res);
		INFO("  SEEK(10) not supported: SEEK requests refused with -EOPNOTSUPP");
	}

	/* out of range: refused before any command by the disk layer, and, sent anyway, the
	 * device's ILLEGAL REQUEST / LBA OUT OF RANGE decoded into -EINVAL */
	r = mkreq(AVFS_DISK_READ, blocks - 1, 2 * d->info.lbs, buf, 0);
	if ((res = guest_io(d, &r, false)) != -EINVAL)
		FAIL("%s: avfs_disk_submit of a read past the end: %" PRId64, path, res);
	res = guest_io(d, &r, true);
	if (res != -EINVAL)
		FAIL("%s: READ(16) past the end sent to the device: %" PRId64 ", expected -EINVAL",
		     path, res);
	else
		INFO("  READ(16) past the end: device answered, backend completed with -EINVAL");

	check_queue(path, d);

	/* registered buffers: accepted, and a request naming one reads as any other */
	{
		struct iovec iov = { .iov_base = buf, .iov_len = 2 * d->info.lbs };

		r = mkreq(AVFS_DISK_READ, 1, d->info.lbs, buf, 0);
		r.buf_index = 0;
		if ((ret = avfs_disk_register_buffers(d, &iov, 1)))
			FAIL("%s: register_buffers: %d", path, ret);
		else if ((res = guest_io(d, &r, false)) != d->info.lbs)
			FAIL("%s: READ into a registered buffer: %" PRId64, path, res);
		else
			INFO("  registered buffer: READ(16) into it GOOD");
	}

	if (scratch)
		check_writes(path, d, &id);
	else
		INFO("  not QEMU's disk and no --scratch: write checks skipped");

	/* read-only: writes refused at submit, reads still work */
	ret = avfs_sg_open(path, AVFS_SG_RDONLY, &ro);
	if (ret) {
		FAIL("%s: read-only open: %s", path, strerror(-ret));
	} else {
		r = mkreq(AVFS_DISK_WRITE, 0, d->info.lbs, buf, 0);
		if ((ret = avfs_disk_submit(ro, &r)) != -EBADF)
			FAIL("%s: write on a read-only open: %d, expected -EBADF", path, ret);
		r = mkreq(AVFS_DISK_READ, 0, d->info.lbs, buf, 0);
		if ((res = guest_io(ro, &r, false)) != d->info.lbs)
			FAIL("%s: read on a read-only open: %" PRId64, path, res);
		avfs_disk_close(ro);
	}
	free(buf);
	avfs_disk_close(d);

	check_sibling_nodes(path, id.serial, id.capacity);
	INFO("SCSI disk %s (%s): %s", path, id.serial, failures == fail0 ? "OK" : "FAILED");
}

/* The sg node whose disk has this serial, into out. 0 or -ENOENT. */
static int find_by_serial(const char *serial, char *out, size_t n)
{
	DIR *dir = opendir("/sys/class/scsi_generic");
	struct dirent *e;
	int ret = -ENOENT;

	while (dir && ret && (e = readdir(dir))) {
		char path[300];
		struct avfs_disk *d;
		struct avfs_sg_ident id;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		if (avfs_sg_open(path, AVFS_SG_RDONLY, &d))
			continue;
		avfs_sg_info(d, &id);
		avfs_disk_close(d);
		if (!strcmp(id.serial, serial)) {
			snprintf(out, n, "%s", path);
			ret = 0;
		}
	}
	if (dir)
		closedir(dir);
	return ret;
}

int main(int argc, char **argv)
{
	bool scratch = false;
	int ndev = 0;
	char path[300];

	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("AVFS_SG_TRACE", "1", 0);	/* the FUA check reads the trace */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scratch")) {
			scratch = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s [--scratch] [DEVICE|SERIAL...]\n", argv[0]);
			return 0;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		ndev++;
		if (argv[i][0] == '/') {
			check_disk(argv[i], scratch);
		} else if (find_by_serial(argv[i], path, sizeof(path))) {
			FAIL("no SCSI disk with serial '%s'", argv[i]);
		} else {
			check_disk(path, scratch);
		}
	}
	if (!ndev) {
		DIR *dir = opendir("/sys/class/scsi_generic");
		struct dirent *e;

		while (dir && (e = readdir(dir))) {
			struct avfs_disk *d;
			int ret;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/dev/%s", e->d_name);
			ret = avfs_sg_open(path, AVFS_SG_RDONLY, &d);
			if (ret) {
				/* not a disk: a CD-ROM, an enclosure (-EMEDIUMTYPE) */
				INFO("%s: not used: %s", path, strerror(-ret));
				continue;
			}
			avfs_disk_close(d);
			ndev++;
			check_disk(path, scratch);
		}
		if (dir)
			closedir(dir);
		if (!ndev) {
			printf("SKIP no SCSI disk found under /sys/class/scsi_generic\n");
			return 77;
		}
	}
	printf("sg_backend: %d disk(s), %d failure(s)\n", ndev, failures);
	return failures ? 1 : 0;
}
