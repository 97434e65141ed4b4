#!/bin/sh
# cli_fs.sh — mkfs.avfs and fsck.avfs as a user runs them: an 8 GB image checks clean, the
# JSON report carries the geometry, and bad input (usage errors, a zeroed superblock, a
# truncated image, a corrupted block) gets a clear message, the right exit code and no crash.
# usage: cli_fs.sh MKFS FSCK
set -u
MKFS=$1
FSCK=$2
T=$(mktemp -d /var/tmp/avfs-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass=0

check() {	# check NAME WANT_RC GOT_RC
	if [ "$2" = "$3" ]; then
		pass=$((pass + 1))
		echo "ok   $1 (exit $3)"
	else
		fails=$((fails + 1))
		echo "FAIL $1: exit $3, want $2"
	fi
}

img=$T/a.img
"$MKFS" --size 8G --block-size 4M "$img"; check "mkfs 8G" 0 $?
"$FSCK" -n "$img"; check "fsck -n fresh" 0 $?
out=$("$FSCK" --json -n "$img"); check "fsck --json -n" 0 $?
echo "$out"
for key in '"block_size": 4194304' '"zones": 1' '"free_blocks"' '"free_bytes"' '"errors": 0'; do
	case "$out" in
	*"$key"*) check "json has $key" 0 0 ;;
	*) check "json has $key" 0 1 ;;
	esac
done

"$MKFS" --size 64M --block-size 64K --zones 64 "$T/z.img" >/dev/null; check "mkfs 64 zones" 0 $?
out=$("$FSCK" --json -n "$T/z.img")
case "$out" in *'"zones": 64'*) check "json zones 64" 0 0 ;; *) check "json zones 64" 0 1 ;; esac

# usage errors
# (mkfs(8): 1 for every failure, a usage error too)
"$MKFS" --block-size 3M --size 1G "$T/b.img" 2>/dev/null; check "mkfs bad block size" 1 $?
"$MKFS" --size 1M "$T/c.img" 2>/dev/null; check "mkfs too small" 1 $?
"$MKFS" "$T/none.img" 2>/dev/null; check "mkfs no size for a new image" 1 $?
"$FSCK" -n -y "$img" 2>/dev/null; check "fsck -n -y" 16 $?
"$FSCK" 2>/dev/null; check "fsck no device" 16 $?
"$FSCK" -n "$T/does-not-exist" 2>/dev/null; check "fsck missing image" 8 $?

# a zeroed primary superblock: the backup at the end of the device takes over
cp --sparse=always "$T/z.img" "$T/s.img"
dd if=/dev/zero of="$T/s.img" bs=4096 count=1 conv=notrunc 2>/dev/null
"$FSCK" -n "$T/s.img" >/dev/null 2>&1; check "fsck -n zeroed primary superblock" 4 $?
"$FSCK" -y "$T/s.img" >/dev/null 2>&1; check "fsck -y repairs it" 1 $?
"$FSCK" -n "$T/s.img" >/dev/null 2>&1; check "clean afterwards" 0 $?

# both superblocks zeroed: not an AVFS file system any more, nothing written
size=$(stat -c %s "$T/s.img")
dd if=/dev/zero of="$T/s.img" bs=4096 count=1 conv=notrunc 2>/dev/null
dd if=/dev/zero of="$T/s.img" bs=4096 count=1 seek=$((size / 4096 - 1)) conv=notrunc 2>/dev/null
sum1=$(md5sum < "$T/s.img")
"$FSCK" -y "$T/s.img" 2>"$T/err"; check "fsck both superblocks zeroed" 8 $?
cat "$T/err"
[ -s "$T/err" ]; check "it says why" 0 $?
[ "$(md5sum < "$T/s.img")" = "$sum1" ]; check "nothing written" 0 $?

# a truncated image
cp --sparse=always "$T/z.img" "$T/t.img"
truncate -s 32M "$T/t.img"
"$FSCK" -n "$T/t.img" 2>"$T/err"; check "fsck truncated image" 8 $?
cat "$T/err"

# an absurd block size written into the superblock (with a fixed-up CRC it would be
# caught by the geometry check; without, by the CRC): never a crash
cp --sparse=always "$T/z.img" "$T/x.img"
printf '\377\377\377\377' | dd of="$T/x.img" bs=1 seek=80 conv=notrunc 2>/dev/null
"$FSCK" -n "$T/x.img" >/dev/null 2>&1; rc=$?
[ $rc = 4 ] || [ $rc = 8 ]; check "fsck absurd superblock field (exit $rc)" 0 $?

echo "$pass passed, $fails failed"
[ $fails = 0 ]
