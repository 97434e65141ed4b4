/*
 * test_small.c — small files (fs/small.c) through the synchronous driver on a RAM disk: many
 * files share data blocks; extents grow in place, move, and promote to whole blocks with
 * their bytes; freed units wait for their commit; truncate, unlink, rename over; a format 2
 * image rises to 3 with its first small file; fsck finds double use, leaks and extents out
 * of range, and -y repairs them.
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
#include "fsck.h"
#include "fsck_clean.h"
#include "fsio.h"
#include "memdisk.h"
#include "superver.h"

#define IMG (128ull << 20)
#define BS (1ull << 20)		/* 1 MiB blocks: small files up to 256 KiB */
#define PG 4096u

struct fx {
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_fs *fs;
};

static void fx_mount(struct fx *f, unsigned flags)
{
	char why[256];

	assert_int_equal(avfs_fsio_mount(f->d, flags, &f->io, NULL, why, sizeof(why)), 0);
	f->fs = f->io->fs;
}

static void fx_init(struct fx *f)
{
	struct avfs_mkfs_opts o = { .block_shift = 20, .zones = 4, .seed = 3 };
	struct avfs_super sb;
	char why[256];

	assert_int_equal(avfs_memdisk_open(IMG, 512, &f->d), 0);
	assert_int_equal(avfs_fsio_mkfs(f->d, &o, &sb, why, sizeof(why)), 0);
	fx_mount(f, 0);
}

static void fx_remount(struct fx *f)
{
	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	fx_mount(f, 0);
}

static void fx_done(struct fx *f)
{
	assert_int_equal(f->fs->overruns, 0);	/* every credit estimate held */
	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	avfs_disk_close(f->d);
}

static uint64_t mk(struct fx *f, const char *name)
{
	uint64_t ino;

	assert_int_equal(avfs_fs_mknod(f->fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 1, &ino), 0);
	return ino;
}

static uint8_t pat(uint64_t i, uint8_t seed)
{
	return (uint8_t)(i * 131 + (i >> 12) * 7 + seed) | 1;
}

static void put(struct fx *f, uint64_t ino, uint64_t off, uint64_t len, uint8_t seed)
{
	uint8_t *b = malloc(len);

	for (uint64_t i = 0; i < len; i++)
		b[i] = pat(off + i, seed);
	assert_int_equal(avfs_fsio_write(f->io, ino, off, b, len), (int64_t)len);
	free(b);
}

/* The file reads [0, len) of the pattern seed, and is len long. */
static void check(struct fx *f, uint64_t ino, uint64_t len, uint8_t seed)
{
	uint8_t *b = malloc(len + 1);
	struct avfs_stat st;

	assert_int_equal(avfs_fs_getattr(f->fs, ino, &st), 0);
	assert_int_equal(st.size, len);
	assert_int_equal(avfs_fsio_read(f->io, ino, 0, b, len + 1), (int64_t)len);
	for (uint64_t i = 0; i < len; i++)
		if (b[i] != pat(i, seed))
			fail_msg("inode %llu byte %llu is %#x, not %#x", (unsigned long long)ino,
				 (unsigned long long)i, b[i], pat(i, seed));
	free(b);
}

static struct avfs_dinode *dino(struct fx *f, uint64_t ino)
{
	return fs_ino_raw(f->fs, ino);
}

static uint64_t data_used(struct fx *f)
{
	struct avfs_statfs st;

	avfs_fs_statfs(f->fs, &st);
	return st.blocks - st.bfree;
}

static uint64_t units_used(struct fx *f)
{
	struct avfs_statfs st;

	avfs_fs_statfs(f->fs, &st);
	return st.units - st.ufree;
}

/* 300 files of 1..64 KiB (a fixed seed) share a few blocks instead of taking 300; they read
 * back after a remount, df's units count what they hold, and fsck is clean. */
static void test_small_pack(void **state)
{
	struct fx f;
	uint64_t ino[300], len[300], x = 7, want = 0;
	char name[16];

	(void)state;
	fx_init(&f);
	assert_int_equal(data_used(&f), 0);
	for (int i = 0; i < 300; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		len[i] = 1 + (x >> 33) % (64u << 10);
		want += (len[i] + PG - 1) / PG;
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = mk(&f, name);
		put(&f, ino[i], 0, len[i], (uint8_t)i);
		assert_int_equal(dino(&f, ino[i])->small_units, (len[i] + PG - 1) / PG);
	}
	/* ~9.8 MiB of data in 1 MiB blocks: 10 or 11 blocks, every unit counted */
	assert_true(data_used(&f) <= (want * PG + BS - 1) / BS + 1);
	assert_int_equal(units_used(&f), want);
	assert_int_equal(avfs_fs_super(f.fs)->version, AVFS_FORMAT_VERSION_SMALL);
	fx_remount(&f);
	assert_int_equal(units_used(&f), want);
	for (int i = 0; i < 300; i++)
		check(&f, ino[i], len[i], (uint8_t)i);
	assert_fsck_clean(f.fs);
	/* all gone: every block back */
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(avfs_fs_unlink(f.fs, AVFS_ROOT_INO, name, 1), 0);
	}
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	assert_int_equal(data_used(&f), 0);
	assert_int_equal(f.fs->npools, 0);
	assert_fsck_clean(f.fs);
	fx_done(&f);
}

/* An extent grows in place while the units after it are free, moves when a neighbour holds
 * them, and past the limit the file takes whole blocks: its bytes follow every step, through
 * a remount, and the units it left are free again. */
static void test_small_grow_move_promote(void **state)
{
	struct fx f;
	uint64_t a, b;
	uint32_t u0;

	(void)state;
	fx_init(&f);
	a = mk(&f, "a");
	put(&f, a, 0, 5000, 1);
	assert_int_equal(dino(&f, a)->small_units, 2);
	u0 = dino(&f, a)->small_unit;
	put(&f, a, 5000, 5000, 1);	/* the next unit is free: in place */
	assert_int_equal(dino(&f, a)->small_units, 3);
	assert_int_equal(dino(&f, a)->small_unit, u0);
	check(&f, a, 10000, 1);
	b = mk(&f, "b");		/* b takes the units right after a */
	put(&f, b, 0, 3 * PG, 2);
	assert_int_equal(dino(&f, b)->small_unit, u0 + 3);
	put(&f, a, 10000, 20000, 1);	/* a moves */
	assert_int_equal(dino(&f, a)->small_units, 8);
	assert_true(dino(&f, a)->small_unit != u0);
	check(&f, a, 30000, 1);
	check(&f, b, 3 * PG, 2);
	assert_int_equal(units_used(&f), 8 + 3);
	fx_remount(&f);
	check(&f, a, 30000, 1);
	assert_fsck_clean(f.fs);
	/* past 256 KiB: a whole block, ZRR's; its first pages copied */
	put(&f, a, 30000, 300000, 1);
	assert_int_equal(dino(&f, a)->small_units, 0);
	assert_int_equal(dino(&f, a)->nblocks, 1);
	check(&f, a, 330000, 1);
	put(&f, a, 3 * BS, 100, 1);	/* and more blocks, as any file */
	assert_int_equal(dino(&f, a)->nblocks, 2);
	fx_remount(&f);
	check(&f, b, 3 * PG, 2);
	assert_int_equal(units_used(&f), 3 + 2 * BS / PG);
	assert_fsck_clean(f.fs);
	fx_done(&f);
}

/* A first write that fills the whole limit (256 KiB here; 1 MiB with 4 MiB blocks: a writer
 * of 1 MiB requests, the FUSE maximum) takes a whole block at once, so that its next write
 * plans no copy of what it wrote; one below the limit is still small. */
static void test_small_first_write_at_limit(void **state)
{
	const uint64_t lim = BS / 4;
	struct avfs_data_plan p;
	struct fx f;
	uint64_t a, b;

	(void)state;
	fx_init(&f);
	a = mk(&f, "a");
	put(&f, a, 0, lim, 4);
	assert_int_equal(dino(&f, a)->small_units, 0);
	assert_int_equal(dino(&f, a)->nblocks, 1);
	avfs_data_plan_init(&p);
	assert_int_equal(avfs_fs_plan_write(f.fs, a, lim, lim, 1, &p), 0);
	for (size_t i = 0; i < p.n; i++)
		assert_int_equal(p.ops[i].src_off, 0);	/* nothing moves */
	avfs_data_plan_free(&p);
	b = mk(&f, "b");
	put(&f, b, 0, lim - PG, 5);
	assert_int_equal(dino(&f, b)->small_units, lim / PG - 1);
	fx_remount(&f);
	check(&f, b, lim - PG, 5);
	assert_fsck_clean(f.fs);
	fx_done(&f);
}

/* A small file written past its size after a truncate: the bytes the truncate cut read as
 * zeros, also when the write moves the file (the copy keeps only what the size held). */
static void test_small_truncate(void **state)
{
	struct fx f;
	uint64_t a, b;
	uint8_t buf[3 * PG];
	struct avfs_stat st;

	(void)state;
	fx_init(&f);
	a = mk(&f, "a");
	b = mk(&f, "b");
	put(&f, a, 0, 6000, 1);
	put(&f, b, 0, 100, 2);		/* right after a: a's growth moves it */
	assert_int_equal(avfs_fsio_truncate(f.io, a, 100), 0);
	put(&f, a, 2 * PG + 10, 10, 1);
	assert_int_equal(avfs_fsio_read(f.io, a, 0, buf, sizeof(buf)), 2 * PG + 20);
	for (uint64_t i = 0; i < 2 * PG + 20; i++)
		assert_int_equal(buf[i], i < 100 || i >= 2 * PG + 10 ? pat(i, 1) : 0);
	/* truncate up moves it to a whole block (only a plan can copy it): zeros past 100 */
	assert_int_equal(avfs_fsio_truncate(f.io, a, 50), 0);
	assert_int_equal(avfs_fsio_truncate(f.io, a, 3 * PG), 0);
	assert_int_equal(dino(&f, a)->small_units, 0);
	assert_int_equal(avfs_fsio_read(f.io, a, 0, buf, sizeof(buf)), 3 * PG);
	for (uint64_t i = 0; i < 3 * PG; i++)
		assert_int_equal(buf[i], i < 50 ? pat(i, 1) : 0);
	/* to zero: the extent goes; a preallocation past a small file's extent moves it */
	assert_int_equal(avfs_fsio_truncate(f.io, b, 0), 0);
	assert_int_equal(dino(&f, b)->small_units, 0);
	put(&f, b, 0, 100, 2);
	assert_int_equal(dino(&f, b)->small_units, 1);
	assert_int_equal(avfs_fsio_fallocate(f.io, b, 0, BS, true), 0);
	assert_int_equal(dino(&f, b)->small_units, 0);
	assert_int_equal(avfs_fs_getattr(f.fs, b, &st), 0);
	assert_int_equal(st.size, 100);
	check(&f, b, 100, 2);
	assert_int_equal(avfs_fs_fallocate(f.fs, b, 0, 1, true, 1), 0);
	fx_remount(&f);
	check(&f, b, 100, 2);
	assert_fsck_clean(f.fs);
	fx_done(&f);
}

/* Units freed by unlink or rename over are not reused before their transaction is on disk
 * (a crash would show the new owner's bytes in the old file); after it they are. */
static void test_small_free_waits_commit(void **state)
{
	struct fx f;
	uint64_t a, b, c, d;
	uint32_t ua, ub;

	(void)state;
	fx_init(&f);
	a = mk(&f, "a");
	put(&f, a, 0, 8 * PG, 1);
	d = mk(&f, "d");
	put(&f, d, 0, PG, 4);		/* keeps the pool block alive */
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	ua = dino(&f, a)->small_unit;
	assert_int_equal(avfs_fs_unlink(f.fs, AVFS_ROOT_INO, "a", 1), 0);
	b = mk(&f, "b");
	put(&f, b, 0, 8 * PG, 2);
	ub = dino(&f, b)->small_unit;
	assert_true(ub >= ua + 8 || ub + 8 <= ua);	/* not a's units: not yet */
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	c = mk(&f, "c");
	put(&f, c, 0, 8 * PG, 3);
	assert_int_equal(avfs_fs_rename(f.fs, AVFS_ROOT_INO, "c", AVFS_ROOT_INO, "b", 0, 2), 0);
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	check(&f, c, 8 * PG, 3);
	check(&f, d, PG, 4);
	assert_int_equal(units_used(&f), 8 + 1);
	fx_remount(&f);
	check(&f, c, 8 * PG, 3);
	assert_fsck_clean(f.fs);
	fx_done(&f);
}

static void set_version(struct fx *f, uint32_t v)
{
	superver_set(f->d, IMG, v);
}

/* A format 2 image reads and stays 2 until its first small file, which raises it to 3 in the
 * same transaction; -o nosmall makes none; a newer format is refused. */
static void test_small_format_upgrade(void **state)
{
	struct fx f;
	uint64_t a, b;
	char why[256];
	struct avfs_fsio *io;

	(void)state;
	fx_init(&f);
	assert_int_equal(avfs_fsio_unmount(f.io), 0);
	set_version(&f, 2);
	fx_mount(&f, AVFS_MOUNT_NOSMALL);
	a = mk(&f, "a");
	put(&f, a, 0, 100, 1);		/* a whole block */
	assert_int_equal(dino(&f, a)->small_units, 0);
	fx_remount(&f);
	assert_int_equal(avfs_fs_super(f.fs)->version, 2);
	b = mk(&f, "b");
	put(&f, b, 0, 100, 2);
	assert_int_equal(avfs_fs_super(f.fs)->version, 3);
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	avfs_fsio_abandon(f.io);	/* a crash right after the commit */
	fx_mount(&f, 0);
	assert_int_equal(avfs_fs_super(f.fs)->version, 3);
	check(&f, a, 100, 1);
	check(&f, b, 100, 2);
	assert_fsck_clean(f.fs);
	assert_int_equal(avfs_fsio_unmount(f.io), 0);
	set_version(&f, AVFS_FORMAT_VERSION + 1);
	assert_int_equal(avfs_fsio_mount(f.d, 0, &io, NULL, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "this build reads 1 to 3"));
	set_version(&f, 3);
	fx_mount(&f, 0);
	fx_done(&f);
}

/* A write that wants whole blocks (a stream's, p.whole) makes no small file and moves a small
 * one to a whole block at once, its bytes with it. */
static void test_small_whole_for_streams(void **state)
{
	struct fx f;
	struct avfs_data_plan p;
	uint64_t a = 0, b = 0;
	uint8_t buf[PG];

	(void)state;
	fx_init(&f);
	a = mk(&f, "a");
	b = mk(&f, "b");
	put(&f, b, 0, 3000, 2);
	assert_int_equal(dino(&f, b)->small_units, 1);
	memset(buf, 7, sizeof(buf));
	avfs_data_plan_init(&p);
	p.whole = true;
	assert_int_equal(avfs_fs_plan_write(f.fs, a, 0, PG, 1, &p), 0);
	assert_int_equal(avfs_fsio_run_data(f.io, &p, NULL, buf), 0);
	assert_int_equal(dino(&f, a)->small_units, 0);
	assert_int_equal(dino(&f, a)->nblocks, 1);
	for (uint64_t i = 0; i < sizeof(buf); i++)
		buf[i] = pat(3000 + i, 2);
	assert_int_equal(avfs_fs_plan_write(f.fs, b, 3000, 1000, 1, &p), 0);
	assert_int_equal(avfs_fsio_run_data(f.io, &p, NULL, buf), 0);
	assert_int_equal(dino(&f, b)->small_units, 0);
	avfs_data_plan_free(&p);
	fx_remount(&f);
	check(&f, b, 4000, 2);
	assert_int_equal(units_used(&f), 2 * BS / PG);
	assert_fsck_clean(f.fs);
	fx_done(&f);
}

/* ---- fsck ---- */

static uint64_t fsck_errors(struct fx *f, bool repair)
{
	struct avfs_fsck_report rep;
	uint64_t n;

	assert_int_equal(avfs_fsck_check(f->fs, repair ? AVFS_FSCK_REPAIR : 0, &rep), 0);
	for (size_t i = 0; i < rep.nfindings; i++)
		fprintf(stderr, "  fsck%s: %s\n", repair ? " -y" : "", rep.findings[i]);
	n = rep.errors;
	avfs_fsck_report_free(&rep);
	if (repair)
		assert_int_equal(avfs_fsio_sync(f->io), 0);
	return n;
}

/* Damage, then: fsck -n finds it, -y repairs it, and the next check is clean. */
static void expect_repair(struct fx *f)
{
	assert_true(fsck_errors(f, false) > 0);
	assert_true(fsck_errors(f, true) > 0);
	fx_remount(f);
	assert_int_equal(fsck_errors(f, false), 0);
}

static void damage_ino(struct fx *f, uint64_t ino)
{
	fs_ino_dirty(f->fs, ino);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	fx_remount(f);
}

static struct avfs_sblock *pool_of(struct fx *f, uint64_t ino)
{
	const struct avfs_dinode *di = dino(f, ino);

	for (size_t i = 0; i < f->fs->npools; i++)
		if (f->fs->pools[i].block == di->direct[0].block - 1)
			return (struct avfs_sblock *)f->fs->blocks[f->fs->pools[i].m];
	fail_msg("no pool for inode %llu", (unsigned long long)ino);
	return NULL;
}

/* Two files on the same units, units no file holds, an extent past its block, a whole-block
 * pointer into a small-file block: each found, and repaired so that the rest stays. */
static void test_small_fsck(void **state)
{
	struct fx f;
	uint64_t a, b, c;
	struct avfs_sblock *sb;

	(void)state;
	fx_init(&f);
	a = mk(&f, "a");
	b = mk(&f, "b");
	c = mk(&f, "c");
	put(&f, a, 0, 2 * PG, 1);
	put(&f, b, 0, 2 * PG, 2);
	put(&f, c, 0, 3 * BS, 3);	/* whole blocks */
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	assert_int_equal(fsck_errors(&f, false), 0);

	/* double use: b on a's units */
	dino(&f, b)->small_unit = dino(&f, a)->small_unit;
	damage_ino(&f, b);
	expect_repair(&f);
	check(&f, a, 2 * PG, 1);
	assert_int_equal(dino(&f, b)->small_units, 0);	/* b's data dropped (zeros) */

	/* a leak: units marked that no file holds */
	sb = pool_of(&f, a);
	sb->map[100 / 8] |= 1u << (100 % 8);
	sb->used++;
	fs_dirty(f.fs, sb->hdr.blockno);
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	fx_remount(&f);
	expect_repair(&f);
	check(&f, a, 2 * PG, 1);

	/* out of range: an extent past the block's units */
	dino(&f, a)->small_unit = (uint16_t)(BS / PG - 1);
	damage_ino(&f, a);
	expect_repair(&f);
	assert_int_equal(dino(&f, a)->small_units, 0);

	/* a whole-block pointer into a small-file block */
	assert_int_equal(avfs_fsio_truncate(f.io, a, 0), 0);
	put(&f, a, 0, PG, 5);
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	dino(&f, c)->direct[1].block = dino(&f, a)->direct[0].block;
	damage_ino(&f, c);
	expect_repair(&f);
	check(&f, a, PG, 5);
	assert_int_equal(dino(&f, c)->direct[1].block, 0);
	fx_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_format_upgrade),
		cmocka_unit_test(test_small_free_waits_commit),
		cmocka_unit_test(test_small_fsck),
		cmocka_unit_test(test_small_grow_move_promote),
		cmocka_unit_test(test_small_pack),
		cmocka_unit_test(test_small_truncate),
		cmocka_unit_test(test_small_whole_for_streams),
		cmocka_unit_test(test_small_first_write_at_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
