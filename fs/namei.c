/*
 * namei.c — the namespace operations: lookup, creating files, directories and symlinks,
 * links, unlink, rmdir and rename (replace, exchange, and no directory into itself). Each
 * checks before it changes. Attributes are attr.c's, directory entries dir.c's.
 */
#include "fs_i.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define HDR sizeof(struct avfs_mhdr)
#define MAX_LINKS 65000u

static int check_name(const char *name, size_t *len)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, AVFS_NAME_MAX + 1);
	if (n == 0)
		return -ENOENT;
	if (n > AVFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', n))
		return -EINVAL;
	*len = n;
	return 0;
}

static bool dot_or_dotdot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* A valid name not yet present in dir: 0 and its length, else -EEXIST or the name's error. */
static int name_free(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *pdi, const char *name,
		     size_t *len)
{
	int err = check_name(name, len);

	if (err)
		return err;
	if (dot_or_dotdot(name))
		return -EEXIST;
	err = fs_dir_find(fs, dir, pdi, name, *len, NULL, NULL, NULL);
	if (err != -ENOENT)
		return err ? err : -EEXIST;
	return 0;
}

static void dir_touch(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *di, int64_t now)
{
	di->mtime_ns = di->ctime_ns = now;
	fs_ino_dirty(fs, dir);
}

int avfs_fs_lookup(struct avfs_fs *fs, uint64_t dir, const char *name, uint64_t *ino)
{
	int err = 0;
	size_t len;
	struct avfs_dinode *di = fs_dir_get(fs, dir, &err);

	if (!di)
		return err;
	if ((err = check_name(name, &len)))
		return err;
	if (!strcmp(name, ".")) {
		*ino = dir;
		return 0;
	}
	if (!strcmp(name, "..")) {
		*ino = fs_ino_ok(fs, di->parent) ? di->parent : AVFS_ROOT_INO;
		return 0;
	}
	return fs_dir_find(fs, dir, di, name, len, NULL, NULL, ino);
}

/* Create name in dir: an inode of mode (less umask, or as dir's default ACL says), for a
 * symlink pointing at target (tl bytes), and its entry. Everything that can fail comes before
 * the first change. */
static int create(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t umask, uint32_t uid, uint32_t gid, uint32_t rdev, const char *target,
		  size_t tl, int64_t now, uint64_t *out)
{
	int err = 0;
	size_t len;
	struct fs_dir_place at;
	struct avfs_dinode *pdi = fs_dir_get(fs, dir, &err), *di;
	/* metadata blocks of a target too long for the inode: one, or two past a block */
	unsigned block = tl < sizeof(di->symlink) ? 0 : tl < AVFS_SYMLINK_BLOCK ? 1 : 2;
	unsigned xblock;
	uint64_t ino, m = 0, m2 = 0;
	struct fs_inherit in;

	RW_CHECK(fs);
	if (!pdi)
		return err;
	if (S_ISDIR(mode) && pdi->nlink >= MAX_LINKS)
		return -EMLINK;
	if ((err = name_free(fs, dir, pdi, name, &len)))
		return err;
	if (!fs_ino_avail(fs))
		return -ENOSPC;
	if ((err = fs_xattr_inherit(fs, dir, pdi, mode, umask, &in)))
		return err;
	mode = in.mode;
	xblock = fs_inherit_block(&in);
	if ((err = fs_dir_prepare(fs, dir, pdi, len, &at)))
		return err;
	/* the new inode's block and its bitmap's, the parent's inode, the entry; a symlink
	 * block and its bitmap's; an attribute block and its bitmap's */
	if ((err = fs_txn_begin(fs, 3 + at.blocks + 2 * block + 2 * xblock,
				at.new_meta + block + xblock)))
		return err;
	/* reserved and checked: none of these fails (each undoes what it must if it did) */
	if (block && (err = fs_meta_alloc(fs, AVFS_MT_SYMLINK, &m)))
		goto out;
	if (block > 1 && (err = fs_meta_alloc(fs, AVFS_MT_SYMLINK, &m2))) {
		fs_meta_free(fs, m);
		goto out;
	}
	if ((err = fs_ino_alloc(fs, mode, uid, gid, now, &ino))) {
		if (m2)
			fs_meta_free(fs, m2);
		if (block)
			fs_meta_free(fs, m);
		goto out;
	}
	di = fs_ino_raw(fs, ino);
	di->rdev = rdev;
	if (block) {
		size_t first = tl < AVFS_SYMLINK_BLOCK ? tl : AVFS_SYMLINK_BLOCK;

		memcpy(fs->blocks[m] + HDR, target, first);
		di->symlink_block = (uint32_t)m;
		if (m2) {
			memcpy(fs->blocks[m2] + HDR, target + first, tl - first);
			di->symlink_block2 = (uint32_t)m2;
		}
	} else if (target) {
		memcpy(di->symlink, target, tl);
	}
	di->size = target ? tl : 0;
	if (xblock)
		fs_xattr_inherit_apply(fs, dir, ino, di, &in);
	if ((err = fs_dir_insert(fs, dir, pdi, &at, name, len, ino, mode))) {
		fs_ino_free(fs, ino);
		goto out;
	}
	if (S_ISDIR(mode)) {
		di->nlink = 2;
		di->parent = (uint32_t)dir;
		pdi->nlink++;
	}
	dir_touch(fs, dir, pdi, now);
	*out = ino;
out:
	fs_txn_end(fs);
	return err;
}

int avfs_fs_mknod(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino)
{
	return avfs_fs_mknod_dev(fs, dir, name, mode, 0, uid, gid, now, ino);
}

int avfs_fs_mknod_dev(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		      uint32_t rdev, uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino)
{
	uint32_t t = mode & S_IFMT;

	if (t == 0)
		mode |= S_IFREG;
	else if (t != S_IFREG && t != S_IFIFO && t != S_IFSOCK && t != S_IFCHR && t != S_IFBLK)
		return -EINVAL;
	return create(fs, dir, name, mode, 0, uid, gid, t == S_IFCHR || t == S_IFBLK ? rdev : 0,
		      NULL, 0, now, ino);
}

int avfs_fs_create(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		   uint32_t rdev, uint32_t umask, uint32_t uid, uint32_t gid, int64_t now,
		   uint64_t *ino)
{
	uint32_t t = mode & S_IFMT;

	if (t == S_IFDIR)
		return create(fs, dir, name, S_IFDIR | (mode & 07777), umask, uid, gid, 0, NULL, 0,
			      now, ino);
	if (t == 0)
		mode |= S_IFREG;
	else if (t != S_IFREG && t != S_IFIFO && t != S_IFSOCK && t != S_IFCHR && t != S_IFBLK)
		return -EINVAL;
	return create(fs, dir, name, mode, umask, uid, gid,
		      t == S_IFCHR || t == S_IFBLK ? rdev : 0, NULL, 0, now, ino);
}

int avfs_fs_mkdir(struct avfs_fs *fs, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino)
{
	return create(fs, dir, name, S_IFDIR | (mode & 07777), 0, uid, gid, 0, NULL, 0, now, ino);
}

int avfs_fs_symlink(struct avfs_fs *fs, uint64_t dir, const char *name, const char *target,
		    uint32_t uid, uint32_t gid, int64_t now, uint64_t *ino)
{
	size_t tl = target ? strnlen(target, AVFS_SYMLINK_MAX + 1) : 0;

	if (tl == 0)
		return -ENOENT;
	if (tl > AVFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return create(fs, dir, name, S_IFLNK | 0777, 0, uid, gid, 0, target, tl, now, ino);
}

int avfs_fs_readlink(struct avfs_fs *fs, uint64_t ino, char *buf, size_t len)
{
	int err = 0;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);
	const char *src, *src2 = NULL;
	size_t n, n2 = 0;

	if (!di)
		return err;
	if (!S_ISLNK(di->mode))
		return -EINVAL;
	if (di->symlink_block) {
		if (!fs_meta_ok(fs, di->symlink_block, AVFS_MT_SYMLINK))
			return -EUCLEAN;
		src = (const char *)fs->blocks[di->symlink_block] + HDR;
		n = strnlen(src, AVFS_SYMLINK_BLOCK);
		if (di->symlink_block2) {	/* the first block is full: the rest is here */
			if (n < AVFS_SYMLINK_BLOCK ||
			    !fs_meta_ok(fs, di->symlink_block2, AVFS_MT_SYMLINK))
				return -EUCLEAN;
			src2 = (const char *)fs->blocks[di->symlink_block2] + HDR;
			n2 = strnlen(src2, AVFS_SYMLINK_MAX - AVFS_SYMLINK_BLOCK + 1);
		}
	} else {
		src = di->symlink;
		n = strnlen(src, sizeof(di->symlink));
	}
	if (!len)
		return -EINVAL;
	if (n >= len)
		n = len - 1;
	memcpy(buf, src, n);
	if (n2 > len - 1 - n)
		n2 = len - 1 - n;
	if (n2)
		memcpy(buf + n, src2, n2);
	buf[n + n2] = 0;
	return (int)(n + n2);
}

int avfs_fs_link(struct avfs_fs *fs, uint64_t ino, uint64_t dir, const char *name, int64_t now)
{
	int err = 0;
	size_t len;
	struct fs_dir_place at;
	struct avfs_dinode *di, *pdi;

	RW_CHECK(fs);
	di = fs_ino_get(fs, ino, &err);
	if (!di)
		return err;
	pdi = fs_dir_get(fs, dir, &err);
	if (!pdi)
		return err;
	if (S_ISDIR(di->mode))
		return -EPERM;
	if (!di->nlink)
		return -ENOENT;	/* unlinked while open: as Linux, no new name for it */
	if (di->nlink >= MAX_LINKS)
		return -EMLINK;
	if ((err = name_free(fs, dir, pdi, name, &len)) ||
	    (err = fs_dir_prepare(fs, dir, pdi, len, &at)))
		return err;
	/* the two inodes and the entry */
	if ((err = fs_txn_begin(fs, 2 + at.blocks, at.new_meta)))
		return err;
	if (!(err = fs_dir_insert(fs, dir, pdi, &at, name, len, ino, di->mode))) {
		di->nlink++;
		di->ctime_ns = now;
		fs_ino_dirty(fs, ino);
		dir_touch(fs, dir, pdi, now);
	}
	fs_txn_end(fs);
	return err;
}

static int remove_common(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now,
			 bool want_dir)
{
	int err = 0;
	size_t len, hs;
	uint32_t loc;
	uint64_t ino;
	struct avfs_dinode *pdi = fs_dir_get(fs, dir, &err), *di;

	RW_CHECK(fs);
	if (!pdi)
		return err;
	if ((err = check_name(name, &len)))
		return err;
	if (want_dir && !strcmp(name, "."))
		return -EINVAL;
	if (want_dir && !strcmp(name, ".."))
		return -ENOTEMPTY;
	if (!want_dir && dot_or_dotdot(name))
		return -EISDIR;
	err = fs_dir_find(fs, dir, pdi, name, len, &hs, &loc, &ino);
	if (err)
		return err;
	di = fs_ino_get(fs, ino, &err);
	if (!di)
		return -EUCLEAN;	/* an entry naming a free inode: fsck's business */
	if (want_dir) {
		if (!S_ISDIR(di->mode))
			return -ENOTDIR;
		err = fs_dir_empty(fs, ino, di);
		if (err <= 0)
			return err ? err : -ENOTEMPTY;
	} else if (S_ISDIR(di->mode)) {
		return -EISDIR;
	}
	/* the parent's inode, the entry's block, and what the name's inode costs */
	if ((err = fs_txn_begin(fs, 2 + fs_drop_link_cost(fs, ino, di), 0)))
		return err;
	fs_dir_del(fs, dir, pdi, hs, loc);
	if (want_dir) {
		pdi->nlink--;
		fs_ino_dirty(fs, dir);
	}
	fs_drop_link(fs, ino, di, now);
	dir_touch(fs, dir, pdi, now);
	fs_txn_end(fs);
	return 0;
}

int avfs_fs_unlink(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now)
{
	return remove_common(fs, dir, name, now, false);
}

int avfs_fs_rmdir(struct avfs_fs *fs, uint64_t dir, const char *name, int64_t now)
{
	return remove_common(fs, dir, name, now, true);
}

/* Is `anc` the directory `d` or one of its ancestors? Bounded walk (a corrupt loop ends). */
static bool is_ancestor(struct avfs_fs *fs, uint64_t anc, uint64_t d)
{
	for (uint64_t steps = 0; steps <= fs->sb.ninodes; steps++) {
		struct avfs_dinode *di;

		if (d == anc)
			return true;
		if (d == AVFS_ROOT_INO || !fs_ino_ok(fs, d))
			return false;
		di = fs_ino_raw(fs, d);
		d = di->parent;
	}
	return true;	/* a loop: refuse the rename */
}

int avfs_fs_rename(struct avfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir,
		   const char *nname, unsigned flags, int64_t now)
{
	int err = 0, derr;
	size_t olen, nlen, ohs, nhs;
	uint32_t oloc, nloc;
	uint64_t sino, dino = 0;
	struct fs_dir_place at = { 0 };
	struct avfs_dinode *opdi, *npdi, *sdi, *ddi = NULL;

	RW_CHECK(fs);
	if (flags & ~(AVFS_RENAME_NOREPLACE | AVFS_RENAME_EXCHANGE) ||
	    (flags & AVFS_RENAME_NOREPLACE && flags & AVFS_RENAME_EXCHANGE))
		return -EINVAL;
	opdi = fs_dir_get(fs, odir, &err);
	if (!opdi)
		return err;
	npdi = fs_dir_get(fs, ndir, &err);
	if (!npdi)
		return err;
	if ((err = check_name(oname, &olen)) || (err = check_name(nname, &nlen)))
		return err;
	if (dot_or_dotdot(oname) || dot_or_dotdot(nname))
		return -EBUSY;
	err = fs_dir_find(fs, odir, opdi, oname, olen, &ohs, &oloc, &sino);
	if (err)
		return err;
	sdi = fs_ino_get(fs, sino, &err);
	if (!sdi)
		return -EUCLEAN;
	derr = fs_dir_find(fs, ndir, npdi, nname, nlen, &nhs, &nloc, &dino);
	if (derr && derr != -ENOENT)
		return derr;
	if (!derr) {
		ddi = fs_ino_get(fs, dino, &err);
		if (!ddi)
			return -EUCLEAN;
	}
	if (flags & AVFS_RENAME_EXCHANGE) {
		if (!ddi)
			return -ENOENT;
		if (sino == dino)
			return 0;
		if (odir != ndir && ((S_ISDIR(sdi->mode) && is_ancestor(fs, sino, ndir)) ||
				     (S_ISDIR(ddi->mode) && is_ancestor(fs, dino, odir))))
			return -EINVAL;
		/* two entries, two inodes, two parents */
		if ((err = fs_txn_begin(fs, 6, 0)))
			return err;
		fs_dir_retarget(fs, odir, opdi, oloc, dino, ddi->mode);
		fs_dir_retarget(fs, ndir, npdi, nloc, sino, sdi->mode);
		if (odir != ndir) {
			if (S_ISDIR(sdi->mode)) {
				sdi->parent = (uint32_t)ndir;
				opdi->nlink--;
				npdi->nlink++;
			}
			if (S_ISDIR(ddi->mode)) {
				ddi->parent = (uint32_t)odir;
				npdi->nlink--;
				opdi->nlink++;
			}
		}
		sdi->ctime_ns = ddi->ctime_ns = now;
		fs_ino_dirty(fs, sino);
		fs_ino_dirty(fs, dino);
		dir_touch(fs, odir, opdi, now);
		dir_touch(fs, ndir, npdi, now);
		fs_txn_end(fs);
		return 0;
	}
	if (ddi && (flags & AVFS_RENAME_NOREPLACE))
		return -EEXIST;
	if (ddi && sino == dino)
		return 0;	/* POSIX: two links to one file, nothing to do */
	if (S_ISDIR(sdi->mode)) {
		if (odir != ndir && is_ancestor(fs, sino, ndir))
			return -EINVAL;
		if (ddi && !S_ISDIR(ddi->mode))
			return -ENOTDIR;
		if (ddi && (err = fs_dir_empty(fs, dino, ddi)) <= 0)
			return err ? err : -ENOTEMPTY;
		if (!ddi && odir != ndir && npdi->nlink >= MAX_LINKS)
			return -EMLINK;
	} else if (ddi && S_ISDIR(ddi->mode)) {
		return -EISDIR;
	}
	/* where the new name goes, and what it all costs: the moved inode, both parents, the
	 * old entry, and the new one or the replaced inode */
	if (!ddi) {
		if ((err = fs_dir_prepare(fs, ndir, npdi, nlen, &at)))
			return err;
		/* the index may have grown: find the old name again */
		if (fs_dir_find(fs, odir, opdi, oname, olen, &ohs, &oloc, NULL))
			return -EUCLEAN;
	}
	if ((err = fs_txn_begin(fs, 4 + (ddi ? 1 + fs_drop_link_cost(fs, dino, ddi) : at.blocks),
				ddi ? 0 : at.new_meta)))
		return err;
	/* the new name first: if it cannot be made, nothing has changed */
	if (ddi) {
		fs_dir_retarget(fs, ndir, npdi, nloc, sino, sdi->mode);
	} else if ((err = fs_dir_insert(fs, ndir, npdi, &at, nname, nlen, sino, sdi->mode))) {
		fs_txn_end(fs);
		return err;
	}
	fs_dir_del(fs, odir, opdi, ohs, oloc);
	if (ddi) {
		if (S_ISDIR(ddi->mode))
			npdi->nlink--;
		fs_drop_link(fs, dino, ddi, now);
	}
	if (S_ISDIR(sdi->mode) && odir != ndir) {
		sdi->parent = (uint32_t)ndir;
		opdi->nlink--;
		npdi->nlink++;
	}
	sdi->ctime_ns = now;
	fs_ino_dirty(fs, sino);
	dir_touch(fs, odir, opdi, now);
	dir_touch(fs, ndir, npdi, now);
	fs_txn_end(fs);
	return 0;
}
