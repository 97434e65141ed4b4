/*
 * test_faults.c — the fault-injection matrix of issue 19: EIO on reads and writes of each kind
 * of metadata (superblock, journal, the three bitmaps, inode table, block map, directory,
 * symlink) and of data, at mount, during work and during commit, on a memory disk with faults
 * (disk/memdisk.h). Each case of the table names its expected outcome — repaired from the
 * backup region, refused until fsck.avfs -y (which repairs, or reports what was lost), an
 * error to the caller with nothing changed, read-only with the failed block named — and the
 * case asserts it, then that the file system checks clean. Mount cases run the synchronous
 * driver (fs/fsio.c, what avfsd's mount and fsck.avfs run); work and commit cases run the
 * engine (engine/) over the same disk, as avfsd does.
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

#include "crc32c.h"
#include "engine.h"
#include "fs_i.h"
#include "fsck.h"
#include "fsck_clean.h"
#include "fsio.h"
#include "memdisk.h"

#define IMG (32ull << 20)
#define BS (64u << 10)		/* data blocks */
#define MB AVFS_MBLOCK
#define NOW (1700000000ll * 1000000000ll)
#define MS 1000000ll
#define BIG_BLOCKS 16		/* /big: past the 12 direct pointers, so it has a map block */

/* ---- the image every case starts from ---- */

enum kind {
	K_SUPER, K_JSUPER, K_JSUPER2, K_JLOG, K_JLOG_UNUSED, K_MBITMAP, K_DBITMAP, K_IBITMAP,
	K_ITABLE, K_MAP, K_DIR, K_SYMLINK, K_DATA, K_FLUSH,
};

static const char *const kind_name[] = {
	[K_SUPER] = "superblock", [K_JSUPER] = "journal superblock",
	[K_JSUPER2] = "journal superblock", [K_JLOG] = "journal", [K_JLOG_UNUSED] = "journal",
	[K_MBITMAP] = "metadata bitmap", [K_DBITMAP] = "data bitmap",
	[K_IBITMAP] = "inode bitmap", [K_ITABLE] = "inode table", [K_MAP] = "block map",
	[K_DIR] = "directory", [K_SYMLINK] = "symlink", [K_DATA] = "data",
	[K_FLUSH] = "FLUSH",
};

static uint8_t *base;		/* populated, synced, unmounted */
static uint8_t *base_late;	/* base + one more transaction in the journal only */
static uint32_t digest_base, digest_late;
static uint64_t late_head;	/* the log index of that transaction's first block */

static uint32_t digest_dir(struct avfs_fsio *io, uint64_t dir, uint32_t crc, int depth);

struct walk {
	struct avfs_fsio *io;
	uint32_t crc;
	int depth;
};

static int walk_one(void *arg, const char *name, uint64_t ino, uint32_t type, uint64_t next)
{
	struct walk *w = arg;
	struct avfs_stat st;
	static uint8_t buf[1 << 20];

	(void)type, (void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	assert_int_equal(avfs_fs_getattr(w->io->fs, ino, &st), 0);
	w->crc = avfs_crc32c(w->crc, name, strlen(name));
	w->crc = avfs_crc32c(w->crc, &st.mode, sizeof(st.mode));
	w->crc = avfs_crc32c(w->crc, &st.size, sizeof(st.size));
	if (S_ISREG(st.mode)) {
		for (uint64_t off = 0; off < st.size;) {
			int64_t r = avfs_fsio_read(w->io, ino, off, buf, sizeof(buf));

			assert_true(r > 0);
			w->crc = avfs_crc32c(w->crc, buf, (size_t)r);
			off += (uint64_t)r;
		}
	} else if (S_ISLNK(st.mode)) {
		char t[AVFS_SYMLINK_MAX + 1];
		int n = avfs_fs_readlink(w->io->fs, ino, t, sizeof(t));

		assert_true(n > 0);
		w->crc = avfs_crc32c(w->crc, t, (size_t)n);
	} else if (S_ISDIR(st.mode)) {
		w->crc = digest_dir(w->io, ino, w->crc, w->depth + 1);
	}
	return 0;
}

static uint32_t digest_dir(struct avfs_fsio *io, uint64_t dir, uint32_t crc, int depth)
{
	struct walk w = { .io = io, .crc = crc, .depth = depth };

	assert_true(depth < 16);
	assert_int_equal(avfs_fs_readdir(io->fs, dir, 0, walk_one, &w), 0);
	return w.crc;
}

/* Every name, type, size and byte of the tree. */
static uint32_t digest(struct avfs_fsio *io)
{
	return digest_dir(io, AVFS_ROOT_INO, 0, 0);
}

static uint64_t mkfile(struct avfs_fsio *io, uint64_t dir, const char *name, size_t len)
{
	uint64_t ino;
	uint8_t *buf = malloc(len + 1);

	assert_int_equal(avfs_fs_mknod(io->fs, dir, name, S_IFREG | 0644, 0, 0, NOW, &ino), 0);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + ino);
	if (len)
		assert_int_equal(avfs_fsio_write(io, ino, 0, buf, len), (int64_t)len);
	free(buf);
	return ino;
}

/* A file system holding every kind of block: directories (the root one block, /many several),
 * files small and large (/big past the direct pointers: a map block), a long symlink. */
static void populate(struct avfs_fsio *io)
{
	uint64_t d, ino;
	char name[32], target[600];

	d = 0;
	assert_int_equal(avfs_fs_mkdir(io->fs, AVFS_ROOT_INO, "many", 0755, 0, 0, NOW, &d), 0);
	for (int i = 0; i < 80; i++) {
		snprintf(name, sizeof(name), "file%02d", i);
		mkfile(io, d, name, i % 8 ? 0 : 3000);
	}
	mkfile(io, AVFS_ROOT_INO, "big", BIG_BLOCKS * BS + 100);
	mkfile(io, AVFS_ROOT_INO, "small", 5000);
	memset(target, 'x', 500);
	target[500] = 0;
	assert_int_equal(avfs_fs_symlink(io->fs, AVFS_ROOT_INO, "link", target, 0, 0, NOW, &ino),
			 0);
	assert_int_equal(avfs_fsio_sync(io), 0);
}

static struct avfs_fsio *mount_ok(struct avfs_disk *d, unsigned flags,
				  struct avfs_mount_report *rep)
{
	struct avfs_fsio *io;
	char why[256] = "";
	int err = avfs_fsio_mount(d, flags, &io, rep, why, sizeof(why));

	if (err)
		fprintf(stderr, "mount: %s\n", why);
	assert_int_equal(err, 0);
	return io;
}

/* The superblock geometry of base. */
static struct avfs_super geo(void)
{
	struct avfs_super sb;
	char why[200];

	assert_int_equal(avfs_fs_check_super(base, IMG, &sb, why, sizeof(why)), 0);
	return sb;
}

static uint64_t ino_of(struct avfs_fsio *io, const char *path)
{
	uint64_t ino;

	assert_int_equal(avfs_fsio_resolve(io, path, &ino), 0);
	return ino;
}

/* The metadata block of kind k in base (mounted read-only as io). */
static uint64_t block_of(struct avfs_fsio *io, enum kind k)
{
	const struct avfs_super *sb = &io->fs->sb;
	struct avfs_dinode *di;

	switch (k) {
	case K_SUPER:
		return 0;
	case K_JSUPER:
		return sb->journal_start;
	case K_JSUPER2:
		return sb->journal_start + 1;
	case K_JLOG:
		return sb->journal_start + 2 + late_head;	/* the late transaction's first */
	case K_JLOG_UNUSED:
		return sb->journal_start + sb->journal_blocks - 1;	/* never reached */
	case K_MBITMAP:
		return sb->mbitmap_start;
	case K_DBITMAP:
		return sb->dbitmap_start;
	case K_IBITMAP:
		return sb->ibitmap_start;
	case K_ITABLE:	/* (a block the late transaction does not change: not replayed) */
		return fs_ino_block(io->fs, ino_of(io, "/many/file40"));
	case K_MAP:
		di = fs_ino_raw(io->fs, ino_of(io, "/big"));
		assert_true(di->indirect != 0);
		return di->indirect;
	case K_DIR:
		di = fs_ino_raw(io->fs, ino_of(io, "/many"));
		return di->direct[1].block;	/* its second block */
	case K_SYMLINK:
		di = fs_ino_raw(io->fs, ino_of(io, "/link"));
		assert_true(di->symlink_block != 0);
		return di->symlink_block;
	default:
		fail_msg("no block for kind %d", k);
	}
	return 0;
}

/* Commit the running transaction to the journal only, as if power failed right after the
 * commit record: its checkpoint never happens. The fs is abandoned. */
static void journal_only(struct avfs_fsio *io)
{
	struct avfs_fs *fs = io->fs;
	uint64_t lo = fs->sb.journal_start * MB, hi = (fs->sb.journal_start +
						       fs->sb.journal_blocks) * MB;
	struct avfs_plan *p;

	late_head = fs->head;
	assert_int_equal(avfs_fs_commit(fs, NOW, &p), 0);
	assert_non_null(p);
	for (size_t i = 0; i < p->n; i++) {
		const struct avfs_plan_op *o = &p->ops[i];
		struct avfs_plan one = { .ops = (struct avfs_plan_op *)o, .n = 1 };

		if (o->kind == AVFS_PLAN_FLUSH || (o->off >= lo && o->off + o->len <= hi))
			assert_int_equal(avfs_fsio_run(io->d, &one), 0);
	}
	avfs_plan_free(p);
	avfs_fsio_abandon(io);
}

static int setup(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 2, .seed = 3, .inodes = 1024,
				    .now_ns = NOW };
	struct avfs_fsio *io;
	struct avfs_disk *d;
	char why[256];

	(void)state;
	assert_int_equal(avfs_memdisk_open(IMG, 512, &d), 0);
	assert_int_equal(avfs_fsio_mkfs(d, &o, NULL, why, sizeof(why)), 0);
	io = mount_ok(d, 0, NULL);
	populate(io);
	digest_base = digest(io);
	assert_int_equal(avfs_fsio_unmount(io), 0);
	base = malloc(IMG);
	memcpy(base, avfs_memdisk_data(d), IMG);
	/* one more transaction, journaled only: replay needs the journal */
	io = mount_ok(d, 0, NULL);
	mkfile(io, AVFS_ROOT_INO, "late", 4096);
	journal_only(io);
	base_late = malloc(IMG);
	memcpy(base_late, avfs_memdisk_data(d), IMG);
	io = mount_ok(d, AVFS_MOUNT_RDONLY, NULL);
	digest_late = digest(io);
	assert_int_not_equal(digest_late, digest_base);
	avfs_fsio_abandon(io);
	avfs_disk_close(d);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(base);
	free(base_late);
	return 0;
}

/* ---- mount cases: the primary copy unreadable (or the backup damaged too) ---- */

enum outcome {
	O_CLEAN,	/* mounts, nothing to repair */
	O_BACKUP,	/* mounts, the block taken from the backup region (and rewritten home) */
	O_FSCK,		/* refused, pointing at fsck.avfs -y; -y repairs: then clean, nothing lost
			 * but the journal's transactions it could not trust */
	O_LOST,		/* refused (both copies bad); fsck -y rebuilds what it can, reporting
			 * what was lost; then clean */
	O_FAILS,	/* refused, and fsck -y cannot either (no superblock): the image unchanged */
};

struct mount_case {
	const char *name;
	enum kind kind;
	bool journaled;		/* the image with the late transaction in the journal */
	bool backup_bad;	/* the backup copy damaged as well (a flipped byte) */
	bool unwritable;	/* the primary refuses writes too (the rewrite fails) */
	enum outcome want;
	bool late_kept;		/* after fsck -y: the late transaction's file is there */
};

static const struct mount_case mount_cases[] = {
	{ "superblock", K_SUPER, false, false, false, O_BACKUP, false },
	{ "superblock, journal to replay", K_SUPER, true, false, false, O_BACKUP, true },
	{ "journal superblock A", K_JSUPER, true, false, false, O_FSCK, true },
	{ "journal superblock B", K_JSUPER2, true, false, false, O_FSCK, true },
	{ "journal block replay needs", K_JLOG, true, false, false, O_FSCK, false },
	{ "journal block replay never reads", K_JLOG_UNUSED, true, false, false, O_CLEAN, true },
	{ "metadata bitmap", K_MBITMAP, false, false, false, O_BACKUP, false },
	{ "data bitmap", K_DBITMAP, false, false, false, O_BACKUP, false },
	{ "inode bitmap", K_IBITMAP, false, false, false, O_BACKUP, false },
	{ "inode table", K_ITABLE, false, false, false, O_BACKUP, false },
	{ "inode table, journal to replay", K_ITABLE, true, false, false, O_BACKUP, true },
	{ "inode table, home unwritable", K_ITABLE, false, false, true, O_BACKUP, false },
	{ "block map", K_MAP, false, false, false, O_BACKUP, false },
	{ "directory", K_DIR, false, false, false, O_BACKUP, false },
	{ "symlink", K_SYMLINK, false, false, false, O_BACKUP, false },
	{ "superblock, backup damaged", K_SUPER, false, true, false, O_FAILS, false },
	{ "metadata bitmap, backup damaged", K_MBITMAP, false, true, false, O_LOST, false },
	{ "data bitmap, backup damaged", K_DBITMAP, false, true, false, O_LOST, false },
	{ "inode bitmap, backup damaged", K_IBITMAP, false, true, false, O_LOST, false },
	{ "inode table, backup damaged", K_ITABLE, false, true, false, O_LOST, false },
	{ "block map, backup damaged", K_MAP, false, true, false, O_LOST, false },
	{ "directory, backup damaged", K_DIR, false, true, false, O_LOST, false },
	{ "symlink, backup damaged", K_SYMLINK, false, true, false, O_LOST, false },
};

static int sync_hook(void *arg)
{
	return avfs_fsio_sync(arg);
}

/* What fsck.avfs -y does: a forced mount (backup copies checked, orphans kept), the repair
 * committed as it goes, an unmount. Returns the errors it found. */
static uint64_t fsck_y(struct avfs_disk *d, struct avfs_mount_report *rep)
{
	struct avfs_fsio *io = mount_ok(d, AVFS_MOUNT_FORCE | AVFS_MOUNT_CHECK_BACKUP |
					AVFS_MOUNT_KEEP_ORPHANS, rep);
	struct avfs_fsck_report r;
	uint64_t errors;

	assert_int_equal(avfs_fsck_check_commit(io->fs, AVFS_FSCK_REPAIR, &r, sync_hook, io), 0);
	for (size_t i = 0; i < r.nfindings && i < 5; i++)
		print_message("    fsck -y: %s\n", r.findings[i]);
	errors = r.errors;
	avfs_fsck_report_free(&r);
	assert_int_equal(avfs_fsio_sync(io), 0);
	assert_int_equal(avfs_fsio_unmount(io), 0);
	return errors;
}

static void run_mount_case(const struct mount_case *c)
{
	const uint8_t *img = c->journaled ? base_late : base;
	struct avfs_mount_report rep;
	struct avfs_fsio *io;
	struct avfs_disk *d;
	char why[256] = "";
	uint64_t m, off;
	uint8_t *before;
	int err;

	print_message("  %s: %s\n", c->name, c->want == O_CLEAN ? "mounts" : c->want == O_BACKUP ?
		      "repaired from the backup region" : c->want == O_FSCK ? "fsck.avfs -y" :
		      c->want == O_LOST ? "lost, fsck.avfs -y rebuilds" : "refused");
	assert_int_equal(avfs_memdisk_open_image(img, IMG, 512, &d), 0);
	io = mount_ok(d, AVFS_MOUNT_RDONLY, NULL);
	m = block_of(io, c->kind);
	avfs_fsio_abandon(io);
	off = m * MB;
	if (c->backup_bad) {
		struct avfs_super sb = geo();

		avfs_memdisk_data(d)[avfs_fs_backup_off(&sb, m) + 100] ^= 0x40;
	}
	assert_int_equal(avfs_memdisk_fail_reads(d, off, MB), 0);
	if (c->unwritable)
		assert_int_equal(avfs_memdisk_fail_writes(d, off, MB), 0);
	before = malloc(IMG);
	memcpy(before, avfs_memdisk_data(d), IMG);
	err = avfs_fsio_mount(d, 0, &io, &rep, why, sizeof(why));
	switch (c->want) {
	case O_CLEAN:
	case O_BACKUP:
		if (err)
			fprintf(stderr, "    mount: %s\n", why);
		assert_int_equal(err, 0);
		assert_int_equal(rep.repaired_primary, c->want == O_BACKUP);
		assert_int_equal(rep.used_backup_super, c->want == O_BACKUP && c->kind == K_SUPER);
		assert_int_equal(rep.rewrite_failed, c->unwritable);
		assert_fsck_clean(io->fs);
		assert_int_equal(digest(io), c->journaled ? digest_late : digest_base);
		assert_int_equal(avfs_fsio_unmount(io), 0);
		/* the home copy was rewritten and reads again (a drive remaps the sector on the
		 * write); a dead one that refuses writes is served from the backup every time */
		if (!c->unwritable)
			assert_int_equal(avfs_memdisk_fail_reads(d, 0, 0), 0);
		io = mount_ok(d, AVFS_MOUNT_CHECK_BACKUP, &rep);
		assert_int_equal(rep.repaired_primary, c->unwritable);
		assert_int_equal(rep.rewrite_failed, c->unwritable);
		assert_int_equal(rep.repaired_backup, 0);
		assert_fsck_clean(io->fs);
		avfs_fsio_abandon(io);
		break;
	case O_FSCK:
		assert_true(err == -EIO || err == -EUCLEAN);
		print_message("    mount: %s\n", why);
		assert_non_null(strstr(why, "fsck.avfs -y"));
		assert_memory_equal(avfs_memdisk_data(d), before, IMG);	/* refused: unchanged */
		fsck_y(d, &rep);
		assert_true(rep.journal_discarded);
		print_message("    fsck -y: journal: %s\n", rep.journal_why);
		assert_int_equal(avfs_memdisk_fail_reads(d, 0, 0), 0);
		io = mount_ok(d, AVFS_MOUNT_CHECK_BACKUP, &rep);
		assert_false(rep.journal_discarded);
		assert_fsck_clean(io->fs);
		assert_int_equal(digest(io), c->late_kept ? digest_late : digest_base);
		avfs_fsio_abandon(io);
		break;
	case O_LOST:
		assert_int_equal(err, -EUCLEAN);
		print_message("    mount: %s\n", why);
		assert_non_null(strstr(why, "both"));
		assert_memory_equal(avfs_memdisk_data(d), before, IMG);
		print_message("    fsck -y: %llu findings\n", (unsigned long long)fsck_y(d, &rep));
		assert_int_equal(rep.lost_blocks, 1);
		assert_int_equal(avfs_memdisk_fail_reads(d, 0, 0), 0);
		io = mount_ok(d, AVFS_MOUNT_CHECK_BACKUP, &rep);
		assert_int_equal(rep.repaired_primary + rep.repaired_backup + rep.lost_blocks, 0);
		assert_fsck_clean(io->fs);
		digest(io);	/* what is left reads whole */
		avfs_fsio_abandon(io);
		break;
	case O_FAILS:
		assert_true(err < 0);
		print_message("    mount: %s\n", why);
		assert_int_equal(avfs_fsio_mount(d, AVFS_MOUNT_FORCE | AVFS_MOUNT_CHECK_BACKUP |
						 AVFS_MOUNT_KEEP_ORPHANS, &io, &rep, why, sizeof(why)),
				 err);
		assert_memory_equal(avfs_memdisk_data(d), before, IMG);
		break;
	}
	free(before);
	avfs_disk_close(d);
}

static void test_faults_mount(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(mount_cases) / sizeof(mount_cases[0]); i++)
		run_mount_case(&mount_cases[i]);
}

/* ---- work and commit cases: the engine over the memory disk, as avfsd runs it ---- */

struct drv {
	struct avfs_engine *e;
	struct avfs_disk *d;
	struct avfs_fsio *io;
	int64_t now;
	uint64_t commits;
	int commit_err;
	char log[512];		/* the engine's error lines */
};

static int drv_submit(void *ctx, const struct avfs_disk_req *r)
{
	return avfs_disk_submit(((struct drv *)ctx)->d, r);
}

static void drv_committed(void *ctx, uint64_t n, int err)
{
	struct drv *v = ctx;

	v->commits = n;
	if (err)
		v->commit_err = err;
}

static void drv_log(void *ctx, int level, const char *msg)
{
	struct drv *v = ctx;

	print_message("    engine log %d: %s\n", level, msg);
	if (!level)
		snprintf(v->log, sizeof(v->log), "%s", msg);
}

/* Complete what the disk did (the memory disk completes at submit), tick when asked, until
 * the engine is idle. */
static void pump(struct drv *v)
{
	for (int guard = 0; guard < 100000; guard++) {
		struct avfs_disk_cqe c[16];
		int n = avfs_disk_reap(v->d, c, 16);

		for (int i = 0; i < n; i++) {
			v->now += MS / 10;
			avfs_engine_complete(v->e, c[i].cookie, c[i].res, v->now);
		}
		if (n > 0)
			continue;
		if (avfs_engine_idle(v->e))
			return;
		v->now = avfs_engine_wake(v->e) > v->now ? avfs_engine_wake(v->e) : v->now + MS;
		avfs_engine_tick(v->e, v->now);
	}
	fail_msg("the engine never became idle");
}

static void drv_start(struct drv *v)
{
	const struct avfs_engine_ops ops = { .ctx = v, .submit = drv_submit,
					     .committed = drv_committed, .log = drv_log };
	struct avfs_engine_conf c;
	char why[256] = "";

	memset(v, 0, sizeof(*v));
	v->now = 10 * 1000 * MS;
	assert_int_equal(avfs_memdisk_open_image(base, IMG, 512, &v->d), 0);
	v->io = mount_ok(v->d, 0, NULL);
	avfs_engine_conf_default(&c);
	c.commit_period_ns = 0;
	c.commit_dirty = 1u << 20;
	c.wall_offset_ns = NOW;
	assert_int_equal(avfs_engine_new(&v->e, &c, v->io->fs, IMG, &ops, v->now, why,
					 sizeof(why)), 0);
}

struct req {
	struct avfs_fio f;	/* first */
	int64_t res;
	bool done;
};

static void req_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct req *r = (struct req *)f;

	(void)now;
	r->res = res;
	r->done = true;
}

/* A FUSE-like request on ino, run to its end: its result. */
static int64_t file_io(struct drv *v, uint64_t ino, bool write, uint64_t off, void *buf,
		       size_t len)
{
	struct req r = { .f = { .ino = ino, .off = off, .len = len, .write = write, .buf = buf,
				.cap = len, .label = -1, .cls = AVFS_TRACE_BE, .done = req_done } };
	int err = avfs_engine_io(v->e, &r.f, v->now);

	if (err)
		return err;
	pump(v);
	assert_true(r.done);
	return r.res;
}

static uint64_t size_of(struct drv *v, uint64_t ino)
{
	struct avfs_stat st;

	assert_int_equal(avfs_fs_getattr(v->io->fs, ino, &st), 0);
	return st.size;
}

/* The device bytes of byte `at` of ino (mapped). */
static uint64_t dev_of(struct drv *v, uint64_t ino, uint64_t at)
{
	struct avfs_bext e;

	assert_int_equal(avfs_fs_map_read(v->io->fs, ino, at, 1, &e, 1), 1);
	assert_true(e.dev_off != 0);
	return e.dev_off + (at - e.file_off);
}

/* After a case: the engine's work undone from memory, the disk mounted afresh (faults off),
 * checked clean. */
static void remount_clean(struct drv *v, uint32_t want_digest)
{
	struct avfs_fsio *io;

	avfs_engine_free(v->e);
	avfs_fsio_abandon(v->io);
	assert_int_equal(avfs_memdisk_fail_reads(v->d, 0, 0), 0);
	assert_int_equal(avfs_memdisk_fail_writes(v->d, 0, 0), 0);
	assert_int_equal(avfs_memdisk_fail_flushes(v->d, false), 0);
	io = mount_ok(v->d, AVFS_MOUNT_CHECK_BACKUP, NULL);
	assert_fsck_clean(io->fs);
	if (want_digest)
		assert_int_equal(digest(io), want_digest);
	assert_int_equal(avfs_fsio_unmount(io), 0);
	avfs_disk_close(v->d);
}

enum work { W_READ, W_APPEND, W_OVERWRITE, W_RMW_READ, W_SPAN };

struct work_case {
	const char *name;
	enum work w;
};

/* Data faults while files are read and written: the caller gets -EIO and the file is as it
 * was (its size first of all: issue 19's 3 MiB write returned 1,048,528 while the size became
 * 2,097,104); the next fsync of every open file description hears of a failed write once
 * (errseq); the file system stays read-write and clean. */
static const struct work_case work_cases[] = {
	{ "data read", W_READ },
	{ "data write appending (a new block)", W_APPEND },
	{ "data write inside the file", W_OVERWRITE },
	{ "read of a read-modify-write (an unaligned append)", W_RMW_READ },
	{ "data write over two blocks, the second failing", W_SPAN },
};

static void run_work_case(const struct work_case *c)
{
	struct drv v;
	uint8_t *buf = malloc(4 * BS);
	uint64_t big, small, size0, sample, other, later;
	int64_t res = 0;

	print_message("  %s: an error to the caller, the size as it was\n", c->name);
	drv_start(&v);
	big = ino_of(v.io, "/big");
	small = ino_of(v.io, "/small");
	memset(buf, 0x3c, 4 * BS);
	sample = avfs_engine_wberr_sample(v.e, big);
	other = sample;
	switch (c->w) {
	case W_READ:
		assert_int_equal(avfs_memdisk_fail_reads(v.d, dev_of(&v, big, 3 * BS), 512), 0);
		assert_int_equal(file_io(&v, big, false, 3 * BS, buf, BS), -EIO);
		assert_int_equal(file_io(&v, big, false, 0, buf, BS), BS);	/* the rest reads */
		break;
	case W_APPEND:
		size0 = size_of(&v, big);
		/* the next data block ZRR gives: every free block of the region fails */
		assert_int_equal(avfs_memdisk_fail_writes(v.d, v.io->fs->sb.data_off,
							  v.io->fs->sb.data_blocks * BS), 0);
		res = file_io(&v, big, true, (BIG_BLOCKS + 2) * BS, buf, BS);
		assert_int_equal(res, -EIO);
		assert_int_equal(size_of(&v, big), size0);
		break;
	case W_OVERWRITE:
		size0 = size_of(&v, big);
		assert_int_equal(avfs_memdisk_fail_writes(v.d, dev_of(&v, big, 2 * BS), BS), 0);
		assert_int_equal(file_io(&v, big, true, 2 * BS, buf, BS), -EIO);
		assert_int_equal(size_of(&v, big), size0);
		break;
	case W_RMW_READ:
		size0 = size_of(&v, small);	/* 5000: its second page is partly written */
		assert_int_equal(avfs_memdisk_fail_reads(v.d, dev_of(&v, small, 4096), 512), 0);
		assert_int_equal(file_io(&v, small, true, size0, buf, 100), -EIO);
		assert_int_equal(size_of(&v, small), size0);
		big = small;
		break;
	case W_SPAN:
		size0 = size_of(&v, big);
		/* the first block (the file's last) takes the write, the new one after it fails */
		assert_int_equal(avfs_memdisk_fail_writes(v.d, v.io->fs->sb.data_off,
							  v.io->fs->sb.data_blocks * BS), 0);
		assert_int_equal(avfs_memdisk_fail_writes(v.d, 0, 0), 0);
		{
			uint64_t last = dev_of(&v, big, size0 - 1) / BS * BS;

			/* every data block but the file's last fails */
			assert_int_equal(avfs_memdisk_fail_writes(v.d, last + BS, IMG - last - BS),
					 0);
		}
		assert_int_equal(file_io(&v, big, true, size0, buf, 2 * BS), -EIO);
		assert_int_equal(size_of(&v, big), size0);
		break;
	}
	if (c->w != W_READ) {
		/* errseq: each description that sampled before hears of it once */
		assert_int_equal(avfs_engine_wberr_check(v.e, big, &sample), -EIO);
		assert_int_equal(avfs_engine_wberr_check(v.e, big, &sample), 0);
		assert_int_equal(avfs_engine_wberr_check(v.e, big, &other), -EIO);
		later = avfs_engine_wberr_sample(v.e, big);	/* opened after: seen already */
		assert_int_equal(avfs_engine_wberr_check(v.e, big, &later), 0);
	} else {
		assert_int_equal(avfs_engine_wberr_check(v.e, big, &sample), 0);
	}
	assert_false(avfs_fs_rdonly(v.io->fs));
	assert_null(avfs_engine_failure(v.e));
	/* the disk good again: the same write goes through, and everything commits */
	assert_int_equal(avfs_memdisk_fail_reads(v.d, 0, 0), 0);
	assert_int_equal(avfs_memdisk_fail_writes(v.d, 0, 0), 0);
	assert_int_equal(file_io(&v, ino_of(v.io, "/small"), true, 0, buf, 100), 100);
	avfs_engine_commit(v.e, v.now);
	pump(&v);
	assert_int_equal(v.commit_err, 0);
	assert_fsck_clean(v.io->fs);
	remount_clean(&v, 0);
	free(buf);
	(void)res;
}

static void test_faults_work(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(work_cases) / sizeof(work_cases[0]); i++)
		run_work_case(&work_cases[i]);
}

/* A commit's write (or FLUSH) fails: the commit fails, the file system turns read-only
 * (writers get EROFS), the log line and avfs_engine_failure name the block and its kind. A
 * failure before the commit record leaves the last commit; after it — the checkpoint's
 * writes home and to the backup copies, which come after the commit is done — the
 * transaction is in the journal and a remount replays it. */
struct commit_case {
	const char *name;
	enum kind kind;
	bool backup;		/* the block's backup copy fails, not its home */
	bool replayed;		/* the commit record made it: a remount shows the transaction */
};

static const struct commit_case commit_cases[] = {
	{ "journal", K_JLOG, false, false },
	{ "FLUSH before the commit record", K_FLUSH, false, false },
	{ "superblock", K_SUPER, false, true },
	{ "superblock backup", K_SUPER, true, true },
	{ "metadata bitmap", K_MBITMAP, false, true },
	{ "data bitmap", K_DBITMAP, false, true },
	{ "data bitmap backup", K_DBITMAP, true, true },
	{ "inode bitmap", K_IBITMAP, false, true },
	{ "inode table", K_ITABLE, false, true },
	{ "inode table backup", K_ITABLE, true, true },
	{ "block map", K_MAP, false, true },
	{ "directory", K_DIR, false, true },
	{ "directory backup", K_DIR, true, true },
};

/* The transaction the commit cases fail: every kind of block changes — a new file in /many
 * (directory, inode bitmap and table), /big grown by new blocks (data bitmap, its map block),
 * a long symlink (a new dynamic block: the metadata bitmap), /many/file40 touched. */
static void change_all(struct drv *v, uint8_t *buf)
{
	uint64_t ino, big = ino_of(v->io, "/big"), many = ino_of(v->io, "/many");
	struct avfs_stat st = { .mode = 0600 };
	char target[300];

	assert_int_equal(avfs_fs_mknod(v->io->fs, many, "new", S_IFREG | 0644, 0, 0, NOW, &ino),
			 0);
	memset(target, 'y', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	assert_int_equal(avfs_fs_symlink(v->io->fs, AVFS_ROOT_INO, "newlink", target, 0, 0, NOW,
					 &ino), 0);
	assert_int_equal(avfs_fs_setattr(v->io->fs, ino_of(v->io, "/many/file40"), AVFS_SET_MODE,
					 &st, NOW), 0);
	assert_int_equal(file_io(v, big, true, size_of(v, big), buf, 2 * BS), 2 * BS);
}

static void run_commit_case(const struct commit_case *c)
{
	struct avfs_super sb = geo();
	struct drv v;
	uint8_t *buf = malloc(2 * BS);
	uint64_t m = 0, off, ino;
	uint32_t after;
	struct avfs_fsio *ro;

	print_message("  %s: read-only, the block named\n", c->name);
	memset(buf, 0x77, 2 * BS);
	drv_start(&v);
	if (c->kind != K_FLUSH && c->kind != K_JLOG)
		m = block_of(v.io, c->kind);
	change_all(&v, buf);
	if (c->kind == K_FLUSH) {
		assert_int_equal(avfs_memdisk_fail_flushes(v.d, true), 0);
	} else if (c->kind == K_JLOG) {
		off = (sb.journal_start + 2) * MB;
		assert_int_equal(avfs_memdisk_fail_writes(v.d, off, (sb.journal_blocks - 2) * MB),
				 0);
	} else {
		off = c->backup ? avfs_fs_backup_off(&sb, m) : m * MB;
		assert_int_equal(avfs_memdisk_fail_writes(v.d, off, MB), 0);
	}
	avfs_engine_commit(v.e, v.now);
	pump(&v);
	if (c->replayed) {
		/* the commit is its journal write; the homes fail in the checkpoint after it */
		assert_int_equal(v.commit_err, 0);
		assert_int_equal(v.commits, 1);
		assert_false(avfs_fs_rdonly(v.io->fs));
		avfs_engine_checkpoint(v.e, v.now);
		pump(&v);
	}
	assert_int_equal(v.commit_err, -EIO);
	assert_true(avfs_fs_rdonly(v.io->fs));
	assert_non_null(avfs_engine_failure(v.e));
	print_message("    status: %s\n", avfs_engine_failure(v.e));
	assert_non_null(strstr(avfs_engine_failure(v.e), kind_name[c->kind]));
	assert_non_null(strstr(v.log, "read-only"));
	assert_non_null(strstr(v.log, kind_name[c->kind]));
	if (c->backup)
		assert_non_null(strstr(avfs_engine_failure(v.e), "backup copy"));
	/* writers: EROFS, and nothing changes */
	assert_int_equal(avfs_fs_mknod(v.io->fs, AVFS_ROOT_INO, "x", S_IFREG | 0644, 0, 0, NOW,
				       &ino), -EROFS);
	assert_int_equal(file_io(&v, ino_of(v.io, "/small"), true, 0, buf, 10), -EROFS);
	/* readers still read */
	assert_int_equal(file_io(&v, ino_of(v.io, "/small"), false, 0, buf, 10), 10);
	/* the failing disk mounts read-only: the last commit, or the journaled one */
	ro = mount_ok(v.d, AVFS_MOUNT_RDONLY, NULL);
	assert_fsck_clean(ro->fs);
	after = digest(ro);
	assert_true((after == digest_base) == !c->replayed);
	avfs_fsio_abandon(ro);
	/* the sector remapped: a read-write mount repairs and checks clean, same state */
	remount_clean(&v, after);
	free(buf);
}

static void test_faults_commit(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(commit_cases) / sizeof(commit_cases[0]); i++)
		run_commit_case(&commit_cases[i]);
}

/* The matrix's size, for the log. */
static void test_faults_count(void **state)
{
	size_t n = sizeof(mount_cases) / sizeof(mount_cases[0]) +
		   sizeof(work_cases) / sizeof(work_cases[0]) +
		   sizeof(commit_cases) / sizeof(commit_cases[0]);

	(void)state;
	printf("fault matrix: %zu cases (%zu at mount, %zu during work, %zu during commit)\n", n,
	       sizeof(mount_cases) / sizeof(mount_cases[0]),
	       sizeof(work_cases) / sizeof(work_cases[0]),
	       sizeof(commit_cases) / sizeof(commit_cases[0]));
	assert_true(n >= 39);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_faults_mount),
		cmocka_unit_test(test_faults_work),
		cmocka_unit_test(test_faults_commit),
		cmocka_unit_test(test_faults_count),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, setup, teardown);
}
