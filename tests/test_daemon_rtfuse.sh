#!/bin/bash
# test_daemon_rtfuse.sh — reservations that cover FUSE I/O (issue 16 items 1-2): a reserved
# directory and a FUSE writer (dd) -> avfs-admin streams shows the bytes charged and no miss;
# files created in the directory are covered, others not; --uid limits it to one uid; a
# reservation of the config file is admitted again when avfsd restarts (and one that no longer
# fits is logged); write-behind: its held memory stays within the reserved buffer with a writer
# far above its rate, what was fsynced after buffered writes survives kill -9; bad input is
# refused with a clear error and changes nothing.
# Needs root and /dev/fuse (else SKIP); AVFSD, MKFS, FSCK, ADMIN from the environment.
. "$(dirname "${BASH_SOURCE[0]}")/daemon_env.sh"
avfs_require
[ -x "${ADMIN:-}" ] || { echo "FAIL: ADMIN is not built"; exit 1; }
avfs_env_init

CONF=$AVFS_T/avfsd.conf
cat >"$CONF" <<EOF
# issue 16: a camera's folder, re-admitted at every start
reserve /cam1 rate=2M buffer=8M write
EOF
adm() { "$ADMIN" --socket "$SOCK" "$@"; }
# field ID NAME: a reservation's field from avfs-admin streams --json
field() {
	adm streams --json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["streams"]:
    if s["id"] == int(sys.argv[1]):
        v = s.get(sys.argv[2]); print(v if v is not None else "none"); break
else:
    print("gone")' "$1" "$2"
}
nstreams() { adm streams --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["streams"]))'; }
rid() { sed -n 's/^reservation \([0-9]*\):.*/\1/p'; }
# drained ID: wait (<= 10 s) until the reservation holds no written data (write-behind: a
# close answers before its held writes are on the device, and they are counted when they are)
drained() {
	local i
	for i in $(seq 100); do [ "$(field "$1" buffered)" = 0 ] && return 0; sleep 0.1; done
	return 1
}

avfs_mkfs --size 2G --block-size 1M || exit 1
avfs_start --config "$CONF" || exit 1

# the config's reservation names a directory not made yet: left out, said so, avfsd serves
check "config: a reservation that does not fit is logged and left out" \
	grep -q "avfsd.conf:2: reserve /cam1 write .*no longer fits, left out: No such file" "$LOG"
check "config: nothing admitted" same "$(nstreams)" 0

mkdir "$MNT/cam1" "$MNT/cam2" "$MNT/cam3" "$MNT/other"
chmod 777 "$MNT/cam3"

# ---- a reserved directory and a FUSE writer ----
OUT=$(adm reserve "$MNT/cam2" --rate 8M --buffer 8M --write) || echo "$OUT"
R2=$(rid <<<"$OUT")
check "reserve DIR: admitted ($OUT)" test -n "$R2"
check "streams: a directory's reservation shows its inode with a slash" \
	bash -c "'$ADMIN' --socket '$SOCK' streams | grep -Eq '^ +$R2 .*[0-9]+/ +all +w '"
dd if=/dev/urandom of="$MNT/cam2/seg0.ts" bs=256K count=32 status=none
# (no fsync: it would send the held writes at once, as best effort)
drained "$R2"
check "a file created in the directory is charged: 8 MiB" same "$(field "$R2" bytes)" 8388608
check "... as real-time requests, each write one" same "$(field "$R2" requests)" 32
check "... none late" same "$(field "$R2" misses)" 0
check "... write-behind held some of it, within the buffer" \
	bash -c "p=\$('$ADMIN' --socket '$SOCK' streams --json | python3 -c 'import json,sys; print([s[\"buffered_peak\"] for s in json.load(sys.stdin)[\"streams\"] if s[\"id\"] == $R2][0])'); [ \$p -gt 0 ] && [ \$p -le 8388608 ]"
check "... and holds nothing once written" same "$(field "$R2" buffered)" 0
B=$(field "$R2" bytes)
dd if=/dev/zero of="$MNT/other/x" bs=1M count=4 status=none
dd if=/dev/zero of="$MNT/cam1/x" bs=1M count=4 status=none
check "files elsewhere are not charged to it" same "$(field "$R2" bytes)" "$B"
mv "$MNT/other/x" "$MNT/cam2/moved"
dd if=/dev/zero of="$MNT/cam2/moved" bs=1M count=1 conv=notrunc status=none
drained "$R2"
check "a file moved into the directory is charged" same "$(field "$R2" bytes)" $((B + 1048576))
# reads are not covered by a write reservation
cat "$MNT/cam2/seg0.ts" >/dev/null
check "reads are not charged to a write reservation" same "$(field "$R2" bytes)" $((B + 1048576))

# ---- a reserved reader: its reads and read-ahead (the playout buffer) charged, none late (a
# file not read before: what the read-ahead slots keep needs no disk and is not charged) ----
dd if=/dev/urandom of="$MNT/other/play.ts" bs=1M count=8 status=none
OUT=$(adm reserve "$MNT/other/play.ts" --rate 8M --buffer 8M --read) || echo "$OUT"
RR=$(rid <<<"$OUT")
check "reserve FILE --read: admitted" test -n "$RR"
check "a reserved reader reads the file" same "$(cat "$MNT/other/play.ts" | wc -c)" 8388608
check "... its reads are charged (the file once)" same "$(field "$RR" bytes)" 8388608
check "... as real-time requests, none late" \
	bash -c "[ $(field "$RR" requests) -gt 0 ] && [ $(field "$RR" misses) = 0 ]"
adm release "$RR" >/dev/null

# ---- --uid: one uid's I/O only ----
OUT=$(adm reserve "$MNT/cam3" --rate 4M --buffer 4M --write --uid 65534) || echo "$OUT"
R3=$(rid <<<"$OUT")
check "reserve DIR --uid: admitted" test -n "$R3"
check "... streams shows the uid it covers" same "$(field "$R3" covers_uid)" 65534
dd if=/dev/zero of="$MNT/cam3/root" bs=1M count=2 status=none
check "... root's writes are not charged" same "$(field "$R3" bytes)" 0
setpriv --reuid=65534 --regid=65534 --clear-groups \
	dd if=/dev/zero of="$MNT/cam3/nobody" bs=1M count=2 status=none
drained "$R3"
check "... uid 65534's are" same "$(field "$R3" bytes)" 2097152

# ---- bad input: a clear error, nothing changed ----
N=$(nstreams)
check "rate 0: refused" fails_with "--rate 0: not a rate" \
	adm reserve "$MNT/cam2" --rate 0 --buffer 8M --write
check "a huge buffer: refused" fails_with "refused (No buffer space available): buffer memory" \
	adm reserve "$MNT/cam1" --rate 1M --buffer 64G --write
check "a path not on the mount: refused" fails_with "not on an AVFS mount" \
	"$ADMIN" reserve /var/tmp --rate 1M --buffer 8M --write
check "a file asked as a directory: refused" fails_with "Not a directory" \
	adm reserve "$MNT/cam1/x/" --rate 1M --buffer 8M --write
check "--uid without a number: refused" fails_with "--uid x: not a uid" \
	adm reserve "$MNT/cam1" --rate 1M --buffer 8M --write --uid x
check "... nothing changed" same "$(nstreams)" "$N"

# ---- a writer far above its rate: memory within the buffer; what its rate does not cover goes
# as best effort (bw=park: parked, then sent in time nobody else asks for) ----
OUT=$(adm reserve "$MNT/cam1" --rate 4M --buffer 2M --write) || echo "$OUT"
R1=$(rid <<<"$OUT")
dd if=/dev/zero of="$MNT/cam1/fast" bs=1M count=24 status=none
check "a writer above its rate: all 24 MiB charged" same "$(field "$R1" bytes)" 25165824
check "... its held memory never passed its buffer (2 MiB)" \
	test "$(field "$R1" buffered_peak)" -le 2097152
check "... the excess went as best effort" test "$(field "$R1" be_requests)" -gt 0
check "... the file is whole" same "$(cmp -n 25165824 "$MNT/cam1/fast" /dev/zero && stat -c %s "$MNT/cam1/fast")" 25165824

# ---- fsync after buffered writes, then kill -9: the data is there ----
dd if=/dev/urandom of="$AVFS_T/pattern" bs=1M count=6 status=none
dd if="$AVFS_T/pattern" of="$MNT/cam2/crash.ts" bs=128K conv=fsync status=none
WANT=$(md5sum <"$AVFS_T/pattern")
check "kill -9 after fsync" avfs_kill9
avfs_start --config "$CONF" || exit 1
check "... the fsynced file is whole" same "$(md5sum <"$MNT/cam2/crash.ts")" "$WANT"

# ---- the config's reservation again after a restart, now that /cam1 exists ----
check "config: re-admitted at start" grep -q "avfsd.conf:2: reservation [0-9]*: write /cam1" "$LOG"
check "config: avfs-admin streams shows it on the directory" \
	bash -c "'$ADMIN' --socket '$SOCK' streams --json | python3 -c 'import json,sys; sys.exit(0 if any(s[\"directory\"] and s[\"rate\"] == 2000000 for s in json.load(sys.stdin)[\"streams\"]) else 1)'"
check "clean unmount" avfs_stop
check "fsck clean" timeout 60 "$FSCK" -n "$IMG"
avfs_summary
