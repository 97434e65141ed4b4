/*
 * test_xattr.c — extended attributes and POSIX ACLs in the file system core (fs/xattr.c,
 * fs/acl.c) on a RAM disk: get/list/set/remove, XATTR_CREATE/REPLACE, ext4's limits and
 * errors, the namespaces per inode type, an access ACL's tie to the mode (set, chmod),
 * default ACL inheritance and the umask on create, persistence across a remount, format 1
 * images raised to 2 by their first attribute, a mount without ACLs (noacl), and fsck on
 * damaged attribute blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"
#include "fsck.h"
#include "fsck_clean.h"
#include "fsio.h"
#include "memdisk.h"
#include "superver.h"

#define IMG (64u << 20)

struct fx {
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_fs *fs;
};

static void fx_mount_flags(struct fx *f, unsigned flags)
{
	char why[256];

	assert_int_equal(avfs_fsio_mount(f->d, flags, &f->io, NULL, why, sizeof(why)), 0);
	f->fs = f->io->fs;
}

static void fx_mount(struct fx *f)
{
	fx_mount_flags(f, 0);
}

static void fx_init(struct fx *f)
{
	struct avfs_mkfs_opts o = { .block_shift = 16, .seed = 7, .inodes = 256 };
	char why[256];

	memset(f, 0, sizeof(*f));
	assert_int_equal(avfs_memdisk_open(IMG, 512, &f->d), 0);
	assert_int_equal(avfs_fsio_mkfs(f->d, &o, NULL, why, sizeof(why)), 0);
	fx_mount(f);
}

static void fx_remount(struct fx *f)
{
	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	fx_mount(f);
}

static void fx_done(struct fx *f)
{
	assert_int_equal(f->fs->overruns, 0);	/* every credit estimate held */
	assert_fsck_clean(f->fs);
	assert_int_equal(avfs_fsio_unmount(f->io), 0);
	avfs_disk_close(f->d);
}

static uint64_t mk(struct fx *f, uint64_t dir, const char *name, uint32_t mode)
{
	uint64_t ino;

	if (S_ISDIR(mode))
		assert_int_equal(avfs_fs_mkdir(f->fs, dir, name, mode, 0, 0, 1, &ino), 0);
	else
		assert_int_equal(avfs_fs_mknod(f->fs, dir, name, mode, 0, 0, 1, &ino), 0);
	return ino;
}

static void set(struct fx *f, uint64_t ino, const char *name, const char *v)
{
	assert_int_equal(avfs_fs_setxattr(f->fs, ino, name, v, strlen(v), 0, 5), 0);
}

/* The value of name as a string ("" when it is absent). */
static const char *get(struct fx *f, uint64_t ino, const char *name)
{
	static char buf[AVFS_XATTR_ROOM + 1];
	int n = avfs_fs_getxattr(f->fs, ino, name, buf, sizeof(buf) - 1);

	if (n == -ENODATA)
		return "";
	assert_true(n >= 0);
	buf[n] = 0;
	return buf;
}

static uint32_t mode_of(struct fx *f, uint64_t ino)
{
	struct avfs_stat st;

	assert_int_equal(avfs_fs_getattr(f->fs, ino, &st), 0);
	return st.mode;
}

/* ---- ACLs in the kernel's xattr form ---- */

enum { U_OBJ = 1, U = 2, G_OBJ = 4, G = 8, MASK = 0x10, OTHER = 0x20 };
#define NOID 0xffffffffu

struct acl {
	uint8_t b[4 + 8 * 16];
	size_t len;
};

/* acl_of("u::6 u:1000:6 g::4 m::6 o::4") */
static struct acl acl_of(const char *spec)
{
	struct acl a = { .len = 4 };
	uint32_t version = 2;
	const char *p = spec;

	memcpy(a.b, &version, 4);
	while (*p) {
		char t;
		unsigned id = NOID, perm;
		int n = 0;
		uint16_t tag, pm;

		if (sscanf(p, "%c:%u:%u%n", &t, &id, &perm, &n) != 3) {
			id = NOID;
			assert_int_equal(sscanf(p, "%c::%u%n", &t, &perm, &n), 2);
		}
		tag = t == 'u' ? (id == NOID ? U_OBJ : U) : t == 'g' ? (id == NOID ? G_OBJ : G) :
		      t == 'm' ? MASK : OTHER;
		pm = (uint16_t)perm;
		memcpy(a.b + a.len, &tag, 2);
		memcpy(a.b + a.len + 2, &pm, 2);
		memcpy(a.b + a.len + 4, &id, 4);
		a.len += 8;
		p += n;
		while (*p == ' ')
			p++;
	}
	return a;
}

static int set_acl(struct fx *f, uint64_t ino, const char *name, const char *spec)
{
	struct acl a = acl_of(spec);

	return avfs_fs_setxattr(f->fs, ino, name, a.b, a.len, 0, 9);
}

/* The stored ACL equals spec (or is absent, spec NULL). */
static void assert_acl(struct fx *f, uint64_t ino, const char *name, const char *spec)
{
	uint8_t buf[512];
	int n = avfs_fs_getxattr(f->fs, ino, name, buf, sizeof(buf));

	if (!spec) {
		assert_int_equal(n, -ENODATA);
		return;
	}
	{
		struct acl a = acl_of(spec);

		assert_int_equal(n, (int)a.len);
		assert_memory_equal(buf, a.b, a.len);
	}
}

/* ---- tests ---- */

static void test_xattr_set_get_list_remove(void **state)
{
	struct fx f;
	uint64_t ino, meta0;
	char list[256];
	int n;

	(void)state;
	fx_init(&f);
	ino = mk(&f, 1, "a", S_IFREG | 0644);
	meta0 = avfs_fs_super(f.fs)->free_meta;
	set(&f, ino, "user.b", "22");
	set(&f, ino, "user.a", "1");
	set(&f, ino, "trusted.t", "trust");
	set(&f, ino, "security.s", "sec");
	assert_int_equal(avfs_fs_super(f.fs)->free_meta, meta0 - 1);	/* one block for all */
	assert_string_equal(get(&f, ino, "user.a"), "1");
	assert_string_equal(get(&f, ino, "user.b"), "22");
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "user.b", NULL, 0), 2);
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "user.b", list, 1), -ERANGE);
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "user.c", list, 10), -ENODATA);
	/* the names, sorted; trusted.* only for who may see them */
	n = avfs_fs_listxattr(f.fs, ino, true, list, sizeof(list));
	assert_int_equal(n, 7 + 7 + 11 + 10);
	assert_memory_equal(list, "security.s\0trusted.t\0user.a\0user.b\0", (size_t)n);
	assert_int_equal(avfs_fs_listxattr(f.fs, ino, true, NULL, 0), n);
	assert_int_equal(avfs_fs_listxattr(f.fs, ino, true, list, (size_t)n - 1), -ERANGE);
	n = avfs_fs_listxattr(f.fs, ino, false, list, sizeof(list));
	assert_memory_equal(list, "security.s\0user.a\0user.b\0", (size_t)n);
	/* replace with a longer and a shorter value: neighbours intact */
	set(&f, ino, "user.a", "a longer value than before");
	set(&f, ino, "user.b", "");
	assert_string_equal(get(&f, ino, "user.a"), "a longer value than before");
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "user.b", list, 10), 0);
	assert_string_equal(get(&f, ino, "security.s"), "sec");
	/* remove all: the block goes with the last */
	assert_int_equal(avfs_fs_removexattr(f.fs, ino, "user.c", 6), -ENODATA);
	for (const char *const *nm = (const char *const[]){ "user.a", "user.b", "trusted.t",
							    "security.s", NULL }; *nm; nm++)
		assert_int_equal(avfs_fs_removexattr(f.fs, ino, *nm, 6), 0);
	assert_int_equal(avfs_fs_listxattr(f.fs, ino, true, list, sizeof(list)), 0);
	assert_int_equal(avfs_fs_super(f.fs)->free_meta, meta0);
	assert_int_equal(fs_ino_raw(f.fs, ino)->xattr, 0);
	fx_done(&f);
}

static void test_xattr_flags(void **state)
{
	struct fx f;
	uint64_t ino;

	(void)state;
	fx_init(&f);
	ino = mk(&f, 1, "a", S_IFREG | 0644);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.x", "1", 1, AVFS_XATTR_REPLACE, 2),
			 -ENODATA);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.x", "1", 1, AVFS_XATTR_CREATE, 2), 0);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.x", "2", 1, AVFS_XATTR_CREATE, 2),
			 -EEXIST);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.x", "3", 1, AVFS_XATTR_REPLACE, 2), 0);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.x", "4", 1,
					  AVFS_XATTR_CREATE | AVFS_XATTR_REPLACE, 2), -EINVAL);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.x", "4", 1, 8, 2), -EINVAL);
	assert_string_equal(get(&f, ino, "user.x"), "3");
	fx_done(&f);
}

static void test_xattr_limits(void **state)
{
	struct fx f;
	uint64_t ino;
	char name[300], *big = malloc(70000);
	size_t room;

	(void)state;
	fx_init(&f);
	ino = mk(&f, 1, "a", S_IFREG | 0644);
	memset(big, 'v', 70000);
	/* names: 255 bytes with the prefix, as the kernel's XATTR_NAME_MAX */
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[255] = 0;
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, name, "1", 1, 0, 2), 0);
	assert_string_equal(get(&f, ino, name), "1");
	name[255] = 'n';
	name[256] = 0;
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, name, "1", 1, 0, 2), -ERANGE);
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, name, NULL, 0), -ERANGE);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "", "1", 1, 0, 2), -ERANGE);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.", "1", 1, 0, 2), -EINVAL);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "other.x", "1", 1, 0, 2), -EOPNOTSUPP);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "system.foo", "1", 1, 0, 2), -EOPNOTSUPP);
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "userx", NULL, 0), -EOPNOTSUPP);
	name[255] = 0;
	assert_int_equal(avfs_fs_removexattr(f.fs, ino, name, 3), 0);
	/* values: over XATTR_SIZE_MAX E2BIG; more than the block holds ENOSPC, as ext4 */
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.v", big, 65537, 0, 2), -E2BIG);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.v", big, 5000, 0, 2), -ENOSPC);
	room = AVFS_XATTR_ROOM - sizeof(struct avfs_xent) - strlen("user.v");
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.v", big, room + 1, 0, 2), -ENOSPC);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.v", big, room, 0, 2), 0);
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "user.v", NULL, 0), (int)room);
	/* full: another one fails and changes nothing; a smaller value makes room */
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.w", "1", 1, 0, 2), -ENOSPC);
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "user.w", NULL, 0), -ENODATA);
	assert_int_equal(avfs_fs_getxattr(f.fs, ino, "user.v", NULL, 0), (int)room);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.v", big, room - 12, 0, 2), 0);
	assert_int_equal(avfs_fs_setxattr(f.fs, ino, "user.w", "1", 1, 0, 2), 0);
	/* many small ones up to the block's end */
	assert_int_equal(avfs_fs_removexattr(f.fs, ino, "user.v", 3), 0);
	for (int i = 0;; i++) {
		char nm[32];
		int err;

		snprintf(nm, sizeof(nm), "user.k%04d", i);
		err = avfs_fs_setxattr(f.fs, ino, nm, "vvvv", 4, 0, 2);
		if (err) {
			assert_int_equal(err, -ENOSPC);
			/* 4 header + 10 name + 4 value, padded to 20 bytes each, beside
			 * user.w's 12 */
			assert_int_equal(i, (AVFS_XATTR_ROOM - 12) / 20);
			break;
		}
	}
	free(big);
	fx_done(&f);
}

static void test_xattr_types(void **state)
{
	struct fx f;
	uint64_t file, dir, lnk, fifo;
	char buf[16];

	(void)state;
	fx_init(&f);
	file = mk(&f, 1, "f", S_IFREG | 0644);
	dir = mk(&f, 1, "d", S_IFDIR | 0755);
	fifo = mk(&f, 1, "p", S_IFIFO | 0644);
	assert_int_equal(avfs_fs_symlink(f.fs, 1, "l", "f", 0, 0, 1, &lnk), 0);
	set(&f, dir, "user.x", "d");
	/* user.* only on files and directories (the kernel's xattr_permission) */
	assert_int_equal(avfs_fs_setxattr(f.fs, lnk, "user.x", "1", 1, 0, 2), -EPERM);
	assert_int_equal(avfs_fs_setxattr(f.fs, fifo, "user.x", "1", 1, 0, 2), -EPERM);
	assert_int_equal(avfs_fs_getxattr(f.fs, lnk, "user.x", buf, sizeof(buf)), -ENODATA);
	assert_int_equal(avfs_fs_removexattr(f.fs, fifo, "user.x", 2), -EPERM);
	set(&f, lnk, "trusted.x", "t");
	set(&f, fifo, "security.x", "s");
	/* ACLs: none on a symlink, a default one only on a directory, malformed ones refused */
	assert_int_equal(set_acl(&f, lnk, FS_ACL_ACCESS, "u::7 g::5 o::5"), -EOPNOTSUPP);
	assert_int_equal(set_acl(&f, file, FS_ACL_DEFAULT, "u::7 g::5 o::5"), -EACCES);
	assert_int_equal(set_acl(&f, file, FS_ACL_ACCESS, "u::7 u:5:7 g::5 o::5"), -EINVAL);
	assert_int_equal(set_acl(&f, file, FS_ACL_ACCESS, "g::5 u::7 o::5"), -EINVAL);
	assert_int_equal(set_acl(&f, file, FS_ACL_ACCESS, "u::7 g::5 o::9"), -EINVAL);
	assert_int_equal(set_acl(&f, file, FS_ACL_ACCESS, "u::7 g::5"), -EINVAL);
	assert_int_equal(avfs_fs_setxattr(f.fs, file, FS_ACL_ACCESS, "\2\0\0\0\1\0", 6, 0, 2),
			 -EINVAL);
	assert_int_equal(avfs_fs_setxattr(f.fs, 999999, "user.x", "1", 1, 0, 2), -EINVAL);
	assert_int_equal(avfs_fs_setxattr(f.fs, 200, "user.x", "1", 1, 0, 2), -ENOENT);
	assert_int_equal(mode_of(&f, file), S_IFREG | 0644);	/* nothing changed */
	assert_int_equal(avfs_fs_listxattr(f.fs, file, true, buf, sizeof(buf)), 0);
	fx_done(&f);
}

static void test_xattr_acl_mode(void **state)
{
	struct fx f;
	uint64_t ino, meta0;
	struct avfs_stat st = { .mode = 0751 };

	(void)state;
	fx_init(&f);
	ino = mk(&f, 1, "a", S_IFREG | 0644);
	meta0 = avfs_fs_super(f.fs)->free_meta;
	/* an ACL the mode can say: the mode changes, nothing is kept (as ext4) */
	assert_int_equal(set_acl(&f, ino, FS_ACL_ACCESS, "u::6 g::0 o::0"), 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0600);
	assert_acl(&f, ino, FS_ACL_ACCESS, NULL);
	assert_int_equal(avfs_fs_super(f.fs)->free_meta, meta0);
	/* a named user: kept, the group bits are the mask's */
	assert_int_equal(set_acl(&f, ino, FS_ACL_ACCESS, "u::6 u:1000:7 g::4 m::5 o::4"), 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0654);
	assert_acl(&f, ino, FS_ACL_ACCESS, "u::6 u:1000:7 g::4 m::5 o::4");
	/* chmod: owner, mask and other entries follow (posix_acl_chmod) */
	assert_int_equal(avfs_fs_setattr(f.fs, ino, AVFS_SET_MODE, &st, 10), 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0751);
	assert_acl(&f, ino, FS_ACL_ACCESS, "u::7 u:1000:7 g::4 m::5 o::1");
	/* back to a minimal ACL: dropped, the mode stays what it says */
	assert_int_equal(set_acl(&f, ino, FS_ACL_ACCESS, "u::7 g::5 o::0"), 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0750);
	assert_acl(&f, ino, FS_ACL_ACCESS, NULL);
	/* removing an ACL keeps the mode */
	assert_int_equal(set_acl(&f, ino, FS_ACL_ACCESS, "u::7 g::0 g:44:7 m::7 o::0"), 0);
	assert_int_equal(avfs_fs_removexattr(f.fs, ino, FS_ACL_ACCESS, 11), 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0770);
	assert_int_equal(avfs_fs_super(f.fs)->free_meta, meta0);
	fx_done(&f);
}

static void test_xattr_acl_inherit(void **state)
{
	struct fx f;
	uint64_t d, plain, ino, sub, lnk;

	(void)state;
	fx_init(&f);
	d = mk(&f, 1, "d", S_IFDIR | 0755);
	plain = mk(&f, 1, "plain", S_IFDIR | 0777);
	assert_int_equal(set_acl(&f, d, FS_ACL_DEFAULT, "u::7 u:1000:7 g::5 m::7 o::0"), 0);
	/* no default ACL: the umask */
	assert_int_equal(avfs_fs_create(f.fs, plain, "f", S_IFREG | 0666, 0, 022, 0, 0, 3, &ino),
			 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0644);
	assert_int_equal(fs_ino_raw(f.fs, ino)->xattr, 0);
	assert_int_equal(avfs_fs_create(f.fs, plain, "e", S_IFDIR | 0777, 0, 027, 0, 0, 3, &ino),
			 0);
	assert_int_equal(mode_of(&f, ino), S_IFDIR | 0750);
	/* a default ACL: the umask is not used, the ACL masks the mode (posix_acl_create) */
	assert_int_equal(avfs_fs_create(f.fs, d, "f", S_IFREG | 0666, 0, 077, 0, 0, 3, &ino), 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0660);
	assert_acl(&f, ino, FS_ACL_ACCESS, "u::6 u:1000:7 g::5 m::6 o::0");
	assert_acl(&f, ino, FS_ACL_DEFAULT, NULL);
	assert_int_equal(avfs_fs_create(f.fs, d, "sub", S_IFDIR | 0777, 0, 077, 0, 0, 3, &sub), 0);
	assert_int_equal(mode_of(&f, sub), S_IFDIR | 0770);
	assert_acl(&f, sub, FS_ACL_ACCESS, "u::7 u:1000:7 g::5 m::7 o::0");
	assert_acl(&f, sub, FS_ACL_DEFAULT, "u::7 u:1000:7 g::5 m::7 o::0");
	/* ... and again one level down, through the inherited default */
	assert_int_equal(avfs_fs_create(f.fs, sub, "g", S_IFIFO | 0640, 0, 0, 0, 0, 3, &ino), 0);
	assert_int_equal(mode_of(&f, ino), S_IFIFO | 0640);
	assert_acl(&f, ino, FS_ACL_ACCESS, "u::6 u:1000:7 g::5 m::4 o::0");
	/* a default ACL the mode can say: no access ACL kept */
	assert_int_equal(set_acl(&f, plain, FS_ACL_DEFAULT, "u::7 g::5 o::5"), 0);
	assert_int_equal(avfs_fs_create(f.fs, plain, "m", S_IFREG | 0666, 0, 077, 0, 0, 3, &ino),
			 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0644);
	assert_int_equal(fs_ino_raw(f.fs, ino)->xattr, 0);
	/* symlinks inherit nothing; mknod and mkdir inherit too */
	assert_int_equal(avfs_fs_symlink(f.fs, d, "l", "f", 0, 0, 3, &lnk), 0);
	assert_int_equal(fs_ino_raw(f.fs, lnk)->xattr, 0);
	ino = mk(&f, d, "k", S_IFREG | 0600);
	assert_acl(&f, ino, FS_ACL_ACCESS, "u::6 u:1000:7 g::5 m::0 o::0");
	/* deleting frees their blocks */
	assert_int_equal(avfs_fs_unlink(f.fs, d, "f", 4), 0);
	assert_int_equal(avfs_fs_unlink(f.fs, sub, "g", 4), 0);
	assert_int_equal(avfs_fs_rmdir(f.fs, d, "sub", 4), 0);
	fx_done(&f);
}

static void test_xattr_persist(void **state)
{
	struct fx f;
	uint64_t a, b, meta0;

	(void)state;
	fx_init(&f);
	a = mk(&f, 1, "a", S_IFREG | 0644);
	b = mk(&f, 1, "b", S_IFDIR | 0755);
	meta0 = avfs_fs_super(f.fs)->free_meta;
	set(&f, a, "user.one", "1");
	set(&f, b, "user.two", "2");
	assert_int_equal(set_acl(&f, b, FS_ACL_DEFAULT, "u::7 g::5 o::5"), 0);
	fx_remount(&f);
	assert_string_equal(get(&f, a, "user.one"), "1");
	assert_string_equal(get(&f, b, "user.two"), "2");
	assert_acl(&f, b, FS_ACL_DEFAULT, "u::7 g::5 o::5");
	assert_int_equal(avfs_fs_super(f.fs)->version, AVFS_FORMAT_VERSION);
	/* a whole inode goes with its block */
	assert_int_equal(avfs_fs_unlink(f.fs, 1, "a", 4), 0);
	assert_int_equal(avfs_fs_rmdir(f.fs, 1, "b", 4), 0);
	assert_int_equal(avfs_fs_super(f.fs)->free_meta, meta0);
	fx_remount(&f);
	assert_int_equal(avfs_fs_super(f.fs)->free_meta, meta0);
	fx_done(&f);
}

/* Set the version of both superblock copies of an unmounted image. */
static void set_version(struct fx *f, uint32_t v)
{
	superver_set(f->d, IMG, v);
}

static void test_xattr_format1(void **state)
{
	struct fx f;
	uint64_t a;
	char why[256];
	struct avfs_fsio *io;

	(void)state;
	fx_init(&f);
	a = mk(&f, 1, "a", S_IFREG | 0644);
	assert_int_equal(avfs_fsio_unmount(f.io), 0);
	/* a format 1 image (made before extended attributes) reads as one without any */
	set_version(&f, 1);
	fx_mount(&f);
	assert_int_equal(avfs_fs_super(f.fs)->version, 1);
	assert_int_equal(avfs_fs_getxattr(f.fs, a, "user.x", NULL, 0), -ENODATA);
	assert_int_equal(avfs_fs_listxattr(f.fs, a, true, NULL, 0), 0);
	assert_fsck_clean(f.fs);
	fx_remount(&f);
	assert_int_equal(avfs_fs_super(f.fs)->version, 1);	/* untouched until then */
	/* its first attribute makes it format 2, in the same transaction */
	set(&f, a, "user.x", "1");
	assert_int_equal(avfs_fs_super(f.fs)->version, 2);
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	avfs_fsio_abandon(f.io);	/* a crash right after the commit */
	fx_mount(&f);
	assert_int_equal(avfs_fs_super(f.fs)->version, 2);
	assert_string_equal(get(&f, a, "user.x"), "1");
	assert_int_equal(avfs_fsio_unmount(f.io), 0);
	assert_int_equal(((struct avfs_super *)avfs_memdisk_data(f.d))->version, 2);
	/* a newer format is refused, and says so */
	set_version(&f, AVFS_FORMAT_VERSION + 1);
	assert_int_equal(avfs_fsio_mount(f.d, 0, &io, NULL, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "image format 4, this build reads 1 to 3"));
	set_version(&f, 2);
	fx_mount(&f);
	fx_done(&f);
}

/* A mount without ACLs (-o noacl, as ext4's): the names refused and hidden, creates take the
 * umask, a chmod leaves the stored ACL; a mount with them finds everything as it was. */
static void test_xattr_noacl(void **state)
{
	struct fx f;
	uint64_t d, a, ino;
	struct avfs_stat st = { .mode = 0700 };
	char list[128];

	(void)state;
	fx_init(&f);
	d = mk(&f, 1, "d", S_IFDIR | 0755);
	a = mk(&f, 1, "a", S_IFREG | 0644);
	assert_int_equal(set_acl(&f, d, FS_ACL_DEFAULT, "u::7 u:1000:7 g::5 m::7 o::0"), 0);
	assert_int_equal(set_acl(&f, a, FS_ACL_ACCESS, "u::6 u:1000:6 g::4 m::6 o::4"), 0);
	set(&f, a, "user.k", "v");
	assert_int_equal(avfs_fsio_unmount(f.io), 0);
	fx_mount_flags(&f, AVFS_MOUNT_NOACL);
	assert_int_equal(set_acl(&f, a, FS_ACL_ACCESS, "u::6 g::4 o::4"), -EOPNOTSUPP);
	assert_int_equal(avfs_fs_getxattr(f.fs, a, FS_ACL_ACCESS, NULL, 0), -EOPNOTSUPP);
	assert_int_equal(avfs_fs_removexattr(f.fs, d, FS_ACL_DEFAULT, 3), -EOPNOTSUPP);
	assert_int_equal(avfs_fs_listxattr(f.fs, a, true, list, sizeof(list)), 7);
	assert_memory_equal(list, "user.k", 7);
	assert_int_equal(avfs_fs_setattr(f.fs, a, AVFS_SET_MODE, &st, 4), 0);
	assert_int_equal(mode_of(&f, a), S_IFREG | 0700);
	assert_int_equal(avfs_fs_create(f.fs, d, "f", S_IFREG | 0666, 0, 022, 0, 0, 3, &ino), 0);
	assert_int_equal(mode_of(&f, ino), S_IFREG | 0644);
	assert_int_equal(fs_ino_raw(f.fs, ino)->xattr, 0);
	assert_fsck_clean(f.fs);
	fx_remount(&f);	/* with ACLs again: they were kept as they were */
	assert_acl(&f, a, FS_ACL_ACCESS, "u::6 u:1000:6 g::4 m::6 o::4");
	assert_acl(&f, d, FS_ACL_DEFAULT, "u::7 u:1000:7 g::5 m::7 o::0");
	fx_done(&f);
}

static void fsck_expect(struct fx *f, const char *text, uint64_t want_fixed)
{
	struct avfs_fsck_report r;
	bool seen = false;

	assert_int_equal(avfs_fsck_check(f->fs, 0, &r), 0);
	for (size_t i = 0; i < r.nfindings; i++)
		seen |= strstr(r.findings[i], text) != NULL;
	if (!seen)
		for (size_t i = 0; i < r.nfindings; i++)
			print_message("  fsck: %s\n", r.findings[i]);
	assert_true(seen);
	avfs_fsck_report_free(&r);
	assert_int_equal(avfs_fsck_check(f->fs, AVFS_FSCK_REPAIR, &r), 0);
	if (r.fixed != want_fixed)
		for (size_t i = 0; i < r.nfindings; i++)
			print_message("  fsck -y: %s\n", r.findings[i]);
	assert_int_equal(r.fixed, want_fixed);
	avfs_fsck_report_free(&r);
	assert_int_equal(avfs_fsio_sync(f->io), 0);
	assert_fsck_clean(f->fs);
}

static void test_xattr_fsck(void **state)
{
	struct fx f;
	uint64_t a, b, c;
	struct avfs_xblock *xb;
	struct avfs_xent *e;

	(void)state;
	fx_init(&f);
	a = mk(&f, 1, "a", S_IFREG | 0644);
	b = mk(&f, 1, "b", S_IFREG | 0644);
	c = mk(&f, 1, "c", S_IFREG | 0644);
	set(&f, a, "user.1", "one");
	set(&f, a, "user.2", "two");
	set(&f, a, "user.3", "three");
	set(&f, b, "user.b", "bee");
	set(&f, c, "user.c", "sea");
	assert_int_equal(avfs_fsio_sync(f.io), 0);
	/* a's second entry runs past the block's end: the first stays */
	xb = (struct avfs_xblock *)f.fs->blocks[fs_ino_raw(f.fs, a)->xattr];
	e = (struct avfs_xent *)(xb->data + AVFS_XENT_SIZE(6, 3));
	e->value_len = 5000;
	assert_int_equal(avfs_fs_getxattr(f.fs, a, "user.1", NULL, 0), -EUCLEAN);
	assert_int_equal(avfs_fs_setxattr(f.fs, a, "user.4", "x", 1, 0, 2), -EUCLEAN);
	fsck_expect(&f, "only the first 1", 1);
	assert_string_equal(get(&f, a, "user.1"), "one");
	assert_string_equal(get(&f, a, "user.2"), "");
	/* b points at c's block: b loses its pointer, c keeps its attributes */
	fs_ino_raw(f.fs, b)->xattr = fs_ino_raw(f.fs, c)->xattr;
	/* + b's own block lost: its bit and the free count */
	fsck_expect(&f, "belongs to another inode", 3);
	assert_string_equal(get(&f, c, "user.c"), "sea");
	assert_int_equal(avfs_fs_listxattr(f.fs, b, true, NULL, 0), 0);
	/* c points at a directory block: dropped */
	fs_ino_raw(f.fs, c)->xattr = (uint32_t)fs_ino_raw(f.fs, 1)->direct[0].block;
	fsck_expect(&f, "is not an extended attribute block", 3);	/* + the lost block */
	assert_int_equal(avfs_fs_listxattr(f.fs, c, true, NULL, 0), 0);
	/* an entry of a namespace AVFS does not keep */
	set(&f, b, "user.z", "zz");
	xb = (struct avfs_xblock *)f.fs->blocks[fs_ino_raw(f.fs, b)->xattr];
	memcpy(xb->data + sizeof(struct avfs_xent), "bogus.", 6);
	fsck_expect(&f, "holds no sound entry", 3);	/* + the lost block */
	fx_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xattr_set_get_list_remove),
		cmocka_unit_test(test_xattr_flags),
		cmocka_unit_test(test_xattr_limits),
		cmocka_unit_test(test_xattr_types),
		cmocka_unit_test(test_xattr_acl_mode),
		cmocka_unit_test(test_xattr_acl_inherit),
		cmocka_unit_test(test_xattr_persist),
		cmocka_unit_test(test_xattr_format1),
		cmocka_unit_test(test_xattr_noacl),
		cmocka_unit_test(test_xattr_fsck),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
