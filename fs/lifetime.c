/*
 * lifetime.c — when an inode dies: at its last link unless it is open, at its last close
 * once it has no name (POSIX orphans), or at a mount after a crash left it so; it goes with
 * its blocks and its directory index. Names are namei.c's, the record inode.c's.
 */
#include "fs_i.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

void fs_ino_free(struct avfs_fs *fs, uint64_t ino)
{
	struct avfs_dinode *di = fs_ino_raw(fs, ino);

	fs_bmap_trim(fs, ino, di, 0, !S_ISDIR(di->mode));
	if (di->symlink_block)
		fs_meta_free(fs, di->symlink_block);
	fs_dir_forget(fs, ino);
	fs_ino_release(fs, ino);
}

/* One name of ino is gone. At the last one the inode goes too, unless it is open: then it
 * stays allocated, nameless with nlink 0, until its last handle is dropped
 * (avfs_fs_open_unref) or, after a crash, until the next read-write mount
 * (avfs_fs_free_orphans). Directories are never open here (avfs_fs_open_ref). */
void fs_drop_link(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, int64_t now)
{
	if (S_ISDIR(di->mode) || (di->nlink <= 1 && !fs->opens[ino])) {
		fs_ino_free(fs, ino);
		return;
	}
	di->nlink = di->nlink > 1 ? di->nlink - 1 : 0;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
}

int avfs_fs_open_ref(struct avfs_fs *fs, uint64_t ino)
{
	int err = 0;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);

	if (!di)
		return err;
	if (S_ISDIR(di->mode))
		return -EISDIR;	/* rmdir frees at once: a directory never becomes an orphan */
	if (fs->opens[ino] == UINT32_MAX)
		return -ENFILE;
	fs->opens[ino]++;
	return 0;
}

/* Can ino, allocated with no name left, be freed (a type the core makes, not a directory)? */
static bool orphan(struct avfs_fs *fs, uint64_t ino, const struct avfs_dinode *di)
{
	return avfs_bitmap_test(&fs->imap, ino - 1) && di->mode && !di->nlink &&
	       !S_ISDIR(di->mode) && fs_dtype_of(di->mode) != DT_UNKNOWN;
}

int avfs_fs_open_unref(struct avfs_fs *fs, uint64_t ino)
{
	struct avfs_dinode *di;

	if (!fs_ino_ok(fs, ino) || !fs->opens[ino])
		return -EINVAL;
	if (--fs->opens[ino])
		return 0;
	di = fs_ino_raw(fs, ino);
	if (!orphan(fs, ino, di) || avfs_fs_rdonly(fs))
		return 0;	/* still named; or left for the next read-write mount */
	fs_ino_free(fs, ino);
	return 1;
}

int64_t avfs_fs_free_orphans(struct avfs_fs *fs, bool even_open)
{
	int64_t n = 0;

	RW_CHECK(fs);
	for (uint64_t i = avfs_bitmap_find_set(&fs->imap, 0, fs->sb.ninodes); i != UINT64_MAX;
	     i = avfs_bitmap_find_set(&fs->imap, i + 1, fs->sb.ninodes)) {
		struct avfs_dinode *di = fs_ino_raw(fs, i + 1);

		if (!orphan(fs, i + 1, di) || (fs->opens[i + 1] && !even_open))
			continue;
		fs_ino_free(fs, i + 1);
		fs->opens[i + 1] = 0;
		n++;
	}
	return n;
}
