/*
 * info.c — what the fs object tells: its superblock, block size, zones, statfs, read-only
 * state, the explanation of the last failure, and what a device range holds (for the log line
 * of a failed write). The bottom layer of the core: it calls no other file of it; the metadata
 * itself is cache.c's.
 */
#include "fs_i.h"

#include <stdio.h>
#include <string.h>

const char *avfs_fs_why(const struct avfs_fs *fs)
{
	return fs->why;
}

struct avfs_super *fs_sb(struct avfs_fs *fs)
{
	return (struct avfs_super *)fs->blocks[0];
}

const struct avfs_super *avfs_fs_super(const struct avfs_fs *fs)
{
	return fs->blocks && fs->blocks[0] ? (const struct avfs_super *)fs->blocks[0] : &fs->sb;
}

uint64_t avfs_fs_block_size(const struct avfs_fs *fs)
{
	return 1ull << fs->sb.block_shift;
}

bool avfs_fs_rdonly(const struct avfs_fs *fs)
{
	return (fs->flags & AVFS_MOUNT_RDONLY) || fs->broken;
}

const uint8_t *avfs_fs_block(const struct avfs_fs *fs, uint64_t m)
{
	return m < fs->nmeta ? fs->blocks[m] : NULL;
}

uint32_t avfs_fs_zone_of_dev(const struct avfs_fs *fs, uint64_t dev_off)
{
	if (dev_off < fs->sb.data_off)
		return UINT32_MAX;
	return avfs_alloc_zone_of(&fs->alloc, (dev_off - fs->sb.data_off) >> fs->sb.block_shift);
}

int avfs_fs_statfs(struct avfs_fs *fs, struct avfs_statfs *st)
{
	const struct avfs_super *sb = avfs_fs_super(fs);

	memset(st, 0, sizeof(*st));
	st->block_size = avfs_fs_block_size(fs);
	st->blocks = fs->sb.data_blocks;
	st->bfree = sb->free_data;
	st->units = st->blocks * (st->block_size / AVFS_PAGE);
	st->ufree = st->bfree * (st->block_size / AVFS_PAGE) + fs->small_free;
	st->files = fs->sb.ninodes;
	st->ffree = sb->free_inodes;
	st->namemax = AVFS_NAME_MAX;
	st->nzones = fs->sb.nzones;
	return 0;
}

/* The kind of metadata block m, by its region (and, for a dynamic block, its image). */
static const char *meta_kind(const struct avfs_fs *fs, uint64_t m)
{
	const struct avfs_super *sb = &fs->sb;
	const struct avfs_mhdr *h;

	if (m == 0)
		return "superblock";
	if (m < sb->journal_start + 2)
		return "journal superblock";
	if (m < sb->journal_start + sb->journal_blocks)
		return "journal";
	if (m < sb->dbitmap_start)
		return "metadata bitmap";
	if (m < sb->ibitmap_start)
		return "data bitmap";
	if (m < sb->itable_start)
		return "inode bitmap";
	if (m < sb->dyn_start)
		return "inode table";
	h = m < fs->nmeta && fs->blocks && fs->blocks[m] ? (const void *)fs->blocks[m] : NULL;
	switch (h ? h->type : AVFS_MT_FREE) {
	case AVFS_MT_MAP:
		return "block map";
	case AVFS_MT_DIR:
		return "directory";
	case AVFS_MT_SYMLINK:
		return "symlink";
	case AVFS_MT_SMALL:
		return "small-file map";
	default:
		return "dynamic metadata";
	}
}

void avfs_fs_describe(const struct avfs_fs *fs, uint64_t off, uint64_t len, char *buf, size_t n)
{
	const struct avfs_super *sb = &fs->sb;
	uint64_t nblk = len > AVFS_MBLOCK ? (len + AVFS_MBLOCK - 1) / AVFS_MBLOCK : 1, m;
	const char *copy = "", *kinds[8];
	size_t nk = 0, at;

	if (off < sb->meta_blocks * AVFS_MBLOCK) {
		m = off / AVFS_MBLOCK;
	} else if (off == (sb->dev_size & ~(uint64_t)(AVFS_MBLOCK - 1)) - AVFS_MBLOCK) {
		/* the backup superblock: the device's last 4 KiB (avfs_fs_backup_super_off) */
		m = 0;
		copy = ", backup copy";
	} else if (off >= sb->backup_off && off < sb->dev_size) {
		m = (off - sb->backup_off) / AVFS_MBLOCK + sb->journal_start + sb->journal_blocks;
		copy = ", backup copy";
	} else if (off >= sb->data_off && off < sb->data_off + (sb->data_blocks << sb->block_shift)) {
		snprintf(buf, n, "data block %llu at byte %llu",
			 (unsigned long long)((off - sb->data_off) >> sb->block_shift),
			 (unsigned long long)off);
		return;
	} else {
		snprintf(buf, n, "bytes %llu-%llu of the device", (unsigned long long)off,
			 (unsigned long long)(off + len));
		return;
	}
	if (nblk == 1) {
		snprintf(buf, n, "%s block %llu%s", meta_kind(fs, m), (unsigned long long)m, copy);
		return;
	}
	/* a run of blocks (a checkpoint coalesces neighbours): every kind it holds */
	for (uint64_t i = 0; i < nblk && nk < 8; i++) {
		const char *k = meta_kind(fs, m + i);

		if (!nk || strcmp(kinds[nk - 1], k))
			kinds[nk++] = k;
	}
	at = (size_t)snprintf(buf, n, "metadata blocks %llu-%llu%s (", (unsigned long long)m,
			      (unsigned long long)(m + nblk - 1), copy);
	for (size_t i = 0; i < nk && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", kinds[i]);
	if (at < n)
		snprintf(buf + at, n - at, ")");
}
