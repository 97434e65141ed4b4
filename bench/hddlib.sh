# hddlib.sh — sourced by the benchmarks that compare file systems on one hddemu disk
# (peer-compare.sh, recorder.sh, reserve-rt.sh): the work directory under /var/tmp and its
# cleanup on exit, a configuration's emulated disk on a loop device, ext4 or avfsd made and
# mounted on it and filled, bounded commands, and the teardown that undoes it all in reverse. It
# measures nothing. Source it after benchlib.sh and the checks of the arguments, with these set:
# BENCH_NAME (messages, the work directory's name), MODEL, SIZE and SIZE_BYTES, TRACE, KEEP, the
# tools HDDEMU HDDEMU_ATTACH AVFSD MKFS, and optionally AVFSD_ARGS (avfsd's extra options) and
# BENCH_RESTORE (a command cleanup runs before the teardown). It sets W (work directory), HMNT
# (hddemu's mount), FMNT (the file system's), IMG (backing file), SOCK (avfsd's socket) and RES
# (results, a directory per configuration); while a configuration runs the sourcing script sets
# CUR (its name) and LOG.

T0=$(date +%s)
say() { printf '%s [%4ds] %s\n' "$BENCH_NAME" $(($(date +%s) - T0)) "$*" >&2; }

W=$(mktemp -d "/var/tmp/$BENCH_NAME-XXXXXX") || exit 1
HMNT=$W/hdd	# hddemu's mount: disk, fast, stats
FMNT=$W/fs	# the file system under test
IMG=$W/backing.img
SOCK=$W/avfsd.sock
RES=$W/results
mkdir "$HMNT" "$FMNT" "$RES"
chmod 755 "$W"

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	${BENCH_RESTORE:-:}
	teardown
	if mounted "$FMNT" || mounted "$HMNT"; then	# never rm -r into a mount
		echo "$BENCH_NAME: could not unmount everything; left $W as it is" >&2
	elif [ "$KEEP" = 1 ] || [ -n "${FAILED_ANY:-}" ]; then
		echo "$BENCH_NAME: logs kept in $W" >&2
	else
		rm -rf "$W"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'echo "$BENCH_NAME: interrupted" >&2; exit 130' INT TERM HUP

fail() {	# fail MSG: this configuration failed; the log's end on stderr
	echo "$*" >"$RES/$CUR/error"
	say "$CUR: FAILED: $*"
	[ -s "$LOG" ] && tail -n 15 "$LOG" | sed 's/^/    /' >&2
	FAILED_ANY=1
	return 1
}

# ---- state of the configuration in progress; teardown undoes it in reverse ----
HDD_PID=
LOOP=
FS_KIND=	# ext4 or avfsd once mounted
AVFSD_PID=
CHILD=		# a bounded command in progress (dvr, mkfs, fill, ...)
BE_PID=		# the best-effort load
KIDS=()		# more children of the measurement (the sourcing script's)
LOG=
WARN=$W/warnings
: >"$WARN"


# run LIMIT OUT CMD...: CMD under `timeout` in the background, stdout appended to OUT, stderr
# to the log, waited for, so that Ctrl-C reaches the trap at once (a foreground child would
# defer it; a redirection of run itself would swallow the trap's messages). Its status; 124
# when it timed out.
run() {
	local limit=$1 out=$2 rc
	shift 2
	timeout -k 10 "$limit" "$@" >>"$out" 2>>"$LOG" &
	CHILD=$!
	wait "$CHILD"
	rc=$?
	CHILD=
	[ $rc = 124 ] && echo "$BENCH_NAME: timed out after ${limit}s: $*" >>"$LOG"
	return $rc
}

fast() {	# fast 1|0: hddemu without delays (model state still advances) or in real time
	echo "$1" >"$HMNT/fast"
}

teardown() {	# undo the configuration in progress; safe to call at any stage, twice
	[ -n "$BE_PID" ] && { kill_wait "$BE_PID"; BE_PID=; }
	for p in "${KIDS[@]}"; do kill_wait "$p"; done
	KIDS=()
	[ -n "$CHILD" ] && { kill_wait "$CHILD"; CHILD=; }
	[ -n "$HDD_PID" ] && [ -w "$HMNT/fast" ] && fast 1 2>/dev/null	# drain quickly
	if [ "$FS_KIND" = avfsd ] || [ -n "$AVFSD_PID" ]; then
		fuse_stop "$FMNT" "$AVFSD_PID" 60 ||
			echo "$CUR: avfsd exit status $? after unmount (see $LOG)" >>"$WARN"
		AVFSD_PID=
	elif mounted "$FMNT"; then	# ext4, or a mount that timed out half way
		timeout 120 umount "$FMNT" 2>>"$LOG" || {
			echo "$CUR: umount of ext4 timed out or failed; aborting hddemu's connection" >>"$WARN"
			fuse_abort "$HMNT"
			timeout 30 umount "$FMNT" 2>/dev/null || umount -l "$FMNT" 2>/dev/null
		}
	fi
	FS_KIND=
	if [ -n "$LOOP" ]; then
		timeout 60 "$HDDEMU_ATTACH" --detach "$LOOP" >>"$LOG" 2>&1 ||
			timeout 30 losetup -d "$LOOP" 2>>"$LOG"
		LOOP=
	fi
	if [ -n "$HDD_PID" ]; then
		fuse_stop "$HMNT" "$HDD_PID" 30 ||
			echo "$CUR: hddemu exit status $? after unmount (see $LOG)" >>"$WARN"
		HDD_PID=
	fi
	[ "$KEEP" = 1 ] || rm -f "$IMG"
}

config_start() {	# config_start KIND SCHED: $CUR's results directory and LOG, a fresh disk
			# with the loop scheduler SCHED, the file system KIND (ext4, avfsd) on it
	mkdir -p "$RES/$CUR"
	LOG=$W/$CUR.log
	: >"$LOG"
	say "$CUR: hddemu $MODEL, loop scheduler $2, $1"
	disk_start "$2" && fs_make "$1"
}

# ---- the disk ----
disk_start() {	# a fresh sparse backing file, hddemu on it, in fast mode, on a loop device
	local sched=$1 out
	rm -f "$IMG"
	"$HDDEMU" --model "$MODEL" --backing "$IMG" ${SIZE:+--size "$SIZE_BYTES"} \
		$([ "$TRACE" = 1 ] && echo "--trace $W/$CUR.trace.csv") --foreground "$HMNT" \
		>>"$W/$CUR.hddemu.log" 2>&1 &
	HDD_PID=$!
	if ! wait_mounted "$HMNT" "$HMNT/disk" "$HDD_PID"; then
		cat "$W/$CUR.hddemu.log" >>"$LOG"
		fail "hddemu did not mount $HMNT/disk within 10 s"
		return 1
	fi
	fast 1 || { fail "cannot switch hddemu to fast mode"; return 1; }
	out=$(timeout 60 "$HDDEMU_ATTACH" "$HMNT" --scheduler "$sched" 2>>"$LOG") ||
		{ fail "hddemu-attach failed"; return 1; }
	LOOP=$(printf '%s\n' "$out" | grep -o '/dev/loop[0-9]*' | tail -n1)
	[ -b "$LOOP" ] || { LOOP=; fail "hddemu-attach printed no loop device: $out"; return 1; }
	echo "disk: hddemu --model $MODEL${SIZE:+ --size $SIZE_BYTES} on $LOOP," \
		"scheduler $(cat "/sys/block/${LOOP#/dev/}/queue/scheduler")," \
		"$(blockdev --getsize64 "$LOOP") bytes" >>"$LOG"
}

hdd_stats() {	# hdd_stats FILE: hddemu's statistics since the last reset
	cat "$HMNT/stats" >"$1" 2>>"$LOG"
}

# ---- the file systems ----
fs_make() {	# fs_make KIND: make and mount the file system on $LOOP (fast mode)
	if [ "$1" = ext4 ]; then
		# default options; the lazy inode-table initializer would zero tables in the
		# background during the measurement, so it is kept off at mount (noinit_itable)
		run 1800 "$LOG" mkfs.ext4 -F -q "$LOOP" || { fail "mkfs.ext4 failed"; return 1; }
		run 300 "$LOG" mount -t ext4 -o noinit_itable "$LOOP" "$FMNT" ||
			{ fail "mount of ext4 failed"; return 1; }
		FS_KIND=ext4
	else
		# shellcheck disable=SC2086 # several options, split on purpose
		# -f: the scratch disk may hold the last configuration's ext4
		run 1800 "$LOG" "$MKFS" -f --disk-model "$MODEL" ${AVFS_MKFS_ARGS:-} "$LOOP" ||
			{ fail "mkfs.avfs failed"; return 1; }
		rm -f "$SOCK"
		# shellcheck disable=SC2086 # AVFSD_ARGS: several options, split on purpose
		"$AVFSD" --foreground --socket "$SOCK" ${AVFSD_ARGS:-} "$LOOP" "$FMNT" >>"$LOG" 2>&1 &
		AVFSD_PID=$!
		FS_KIND=avfsd
		wait_mounted "$FMNT" "$SOCK" "$AVFSD_PID" 30 && return 0
		fail "avfsd did not mount $FMNT within 30 s"
		return 1
	fi
}

fs_bytes() {	# fs_bytes: "size used" of the mounted file system, bytes
	df -B1 --output=size,used "$FMNT" | tail -n1
}

fill_to() {	# fill_to BYTES: fallocate fill files until BYTES are taken by them (FILLED
		# bytes so far, in NFILL files fill-NNNN: the caller zeroes both first)
	local chunk
	while [ "$FILLED" -lt "$1" ]; do
		chunk=$(($1 - FILLED))
		[ $chunk -gt $((16 << 30)) ] && chunk=$((16 << 30))
		chunk=$(((chunk + (1 << 20) - 1) >> 20 << 20))
		run 600 "$LOG" fallocate -l "$chunk" "$FMNT/fill-$(printf %04d $NFILL)" ||
			{ fail "fallocate of $chunk bytes failed (fill $FILLED of $1)"; return 1; }
		FILLED=$((FILLED + chunk))
		NFILL=$((NFILL + 1))
	done
}

write_zeros() {	# write_zeros FILE BYTES (a multiple of 4 MiB), O_DIRECT, synced
	run 3600 "$LOG" dd if=/dev/zero of="$1" bs=4M count=$(($2 >> 22)) oflag=direct \
		conv=fsync status=none || { fail "writing $1 failed"; return 1; }
}

alive() {	# hddemu (and avfsd) still running
	kill -0 "$HDD_PID" 2>/dev/null || { fail "hddemu died (see $W/$CUR.hddemu.log)"; return 1; }
	[ "$FS_KIND" != avfsd ] || kill -0 "$AVFSD_PID" 2>/dev/null || { fail "avfsd died"; return 1; }
}
