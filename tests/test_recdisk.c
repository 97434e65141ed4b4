/*
 * test_recdisk.c — the test-support disks and the crash simulator: memdisk (RAM backend with
 * read-fault injection), recdisk (the recording wrapper: what it logs, in which order, and
 * what it passes through) and crashsim (which images a power cut can leave, reproducibly).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crashsim.h"
#include "disk.h"
#include "diskio.h"
#include "memdisk.h"
#include "recdisk.h"

#define DISK_SIZE (1u << 20)
#define BLK 4096u

static int submit(struct avfs_disk *d, enum avfs_disk_op op, uint64_t lba, uint32_t len,
		  void *buf, uint32_t flags, uint64_t cookie)
{
	struct avfs_disk_req r = { .op = op, .flags = flags, .lba = lba, .len = len, .buf = buf,
				   .buf_index = -1, .cookie = cookie };

	return avfs_disk_submit(d, &r);
}

/* ---- a backend that completes in reverse order (LIFO), optionally failing writes ----
 * The memdisk completes in submit order, which cannot show that recdisk logs in completion
 * order; this one can. */

struct lifo {
	struct avfs_disk disk;
	uint8_t *mem;
	struct avfs_disk_req q[64];
	unsigned n;
	bool fail_writes;	/* writes complete with -EIO and change nothing */
};

static int lifo_submit(void *ctx, const struct avfs_disk_req *req)
{
	struct lifo *l = ctx;

	if (l->n == 64)
		return -EBUSY;
	l->q[l->n++] = *req;
	return 0;
}

static int lifo_reap(void *ctx, struct avfs_disk_cqe *cqes, unsigned max)
{
	struct lifo *l = ctx;
	unsigned k = 0;

	while (k < max && l->n) {
		const struct avfs_disk_req *q = &l->q[--l->n];
		int64_t res = q->op == AVFS_DISK_FLUSH ? 0 : q->len;

		if (q->op == AVFS_DISK_WRITE && l->fail_writes)
			res = -EIO;
		else if (q->op == AVFS_DISK_WRITE)
			memcpy(l->mem + q->lba * BLK, q->buf, q->len);
		else if (q->op == AVFS_DISK_READ)
			memcpy(q->buf, l->mem + q->lba * BLK, q->len);
		cqes[k++] = (struct avfs_disk_cqe){ .cookie = q->cookie, .res = res };
	}
	return (int)k;
}

static int lifo_wait(void *ctx)
{
	return ((struct lifo *)ctx)->n ? 0 : -EAGAIN;
}

static unsigned lifo_inflight(void *ctx)
{
	return ((struct lifo *)ctx)->n;
}

static void lifo_close(void *ctx)
{
	struct lifo *l = ctx;

	free(l->mem);
	free(l);
}

static const struct avfs_disk_ops lifo_ops = {
	.name = "lifo", .submit = lifo_submit, .reap = lifo_reap, .wait = lifo_wait,
	.inflight = lifo_inflight, .close = lifo_close,
};

static struct lifo *lifo_open(void)
{
	struct lifo *l = calloc(1, sizeof(*l));

	assert_non_null(l);
	l->mem = calloc(1, DISK_SIZE);
	assert_non_null(l->mem);
	l->disk.ops = &lifo_ops;
	l->disk.ctx = l;
	l->disk.info = (struct avfs_disk_info){ .size = DISK_SIZE, .lbs = BLK, .pbs = BLK,
						.mem_align = BLK, .model = "lifo" };
	return l;
}

/* ---- memdisk ---- */

/* Writes read back, unwritten space reads zero, an image is copied, info is as promised. */
static void test_recdisk_memdisk_write_read_back(void **state)
{
	struct avfs_disk *d;
	uint8_t *w = aligned_alloc(4096, 65536), *r, *z = calloc(1, 65536);
	uint8_t *img = malloc(DISK_SIZE);

	(void)state;
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, 512, &d), 0);
	assert_true(avfs_memdisk_is(d));
	assert_int_equal(d->info.size, DISK_SIZE);
	assert_int_equal(d->info.lbs, 512);
	assert_int_equal(d->info.pbs, 4096);
	assert_int_equal(d->info.mem_align, 512);
	assert_false(d->info.rotational);
	assert_false(d->info.has_seek);
	assert_string_equal(d->info.model, "mem");
	r = avfs_disk_alloc_buf(d, 65536);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 7, 65536, r, 0), 65536);
	assert_memory_equal(r, z, 65536);
	seed_fill(w, 65536, 1);
	assert_int_equal(disk_io(d, AVFS_DISK_WRITE, 7, 65536, w, AVFS_DISK_FUA), 65536);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 7, 65536, r, 0), 65536);
	assert_memory_equal(r, w, 65536);
	assert_memory_equal(avfs_memdisk_data(d) + 7 * 512, w, 65536);
	assert_int_equal(disk_io(d, AVFS_DISK_FLUSH, 0, 0, NULL, 0), 0);
	avfs_disk_close(d);

	seed_fill(img, DISK_SIZE, 2);
	assert_int_equal(avfs_memdisk_open_image(img, DISK_SIZE, 4096, &d), 0);
	assert_int_equal(d->info.pbs, 4096);
	img[0] ^= 0xff;		/* the disk holds a copy, not the caller's buffer */
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 0, 4096, r, 0), 4096);
	assert_int_equal(r[0], (uint8_t)(img[0] ^ 0xff));
	assert_memory_equal(r + 1, img + 1, 4095);
	avfs_disk_close(d);
	free(w);
	free(r);
	free(z);
	free(img);
}

/* Bad requests are refused at submit by disk.c (-EINVAL, SEEK -EOPNOTSUPP), bad geometry at
 * open, and an idle memdisk's wait says -EAGAIN. */
static void test_recdisk_memdisk_bad_requests(void **state)
{
	struct avfs_disk *d;
	uint8_t *b;

	(void)state;
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, 1000, &d), -EINVAL);	/* not 2^k */
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, 256, &d), -EINVAL);	/* < 512 */
	assert_int_equal(avfs_memdisk_open(DISK_SIZE + 512, 4096, &d), -EINVAL);
	assert_int_equal(avfs_memdisk_open(0, 4096, &d), -EINVAL);
	assert_int_equal(avfs_memdisk_open_image(NULL, DISK_SIZE, 4096, &d), -EINVAL);
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, 4096, &d), 0);
	b = avfs_disk_alloc_buf(d, 2 * BLK);
	assert_int_equal(submit(d, AVFS_DISK_READ, 0, BLK, b + 512, 0, 0), -EINVAL);
	assert_int_equal(submit(d, AVFS_DISK_READ, 0, 512, b, 0, 0), -EINVAL);
	assert_int_equal(submit(d, AVFS_DISK_WRITE, DISK_SIZE / BLK - 1, 2 * BLK, b, 0, 0),
			 -EINVAL);
	assert_int_equal(submit(d, AVFS_DISK_WRITE, DISK_SIZE / BLK, BLK, b, 0, 0), -EINVAL);
	assert_int_equal(submit(d, AVFS_DISK_SEEK, 0, 0, NULL, 0, 0), -EOPNOTSUPP);
	assert_int_equal(avfs_disk_inflight(d), 0);
	assert_int_equal(avfs_disk_wait(d), -EAGAIN);
	assert_null(avfs_memdisk_data(NULL));
	avfs_disk_close(d);
	free(b);
}

/* Completions are ready at once, reaped in submit order with their cookies. */
static void test_recdisk_memdisk_async(void **state)
{
	struct avfs_disk *d;
	struct avfs_disk_cqe c[8];
	uint8_t *b;

	(void)state;
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, 4096, &d), 0);
	b = avfs_disk_alloc_buf(d, BLK);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(submit(d, AVFS_DISK_WRITE, i, BLK, b, 0, 100 + i), 0);
	assert_int_equal(avfs_disk_inflight(d), 5);
	assert_int_equal(avfs_disk_wait(d), 0);
	assert_int_equal(avfs_disk_reap(d, c, 3), 3);
	assert_int_equal(avfs_disk_reap(d, c + 3, 8), 2);
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(c[i].cookie, 100 + i);
		assert_int_equal(c[i].res, BLK);
	}
	assert_int_equal(avfs_disk_inflight(d), 0);
	assert_int_equal(avfs_disk_reap(d, c, 8), 0);
	avfs_disk_close(d);
	free(b);
}

/* A read touching the failed range completes with -EIO (buffer untouched); reads beside it
 * and writes into it succeed; len 0 clears the fault. */
static void test_recdisk_memdisk_fail_reads(void **state)
{
	struct avfs_disk *d;
	uint8_t *b;

	(void)state;
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, 512, &d), 0);
	b = avfs_disk_alloc_buf(d, 4096);
	assert_int_equal(avfs_memdisk_fail_reads(d, 10000, 1), 0);	/* byte 10000: lba 19 */
	memset(b, 0x77, 4096);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 16, 4096, b, 0), -EIO);	/* 8192..12287 */
	assert_int_equal(b[0], 0x77);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 19, 512, b, 0), -EIO);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 18, 512, b, 0), 512);	/* ends at 9728 */
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 20, 512, b, 0), 512);	/* starts at 10240 */
	assert_int_equal(disk_io(d, AVFS_DISK_WRITE, 19, 512, b, 0), 512);
	assert_int_equal(avfs_memdisk_fail_reads(d, 0, 0), 0);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 16, 4096, b, 0), 4096);
	assert_int_equal(avfs_memdisk_fail_reads(d, UINT64_MAX, 2), -EINVAL);
	assert_int_equal(avfs_memdisk_fail_reads(NULL, 0, 1), -EINVAL);
	avfs_disk_close(d);
	free(b);
}

/* ---- recdisk ---- */

/* Writes and flushes are logged in completion order (here the reverse of submission), with
 * copies of the data as submitted, the FUA flag, byte offsets; reads are not logged. */
static void test_recdisk_logs_in_completion_order(void **state)
{
	struct lifo *l = lifo_open();
	struct avfs_disk *d;
	struct avfs_disk_cqe c[8];
	const struct avfs_rec_entry *e;
	uint8_t *w1 = aligned_alloc(BLK, 2 * BLK), *w2 = aligned_alloc(BLK, BLK);
	uint8_t *rb = aligned_alloc(BLK, BLK), *c1 = malloc(2 * BLK), *c2 = malloc(BLK);
	size_t n;

	(void)state;
	assert_int_equal(avfs_recdisk_open(&l->disk, &d), 0);
	assert_true(avfs_recdisk_is(d));
	assert_string_equal(d->info.model, "rec:lifo");
	assert_int_equal(d->info.size, DISK_SIZE);
	assert_int_equal(d->info.lbs, BLK);
	seed_fill(w1, 2 * BLK, 1);
	seed_fill(w2, BLK, 2);
	memcpy(c1, w1, 2 * BLK);
	memcpy(c2, w2, BLK);
	assert_int_equal(submit(d, AVFS_DISK_WRITE, 3, 2 * BLK, w1, 0, 11), 0);
	assert_int_equal(submit(d, AVFS_DISK_WRITE, 9, BLK, w2, AVFS_DISK_FUA, 12), 0);
	assert_int_equal(submit(d, AVFS_DISK_READ, 0, BLK, rb, 0, 13), 0);
	assert_int_equal(submit(d, AVFS_DISK_FLUSH, 0, 0, NULL, 0, 14), 0);
	assert_int_equal(avfs_disk_inflight(d), 4);
	memset(w1, 0, 2 * BLK);	/* the log keeps the data as submitted */
	assert_int_equal(avfs_disk_reap(d, c, 8), 4);
	/* LIFO: flush, read, w2, w1 */
	assert_int_equal(c[0].cookie, 14);
	assert_int_equal(c[1].cookie, 13);
	assert_int_equal(c[2].cookie, 12);
	assert_int_equal(c[3].cookie, 11);
	e = avfs_recdisk_log(d, &n);
	assert_int_equal(n, 3);
	assert_int_equal(e[0].kind, AVFS_REC_FLUSH);
	assert_int_equal(e[1].kind, AVFS_REC_WRITE);
	assert_int_equal(e[1].fua, 1);
	assert_int_equal(e[1].off, 9 * BLK);
	assert_int_equal(e[1].len, BLK);
	assert_memory_equal(e[1].data, c2, BLK);
	assert_int_equal(e[2].kind, AVFS_REC_WRITE);
	assert_int_equal(e[2].fua, 0);
	assert_int_equal(e[2].off, 3 * BLK);
	assert_int_equal(e[2].len, 2 * BLK);
	assert_memory_equal(e[2].data, c1, 2 * BLK);
	assert_int_equal(avfs_recdisk_log_bytes(d), 3 * BLK);
	avfs_recdisk_log_clear(d);
	assert_null(avfs_recdisk_log(d, &n));
	assert_int_equal(n, 0);
	assert_int_equal(avfs_recdisk_log_bytes(d), 0);
	avfs_disk_close(d);	/* closes the lifo disk too: ASan would report it leaked */
	free(w1);
	free(w2);
	free(rb);
	free(c1);
	free(c2);
}

/* A write refused at submit, or completed with an error, is not logged; nor is a flush
 * that never reached the disk. */
static void test_recdisk_failed_writes_not_logged(void **state)
{
	struct lifo *l = lifo_open();
	struct avfs_disk *d, *m;
	struct avfs_disk_cqe c[4];
	uint8_t *b = aligned_alloc(BLK, BLK);
	size_t n;

	(void)state;
	seed_fill(b, BLK, 3);
	assert_int_equal(avfs_recdisk_open(&l->disk, &d), 0);
	assert_int_equal(submit(d, AVFS_DISK_WRITE, DISK_SIZE / BLK, BLK, b, 0, 1), -EINVAL);
	assert_int_equal(submit(d, AVFS_DISK_WRITE, 0, BLK, b + 1, 0, 1), -EINVAL);
	assert_int_equal(avfs_disk_inflight(d), 0);
	l->fail_writes = true;
	assert_int_equal(submit(d, AVFS_DISK_WRITE, 1, BLK, b, 0, 2), 0);
	assert_int_equal(submit(d, AVFS_DISK_FLUSH, 0, 0, NULL, 0, 3), 0);
	assert_int_equal(avfs_disk_reap(d, c, 4), 2);
	assert_int_equal(c[0].cookie, 3);
	assert_int_equal(c[1].cookie, 2);
	assert_int_equal(c[1].res, -EIO);
	avfs_recdisk_log(d, &n);
	assert_int_equal(n, 1);	/* only the flush */
	assert_int_equal(avfs_recdisk_log_bytes(d), 0);
	avfs_disk_close(d);

	/* a backend refusing at submit (lifo queue full) */
	l = lifo_open();
	assert_int_equal(avfs_recdisk_open(&l->disk, &d), 0);
	for (unsigned i = 0; i < 64; i++)
		assert_int_equal(submit(d, AVFS_DISK_WRITE, i, BLK, b, 0, i), 0);
	assert_int_equal(submit(d, AVFS_DISK_WRITE, 64, BLK, b, 0, 64), -EBUSY);
	while (avfs_disk_inflight(d))
		assert_true(avfs_disk_reap(d, c, 4) > 0);
	avfs_recdisk_log(d, &n);
	assert_int_equal(n, 64);
	avfs_disk_close(d);

	/* on a memdisk, a write out of bounds is not logged */
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, BLK, &m), 0);
	assert_int_equal(avfs_recdisk_open(m, &d), 0);
	assert_int_equal(disk_io(d, AVFS_DISK_WRITE, DISK_SIZE / BLK - 1, 2 * BLK, b, 0), -EINVAL);
	assert_null(avfs_recdisk_log(d, &n));
	assert_int_equal(n, 0);
	avfs_disk_close(d);
	free(b);
}

/* Reads, read faults, registered buffers, poll_fd and inflight pass through to the inner
 * disk, whose content the writes change. */
static void test_recdisk_passes_through(void **state)
{
	struct avfs_disk *d, *m;
	uint8_t *b, *r;
	struct iovec iov;
	struct avfs_disk_req req;
	size_t n;

	(void)state;
	assert_int_equal(avfs_memdisk_open(DISK_SIZE, 512, &m), 0);
	assert_int_equal(avfs_recdisk_open(m, &d), 0);
	assert_string_equal(d->info.model, "rec:mem");
	assert_int_equal(d->info.pbs, 4096);
	assert_int_equal(d->info.mem_align, 512);
	b = avfs_disk_alloc_buf(d, 8192);
	r = avfs_disk_alloc_buf(d, 8192);
	seed_fill(b, 8192, 5);
	assert_int_equal(disk_io(d, AVFS_DISK_WRITE, 4, 8192, b, 0), 8192);
	assert_memory_equal(avfs_memdisk_data(m) + 2048, b, 8192);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 4, 8192, r, 0), 8192);
	assert_memory_equal(r, b, 8192);
	assert_int_equal(avfs_memdisk_fail_reads(m, 2048, 512), 0);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, 4, 512, r, 0), -EIO);
	assert_int_equal(avfs_disk_poll_fd(d), -1);
	assert_int_equal(avfs_disk_wait(d), -EAGAIN);

	iov = (struct iovec){ .iov_base = r, .iov_len = 8192 };
	assert_int_equal(avfs_disk_register_buffers(d, &iov, 1), 0);
	assert_int_equal(m->nreg, 1);	/* the inner disk validates fixed buffers too */
	req = (struct avfs_disk_req){ .op = AVFS_DISK_WRITE, .lba = 100, .len = 4096,
				      .buf = r + 4096, .buf_index = 0 };
	assert_int_equal(avfs_disk_io_sync(d, &req), 4096);
	req.len = 8192;	/* runs past the registered buffer */
	assert_int_equal(avfs_disk_io_sync(d, &req), -EINVAL);
	avfs_recdisk_log(d, &n);
	assert_int_equal(n, 2);
	assert_null(avfs_recdisk_log(m, &n));	/* not a recdisk */
	assert_int_equal(n, 0);
	avfs_disk_close(d);
	free(b);
	free(r);
}

/* ---- crashsim ---- */

#define NBLK 16u	/* a 64 KiB image of 4 KiB blocks */
#define IMG (NBLK * BLK)

/* A log entry writing block blk filled from seed. */
static struct avfs_rec_entry wr(unsigned blk, uint32_t seed, bool fua)
{
	struct avfs_rec_entry e = { .kind = AVFS_REC_WRITE, .fua = fua, .off = blk * BLK,
				    .len = BLK, .data = malloc(BLK) };

	assert_non_null(e.data);
	seed_fill(e.data, BLK, seed);
	return e;
}

static struct avfs_rec_entry fl(void)
{
	return (struct avfs_rec_entry){ .kind = AVFS_REC_FLUSH };
}

static void log_free(struct avfs_rec_entry *log, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(log[i].data);
}

static void replay(uint8_t *img, const struct avfs_rec_entry *log, size_t upto)
{
	for (size_t i = 0; i < upto; i++)
		if (log[i].kind == AVFS_REC_WRITE)
			memcpy(img + log[i].off, log[i].data, log[i].len);
}

/* Through a real recdisk: the image at every point just after a flush equals what the disk
 * held when that flush completed, and equals replaying exactly the writes before it. */
static void test_recdisk_crash_flush_prefix(void **state)
{
	struct avfs_disk *d, *m;
	uint8_t *base = malloc(IMG), *b, *snap[8], *out = malloc(IMG), *exp = malloc(IMG);
	const struct avfs_rec_entry *log;
	size_t nlog, flushes = 0, at[8];
	uint32_t seed = 1;

	(void)state;
	seed_fill(base, IMG, 99);
	assert_int_equal(avfs_memdisk_open_image(base, IMG, 512, &m), 0);
	assert_int_equal(avfs_recdisk_open(m, &d), 0);
	b = avfs_disk_alloc_buf(d, 3 * BLK);
	for (unsigned round = 0; round < 8; round++) {
		for (unsigned k = 0; k < 1 + round % 3; k++, seed++) {
			uint32_t len = (1 + seed % 3) * 512 * (1 + seed % 5);

			seed_fill(b, len, seed);
			assert_int_equal(disk_io(d, AVFS_DISK_WRITE, (seed * 37) % (IMG / 512 - 64),
						 len, b, seed % 4 == 0 ? AVFS_DISK_FUA : 0), len);
		}
		assert_int_equal(disk_io(d, AVFS_DISK_FLUSH, 0, 0, NULL, 0), 0);
		snap[round] = malloc(IMG);
		memcpy(snap[round], avfs_memdisk_data(m), IMG);
		avfs_recdisk_log(d, &nlog);
		at[flushes++] = nlog;
	}
	log = avfs_recdisk_log(d, &nlog);
	for (size_t f = 0; f < flushes; f++) {
		struct avfs_crash_point pt = { .upto = at[f], .seed = f };

		assert_int_equal(log[at[f] - 1].kind, AVFS_REC_FLUSH);
		assert_int_equal(avfs_crash_image(base, IMG, log, nlog, &pt, out), 0);
		assert_memory_equal(out, snap[f], IMG);
		memcpy(exp, base, IMG);
		replay(exp, log, at[f]);
		assert_memory_equal(out, exp, IMG);
		free(snap[f]);
	}
	avfs_disk_close(d);
	free(b);
	free(base);
	free(out);
	free(exp);
}

/* Cut between flushes: a write before the last flush is always there; a write after it is
 * either there whole or absent (blocks are disjoint here), and the count of absent ones is
 * what crash_image returns. */
static void test_recdisk_crash_drops_only_after_flush(void **state)
{
	struct avfs_rec_entry log[16];
	size_t nlog = 0, total_dropped = 0;
	uint8_t *base = calloc(1, IMG), *out = malloc(IMG), *z = calloc(1, BLK);

	(void)state;
	for (unsigned i = 0; i < 5; i++)
		log[nlog++] = wr(i, 10 + i, false);
	log[nlog++] = fl();
	for (unsigned i = 5; i < 13; i++)
		log[nlog++] = wr(i, 10 + i, false);
	for (uint64_t seed = 0; seed < 200; seed++) {
		struct avfs_crash_point pt = { .upto = 6 + seed % 9, .seed = seed };
		size_t dropped = avfs_crash_image(base, IMG, log, nlog, &pt, out), absent = 0;

		for (unsigned i = 0; i < 5; i++)
			assert_memory_equal(out + i * BLK, log[i].data, BLK);
		for (unsigned i = 5; i < NBLK; i++) {
			/* block i >= 5 is written by log[i + 1], if at all */
			if (i + 1 >= pt.upto) {	/* after the cut, or never: untouched */
				assert_memory_equal(out + i * BLK, z, BLK);
			} else if (!memcmp(out + i * BLK, z, BLK)) {
				absent++;
			} else {
				assert_memory_equal(out + i * BLK, log[i + 1].data, BLK);
			}
		}
		assert_int_equal(dropped, absent);
		total_dropped += dropped;
	}
	assert_true(total_dropped > 0);	/* the coin does come up "dropped" */
	log_free(log, nlog);
	free(base);
	free(out);
	free(z);
}

/* all_inflight_applied gives the full prefix in log order, even with overlapping writes. */
static void test_recdisk_crash_all_applied_is_prefix(void **state)
{
	struct avfs_rec_entry log[12];
	size_t nlog = 0;
	uint8_t *base = malloc(IMG), *out = malloc(IMG), *exp = malloc(IMG);

	(void)state;
	seed_fill(base, IMG, 7);
	log[nlog++] = wr(1, 1, false);
	log[nlog++] = fl();
	for (unsigned i = 0; i < 10; i++)
		log[nlog++] = wr(i % 3, 20 + i, i == 4);
	for (size_t upto = 0; upto <= nlog; upto++) {
		for (uint64_t seed = 0; seed < 8; seed++) {
			struct avfs_crash_point pt = { .upto = upto, .seed = seed,
						       .all_inflight_applied = true };

			assert_int_equal(avfs_crash_image(base, IMG, log, nlog, &pt, out), 0);
			memcpy(exp, base, IMG);
			replay(exp, log, upto);
			assert_memory_equal(out, exp, IMG);
		}
	}
	log_free(log, nlog);
	free(base);
	free(out);
	free(exp);
}

/* The same seed gives the same image; with overlapping in-flight writes, some other seed
 * gives a different one. */
static void test_recdisk_crash_seeded(void **state)
{
	struct avfs_rec_entry log[4];
	uint8_t *base = calloc(1, IMG), *a = malloc(IMG), *b = malloc(IMG);
	struct avfs_crash_point pt = { .upto = 4, .seed = 42 };
	bool differ = false;

	(void)state;
	log[0] = fl();
	log[1] = wr(2, 1, false);
	log[2] = wr(2, 2, false);
	log[3] = wr(2, 3, false);
	for (unsigned i = 0; i < 10; i++) {
		avfs_crash_image(base, IMG, log, 4, &pt, a);
		avfs_crash_image(base, IMG, log, 4, &pt, b);
		assert_memory_equal(a, b, IMG);
	}
	for (uint64_t s = 43; s < 43 + 64 && !differ; s++) {
		struct avfs_crash_point q = { .upto = 4, .seed = s };

		avfs_crash_image(base, IMG, log, 4, &q, b);
		differ = memcmp(a, b, IMG) != 0;
	}
	assert_true(differ);
	log_free(log, 4);
	free(base);
	free(a);
	free(b);
}

/* A FUA write after the last flush is always applied, and not overwritten by in-flight
 * writes logged before it. */
static void test_recdisk_crash_fua_always_applied(void **state)
{
	struct avfs_rec_entry log[8];
	size_t nlog = 0;
	uint8_t *base = calloc(1, IMG), *out = malloc(IMG);

	(void)state;
	log[nlog++] = wr(0, 1, false);
	log[nlog++] = fl();
	log[nlog++] = wr(3, 2, false);
	log[nlog++] = wr(4, 3, false);	/* same block as the FUA write, logged before it */
	log[nlog++] = wr(4, 4, true);
	log[nlog++] = wr(5, 5, false);
	log[nlog++] = wr(6, 6, true);
	for (uint64_t seed = 0; seed < 200; seed++) {
		struct avfs_crash_point pt = { .upto = nlog, .seed = seed };

		avfs_crash_image(base, IMG, log, nlog, &pt, out);
		assert_memory_equal(out + 4 * BLK, log[4].data, BLK);
		assert_memory_equal(out + 6 * BLK, log[6].data, BLK);
	}
	log_free(log, nlog);
	free(base);
	free(out);
}

/* Torn writes (issue 19): with torn_sector, each in-flight write is absent, whole, or its
 * first k sectors (0 < k < 8) over the old bytes; the write under way at the cut is absent or
 * such a prefix; FUA writes in the prefix land whole; st counts what was torn and dropped;
 * cut_whole says whether the write under way reads back whole. Without torn_sector the same
 * seed gives the image it always gave. */
static void test_recdisk_crash_torn(void **state)
{
	struct avfs_rec_entry log[12];
	size_t nlog = 0, torn_seen = 0, cut_seen = 0, whole_seen = 0;
	uint8_t *base = malloc(IMG), *out = malloc(IMG), *plain = malloc(IMG);

	(void)state;
	memset(base, 0x5a, IMG);	/* no write's byte is 0x5a at every place: see below */
	log[nlog++] = wr(0, 1, false);
	log[nlog++] = fl();
	for (unsigned i = 1; i < 9; i++)
		log[nlog++] = wr(i, 10 + i, i == 5);	/* block 5 with FUA */
	log[nlog++] = wr(9, 30, false);	/* under way at the cut (upto = nlog - 1) */
	for (uint64_t seed = 0; seed < 300; seed++) {
		struct avfs_crash_point pt = { .upto = nlog - 1, .seed = seed, .torn_sector = 512 };
		struct avfs_crash_point p0 = { .upto = nlog - 1, .seed = seed };
		struct avfs_crash_stats st;
		size_t torn = 0, absent = 0;
		size_t ret = avfs_crash_image_stats(base, IMG, log, nlog, &pt, out, &st);

		assert_int_equal(ret, st.dropped);
		assert_memory_equal(out, log[0].data, BLK);	/* durable */
		assert_memory_equal(out + 5 * BLK, log[6].data, BLK);	/* FUA */
		for (unsigned b = 1; b < 10; b++) {
			const uint8_t *data = log[b < 9 ? b + 1 : nlog - 1].data, *o = out + b * BLK;
			unsigned k = 0;

			if (b == 5)
				continue;
			while (k < 8 && !memcmp(o + k * 512, data + k * 512, 512))
				k++;
			/* the rest is the old bytes: sector by sector all 0x5a */
			for (unsigned j = k * 512; j < BLK; j++)
				assert_int_equal(o[j], 0x5a);
			if (k == 0)
				absent += b < 9;
			else if (k < 8)
				torn++;
			if (b == 9) {
				assert_true(k < 8);	/* never whole: 0x5a is in no sector of it */
				assert_false(st.cut_whole);
				cut_seen += k > 0;
			}
		}
		assert_int_equal(st.torn, torn);
		assert_int_equal(st.dropped, absent);
		torn_seen += torn;
		/* without torn writes: the drops and the order as they always were */
		avfs_crash_image(base, IMG, log, nlog, &p0, plain);
		for (unsigned b = 1; b < 9; b++)
			if (!memcmp(plain + b * BLK, base + b * BLK, BLK))
				assert_memory_equal(out + b * BLK, base + b * BLK, BLK);
	}
	assert_true(torn_seen > 0);
	assert_true(cut_seen > 0);
	/* a cut write whose lost sectors already held its bytes reads back whole */
	memcpy(base + 9 * BLK, log[nlog - 1].data, BLK);
	memset(base + 9 * BLK, 0x5a, 512);
	for (uint64_t seed = 0; seed < 50; seed++) {
		struct avfs_crash_point pt = { .upto = nlog - 1, .seed = seed, .torn_sector = 512 };
		struct avfs_crash_stats st;

		avfs_crash_image_stats(base, IMG, log, nlog, &pt, out, &st);
		assert_int_equal(st.cut_whole, !memcmp(out + 9 * BLK, log[nlog - 1].data, BLK));
		whole_seen += st.cut_whole;
	}
	assert_true(whole_seen > 0);
	log_free(log, nlog);
	free(base);
	free(out);
	free(plain);
}

/* Crash points: sorted; 0, nlog and every index after a flush, each once; random cuts only
 * strictly inside gaps, at most random_per_gap per gap; the same seed gives the same list. */
static void test_recdisk_crash_points(void **state)
{
	struct avfs_rec_entry log[40];
	struct avfs_crash_point *p, *q;
	size_t n, n2, nlog = 0;
	bool boundary[41] = { false };
	size_t per_gap[41] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 40; i++)	/* flushes at 9, 19, 29, 39 */
		log[nlog++] = (i % 10 == 9) ? fl() : wr(i % NBLK, i, false);
	p = avfs_crash_points(log, nlog, 3, 5, &n);
	assert_non_null(p);
	boundary[0] = boundary[40] = true;
	for (size_t i = 0; i < nlog; i++)
		if (log[i].kind == AVFS_REC_FLUSH)
			boundary[i + 1] = true;
	/* boundaries 0,10,20,30,40 and 3 per gap of 9 inner indexes */
	assert_int_equal(n, 5 + 4 * 3);
	for (size_t k = 0; k < n; k++) {
		assert_true(p[k].upto <= nlog);
		assert_false(p[k].all_inflight_applied);
		if (k)
			assert_true(p[k - 1].upto < p[k].upto);	/* sorted, no repeats */
		if (!boundary[p[k].upto])
			per_gap[p[k].upto / 10]++;
	}
	for (unsigned g = 0; g < 4; g++)
		assert_int_equal(per_gap[g], 3);
	q = avfs_crash_points(log, nlog, 3, 5, &n2);
	assert_int_equal(n2, n);
	assert_memory_equal(p, q, n * sizeof(*p));
	free(q);
	free(p);

	/* a small gap is covered entirely; an empty log has the one point 0 */
	p = avfs_crash_points(log, 12, 100, 1, &n);
	assert_int_equal(n, 13);	/* 0..12 */
	free(p);
	p = avfs_crash_points(log, 0, 4, 1, &n);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].upto, 0);
	free(p);
	log_free(log, nlog);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recdisk_memdisk_write_read_back),
		cmocka_unit_test(test_recdisk_memdisk_bad_requests),
		cmocka_unit_test(test_recdisk_memdisk_async),
		cmocka_unit_test(test_recdisk_memdisk_fail_reads),
		cmocka_unit_test(test_recdisk_logs_in_completion_order),
		cmocka_unit_test(test_recdisk_failed_writes_not_logged),
		cmocka_unit_test(test_recdisk_passes_through),
		cmocka_unit_test(test_recdisk_crash_flush_prefix),
		cmocka_unit_test(test_recdisk_crash_drops_only_after_flush),
		cmocka_unit_test(test_recdisk_crash_all_applied_is_prefix),
		cmocka_unit_test(test_recdisk_crash_seeded),
		cmocka_unit_test(test_recdisk_crash_fua_always_applied),
		cmocka_unit_test(test_recdisk_crash_torn),
		cmocka_unit_test(test_recdisk_crash_points),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
