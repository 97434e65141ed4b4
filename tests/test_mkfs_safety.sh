#!/bin/bash
# test_mkfs_safety.sh — mkfs.avfs and fsck.avfs never destroy a file system by mistake (issue
# 17, Done when 1): mkfs on an image and on a block device an avfsd serves (mkfs.ext4
# refused there too: the kernel's claim), on an image the kernel has mounted
# (through a loop device, and the loop device itself), on ext4 and on a partitioned image
# without -f is refused and the image stays the same byte for byte (avfs_sum); with -f ext4 is
# formatted; fsck.avfs -y on an image in use is refused (exit 8, image unchanged) and -n warns;
# a failed mkfs (bad options, a failure after the image was made) leaves no file it created and
# shrinks back an image it extended; and the messages say what is wrong.
# env: AVFSD MKFS FSCK (default: ../build). Exit 77 without root, FUSE or loop devices.
set -u
. "$(dirname "$0")/daemon_env.sh"
avfs_require
for t in losetup mkfs.ext4 mount umount python3; do
	command -v $t >/dev/null || avfs_skip "no $t"
done
avfs_env_init
LOOP=
KMNT=$AVFS_T/kmnt
cleanup_loop() {
	mountpoint -q "$KMNT" 2>/dev/null && umount "$KMNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	LOOP=
}
trap 'rc=$?; cleanup_loop; (exit $rc); avfs_cleanup' EXIT	# avfs_cleanup exits with $?

sum() { avfs_sum "$1"; }	# daemon_env.sh: holes skipped

refused() {	# refused TEXT CMD...: CMD exits 1 (mkfs(8)) and says TEXT
	local text=$1 err rc
	shift
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	[ $rc = 1 ] || { echo "  '$*': exit $rc, want 1 ($err)"; return 1; }
	case "$err" in *"$text"*) return 0 ;; esac
	echo "  '$*' said '$err', want '$text'"
	return 1
}

unchanged() {	# unchanged FILE SUM
	local now
	now=$(sum "$1")
	[ "$now" = "$2" ] || { echo "  $1 changed: $now, was $2"; return 1; }
}

# ---- an image avfsd serves ----
avfs_mkfs --size 256M --block-size 1M || { echo "FAIL mkfs"; exit 1; }
avfs_start || { echo "FAIL avfsd did not start"; exit 1; }
echo data >"$MNT/file"
sync "$MNT/file"
before=$(sum "$IMG")
check "mkfs -f on an image avfsd serves: refused (in use)" \
	refused "is in use: an avfsd serves it" "$MKFS" -f "$IMG"
check "... the image unchanged" unchanged "$IMG" "$before"
fsck_y_refused() {
	local rc
	"$FSCK" -y "$IMG" >/dev/null 2>"$AVFS_T/err"
	rc=$?
	[ $rc = 8 ] && grep -q -- "-y refused" "$AVFS_T/err" || { echo "  exit $rc: $(cat "$AVFS_T/err")"; return 1; }
}
check "fsck -y on an image avfsd serves: refused, exit 8" fsck_y_refused
check "... the image unchanged" unchanged "$IMG" "$before"
check "fsck -n on it warns and checks" \
	bash -c "'$FSCK' -n '$IMG' 2>&1 | grep -q 'warning: .* is in use'"
check "avfsd stops cleanly" avfs_stop
check "the file system is clean and holds the file" \
	bash -c "'$FSCK' -n '$IMG' | grep -q 'clean' && '$FSCK' --json -n '$IMG' | grep -q '\"files\": 1'"

# ---- a block device avfsd serves (a loop device): its lock and the kernel's claim ----
B=$AVFS_T/blk.img
truncate -s 256M "$B"	# read whole by the checksum: a device has no holes
LOOP=$(losetup -f --show "$B") || avfs_skip "no free loop device"
check "mkfs.avfs on a block device (a fresh loop device)" "$MKFS" -q --block-size 1M "$LOOP"
timeout --signal=KILL 120 "$AVFSD" --foreground --socket "$SOCK" "$LOOP" "$MNT" >>"$LOG" 2>&1 &
AVFS_PID=$!
for i in $(seq 200); do avfs_mounted && break; sleep 0.05; done
check "avfsd serves the loop device" avfs_mounted
echo data >"$MNT/file" && sync "$MNT/file"
before=$(sum "$LOOP")
check "mkfs -f on the block device avfsd serves: refused, naming avfsd" \
	refused "is in use: an avfsd serves it" "$MKFS" -f "$LOOP"
check "... mkfs.ext4 is refused too (avfsd holds the kernel's exclusive claim)" \
	bash -c "! mkfs.ext4 -q -F '$LOOP' 2>/dev/null"
check "fsck -y on it: refused, exit 8" bash -c "'$FSCK' -y '$LOOP' >/dev/null 2>&1; [ \$? = 8 ]"
check "... the device unchanged" unchanged "$LOOP" "$before"
check "avfsd stops cleanly" avfs_stop
check "... the device's file system is clean" bash -c "'$FSCK' -n '$LOOP' | grep -q ': clean'"
losetup -d "$LOOP"
LOOP=

# ---- an image the kernel has mounted (ext4 through a loop device) ----
E=$AVFS_T/ext4.img
truncate -s 256M "$E"
mkfs.ext4 -q -F "$E" || { echo "FAIL mkfs.ext4"; exit 1; }
mkdir -p "$KMNT"
LOOP=$(losetup -f --show "$E") || avfs_skip "no free loop device"
mount "$LOOP" "$KMNT" || avfs_skip "cannot mount ext4 from a loop device"
echo precious >"$KMNT/keep"
umount "$KMNT"
before=$(sum "$E")
# read-only from here, so that the kernel itself writes nothing while mkfs is refused
mount -o ro "$LOOP" "$KMNT" || { echo "FAIL mount -o ro"; exit 1; }
check "mkfs -f on an image the kernel has mounted: refused (loop device attached)" \
	refused "is attached to $LOOP" "$MKFS" -f "$E"
check "mkfs -f on that loop device: refused (mounted, in use by the system)" \
	refused "is in use by the system" "$MKFS" -f "$LOOP"
check "fsck -y on the loop device: refused, exit 8" \
	bash -c "'$FSCK' -y '$LOOP' >/dev/null 2>&1; [ \$? = 8 ]"
umount "$KMNT"
losetup -d "$LOOP"
LOOP=
check "... the ext4 image unchanged" unchanged "$E" "$before"

# ---- ext4 and a partition table, nobody using them ----
check "mkfs on ext4 without -f: refused, says what is there" \
	refused "holds an ext4 file system: refused, nothing written" "$MKFS" "$E"
check "... the image unchanged" unchanged "$E" "$before"
P=$AVFS_T/parted.img
truncate -s 256M "$P"
# an MBR with one Linux partition (sectors 2048..206847) and the boot signature
printf '\x00\x20\x21\x00\x83\x2a\xac\x0c\x00\x08\x00\x00\x00\x20\x03\x00' |
	dd of="$P" bs=1 seek=446 conv=notrunc 2>/dev/null
printf '\x55\xaa' | dd of="$P" bs=1 seek=510 conv=notrunc 2>/dev/null
psum=$(sum "$P")
check "mkfs on a partitioned image without -f: refused (dos partition table)" \
	refused "holds a dos partition table" "$MKFS" "$P"
check "... the image unchanged" unchanged "$P" "$psum"
check "mkfs on an AVFS image without -f: refused" \
	refused "holds an AVFS file system" "$MKFS" "$IMG"
check "mkfs -f over ext4: formatted, says what it overwrote" \
	bash -c "'$MKFS' -f -q '$E' 2>&1 | grep -q 'holds an ext4 file system: formatting over it'"
check "... and fsck finds AVFS there, clean" bash -c "'$FSCK' -n '$E' | grep -q ': clean'"
check "... and blkid sees ext4 no more" bash -c "! blkid -p '$E' 2>/dev/null | grep -q ext4"

# ---- through mkfs(8) and fsck(8), which find mkfs.avfs and fsck.avfs on PATH ----
W=$AVFS_T/wrapped.img
TOOLS="$(dirname "$MKFS"):$(dirname "$FSCK"):$PATH"
check "mkfs -t avfs --size 1G IMG (mkfs(8) runs mkfs.avfs)" \
	bash -c "PATH='$TOOLS' mkfs -t avfs --size 1G --block-size 1M '$W' | grep -q 'mkfs.avfs: formatted'"
check "mkfs -t avfs on it again: refused, exit 1 (mkfs(8) passes the status on)" \
	bash -c "PATH='$TOOLS' mkfs -t avfs '$W' 2>/dev/null; [ \$? = 1 ]"
check "fsck -t avfs IMG (fsck(8) runs fsck.avfs): clean, exit 0" \
	bash -c "PATH='$TOOLS' fsck -t avfs '$W' | grep -q ': clean'"
check "fsck -t avfs -a IMG (an automatic repair, as at boot): exit 0" \
	bash -c "PATH='$TOOLS' fsck -t avfs -a '$W' >/dev/null"

# ---- failures leave nothing behind ----
N=$AVFS_T/new.img
check "--size 1M: refused before anything is made" refused "too small" "$MKFS" --size 1M "$N"
check "... no file left" test ! -e "$N"
check "--disk-model bogus: refused, no file left" \
	bash -c "'$MKFS' --size 1G --disk-model bogus '$N' 2>&1 | grep -q \"unknown disk model 'bogus'\"; [ ! -e '$N' ]"
check "--inodes out of range: refused, no file left" \
	bash -c "'$MKFS' --size 1G --inodes 99999999999 '$N' 2>&1 | grep -q 'out of range'; [ ! -e '$N' ]"
# --profile measures after the image is made: too small to profile, the failure comes late
check "a failure after the image was made (--profile of 32M): no file left" \
	bash -c "'$MKFS' --size 32M --block-size 64K --zones 1 --profile '$N' 2>&1 | grep -q 'too small to profile'; [ ! -e '$N' ]"
X=$AVFS_T/grown.img
truncate -s 16M "$X"
check "... and an image it extended is shrunk back (16M)" \
	bash -c "'$MKFS' --size 32M --block-size 64K --zones 1 --profile '$X' >/dev/null 2>&1; [ \$(stat -c %s '$X') = 16777216 ]"
check "a missing folder is named" refused "there is no folder $AVFS_T/nodir" \
	"$MKFS" --size 1G "$AVFS_T/nodir/a.img"
: >"$AVFS_T/empty.img"
check "an empty file: give --size" refused "is empty: give --size" "$MKFS" "$AVFS_T/empty.img"
check "avfsd on an empty image: not a file system, format it (was: Invalid argument)" \
	bash -c "'$AVFSD' --foreground '$AVFS_T/empty.img' '$MNT' 2>&1 | grep -q 'is empty (0 bytes), not an AVFS file system: format it first'"
check "a missing image without --size: give --size" refused "does not exist: give --size" \
	"$MKFS" "$AVFS_T/missing.img"
avfs_summary
