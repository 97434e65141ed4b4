#!/bin/bash
# test_daemon_befair.sh — best effort shared between FUSE clients (issue 16, Done when 1-2):
# beside a greedy O_DIRECT reader of a large file (1 MiB reads in a loop, its next read-ahead
# window always ahead of the head), a second client's small O_DIRECT reads and a write + fsync
# of a new file answer in well under the best-effort age bound (set to 5 s here, so that a request
# served only once it ages — C-SCAN order alone — fails clearly); the reader keeps reading.
# A reserved writer's close does not wait for its held writes (write-behind: due up to
# buffer / rate later), and the data is what was written once synced. (main before the fix:
# the fsync 5.4 s, the close 7.6 s; its reads were 82 ms here, so only those two fail there.)
# On hddemu's avfs-250g in real time (a fast image file serves the reader's window before its
# next one arrives, and hides the order). Needs root and /dev/fuse (else SKIP); AVFSD, MKFS,
# FSCK, ADMIN, HDDEMU from the environment.
. "$(dirname "${BASH_SOURCE[0]}")/daemon_env.sh"
avfs_require
[ -x "${ADMIN:-}" ] || { echo "FAIL: ADMIN is not built"; exit 1; }
avfs_env_init

[ -x "${HDDEMU:-}" ] || { echo "FAIL: HDDEMU is not built"; exit 1; }

stop_reader() {
	[ -n "$RPID" ] || return 0
	kill "$RPID" 2>/dev/null
	wait "$RPID" 2>/dev/null
	RPID=
}
stop_disk() {	# the reader, avfsd, then hddemu (avfsd's disk), then the rest
	local rc=$? i
	stop_reader
	if [ -n "$AVFS_PID" ]; then
		avfs_mounted && timeout 10 fusermount3 -u "$MNT" 2>/dev/null
		avfs_wait_exit 10 >/dev/null
	fi
	for i in $(seq 40); do
		grep -q " $HDD fuse" /proc/mounts || break
		fusermount3 -u "$HDD" 2>/dev/null && break
		sleep 0.25
	done
	wait "$HPID" 2>/dev/null
	(exit $rc)
	avfs_cleanup
}
# the disk: hddemu's avfs-250g (its outer 2 GiB), avfsd on its file; fast while filling
HDD=$AVFS_T/hdd
mkdir "$HDD"
"$HDDEMU" --model avfs-250g --size 2G --backing "$AVFS_T/hdd.img" --foreground "$HDD" \
	>"$AVFS_T/hddemu.log" 2>&1 &
HPID=$!
RPID=
trap stop_disk EXIT
for i in $(seq 100); do [ -f "$HDD/disk" ] && break; sleep 0.05; done
[ -f "$HDD/disk" ] || { echo "FAIL: hddemu did not mount"; cat "$AVFS_T/hddemu.log"; exit 1; }
echo 1 >"$HDD/fast"
IMG=$HDD/disk
avfs_mkfs --disk-model avfs-250g || exit 1
avfs_start --set be-age=5s || exit 1

# the victim's file first (low on the disk: behind the head while the reader reads)
dd if=/dev/urandom of="$MNT/small" bs=64K count=1 status=none
dd if=/dev/urandom of="$MNT/big" bs=1M count=256 oflag=direct status=none
sync -f "$MNT/big"

# the greedy reader: one file, 1 MiB O_DIRECT reads, again and again; its MiB counted
python3 - "$MNT/big" "$AVFS_T/passes" <<'PY' &
import mmap, os, signal, sys
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
buf = mmap.mmap(-1, 1 << 20)
mib = 0
while True:
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
    while os.readv(fd, [buf]) > 0:
        mib += 1
        with open(sys.argv[2] + ".new", "w") as f:
            f.write("%d\n" % mib)
        os.rename(sys.argv[2] + ".new", sys.argv[2])
    os.close(fd)
PY
RPID=$!
echo 0 >"$HDD/fast"	# real time from here
sleep 1

# the other client: 8 small O_DIRECT reads, then a new file written and fsynced; seconds each
python3 - "$MNT/small" "$MNT/new" >"$AVFS_T/victim.out" <<'PY'
import mmap, os, sys, time
buf = mmap.mmap(-1, 1 << 16)
worst = 0.0
for _ in range(8):
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
    t = time.monotonic()
    n = os.readv(fd, [buf])
    worst = max(worst, time.monotonic() - t)
    os.close(fd)
    assert n == 1 << 16, n
    time.sleep(0.05)
print("read_max %.3f" % worst)
t = time.monotonic()
fd = os.open(sys.argv[2], os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"n" * 4096)
os.fsync(fd)
os.close(fd)
print("fsync %.3f" % (time.monotonic() - t))
PY
cat "$AVFS_T/victim.out"
p1=$(cat "$AVFS_T/passes" 2>/dev/null || echo 0)
sleep 1
p2=$(cat "$AVFS_T/passes" 2>/dev/null || echo 0)
stop_reader
below() {	# below KEY SECONDS: victim.out's KEY under SECONDS
	awk -v k="$1" -v s="$2" '$1 == k { found = 1; if ($2 + 0 < s + 0) ok = 1 }
		END { if (!found) print "  no " k; else if (!ok) print "  " k " not below " s " s"
		      exit !ok }' "$AVFS_T/victim.out"
}
check "beside a greedy reader, another client's 64 KiB reads within 1 s (age bound 5 s)" \
	below read_max 1
check "... its write + fsync within 2 s" below fsync 2
check "... the greedy reader kept reading (MiB read: $p1, then $p2)" test "$p2" -gt "$p1"

# a reserved writer's close: at once, though its writes are held up to buffer / rate (8 s)
mkdir "$MNT/cam"
check "reserve a camera's directory" \
	"$ADMIN" --socket "$SOCK" reserve "$MNT/cam" --rate 1M --buffer 8M --write
python3 - "$MNT/cam/seg" >"$AVFS_T/close.out" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(4):
    os.write(fd, bytes([65 + i]) * (256 << 10))
t = time.monotonic()
os.close(fd)
print("close %.3f" % (time.monotonic() - t))
PY
cat "$AVFS_T/close.out"
check "a reserved writer's close answers within 1 s" \
	awk '$1 == "close" { exit !($2 + 0 < 1) }' "$AVFS_T/close.out"
check "... the segment synced reads back as written" python3 -c "
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDONLY); os.fsync(fd); os.close(fd)
d = open(p, 'rb').read()
assert d == b''.join(bytes([65 + i]) * (256 << 10) for i in range(4)), len(d)
" "$MNT/cam/seg"
check "clean unmount" avfs_stop
check "fsck clean" timeout 60 "$FSCK" -n "$IMG"
avfs_summary
