/*
 * test_dataplan.c — the core's data plans (fs/dataplan.c): the ops of reads and writes over
 * holes, uninitialized and partial pages, writes past the end in the same and in a later
 * page and block, multi-block ranges, short writes when space runs out, reads clamped at the
 * size; and, executed by fsio on a RAM disk whose data region starts out as garbage, the bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"
#include "fsck_clean.h"
#include "fsio.h"
#include "memdisk.h"

#define BS (64u << 10)	/* data block: 16 pages */
#define PG AVFS_PAGE
#define POISON 0xee	/* what the data region holds before anything is written there */

struct env {
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_fs *fs;
	uint8_t *pat;	/* the bytes every write takes, from pat[off % 4096 * 7] on */
	uint64_t f;	/* a regular file, empty at the start of each test */
	struct avfs_data_plan p;
};

static uint64_t mkfile(struct env *e, const char *name)
{
	uint64_t ino;

	assert_int_equal(avfs_fs_mknod(e->fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 1, &ino), 0);
	return ino;
}

/* Each test's fixture: a formatted 64 MiB RAM disk with 64 KiB blocks whose whole data region
 * is POISON, mounted without small files (the plans of whole blocks; small files have tests
 * of their own, test_dataplan_small_*), with an empty file "f" and an empty plan. */
static int env_setup(void **state)
{
	struct avfs_mkfs_opts mo = { .block_shift = 16, .zones = 4, .seed = 9 };
	struct env *e = calloc(1, sizeof(*e));
	struct avfs_super sb;
	char why[256];

	assert_int_equal(avfs_memdisk_open(64u << 20, 512, &e->d), 0);
	assert_int_equal(avfs_fsio_mkfs(e->d, &mo, &sb, why, sizeof(why)), 0);
	memset(avfs_memdisk_data(e->d) + sb.data_off, POISON, sb.data_blocks * BS);
	assert_int_equal(avfs_fsio_mount(e->d, AVFS_MOUNT_NOSMALL, &e->io, NULL, why, sizeof(why)),
			 0);
	e->fs = e->io->fs;
	e->pat = malloc(8u << 20);
	for (size_t i = 0; i < (8u << 20); i++)
		e->pat[i] = (uint8_t)(i * 31 + (i >> 12) + 1) | 1;	/* never 0 */
	e->f = mkfile(e, "f");
	avfs_data_plan_init(&e->p);
	*state = e;
	return 0;
}

/* ... and after it, fsck finds nothing wrong. */
static int env_teardown(void **state)
{
	struct env *e = *state;

	assert_fsck_clean(e->fs);
	assert_int_equal(e->fs->overruns, 0);	/* every credit estimate held */
	assert_int_equal(avfs_fsio_unmount(e->io), 0);
	avfs_disk_close(e->d);
	avfs_data_plan_free(&e->p);
	free(e->pat);
	free(e);
	return 0;
}

static void env_remount(struct env *e)
{
	char why[256];

	assert_int_equal(avfs_fsio_unmount(e->io), 0);
	assert_int_equal(avfs_fsio_mount(e->d, AVFS_MOUNT_NOSMALL, &e->io, NULL, why, sizeof(why)), 0);
	e->fs = e->io->fs;
}

/* The device offset of data block k of ino (0 for a hole). */
static uint64_t blk(struct env *e, uint64_t ino, uint64_t k)
{
	struct avfs_bext x;

	assert_int_equal(avfs_fs_map_read(e->fs, ino, k * BS, 1, &x, 1), 1);
	return x.dev_off;
}

static const uint8_t *src(struct env *e, uint64_t off)
{
	return e->pat + off % 4096 * 7;
}

static void expect_op(const struct avfs_dop *o, struct avfs_dop w)
{
	assert_int_equal(o->kind, w.kind);
	assert_int_equal(o->flags, w.flags);
	assert_int_equal(o->skip, w.skip);
	assert_int_equal(o->keep_head, w.keep_head);
	assert_int_equal(o->keep_tail, w.keep_tail);
	assert_int_equal(o->dev_off, w.dev_off);
	assert_int_equal(o->dev_len, w.dev_len);
	assert_int_equal(o->buf_off, w.buf_off);
	assert_int_equal(o->len, w.len);
}

/* The shape every READ/ZERO plan has: ops that cover [0, bytes) in order, whole pages read
 * with less than a page of them unused at each end, each inside one data block. */
static void check_read_plan(struct env *e, const struct avfs_data_plan *p)
{
	uint64_t next = 0, data_off = avfs_fs_super(e->fs)->data_off;

	for (size_t i = 0; i < p->n; i++) {
		const struct avfs_dop *o = &p->ops[i];

		assert_int_equal(o->buf_off, next);
		assert_true(o->len > 0);
		next += o->len;
		if (o->kind == AVFS_DOP_ZERO) {
			assert_false(i && p->ops[i - 1].kind == AVFS_DOP_ZERO);	/* merged */
			continue;
		}
		assert_int_equal(o->kind, AVFS_DOP_READ);
		assert_true(o->dev_off % PG == 0 && o->dev_len % PG == 0 && o->dev_off >= data_off);
		assert_true(o->skip < PG && o->skip + o->len <= o->dev_len);
		assert_true(o->dev_len - o->skip - o->len < PG);
		assert_int_equal((o->dev_off - data_off) / BS,
				 (o->dev_off + o->dev_len - 1 - data_off) / BS);
	}
	assert_int_equal(next, p->bytes);
}

/* The shape every write plan has: page-aligned ops inside one data block each, on disjoint
 * pages, keeping at most the partial first and last page's bytes around the data, and the
 * caller's bytes [0, bytes) each written once, in order. */
static void check_write_plan(struct env *e, const struct avfs_data_plan *p)
{
	uint64_t next = 0, data_off = avfs_fs_super(e->fs)->data_off;

	for (size_t i = 0; i < p->n; i++) {
		const struct avfs_dop *o = &p->ops[i];

		assert_int_equal(o->kind, AVFS_DOP_WRITE);
		assert_true(o->dev_off % PG == 0 && o->dev_len % PG == 0 && o->dev_len > 0);
		assert_true(o->dev_off >= data_off);
		assert_int_equal((o->dev_off - data_off) / BS,
				 (o->dev_off + o->dev_len - 1 - data_off) / BS);
		if (o->src_off) {
			/* a small file's pages moving: kept bytes from their old place */
			assert_true(o->src_off % PG == 0 && o->src_off >= data_off);
			assert_true(o->src_off + o->dev_len <= o->dev_off ||
				    o->dev_off + o->dev_len <= o->src_off);
		}
		if (o->src_off && o->skip == o->dev_len) {
			/* the move: one op, its kept bytes first, zeros after */
			assert_true(o->flags == AVFS_DOP_ZEROS && !o->len && o->keep_head <= o->skip &&
				    !o->keep_tail);
			continue;
		}
		assert_true(o->skip < PG && o->skip + o->len <= o->dev_len);
		assert_true(o->dev_len - o->skip - o->len < PG);
		assert_true(o->keep_head <= o->skip);
		assert_true(o->keep_tail <= o->dev_len - o->skip - o->len);
		for (size_t j = 0; j < i; j++)
			assert_true(p->ops[j].dev_off + p->ops[j].dev_len <= o->dev_off ||
				    o->dev_off + o->dev_len <= p->ops[j].dev_off);
		if (o->flags & AVFS_DOP_ZEROS) {
			assert_int_equal(o->flags, AVFS_DOP_ZEROS);
			assert_int_equal(o->buf_off, 0);
			continue;
		}
		assert_int_equal(o->flags, 0);
		assert_int_equal(o->buf_off, next);
		next += o->len;
	}
	assert_int_equal(next, p->bytes);
}

/* Plan a write of pattern bytes, check its shape, run it; the plan stays in p. */
static void write_plan(struct env *e, uint64_t ino, uint64_t off, uint64_t len,
		       struct avfs_data_plan *p)
{
	assert_int_equal(avfs_fs_plan_write(e->fs, ino, off, len, 5, p), 0);
	check_write_plan(e, p);
	assert_int_equal(avfs_fsio_run_data(e->io, p, NULL, src(e, off)), 0);
}

static void write_ok(struct env *e, uint64_t ino, uint64_t off, uint64_t len)
{
	struct avfs_data_plan p;

	avfs_data_plan_init(&p);
	write_plan(e, ino, off, len, &p);
	assert_int_equal(p.bytes, len);
	avfs_data_plan_free(&p);
}

static uint64_t size_of(struct env *e, uint64_t ino)
{
	struct avfs_stat st;

	assert_int_equal(avfs_fs_getattr(e->fs, ino, &st), 0);
	return st.size;
}

/* Bytes [off, off + len) of ino read back are zeros (z) or the pattern written at from. */
static void expect_bytes(struct env *e, uint64_t ino, uint64_t off, uint64_t len, bool z,
			 uint64_t from)
{
	uint8_t *b = malloc(len);

	assert_int_equal(avfs_fsio_read(e->io, ino, off, b, len), (int64_t)len);
	for (uint64_t i = 0; i < len; i++)
		if (b[i] != (z ? 0 : src(e, from)[off - from + i])) {
			fprintf(stderr, "byte %llu is %#x\n", (unsigned long long)(off + i), b[i]);
			fail();
		}
	free(b);
}

/* Reads: a hole and an allocated block never written read as zeros without I/O (one merged
 * ZERO op), initialized pages are read whole, and a read stops at the initialized part. */
static void test_dataplan_read_holes_and_uninitialized(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	uint64_t f = e->f;

	assert_int_equal(avfs_fs_fallocate(e->fs, f, 0, BS, false, 1), 0);	/* valid 0 */
	write_ok(e, f, 2 * BS, 6000);						/* block 1: hole */
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 0, 3 * BS, p), 0);
	check_read_plan(e, p);
	assert_int_equal(p->bytes, 2 * BS + 6000);
	assert_int_equal(p->n, 2);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_ZERO, .len = 2 * BS });
	expect_op(&p->ops[1], (struct avfs_dop){ .kind = AVFS_DOP_READ, .dev_off = blk(e, f, 2),
						.dev_len = 2 * PG, .buf_off = 2 * BS, .len = 6000 });
	/* a byte range inside a page: that page, the caller's bytes at skip */
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 2 * BS + 5000, 100, p), 0);
	assert_int_equal(p->n, 1);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_READ, .skip = 5000 - PG,
						.dev_off = blk(e, f, 2) + PG, .dev_len = PG,
						.len = 100 });
	/* the initialized part ends inside the range: read it, zeros after */
	write_ok(e, f, 3 * BS, 100);
	assert_int_equal(avfs_fsio_truncate(e->io, f, 4 * BS), 0);
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 3 * BS + 50, BS, p), 0);
	check_read_plan(e, p);
	assert_int_equal(p->n, 2);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_READ, .skip = 50,
						.dev_off = blk(e, f, 3), .dev_len = PG,
						.len = PG - 50 });
	expect_op(&p->ops[1], (struct avfs_dop){ .kind = AVFS_DOP_ZERO, .buf_off = PG - 50,
						.len = BS - PG });
	/* and the bytes: the poisoned device never shows */
	expect_bytes(e, f, 0, 2 * BS, true, 0);
	expect_bytes(e, f, 2 * BS, 6000, false, 2 * BS);
	expect_bytes(e, f, 2 * BS + 6000, BS - 6000, true, 0);
	expect_bytes(e, f, 3 * BS, 100, false, 3 * BS);
	expect_bytes(e, f, 3 * BS + 100, BS - 100, true, 0);
}

/* Reads are clamped at the size: a range across it returns the part before it, a range at or
 * past it (or empty) plans nothing, and a length that wraps around is clamped too. */
static void test_dataplan_read_clamped_at_eof(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	uint8_t b[8192];
	uint64_t f = e->f;

	write_ok(e, f, 0, 10000);
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 9000, 5000, p), 0);
	check_read_plan(e, p);
	assert_int_equal(p->bytes, 1000);
	assert_int_equal(p->n, 1);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_READ, .skip = 9000 - 2 * PG,
						.dev_off = blk(e, f, 0) + 2 * PG, .dev_len = PG,
						.len = 1000 });
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 100, UINT64_MAX, p), 0);
	check_read_plan(e, p);
	assert_int_equal(p->bytes, 9900);
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 10000, 1, p), 0);
	assert_int_equal(p->bytes, 0);
	assert_int_equal(p->n, 0);
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 1u << 30, 10, p), 0);
	assert_int_equal(p->n, 0);
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 0, 0, p), 0);
	assert_int_equal(p->n, 0);
	assert_int_equal(avfs_fs_plan_read(e->fs, AVFS_ROOT_INO, 0, 1, p), -EISDIR);
	assert_int_equal(avfs_fs_plan_read(e->fs, 999, 0, 1, p), -ENOENT);
	assert_int_equal(avfs_fs_plan_read(e->fs, 0, 0, 1, p), -EINVAL);
	assert_int_equal(avfs_fsio_read(e->io, f, 9000, b, sizeof(b)), 1000);
	assert_memory_equal(b, src(e, 0) + 9000, 1000);
}

/* Partial pages: whole pages go straight from the caller's buffer (no keep, no zeros: what
 * libavio's page-aligned ranges get); a byte range keeps the initialized bytes around it,
 * but never a page that was never initialized, nor bytes past the size. */
static void test_dataplan_write_partial_pages(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	uint64_t f = e->f, d;

	write_plan(e, f, 0, 3 * PG, p);
	d = blk(e, f, 0);
	assert_int_equal(p->n, 1);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .dev_off = d,
						.dev_len = 3 * PG, .len = 3 * PG });
	write_plan(e, f, 100, 100, p);
	assert_int_equal(p->n, 1);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = 100,
						.keep_head = 100, .keep_tail = PG - 200, .dev_off = d,
						.dev_len = PG, .len = 100 });
	write_plan(e, f, PG - 10, 20, p);	/* across a page boundary: both pages kept */
	assert_int_equal(p->n, 1);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = PG - 10,
						.keep_head = PG - 10, .keep_tail = PG - 10,
						.dev_off = d, .dev_len = 2 * PG, .len = 20 });
	write_plan(e, f, 3 * PG - 5, 10, p);	/* into a page never written: nothing kept there */
	assert_int_equal(p->n, 1);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = PG - 5,
						.keep_head = PG - 5, .dev_off = d + 2 * PG,
						.dev_len = 2 * PG, .len = 10 });
	assert_int_equal(size_of(e, f), 3 * PG + 5);
	/* the bytes, as the four writes left them */
	expect_bytes(e, f, 0, 100, false, 0);
	expect_bytes(e, f, 100, 100, false, 100);
	expect_bytes(e, f, 200, PG - 210, false, 0);
	expect_bytes(e, f, PG - 10, 20, false, PG - 10);
	expect_bytes(e, f, PG + 10, 2 * PG - 15, false, 0);
	expect_bytes(e, f, 3 * PG - 5, 10, false, 3 * PG - 5);
}

/* Pages never initialized between the initialized part of a block and the data become zeros
 * on the device (one ZEROS op), in a fresh block and in a preallocated one. */
static void test_dataplan_write_zero_fills_uninitialized(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	uint64_t f = e->f, g;

	g = mkfile(e, "g");
	write_plan(e, f, 5 * PG + 100, 100, p);
	assert_int_equal(p->n, 2);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
						.dev_off = blk(e, f, 0), .dev_len = 5 * PG,
						.len = 5 * PG });
	expect_op(&p->ops[1], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = 100,
						.dev_off = blk(e, f, 0) + 5 * PG, .dev_len = PG,
						.len = 100 });
	/* preallocated, inside the size: the zeros start at the initialized part's end */
	assert_int_equal(avfs_fs_fallocate(e->fs, g, 0, BS, false, 1), 0);
	write_ok(e, g, 0, 2 * PG);
	write_plan(e, g, 7 * PG, PG, p);
	assert_int_equal(p->n, 2);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
						.dev_off = blk(e, g, 0) + 2 * PG,
						.dev_len = 5 * PG, .len = 5 * PG });
	expect_op(&p->ops[1], (struct avfs_dop){ .kind = AVFS_DOP_WRITE,
						.dev_off = blk(e, g, 0) + 7 * PG, .dev_len = PG,
						.len = PG });
	env_remount(e);
	expect_bytes(e, f, 0, 5 * PG + 100, true, 0);
	expect_bytes(e, f, 5 * PG + 100, 100, false, 5 * PG + 100);
	expect_bytes(e, g, 0, 2 * PG, false, 0);
	expect_bytes(e, g, 2 * PG, 5 * PG, true, 0);
	expect_bytes(e, g, 7 * PG, PG, false, 7 * PG);
	expect_bytes(e, g, 8 * PG, BS - 8 * PG, true, 0);
}

/* A write past the size whose first page holds the old size: one op for that page, keeping
 * the old size's bytes and zeroing the stale ones up to the data (never two ops on a page). */
static void test_dataplan_write_past_eof_same_page(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	uint64_t f = e->f;

	write_ok(e, f, 0, 3000);
	assert_int_equal(avfs_fsio_truncate(e->io, f, 100), 0);	/* [100, 3000) stale on disk */
	write_plan(e, f, 1000, 100, p);
	assert_int_equal(p->n, 1);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = 1000,
						.keep_head = 100, .dev_off = blk(e, f, 0),
						.dev_len = PG, .len = 100 });
	assert_int_equal(size_of(e, f), 1100);
	/* a write that ends before the size keeps everything after it in the page */
	write_plan(e, f, 10, 10, p);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = 10,
						.keep_head = 10, .keep_tail = PG - 20,
						.dev_off = blk(e, f, 0), .dev_len = PG, .len = 10 });
	expect_bytes(e, f, 0, 10, false, 0);
	expect_bytes(e, f, 10, 10, false, 10);
	expect_bytes(e, f, 20, 80, false, 0);
	expect_bytes(e, f, 100, 900, true, 0);
	expect_bytes(e, f, 1000, 100, false, 1000);
}

/* A write past the size in a later page of the same block: the zeros run from the old size
 * (its page's bytes before it kept) to the data, in one op. In a later block: the old last
 * page is zeroed in its own block (avfs_fs_plan_zero_tail's op), the gap stays a hole. */
static void test_dataplan_write_past_eof_later_page(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p, t;
	uint64_t f = e->f, g;

	g = mkfile(e, "g");
	write_ok(e, f, 0, 3000);
	assert_int_equal(avfs_fsio_truncate(e->io, f, 100), 0);
	avfs_data_plan_init(&t);
	write_plan(e, f, 2 * PG + 10, 10, p);
	assert_int_equal(p->n, 2);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
						.skip = 100, .keep_head = 100,
						.dev_off = blk(e, f, 0), .dev_len = 2 * PG,
						.len = 2 * PG - 100 });
	expect_op(&p->ops[1], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = 10,
						.dev_off = blk(e, f, 0) + 2 * PG, .dev_len = PG,
						.len = 10 });
	/* a later block */
	write_ok(e, g, 0, 3000);
	assert_int_equal(avfs_fsio_truncate(e->io, g, 100), 0);
	assert_int_equal(avfs_fs_plan_zero_tail(e->fs, g, 100, &t), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.bytes, 0);
	expect_op(&t.ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
						.skip = 100, .keep_head = 100,
						.dev_off = blk(e, g, 0), .dev_len = PG,
						.len = PG - 100 });
	write_plan(e, g, 2 * BS + 10, 10, p);
	assert_int_equal(p->n, 2);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
						.skip = 100, .keep_head = 100,
						.dev_off = blk(e, g, 0), .dev_len = PG,
						.len = PG - 100 });
	expect_op(&p->ops[1], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = 10,
						.dev_off = blk(e, g, 2), .dev_len = PG, .len = 10 });
	assert_int_equal(blk(e, g, 1), 0);
	/* nothing to zero: a page-aligned size, a hole, a page never initialized */
	assert_int_equal(avfs_fs_plan_zero_tail(e->fs, g, PG, &t), 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(avfs_fs_plan_zero_tail(e->fs, g, BS + 5, &t), 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(avfs_fs_plan_zero_tail(e->fs, g, PG + 1, &t), 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(avfs_fs_plan_zero_tail(e->fs, AVFS_ROOT_INO, 1, &t), -EISDIR);
	avfs_data_plan_free(&t);
	env_remount(e);
	expect_bytes(e, f, 0, 100, false, 0);
	expect_bytes(e, f, 100, 2 * PG - 90, true, 0);
	expect_bytes(e, f, 2 * PG + 10, 10, false, 2 * PG + 10);
	expect_bytes(e, g, 0, 100, false, 0);
	expect_bytes(e, g, 100, 2 * BS - 90, true, 0);
	expect_bytes(e, g, 2 * BS + 10, 10, false, 2 * BS + 10);
}

/* A range over four blocks: one op per block at most plus the zero-fill of the first, each
 * inside its block, the caller's bytes in order; read back across the block boundaries. */
static void test_dataplan_multi_block(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	uint64_t f = e->f, off = BS / 2 + 7, end = 3 * BS + 9;

	write_plan(e, f, off, end - off, p);
	assert_int_equal(p->n, 5);
	expect_op(&p->ops[0], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .flags = AVFS_DOP_ZEROS,
						.dev_off = blk(e, f, 0), .dev_len = BS / 2,
						.len = BS / 2 });
	expect_op(&p->ops[1], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .skip = 7,
						.dev_off = blk(e, f, 0) + BS / 2, .dev_len = BS / 2,
						.len = BS / 2 - 7 });
	for (uint64_t k = 1; k <= 2; k++)
		expect_op(&p->ops[1 + k], (struct avfs_dop){ .kind = AVFS_DOP_WRITE,
							    .dev_off = blk(e, f, k), .dev_len = BS,
							    .buf_off = k * BS - off, .len = BS });
	expect_op(&p->ops[4], (struct avfs_dop){ .kind = AVFS_DOP_WRITE, .dev_off = blk(e, f, 3),
						.dev_len = PG, .buf_off = 3 * BS - off, .len = 9 });
	/* a read over the same blocks: one READ each (ZRR puts them in different zones) */
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 0, UINT64_MAX, p), 0);
	check_read_plan(e, p);
	assert_int_equal(p->n, 4);
	assert_int_equal(p->bytes, end);
	expect_bytes(e, f, 0, off, true, 0);
	expect_bytes(e, f, off, end - off, false, off);
}

/* Out of space part-way: the plan covers the blocks that could be allocated, the size grows
 * only to the prefix's end; with no block left, -ENOSPC and nothing changes. */
static void test_dataplan_short_write_enospc(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	struct avfs_statfs sf;
	uint64_t f, g;

	f = mkfile(e, "fill");
	g = mkfile(e, "g");
	write_ok(e, g, 0, 100);
	assert_int_equal(avfs_fsio_truncate(e->io, g, 50), 0);
	avfs_fs_statfs(e->fs, &sf);
	assert_int_equal(avfs_fs_fallocate(e->fs, f, 0, (sf.bfree - 2) * BS, false, 1), 0);
	write_plan(e, g, 100, 5 * BS, p);	/* block 0 is g's, and two more are free */
	assert_int_equal(p->bytes, 3 * BS - 100);
	assert_int_equal(size_of(e, g), 3 * BS);
	expect_bytes(e, g, 0, 50, false, 0);
	expect_bytes(e, g, 50, 50, true, 0);
	expect_bytes(e, g, 100, 3 * BS - 100, false, 100);
	assert_int_equal(avfs_fsio_sync(e->io), 0);
	/* the tail zeroing of a write past the size is not planned when no block fits */
	assert_int_equal(avfs_fsio_truncate(e->io, g, 3 * BS - 10), 0);
	assert_int_equal(avfs_fs_plan_write(e->fs, g, 4 * BS, 10, 6, p), -ENOSPC);
	assert_int_equal(p->n, 0);
	assert_int_equal(p->bytes, 0);
	assert_int_equal(size_of(e, g), 3 * BS - 10);
	assert_int_equal(avfs_fsio_write(e->io, g, 4 * BS, e->pat, 10), -ENOSPC);
}

/* Bad arguments: a directory, a freed inode, a range past the largest file, read-only. */
static void test_dataplan_bad_arguments(void **state)
{
	struct env *e = *state;
	struct avfs_data_plan *p = &e->p;
	uint64_t f = e->f;
	char why[256];

	assert_int_equal(avfs_fs_plan_write(e->fs, AVFS_ROOT_INO, 0, 1, 1, p), -EISDIR);
	assert_int_equal(avfs_fs_plan_write(e->fs, 999, 0, 1, 1, p), -ENOENT);
	assert_int_equal(avfs_fs_plan_write(e->fs, f, UINT64_MAX - 5, 10, 1, p), -EFBIG);
	assert_int_equal(avfs_fs_plan_write(e->fs, f, (uint64_t)INT64_MAX, 1, 1, p), -EFBIG);
	assert_int_equal(avfs_fs_plan_write(e->fs, f, 0, 0, 1, p), 0);
	assert_int_equal(p->n, 0);
	assert_int_equal(size_of(e, f), 0);
	/* read-only: reads plan, writes and tail zeroing do not */
	write_ok(e, f, 0, 100);
	assert_int_equal(avfs_fsio_unmount(e->io), 0);
	assert_int_equal(avfs_fsio_mount(e->d, AVFS_MOUNT_RDONLY, &e->io, NULL, why, sizeof(why)),
			 0);
	e->fs = e->io->fs;
	assert_int_equal(avfs_fs_plan_write(e->fs, f, 0, 1, 1, p), -EROFS);
	assert_int_equal(avfs_fs_plan_zero_tail(e->fs, f, 100, p), -EROFS);
	assert_int_equal(avfs_fs_plan_read(e->fs, f, 0, 1000, p), 0);
	assert_int_equal(p->bytes, 100);
	env_remount(e);
}

/* Random writes (byte ranges and whole pages, within, across and past the size), truncates
 * both ways, preallocation and remounts on two files, each read compared with a model of
 * the file: every plan has its shape, and not one byte of the poisoned device shows. */
static void test_dataplan_random_against_model(void **state)
{
	enum { MAX = 12 * BS };
	struct env *e = *state;
	uint8_t *m[2], *b = malloc(MAX);
	uint64_t ino[2], size[2] = { 0, 0 }, x = 77;
	struct avfs_data_plan *p = &e->p;

	ino[0] = mkfile(e, "a");
	ino[1] = mkfile(e, "b");
	m[0] = calloc(1, MAX);
	m[1] = calloc(1, MAX);
	for (int i = 0; i < 1500; i++) {
		int f, op;
		uint64_t off, len;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		f = (int)(x >> 60 & 1);
		op = (int)(x >> 56 & 7);
		off = (x >> 20) % (size[f] + 2 * BS + 1);
		len = 1 + (x >> 4) % (2 * BS);
		if (x >> 61 & 1) {	/* libavio: whole pages */
			off = off / PG * PG;
			len = (len + PG - 1) / PG * PG;
		}
		if (off + len > MAX)
			continue;
		if (op < 4) {
			write_plan(e, ino[f], off, len, p);
			assert_int_equal(p->bytes, len);
			memcpy(m[f] + off, src(e, off), len);
			size[f] = off + len > size[f] ? off + len : size[f];
		} else if (op == 4) {
			if (off < size[f])
				memset(m[f] + off, 0, size[f] - off);
			assert_int_equal(avfs_fsio_truncate(e->io, ino[f], off), 0);
			size[f] = off;
		} else if (op == 5) {
			bool keep = x >> 3 & 1;

			assert_int_equal(avfs_fsio_fallocate(e->io, ino[f], off, len, keep), 0);
			if (!keep && off + len > size[f])
				size[f] = off + len;
		} else {
			uint64_t want = off >= size[f] ? 0 : off + len > size[f] ? size[f] - off : len;

			assert_int_equal(avfs_fs_plan_read(e->fs, ino[f], off, len, p), 0);
			check_read_plan(e, p);
			assert_int_equal(p->bytes, want);
			assert_int_equal(avfs_fsio_run_data(e->io, p, b, NULL), 0);
			assert_memory_equal(b, m[f] + off, want);
		}
		assert_int_equal(size_of(e, ino[f]), size[f]);
		assert_int_equal(avfs_fsio_maybe_commit(e->io), 0);
		if (i % 250 == 249) {
			env_remount(e);
			for (f = 0; f < 2; f++) {
				assert_int_equal(avfs_fsio_read(e->io, ino[f], 0, b, MAX),
						 (int64_t)size[f]);
				assert_memory_equal(b, m[f], size[f]);
			}
		}
	}
	free(m[0]);
	free(m[1]);
	free(b);
}

#define TEST(fn) cmocka_unit_test_setup_teardown(fn, env_setup, env_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_dataplan_bad_arguments),
		TEST(test_dataplan_multi_block),
		TEST(test_dataplan_random_against_model),
		TEST(test_dataplan_read_clamped_at_eof),
		TEST(test_dataplan_read_holes_and_uninitialized),
		TEST(test_dataplan_short_write_enospc),
		TEST(test_dataplan_write_partial_pages),
		TEST(test_dataplan_write_past_eof_later_page),
		TEST(test_dataplan_write_past_eof_same_page),
		TEST(test_dataplan_write_zero_fills_uninitialized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
