# daemon_env.sh — sourced by the daemon's shell tests and bench/io-cost.sh: a temporary image
# under /var/tmp, avfsd in the foreground on a private socket, a bounded wait for the mount,
# ok/FAIL bookkeeping (checks.sh) and a cleanup that always runs. It runs no check itself.
# Binaries come from the environment (AVFSD, MKFS, FSCK), else from ../build next to this file.
# Needs bash. Exits 77 (meson: SKIP) when root, /dev/fuse or fusermount3 is missing.

AVFS_ENV_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$AVFS_ENV_DIR/checks.sh"
: "${AVFSD:=$AVFS_ENV_DIR/../build/daemon/avfsd}"
: "${MKFS:=$AVFS_ENV_DIR/../build/tools/mkfs.avfs}"
: "${FSCK:=$AVFS_ENV_DIR/../build/tools/fsck.avfs}"
# absolute: the tests change directory into the mount
AVFSD=$(realpath -m "$AVFSD")
MKFS=$(realpath -m "$MKFS")
FSCK=$(realpath -m "$FSCK")

avfs_require() {	# the facilities every daemon test needs
	[ "$(id -u)" = 0 ] || avfs_skip "needs root (FUSE mount, other uids)"
	[ -c /dev/fuse ] || avfs_skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || avfs_skip "no fusermount3"
	local b
	for b in "$AVFSD" "$MKFS" "$FSCK"; do
		[ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }
	done
}

# ---- the environment ----
AVFS_T=
AVFS_PID=
avfs_env_init() {	# a temp dir holding img, mnt, sock, log; cleanup trapped
	AVFS_T=$(mktemp -d /var/tmp/avfs-daemon-XXXXXX) || exit 1
	chmod 755 "$AVFS_T"	# other uids must reach the mount point (permission checks)
	IMG=$AVFS_T/img
	MNT=$AVFS_T/mnt
	SOCK=$AVFS_T/sock
	LOG=$AVFS_T/avfsd.log
	mkdir "$MNT"
	trap avfs_cleanup EXIT
	trap 'exit 130' INT TERM
}

avfs_mounted() {
	grep -q " $MNT fuse" /proc/mounts
}

avfs_mkfs() {	# avfs_mkfs [MKFS ARGS...] (default: 2G, 1M blocks)
	if [ $# = 0 ]; then
		set -- --size 2G --block-size 1M
	fi
	timeout 60 "$MKFS" "$@" "$IMG" >/dev/null
}

avfs_start() {	# avfs_start [AVFSD ARGS...]: start avfsd, wait (<= 10 s) for the mount
	local i
	timeout --signal=KILL 900 "$AVFSD" --foreground --socket "$SOCK" "$@" "$IMG" "$MNT" \
		>>"$LOG" 2>&1 &
	AVFS_PID=$!
	for i in $(seq 200); do
		avfs_mounted && return 0
		kill -0 "$AVFS_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "avfsd did not mount $MNT; its log:"
	cat "$LOG"
	return 1
}

avfs_wait_exit() {	# avfs_wait_exit SECONDS: wait for avfsd; its exit status, 124 on timeout
	local i rc
	for i in $(seq $(($1 * 20))); do
		kill -0 "$AVFS_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$AVFS_PID" 2>/dev/null; then
		return 124
	fi
	wait "$AVFS_PID"
	rc=$?
	AVFS_PID=
	return $rc
}

avfs_stop() {	# clean unmount: fusermount3 -u, then avfsd must exit 0 within 30 s
	local rc
	[ -n "$AVFS_PID" ] || return 1
	timeout 30 fusermount3 -u "$MNT" || return 1
	avfs_wait_exit 30
	rc=$?
	[ $rc = 0 ] || echo "avfsd exit status $rc after unmount"
	return $rc
}

avfs_kill9() {	# crash: SIGKILL avfsd, then drop the dead connection's mount
	[ -n "$AVFS_PID" ] || return 1
	# the pid is timeout's; its child is avfsd
	pkill -KILL -P "$AVFS_PID" 2>/dev/null
	avfs_wait_exit 10
	timeout 10 fusermount3 -u -z "$MNT" 2>/dev/null
	! avfs_mounted
}

avfs_sum() {	# avfs_sum FILE_OR_DEVICE: a checksum of the contents; an image's holes are
	# skipped (SEEK_DATA), so a sparse 2 GiB image takes milliseconds, not the 10 s md5sum
	# spends reading its zeros. A byte written anywhere, even a zero into a hole, changes it.
	python3 - "$1" <<'PY'
import errno, hashlib, os, sys
h = hashlib.md5()
fd = os.open(sys.argv[1], os.O_RDONLY)
end = os.lseek(fd, 0, os.SEEK_END)
h.update(b"size %d;" % end)


def take(off, stop):
    h.update(b"data %d;" % off)
    os.lseek(fd, off, os.SEEK_SET)
    while off < stop:
        b = os.read(fd, min(1 << 22, stop - off))
        if not b:
            break
        h.update(b)
        off += len(b)


off = 0
while off < end:
    try:
        off = os.lseek(fd, off, os.SEEK_DATA)
    except OSError as e:
        if e.errno == errno.EINVAL and off == 0:    # a device: no holes to skip
            take(0, end)
        break                                       # ENXIO: no data after off
    stop = os.lseek(fd, off, os.SEEK_HOLE)
    take(off, stop)
    off = stop
print(h.hexdigest())
PY
}

avfs_abort_fuse() {	# a stuck connection: abort it through fusectl, if mounted
	local dev
	dev=$(stat -c %d "$MNT" 2>/dev/null) || return 0
	[ -w "/sys/fs/fuse/connections/$dev/abort" ] && echo 1 >"/sys/fs/fuse/connections/$dev/abort"
	return 0
}

avfs_cleanup() {
	local rc=$?
	if [ -n "$AVFS_T" ]; then
		if avfs_mounted; then
			timeout 10 fusermount3 -u "$MNT" 2>/dev/null ||
				{ timeout 5 fusermount3 -u -z "$MNT" 2>/dev/null; }
		fi
		if [ -n "$AVFS_PID" ] && kill -0 "$AVFS_PID" 2>/dev/null; then
			kill -TERM "$AVFS_PID" 2>/dev/null
			pkill -TERM -P "$AVFS_PID" 2>/dev/null
			sleep 1
			pkill -KILL -P "$AVFS_PID" 2>/dev/null
			kill -KILL "$AVFS_PID" 2>/dev/null
			wait "$AVFS_PID" 2>/dev/null
		fi
		avfs_mounted && timeout 5 fusermount3 -u -z "$MNT" 2>/dev/null
		rm -rf "$AVFS_T"
	fi
	exit $rc
}
