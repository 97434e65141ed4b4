#!/bin/bash
# test_daemon_xattr.sh — extended attributes and POSIX ACLs on avfsd's mount, as attr, acl and rsync
# see them (issue 18): setfattr/getfattr -d, the virtual user.avfs.socket, the limits' errors,
# setfacl/getfacl with the kernel enforcing the ACL (a denied and an allowed uid), default ACL
# inheritance and chmod side by side with the kernel's tmpfs (the same commands give the same
# getfacl), an rsync -aAX round trip through the mount (identical dumps), attributes that
# survive kill -9 after fsync, -o noacl (ACLs refused, the modes alone), and fsck clean after.
# The core's own rules: test_xattr.c.
# env: AVFSD MKFS FSCK (default: ../build). Exit 77 without root, FUSE or the attr/acl tools.
set -u
. "$(dirname "$0")/daemon_env.sh"
avfs_require
for t in setfattr getfattr setfacl getfacl rsync setpriv python3; do
	command -v $t >/dev/null || avfs_skip "no $t (packages attr, acl, rsync)"
done
avfs_env_init
REF=$AVFS_T/ref	# a tmpfs: the kernel's own xattrs and ACLs, for comparison
mkdir "$REF"
mount -t tmpfs -o size=64m,mode=755 avfs-test-ref "$REF" || avfs_skip "cannot mount a tmpfs"
trap 'umount "$REF" 2>/dev/null; avfs_cleanup' EXIT

AS1000="setpriv --reuid 1000 --regid 1000 --clear-groups"
AS1001="setpriv --reuid 1001 --regid 1001 --clear-groups"

t_fsck() {
	"$FSCK" -n "$IMG" >"$AVFS_T/fsck.out" 2>&1 || { cat "$AVFS_T/fsck.out"; return 1; }
}

avfs_mkfs || { echo "FAIL mkfs"; exit 1; }
check "mount" avfs_start --allow-other || exit 1
cd "$MNT" || exit 1
umask 022

# ---- setfattr / getfattr ----
t_attr() {
	echo data >f && mkdir d &&
	setfattr -n user.color -v blue f && setfattr -n user.bin -v 0x00ff10 f &&
	setfattr -n trusted.t -v root-only f && setfattr -n security.s -v sec f &&
	setfattr -n user.dir -v yes d &&
	same "$(getfattr -d --absolute-names f | tail -n +2)" 'user.bin=0sAP8Q
user.color="blue"' &&
	same "$(getfattr -d -m - --absolute-names f | tail -n +2)" 'security.s="sec"
trusted.t="root-only"
user.bin=0sAP8Q
user.color="blue"' &&
	same "$(getfattr --only-values -n user.dir d)" yes &&
	setfattr -n user.color -v red f && same "$(getfattr --only-values -n user.color f)" red &&
	setfattr -x user.bin f && fails_with "No such attribute" getfattr -n user.bin f &&
	fails_with "No such attribute" setfattr -x user.bin f
}
check "setfattr/getfattr -d: user, trusted, security; replace, remove" t_attr

t_socket() {	# the virtual attribute libavio uses: readable everywhere, not listed, not set
	same "$(getfattr --only-values -n user.avfs.socket f)" "$SOCK" &&
	same "$(getfattr --only-values -n user.avfs.socket d)" "$SOCK" &&
	! getfattr -d -m - f 2>/dev/null | grep -q avfs.socket &&
	fails_with "Operation not permitted" setfattr -n user.avfs.socket -v x f
}
check "user.avfs.socket still read, neither listed nor settable" t_socket

t_limits() {	# errno as Linux gives it (ext4's limits: a block holds an inode's attributes)
	python3 - f <<'PY'
import errno, os, sys
f = sys.argv[1]
def want(e, fn, *a):
    try:
        fn(*a)
    except OSError as x:
        if x.errno == e:
            return
        sys.exit("%s%r: %s, want %s" % (fn.__name__, a[1:2], x, errno.errorcode[e]))
    sys.exit("%s%r succeeded, want %s" % (fn.__name__, a[1:2], errno.errorcode[e]))
os.setxattr(f, "user." + "n" * 250, b"1")
want(errno.ERANGE, os.setxattr, f, "user." + "n" * 251, b"1")
want(errno.ENOSPC, os.setxattr, f, "user.big", b"v" * 5000)
want(errno.E2BIG, os.setxattr, f, "user.big", b"v" * 70000)
want(errno.EOPNOTSUPP, os.setxattr, f, "other.x", b"1")
want(errno.EEXIST, os.setxattr, f, "user.color", b"x", os.XATTR_CREATE)
want(errno.ENODATA, os.setxattr, f, "user.none", b"x", os.XATTR_REPLACE)
os.setxattr(f, "user.new", b"x", os.XATTR_CREATE)
os.setxattr(f, "user.new", b"y", os.XATTR_REPLACE)
assert os.getxattr(f, "user.new") == b"y"
os.removexattr(f, "user.new")
os.removexattr(f, "user." + "n" * 250)
n = 0
while True:     # small attributes up to the block's end, then ENOSPC
    try:
        os.setxattr(f, "user.k%04d" % n, b"vvvv")
    except OSError as x:
        assert x.errno == errno.ENOSPC, x
        break
    n += 1
assert n > 150, n
for i in range(n):
    os.removexattr(f, "user.k%04d" % i)
PY
}
check "limits: name 255 (ERANGE past), value ENOSPC past a block, E2BIG past 64 KiB, flags" t_limits

t_user_perm() {	# the kernel checks: user.* needs write permission, trusted.* the superuser
	fails_with "Permission denied" $AS1000 setfattr -n user.x -v 1 f &&
	same "$($AS1000 getfattr --only-values -n user.color f)" red &&
	! $AS1000 getfattr -d -m - f 2>/dev/null | grep -q trusted &&
	fails_with "No such attribute" $AS1000 getfattr -n trusted.t f
}
check "user.* needs write permission; trusted.* hidden from other users" t_user_perm

# ---- POSIX ACLs enforced by the kernel ----
t_acl_enforced() {
	echo secret >s && chmod 600 s &&
	fails_with "Permission denied" $AS1000 cat s &&
	setfacl -m u:1000:r s && same "$($AS1000 cat s)" secret &&
	fails_with "Permission denied" $AS1001 cat s &&
	fails_with "Permission denied" $AS1000 sh -c 'echo x >>s' &&
	same "$(stat -c %a s)" 640 &&
	chmod 600 s && fails_with "Permission denied" $AS1000 cat s &&
	same "$(getfacl -cpn s | grep -E '^(user:1000|mask)')" "user:1000:r--	#effective:---
mask::---" &&
	chmod 640 s && same "$($AS1000 cat s)" secret &&
	fails_with "Operation not permitted" $AS1000 setfacl -m u:1000:rw s &&
	setfacl -b s && fails_with "Permission denied" $AS1000 cat s && same "$(stat -c %a s)" 600
}
check "setfacl: a named user allowed, others denied, chmod masks, setfacl -b" t_acl_enforced

# The same commands on the mount and on tmpfs give the same getfacl and modes (file by file
# in name order: readdir's order is each file system's own).
acl_script() {
	mkdir dd && setfacl -d -m u:1000:rwx,g::r-x,o::- dd &&
	(umask 077 && touch dd/f && mkdir dd/sub && mkdir dd/sub/deeper && touch dd/sub/g) &&
	(umask 000 && mknod dd/fifo p) &&
	mkdir plain && (umask 027 && touch plain/f && mkdir plain/e) &&
	touch m && setfacl -m u:1000:rw,g:1000:r m && chmod 751 m &&
	setfacl -m m::r m && touch n && setfacl -m u::rwx,g::r,o::- n
}
t_acl_vs_tmpfs() {
	(cd "$MNT" && acl_script) && (cd "$REF" && acl_script) &&
	same "$(cd "$MNT" && getfacl -pn $(find dd plain m n | LC_ALL=C sort) 2>&1)" \
	     "$(cd "$REF" && getfacl -pn $(find dd plain m n | LC_ALL=C sort) 2>&1)" &&
	same "$(cd "$MNT" && find dd plain m n -exec stat -c '%A %n' {} + | sort)" \
	     "$(cd "$REF" && find dd plain m n -exec stat -c '%A %n' {} + | sort)"
}
check "default ACL inheritance, umask, chmod, mask: as the kernel's tmpfs" t_acl_vs_tmpfs

t_inherited_enforced() {
	$AS1000 sh -c 'echo by-acl >dd/f' && same "$(cat dd/f)" by-acl &&
	$AS1000 touch dd/sub/h && fails_with "Permission denied" $AS1001 cat dd/f &&
	fails_with "Permission denied" $AS1001 touch dd/sub/i
}
check "an inherited ACL lets uid 1000 write, uid 1001 neither read nor create" t_inherited_enforced

# ---- rsync -aAX round trip ----
make_tree() {	# make_tree DIR
	mkdir -p "$1/a/b" && echo one >"$1/a/1" && head -c 300000 /dev/urandom >"$1/a/b/big" &&
	ln -s ../1 "$1/a/b/link" && setfattr -n user.k -v v1 "$1/a/1" &&
	setfattr -n user.bin -v 0x000102 "$1/a/b/big" && setfattr -n trusted.k -v t "$1/a" &&
	setfattr -n user.dir -v d "$1/a/b" && setfacl -m u:1000:rw,g:1000:r "$1/a/1" &&
	setfacl -d -m u:1000:rx "$1/a/b" && setfacl -m u:1001:rwx "$1/a/b" &&
	chown 1000:1000 "$1/a/b/big" && chmod 640 "$1/a/b/big" && touch -d 2001-02-03 "$1/a/1"
}
dumps() {	# dumps DIR: every attribute, ACL, mode, owner, mtime and content under DIR, by
	# name (not sizes: a directory's is each file system's own)
	(cd "$1" && getfattr -h -d -m - $(find . | LC_ALL=C sort) 2>&1 &&
	 getfacl -pn $(find . ! -type l | LC_ALL=C sort) 2>&1 &&
	 find . -exec stat -c '%n %A %u %g %Y' {} + | LC_ALL=C sort &&
	 find . -type f -exec md5sum {} + | LC_ALL=C sort)
}
t_rsync() {
	mkdir "$REF/src" && make_tree "$REF/src" &&
	rsync -aAX "$REF/src/" "$MNT/copy/" && rsync -aAX "$MNT/copy/" "$REF/back/" &&
	same "$(dumps "$MNT/copy")" "$(dumps "$REF/src")" &&
	same "$(dumps "$REF/back")" "$(dumps "$REF/src")" &&
	[ -n "$(getfattr --absolute-names -d -m - "$MNT/copy/a/1")" ]
}
check "rsync -aAX into the mount and back: identical attributes, ACLs, data" t_rsync

# ---- kill -9 after fsync ----
t_kill() {
	setfattr -n user.durable -v yes f && setfacl -m u:1000:rwx d &&
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' f &&
	cd / && avfs_kill9
}
check "setfattr, setfacl, fsync, kill -9" t_kill
check "fsck.avfs -n clean after the crash" t_fsck
check "remount after kill -9" avfs_start --allow-other || { avfs_summary; exit 1; }
t_survived() {
	same "$(getfattr --absolute-names --only-values -n user.durable "$MNT/f")" yes &&
	same "$(getfacl -cpn "$MNT/d" | grep user:1000)" "user:1000:rwx" &&
	same "$(dumps "$MNT/copy")" "$(dumps "$REF/src")"
}
check "attributes and ACLs fsync'ed before kill -9 are there" t_survived
check "clean unmount" avfs_stop

# ---- -o noacl: as ext4's, the kernel checks the modes alone ----
check "remount with -o noacl" avfs_start --allow-other -o noacl || { avfs_summary; exit 1; }
t_noacl() {
	cd "$MNT" && echo x >na && chmod 600 na &&
	fails_with "Operation not supported" setfacl -m u:1000:r na &&
	fails_with "Permission denied" $AS1000 cat na &&
	! getfattr --absolute-names -d -m - s "$MNT/copy/a/1" 2>&1 | grep -q posix_acl &&
	same "$(getfattr --absolute-names --only-values -n user.k "$MNT/copy/a/1")" v1 &&
	(umask 022 && touch dd/noacl) && same "$(stat -c %a dd/noacl)" 644 && cd /
}
check "-o noacl: setfacl refused, ACLs neither listed nor inherited, the umask applies" t_noacl
check "clean unmount (noacl)" avfs_stop
check "remount with ACLs" avfs_start --allow-other || { avfs_summary; exit 1; }
check "the ACLs kept while mounted noacl are back" \
	same "$(dumps "$MNT/copy")" "$(dumps "$REF/src")"
check "clean unmount" avfs_stop
check "fsck.avfs -n clean at the end" t_fsck
avfs_summary
