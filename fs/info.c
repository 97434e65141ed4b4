/*
 * info.c — what the fs object tells: its superblock, block size, zones, statfs, read-only
 * state, and the explanation of the last failure. The bottom layer of the core: it calls no
 * other file of it; the metadata itself is cache.c's.
 */
#include "fs_i.h"

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
	st->files = fs->sb.ninodes;
	st->ffree = sb->free_inodes;
	st->namemax = AVFS_NAME_MAX;
	st->nzones = fs->sb.nzones;
	return 0;
}
