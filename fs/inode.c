/*
 * inode.c — the inode table: finding, allocating and checking inode records in their
 * images, and the inode bitmap. Not an inode's blocks (bmap.c) nor its names (dir.c);
 * freeing a whole inode is lifetime.c's.
 */
#include "fs_i.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define HDR sizeof(struct avfs_mhdr)

bool fs_ino_ok(const struct avfs_fs *fs, uint64_t ino)
{
	return ino >= 1 && ino <= fs->sb.ninodes;
}

uint64_t fs_ino_block(const struct avfs_fs *fs, uint64_t ino)
{
	return fs->sb.itable_start + (ino - 1) / AVFS_INODES_PER_BLOCK;
}

struct avfs_dinode *fs_ino_raw(struct avfs_fs *fs, uint64_t ino)
{
	uint8_t *b = fs->blocks[fs_ino_block(fs, ino)];

	return (struct avfs_dinode *)(b + HDR) + (ino - 1) % AVFS_INODES_PER_BLOCK;
}

/* A live inode, or NULL (-ENOENT / -EINVAL in *err). */
struct avfs_dinode *fs_ino_get(struct avfs_fs *fs, uint64_t ino, int *err)
{
	struct avfs_dinode *di = NULL;

	if (!fs_ino_ok(fs, ino)) {
		*err = -EINVAL;
		return NULL;
	}
	di = fs_ino_raw(fs, ino);
	if (!di->mode || !avfs_bitmap_test(&fs->imap, ino - 1)) {
		*err = -ENOENT;
		return NULL;
	}
	return di;
}

void fs_ino_dirty(struct avfs_fs *fs, uint64_t ino)
{
	fs_dirty(fs, fs_ino_block(fs, ino));
}

int fs_ino_alloc(struct avfs_fs *fs, uint32_t mode, uint32_t uid, uint32_t gid, int64_t now,
		 uint64_t *out)
{
	uint64_t i = avfs_bitmap_find_zero(&fs->imap, fs->ihint, fs->sb.ninodes);
	struct avfs_dinode *di = NULL;
	struct avfs_super *sb = fs_sb(fs);

	if (i == UINT64_MAX)
		i = avfs_bitmap_find_zero(&fs->imap, 0, fs->ihint);
	if (i == UINT64_MAX)
		return -ENOSPC;
	avfs_bitmap_set(&fs->imap, i);
	fs_set_bit(fs, fs->sb.ibitmap_start, i, true);
	sb->free_inodes--;
	fs_dirty(fs, 0);
	fs->ihint = i + 1;
	di = fs_ino_raw(fs, i + 1);
	memset(di, 0, sizeof(*di));
	di->mode = mode;
	di->uid = uid;
	di->gid = gid;
	di->nlink = 1;
	di->atime_ns = di->mtime_ns = di->ctime_ns = di->btime_ns = now;
	di->generation = (uint32_t)sb->generation++;
	fs_ino_dirty(fs, i + 1);
	*out = i + 1;
	return 0;
}

uint64_t fs_ino_avail(const struct avfs_fs *fs)
{
	return fs->sb.ninodes - fs->imap.nset;
}

void fs_ino_release(struct avfs_fs *fs, uint64_t ino)
{
	memset(fs_ino_raw(fs, ino), 0, sizeof(struct avfs_dinode));
	fs_ino_dirty(fs, ino);
	avfs_bitmap_clear(&fs->imap, ino - 1);
	fs_set_bit(fs, fs->sb.ibitmap_start, ino - 1, false);
	fs_sb(fs)->free_inodes++;
	fs_dirty(fs, 0);
	if (ino - 1 < fs->ihint)
		fs->ihint = ino - 1;
}

uint8_t fs_dtype_of(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	default: return DT_UNKNOWN;
	}
}
