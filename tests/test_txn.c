/*
 * test_txn.c — transaction credits (fs.h "transactions", fs/cache.c): an operation that cannot
 * get its memory (allocations failed here on purpose), finds the running transaction too full
 * or needs more than any transaction holds fails with -ENOMEM, -EAGAIN or -ENOSPC and changes
 * nothing; a commit makes room; fsck finds every result clean.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "fs_i.h"
#include "fsck_clean.h"
#include "fsio.h"
#include "memdisk.h"

/* ---- allocation failures: the linker sends the core's allocations here (meson.build) ---- */

static long fail_from = -1;	/* allocations from this one on fail; -1: none does */
static long nallocs;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);

static bool fails(void)
{
	return fail_from >= 0 && nallocs++ >= fail_from;
}

void *__wrap_malloc(size_t n)
{
	return fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fails() ? NULL : __real_realloc(p, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	return fails() ? ENOMEM : __real_posix_memalign(p, align, n);
}

/* ---- a file system, and what "nothing changed" means ---- */

struct env {
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_fs *fs;
	char path[64];		/* an image file, for the large ones */
};

static void env_mkfs(struct env *e, uint64_t size, struct avfs_mkfs_opts o)
{
	char why[256];

	o.block_shift = 16;
	o.seed = 4;
	if (!e->path[0])
		assert_int_equal(avfs_memdisk_open(size, 512, &e->d), 0);
	assert_int_equal(avfs_fsio_mkfs(e->d, &o, NULL, why, sizeof(why)), 0);
	assert_int_equal(avfs_fsio_mount(e->d, 0, &e->io, NULL, why, sizeof(why)), 0);
	e->fs = e->io->fs;
	e->io->autocommit = SIZE_MAX;	/* the tests commit */
}

/* Clean, every credit estimate held, committed, and clean again after a remount. */
static void env_close(struct env *e)
{
	char why[256];

	assert_fsck_clean(e->fs);
	assert_int_equal(e->fs->overruns, 0);
	assert_int_equal(avfs_fsio_unmount(e->io), 0);
	assert_int_equal(avfs_fsio_mount(e->d, 0, &e->io, NULL, why, sizeof(why)), 0);
	e->fs = e->io->fs;
	assert_fsck_clean(e->fs);
	assert_int_equal(avfs_fsio_unmount(e->io), 0);
	avfs_disk_close(e->d);
	if (e->path[0])
		unlink(e->path);
}

/* Everything an operation could change: every metadata image, the dirty set, the bitmaps in
 * memory, the allocator's cursor. */
struct state {
	uint32_t images;
	size_t dirty;
	uint64_t meta, data, inodes, pending;
	uint32_t last_zone;
};

static struct state state_of(struct avfs_fs *fs)
{
	struct state s = { .dirty = avfs_fs_dirty_blocks(fs), .meta = fs->mmap.nset,
			   .data = fs->dmap.nset, .inodes = fs->imap.nset,
			   .pending = fs->pfree.nset, .last_zone = fs->alloc.last_zone };

	for (uint64_t m = 0; m < fs->nmeta; m++)
		if (fs->blocks[m])
			s.images = avfs_crc32c(s.images ^ (uint32_t)m, fs->blocks[m], AVFS_MBLOCK);
	return s;
}

static void assert_unchanged(struct avfs_fs *fs, const struct state *before)
{
	struct state now = state_of(fs);

	assert_int_equal(now.images, before->images);
	assert_int_equal(now.dirty, before->dirty);
	assert_int_equal(now.meta, before->meta);
	assert_int_equal(now.data, before->data);
	assert_int_equal(now.inodes, before->inodes);
	assert_int_equal(now.pending, before->pending);
	assert_int_equal(now.last_zone, before->last_zone);
}

static uint64_t mk(struct env *e, uint64_t dir, const char *name)
{
	uint64_t ino;

	assert_int_equal(avfs_fs_mknod(e->fs, dir, name, S_IFREG | 0644, 0, 0, 1, &ino), 0);
	return ino;
}

/* ---- -ENOMEM: each allocation of an operation fails in turn ---- */

/* What the operations below work on. */
struct ops {
	uint64_t big;	/* a directory whose 12 direct blocks are full: the next entry needs a
			 * block and the map block that points at it */
	uint64_t empty[4];	/* directories without a block yet, one per operation */
	uint64_t file;	/* a file, and another that is renamed */
	uint64_t moved;
};

static struct ops g;	/* (the operations take no argument but the env) */

static int op_mknod(struct env *e)
{
	uint64_t ino;

	return avfs_fs_mknod(e->fs, g.big, "new-file", S_IFREG | 0644, 0, 0, 2, &ino);
}

static int op_mkdir(struct env *e)
{
	uint64_t ino;

	return avfs_fs_mkdir(e->fs, g.empty[0], "new-dir", 0755, 0, 0, 2, &ino);
}

static int op_symlink(struct env *e)
{
	static const char target[] = "a-target-long-enough-to-need-a-symlink-block-of-its-own";
	uint64_t ino;

	return avfs_fs_symlink(e->fs, g.empty[1], "link", target, 0, 0, 2, &ino);
}

static int op_link(struct env *e)
{
	return avfs_fs_link(e->fs, g.file, g.empty[2], "hard-link", 2);
}

static int op_rename(struct env *e)
{
	return avfs_fs_rename(e->fs, AVFS_ROOT_INO, "moved", g.empty[3], "moved-here", 0, 2);
}

/* A preallocation in the triple-indirect part: three map blocks to make. */
static int op_fallocate(struct env *e)
{
	uint64_t k = AVFS_NDIRECT + AVFS_MAP_PER_BLOCK +
		     (uint64_t)AVFS_MAP_PER_BLOCK * AVFS_MAP_PER_BLOCK + 5;

	return avfs_fs_fallocate(e->fs, g.file, k << 16, 1, true, 2);
}

/* A write planned in the double-indirect part: two map blocks, and the plan's ops. */
static int op_plan_write(struct env *e)
{
	struct avfs_data_plan p;
	uint64_t k = AVFS_NDIRECT + AVFS_MAP_PER_BLOCK + 7;
	int err;

	avfs_data_plan_init(&p);
	err = avfs_fs_plan_write(e->fs, g.file, (k << 16) + 100, 70000, 2, &p);
	avfs_data_plan_free(&p);
	return err;
}

/* The same operation again and again, its k-th allocation failing and every one after it,
 * for k = 0, 1, ... until it succeeds: each failure is -ENOMEM with nothing changed. */
static void each_allocation_fails(struct env *e, const char *what, int (*op)(struct env *))
{
	long k;

	while (e->fs->nspare)	/* images reserved by earlier operations: none now */
		free(e->fs->spare[--e->fs->nspare]);
	for (k = 0;; k++) {
		struct state before = state_of(e->fs);
		int err;

		nallocs = 0;
		fail_from = k;
		err = op(e);
		fail_from = -1;
		if (!err)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_unchanged(e->fs, &before);
	}
	printf("%s: %ld allocations failed in turn, each time nothing changed\n", what, k);
	assert_true(k > 0);
	assert_fsck_clean(e->fs);
}

static void test_txn_enomem_changes_nothing(void **state)
{
	struct env e = { 0 };
	char name[32];

	(void)state;
	env_mkfs(&e, 64u << 20, (struct avfs_mkfs_opts){ .zones = 4, .inodes = 2048 });
	assert_int_equal(avfs_fs_mkdir(e.fs, AVFS_ROOT_INO, "big", 0755, 0, 0, 1, &g.big), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "empty%d", i);
		assert_int_equal(avfs_fs_mkdir(e.fs, AVFS_ROOT_INO, name, 0755, 0, 0, 1,
					       &g.empty[i]), 0);
	}
	for (unsigned i = 0; i < AVFS_NDIRECT * AVFS_DSLOTS; i++) {
		snprintf(name, sizeof(name), "e%u", i);
		mk(&e, g.big, name);
		assert_int_equal(avfs_fsio_maybe_commit(e.io), 0);
	}
	g.file = mk(&e, AVFS_ROOT_INO, "file");
	g.moved = mk(&e, AVFS_ROOT_INO, "moved");
	assert_int_equal(avfs_fsio_sync(e.io), 0);
	each_allocation_fails(&e, "mknod into a new directory block", op_mknod);
	each_allocation_fails(&e, "symlink with a block of its own", op_symlink);
	assert_int_equal(avfs_fsio_sync(e.io), 0);
	each_allocation_fails(&e, "mkdir", op_mkdir);
	each_allocation_fails(&e, "link", op_link);
	each_allocation_fails(&e, "rename", op_rename);
	each_allocation_fails(&e, "fallocate through three new map blocks", op_fallocate);
	each_allocation_fails(&e, "a planned write through two new map blocks", op_plan_write);
	/* a commit that cannot get its memory leaves the journal where it was */
	for (long k = 0;; k++) {
		uint64_t head = e.fs->head, tail = e.fs->tail, used = e.fs->used;
		uint64_t seq = e.fs->next_seq, epoch = e.fs->jepoch;
		size_t dirty = avfs_fs_dirty_blocks(e.fs);
		int err;

		nallocs = 0;
		fail_from = k;
		err = avfs_fsio_sync(e.io);
		fail_from = -1;
		if (!err)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_true(e.fs->head == head && e.fs->tail == tail && e.fs->used == used &&
			    e.fs->next_seq == seq && e.fs->jepoch == epoch);
		assert_true(avfs_fs_dirty_blocks(e.fs) >= dirty);	/* + the superblock */
	}
	assert_int_equal(avfs_fs_dirty_blocks(e.fs), 0);
	env_close(&e);
}

/* ---- -EAGAIN: the running transaction is full ---- */

/* Changing the mode of one inode per inode block dirties exactly one block a call: fill the
 * running transaction until not one more block fits. */
static void fill_transaction(struct env *e, const uint64_t *inos, size_t n)
{
	struct avfs_stat st = { .mode = 0600 };
	size_t i = 0;
	int err;

	while ((err = avfs_fs_setattr(e->fs, inos[i], AVFS_SET_MODE, &st, 3)) == 0)
		assert_true(++i < n);
	assert_int_equal(err, -EAGAIN);
	/* full: what the commit will carry (with the superblock) is all a transaction holds */
	assert_int_equal(avfs_fs_dirty_blocks(e->fs) + !avfs_bitmap_test(&e->fs->dirty, 0),
			 avfs_fs_txn_capacity(e->fs));
}

/* An open file of 600 blocks (its maps in three blocks) without a name, committed. */
static uint64_t mk_orphan(struct env *e, const char *name)
{
	uint64_t ino = mk(e, AVFS_ROOT_INO, name);

	assert_int_equal(avfs_fsio_fallocate(e->io, ino, 0, 600ull << 16, false), 0);
	assert_int_equal(avfs_fs_open_ref(e->fs, ino), 0);
	assert_int_equal(avfs_fs_unlink(e->fs, AVFS_ROOT_INO, name, 3), 0);
	assert_int_equal(avfs_fsio_sync(e->io), 0);
	return ino;
}

/* Free an orphan at its last close, or as the leftover a mount frees. 1 or -errno. */
static int64_t free_orphan(struct env *e, uint64_t ino, bool at_mount)
{
	return at_mount ? avfs_fs_free_orphans(e->fs, true) : avfs_fs_open_unref(e->fs, ino);
}

static void test_txn_full_journal_eagain(void **state)
{
	struct env e = { 0 };
	size_t cap, n = 0, due_at = 0;
	uint64_t inos[80], orphan, ino;
	size_t spread = 0;
	struct state before;
	char name[32];
	int err;

	(void)state;
	/* the smallest journal: 62 log blocks */
	env_mkfs(&e, 64u << 20, (struct avfs_mkfs_opts){ .zones = 4, .inodes = 2048,
							 .journal_blocks = 64 });
	cap = avfs_fs_txn_capacity(e.fs);
	printf("a journal of 64 blocks holds transactions of %zu blocks\n", cap);
	assert_int_equal(cap, 60);
	/* creates without a commit, until one does not fit */
	for (;; n++) {
		if (!due_at && avfs_fs_commit_due(e.fs))
			due_at = avfs_fs_dirty_blocks(e.fs);
		before = state_of(e.fs);
		snprintf(name, sizeof(name), "f%zu", n);
		err = avfs_fs_mknod(e.fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 1, &ino);
		if (err)
			break;
		assert_true(avfs_fs_dirty_blocks(e.fs) <= cap);
	}
	printf("%zu creates filled it (%zu blocks); commit was due at %zu\n", n,
	       avfs_fs_dirty_blocks(e.fs), due_at);
	assert_int_equal(err, -EAGAIN);
	assert_unchanged(e.fs, &before);
	assert_true(due_at + 1 >= cap / 2 && due_at < cap / 2 + 4);
	assert_int_equal(avfs_fsio_sync(e.io), 0);	/* the transaction fits the journal */
	assert_int_equal(avfs_fs_mknod(e.fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 1, &ino),
			 0);
	/* one inode in each of 80 inode blocks, and an open file with maps to free, unlinked */
	for (size_t i = 0; spread < 80; i++) {
		snprintf(name, sizeof(name), "s%zu", i);
		ino = mk(&e, AVFS_ROOT_INO, name);
		if ((ino - 1) % AVFS_INODES_PER_BLOCK == 0)
			inos[spread++] = ino;
		assert_int_equal(avfs_fsio_maybe_commit(e.io), 0);
	}
	/* freeing an orphan that does not fit: at its last close (the handle stays counted),
	 * and as what a crash or an unmount leaves (the free_orphans of a mount) */
	for (int at_mount = 0; at_mount < 2; at_mount++) {
		orphan = mk_orphan(&e, at_mount ? "orphan2" : "orphan");
		fill_transaction(&e, inos, 80);
		before = state_of(e.fs);
		assert_int_equal(free_orphan(&e, orphan, at_mount), -EAGAIN);
		assert_unchanged(e.fs, &before);
		assert_int_equal(avfs_fsio_sync(e.io), 0);
		assert_int_equal(free_orphan(&e, orphan, at_mount), 1);
		assert_int_equal(avfs_fsio_sync(e.io), 0);	/* its blocks are free once on disk */
	}
	assert_int_equal(avfs_fs_free_orphans(e.fs, true), 0);
	/* the driver's side (fsio): a write into a full transaction commits and goes on */
	fill_transaction(&e, inos, 80);
	n = e.io->commits;
	assert_int_equal(avfs_fsio_write(e.io, inos[0], 0, "abc", 3), 3);
	assert_int_equal(e.io->commits, n + 1);
	env_close(&e);
}

/* One random operation of the workload below: 0 or -errno, as the core answered. */
static int random_op(struct env *e, uint64_t *x, const uint64_t *dirs, int ndirs)
{
	static const char target[] = "a-target-long-enough-to-need-a-symlink-block-of-its-own";
	static uint8_t data[3 << 16];
	uint64_t d = dirs[*x % ndirs], d2 = dirs[(*x >> 8) % ndirs], ino, off, len;
	struct avfs_data_plan p;
	char a[16], b[16];
	int err;

	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	snprintf(a, sizeof(a), "n%llu", (unsigned long long)(*x >> 20) % 90);
	snprintf(b, sizeof(b), "n%llu", (unsigned long long)(*x >> 30) % 90);
	off = (*x >> 12) % (40ull << 16);
	len = 1 + (*x >> 40) % sizeof(data);
	switch ((*x >> 56) % 8) {
	case 0:
		return avfs_fs_mknod(e->fs, d, a, S_IFREG | 0644, 0, 0, 1, &ino);
	case 1:
		return avfs_fs_mkdir(e->fs, d, a, 0755, 0, 0, 1, &ino);
	case 2:
		return avfs_fs_symlink(e->fs, d, a, target, 0, 0, 1, &ino);
	case 3:
		return avfs_fs_rename(e->fs, d, a, d2, b, 0, 1);
	case 4:
		err = avfs_fs_unlink(e->fs, d, a, 1);
		return err == -EISDIR ? avfs_fs_rmdir(e->fs, d, a, 1) : err;
	case 5:
		if ((err = avfs_fs_lookup(e->fs, d, a, &ino)))
			return err;
		avfs_data_plan_init(&p);
		if (!(err = avfs_fs_plan_write(e->fs, ino, off, len, 1, &p)))
			assert_int_equal(avfs_fsio_run_data(e->io, &p, NULL, data), 0);
		avfs_data_plan_free(&p);
		return err;
	case 6:
		if ((err = avfs_fs_lookup(e->fs, d, a, &ino)))
			return err;
		return avfs_fs_setattr(e->fs, ino, AVFS_SET_SIZE, &(struct avfs_stat){ .size = off / 3 },
				       1);
	default:
		if ((err = avfs_fs_lookup(e->fs, d, a, &ino)))
			return err;
		return avfs_fs_fallocate(e->fs, ino, off, len << 4, true, 1);
	}
}

/* A random workload on the smallest journal whose driver commits only when the core says
 * -EAGAIN: every operation fits once the transaction is empty, every commit fits the
 * journal, and no operation dirtied more than it reserved. */
static void test_txn_commit_only_when_told(void **state)
{
	struct env e = { 0 };
	uint64_t dirs[4] = { AVFS_ROOT_INO }, x = 99, commits = 0;

	(void)state;
	env_mkfs(&e, 64u << 20, (struct avfs_mkfs_opts){ .zones = 4, .inodes = 1024,
							 .journal_blocks = 64 });
	for (int i = 1; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "d%d", i);
		assert_int_equal(avfs_fs_mkdir(e.fs, AVFS_ROOT_INO, name, 0755, 0, 0, 1, &dirs[i]),
				 0);
	}
	for (int i = 0; i < 4000; i++) {
		uint64_t y = x;
		int err = random_op(&e, &x, dirs, 4);

		if (err == -EAGAIN) {
			assert_true(avfs_fs_dirty_blocks(e.fs) > 0);
			assert_int_equal(avfs_fsio_sync(e.io), 0);
			commits++;
			x = y;	/* the same operation again */
			assert_int_not_equal(random_op(&e, &x, dirs, 4), -EAGAIN);
		}
		assert_int_equal(e.fs->overruns, 0);
	}
	printf("4000 operations, %llu commits, each when -EAGAIN asked for it\n",
	       (unsigned long long)commits);
	assert_true(commits > 10);
	env_close(&e);
}

/* ---- -ENOSPC: more than a transaction can hold, or no metadata block left ---- */

/* A file whose block maps outgrow the smallest journal: an operation freeing it all does not
 * fit one transaction, one freeing part of it does; preallocating it all at once does not. */
static void test_txn_too_large_enospc(void **state)
{
	struct env e = { 0 };
	uint64_t ino, blocks = 70 * AVFS_MAP_PER_BLOCK, step = 20 * AVFS_MAP_PER_BLOCK, more;
	struct avfs_data_plan p;
	struct avfs_stat st;
	struct state before;
	int fd;

	(void)state;
	snprintf(e.path, sizeof(e.path), "/var/tmp/avfs-test-txn-XXXXXX");
	fd = mkstemp(e.path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4ll << 30), 0);	/* sparse: only metadata is written */
	close(fd);
	assert_int_equal(avfs_uring_open(e.path, 0, 0, &e.d), 0);
	env_mkfs(&e, 0, (struct avfs_mkfs_opts){ .inodes = 64, .journal_blocks = 64 });
	ino = mk(&e, AVFS_ROOT_INO, "big");
	before = state_of(e.fs);
	assert_int_equal(avfs_fs_fallocate(e.fs, ino, 0, blocks << 16, false, 1), -ENOSPC);
	printf("fallocate of %llu blocks: %s\n", (unsigned long long)blocks, avfs_fs_why(e.fs));
	assert_unchanged(e.fs, &before);
	for (uint64_t at = 0; at < blocks; at += step)	/* in steps, committing between */
		assert_int_equal(avfs_fsio_fallocate(e.io, ino, at << 16, step << 16, false), 0);
	assert_int_equal(avfs_fsio_sync(e.io), 0);
	before = state_of(e.fs);
	assert_int_equal(avfs_fs_unlink(e.fs, AVFS_ROOT_INO, "big", 2), -ENOSPC);
	assert_unchanged(e.fs, &before);
	assert_fsck_clean(e.fs);
	/* a planned write over more than a transaction holds is short: the prefix that fits */
	avfs_data_plan_init(&p);
	assert_int_equal(avfs_fs_plan_write(e.fs, ino, blocks << 16, blocks << 16, 2, &p), 0);
	printf("a write of %llu new blocks planned %llu bytes\n", (unsigned long long)blocks,
	       (unsigned long long)p.bytes);
	assert_true(p.bytes > 0 && p.bytes < blocks << 16);
	assert_int_equal(avfs_fs_getattr(e.fs, ino, &st), 0);
	assert_int_equal(st.size, (blocks << 16) + p.bytes);
	more = p.bytes >> 16;
	avfs_data_plan_free(&p);	/* (not run: the sparse image reads as zeros anyway) */
	assert_int_equal(avfs_fsio_sync(e.io), 0);
	/* a truncate in steps frees it */
	for (uint64_t size = blocks + more; size;) {
		size = size > step ? size - step : 0;
		assert_int_equal(avfs_fsio_truncate(e.io, ino, size << 16), 0);
		assert_int_equal(avfs_fsio_sync(e.io), 0);
	}
	assert_int_equal(avfs_fs_unlink(e.fs, AVFS_ROOT_INO, "big", 2), 0);
	env_close(&e);
}

/* The dynamic metadata region full: what needs a new block fails with nothing changed, what
 * needs none still works. */
static void test_txn_metadata_full_enospc(void **state)
{
	struct env e = { 0 };
	uint64_t dirs[64], ino;
	struct state before;
	char name[32];
	int n = 0, err = 0;

	(void)state;
	env_mkfs(&e, 64u << 20, (struct avfs_mkfs_opts){ .zones = 4, .inodes = 128,
							 .dyn_blocks = 16 });
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		assert_int_equal(avfs_fs_mkdir(e.fs, AVFS_ROOT_INO, name, 0755, 0, 0, 1, &dirs[i]), 0);
	}
	/* a first entry in each directory takes a block, until none is left */
	for (; n < 40; n++) {
		before = state_of(e.fs);
		if ((err = avfs_fs_mknod(e.fs, dirs[n], "f", S_IFREG | 0644, 0, 0, 1, &ino)))
			break;
	}
	printf("%d directories got a block before the region was full\n", n);
	assert_int_equal(err, -ENOSPC);
	assert_true(n > 0 && n < 40);
	assert_unchanged(e.fs, &before);
	assert_int_equal(avfs_fs_symlink(e.fs, AVFS_ROOT_INO, "s",
					 "a-target-long-enough-to-need-a-symlink-block-of-its-own",
					 0, 0, 1, &ino), -ENOSPC);
	assert_unchanged(e.fs, &before);
	/* a second entry in a directory that has its block needs no new one */
	assert_int_equal(avfs_fs_mknod(e.fs, dirs[0], "g", S_IFREG | 0644, 0, 0, 1, &ino), 0);
	assert_int_equal(avfs_fs_symlink(e.fs, AVFS_ROOT_INO, "s", "short", 0, 0, 1, &ino), 0);
	env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_txn_commit_only_when_told),
		cmocka_unit_test(test_txn_enomem_changes_nothing),
		cmocka_unit_test(test_txn_full_journal_eagain),
		cmocka_unit_test(test_txn_metadata_full_enospc),
		cmocka_unit_test(test_txn_too_large_enospc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
