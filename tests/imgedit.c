/*
 * imgedit.c — a small editor of AVFS images for the hostile-image tests (issue 19): it changes
 * one field through the file-system core, so every CRC is right, either committed home as the
 * file system would or only into the journal (power lost right after the commit record, so
 * the next mount replays it). The image is read into a memory disk and written back whole.
 *   imgedit IMAGE inode PATH FIELD VALUE [--journal]     FIELD: nlink, nblocks, size, mode
 *   imgedit IMAGE super FIELD VALUE [--journal]          FIELD: dbitmap_start, ninodes,
 *                                                        free_data
 * Test code: nothing shipped uses it.
 */
#include "fs_i.h"
#include "fsio.h"
#include "memdisk.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
	fprintf(stderr, "usage: imgedit IMAGE inode PATH FIELD VALUE [--journal]\n"
			"       imgedit IMAGE super FIELD VALUE [--journal]\n");
	return 2;
}

static uint8_t *load(const char *path, uint64_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		return NULL;
	p = malloc((size_t)n);
	if (!p || fread(p, 1, (size_t)n, f) != (size_t)n)
		return NULL;
	fclose(f);
	*size = (uint64_t)n;
	return p;
}

/* Commit the running transaction only into the journal (the checkpoint home never runs). */
static int journal_only(struct avfs_disk *d, struct avfs_fsio *io)
{
	const struct avfs_super *sb = &io->fs->sb;
	uint64_t lo = sb->journal_start * AVFS_MBLOCK,
		 hi = (sb->journal_start + sb->journal_blocks) * AVFS_MBLOCK;
	struct avfs_plan *p;
	int err = avfs_fs_commit(io->fs, 0, &p);

	for (size_t i = 0; !err && p && i < p->n; i++) {
		struct avfs_plan one = { .ops = &p->ops[i], .n = 1 };

		if (p->ops[i].kind == AVFS_PLAN_FLUSH ||
		    (p->ops[i].off >= lo && p->ops[i].off + p->ops[i].len <= hi))
			err = avfs_fsio_run(d, &one);
	}
	avfs_plan_free(p);
	avfs_fsio_abandon(io);
	return err;
}

int main(int argc, char **argv)
{
	bool journal = argc > 1 && !strcmp(argv[argc - 1], "--journal");
	int nargs = argc - journal;
	uint64_t size, value, ino;
	struct avfs_fsio *io;
	struct avfs_disk *d;
	uint8_t *img;
	char why[256];
	FILE *f;
	int err;

	if (nargs < 5)
		return usage();
	img = load(argv[1], &size);
	if (!img || avfs_memdisk_open_image(img, size, 512, &d)) {
		fprintf(stderr, "imgedit: cannot read %s\n", argv[1]);
		return 1;
	}
	if (avfs_fsio_mount(d, AVFS_MOUNT_KEEP_ORPHANS, &io, NULL, why, sizeof(why))) {
		fprintf(stderr, "imgedit: cannot mount %s: %s\n", argv[1], why);
		return 1;
	}
	if (!strcmp(argv[2], "inode") && nargs == 6) {
		struct avfs_dinode *di;

		if ((err = avfs_fsio_resolve(io, argv[3], &ino))) {
			fprintf(stderr, "imgedit: %s: %s\n", argv[3], strerror(-err));
			return 1;
		}
		di = fs_ino_raw(io->fs, ino);
		value = strtoull(argv[5], NULL, 0);
		if (!strcmp(argv[4], "nlink"))
			di->nlink = (uint32_t)value;
		else if (!strcmp(argv[4], "nblocks"))
			di->nblocks = value;
		else if (!strcmp(argv[4], "size"))
			di->size = value;
		else if (!strcmp(argv[4], "mode"))
			di->mode = (uint32_t)value;
		else
			return usage();
		fs_ino_dirty(io->fs, ino);
	} else if (!strcmp(argv[2], "super") && nargs == 5) {
		struct avfs_super *sb = fs_sb(io->fs);

		value = strtoull(argv[4], NULL, 0);
		if (!strcmp(argv[3], "dbitmap_start"))
			sb->dbitmap_start = value;
		else if (!strcmp(argv[3], "ninodes"))
			sb->ninodes = value;
		else if (!strcmp(argv[3], "free_data"))
			sb->free_data = value;
		else
			return usage();
		fs_dirty(io->fs, 0);
	} else {
		return usage();
	}
	err = journal ? journal_only(d, io) : avfs_fsio_unmount(io);
	if (err) {
		fprintf(stderr, "imgedit: writing failed: %s\n", strerror(-err));
		return 1;
	}
	f = fopen(argv[1], "r+b");
	if (!f || fwrite(avfs_memdisk_data(d), 1, size, f) != size || fclose(f)) {
		fprintf(stderr, "imgedit: cannot write %s\n", argv[1]);
		return 1;
	}
	avfs_disk_close(d);
	free(img);
	return 0;
}
