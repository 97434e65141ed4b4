#!/bin/bash
# test_daemon_faults.sh — the real avfsd on a failing disk (issue 19): its image is the file of
# tests/faultfs, a FUSE file system whose reads or writes of a chosen byte range fail with EIO
# (set while it runs through its /ctl file). Checked: one unreadable inode-table block — the
# mount succeeds from the backup region; a data write failing — write(2) and the file's size
# agree (a short write), fsync reports EIO once per open file description, then 0 (also for a
# write answered early by write-behind, issue 16); a metadata
# write failing — a commit's (the journal) fails, the file system turns read-only (EROFS to
# writers), the log and avfs-admin status name the block; remounted on the mended disk,
# everything committed is there and fsck.avfs finds nothing; a checkpoint's write failing (an
# inode table block's home, at the unmount's last checkpoint) loses nothing committed; a
# best-effort write answered early (write-behind-be, issue 18) that fails on the device:
# fsync reports EIO once.
# Needs root and /dev/fuse (else SKIP); AVFSD, MKFS, FSCK, ADMIN, FAULTFS from the environment.
. "$(dirname "${BASH_SOURCE[0]}")/daemon_env.sh"
avfs_require
[ -x "${FAULTFS:-}" ] || { echo "FAIL: FAULTFS is not built"; exit 1; }
[ -x "${ADMIN:-}" ] || { echo "FAIL: ADMIN is not built"; exit 1; }
avfs_env_init

SIZE=$((64 << 20))
FFS=$(mktemp -d /var/tmp/avfs-faultfs-XXXXXX) || exit 1
FPID=

faults_cleanup() {	# avfsd first (it holds the disk file), then faultfs, then the rest
	local rc=$?
	if avfs_mounted; then
		timeout 10 fusermount3 -u "$MNT" 2>/dev/null || timeout 5 fusermount3 -u -z "$MNT"
	fi
	if [ -n "$AVFS_PID" ]; then
		avfs_wait_exit 10 || { pkill -KILL -P "$AVFS_PID"; avfs_wait_exit 5; }
	fi
	if grep -q " $FFS fuse" /proc/mounts; then
		timeout 10 fusermount3 -u "$FFS" 2>/dev/null || timeout 5 fusermount3 -u -z "$FFS"
	fi
	[ -n "$FPID" ] && { kill "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null; }
	rmdir "$FFS" 2>/dev/null
	(exit $rc)
	avfs_cleanup
}
trap faults_cleanup EXIT

fault() {	# fault read|write|rw OFF LEN | fault none
	echo "$*" >"$FFS/ctl"
}

# the image: formatted beside, copied onto faultfs's disk
IMG=$AVFS_T/base.img
avfs_mkfs --size $SIZE --block-size 64K || exit 1
# geometry from the superblock (fs/format.h: struct avfs_super)
read -r DATA_OFF DATA_END ITABLE JLOG JLOG_END <<<"$(python3 - "$IMG" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read(4096)
journal_start, journal_blocks = struct.unpack_from("<QQ", b, 104)
itable_start, = struct.unpack_from("<Q", b, 168)
data_off, data_blocks = struct.unpack_from("<QQ", b, 200)
block_shift, = struct.unpack_from("<I", b, 80)
assert journal_start == 1 and journal_blocks >= 64, (journal_start, journal_blocks)
print(data_off, data_off + (data_blocks << block_shift), itable_start,
      (journal_start + 2) * 4096, (journal_start + journal_blocks) * 4096)
PY
)"
"$FAULTFS" --size $SIZE "$FFS" 2>"$AVFS_T/faultfs.log" &
FPID=$!
for i in $(seq 100); do [ -e "$FFS/disk" ] && break; sleep 0.05; done
check "faultfs serves the disk" test -e "$FFS/disk"
dd if="$IMG" of="$FFS/disk" bs=1M conv=notrunc status=none
IMG=$FFS/disk

# 1. one unreadable inode-table block (the root's): the mount takes it from the backup region
# (best-effort write-behind off until 4, so that 2's write meets its failure itself)
fault read $((ITABLE * 4096)) 4096
: >"$LOG"
check "an unreadable inode-table block: avfsd mounts" avfs_start --set write-behind-be=0
check "... from the backup region, said in the log" grep -q "1 blocks repaired" "$LOG"
check "... the root lists" timeout 10 ls "$MNT"
fault none

# 2. a data write fails: write(2) and the size agree, fsync says EIO once per description
fault write $((DATA_OFF + (2 << 20))) $((DATA_END - DATA_OFF - (2 << 20)))
python3 - "$MNT/rec" >"$AVFS_T/write.out" 2>&1 <<'PY'
import errno, os, sys
MB = 1 << 20
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
other = os.open(sys.argv[1], os.O_RDONLY)          # a second description, opened before
assert os.write(fd, b"a" * MB) == MB               # blocks 0-15: written
try:
    n = os.write(fd, b"b" * (3 * MB))              # [1, 2) MiB goes, [2, 3) MiB fails
except OSError as e:
    n = -e.errno
size = os.fstat(fd).st_size
print("write returned", n, "size", size)
assert n > 0 and size == MB + n, "write(2) and the size disagree"


def fsync(f):
    try:
        os.fsync(f)
        return 0
    except OSError as e:
        return e.errno


print("fsync", fsync(fd), fsync(fd), "other", fsync(other), fsync(other))
os.close(other)
os.close(fd)
PY
rc=$?
cat "$AVFS_T/write.out"
check "a failed data write: a short write, the size at its end" test $rc = 0
check "... fsync: EIO once per description, then 0" \
	grep -q "fsync $(python3 -c 'import errno; print(errno.EIO)') 0 other $(python3 -c 'import errno; print(errno.EIO)') 0" "$AVFS_T/write.out"
fault none
"$ADMIN" --socket "$SOCK" status --json >"$AVFS_T/status.json"
check "... no commit failed: still read-write" python3 -c "
import json
s = json.load(open('$AVFS_T/status.json'))
assert s['read_only'] is False and s['failure'] is None, s
assert 0 <= s['commit_max_s'] < 60, s
"
before=$(stat -c %s "$MNT/rec")
check "... the file system stays writable" sh -c "echo more >>'$MNT/rec' && sync -f '$MNT/rec'"
check "... the append lands at the size" test "$(stat -c %s "$MNT/rec")" = $((before + 5))

held_write_fails() {	# held_write_fails FILE OUT: 1 MiB written from a page-aligned buffer
	# (whole pages: the kernel cuts an unaligned buffer's MiB in two), then fsync twice
	python3 - "$1" >"$2" 2>&1 <<'PY'
import mmap, os, sys
MB = 1 << 20
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
buf = mmap.mmap(-1, MB)
buf.write(b"w" * MB)
print("write", os.write(fd, buf))
said = []
for _ in range(2):                                 # the error once, then 0
    try:
        os.fsync(fd)
        said.append(0)
    except OSError as e:
        said.append(e.errno)
print("fsync", *said)
os.close(fd)
PY
	cat "$2"
}

# 2b. write-behind (issue 16): a reserved writer's write is answered once in the daemon's
# memory; when it then fails on the device, the writer hears of it at fsync (EIO once)
mkdir "$MNT/cam"
check "write-behind: a reserved directory" \
	"$ADMIN" --socket "$SOCK" reserve "$MNT/cam" --rate 2M --buffer 8M --write
fault write $DATA_OFF $((DATA_END - DATA_OFF))
held_write_fails "$MNT/cam/seg" "$AVFS_T/wb.out"
check "... the write is answered from memory" grep -q "write $((1 << 20))" "$AVFS_T/wb.out"
check "... its failure on the device: fsync EIO once, then 0" \
	grep -q "fsync $(python3 -c 'import errno; print(errno.EIO)') 0" "$AVFS_T/wb.out"
fault none

# 3. a commit's write fails (the journal, where a commit writes: the homes come later, in
# the checkpoint): read-only, the block named
sync -f "$MNT"
fault write $JLOG $((JLOG_END - JLOG))
touch "$MNT/late" 2>/dev/null
sync -f "$MNT" 2>/dev/null
check "a failed commit: sync reports it" sh -c "! sync -f '$MNT/late'"
check "... writers get EROFS" sh -c "touch '$MNT/x' 2>&1 | grep -q 'Read-only file system'"
check "... the log names the block" grep -q "commit failed: writing .*journal.*read-only" "$LOG"
"$ADMIN" --socket "$SOCK" status --json >"$AVFS_T/status.json"
check "... avfs-admin status: read_only and the failure" python3 -c "
import json, sys
s = json.load(open('$AVFS_T/status.json'))
assert s['read_only'] is True and 'journal' in s['failure'], s
"
"$ADMIN" --socket "$SOCK" status | grep -q "^state .*read-only: writing .*journal"
check "... and its text says so" test $? = 0
# (into a file first: a process substitution's head could still hold the file open when
# fusermount3 runs below, and the unmount would fail EBUSY)
head -c 1048576 "$MNT/rec" >"$AVFS_T/head.out"
check "... readers still read" cmp -n 1048576 "$AVFS_T/head.out" <(python3 -c "import sys; sys.stdout.write('a' * 1048576)")
timeout 30 fusermount3 -u "$MNT"
avfs_wait_exit 30
check "... unmounted, avfsd exits 1" test $? = 1
check "... saying what is lost" grep -q "stopped read-only (writing .*journal" "$LOG"
cp "$LOG" "$AVFS_T/ro.log"
fault none

# the disk mended: what was committed before is there, the failed commit's file is not
: >"$LOG"
check "mended: avfsd mounts again" avfs_start
check "... the files are there" test -s "$MNT/rec"
check "... not the failed commit's" test ! -e "$MNT/late"
check "... and writable" touch "$MNT/after"

# 3b. a checkpoint's write fails (the inode table's home copies, at the unmount's last
# checkpoint): the commit before it is durable (its homes wait), avfsd exits 1, and a
# remount replays the commit
fault write $((ITABLE * 4096)) $((4 * 4096))
touch "$MNT/late2"
check "a commit while the homes fail: sync says durable" sync -f "$MNT/late2"
timeout 30 fusermount3 -u "$MNT"
avfs_wait_exit 30
check "... the checkpoint fails: avfsd exits 1" test $? = 1
check "... saying so" grep -Eq "final commit failed|checkpoint failed: writing .*inode table" "$LOG"
cp "$LOG" "$AVFS_T/ro2.log"
fault none
: >"$LOG"
check "mended: avfsd mounts again" avfs_start
check "... the committed file is there (replayed)" test -e "$MNT/late2" -a -e "$MNT/after"

# 4. best-effort write-behind (the default, issue 18): a plain write is answered once in the
# daemon's memory; when it then fails on the device, fsync says EIO once, then 0
fault write $DATA_OFF $((DATA_END - DATA_OFF))
held_write_fails "$MNT/bewb" "$AVFS_T/bewb.out"
check "best-effort write-behind: the write is answered from memory" \
	grep -q "write $((1 << 20))" "$AVFS_T/bewb.out"
check "... its failure on the device: fsync EIO once, then 0" \
	grep -q "fsync $(python3 -c 'import errno; print(errno.EIO)') 0" "$AVFS_T/bewb.out"
fault none
check "... a clean unmount" avfs_stop
check "fsck.avfs -n: clean" timeout 60 "$FSCK" -n "$IMG"
[ "$FAILS" = 0 ] || { echo "avfsd's logs:"; cat "$AVFS_T/ro.log" "$LOG"; }
avfs_summary
