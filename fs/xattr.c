/*
 * xattr.c — extended attributes: an inode's names and values in its attribute block (one
 * metadata block of sorted entries, format.h), the namespaces AVFS keeps, XATTR_CREATE and
 * XATTR_REPLACE, the POSIX ACL names' tie to the mode and what a new inode inherits from
 * its directory's default ACL (acl.c's rules). Who may read or change an attribute is the
 * caller's business (the kernel's, on the mount).
 */
#include "fs_i.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#define VALUE_MAX 65536u	/* XATTR_SIZE_MAX: the kernel's own limit */

enum xns { NS_USER, NS_TRUSTED, NS_SECURITY, NS_ACL_ACCESS, NS_ACL_DEFAULT };

static const struct {
	const char *prefix;
	bool exact;		/* the whole name, not a prefix */
} nss[] = {
	[NS_USER] = { "user.", false },
	[NS_TRUSTED] = { "trusted.", false },
	[NS_SECURITY] = { "security.", false },
	[NS_ACL_ACCESS] = { FS_ACL_ACCESS, true },
	[NS_ACL_DEFAULT] = { FS_ACL_DEFAULT, true },
};

/* The namespace of a name of nl bytes (no NUL inside): enum xns, or -EOPNOTSUPP (one AVFS
 * does not keep), -EINVAL (a prefix with nothing after it). */
static int ns_of(const char *name, size_t nl)
{
	for (size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++) {
		size_t pl = strlen(nss[i].prefix);

		if (nss[i].exact ? nl == pl && !memcmp(name, nss[i].prefix, pl) :
				   nl >= pl && !memcmp(name, nss[i].prefix, pl))
			return nl == pl && !nss[i].exact ? -EINVAL : (int)i;
	}
	return -EOPNOTSUPP;
}

/* A caller's name: its namespace and length. -ERANGE (empty or longer than 255 bytes, as
 * setxattr(2) says), or ns_of's error. */
static int name_check(const char *name, size_t *nl)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, AVFS_NAME_MAX + 1);
	if (n == 0 || n > AVFS_NAME_MAX)
		return -ERANGE;
	*nl = n;
	return ns_of(name, n);
}

/* Is ns one of the POSIX ACLs, and are they off (a mount with AVFS_MOUNT_NOACL)? */
static bool is_acl(int ns)
{
	return ns == NS_ACL_ACCESS || ns == NS_ACL_DEFAULT;
}

static bool acl_off(const struct avfs_fs *fs)
{
	return fs->flags & AVFS_MOUNT_NOACL;
}

/* ---- the block's entries ---- */

static struct avfs_xent *xent(const struct avfs_xblock *xb, uint32_t off)
{
	return (struct avfs_xent *)(xb->data + off);
}

static uint32_t xent_size(const struct avfs_xent *e)
{
	return AVFS_XENT_SIZE(e->name_len, e->value_len);
}

static const char *xent_name(const struct avfs_xent *e)
{
	return (const char *)(e + 1);
}

/* Order of names: bytes, then length (strcmp's order for names without NUL). */
static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : al < bl ? -1 : al > bl;
}

size_t fs_xattr_prefix(const struct avfs_xblock *xb, uint16_t *count)
{
	uint32_t off = 0, used = xb->used < AVFS_XATTR_ROOM ? xb->used : AVFS_XATTR_ROOM;
	const struct avfs_xent *prev = NULL;
	uint16_t n = 0;

	while (n < xb->count && off + sizeof(struct avfs_xent) <= used) {
		const struct avfs_xent *e = xent(xb, off);
		const char *name = xent_name(e);
		int ns;

		if (!e->name_len || xent_size(e) > used - off || memchr(name, 0, e->name_len))
			break;
		ns = ns_of(name, e->name_len);
		if (ns < 0 || (is_acl(ns) && fs_acl_valid(name + e->name_len, e->value_len)))
			break;
		if (prev && name_cmp(xent_name(prev), prev->name_len, name, e->name_len) >= 0)
			break;
		prev = e;
		off += xent_size(e);
		n++;
	}
	*count = n;
	return off;
}

struct avfs_xblock *fs_xattr_block(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di,
				   int *err)
{
	struct avfs_xblock *xb;
	uint16_t n;

	*err = 0;
	if (!di->xattr)
		return NULL;
	/* (the pointer is checked before the array is indexed with it) */
	xb = fs_meta_ok(fs, di->xattr, AVFS_MT_XATTR) ? (struct avfs_xblock *)fs->blocks[di->xattr] :
							  NULL;
	if (!xb || xb->ino != ino || xb->used > AVFS_XATTR_ROOM ||
	    fs_xattr_prefix(xb, &n) != xb->used || n != xb->count) {
		fs_why(fs, "inode %llu: its extended attribute block %u is damaged: run fsck.avfs -y",
		       (unsigned long long)ino, di->xattr);
		*err = -EUCLEAN;
		return NULL;
	}
	return xb;
}

/* Where name is (found: 1, *off its entry) or would go (0, *off the entry before which). */
static int locate(const struct avfs_xblock *xb, const char *name, size_t nl, uint32_t *off)
{
	uint32_t o = 0;

	for (uint16_t i = 0; i < xb->count; i++) {
		const struct avfs_xent *e = xent(xb, o);
		int c = name_cmp(xent_name(e), e->name_len, name, nl);

		if (c >= 0) {
			*off = o;
			return c == 0;
		}
		o += xent_size(e);
	}
	*off = o;
	return 0;
}

const uint8_t *fs_xattr_find(const struct avfs_xblock *xb, const char *name, size_t nl,
			     uint16_t *vlen)
{
	uint32_t off;
	const struct avfs_xent *e;

	if (!xb || !locate(xb, name, nl, &off))
		return NULL;
	e = xent(xb, off);
	*vlen = e->value_len;
	return (const uint8_t *)xent_name(e) + e->name_len;
}

/* Would setting name to a value of vl bytes fit xb (NULL: an empty block)? */
static bool fits(const struct avfs_xblock *xb, const char *name, size_t nl, size_t vl)
{
	uint32_t off, old = 0, used = xb ? xb->used : 0;

	if (xb && locate(xb, name, nl, &off))
		old = xent_size(xent(xb, off));
	return used - old + AVFS_XENT_SIZE(nl, vl) <= AVFS_XATTR_ROOM;
}

/* Set or (v NULL) remove name in the image; it fits (checked). */
static void xb_edit(struct avfs_xblock *xb, const char *name, size_t nl, const void *v, size_t vl)
{
	uint32_t off, old = 0, size = v ? AVFS_XENT_SIZE(nl, vl) : 0;
	int found = locate(xb, name, nl, &off);
	struct avfs_xent *e;

	if (found)
		old = xent_size(xent(xb, off));
	memmove(xb->data + off + size, xb->data + off + old, xb->used - off - old);
	xb->used = (uint16_t)(xb->used - old + size);
	xb->count = (uint16_t)(xb->count - found + !!v);
	memset(xb->data + xb->used, 0, AVFS_XATTR_ROOM - xb->used);
	if (!v)
		return;
	e = xent(xb, off);
	memset(e, 0, size);
	e->name_len = (uint8_t)nl;
	e->value_len = (uint16_t)vl;
	memcpy(e + 1, name, nl);
	memcpy((uint8_t *)(e + 1) + nl, v, vl);
}

/* Set or (v NULL) remove name of ino in the running transaction, whose credits the caller
 * holds (XATTR_CREDITS, one new metadata block when di has no attribute block): the block is
 * made for the first attribute and freed with the last. The change fits (fits()). */
static void store(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di,
		  struct avfs_xblock *xb, const char *name, size_t nl, const void *v, size_t vl)
{
	if (!xb) {
		uint64_t m;

		/* nothing to remove; a first attribute's block was reserved with the credits, so
		 * its allocation does not fail */
		if (!v || fs_meta_alloc(fs, AVFS_MT_XATTR, &m))
			return;
		xb = (struct avfs_xblock *)fs->blocks[m];
		xb->ino = (uint32_t)ino;
		di->xattr = (uint32_t)m;
		fs_ino_dirty(fs, ino);
	}
	xb_edit(xb, name, nl, v, vl);
	fs_dirty(fs, di->xattr);
	if (!xb->count) {
		fs_meta_free(fs, di->xattr);
		di->xattr = 0;
		fs_ino_dirty(fs, ino);
	}
	if (v && fs->sb.version < AVFS_FORMAT_VERSION_XATTR) {
		/* the image now holds what only version 2 readers know (format.h) */
		fs->sb.version = fs_sb(fs)->version = AVFS_FORMAT_VERSION_XATTR;
		fs_dirty(fs, 0);
	}
}

/* the inode's block, its attribute block, the metadata bitmap's block */
#define XATTR_CREDITS 3

void fs_xattr_free(struct avfs_fs *fs, struct avfs_dinode *di)
{
	if (di->xattr)
		fs_meta_free(fs, di->xattr);
	di->xattr = 0;
}

/* ---- the interface ---- */

/* The checks every call makes: a live inode, a name AVFS keeps that the inode's type may
 * carry (as the kernel's xattr_permission: user.* only on files and directories; ACLs not
 * on symlinks, nor at all without them). write: -EPERM for user.* elsewhere, else -ENODATA. */
static int xattr_begin(struct avfs_fs *fs, uint64_t ino, const char *name, bool write,
		       struct avfs_dinode **dip, size_t *nl)
{
	int err = 0, ns;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);

	if (!di)
		return err;
	if ((ns = name_check(name, nl)) < 0)
		return ns;
	if (ns == NS_USER && !S_ISREG(di->mode) && !S_ISDIR(di->mode))
		return write ? -EPERM : -ENODATA;
	if (is_acl(ns) && (S_ISLNK(di->mode) || acl_off(fs)))
		return -EOPNOTSUPP;
	*dip = di;
	return ns;
}

int avfs_fs_getxattr(struct avfs_fs *fs, uint64_t ino, const char *name, void *buf, size_t size)
{
	struct avfs_dinode *di = NULL;
	struct avfs_xblock *xb;
	const uint8_t *v;
	uint16_t vl;
	size_t nl = 0;
	int err = xattr_begin(fs, ino, name, false, &di, &nl);

	if (err < 0)
		return err;
	xb = fs_xattr_block(fs, ino, di, &err);
	if (err)
		return err;
	v = fs_xattr_find(xb, name, nl, &vl);
	if (!v)
		return -ENODATA;
	if (size && size < vl)
		return -ERANGE;
	if (size)
		memcpy(buf, v, vl);
	return vl;
}

int avfs_fs_listxattr(struct avfs_fs *fs, uint64_t ino, bool trusted, char *buf, size_t size)
{
	int err = 0;
	struct avfs_dinode *di = fs_ino_get(fs, ino, &err);
	struct avfs_xblock *xb;
	size_t total = 0;
	uint32_t off = 0;
	int ns;

	if (!di)
		return err;
	xb = fs_xattr_block(fs, ino, di, &err);
	if (err)
		return err;
	for (uint16_t i = 0; xb && i < xb->count; i++) {
		const struct avfs_xent *e = xent(xb, off);

		off += xent_size(e);
		ns = ns_of(xent_name(e), e->name_len);
		if ((!trusted && ns == NS_TRUSTED) || (acl_off(fs) && is_acl(ns)))
			continue;
		if (size && total + e->name_len + 1 > size)
			return -ERANGE;
		if (size) {
			memcpy(buf + total, xent_name(e), e->name_len);
			buf[total + e->name_len] = 0;
		}
		total += e->name_len + 1u;
	}
	return (int)total;
}

int avfs_fs_setxattr(struct avfs_fs *fs, uint64_t ino, const char *name, const void *value,
		     size_t len, unsigned flags, int64_t now)
{
	struct avfs_dinode *di = NULL;
	struct avfs_xblock *xb;
	uint32_t mode;
	uint16_t vl;
	size_t nl = 0;
	bool found, keep = true;
	int ns, err;

	RW_CHECK(fs);
	if ((ns = xattr_begin(fs, ino, name, true, &di, &nl)) < 0)
		return ns;
	if (flags & ~(AVFS_XATTR_CREATE | AVFS_XATTR_REPLACE) ||
	    flags == (AVFS_XATTR_CREATE | AVFS_XATTR_REPLACE) || (!value && len))
		return -EINVAL;
	if (len > VALUE_MAX)
		return -E2BIG;
	if (ns == NS_ACL_DEFAULT && !S_ISDIR(di->mode))
		return -EACCES;	/* as the kernel's set_posix_acl */
	if (is_acl(ns) && fs_acl_valid(value, len))
		return -EINVAL;
	xb = fs_xattr_block(fs, ino, di, &err);
	if (err)
		return err;
	found = fs_xattr_find(xb, name, nl, &vl) != NULL;
	if (flags & AVFS_XATTR_CREATE && found)
		return -EEXIST;
	if (flags & AVFS_XATTR_REPLACE && !found)
		return -ENODATA;
	mode = di->mode;
	/* an access ACL sets the permission bits; one that says no more than they do is not
	 * kept (as Linux file systems: posix_acl_update_mode) */
	if (ns == NS_ACL_ACCESS)
		keep = fs_acl_mode(value, len, &mode);
	if (keep && !fits(xb, name, nl, len))
		return -ENOSPC;
	if ((err = fs_txn_begin(fs, XATTR_CREDITS, keep && !xb)))
		return err;
	if (keep || found)
		store(fs, ino, di, xb, name, nl, keep ? (value ? value : "") : NULL, len);
	di->mode = mode;
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	fs_txn_end(fs);
	return 0;
}

int avfs_fs_removexattr(struct avfs_fs *fs, uint64_t ino, const char *name, int64_t now)
{
	struct avfs_dinode *di = NULL;
	struct avfs_xblock *xb;
	uint16_t vl;
	size_t nl = 0;
	int err;

	RW_CHECK(fs);
	if ((err = xattr_begin(fs, ino, name, true, &di, &nl)) < 0)
		return err;
	xb = fs_xattr_block(fs, ino, di, &err);
	if (err)
		return err;
	if (!fs_xattr_find(xb, name, nl, &vl))
		return -ENODATA;
	if ((err = fs_txn_begin(fs, XATTR_CREDITS, 0)))
		return err;
	store(fs, ino, di, xb, name, nl, NULL, 0);
	di->ctime_ns = now;
	fs_ino_dirty(fs, ino);
	fs_txn_end(fs);
	return 0;
}

/* ---- what ACLs do to other operations ---- */

int fs_xattr_chmod(struct avfs_fs *fs, uint64_t ino, struct avfs_dinode *di, uint32_t mode)
{
	int err = 0;
	struct avfs_xblock *xb = fs_xattr_block(fs, ino, di, &err);
	uint32_t off;

	if (!xb || acl_off(fs) || !locate(xb, FS_ACL_ACCESS, strlen(FS_ACL_ACCESS), &off))
		return err;
	{
		struct avfs_xent *e = xent(xb, off);

		fs_acl_chmod((uint8_t *)(e + 1) + e->name_len, e->value_len, mode);
	}
	fs_dirty(fs, di->xattr);
	return 0;
}

int fs_xattr_inherit(struct avfs_fs *fs, uint64_t dir, struct avfs_dinode *pdi, uint32_t mode,
		     uint32_t umask, struct fs_inherit *in)
{
	int err = 0;
	struct avfs_xblock *xb = fs_xattr_block(fs, dir, pdi, &err);
	const uint8_t *v;
	uint16_t vl;

	memset(in, 0, offsetof(struct fs_inherit, acl));
	in->mode = mode;
	if (err)
		return err;
	if (S_ISLNK(mode))
		return 0;	/* no ACL, no umask: a symlink's permissions are not used */
	v = acl_off(fs) ? NULL : fs_xattr_find(xb, FS_ACL_DEFAULT, strlen(FS_ACL_DEFAULT), &vl);
	if (!v) {
		in->mode &= ~(umask & 0777u);
		return 0;
	}
	/* posix_acl_create: the default ACL masks the mode, the umask is not used */
	memcpy(in->acl, v, vl);
	in->len = vl;
	in->access = fs_acl_create(in->acl, vl, &in->mode);
	in->dflt = S_ISDIR(mode);
	if (AVFS_XENT_SIZE(strlen(FS_ACL_ACCESS), vl) * in->access +
	    AVFS_XENT_SIZE(strlen(FS_ACL_DEFAULT), vl) * in->dflt > AVFS_XATTR_ROOM)
		return -ENOSPC;
	return 0;
}

void fs_xattr_inherit_apply(struct avfs_fs *fs, uint64_t dir, uint64_t ino, struct avfs_dinode *di,
			    const struct fs_inherit *in)
{
	int err;
	struct avfs_xblock *pxb = fs_xattr_block(fs, dir, fs_ino_raw(fs, dir), &err);
	uint16_t vl;
	const uint8_t *dv = fs_xattr_find(pxb, FS_ACL_DEFAULT, strlen(FS_ACL_DEFAULT), &vl);
	int e2 = 0;

	if (in->dflt && dv)
		store(fs, ino, di, NULL, FS_ACL_DEFAULT, strlen(FS_ACL_DEFAULT), dv, vl);
	if (in->access)
		store(fs, ino, di, fs_xattr_block(fs, ino, di, &e2), FS_ACL_ACCESS,
		      strlen(FS_ACL_ACCESS), in->acl, in->len);
}
