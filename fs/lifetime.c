/*
 * lifetime.c — when an inode dies: at its last link unless it is open, at its last close
 * once it has no name (POSIX orphans), or at a mount after a crash left it so; it goes with
 * its blocks and its directory index. Names are namei.c's, the record inode.c's.
 */
#include "fs_i.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

uint64_t fs_ino_free_cost(struct avfs_fs *fs, struct avfs_dinode *di)
{
	struct fs_bmap_cost c;
	uint64_t bits;

	fs_bmap_cost(fs, di, 0, UINT64_MAX, &c);
	/* the bits of what goes: map blocks, and data blocks (files) or directory blocks */
	bits = S_ISDIR(di->mode) ? (c.nodes + c.mapped < fs->sb.mbitmap_blocks ?
				    c.nodes + c.mapped : fs->sb.mbitmap_blocks)
				 : (c.mapped < fs->sb.dbitmap_blocks ? c.mapped : fs->sb.dbitmap_blocks) +
				   (c.nodes < fs->sb.mbitmap_blocks ? c.nodes : fs->sb.mbitmap_blocks);
	/* and the inode's block, the inode bitmap's, the map blocks, symlink and attribute
	 * blocks' bits */
	return 2 + c.nodes + bits + !!di->symlink_block + !!di->symlink_block2 + !!di->xattr +
	       (di->small_units ? FS_SMALL_BLOCKS : 0);
}

/* Does dropping one name of ino free it? Not while it is open (POSIX). */
static bool last_link(struct avfs_fs *fs, uint64_t ino, const struct avfs_dinode *di)
{
	return S_ISDIR(di->mode) || (di->nlink <= 1 && !fs->opens[ino]);
}

uint64_t fs_drop_link_cost(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di)
{
	return last_link(fs, ino, di) ? fs_ino_free_cost(fs, di) : 1;
}

void fs_ino_free(struct avfs_fs *fs, uint64_t ino)
{
	struct avfs_dinode *di = fs_ino_raw(fs, ino);

	if (S_ISREG(di->mode))
		fs_small_release(fs, ino, di);
	fs_bmap_trim(fs, ino, di, 0, !S_ISDIR(di->mode));
	if (di->symlink_block)
		fs_meta_free(fs, di->symlink_block);
	if (di->symlink_block2)
		fs_meta_free(fs, di->symlink_block2);
	fs_xattr_free(fs, di);
	fs_dir_forget(fs, ino);
	fs_ino_release(fs, ino);
}

/* One name of ino is gone. At the last one the inode goes too, unless it is open: then it
 * stays allocated, nameless with nlink 0, until its last handle is dropped
 * (avfs_fs_open_unref) or, after a crash, until the next read-write mount
 * (avfs_fs_free_orphans). Directories are never open here (avfs_fs_open_ref). */
void fs_drop_link(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, int64_t now)
{
	if (last_link(fs, ino, di)) {
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
	int err;

	if (!fs_ino_ok(fs, ino) || !fs->opens[ino])
		return -EINVAL;
	di = fs_ino_raw(fs, ino);
	if (fs->opens[ino] > 1 || !orphan(fs, ino, di) || avfs_fs_rdonly(fs)) {
		fs->opens[ino]--;
		return 0;	/* still open or named; or left for the next read-write mount */
	}
	if ((err = fs_txn_begin(fs, fs_ino_free_cost(fs, di), 0)))
		return err;	/* the handle still counts: commit and drop it again */
	fs->opens[ino] = 0;
	fs_ino_free(fs, ino);
	fs_txn_end(fs);
	return 1;
}

int64_t avfs_fs_free_orphans(struct avfs_fs *fs, bool even_open)
{
	int64_t n = 0;

	RW_CHECK(fs);
	for (uint64_t i = avfs_bitmap_find_set(&fs->imap, 0, fs->sb.ninodes); i != UINT64_MAX;
	     i = avfs_bitmap_find_set(&fs->imap, i + 1, fs->sb.ninodes)) {
		struct avfs_dinode *di = fs_ino_raw(fs, i + 1);
		int err;

		if (!orphan(fs, i + 1, di) || (fs->opens[i + 1] && !even_open))
			continue;
		err = fs_txn_begin(fs, fs_ino_free_cost(fs, di), 0);
		if (err == -EAGAIN)
			return n ? n : err;	/* the transaction is full: commit, call again */
		if (err)
			continue;	/* too large for any transaction: left in place */
		fs_ino_free(fs, i + 1);
		fs->opens[i + 1] = 0;
		fs_txn_end(fs);
		n++;
	}
	return n;
}
