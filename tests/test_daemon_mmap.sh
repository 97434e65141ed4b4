#!/bin/bash
# test_daemon_mmap.sh — shared mmap on avfsd's mount (issue 18): MAP_SHARED read-only and
# read-write, coherent with read(2)/write(2) on the same file both ways; what msync and a
# close followed by `sync -f FILE` made durable is there after kill -9; then SQLite in WAL mode
# (its -shm index is a shared mapping; mmap_size maps the database too, so a checkpoint's
# writes must reach the mapped pages): SQLITE_TXNS transactions (default 2,000; issue 18 asks
# 10,000: SQLITE_TXNS=10000 meson test test_daemon_mmap), synchronous=FULL, kill -9 of avfsd
# with the writer's connection open and its WAL not checkpointed, remount: every committed
# row there, PRAGMA integrity_check ok; last fsck -n after a clean unmount.
# env: AVFSD MKFS FSCK (default: ../build), SQLITE_TXNS. Exit 77 without root, FUSE, a kernel
# >= 6.6 (FUSE_DIRECT_IO_ALLOW_MMAP) or Python's sqlite3 module.
set -u
. "$(dirname "$0")/daemon_env.sh"
avfs_require
read -r KMAJ KMIN < <(uname -r | awk -F. '{ print $1, $2 + 0 }')
[ "$KMAJ" -gt 6 ] || { [ "$KMAJ" = 6 ] && [ "$KMIN" -ge 6 ]; } ||
	avfs_skip "kernel $(uname -r) < 6.6: no FUSE_DIRECT_IO_ALLOW_MMAP, shared mmap gives ENODEV"
python3 -c 'import sqlite3' 2>/dev/null || avfs_skip "no Python sqlite3 module (libsqlite3)"
TXNS=${SQLITE_TXNS:-2000}
[[ $TXNS =~ ^[1-9][0-9]*$ ]] || { echo "FAIL: SQLITE_TXNS=$TXNS is not a count"; exit 1; }
avfs_env_init

avfs_mkfs || { echo "FAIL mkfs"; exit 1; }
check "mount" avfs_start || exit 1

# ---- shared mappings, coherent with read and write ----
t_map_ro() {
	head -c 100000 /dev/urandom >"$MNT/ro" && python3 - "$MNT/ro" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
assert m[:] == os.pread(fd, 100000, 0), "the mapping differs from read(2)"
PY
}
check "MAP_SHARED read-only: the mapping reads what read(2) reads" t_map_ro

t_map_rw() {
	python3 - "$MNT/rw" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 3 << 20)
m = mmap.mmap(fd, 3 << 20, mmap.MAP_SHARED)
m[4090:4106] = b"across the page!"		# a store across a page boundary
m.flush()					# msync(MS_SYNC)
other = os.open(sys.argv[1], os.O_RDONLY)	# another open: read(2) goes to avfsd
assert os.pread(other, 16, 4090) == b"across the page!", "msync'ed store not read back"
os.pwrite(fd, b"written by write", (2 << 20) + 5)	# write(2) while mapped
assert m[(2 << 20) + 5:(2 << 20) + 21] == b"written by write", "mapping missed a write(2)"
m[:5] = b"first"				# dirty again, then munmap and close: no msync
m.close()
os.close(fd)
assert os.pread(other, 5, 0) == b"first", "a store was lost at close"
PY
}
check "MAP_SHARED read-write: msync, write(2) seen through the mapping, close writes back" \
	t_map_rw

t_map_private() {
	python3 - "$MNT/ro" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 0, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
before = os.pread(fd, 4, 0)
m[:4] = b"priv"
assert os.pread(fd, 4, 0) == before, "a private store reached the file"
PY
}
check "MAP_PRIVATE stores stay private" t_map_private

# ---- durability: msync; close then sync -f FILE ----
t_map_durable() {
	python3 - "$MNT" <<'PY' && sync -f "$MNT/closed" && avfs_kill9
import mmap, os, sys
d = sys.argv[1]
fd = os.open(d + "/synced", os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 1 << 20)
m = mmap.mmap(fd, 1 << 20, mmap.MAP_SHARED)
m[1000:1013] = b"msync durable"
m.flush()	# msync(MS_SYNC): the kernel writes the page back, then FUSE_FSYNC
fd2 = os.open(d + "/closed", os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd2, 8192)
m2 = mmap.mmap(fd2, 8192, mmap.MAP_SHARED)
m2[4096:4108] = b"close + sync"
m2.close()
os.close(fd2)	# the kernel writes dirty pages back before FLUSH; sync -f FILE commits
PY
}
check "stores, msync / close + sync -f FILE, kill -9" t_map_durable
check "remount after kill -9" avfs_start || { avfs_summary; exit 1; }
t_map_there() {
	[ "$(dd if="$MNT/synced" bs=1 skip=1000 count=13 status=none)" = "msync durable" ] &&
	[ "$(dd if="$MNT/closed" bs=1 skip=4096 count=12 status=none)" = "close + sync" ]
}
check "what msync and close + sync -f covered is there" t_map_there

# ---- SQLite in WAL mode, kill -9 with the connection open ----
SQL_ROW='
import hashlib
def row(i):
    return (i, hashlib.sha256(b"%d" % i).hexdigest() * 4)
'
t_sqlite_kill() {
	local out=$AVFS_T/writer.out i wpid
	python3 - "$MNT/ev.db" "$TXNS" >"$out" 2>&1 <<PY &
import sqlite3, sys, time
$SQL_ROW
db = sqlite3.connect(sys.argv[1], isolation_level=None)
assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal", "no WAL mode"
db.execute("PRAGMA synchronous=FULL")		# a COMMIT returns once the WAL is fsync'ed
db.execute("PRAGMA mmap_size=67108864")		# reads of the database through a mapping
db.execute("CREATE TABLE ev (id INTEGER PRIMARY KEY, body TEXT)")
for i in range(1, int(sys.argv[2]) + 1):
    db.execute("BEGIN")
    db.execute("INSERT INTO ev VALUES (?, ?)", row(i))
    db.execute("COMMIT")
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
print("committed", flush=True)
time.sleep(600)		# the connection stays open: no checkpoint at close
PY
	wpid=$!
	for i in $(seq 1200); do
		grep -q committed "$out" && break
		kill -0 "$wpid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q committed "$out"; then
		kill "$wpid" 2>/dev/null
		echo "  the writer did not finish:"
		cat "$out"
		return 1
	fi
	[ -s "$MNT/ev.db-wal" ] || { echo "  no WAL left to recover"; kill "$wpid"; return 1; }
	avfs_kill9
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	return 0
}
START=$SECONDS
check "SQLite WAL: $TXNS transactions (synchronous=FULL, mmap_size), kill -9 with it open" \
	t_sqlite_kill
echo "  ($TXNS transactions and the kill in $((SECONDS - START)) s)"
check "remount after kill -9 of the SQLite writer's daemon" avfs_start ||
	{ avfs_summary; exit 1; }
t_sqlite_there() {
	python3 - "$MNT/ev.db" "$TXNS" <<PY
import sqlite3, sys
$SQL_ROW
db = sqlite3.connect(sys.argv[1], isolation_level=None)
n = int(sys.argv[2])
ok = db.execute("PRAGMA integrity_check").fetchone()[0]
assert ok == "ok", "integrity_check: %s" % ok
got = db.execute("SELECT count(*), min(id), max(id) FROM ev").fetchone()
assert got == (n, 1, n), "rows %s, want (%d, 1, %d)" % (got, n, n)
for r in db.execute("SELECT id, body FROM ev"):
    assert r == row(r[0]), "row %d differs" % r[0]
db.execute("INSERT INTO ev VALUES (?, ?)", row(n + 1))	# and it takes more
PY
}
check "every committed row there, integrity_check ok, contents as written" t_sqlite_there

check "clean unmount" avfs_stop
t_fsck() {
	timeout 60 "$FSCK" -n "$IMG" >"$AVFS_T/fsck.out" 2>&1 || { cat "$AVFS_T/fsck.out"; return 1; }
}
check "fsck -n clean" t_fsck
avfs_summary
