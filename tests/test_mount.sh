#!/bin/bash
# test_mount.sh — AVFS mounted as any Linux file system (issue 17, Done when 2 and 3), with the
# real mount(8) and umount(8): `mount -t avfs IMG DIR -o allow_other` (another user reads, the
# kernel still checks permissions), root's default of allow_other, an /etc/fstab line (a copy
# with the line added, laid over /etc/fstab in this namespace) mounted with `mount DIR` and as
# systemd's fstab generator makes it a mount unit (systemd-analyze verify, then the unit's
# mount command), -o ro (writes fail, the image stays the same), -o config=, disk_model=,
# backend=, socket= (each seen in the daemon's status), a bad option and a non-AVFS
# image refused by mount's exit status; `umount DIR` returns only once avfsd has committed and
# let go of the image, which fsck then finds clean; and two images of the same name in two
# folders, each mounted, each client reaching its own daemon.
# It runs in a private mount namespace: the build's mount.avfs and umount.fuse.avfs are laid
# over /sbin (where mount(8) looks) with overlayfs, and libmount's utab is a private tmpfs;
# nothing of the machine's changes (the fstab too is a bind mount here).
# env: AVFSD MKFS FSCK ADMIN MOUNT_AVFS UMOUNT_AVFS (the build's helpers, *.build). Exit 77
# without root, FUSE, unshare or overlayfs.
set -u
. "$(dirname "$0")/daemon_env.sh"
avfs_require
for t in unshare mount umount findmnt flock setpriv python3; do
	command -v $t >/dev/null || avfs_skip "no $t"
done
if [ -z "${AVFS_IN_NS:-}" ]; then
	grep -q overlay /proc/filesystems || modprobe overlay 2>/dev/null
	grep -q overlay /proc/filesystems || avfs_skip "no overlayfs (to lay the helpers over /sbin)"
	AVFS_IN_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
avfs_env_init

# ---- the helpers where mount(8) looks, for this namespace only ----
SBIN=$(readlink -f /sbin)
H=$AVFS_T/helpers
mkdir "$H"
install -m 755 "$MOUNT_AVFS" "$H/mount.avfs"
install -m 755 "$UMOUNT_AVFS" "$H/umount.fuse.avfs"
mount -t overlay overlay -o "lowerdir=$H:$SBIN" "$SBIN" || avfs_skip "cannot lay the helpers over $SBIN"
mkdir -p /run/mount && mount -t tmpfs tmpfs /run/mount || { echo "FAIL: private utab"; exit 1; }

sum() { avfs_sum "$1"; }	# daemon_env.sh: holes skipped
opts_of() { findmnt -n -o OPTIONS -M "$1"; }
is_avfs_mount() {	# is_avfs_mount DIR IMG: mounted, type fuse.avfs, source IMG
	local got
	got=$(findmnt -n -o FSTYPE,SOURCE -M "$1")
	[ "$got" = "fuse.avfs $2" ] || { echo "  $1: '$got', want 'fuse.avfs $2'"; return 1; }
}
let_go() {	# let_go IMG: no avfsd holds IMG (its lock is free) at once, fsck -n clean, no warning
	local out
	flock -n "$1" true || { echo "  $1 still held"; return 1; }
	out=$("$FSCK" -n "$1" 2>&1)
	case "$out" in *warning*|*"in use"*) echo "  $out"; return 1 ;; esac
	case "$out" in *": clean"*) return 0 ;; esac
	echo "  $out"
	return 1
}
fails_saying() {	# fails_saying TEXT CMD...
	local text=$1 err
	shift
	if err=$("$@" 2>&1 >/dev/null); then
		echo "  '$*' succeeded"
		return 1
	fi
	case "$err" in *"$text"*) return 0 ;; esac
	echo "  '$*' said '$err', want '$text'"
	return 1
}

avfs_mkfs --size 2G --block-size 1M || { echo "FAIL mkfs"; exit 1; }

# ---- mount -t avfs -o allow_other; umount ----
check "mount -t avfs IMG DIR -o allow_other" mount -t avfs "$IMG" "$MNT" -o allow_other,noatime
check "... a fuse.avfs mount of the image" is_avfs_mount "$MNT" "$IMG"
check "... with allow_other, default_permissions and noatime" \
	bash -c "opts=\$(findmnt -n -o OPTIONS -M '$MNT'); case \$opts in *default_permissions*allow_other*) ;; *) exit 1 ;; esac; case \$opts in *noatime*) ;; *) exit 1 ;; esac"
mkdir "$MNT/d" && echo "for everyone" >"$MNT/d/f" && chmod 755 "$MNT/d"
check "another user reads through the mount (allow_other)" \
	bash -c "[ \"\$(setpriv --reuid 65534 --regid 65534 --clear-groups cat '$MNT/d/f')\" = 'for everyone' ]"
check "... and may not write where the modes say no (default_permissions)" \
	bash -c "! setpriv --reuid 65534 --regid 65534 --clear-groups touch '$MNT/d/g' 2>/dev/null"
dd if=/dev/urandom of="$MNT/d/big" bs=1M count=64 status=none
check "umount DIR" umount "$MNT"
check "... the daemon has let go when umount returns, fsck -n clean" let_go "$IMG"
check "... not mounted any more" bash -c "! findmnt -M '$MNT' >/dev/null"

# ---- root's default: allow_other ----
check "mount -t avfs IMG DIR (root, no options)" mount -t avfs "$IMG" "$MNT"
check "... allow_other by default" bash -c "findmnt -n -o OPTIONS -M '$MNT' | grep -q allow_other"
check "... the data of the last mount is there" \
	bash -c "[ \$(stat -c %s '$MNT/d/big') = 67108864 ] && [ \"\$(cat '$MNT/d/f')\" = 'for everyone' ]"
check "umount" umount "$MNT"
check "... let go, clean" let_go "$IMG"

# ---- an fstab line, mounted with `mount DIR` ----
# /etc/fstab itself, with the machine's lines and ours: a copy laid over it in this namespace
FSTAB=$AVFS_T/fstab
{ cat /etc/fstab 2>/dev/null; printf '%s %s avfs noauto,nofail,socket=%s,x-systemd.device-timeout=10 0 0\n' \
	"$IMG" "$MNT" "$AVFS_T/fstab.sock"; } >"$FSTAB"
if [ -f /etc/fstab ] && mount --bind "$FSTAB" /etc/fstab; then
	tail -1 /etc/fstab
	check "mount DIR (the /etc/fstab line)" mount "$MNT"
else	# no /etc/fstab to lay ours over: the same line through mount -T
	check "mount -T FSTAB DIR (the fstab line; no /etc/fstab here)" mount -T "$FSTAB" "$MNT"
fi
check "... a fuse.avfs mount of the image" is_avfs_mount "$MNT" "$IMG"
check "... serving clients on the socket the line names" \
	bash -c "'$ADMIN' --socket '$AVFS_T/fstab.sock' status | grep -q 'device *$IMG'"
echo fstab >"$MNT/from-fstab"
check "umount DIR" umount "$MNT"
check "... let go, clean" let_go "$IMG"

# ---- the same line as systemd mounts it at boot: its fstab generator's mount unit ----
GEN=
for g in /lib/systemd/system-generators/systemd-fstab-generator \
	/usr/lib/systemd/system-generators/systemd-fstab-generator; do
	[ -x "$g" ] && GEN=$g && break
done
if [ -n "$GEN" ]; then
	printf '%s %s avfs noatime,nofail,socket=%s 0 0\n' "$IMG" "$MNT" "$AVFS_T/boot.sock" \
		>"$AVFS_T/fstab.boot"
	mkdir -p "$AVFS_T/gen"/{normal,early,late}
	SYSTEMD_FSTAB=$AVFS_T/fstab.boot "$GEN" "$AVFS_T/gen/normal" "$AVFS_T/gen/early" \
		"$AVFS_T/gen/late" >/dev/null 2>&1
	unit=$(grep -l "^Where=$MNT\$" "$AVFS_T"/gen/normal/*.mount 2>/dev/null | head -1)
	check "systemd-fstab-generator makes a mount unit of the line (Type=avfs), wanted by local-fs.target" \
		bash -c "[ -n '$unit' ] && grep -q '^Type=avfs\$' '$unit' && ls '$AVFS_T'/gen/normal/local-fs.target.wants/ | grep -q mount"
	check "... which systemd-analyze verify accepts" \
		bash -c "[ -z \"\$(systemd-analyze verify '$unit' 2>&1)\" ]"
	what=$(sed -n 's/^What=//p' "$unit") where=$(sed -n 's/^Where=//p' "$unit")
	type=$(sed -n 's/^Type=//p' "$unit") options=$(sed -n 's/^Options=//p' "$unit")
	# what systemd runs to start a mount unit: mount WHAT WHERE -t TYPE -o OPTIONS
	check "mount WHAT WHERE -t avfs -o OPTIONS, as systemd starts the unit" \
		mount "$what" "$where" -t "$type" -o "$options"
	check "... mounted, serving on the line's socket" \
		bash -c "'$ADMIN' --socket '$AVFS_T/boot.sock' status | grep -q 'device *$IMG'"
	check "... umount (systemd's stop of the unit), let go, clean" \
		bash -c "umount '$MNT' && flock -n '$IMG' true && '$FSCK' -n '$IMG' | grep -q ': clean'"
else
	echo "(no systemd-fstab-generator: the boot-time path is not checked)"
fi

# ---- -o ro ----
before=$(sum "$IMG")
check "mount -t avfs -o ro" mount -t avfs -o ro "$IMG" "$MNT"
check "... reads" bash -c "[ \"\$(cat '$MNT/from-fstab')\" = fstab ]"
check "... writes fail: read-only file system" fails_saying "Read-only file system" \
	touch "$MNT/new"
check "umount" umount "$MNT"
kept() { flock -n "$IMG" true && [ "$(sum "$IMG")" = "$before" ]; }
check "... let go; the image is the same byte for byte" kept

# ---- the daemon's own options through mount: config=, disk_model=, backend=, socket= ----
S=$AVFS_T/opt.sock
field() {	# field COMMAND EXPR: EXPR of `avfs-admin --socket S COMMAND --json` (as d)
	"$ADMIN" --socket "$S" "$1" --json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"
}
mount -t avfs -o socket="$S" "$IMG" "$MNT" && sb_rate=$(field stats "d['model']['rate_outer_mbs']")
umount "$MNT"
printf 'be-floor 30%%\n' >"$AVFS_T/opt.conf"
check "mount -t avfs -o config=FILE,disk_model=st318437,backend=uring,socket=PATH" \
	mount -t avfs -o "config=$AVFS_T/opt.conf,disk_model=st318437,backend=uring,socket=$S" \
	"$IMG" "$MNT"
check "... the config file's setting (be_floor 0.3), the uring backend" \
	test "$(field status "'%g %s' % (d['admission']['be_floor'], d['disk']['backend'])")" = "0.3 uring"
check "... the named model's service times, not the superblock's ($sb_rate MB/s)" \
	test "$(field stats "d['model']['rate_outer_mbs'] != ${sb_rate:-0}")" = True
check "umount" umount "$MNT"
check "... let go, clean" let_go "$IMG"
check "-o backend=bogus fails the mount, naming the choices" \
	fails_saying "backend=bogus: one of auto, uring, sg, nvme" mount -t avfs -o backend=bogus "$IMG" "$MNT"

# ---- refusals: mount's exit status says it ----
check "a bad option fails the mount, naming it" fails_saying "-o bogus: not an AVFS mount option" \
	mount -t avfs -o bogus "$IMG" "$MNT"
check "... nothing mounted, nothing holds the image" \
	bash -c "! findmnt -M '$MNT' >/dev/null && flock -n '$IMG' true"
truncate -s 1G "$AVFS_T/zero.img"
check "a non-AVFS image fails the mount, saying why" fails_saying "cannot mount" \
	mount -t avfs "$AVFS_T/zero.img" "$MNT"
check "... nothing mounted" bash -c "! findmnt -M '$MNT' >/dev/null"

# ---- two images of one name in two folders: two daemons, two sockets, two clients ----
for x in a b; do
	mkdir -p "$AVFS_T/$x" "$AVFS_T/m$x"
	"$MKFS" -q --size 1G --block-size 1M "$AVFS_T/$x/disk.img" || { echo "FAIL mkfs $x"; exit 1; }
	check "mount $x/disk.img" mount -t avfs "$AVFS_T/$x/disk.img" "$AVFS_T/m$x"
	echo "$x" >"$AVFS_T/m$x/only-$x"
done
sock_of() { python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "user.avfs.socket").decode())' "$1"; }
sa=$(sock_of "$AVFS_T/ma/only-a")
sb=$(sock_of "$AVFS_T/mb/only-b")
echo "sockets: $sa and $sb"
check "two sockets, one per image" bash -c "[ '$sa' != '$sb' ] && [ -S '$sa' ] && [ -S '$sb' ]"
for x in a b; do
	s=$([ $x = a ] && echo "$sa" || echo "$sb")
	check "client of $x: reserve on a file of its mount" \
		"$ADMIN" reserve "$AVFS_T/m$x/only-$x" --rate 1M --buffer 1M
	check "... its daemon serves $x/disk.img" \
		bash -c "'$ADMIN' --socket '$s' status --json | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)[\"device\"] != \"$AVFS_T/$x/disk.img\")'"
	check "... and holds that one reservation, on that file" \
		bash -c "'$ADMIN' --socket '$s' streams --json | python3 -c 'import json,os,sys; s=json.load(sys.stdin)[\"streams\"]; sys.exit(not (len(s) == 1 and s[0][\"inode\"] == os.stat(\"$AVFS_T/m$x/only-$x\").st_ino))'"
done
for x in a b; do
	check "umount m$x" umount "$AVFS_T/m$x"
	check "... let go, clean" let_go "$AVFS_T/$x/disk.img"
done
avfs_summary
