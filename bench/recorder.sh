#!/bin/bash
# recorder.sh — a real recorder and real players on one emulated disk (issue 16, Done when 1
# and 2): K cameras (Debian's ffmpeg, one prepared H.264 file stream-copied at native rate with
# -re into 10 s segments, one directory per camera) or K players (examples/rdrt at a fixed
# rate), beside a greedy best-effort reader (dd iflag=direct of a big file) and a copier
# (cp -r of a tree), on ext4 with mq-deadline or bfq and on avfsd over hddemu. Per
# configuration the largest K with no late segment (no late read), by doubling then bisection.
# A benchmark, not a test: it judges nothing. Run as root. --smoke: a tiny run for CI.
#
# usage: recorder.sh [--mode record|play|both] [--load reader,copier|reader|copier|none]
#          [--configs ext4-mq-deadline,ext4-bfq,avfsd,avfsd-reserved]
#          [--model avfs-250g] [--size BYTES] [--duration 30] [--segment 10] [--rate 6M]
#          [--slack 500] [--k-start 4] [--k-max 32] [--tree-size 2G] [--be-size 4G]
#          [--play-io 256K] [--buffer 8M] [--dirty 400M|none] [--no-search --k N] [--json]
#          [--out FILE] [--keep] [--smoke]
# --load: the best-effort programs beside them (default both; one or none shows what a
# configuration does without). --rate: each camera's and each player's bits/s (K/M = 10^3/10^6).
# --slack MS: a segment is late when one open, write or close of its file took longer (a live
# camera's frames wait in a socket buffer of about that much time); a read is late when it
# completed more than MS after its due time (a player's buffer of MS). --duration: seconds per
# trial (cameras record that long, started --segment/10 s apart at most); --no-search --k N:
# one trial of N. --dirty: ext4's dirty page cache for the loop device, capped (its BDI's
# max_bytes with strict_limit, restored after; none: the kernel's limits, which a trial of
# seconds on a machine with much memory never reaches). Details and results: docs/RECORDER.md.
# avfsd-reserved: avfs-admin reserve DIR --rate R --buffer B --write per camera directory and
# FILE ... --read per played file; refused (and reported so) where the daemon refuses them.
# Real-time parts (ffmpeg, rdrt) run under chrt -f 10. Writes are timed inside ffmpeg by
# bench/wlat.so (LD_PRELOAD; WLAT).
# env: HDDEMU HDDEMU_ATTACH AVFSD MKFS ADMIN RDRT WLAT FFMPEG (default: ../build, ../tools,
# ffmpeg on PATH); work under /var/tmp.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH_NAME=recorder
. "$HERE/benchlib.sh"
tool_paths HDDEMU=../build/tools/hddemu HDDEMU_ATTACH=../tools/hddemu-attach \
	AVFSD=../build/daemon/avfsd MKFS=../build/tools/mkfs.avfs ADMIN=../build/tools/avfs-admin \
	RDRT=../build/examples/rdrt WLAT=../build/bench/wlat.so
FFMPEG=${FFMPEG:-$(command -v ffmpeg || echo ffmpeg)}

MODE=both
LOAD=reader,copier
DIRTY=400M
CONFIGS=ext4-mq-deadline,ext4-bfq,avfsd,avfsd-reserved
MODEL=avfs-250g
SIZE=
DURATION=30
SEGMENT=10
RATE=6M
SLACK=500
K_START=4
K_MAX=32
K=
TREE_SIZE=2G
BE_SIZE=4G
PLAY_IO=256K
BUFFER=8M
SEARCH=1
JSON=0
OUT=
KEEP=0
TRACE=0
SMOKE=0
SRC_W=1280 SRC_H=720 SRC_S=20	# the prepared camera file: size and seconds
GRACE=10	# seconds a camera or player may run past the trial's end before it is stopped
STOP_WAIT=5	# seconds from its SIGINT to its SIGKILL

bad() { echo "recorder: $*" >&2; exit 2; }
VALUE_OPTS="--mode --load --dirty --configs --model --size --duration --segment --rate --slack
	--k-start --k-max --k --tree-size --be-size --play-io --buffer --out"
while [ $# -gt 0 ]; do
	case $1 in
	--no-search) SEARCH=0 ;;
	--json) JSON=1 ;;
	--keep) KEEP=1 ;;
	--smoke)	# CI: a small disk, one short trial of 2 cameras and 2 players, two configurations
		SMOKE=1; MODEL=avfs-250g; SIZE=4G; RATE=2M; DURATION=3; SEGMENT=1; SEARCH=0; K=2
		TREE_SIZE=64M; BE_SIZE=64M; CONFIGS=ext4-mq-deadline,avfsd
		SRC_W=160 SRC_H=120 SRC_S=2 GRACE=1 STOP_WAIT=2 ;;
	-h|--help) usage; exit 0 ;;
	*) value_opt "$@" || bad "unknown argument $1 (--help)"; shift ;;
	esac
	shift
done

# ---- arguments ----
case $MODE in record|play|both) ;; *) bad "--mode: record, play or both" ;; esac
case ,$LOAD, in ,none,) LOAD_READER=0; LOAD_COPIER=0 ;; *)
	[[ ,$LOAD, =~ ^(,(reader|copier))+,$ ]] || bad "--load: reader,copier, one of them, or none"
	LOAD_READER=0; LOAD_COPIER=0
	[[ ,$LOAD, = *,reader,* ]] && LOAD_READER=1
	[[ ,$LOAD, = *,copier,* ]] && LOAD_COPIER=1 ;;
esac
positive "$DURATION" || bad "--duration: positive seconds"
[[ $SEGMENT =~ ^[0-9]+$ ]] && [ "$SEGMENT" -ge 1 ] || bad "--segment: whole seconds, at least 1"
RATE_BPS=$(awk -v r="$RATE" 'BEGIN { m = 1; u = substr(r, length(r))
	if (u == "K" || u == "k") m = 1e3; else if (u == "M") m = 1e6
	if (m > 1) r = substr(r, 1, length(r) - 1)
	if (r !~ /^[0-9]+(\.[0-9]+)?$/ || r * m < 100e3 || r * m > 100e6) exit 1
	printf "%.0f", r * m }') || bad "--rate: bits per second from 100K to 100M, e.g. 6M"
positive "$SLACK" || bad "--slack: positive milliseconds"
for v in K_START K_MAX; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] && [ "${!v}" -le 256 ] ||
		bad "--${v,,}: a count from 1 to 256" 
done
[ "$K_START" -le "$K_MAX" ] || bad "--k-start above --k-max"
if [ "$SEARCH" = 0 ]; then
	[ -n "$K" ] || bad "--no-search needs --k N"
	[[ $K =~ ^[0-9]+$ ]] && [ "$K" -ge 1 ] && [ "$K" -le 256 ] || bad "--k: a count from 1 to 256"
	K_MAX=$K
elif [ -n "$K" ]; then
	bad "--k goes with --no-search"
fi
TREE_BYTES=$(bytes_of "$TREE_SIZE") && [ "$TREE_BYTES" -ge $((16 << 20)) ] ||
	bad "--tree-size: at least 16M"
BE_BYTES=$(bytes_of "$BE_SIZE") && [ "$BE_BYTES" -ge $((16 << 20)) ] ||
	bad "--be-size: at least 16M"
BE_BYTES=$(((BE_BYTES + (4 << 20) - 1) >> 22 << 22))
PLAY_IO_B=$(bytes_of "$PLAY_IO") && [ "$PLAY_IO_B" -ge 4096 ] && [ $((PLAY_IO_B % 4096)) = 0 ] &&
	[ "$PLAY_IO_B" -le $((16 << 20)) ] || bad "--play-io: a multiple of 4096 up to 16M"
bytes_of "$BUFFER" >/dev/null || bad "--buffer: a size, e.g. 8M"
if [ "$DIRTY" != none ]; then
	DIRTY_BYTES=$(bytes_of "$DIRTY") && [ "$DIRTY_BYTES" -ge $((1 << 20)) ] ||
		bad "--dirty: a size of at least 1M, or none"
fi
if [ -n "$SIZE" ]; then
	SIZE_BYTES=$(bytes_of "$SIZE") || bad "--size: bytes, K/M/G/T"
fi
[ -n "$OUT" ] && OUT=$(realpath -m "$OUT")
configs_of "$CONFIGS" "ext4-(mq-deadline|bfq|kyber|none)|avfsd(-reserved)?" \
	"ext4-SCHED, avfsd or avfsd-reserved"
# a played file: the longest trial at the rate, in whole 4 MiB
PLAY_BYTES=$(awk -v r="$RATE_BPS" -v d="$DURATION" 'BEGIN {
	b = r / 8 * (d + 5); printf "%.0f", (int(b / 4194304) + 1) * 4194304 }')

# ---- facilities ----
need_facilities losetup fusermount3 mkfs.ext4 python3 mount umount dd cp chrt stdbuf "$FFMPEG"
need_built "$HDDEMU" "$HDDEMU_ATTACH" "$RDRT" "$WLAT"
case $CONFIGS in *avfsd*) need_built "$AVFSD" "$MKFS" "$ADMIN" ;; esac

BENCH_RESTORE=dirty_restore
. "$HERE/hddlib.sh"	# the work directory, cleanup and fail, disk_start, fs_make, teardown, ...
SRC=$W/camera.mp4

# ext4's dirty pages of the loop device, capped for the configuration (--dirty)
BDI=
BDI_RATIO=
dirty_cap() {
	[ "$DIRTY" = none ] && return 0
	BDI=/sys/block/${LOOP#/dev/}/bdi
	BDI_RATIO=$(cat "$BDI/max_ratio") || { fail "no $BDI/max_ratio"; return 1; }
	{ echo "$DIRTY_BYTES" >"$BDI/max_bytes" && echo 1 >"$BDI/strict_limit"; } 2>>"$LOG" ||
		{ dirty_restore; fail "cannot cap $BDI's dirty bytes (max_bytes, strict_limit)"; return 1; }
	echo "dirty pages of $LOOP capped: $BDI max_bytes $(cat "$BDI/max_bytes"), strict_limit 1" \
		>>"$LOG"
}
dirty_restore() {	# the loop device outlives the run: its limits as they were
	[ -n "$BDI" ] || return 0
	echo "$BDI_RATIO" >"$BDI/max_ratio" 2>/dev/null
	echo 0 >"$BDI/strict_limit" 2>/dev/null
	BDI=
}

# ---- the camera's file: encoded once, stream-copied by every camera ----
# CBR (x264's nal-hrd with filler) so that the file carries --rate whatever the picture
LOG=$W/prepare.log
say "encoding ${SRC_S}s of testsrc2 ${SRC_W}x${SRC_H} at $RATE_BPS bit/s (libx264 ultrafast, CBR)"
nice -n 19 "$FFMPEG" -hide_banner -nostdin -loglevel error -y -f lavfi \
	-i "testsrc2=size=${SRC_W}x${SRC_H}:rate=25" -t "$SRC_S" -c:v libx264 -preset ultrafast \
	-x264-params nal-hrd=cbr -b:v "$RATE_BPS" -minrate "$RATE_BPS" -maxrate "$RATE_BPS" \
	-bufsize $((RATE_BPS / 2)) -g 25 -pix_fmt yuv420p "$SRC" 2>>"$LOG" ||
	{ echo "recorder: ffmpeg could not encode the camera's file:" >&2; tail -5 "$LOG" >&2; exit 1; }

# ---- the configuration's files (fast mode) ----
populate() {	# the BE reader's file, the copier's tree, the players' files
	local i n
	say "$CUR: writing the BE file ($BE_BYTES bytes), the tree ($TREE_BYTES bytes in 64 MiB" \
		"files) and $([ "$MODE" = record ] && echo 0 || echo "$K_MAX") play files of $PLAY_BYTES bytes"
	write_zeros "$FMNT/be.dat" "$BE_BYTES" || return 1
	mkdir -p "$FMNT/tree/a" "$FMNT/tree/b" || { fail "mkdir of the tree failed"; return 1; }
	n=$(((TREE_BYTES + (64 << 20) - 1) >> 26))
	for ((i = 0; i < n; i++)); do
		write_zeros "$FMNT/tree/$([ $((i % 2)) = 0 ] && echo a || echo b)/f$i" $((64 << 20)) ||
			return 1
	done
	if [ "$MODE" != record ]; then
		mkdir -p "$FMNT/play"
		for ((i = 0; i < K_MAX; i++)); do
			write_zeros "$FMNT/play/p$i" "$PLAY_BYTES" || return 1
		done
	fi
	sync
}

# ---- the best-effort load: a greedy reader and a copier, until stop_load ----
start_load() {	# start_load OUT: dd of be.dat (wrapping) and cp -r of the tree (--load)
	local out=$1
	(
		[ "$LOAD_READER" = 1 ] || exec sleep 1d
		trap 'exit 0' TERM
		while :; do
			dd if="$FMNT/be.dat" of=/dev/null bs=1M iflag=direct 2>>"$out.reader" || exit 1
		done
	) &
	BE_PID=$!
	rm -rf "$FMNT/copy"
	mkdir -p "$FMNT/copy"
	(
		[ "$LOAD_COPIER" = 1 ] || exec sleep 1d
		# cp in the background and waited for: a TERM ends the wait at once and the trap
		# stops the cp under way (a foreground cp would hold the trap off until it ended,
		# and one started just after stop_load's SIGINT outlived the loop, writing into
		# copy/ while the next trial removed it)
		trap 'kill -INT $cp 2>/dev/null; wait $cp; exit 0' TERM
		i=0
		while :; do
			cp -r "$FMNT/tree" "$FMNT/copy/$i" 2>>"$LOG" &
			cp=$!
			wait $cp || exit 1
			i=$((i + 1))
		done
	) &
	KIDS+=("$!")
	date +%s.%N >"$out.load_t0"
}

stop_load() {	# stop_load OUT: stop both, hddemu's statistics, back to fast mode; OUT.load:
		# reader_bytes copier_bytes seconds
	local out=$1 t1 rb cb
	t1=$(date +%s.%N)
	# dd prints its count when interrupted; the loop's earlier rounds printed theirs
	pkill -INT -P "$BE_PID" -x dd 2>/dev/null
	kill_wait "$BE_PID"; BE_PID=
	pkill -INT -P "${KIDS[0]}" -x cp 2>/dev/null
	kill_wait "${KIDS[0]}"
	KIDS=()
	hdd_stats "$out.hdd"
	fast 1
	rb=$(awk '/bytes .* copied/ { s += $1 } END { printf "%.0f", s }' "$out.reader" 2>/dev/null)
	cb=$(du -sb "$FMNT/copy" 2>/dev/null | awk '{ print $1 }')
	echo "${rb:-0} ${cb:-0} $(awk -v a="$(cat "$out.load_t0")" -v b="$t1" \
		'BEGIN { printf "%.3f", b - a }')" >"$out.load"
}

# ---- one trial ----
# wait_all EXITS PID...: each program's "I STATUS" into EXITS once all have exited; one still
# running GRACE s after the trial's end is late whatever it measured: SIGINT (ffmpeg finishes
# its file and wlat.so writes its calls), SIGKILL STOP_WAIT s later (status 124: timed out)
wait_all() {
	local exits=$1 i end p rc late=()
	shift
	end=$(($(date +%s) + ${DURATION%.*} + GRACE + 1))
	for p in "$@"; do
		while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.2; done
	done
	for p in "$@"; do kill -0 "$p" 2>/dev/null && { late+=("$p"); kill -INT "$p"; }; done
	end=$(($(date +%s) + STOP_WAIT))
	for p in "${late[@]}"; do
		while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.2; done
		kill -KILL "$p" 2>/dev/null
	done
	i=0
	for p in "$@"; do
		wait "$p" 2>/dev/null
		rc=$?
		if [[ " ${late[*]} " = *" $p "* ]]; then
			echo "$CUR: program $i of $exits still running ${GRACE}s after the trial" >>"$LOG"
			rc=124
		fi
		echo "$i $rc" >>"$exits"
		i=$((i + 1))
	done
}

RESV=()	# the reservations of the trial in progress (avfsd-reserved)
reserve() {	# reserve PATH --read|--write: avfs-admin reserve; a refusal in
		# $RES/$CUR/MODE.refused
	local o
	o=$(timeout 30 "$ADMIN" --socket "$SOCK" reserve "$1" --rate "$((RATE_BPS / 8))" \
		--buffer "$BUFFER" "$2" 2>&1) && {
		RESV+=("$(sed -n 's/^reservation \([0-9]*\):.*/\1/p' <<<"$o")")
		return 0
	}
	echo "avfs-admin reserve $1 --rate $((RATE_BPS / 8)) --buffer $BUFFER $2: $o" \
		>"$RES/$CUR/$MODE_NOW.refused"
	say "$CUR: refused: $o"
	return 1
}

release_all() {
	local id
	for id in "${RESV[@]}"; do
		[ -n "$id" ] && timeout 30 "$ADMIN" --socket "$SOCK" release "$id" >>"$LOG" 2>&1
	done
	RESV=()
}

prepare_trial() {	# in fast mode: empty the cameras' and the copier's directories
	fast 1
	rm -rf "$FMNT/cams" "$FMNT/copy"
	sync
	[ "$FS_KIND" = ext4 ] && echo 3 >/proc/sys/vm/drop_caches
	return 0
}

record_trial() {	# record_trial K OUT: K cameras for DURATION s beside the load
	local k=$1 out=$2 i pids=() stagger
	prepare_trial
	mkdir -p "$out.wlat"
	for ((i = 0; i < k; i++)); do
		mkdir -p "$FMNT/cams/c$i"
		if [ "$CUR" = avfsd-reserved ]; then
			reserve "$FMNT/cams/c$i" --write || { release_all; return 2; }
		fi
	done
	fast 0 && echo reset >"$HMNT/stats" || { fail "cannot switch hddemu to real time"; return 1; }
	start_load "$out"
	stagger=$(awk -v s="$SEGMENT" -v k="$k" 'BEGIN { printf "%.3f", s / 10 / k }')
	for ((i = 0; i < k; i++)); do
		WLAT_DIR=$out.wlat WLAT_PREFIX=$FMNT/cams/ LD_PRELOAD=$WLAT \
			chrt -f 10 "$FFMPEG" -hide_banner -nostdin -loglevel warning -re \
			-stream_loop -1 -i "$SRC" -map 0 -c copy -t "$DURATION" -f segment \
			-segment_time "$SEGMENT" -reset_timestamps 1 -segment_list_type csv \
			-segment_list "$FMNT/cams/c$i/list.csv" "$FMNT/cams/c$i/seg-%05d.mp4" \
			>/dev/null 2>"$out.ffmpeg$i.log" &
		pids+=("$!")
		KIDS+=("$!")
		sleep "$stagger"
	done
	wait_all "$out.exit" "${pids[@]}"
	KIDS=("${KIDS[0]}")	# the copier
	stop_load "$out"
	release_all
	return 0
}

play_trial() {	# play_trial K OUT: K players of rdrt for DURATION s beside the load
	local k=$1 out=$2 i pids=()
	prepare_trial
	if [ "$CUR" = avfsd-reserved ]; then
		for ((i = 0; i < k; i++)); do
			reserve "$FMNT/play/p$i" --read || { release_all; return 2; }
		done
	fi
	fast 0 && echo reset >"$HMNT/stats" || { fail "cannot switch hddemu to real time"; return 1; }
	start_load "$out"
	for ((i = 0; i < k; i++)); do
		# line-buffered: a player stopped late keeps the reads it logged (stdbuf preloads
		# a library, which a sanitized rdrt accepts only when told)
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
			chrt -f 10 stdbuf -oL "$RDRT" --mode posix --rate "$((RATE_BPS / 8))" \
			--io "$PLAY_IO_B" --duration "$DURATION" "$FMNT/play/p$i" \
			>"$out.rdrt$i" 2>>"$LOG" &
		pids+=("$!")
		KIDS+=("$!")
	done
	wait_all "$out.exit" "${pids[@]}"
	KIDS=("${KIDS[0]}")
	stop_load "$out"
	release_all
	return 0
}

# judge OUT: "ok" or "late" (and the figures in OUT.json), by bench/recorder_judge.py
judge() {
	python3 "$HERE/recorder_judge.py" "$1" --slack "$SLACK" --segment "$SEGMENT" \
		--duration "$DURATION" >"$1.json" 2>>"$LOG" || { echo error; return; }
	python3 -c 'import json, sys; print("ok" if json.load(open(sys.argv[1]))["ok"] else "late")' \
		"$1.json"
}

# search MODE: the largest K with no late segment (read), doubling from K_START, then bisection;
# one line per trial in $RES/$CUR/MODE.trials, the answer in $RES/$CUR/MODE.result
search() {
	local mode=$1 lo=0 hi= n t rc v
	MODE_NOW=$mode
	: >"$RES/$CUR/$mode.trials"
	try() {
		t=$RES/$CUR/$mode-k$1
		say "$CUR: $mode: K=$1 for ${DURATION}s"
		if [ "$mode" = record ]; then record_trial "$1" "$t"; else play_trial "$1" "$t"; fi
		rc=$?
		[ $rc = 2 ] && return 2	# refused: the search ends without a result
		alive || return 3
		v=$(judge "$t")
		echo "$1 $v" >>"$RES/$CUR/$mode.trials"
		say "$CUR: $mode: K=$1: $v"
		[ "$v" = ok ]
	}
	if [ "$SEARCH" = 0 ]; then
		try "$K_MAX"
		rc=$?
		[ $rc = 2 ] && return 0
		[ $rc -ge 2 ] && return 1
		[ $rc = 0 ] && lo=$K_MAX || hi=$K_MAX
	else
		n=$K_START
		while [ -z "$hi" ]; do
			try "$n"
			rc=$?
			[ $rc = 2 ] && return 0
			[ $rc -ge 2 ] && return 1
			if [ $rc = 0 ]; then
				lo=$n
				[ "$n" -ge "$K_MAX" ] && break
				n=$((n * 2 > K_MAX ? K_MAX : n * 2))
			else
				hi=$n
			fi
		done
		while [ -n "$hi" ] && [ $((hi - lo)) -gt 1 ]; do
			n=$(((lo + hi) / 2))
			try "$n"
			rc=$?
			[ $rc = 2 ] && return 0
			[ $rc -ge 2 ] && return 1
			if [ $rc = 0 ]; then lo=$n; else hi=$n; fi
		done
	fi
	echo "$lo ${hi:-}" >"$RES/$CUR/$mode.result"
}

one_config() {
	local kind sched
	kind=${CUR%%-*}
	sched=${CUR#*-}
	[ "$kind" = avfsd ] && sched=none
	config_start "$kind" "$sched" || return 1
	populate || return 1
	if [ "$kind" = ext4 ]; then dirty_cap || return 1; fi
	if [ "$MODE" != play ]; then search record || return 1; fi
	if [ "$MODE" != record ]; then search play || return 1; fi
	say "$CUR: done"
}

python3 - "$W/params.json" <<EOF
import json, sys
json.dump({"model": "$MODEL", "size_bytes": ${SIZE_BYTES:-None}, "mode": "$MODE",
           "rate_bps": $RATE_BPS, "duration_s": $DURATION, "segment_s": $SEGMENT,
           "slack_ms": $SLACK, "k_start": $K_START, "k_max": $K_MAX, "search": bool($SEARCH),
           "tree_bytes": $TREE_BYTES, "be_bytes": $BE_BYTES, "play_io": $PLAY_IO_B,
           "buffer": "$BUFFER", "load": "$LOAD", "dirty": "$DIRTY",
           "configs": "$CONFIGS".split(","),
           "camera_file": "${SRC_S}s testsrc2 ${SRC_W}x${SRC_H} libx264 CBR"},
          open(sys.argv[1], "w"))
EOF

for CUR in "${CFG[@]}"; do
	one_config
	dirty_restore
	teardown
done

python3 "$HERE/recorder_report.py" "$W" "$JSON" "$OUT" ||
	{ echo "recorder: the report failed" >&2; FAILED_ANY=1; exit 1; }
[ -z "${FAILED_ANY:-}" ] || exit 1
exit 0
