/*
 * attr.c — inode attributes: getattr and setattr (mode, owner, times, size), the access time
 * a read changes under the mount's rule (relatime, strictatime, noatime). A size change
 * goes through data.c, a mode change carries over to an access ACL through xattr.c; zeroing
 * the stale tail before a size grows is the driver's (a data plan, fs.h).
 */
#include "fs_i.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int avfs_fs_getattr(struct avfs_fs *fs, uint64_t ino, struct avfs_stat *st)
{
	int err = 0;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);

	if (!di)
		return err;
	memset(st, 0, sizeof(*st));
	st->ino = ino;
	st->mode = di->mode;
	st->uid = di->uid;
	st->gid = di->gid;
	st->nlink = di->nlink;
	st->size = di->size;
	st->atime_ns = di->atime_ns;
	st->mtime_ns = di->mtime_ns;
	st->ctime_ns = di->ctime_ns;
	st->generation = di->generation;
	st->rdev = S_ISCHR(di->mode) || S_ISBLK(di->mode) ? di->rdev : 0;
	st->blksize = S_ISREG(di->mode) ? (uint32_t)(avfs_fs_block_size(fs) > (1u << 20) ?
						      (1u << 20) : avfs_fs_block_size(fs)) : AVFS_MBLOCK;
	st->blocks512 = S_ISDIR(di->mode) ? di->nblocks * (AVFS_MBLOCK / 512) :
			di->nblocks * (avfs_fs_block_size(fs) / 512);
	return 0;
}

int avfs_fs_setattr(struct avfs_fs *fs, uint64_t ino, unsigned set, const struct avfs_stat *st,
		    int64_t now)
{
	int err = 0;
	struct avfs_dinode *di = NULL;

	RW_CHECK(fs);
	di = fs_ino_get(fs, ino, &err);
	if (!di)
		return err;
	if (set & ~(AVFS_SET_MODE | AVFS_SET_UID | AVFS_SET_GID | AVFS_SET_SIZE | AVFS_SET_ATIME |
		    AVFS_SET_MTIME))
		return -EINVAL;
	if (set & AVFS_SET_SIZE) {
		if (S_ISDIR(di->mode))
			return -EISDIR;
		if (!S_ISREG(di->mode))
			return -EINVAL;
		if (st->size > (uint64_t)INT64_MAX)
			return -EFBIG;
	}
	/* an access ACL follows a chmod (posix_acl_chmod): its block must be sound */
	if (set & AVFS_SET_MODE && di->xattr && (fs_xattr_block(fs, ino, di, &err), err))
		return err;
	/* the inode's block, and what a shrink frees; the attribute block of a chmod */
	if ((err = fs_txn_begin(fs, (set & AVFS_SET_SIZE ? fs_file_resize_cost(fs, di, st->size) : 1) +
				(set & AVFS_SET_MODE && di->xattr), 0)))
		return err;
	if (set & AVFS_SET_SIZE) {
		fs_file_resize(fs, ino, di, st->size);	/* checked: cannot fail */
		di->mtime_ns = now;
	}
	if (set & AVFS_SET_MODE) {
		di->mode = (di->mode & S_IFMT) | (st->mode & 07777);
		fs_xattr_chmod(fs, ino, di, di->mode);	/* checked: cannot fail */
	}
	if (set & AVFS_SET_UID)
		di->uid = st->uid;
	if (set & AVFS_SET_GID)
		di->gid = st->gid;
	if (set & AVFS_SET_ATIME)
		di->atime_ns = st->atime_ns;
	if (set & AVFS_SET_MTIME)
		di->mtime_ns = st->mtime_ns;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	fs_txn_end(fs);
	return 0;
}

#define DAY_NS (24ll * 3600 * 1000000000)

int avfs_fs_touch_atime(struct avfs_fs *fs, uint64_t ino, enum avfs_atime rule, int64_t now)
{
	int err = 0;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);

	if (!di)
		return err;
	if (rule == AVFS_ATIME_NO || avfs_fs_rdonly(fs) || di->atime_ns == now)
		return 0;
	/* relatime (Linux's relatime_need_update): once after each change, and once a day */
	if (rule == AVFS_ATIME_RELATIME && di->atime_ns > di->mtime_ns &&
	    di->atime_ns > di->ctime_ns && now - di->atime_ns < DAY_NS)
		return 0;
	if ((err = fs_txn_begin(fs, 1, 0)))
		return err;
	di->atime_ns = now;
	fs_ino_dirty(fs, ino);
	fs_txn_end(fs);
	return 1;
}
