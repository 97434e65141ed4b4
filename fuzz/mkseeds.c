/*
 * mkseeds.c — the seed corpora of the image fuzz targets: tiny images made the way the tests
 * make theirs (tests/test_fsck.c: mkfs, a populated tree, a crash right after a commit record,
 * files unlinked while open), coded as fuzz inputs (fuzzimg.h). Usage: mkseeds DIR — writes
 * DIR/{super,replay,mount,fsck}/NAME. Test code only.
 */
#include "fs.h"
#include "fuzzimg.h"
#include "memdisk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NOW 1700000000000000000ll

static const char *dir;

static void die(const char *what, int err)
{
	fprintf(stderr, "mkseeds: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void put(const char *target, const char *name, const uint8_t *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		die(path, errno);
}

/* The image on d as seeds of every image target, resealed (flags bit 0) and not. */
static void seeds(struct avfs_disk *d, const char *name)
{
	static uint8_t out[FUZZ_DEV_SIZE + 4096];
	uint8_t *dev = avfs_memdisk_data(d);
	uint64_t size = FUZZ_DEV_SIZE;
	size_t n;
	char nm[128];

	n = fuzz_img_encode(FUZZ_F_RESEAL, dev, out, sizeof(out));
	if (!n)
		die("encode", EOVERFLOW);
	put("mount", name, out, n);
	put("replay", name, out, n);
	put("fsck", name, out, n);
	out[0] = FUZZ_F_RESEAL | 2 | 4;		/* read-only / forced variants */
	snprintf(nm, sizeof(nm), "%s-ro", name);
	put("replay", nm, out, n);
	put("fsck", nm, out, n);
	put("mount", nm, out, n);
	memcpy(out, dev, AVFS_MBLOCK);
	memcpy(out + AVFS_MBLOCK, &size, 8);
	put("super", name, out, AVFS_MBLOCK + 8);
}

static struct avfs_fsio *mount(struct avfs_disk *d)
{
	struct avfs_fsio *io;
	char why[256];
	int err = avfs_fsio_mount(d, 0, &io, NULL, why, sizeof(why));

	if (err) {
		fprintf(stderr, "mkseeds: mount: %s\n", why);
		exit(1);
	}
	return io;
}

static struct avfs_disk *fresh(void)
{
	struct avfs_mkfs_opts o = { .size = FUZZ_DEV_SIZE, .block_shift = 16, .journal_blocks = 64,
				    .inodes = 32, .dyn_blocks = 16, .zones = 2, .seed = 1,
				    .now_ns = NOW };
	struct avfs_disk *d;
	char why[256];
	int err;

	if ((err = avfs_memdisk_open(FUZZ_DEV_SIZE, 512, &d)))
		die("memdisk", err);
	if ((err = avfs_fsio_mkfs(d, &o, NULL, why, sizeof(why)))) {
		fprintf(stderr, "mkseeds: mkfs: %s\n", why);
		exit(1);
	}
	return d;
}

/* Directories, files (one over several data blocks; one of a page and one of two, small files
 * sharing a block: a unit map, format 3), short and long symlinks, a long name, a hard link:
 * what test_fsck's populate makes, scaled to 8 data blocks; and two extended attribute blocks
 * (a user attribute, a default ACL: u::rwx g::r-x o::---). */
static void populate(struct avfs_fsio *io)
{
	static uint8_t buf[150000];
	static const uint8_t acl[] = { 2, 0, 0, 0, 1, 0, 7, 0, 255, 255, 255, 255,
				       4, 0, 5, 0, 255, 255, 255, 255, 32, 0, 0, 0, 255, 255, 255, 255 };
	uint64_t d1 = 0, d2 = 0, f1 = 0, f2 = 0, ino;
	char name[200], target[300];

	memset(buf, 0x33, sizeof(buf));
	if (avfs_fs_mkdir(io->fs, AVFS_ROOT_INO, "d1", 0755, 0, 0, NOW, &d1) ||
	    avfs_fs_mkdir(io->fs, d1, "d2", 0700, 1000, 1000, NOW, &d2) ||
	    avfs_fs_mknod(io->fs, AVFS_ROOT_INO, "f1", 0100644, 0, 0, NOW, &f1) ||
	    avfs_fs_mknod(io->fs, d2, "f2", 0100600, 1000, 1000, NOW, &f2))
		die("populate", EIO);
	avfs_fsio_write(io, f1, 0, buf, sizeof(buf));
	avfs_fsio_write(io, f2, 0, buf, 4096);
	if (avfs_fs_mknod(io->fs, d1, "f3", 0100644, 0, 0, NOW, &ino) ||
	    avfs_fsio_write(io, ino, 0, buf, 5000) != 5000)
		die("populate", EIO);
	avfs_fs_symlink(io->fs, AVFS_ROOT_INO, "s", "f1", 0, 0, NOW, &ino);
	memset(target, 'x', 299);
	target[299] = 0;
	avfs_fs_symlink(io->fs, d1, "slong", target, 0, 0, NOW, &ino);
	memset(name, 'n', 199);
	name[199] = 0;
	avfs_fs_mknod(io->fs, d1, name, 0100644, 0, 0, NOW, &ino);
	avfs_fs_link(io->fs, f1, d2, "f1link", NOW);
	if (avfs_fs_setxattr(io->fs, f1, "user.seed", "value", 5, 0, NOW) ||
	    avfs_fs_setxattr(io->fs, d2, "system.posix_acl_default", acl, sizeof(acl), 0, NOW))
		die("setxattr", EIO);
	if (avfs_fsio_sync(io))
		die("sync", EIO);
}

/* Commit to the journal only: power lost right after the commit record. */
static void crash_after_commit(struct avfs_disk *d, struct avfs_fsio *io)
{
	const struct avfs_super *sb = avfs_fs_super(io->fs);
	uint64_t lo = sb->journal_start * AVFS_MBLOCK,
		 hi = (sb->journal_start + sb->journal_blocks) * AVFS_MBLOCK;
	struct avfs_plan *p;

	if (avfs_fs_commit(io->fs, NOW, &p) || !p)
		die("commit", EIO);
	for (size_t i = 0; i < p->n; i++) {
		struct avfs_plan one = { .ops = &p->ops[i], .n = 1 };

		if (p->ops[i].kind == AVFS_PLAN_FLUSH ||
		    (p->ops[i].off >= lo && p->ops[i].off + p->ops[i].len <= hi))
			avfs_fsio_run(d, &one);
	}
	avfs_plan_free(p);
	avfs_fsio_abandon(io);
}

int main(int argc, char **argv)
{
	struct avfs_disk *d;
	struct avfs_fsio *io;
	uint64_t ino, x;

	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds DIR\n");
		return 2;
	}
	dir = argv[1];
	mkdir(dir, 0755);

	d = fresh();
	seeds(d, "fresh");
	io = mount(d);
	populate(io);
	avfs_fsio_unmount(io);
	seeds(d, "populated");

	/* a transaction in the journal, not yet home: a new directory and a rename */
	io = mount(d);
	avfs_fs_mkdir(io->fs, AVFS_ROOT_INO, "late", 0755, 0, 0, NOW, &x);
	avfs_fs_rename(io->fs, AVFS_ROOT_INO, "f1", x, "moved", 0, NOW);
	crash_after_commit(d, io);
	seeds(d, "journal");
	avfs_disk_close(d);

	/* a file unlinked while open, then the crash: an orphan for the next mount */
	d = fresh();
	io = mount(d);
	populate(io);
	if (!avfs_fsio_resolve(io, "/f1", &ino)) {
		avfs_fs_open_ref(io->fs, ino);
		avfs_fs_unlink(io->fs, AVFS_ROOT_INO, "f1", NOW);
	}
	crash_after_commit(d, io);
	seeds(d, "orphan");
	avfs_disk_close(d);
	return 0;
}
