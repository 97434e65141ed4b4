#!/bin/bash
# test_hostile_img.sh — hostile images through the real tools (issue 19): images edited with
# tests/imgedit (CRCs right, changes committed home or only into the journal) meet
# fsck.avfs -n, fsck.avfs -y and avfsd. Required: no crash, no hang; avfsd refuses what fsck -n
# reports damaged and points at fsck.avfs -y; after fsck -y the image checks clean and mounts.
# Needs root and /dev/fuse (else SKIP); IMGEDIT, AVFSD, MKFS, FSCK from the environment.
. "$(dirname "${BASH_SOURCE[0]}")/daemon_env.sh"
avfs_require
[ -x "${IMGEDIT:-}" ] || { echo "FAIL: IMGEDIT is not built"; exit 1; }
avfs_env_init

# fsck_rc MODE WANT: fsck.avfs MODE exits WANT (not a signal, within 60 s)
fsck_rc() {
	local rc
	timeout 60 "$FSCK" "$1" "$IMG" >"$AVFS_T/fsck.out" 2>&1
	rc=$?
	[ $rc = "$2" ] && return 0
	echo "fsck.avfs $1 exited $rc, want $2:"
	cat "$AVFS_T/fsck.out"
	return 1
}

# refused: avfsd exits non-zero within 30 s without mounting, saying to run fsck.avfs -y
refused() {
	local rc=0 i
	: >"$LOG"
	timeout --signal=KILL 60 "$AVFSD" --foreground --socket "$SOCK" "$IMG" "$MNT" >>"$LOG" 2>&1 &
	AVFS_PID=$!
	for i in $(seq 600); do
		kill -0 "$AVFS_PID" 2>/dev/null || break
		avfs_mounted && break
		sleep 0.05
	done
	if avfs_mounted; then
		echo "avfsd mounted the damaged image; ls for 5 s:"
		timeout 5 ls "$MNT" >/dev/null 2>&1
		echo "ls exit $? (124: it hung)"
		avfs_abort_fuse
		timeout 10 fusermount3 -u -z "$MNT" 2>/dev/null
		avfs_wait_exit 10
		return 1
	fi
	avfs_wait_exit 30
	rc=$?
	grep -q 'fsck.avfs -y' "$LOG" && [ $rc != 0 ] && [ $rc -lt 128 ] && return 0
	echo "avfsd exit $rc; its log:"
	cat "$LOG"
	return 1
}

# mounts: avfsd mounts the repaired image, ls lists the root, a clean unmount
mounts() {
	: >"$LOG"
	avfs_start || return 1
	timeout 10 ls "$MNT" >/dev/null || return 1
	avfs_stop
}

fresh() {
	rm -f "$IMG"
	avfs_mkfs --size 64M --block-size 64K
}

# 1. a journaled superblock whose data bitmap starts at 3590324482: fsck -n, -y and avfsd
#    crashed (load_bitmap out of bounds)
fresh
check "journal: superblock dbitmap_start edited" "$IMGEDIT" "$IMG" super dbitmap_start 3590324482 --journal
check "geometry: avfsd refuses, points at fsck -y" refused
check "geometry: fsck -n finds it (exit 4)" fsck_rc -n 4
check "geometry: fsck -y discards the transaction (exit 1)" fsck_rc -y 1
grep -q "WARNING: the journal cannot be trusted" "$AVFS_T/fsck.out"
check "geometry: fsck -y warns that the journal was discarded" test $? = 0
check "geometry: then clean (exit 0)" fsck_rc -n 0
check "geometry: then avfsd mounts" mounts

# 2. the root's block count 2^32 through the journal: mounted, and ls spun forever
fresh
check "journal: root nblocks edited" "$IMGEDIT" "$IMG" inode / nblocks 4294967296 --journal
check "nblocks: avfsd refuses, points at fsck -y" refused
check "nblocks: fsck -n finds it (exit 4)" fsck_rc -n 4
check "nblocks: fsck -y repairs (exit 1)" fsck_rc -y 1
check "nblocks: then clean" fsck_rc -n 0
check "nblocks: then avfsd mounts" mounts

# 3. damage fsck -n reports (a link count, committed home): avfsd mounted it unchecked
fresh
check "home: root nlink edited" "$IMGEDIT" "$IMG" inode / nlink 7
check "nlink: fsck -n finds it (exit 4)" fsck_rc -n 4
check "nlink: avfsd refuses, points at fsck -y" refused
check "nlink: fsck -y repairs (exit 1)" fsck_rc -y 1
check "nlink: then avfsd mounts" mounts
avfs_summary
