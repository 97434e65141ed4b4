/*
 * test_fs.c — the file system core through its synchronous driver on a RAM disk: ZRR rules
 * seen through real files, namespace semantics, data mapping, stable readdir cookies, a
 * 100,000-entry directory, repair from the backup region, cheap deletion, and files unlinked
 * while open (orphans: freed at the last close, or at the next mount after a crash), issue 18's
 * POSIX details (device numbers, long symlinks, SEEK_DATA/SEEK_HOLE, punched holes, atime).
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
#include <time.h>
#include <unistd.h>

#include "fs_i.h"
#include "fsck.h"
#include "fsck_clean.h"
#include "fsio.h"
#include "memdisk.h"

struct fx {
	struct avfs_disk *d;
	struct avfs_fsio *io;
};

static struct fx *fx_new(uint64_t size, const struct avfs_mkfs_opts *o)
{
	struct fx *f = calloc(1, sizeof(*f));
	char why[256];
	struct avfs_super sb;

	assert_int_equal(avfs_memdisk_open(size, 512, &f->d), 0);
	assert_int_equal(avfs_fsio_mkfs(f->d, o, &sb, why, sizeof(why)), 0);
	assert_int_equal(avfs_fsio_mount(f->d, 0, &f->io, NULL, why, sizeof(why)), 0);
	return f;
}

static void fx_remount(struct fx *f)
{
	char why[256];

	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	assert_int_equal(avfs_fsio_mount(f->d, 0, &f->io, NULL, why, sizeof(why)), 0);
}

static void fx_free(struct fx *f)
{
	if (f->io) {
		assert_int_equal(f->io->fs->overruns, 0);	/* every credit estimate held */
		assert_int_equal(avfs_fsio_unmount(f->io), 0);
	}
	avfs_disk_close(f->d);
	free(f);
}

static uint64_t mk(struct fx *f, uint64_t dir, const char *name)
{
	uint64_t ino;

	assert_int_equal(avfs_fs_mknod(f->io->fs, dir, name, S_IFREG | 0644, 0, 0, 1, &ino), 0);
	return ino;
}

/* The zone of each data block of a file, in file order. */
static int zones_of(struct fx *f, uint64_t ino, uint32_t *z, int max)
{
	struct avfs_bext e[64];
	int n = avfs_fs_map_read(f->io->fs, ino, 0, UINT64_MAX / 2, e, 64);

	assert_true(n >= 0);
	for (int i = 0; i < n && i < max; i++)
		z[i] = avfs_fs_zone_of_dev(f->io->fs, e[i].dev_off);
	return n;
}

/* ZRR through real files (papers/001 §3.2.2), 64 zones on a small image: three files
 * appended one block at a time in turn. Each file's consecutive blocks are in consecutive
 * zones; each new file starts in the zone after the last one used; within a zone the first
 * free block is taken. Prints the block -> zone sequences. */
static void test_fs_zrr_interleaved(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 64, .seed = 5 };
	struct fx *f = fx_new(128u << 20, &o);
	uint64_t ino[3];
	uint8_t *buf = calloc(1, 65536);
	uint32_t z[3][16];
	uint32_t first = (avfs_fs_super(f->io->fs)->last_zone + 1) % 64;

	(void)state;
	memset(buf, 0xab, 65536);
	for (int i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "%c", 'A' + i);
		ino[i] = mk(f, AVFS_ROOT_INO, name);
	}
	for (int round = 0; round < 10; round++)
		for (int i = 0; i < 3; i++)
			assert_int_equal(avfs_fsio_write(f->io, ino[i], (uint64_t)round * 65536, buf,
							 65536), 65536);
	for (int i = 0; i < 3; i++) {
		struct avfs_bext e[16];
		int n = avfs_fs_map_read(f->io->fs, ino[i], 0, 10 * 65536, e, 16);

		assert_int_equal(zones_of(f, ino[i], z[i], 16), 10);
		printf("file %c:", 'A' + i);
		for (int k = 0; k < n; k++)
			printf(" %llu(z%u)", (unsigned long long)((e[k].dev_off -
				avfs_fs_super(f->io->fs)->data_off) >> 16), z[i][k]);
		printf("\n");
	}
	/* A's first block is in the first zone after format; B's and C's first blocks follow
	 * the zone last used (A's first block, then B's); each file then walks the zones */
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 10; k++)
			assert_int_equal(z[i][k], (first + (uint32_t)i + (uint32_t)k) % 64);
	/* first free block of each zone: file A's block k is the first block of its zone (the
	 * zones were empty), B's the second of the zone A used one round later, ... */
	{
		struct avfs_bext e[16];

		for (int i = 0; i < 3; i++) {
			int n = avfs_fs_map_read(f->io->fs, ino[i], 0, 10 * 65536, e, 16);

			for (int k = 0; k < n; k++) {
				uint64_t blk = (e[k].dev_off - avfs_fs_super(f->io->fs)->data_off) >> 16;
				uint64_t zfirst = avfs_alloc_zone_first(&f->io->fs->alloc, z[i][k]);
				/* how many earlier allocations landed in this zone before this one */
				uint64_t before = 0;

				for (int j = 0; j < 3; j++)
					for (int kk = 0; kk < 10; kk++)
						if (z[j][kk] == z[i][k] &&
						    (kk < k || (kk == k && j < i)))
							before++;
				assert_int_equal(blk, zfirst + before);
			}
		}
	}
	assert_fsck_clean(f->io->fs);
	free(buf);
	fx_free(f);
}

/* A new file starts in the zone after the one last used for *any* allocation, even when
 * that allocation was another file's middle block; a full zone is skipped. */
static void test_fs_zrr_new_file_and_full_zone(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 64, .seed = 9 };
	struct fx *f = fx_new(128u << 20, &o);
	uint8_t *buf = calloc(1, 65536);
	uint64_t a = mk(f, AVFS_ROOT_INO, "a"), b;
	uint32_t za[8], zb[4];
	uint64_t zone_len;

	(void)state;
	for (int k = 0; k < 5; k++)
		assert_int_equal(avfs_fsio_write(f->io, a, (uint64_t)k * 65536, buf, 65536), 65536);
	assert_int_equal(zones_of(f, a, za, 8), 5);
	b = mk(f, AVFS_ROOT_INO, "b");
	assert_int_equal(avfs_fsio_write(f->io, b, 0, buf, 65536), 65536);
	assert_int_equal(zones_of(f, b, zb, 4), 1);
	assert_int_equal(zb[0], (za[4] + 1) % 64);
	/* fill the zone after b's block completely with a third file's fallocate... by taking
	 * every free block of that zone directly through the allocator's bitmap view */
	{
		uint32_t target = (zb[0] + 1) % 64;
		struct avfs_alloc *al = &f->io->fs->alloc;

		zone_len = avfs_alloc_zone_end(al, target) - avfs_alloc_zone_first(al, target);
		for (uint64_t blk = avfs_alloc_zone_first(al, target); blk < avfs_alloc_zone_end(al, target); blk++)
			if (!avfs_bitmap_test(&f->io->fs->dmap, blk))
				avfs_bitmap_set(&f->io->fs->dmap, blk);
		assert_int_equal(avfs_fsio_write(f->io, b, 65536, buf, 65536), 65536);
		assert_int_equal(zones_of(f, b, zb, 4), 2);
		assert_int_equal(zb[1], (target + 1) % 64);	/* the full zone was skipped */
	}
	assert_true(zone_len >= 1);
	free(buf);
	avfs_fsio_abandon(f->io);	/* the bitmap was forged in memory only: do not commit */
	f->io = NULL;
	fx_free(f);
}

/* The first zone after format is random from the seed, recorded in the superblock, and the
 * same for the same seed. */
static void test_fs_zrr_first_zone_seeded(void **state)
{
	uint32_t seen[8];
	int distinct = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 64, .seed = seed };
		struct fx *f = fx_new(64u << 20, &o), *g = fx_new(64u << 20, &o);
		uint32_t z = avfs_fs_super(f->io->fs)->last_zone;

		assert_int_equal(z, avfs_fs_super(g->io->fs)->last_zone);
		assert_int_equal(avfs_fs_super(f->io->fs)->seed, seed);
		seen[seed - 1] = z;
		distinct++;
		for (uint64_t s = 1; s < seed; s++)
			if (seen[s - 1] == z) {
				distinct--;
				break;
			}
		fx_free(f);
		fx_free(g);
	}
	assert_true(distinct >= 5);
}

/* ZRR in runs through real files (mkfs.avfs's default): two files appended a block each in
 * turn each take runs of alloc_run consecutive blocks per zone, zones visited from both ends
 * inwards; the run length is in the superblock, so a remount allocates the same way; fsck is
 * clean. */
static void test_fs_zrr_run(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 8, .seed = 5,
				    .alloc_policy = AVFS_ALLOC_ZRR_RUN, .alloc_run = 4 };
	struct fx *f = fx_new(128u << 20, &o);
	uint8_t *buf = calloc(1, 65536);
	uint64_t ino[2] = { mk(f, AVFS_ROOT_INO, "a"), mk(f, AVFS_ROOT_INO, "b") };

	(void)state;
	assert_int_equal(avfs_fs_super(f->io->fs)->alloc_run, 4);
	for (int round = 0; round < 48; round++) {
		if (round == 24)
			fx_remount(f);
		for (int i = 0; i < 2; i++)
			assert_int_equal(avfs_fsio_write(f->io, ino[i], (uint64_t)round * 65536, buf,
							 65536), 65536);
	}
	for (int i = 0; i < 2; i++) {
		struct avfs_bext e[64];
		uint32_t z[48];
		struct avfs_alloc *al = &f->io->fs->alloc;
		int n = avfs_fs_map_read(f->io->fs, ino[i], 0, 48 * 65536, e, 64);

		assert_int_equal(n, 48);
		assert_int_equal(zones_of(f, ino[i], z, 48), 48);
		for (int k = 1; k < 48; k++) {
			if (k % 4) {	/* inside a run: the next block of the same zone */
				assert_int_equal(e[k].dev_off, e[k - 1].dev_off + 65536);
				assert_int_equal(z[k], z[k - 1]);
			} else {	/* a new run: the next zone from both ends inwards */
				assert_int_equal(z[k], avfs_alloc_next_zone(al, z[k - 1]));
			}
		}
	}
	assert_fsck_clean(f->io->fs);
	free(buf);
	fx_free(f);
}

/* The contiguous first-fit baseline keeps a lone file contiguous. Interleaved files: with
 * alloc_run 1 (plain first-fit, images made before runs) each fragments block by block; as
 * mkfs makes it (16 MiB runs: 256 blocks of 64 KiB) each gets runs of its own. */
static void test_fs_contig_baseline(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 64, .seed = 5, .alloc_policy = 1,
				    .alloc_run = 1 };
	struct fx *f = fx_new(128u << 20, &o);
	uint8_t *buf = calloc(1, 65536);
	uint64_t a = mk(f, AVFS_ROOT_INO, "a"), b = mk(f, AVFS_ROOT_INO, "b"), c;
	struct avfs_bext e[16];
	int n;

	(void)state;
	for (int k = 0; k < 6; k++) {
		assert_int_equal(avfs_fsio_write(f->io, a, (uint64_t)k * 65536, buf, 65536), 65536);
		assert_int_equal(avfs_fsio_write(f->io, b, (uint64_t)k * 65536, buf, 65536), 65536);
	}
	n = avfs_fs_map_read(f->io->fs, a, 0, 6 * 65536, e, 16);
	assert_int_equal(n, 6);
	assert_int_not_equal(e[1].dev_off, e[0].dev_off + 65536);	/* fragmented */
	c = mk(f, AVFS_ROOT_INO, "c");
	for (int k = 0; k < 6; k++)
		assert_int_equal(avfs_fsio_write(f->io, c, (uint64_t)k * 65536, buf, 65536), 65536);
	n = avfs_fs_map_read(f->io->fs, c, 0, 6 * 65536, e, 16);
	for (int k = 1; k < n; k++)
		assert_int_equal(e[k].dev_off, e[k - 1].dev_off + 65536);	/* contiguous */
	fx_free(f);

	/* mkfs's default run: two files written in turn, 300 blocks each, get 256-block runs */
	o.alloc_run = 0;
	f = fx_new(128u << 20, &o);
	assert_int_equal(avfs_fs_super(f->io->fs)->alloc_run, 256);
	a = mk(f, AVFS_ROOT_INO, "a");
	b = mk(f, AVFS_ROOT_INO, "b");
	for (int k = 0; k < 300; k++) {
		assert_int_equal(avfs_fsio_write(f->io, a, (uint64_t)k * 65536, buf, 65536), 65536);
		assert_int_equal(avfs_fsio_write(f->io, b, (uint64_t)k * 65536, buf, 65536), 65536);
	}
	for (int k = 0; k < 2; k++) {
		uint64_t ino = k ? b : a, data_off = avfs_fs_super(f->io->fs)->data_off, first;

		assert_int_equal(avfs_fs_map_read(f->io->fs, ino, 0, 65536, e, 1), 1);
		first = e[0].dev_off;
		assert_int_equal((first - data_off) / 65536 % 256, 0);	/* on a run boundary */
		for (uint64_t blk = 1; blk < 300; blk++) {
			assert_int_equal(avfs_fs_map_read(f->io->fs, ino, blk * 65536, 65536, e, 1),
					 1);
			/* a run of 256 blocks, then the next but one: the other file's between */
			assert_int_equal(e[0].dev_off,
					 first + (blk < 256 ? blk : blk + 256) * 65536);
		}
	}
	free(buf);
	fx_free(f);
}

/* Namespace semantics: create/lookup, EEXIST, ENAMETOOLONG, ENOTDIR, rmdir ENOTEMPTY,
 * rename over a file, across directories, NOREPLACE, EXCHANGE, a directory into its own
 * subtree (EINVAL), hard links and symlinks (short and long); all survive a remount. */
static void test_fs_namespace(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	struct avfs_fs *fs = f->io->fs;
	uint64_t d1, d2, d3, x, y, z, s1, s2, got;
	char longname[300], target[600], buf[700];
	struct avfs_stat st;

	(void)state;
	assert_int_equal(avfs_fs_mkdir(fs, 1, "d1", 0755, 0, 0, 1, &d1), 0);
	assert_int_equal(avfs_fs_mkdir(fs, 1, "d2", 0755, 0, 0, 1, &d2), 0);
	assert_int_equal(avfs_fs_mkdir(fs, d1, "d3", 0755, 0, 0, 1, &d3), 0);
	x = mk(f, d1, "x");
	y = mk(f, d2, "y");
	assert_int_equal(avfs_fs_mknod(fs, d1, "x", 0644, 0, 0, 1, &z), -EEXIST);
	memset(longname, 'n', 256);
	longname[256] = 0;
	assert_int_equal(avfs_fs_mknod(fs, 1, longname, 0644, 0, 0, 1, &z), -ENAMETOOLONG);
	longname[255] = 0;
	z = mk(f, 1, longname);	/* 255 bytes: five slots */
	assert_int_equal(avfs_fs_lookup(fs, 1, longname, &got), 0);
	assert_int_equal(got, z);
	assert_int_equal(avfs_fs_lookup(fs, x, "a", &got), -ENOTDIR);
	assert_int_equal(avfs_fs_rmdir(fs, 1, "d1", 1), -ENOTEMPTY);
	assert_int_equal(avfs_fs_unlink(fs, 1, "d1", 1), -EISDIR);
	assert_int_equal(avfs_fs_rmdir(fs, d1, "x", 1), -ENOTDIR);
	/* rename over an existing file across directories: y is gone, x has its name */
	assert_int_equal(avfs_fs_rename(fs, d1, "x", d2, "y", 0, 2), 0);
	assert_int_equal(avfs_fs_lookup(fs, d2, "y", &got), 0);
	assert_int_equal(got, x);
	assert_int_equal(avfs_fs_lookup(fs, d1, "x", &got), -ENOENT);
	assert_int_equal(avfs_fs_getattr(fs, y, &st), -ENOENT);
	/* noreplace, exchange, a directory into its own subtree */
	x = mk(f, d1, "x2");
	assert_int_equal(avfs_fs_rename(fs, d1, "x2", d2, "y", AVFS_RENAME_NOREPLACE, 3), -EEXIST);
	assert_int_equal(avfs_fs_rename(fs, d1, "x2", d2, "y", AVFS_RENAME_EXCHANGE, 3), 0);
	assert_int_equal(avfs_fs_lookup(fs, d2, "y", &got), 0);
	assert_int_equal(got, x);
	assert_int_equal(avfs_fs_rename(fs, 1, "d1", d3, "in", 0, 4), -EINVAL);
	assert_int_equal(avfs_fs_rename(fs, d1, "d3", d2, "d3moved", 0, 4), 0);
	assert_int_equal(avfs_fs_lookup(fs, d3, "..", &got), 0);
	assert_int_equal(got, d2);
	/* a directory over a non-empty directory, and over a file */
	assert_int_equal(avfs_fs_mkdir(fs, 1, "e", 0755, 0, 0, 1, &got), 0);
	assert_int_equal(avfs_fs_rename(fs, 1, "e", 1, "d2", 0, 5), -ENOTEMPTY);
	assert_int_equal(avfs_fs_rename(fs, 1, "e", d2, "y", 0, 5), -ENOTDIR);
	/* hard links and symlinks */
	assert_int_equal(avfs_fs_link(fs, x, 1, "hard", 6), 0);
	assert_int_equal(avfs_fs_getattr(fs, x, &st), 0);
	assert_int_equal(st.nlink, 2);
	assert_int_equal(avfs_fs_link(fs, d1, 1, "dirlink", 6), -EPERM);
	assert_int_equal(avfs_fs_symlink(fs, 1, "s1", "short/target", 0, 0, 7, &s1), 0);
	memset(target, 't', 599);
	target[599] = 0;
	assert_int_equal(avfs_fs_symlink(fs, 1, "s2", target, 0, 0, 7, &s2), 0);
	fx_remount(f);
	fs = f->io->fs;
	assert_int_equal(avfs_fs_readlink(fs, s1, buf, sizeof(buf)), 12);
	assert_string_equal(buf, "short/target");
	assert_int_equal(avfs_fs_readlink(fs, s2, buf, sizeof(buf)), 599);
	assert_memory_equal(buf, target, 599);
	assert_int_equal(avfs_fsio_resolve(f->io, "/hard", &got), 0);
	assert_int_equal(got, x);
	assert_int_equal(avfs_fs_unlink(fs, d2, "y", 8), 0);
	assert_int_equal(avfs_fs_getattr(fs, x, &st), 0);
	assert_int_equal(st.nlink, 1);
	assert_int_equal(avfs_fsio_resolve(f->io, "/d2/d3moved", &got), 0);
	assert_int_equal(got, d3);
	assert_fsck_clean(fs);
	fx_free(f);
}

/* Data: holes read as zeros, bytes past the end of a shrunk file never come back, truncate
 * up reads zeros, fallocate reserves blocks that read as zeros (with and without keeping
 * the size), and content survives a remount. */
static void test_fs_data(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	uint8_t *w = malloc(400000), *r = malloc(400000), *z = calloc(1, 400000);
	uint64_t a = mk(f, 1, "a"), b = mk(f, 1, "b");
	struct avfs_stat st;
	struct avfs_statfs sfs0, sfs1;

	(void)state;
	for (int i = 0; i < 400000; i++)
		w[i] = (uint8_t)(i * 13 + 1);
	assert_int_equal(avfs_fsio_write(f->io, a, 200000, w, 100000), 100000);
	assert_int_equal(avfs_fsio_read(f->io, a, 0, r, 400000), 300000);
	assert_memory_equal(r, z, 200000);			/* a hole */
	assert_memory_equal(r + 200000, w, 100000);
	assert_int_equal(avfs_fsio_truncate(f->io, a, 250001), 0);
	assert_int_equal(avfs_fsio_truncate(f->io, a, 300000), 0);
	assert_int_equal(avfs_fsio_read(f->io, a, 0, r, 400000), 300000);
	assert_memory_equal(r + 200000, w, 50001);
	assert_memory_equal(r + 250001, z, 49999);		/* old bytes do not come back */
	/* write past the end, leaving a gap inside the last page */
	assert_int_equal(avfs_fsio_truncate(f->io, a, 100), 0);
	assert_int_equal(avfs_fsio_write(f->io, a, 5000, w, 10), 10);
	assert_int_equal(avfs_fsio_read(f->io, a, 0, r, 400000), 5010);
	assert_memory_equal(r, z, 5000);
	/* fallocate */
	avfs_fs_statfs(f->io->fs, &sfs0);
	assert_int_equal(avfs_fs_fallocate(f->io->fs, b, 0, 300000, true, 1), 0);
	assert_int_equal(avfs_fs_getattr(f->io->fs, b, &st), 0);
	assert_int_equal(st.size, 0);
	avfs_fs_statfs(f->io->fs, &sfs1);
	assert_int_equal(sfs0.bfree - sfs1.bfree, 5);		/* 300000 bytes = 5 blocks of 64K */
	assert_int_equal(avfs_fs_fallocate(f->io->fs, b, 0, 300000, false, 1), 0);
	assert_int_equal(avfs_fsio_read(f->io, b, 0, r, 400000), 300000);
	assert_memory_equal(r, z, 300000);
	assert_int_equal(avfs_fsio_write(f->io, b, 70000, w, 1000), 1000);
	fx_remount(f);
	assert_int_equal(avfs_fsio_read(f->io, b, 0, r, 400000), 300000);
	assert_memory_equal(r, z, 70000);
	assert_memory_equal(r + 70000, w, 1000);
	assert_memory_equal(r + 71000, z, 229000);
	/* shrink frees blocks */
	assert_int_equal(avfs_fsio_truncate(f->io, b, 0), 0);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	avfs_fs_statfs(f->io->fs, &sfs1);
	assert_int_equal(sfs1.bfree, sfs0.bfree);
	assert_fsck_clean(f->io->fs);
	free(w);
	free(r);
	free(z);
	fx_free(f);
}

/* Issue 18's POSIX details in the core: device numbers and 4,095-byte symlink targets survive
 * a remount and check clean; SEEK_DATA/SEEK_HOLE follow the map and the initialized pages; a
 * punched hole frees whole blocks (reusable after the commit: avfs_fs_data_freeing until
 * then), uninitializes trailing pages and names the edges to zero; relatime. */
static void test_fs_posix_details(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	static char t[AVFS_SYMLINK_MAX + 2], back[AVFS_SYMLINK_MAX + 1];
	static const size_t lens[] = { 47, 48, 4031, 4032, 4033, 4095 };
	uint8_t *w = malloc(400000), *r = malloc(400000), *z = calloc(1, 400000);
	uint64_t ino, a, l[6];
	struct avfs_stat st;
	struct avfs_range zr[2];
	unsigned nz;
	const uint64_t B = 65536;

	(void)state;
	assert_int_equal(avfs_fs_mknod_dev(f->io->fs, 1, "c", S_IFCHR | 0600, 0x1234567, 0, 0, 1,
					   &ino), 0);
	assert_int_equal(avfs_fs_mknod_dev(f->io->fs, 1, "r", S_IFREG | 0600, 77, 0, 0, 1, &a), 0);
	for (int i = 0; i < 6; i++) {
		char name[8];

		memset(t, 'a' + i, lens[i]);
		t[lens[i]] = 0;
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(avfs_fs_symlink(f->io->fs, 1, name, t, 0, 0, 1, &l[i]), 0);
	}
	memset(t, 'z', AVFS_SYMLINK_MAX + 1);
	t[AVFS_SYMLINK_MAX + 1] = 0;
	assert_int_equal(avfs_fs_symlink(f->io->fs, 1, "long", t, 0, 0, 1, &ino),
			 -ENAMETOOLONG);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	fx_remount(f);
	assert_int_equal(avfs_fs_lookup(f->io->fs, 1, "c", &ino), 0);
	assert_int_equal(avfs_fs_getattr(f->io->fs, ino, &st), 0);
	assert_int_equal(st.rdev, 0x1234567);
	assert_int_equal(avfs_fs_getattr(f->io->fs, a, &st), 0);
	assert_int_equal(st.rdev, 0);		/* not a device: none kept */
	for (int i = 0; i < 6; i++) {
		memset(t, 'a' + i, lens[i]);
		t[lens[i]] = 0;
		assert_int_equal(avfs_fs_readlink(f->io->fs, l[i], back, sizeof(back)), (int)lens[i]);
		assert_string_equal(back, t);
	}
	assert_fsck_clean(f->io->fs);
	/* unlinking the long ones gives both blocks back */
	assert_int_equal(avfs_fs_unlink(f->io->fs, 1, "s5", 1), 0);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_fsck_clean(f->io->fs);

	/* data at [2B, 2B + 5000) and [4B, 5B); 4 KiB pages; size 8B */
	for (int i = 0; i < 400000; i++)
		w[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(avfs_fsio_write(f->io, a, 2 * B, w, 5000), 5000);
	assert_int_equal(avfs_fsio_write(f->io, a, 4 * B, w, B), (int64_t)B);
	assert_int_equal(avfs_fsio_truncate(f->io, a, 8 * B), 0);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 0, false), 2 * B);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 0, true), 0);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 2 * B + 10, true), 2 * B + 8192);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 2 * B + 8192, false), 4 * B);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 4 * B, true), 5 * B);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 5 * B, false), -ENXIO);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 8 * B, true), -ENXIO);

	/* punch [2B + 1000, 4B + 100): block 2's trailing pages go (its first page keeps 1000
	 * bytes: an edge to zero), block 3 is a hole already, block 4 keeps its data after 100
	 * (an edge); then [4B + 100, 6B): block 4 loses its pages from the second on */
	assert_int_equal(avfs_fs_punch(f->io->fs, a, 2 * B + 1000, 2 * B - 900, 2, zr, &nz), 0);
	assert_int_equal(nz, 2);
	assert_int_equal(zr[0].off, 2 * B + 1000);
	assert_int_equal(zr[0].len, 4096 - 1000);
	assert_int_equal(zr[1].off, 4 * B);
	assert_int_equal(zr[1].len, 100);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 2 * B, true), 2 * B + 4096);
	assert_int_equal(avfs_fsio_punch(f->io, a, 4 * B + 100, 2 * B - 100), 0);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 4 * B, true), 4 * B + 4096);
	assert_int_equal(avfs_fsio_read(f->io, a, 4 * B, r, B), (int64_t)B);
	assert_memory_equal(r, w, 100);	/* the first punch's edge: not zeroed by this test */
	assert_memory_equal(r + 100, z, B - 100);
	/* a whole block freed: free in statfs at once, reusable after the commit */
	assert_int_equal(avfs_fsio_write(f->io, a, 6 * B, w, B), (int64_t)B);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_int_equal(avfs_fs_punch(f->io->fs, a, 6 * B, B, 3, zr, &nz), 0);
	assert_int_equal(nz, 0);
	assert_int_equal(avfs_fs_data_freeing(f->io->fs), 1);
	assert_int_equal(avfs_fs_seek(f->io->fs, a, 6 * B, false), -ENXIO);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_int_equal(avfs_fs_data_freeing(f->io->fs), 0);
	assert_int_equal(avfs_fs_getattr(f->io->fs, a, &st), 0);
	assert_int_equal(st.size, 8 * B);	/* the size stays */
	assert_fsck_clean(f->io->fs);

	/* relatime: once after a change, then not within a day, then again */
	assert_int_equal(avfs_fs_getattr(f->io->fs, a, &st), 0);
	assert_int_equal(avfs_fs_touch_atime(f->io->fs, a, AVFS_ATIME_NO, st.mtime_ns + 5), 0);
	assert_int_equal(avfs_fs_touch_atime(f->io->fs, a, AVFS_ATIME_RELATIME, st.mtime_ns + 5), 1);
	assert_int_equal(avfs_fs_touch_atime(f->io->fs, a, AVFS_ATIME_RELATIME, st.mtime_ns + 9), 0);
	assert_int_equal(avfs_fs_touch_atime(f->io->fs, a, AVFS_ATIME_STRICT, st.mtime_ns + 9), 1);
	assert_int_equal(avfs_fs_touch_atime(f->io->fs, a, AVFS_ATIME_RELATIME,
					     st.mtime_ns + 9 + 24ll * 3600 * 1000000000), 1);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_fsck_clean(f->io->fs);
	free(w);
	free(r);
	free(z);
	fx_free(f);
}

/* Regression: a fallocate that grew the size past a partial last page brought back inside the
 * file the stale bytes that a truncate had left past the old size (the driver now zeroes
 * them first, as for a truncate up). */
static void test_fs_fallocate_past_stale_tail(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	uint8_t *w = malloc(3000), *r = malloc(131072), *z = calloc(1, 131072);
	uint64_t a = mk(f, 1, "a");

	(void)state;
	memset(w, 0x5a, 3000);
	assert_int_equal(avfs_fsio_write(f->io, a, 0, w, 3000), 3000);
	assert_int_equal(avfs_fsio_truncate(f->io, a, 100), 0);
	assert_int_equal(avfs_fsio_fallocate(f->io, a, 0, 65536, true), 0);	/* size stays */
	assert_int_equal(avfs_fsio_fallocate(f->io, a, 0, 131072, false), 0);
	assert_int_equal(avfs_fsio_read(f->io, a, 0, r, 131072), 131072);
	assert_memory_equal(r, w, 100);
	assert_memory_equal(r + 100, z, 131072 - 100);
	fx_remount(f);
	assert_int_equal(avfs_fsio_read(f->io, a, 0, r, 131072), 131072);
	assert_memory_equal(r + 100, z, 131072 - 100);
	assert_fsck_clean(f->io->fs);
	free(w);
	free(r);
	free(z);
	fx_free(f);
}

struct seen {
	uint8_t *hit;
	uint64_t count, next;
	int stop_after;
};

static int collect(void *arg, const char *name, uint64_t ino, uint32_t type, uint64_t next)
{
	struct seen *s = arg;
	unsigned k;

	(void)ino, (void)type;
	s->next = next;
	if (sscanf(name, "e%u", &k) == 1)
		s->hit[k]++;
	s->count++;
	return s->stop_after && (int)s->count % s->stop_after == 0;
}

/* readdir cookies are stable: reading in small pieces while other names are added and
 * removed between the pieces returns every original name exactly once. */
static void test_fs_readdir_stable(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	uint8_t hit[600] = { 0 };
	struct seen s = { .hit = hit, .stop_after = 7 };
	uint64_t cookie = 0, extra = 0;
	char name[64];

	(void)state;
	for (int i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "e%d%s", i, i % 3 ? "" : "-with-a-longer-name-that-needs-two-slots");
		mk(f, 1, name);
	}
	for (;;) {
		uint64_t before = s.count;

		assert_int_equal(avfs_fs_readdir(f->io->fs, 1, cookie, collect, &s), 0);
		if (s.count == before)
			break;
		cookie = s.next;
		snprintf(name, sizeof(name), "x%llu", (unsigned long long)extra++);
		mk(f, 1, name);
		if (extra % 2) {
			snprintf(name, sizeof(name), "x%llu", (unsigned long long)extra - 1);
			assert_int_equal(avfs_fs_unlink(f->io->fs, 1, name, 1), 0);
		}
	}
	for (int i = 0; i < 600; i++)
		assert_int_equal(hit[i], 1);
	fx_free(f);
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int count_only(void *arg, const char *name, uint64_t ino, uint32_t type, uint64_t next)
{
	(void)name, (void)ino, (void)type, (void)next;
	(*(uint64_t *)arg)++;
	return 0;
}

/* A 100,000-entry directory: create, lookup and readdir of every entry take seconds, not
 * minutes (hashed lookups, no linear scan), and the directory survives a remount. */
static void test_fs_dir_100k(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1, .inodes = 110000,
				    .journal_blocks = 8192 };
	struct fx *f = fx_new(256u << 20, &o);
	const int N = 100000;
	char name[32];
	uint64_t dir, got, n = 0;
	double t0, t1, t2, t3;

	(void)state;
	assert_int_equal(avfs_fs_mkdir(f->io->fs, 1, "big", 0755, 0, 0, 1, &dir), 0);
	t0 = secs();
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "recording-%06d.ts", i);
		assert_int_equal(avfs_fs_mknod(f->io->fs, dir, name, 0644, 0, 0, 1, &got), 0);
		assert_int_equal(avfs_fsio_maybe_commit(f->io), 0);
	}
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	t1 = secs();
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "recording-%06d.ts", (i * 7919) % N);
		assert_int_equal(avfs_fs_lookup(f->io->fs, dir, name, &got), 0);
	}
	assert_int_equal(avfs_fs_lookup(f->io->fs, dir, "recording-100000.ts", &got), -ENOENT);
	t2 = secs();
	assert_int_equal(avfs_fs_readdir(f->io->fs, dir, 0, count_only, &n), 0);
	t3 = secs();
	assert_int_equal(n, N + 2);
	printf("100k directory: create %.2f s, lookup %.2f s, readdir %.3f s\n", t1 - t0, t2 - t1,
	       t3 - t2);
	fx_remount(f);
	assert_int_equal(avfs_fs_lookup(f->io->fs, dir, "recording-054321.ts", &got), 0);
	assert_fsck_clean(f->io->fs);
	fx_free(f);
}

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 17;
}

/* Corrupt random live primary metadata blocks on disk (a byte flip per trial, 120 trials):
 * every mount takes the block from the backup region, rewrites the primary, fsck is clean
 * and the files read back unchanged. */
static void test_fs_backup_repairs_primary(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1, .inodes = 4096 };
	struct fx *f = fx_new(64u << 20, &o);
	uint8_t *data = avfs_memdisk_data(f->d), *w = malloc(70000), *r = malloc(70000);
	uint64_t live[4096], nlive = 0, x = 77, dir, ino;
	char name[32];
	int repaired = 0;

	(void)state;
	for (int i = 0; i < 70000; i++)
		w[i] = (uint8_t)(i ^ (i >> 8));
	assert_int_equal(avfs_fs_mkdir(f->io->fs, 1, "d", 0755, 0, 0, 1, &dir), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "file-%d", i);
		ino = mk(f, dir, name);
		assert_int_equal(avfs_fsio_write(f->io, ino, (uint64_t)i * 1000, w, 70000), 70000);
	}
	fx_remount(f);
	for (uint64_t m = 0; m < f->io->fs->nmeta && nlive < 4096; m++)
		if (avfs_fs_block_live(f->io->fs, m) || m == 0)
			live[nlive++] = m;
	assert_true(nlive > 20);
	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	f->io = NULL;
	for (int t = 0; t < 120; t++) {
		uint64_t m = live[rnd(&x) % nlive], off = m * AVFS_MBLOCK + rnd(&x) % AVFS_MBLOCK;
		uint8_t orig[AVFS_MBLOCK];
		struct avfs_mount_report rep;
		char why[256];

		memcpy(orig, data + m * AVFS_MBLOCK, AVFS_MBLOCK);
		data[off] ^= (uint8_t)(1 + rnd(&x) % 255);
		assert_int_equal(avfs_fsio_mount(f->d, 0, &f->io, &rep, why, sizeof(why)), 0);
		assert_int_equal(rep.repaired_primary, 1);
		repaired++;
		assert_memory_equal(data + m * AVFS_MBLOCK, orig, AVFS_MBLOCK);	/* rewritten */
		assert_fsck_clean(f->io->fs);
		snprintf(name, sizeof(name), "/d/file-%d", t % 40);
		assert_int_equal(avfs_fsio_resolve(f->io, name, &ino), 0);
		assert_int_equal(avfs_fsio_read(f->io, ino, (uint64_t)(t % 40) * 1000, r, 70000), 70000);
		assert_memory_equal(r, w, 70000);
		assert_int_equal(avfs_fsio_unmount(f->io), 0);
		f->io = NULL;
	}
	printf("backup region repaired %d of 120 corrupted primary blocks\n", repaired);
	free(w);
	free(r);
	fx_free(f);
}

/* Deleting a multi-GB recording touches a handful of metadata blocks: a 10 GB preallocated
 * file (4 MiB blocks) on a sparse 16 GB image is unlinked with fewer than 16 dirty blocks. */
static void test_fs_unlink_big_file_is_cheap(void **state)
{
	char path[] = "/var/tmp/avfs-test-fs-XXXXXX";
	int fd = mkstemp(path);
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_mkfs_opts o = { .seed = 3 };
	char why[256];
	uint64_t ino;
	struct avfs_statfs s0, s1;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 16ll << 30), 0);
	close(fd);
	assert_int_equal(avfs_uring_open(path, 0, 0, &d), 0);
	assert_int_equal(avfs_fsio_mkfs(d, &o, NULL, why, sizeof(why)), 0);
	assert_int_equal(avfs_fsio_mount(d, 0, &io, NULL, why, sizeof(why)), 0);
	avfs_fs_statfs(io->fs, &s0);
	assert_int_equal(avfs_fs_mknod(io->fs, 1, "rec.ts", 0644, 0, 0, 1, &ino), 0);
	assert_int_equal(avfs_fs_fallocate(io->fs, ino, 0, 10ull << 30, false, 1), 0);
	assert_int_equal(avfs_fsio_sync(io), 0);
	assert_int_equal(avfs_fs_unlink(io->fs, 1, "rec.ts", 2), 0);
	printf("unlink of a 10 GB file dirtied %zu metadata blocks\n", avfs_fs_dirty_blocks(io->fs));
	assert_true(avfs_fs_dirty_blocks(io->fs) < 16);
	assert_int_equal(avfs_fsio_sync(io), 0);
	avfs_fs_statfs(io->fs, &s1);
	assert_int_equal(s1.bfree, s0.bfree);
	assert_int_equal(avfs_fsio_unmount(io), 0);
	avfs_disk_close(d);
	unlink(path);
}

/* fsck of a file system holding n files unlinked while open: not an error, counted. */
static void assert_orphans(struct avfs_fs *fs, uint64_t n)
{
	struct avfs_fsck_report rep;

	assert_int_equal(avfs_fsck_check(fs, 0, &rep), 0);
	for (size_t i = 0; i < rep.nfindings; i++)
		fprintf(stderr, "fsck: %s\n", rep.findings[i]);
	assert_int_equal(rep.errors, 0);
	assert_int_equal(rep.nfindings, 0);
	assert_int_equal(rep.orphans, n);
	avfs_fsck_report_free(&rep);
}

static uint64_t bfree(struct avfs_fs *fs)
{
	struct avfs_statfs sf;

	assert_int_equal(avfs_fs_statfs(fs, &sf), 0);
	return sf.bfree;
}

/* A file with content (blocks blocks of 64 KiB, the bytes i * 13 + seed). */
static uint64_t mk_data(struct fx *f, const char *name, int blocks, uint8_t seed)
{
	size_t len = (size_t)blocks * 65536;
	uint8_t *w = malloc(len);
	uint64_t ino = mk(f, 1, name);

	for (size_t i = 0; i < len; i++)
		w[i] = (uint8_t)(i * 13 + seed);
	assert_int_equal(avfs_fsio_write(f->io, ino, 0, w, len), (int64_t)len);
	free(w);
	return ino;
}

static void assert_data(struct fx *f, uint64_t ino, int blocks, uint8_t seed)
{
	size_t len = (size_t)blocks * 65536;
	uint8_t *r = malloc(len);

	assert_int_equal(avfs_fsio_read(f->io, ino, 0, r, len), (int64_t)len);
	for (size_t i = 0; i < len; i++)
		if (r[i] != (uint8_t)(i * 13 + seed))
			fail_msg("ino %llu byte %zu: %u", (unsigned long long)ino, i, r[i]);
	free(r);
}

/* POSIX unlink of an open file: the name goes at once, the inode stays readable and
 * writable through its handle with nlink 0 (fsck: an orphan, not an error), and the last
 * unref frees it and returns its space. Two handles: the first unref keeps it. */
static void test_fs_unlink_open_file(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	struct avfs_fs *fs = f->io->fs;
	uint64_t b0 = bfree(fs), ino, got;
	struct avfs_stat st;

	(void)state;
	ino = mk_data(f, "rec", 5, 7);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_int_equal(bfree(fs), b0 - 5);
	assert_int_equal(avfs_fs_open_ref(fs, ino), 0);
	assert_int_equal(avfs_fs_open_ref(fs, ino), 0);
	assert_int_equal(avfs_fs_unlink(fs, 1, "rec", 2), 0);
	assert_int_equal(avfs_fs_lookup(fs, 1, "rec", &got), -ENOENT);
	assert_int_equal(avfs_fs_getattr(fs, ino, &st), 0);
	assert_int_equal(st.nlink, 0);
	assert_int_equal(st.size, 5 * 65536);
	assert_data(f, ino, 5, 7);
	assert_int_equal(bfree(fs), b0 - 5);		/* still held */
	/* writable: one more block */
	{
		uint8_t w[100];

		memset(w, 0x5a, sizeof(w));
		assert_int_equal(avfs_fsio_write(f->io, ino, 5 * 65536, w, sizeof(w)), 100);
		assert_int_equal(bfree(fs), b0 - 6);
	}
	assert_int_equal(avfs_fs_link(fs, ino, 1, "again", 3), -ENOENT);	/* as Linux */
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_orphans(fs, 1);
	/* the first handle goes: still there */
	assert_int_equal(avfs_fs_open_unref(fs, ino), 0);
	assert_data(f, ino, 5, 7);
	/* the last one frees inode and blocks */
	assert_int_equal(avfs_fs_open_unref(fs, ino), 1);
	assert_int_equal(avfs_fs_getattr(fs, ino, &st), -ENOENT);
	assert_int_equal(bfree(fs), b0);
	assert_int_equal(avfs_fs_open_unref(fs, ino), -EINVAL);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_orphans(fs, 0);
	/* a file that is not open still goes at once; a directory cannot be held open */
	ino = mk_data(f, "plain", 2, 9);
	assert_int_equal(avfs_fs_unlink(fs, 1, "plain", 4), 0);
	assert_int_equal(avfs_fs_getattr(fs, ino, &st), -ENOENT);
	assert_int_equal(avfs_fs_open_ref(fs, ino), -ENOENT);
	assert_int_equal(avfs_fs_open_ref(fs, 1), -EISDIR);
	/* a referenced file that keeps its name is not freed at the last unref */
	ino = mk_data(f, "named", 1, 3);
	assert_int_equal(avfs_fs_open_ref(fs, ino), 0);
	assert_int_equal(avfs_fs_open_unref(fs, ino), 0);
	assert_data(f, ino, 1, 3);
	fx_remount(f);
	assert_int_equal(bfree(f->io->fs), b0 - 1);
	assert_fsck_clean(f->io->fs);
	fx_free(f);
}

/* The other ways the last name of an open file goes: rename over it (the new file takes the
 * name, the old one lives on through its handle), and unlinking each of its hard links. */
static void test_fs_rename_over_open_file(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	struct avfs_fs *fs = f->io->fs;
	uint64_t b0 = bfree(fs), a, b, h, got;
	struct avfs_stat st;

	(void)state;
	a = mk_data(f, "a", 2, 1);
	b = mk_data(f, "b", 3, 2);
	assert_int_equal(avfs_fs_open_ref(fs, b), 0);
	assert_int_equal(avfs_fs_rename(fs, 1, "a", 1, "b", 0, 2), 0);
	assert_int_equal(avfs_fs_lookup(fs, 1, "b", &got), 0);
	assert_int_equal(got, a);
	assert_data(f, a, 2, 1);
	assert_int_equal(avfs_fs_getattr(fs, b, &st), 0);
	assert_int_equal(st.nlink, 0);
	assert_data(f, b, 3, 2);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_orphans(fs, 1);
	assert_int_equal(avfs_fs_open_unref(fs, b), 1);
	assert_int_equal(bfree(fs), b0 - 2);
	/* hard links: the inode outlives every name while open */
	h = mk_data(f, "h1", 1, 4);
	assert_int_equal(avfs_fs_link(fs, h, 1, "h2", 3), 0);
	assert_int_equal(avfs_fs_open_ref(fs, h), 0);
	assert_int_equal(avfs_fs_unlink(fs, 1, "h1", 4), 0);
	assert_int_equal(avfs_fs_getattr(fs, h, &st), 0);
	assert_int_equal(st.nlink, 1);
	assert_int_equal(avfs_fs_rename(fs, 1, "b", 1, "h2", 0, 5), 0);	/* a over h2 */
	assert_int_equal(avfs_fs_getattr(fs, h, &st), 0);
	assert_int_equal(st.nlink, 0);
	assert_data(f, h, 1, 4);
	assert_int_equal(avfs_fs_open_unref(fs, h), 1);
	assert_int_equal(avfs_fs_getattr(fs, h, &st), -ENOENT);
	assert_int_equal(bfree(fs), b0 - 2);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_fsck_clean(fs);
	fx_free(f);
}

/* Crash with a file unlinked while open (committed, never closed): a read-only mount and
 * fsck -n see the orphan as an expected leftover, not an error; the next read-write mount
 * frees it (journaled: a second crash right after changes nothing); fsck -y frees one too;
 * a clean unmount frees those still open. */
static void test_fs_orphan_after_crash(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	uint64_t b0 = bfree(f->io->fs), ino, keep;
	struct avfs_mount_report rep;
	struct avfs_fsck_report fr;
	struct avfs_stat st;
	char why[256];

	(void)state;
	keep = mk_data(f, "keep", 1, 5);
	ino = mk_data(f, "gone", 4, 6);
	assert_int_equal(avfs_fs_open_ref(f->io->fs, ino), 0);
	assert_int_equal(avfs_fs_unlink(f->io->fs, 1, "gone", 2), 0);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	avfs_fsio_abandon(f->io);	/* kill -9: the handle never comes back */
	/* read-only: left alone */
	assert_int_equal(avfs_fsio_mount(f->d, AVFS_MOUNT_RDONLY, &f->io, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.orphans_freed, 0);
	assert_int_equal(avfs_fs_getattr(f->io->fs, ino, &st), 0);
	assert_int_equal(st.nlink, 0);
	assert_int_equal(bfree(f->io->fs), b0 - 5);
	assert_orphans(f->io->fs, 1);
	avfs_fsio_abandon(f->io);
	/* read-write: freed and committed by the mount */
	assert_int_equal(avfs_fsio_mount(f->d, 0, &f->io, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.orphans_freed, 1);
	assert_int_equal(avfs_fs_getattr(f->io->fs, ino, &st), -ENOENT);
	assert_int_equal(bfree(f->io->fs), b0 - 1);
	assert_int_equal(avfs_fs_dirty_blocks(f->io->fs), 0);
	avfs_fsio_abandon(f->io);
	assert_int_equal(avfs_fsio_mount(f->d, AVFS_MOUNT_RDONLY, &f->io, &rep, why, sizeof(why)), 0);
	assert_int_equal(avfs_fs_getattr(f->io->fs, ino, &st), -ENOENT);
	assert_int_equal(bfree(f->io->fs), b0 - 1);
	assert_orphans(f->io->fs, 0);
	assert_data(f, keep, 1, 5);
	avfs_fsio_abandon(f->io);
	/* fsck -y (its mount keeps orphans for the check): freed, and not counted as a fix */
	assert_int_equal(avfs_fsio_mount(f->d, 0, &f->io, NULL, why, sizeof(why)), 0);
	ino = mk_data(f, "gone2", 2, 8);
	assert_int_equal(avfs_fs_open_ref(f->io->fs, ino), 0);
	assert_int_equal(avfs_fs_unlink(f->io->fs, 1, "gone2", 3), 0);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	avfs_fsio_abandon(f->io);
	assert_int_equal(avfs_fsio_mount(f->d, AVFS_MOUNT_KEEP_ORPHANS, &f->io, &rep, why,
					 sizeof(why)), 0);
	assert_int_equal(rep.orphans_freed, 0);
	assert_int_equal(avfs_fsck_check(f->io->fs, AVFS_FSCK_REPAIR, &fr), 0);
	assert_int_equal(fr.errors, 0);
	assert_int_equal(fr.fixed, 0);
	assert_int_equal(fr.orphans, 1);
	assert_int_equal(fr.files, 1);	/* "keep" */
	avfs_fsck_report_free(&fr);
	assert_int_equal(avfs_fs_getattr(f->io->fs, ino, &st), -ENOENT);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_orphans(f->io->fs, 0);
	assert_int_equal(bfree(f->io->fs), b0 - 1);
	/* a clean unmount frees what is still open: nothing is left for the next mount */
	ino = mk_data(f, "gone3", 3, 9);
	assert_int_equal(avfs_fs_open_ref(f->io->fs, ino), 0);
	assert_int_equal(avfs_fs_unlink(f->io->fs, 1, "gone3", 4), 0);
	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	assert_int_equal(avfs_fsio_mount(f->d, 0, &f->io, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.orphans_freed, 0);
	assert_int_equal(bfree(f->io->fs), b0 - 1);
	assert_fsck_clean(f->io->fs);
	fx_free(f);
}

/* statfs and bad arguments: renames of "." / "..", names with '/', operations on freed
 * inodes, a write of a directory: clear errors and no change. */
static void test_fs_bad_arguments(void **state)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .zones = 4, .seed = 1 };
	struct fx *f = fx_new(64u << 20, &o);
	struct avfs_fs *fs = f->io->fs;
	struct avfs_statfs sf;
	uint64_t got;
	struct avfs_stat st;

	(void)state;
	assert_int_equal(avfs_fs_statfs(fs, &sf), 0);
	assert_int_equal(sf.block_size, 65536);
	assert_int_equal(sf.namemax, 255);
	assert_int_equal(avfs_fs_mknod(fs, 1, "a/b", 0644, 0, 0, 1, &got), -EINVAL);
	assert_int_equal(avfs_fs_mknod(fs, 1, "", 0644, 0, 0, 1, &got), -ENOENT);
	assert_int_equal(avfs_fs_mknod(fs, 1, ".", 0644, 0, 0, 1, &got), -EEXIST);
	assert_int_equal(avfs_fs_rename(fs, 1, ".", 1, "x", 0, 1), -EBUSY);
	assert_int_equal(avfs_fs_getattr(fs, 999, &st), -ENOENT);
	assert_int_equal(avfs_fs_getattr(fs, 0, &st), -EINVAL);
	assert_int_equal(avfs_fs_getattr(fs, UINT64_MAX, &st), -EINVAL);
	assert_int_equal(avfs_fsio_write(f->io, 1, 0, "x", 1), -EISDIR);
	assert_int_equal(avfs_fs_mknod(fs, 1, "dev", S_IFDIR | 0644, 0, 0, 1, &got), -EINVAL);
	assert_int_equal(avfs_fs_dirty_blocks(fs), 0);	/* nothing changed */
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fs_backup_repairs_primary),
		cmocka_unit_test(test_fs_bad_arguments),
		cmocka_unit_test(test_fs_contig_baseline),
		cmocka_unit_test(test_fs_zrr_run),
		cmocka_unit_test(test_fs_data),
		cmocka_unit_test(test_fs_fallocate_past_stale_tail),
		cmocka_unit_test(test_fs_dir_100k),
		cmocka_unit_test(test_fs_namespace),
		cmocka_unit_test(test_fs_orphan_after_crash),
		cmocka_unit_test(test_fs_posix_details),
		cmocka_unit_test(test_fs_readdir_stable),
		cmocka_unit_test(test_fs_rename_over_open_file),
		cmocka_unit_test(test_fs_unlink_big_file_is_cheap),
		cmocka_unit_test(test_fs_unlink_open_file),
		cmocka_unit_test(test_fs_zrr_first_zone_seeded),
		cmocka_unit_test(test_fs_zrr_interleaved),
		cmocka_unit_test(test_fs_zrr_new_file_and_full_zone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
