/*
 * test_space.c — per-directory quotas and retention in the core (fs/space.c) on a RAM disk:
 * the rule attributes' parser, a subtree's usage, the blocks a write would allocate, victims
 * oldest first (never protected, open or multiply linked files), EDQUOT, marks of the file
 * system, rules found again after a remount and dropped with their directory.
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
#include "space.h"

#define IMG (64u << 20)
#define BS (64u << 10)	/* data blocks of 64 KiB */

struct fx {
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_fs *fs;
	struct avfs_space *sp;
};

static void fx_mount(struct fx *f)
{
	char why[256];

	assert_int_equal(avfs_fsio_mount(f->d, 0, &f->io, NULL, why, sizeof(why)), 0);
	f->fs = f->io->fs;
}

static void fx_init(struct fx *f)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .seed = 7, .inodes = 512 };
	char why[256];

	memset(f, 0, sizeof(*f));
	assert_int_equal(avfs_memdisk_open(IMG, 512, &f->d), 0);
	assert_int_equal(avfs_fsio_mkfs(f->d, &o, NULL, why, sizeof(why)), 0);
	fx_mount(f);
}

static void fx_done(struct fx *f)
{
	avfs_space_free(f->sp);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_fsck_clean(f->fs);
	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	avfs_disk_close(f->d);
}

static uint64_t mkdir_(struct fx *f, uint64_t dir, const char *name)
{
	uint64_t ino;

	assert_int_equal(avfs_fs_mkdir(f->fs, dir, name, S_IFDIR | 0755, 0, 0, 1, &ino), 0);
	return ino;
}

/* a file of `blocks` data blocks with mtime t (s) */
static uint64_t file(struct fx *f, uint64_t dir, const char *name, unsigned blocks, int64_t t)
{
	static uint8_t buf[BS];
	struct avfs_stat st = { .mtime_ns = t * 1000000000ll };
	uint64_t ino;

	assert_int_equal(avfs_fs_mknod(f->fs, dir, name, S_IFREG | 0644, 0, 0, 1, &ino), 0);
	for (unsigned i = 0; i < blocks; i++)
		assert_int_equal(avfs_fsio_write(f->io, ino, (uint64_t)i * BS, buf, BS), BS);
	assert_int_equal(avfs_fs_setattr(f->fs, ino, AVFS_SET_MTIME, &st, 1), 0);
	assert_int_equal(avfs_fsio_maybe_commit(f->io), 0);
	return ino;
}

static void rule(struct fx *f, uint64_t dir, const char *name, const char *v)
{
	assert_int_equal(avfs_fs_setxattr(f->fs, dir, name, v, strlen(v), 0, 1), 0);
}

/* The victims' names, space apart, in the plan's order. */
static const char *names(const struct avfs_space_plan *p)
{
	static char s[1024];

	s[0] = 0;
	for (size_t i = 0; i < p->n; i++)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%s", i ? " " : "", p->v[i].path);
	return s;
}

static void test_space_parse(void **state)
{
	struct avfs_space_rule r = { 0 };
	char why[128];

	(void)state;
	assert_int_equal(avfs_space_parse(AVFS_SPACE_QUOTA, "10G", 3, &r, why, sizeof(why)), 0);
	assert_int_equal(r.quota, 10ull << 30);
	assert_int_equal(avfs_space_parse(AVFS_SPACE_QUOTA, "4096", 4, &r, NULL, 0), 0);
	assert_int_equal(r.quota, 4096);
	assert_int_equal(avfs_space_parse(AVFS_SPACE_RETAIN, "90 80", 5, &r, NULL, 0), 0);
	assert_int_equal(r.high, 90);
	assert_int_equal(r.low, 80);
	assert_int_equal(avfs_space_parse(AVFS_SPACE_RETAIN, "90% 80%", 7, &r, NULL, 0), 0);
	assert_int_equal(avfs_space_parse("user.x", "1", 1, &r, NULL, 0), 1);
	/* malformed: each refused with a reason */
	static const struct {
		const char *name, *v;
	} bad[] = {
		{ AVFS_SPACE_QUOTA, "0" }, { AVFS_SPACE_QUOTA, "-5" }, { AVFS_SPACE_QUOTA, "10X" },
		{ AVFS_SPACE_QUOTA, "" }, { AVFS_SPACE_RETAIN, "80 90" },
		{ AVFS_SPACE_RETAIN, "90 90" }, { AVFS_SPACE_RETAIN, "90" },
		{ AVFS_SPACE_RETAIN, "101 50" }, { AVFS_SPACE_RETAIN, "90 0" },
		{ AVFS_SPACE_RETAIN, "90 80 70" }, { AVFS_SPACE_RETAIN, "ninety eighty" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		assert_int_equal(avfs_space_parse(bad[i].name, bad[i].v, strlen(bad[i].v), &r, why,
						  sizeof(why)), -EINVAL);
		assert_true(why[0]);
	}
	assert_int_equal(avfs_space_parse(AVFS_SPACE_QUOTA, "1\0" "0", 3, &r, NULL, 0), -EINVAL);
}

static void test_space_usage_need(void **state)
{
	struct fx f;
	uint64_t cam, day, a, u;

	(void)state;
	fx_init(&f);
	cam = mkdir_(&f, AVFS_ROOT_INO, "cam");
	day = mkdir_(&f, cam, "day");
	a = file(&f, cam, "a", 2, 10);
	file(&f, day, "b", 3, 11);
	file(&f, AVFS_ROOT_INO, "outside", 1, 12);
	assert_int_equal(avfs_space_usage(f.fs, cam, &u), 0);
	assert_int_equal(u, 5 * BS);	/* the subtree: a and day/b */
	assert_int_equal(avfs_space_usage(f.fs, day, &u), 0);
	assert_int_equal(u, 3 * BS);
	assert_int_equal(avfs_space_usage(f.fs, a, &u), -ENOTDIR);
	/* a write inside the mapped blocks allocates nothing; past them, its blocks */
	assert_int_equal(avfs_space_need(f.fs, a, 0, 2 * BS), 0);
	assert_int_equal(avfs_space_need(f.fs, a, BS + 5, 100), 0);
	assert_int_equal(avfs_space_need(f.fs, a, 2 * BS, 1), BS);
	assert_int_equal(avfs_space_need(f.fs, a, BS, 3 * BS), 2 * BS);
	assert_int_equal(avfs_space_need(f.fs, a, 10 * BS, BS), BS);
	fx_done(&f);
}

/* A retained directory with a quota: past its high mark, the oldest go down to the low one;
 * protected, open and multiply linked files stay. */
static void test_space_retain_quota(void **state)
{
	struct avfs_space_plan p = { 0 };
	struct fx f;
	uint64_t cam, day, prot, open, linked, cur;
	char name[16];

	(void)state;
	fx_init(&f);
	cam = mkdir_(&f, AVFS_ROOT_INO, "cam");
	day = mkdir_(&f, cam, "day");
	prot = file(&f, cam, "s00", 1, 100);	/* the oldest, protected */
	rule(&f, prot, AVFS_SPACE_PROTECTED, "1");
	open = file(&f, cam, "s01", 1, 101);	/* open: deleting it would free nothing yet */
	assert_int_equal(avfs_fs_open_ref(f.fs, open), 0);
	linked = file(&f, cam, "s02", 1, 102);	/* linked elsewhere too */
	assert_int_equal(avfs_fs_link(f.fs, linked, AVFS_ROOT_INO, "keep", 1), 0);
	for (int i = 3; i < 10; i++) {
		snprintf(name, sizeof(name), "s%02d", i);
		file(&f, i % 2 ? day : cam, name, 1, 100 + i);
	}
	/* 10 blocks used of a 10-block quota; retention at 90 %, down to 50 % */
	snprintf(name, sizeof(name), "%u", 10 * BS);
	rule(&f, cam, AVFS_SPACE_QUOTA, name);
	rule(&f, cam, AVFS_SPACE_RETAIN, "90 50");
	assert_int_equal(avfs_space_new(f.fs, &f.sp), 0);
	assert_int_equal(avfs_space_rules(f.sp), 1);
	/* the way up, found by the walk at avfs_space_new (a second link: the last name seen) */
	assert_int_equal(avfs_space_parent(f.sp, prot), cam);
	assert_true(avfs_space_parent(f.sp, linked) == cam ||
		    avfs_space_parent(f.sp, linked) == AVFS_ROOT_INO);
	assert_int_equal(avfs_space_parent(f.sp, 999999), 0);
	cur = file(&f, cam, "s10", 0, 200);	/* the recorder's next segment */
	assert_int_equal(avfs_space_parent(f.sp, cur), 0);	/* not seen yet */
	assert_int_equal(avfs_space_note(f.sp, cur, cam), 0);
	assert_int_equal(avfs_space_parent(f.sp, cur), cam);
	/* + 1 block: 11 > 9, down to 5: 6 blocks go, the oldest deletable ones */
	assert_int_equal(avfs_space_plan(f.sp, cur, BS, &p), 0);
	assert_string_equal(names(&p), "day/s03 s04 day/s05 s06 day/s07 s08");
	for (size_t i = 0; i < p.n; i++)
		assert_int_equal(avfs_fs_unlink(f.fs, p.v[i].dir, p.v[i].name, 2), 0);
	avfs_space_plan_free(&p);
	/* under the high mark now: nothing more goes */
	assert_int_equal(avfs_space_plan(f.sp, cur, BS, &p), 0);
	assert_int_equal(p.n, 0);
	/* the periodic check (no file) sees the same */
	assert_int_equal(avfs_space_plan(f.sp, 0, 0, &p), 0);
	assert_int_equal(p.n, 0);
	/* a file not below the rule is none of its business */
	cur = file(&f, AVFS_ROOT_INO, "outside", 0, 300);
	assert_int_equal(avfs_space_note(f.sp, cur, AVFS_ROOT_INO), 0);
	assert_int_equal(avfs_space_plan(f.sp, cur, 100 * BS, &p), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(avfs_fs_open_unref(f.fs, open), 0);
	fx_done(&f);
}

/* A quota without retention: EDQUOT past it, and nothing deleted. */
static void test_space_edquot(void **state)
{
	struct avfs_space_plan p = { 0 };
	struct fx f;
	uint64_t d, a, b;
	char q[32];

	(void)state;
	fx_init(&f);
	d = mkdir_(&f, AVFS_ROOT_INO, "d");
	a = file(&f, d, "a", 3, 5);
	snprintf(q, sizeof(q), "%u", 4 * BS);
	rule(&f, d, AVFS_SPACE_QUOTA, q);
	assert_int_equal(avfs_space_new(f.fs, &f.sp), 0);
	assert_int_equal(avfs_space_plan(f.sp, a, BS, &p), 0);	/* 4 of 4 */
	assert_int_equal(avfs_space_plan(f.sp, a, 2 * BS, &p), -EDQUOT);
	assert_int_equal(p.n, 0);
	assert_int_equal(avfs_space_plan(f.sp, d, 1, &p), 0);	/* a create: 3 < 4 */
	b = file(&f, d, "b", 1, 6);
	assert_int_equal(avfs_space_plan(f.sp, d, 1, &p), -EDQUOT);	/* full */
	/* with retention, the same write deletes instead (the oldest: a) */
	rule(&f, d, AVFS_SPACE_RETAIN, "100 50");
	assert_int_equal(avfs_space_reload(f.sp, d), 0);
	assert_int_equal(avfs_space_plan(f.sp, d, 1, &p), 0);
	assert_string_equal(names(&p), "a");
	avfs_space_plan_free(&p);
	/* all protected: EDQUOT again, nothing chosen */
	rule(&f, a, AVFS_SPACE_PROTECTED, "");
	assert_int_equal(avfs_space_plan(f.sp, d, 1, &p), 0);
	assert_string_equal(names(&p), "b");	/* the oldest unprotected */
	avfs_space_plan_free(&p);
	rule(&f, b, AVFS_SPACE_PROTECTED, "yes");
	assert_int_equal(avfs_space_plan(f.sp, d, BS, &p), -EDQUOT);
	assert_int_equal(p.n, 0);
	fx_done(&f);
}

/* Marks of the file system: every retained directory gives its oldest, wherever the writer. */
static void test_space_fs_marks(void **state)
{
	struct avfs_space_plan p = { 0 };
	struct avfs_statfs st;
	struct fx f;
	uint64_t c1, c2, other, used;
	unsigned pct;
	char v[32];

	(void)state;
	fx_init(&f);
	c1 = mkdir_(&f, AVFS_ROOT_INO, "c1");
	c2 = mkdir_(&f, AVFS_ROOT_INO, "c2");
	file(&f, c1, "old1", 20, 1);
	file(&f, c2, "old2", 20, 2);
	file(&f, c1, "new1", 20, 3);
	other = file(&f, AVFS_ROOT_INO, "other", 20, 0);	/* the oldest, but not retained */
	assert_int_equal(avfs_fs_statfs(f.fs, &st), 0);
	used = st.blocks - st.bfree;
	pct = (unsigned)(used * 100 / st.blocks);	/* we are at pct %, just above it */
	assert_true(pct >= 2 && pct < 99);
	snprintf(v, sizeof(v), "%u %u", pct + 1, pct - 1);
	rule(&f, c1, AVFS_SPACE_RETAIN, v);
	rule(&f, c2, AVFS_SPACE_RETAIN, v);
	assert_int_equal(avfs_space_new(f.fs, &f.sp), 0);
	assert_int_equal(avfs_space_plan(f.sp, 0, 0, &p), 0);
	assert_int_equal(p.n, 0);	/* below the high mark */
	/* a writer anywhere that would pass it: the oldest retained files go first, across both
	 * directories, until the low mark */
	assert_int_equal(avfs_space_plan(f.sp, other, st.blocks / 50 * BS, &p), 0);
	assert_true(p.n >= 1);
	assert_string_equal(p.v[0].path, "old1");
	if (p.n > 1)
		assert_string_equal(p.v[1].path, "old2");
	avfs_space_plan_free(&p);
	fx_done(&f);
}

/* Rules are the directories' attributes: found again by a new walk after a remount, gone with
 * their directory. */
static void test_space_persist(void **state)
{
	struct avfs_space_plan p = { 0 };
	struct avfs_space_rule r[4];
	struct fx f;
	uint64_t d, e;

	(void)state;
	fx_init(&f);
	d = mkdir_(&f, AVFS_ROOT_INO, "d");
	e = mkdir_(&f, d, "e");
	rule(&f, e, AVFS_SPACE_QUOTA, "1M");
	rule(&f, d, AVFS_SPACE_RETAIN, "90 80");
	assert_int_equal(avfs_fsio_unmount(f.io), 0);
	fx_mount(&f);
	assert_int_equal(avfs_space_new(f.fs, &f.sp), 0);
	assert_int_equal(avfs_space_list(f.sp, r, 4), 2);
	for (int i = 0; i < 2; i++) {
		if (r[i].dir == e)
			assert_int_equal(r[i].quota, 1u << 20);
		else
			assert_true(r[i].dir == d && r[i].high == 90 && r[i].low == 80);
	}
	assert_int_equal(avfs_fs_rmdir(f.fs, d, "e", 1), 0);
	assert_int_equal(avfs_space_plan(f.sp, 0, 0, &p), 0);	/* (a check drops dead rules) */
	assert_int_equal(p.n, 0);
	assert_int_equal(avfs_space_list(f.sp, r, 4), 1);	/* e's went with it */
	assert_int_equal(avfs_fs_removexattr(f.fs, d, AVFS_SPACE_RETAIN, 1), 0);
	assert_int_equal(avfs_space_reload(f.sp, d), 0);
	assert_int_equal(avfs_space_rules(f.sp), 0);
	fx_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_space_parse),
		cmocka_unit_test(test_space_usage_need),
		cmocka_unit_test(test_space_retain_quota),
		cmocka_unit_test(test_space_edquot),
		cmocka_unit_test(test_space_fs_marks),
		cmocka_unit_test(test_space_persist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
