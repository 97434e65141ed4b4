#!/bin/bash
# fuse-speed.sh — the FUSE path's speed against the file system its image lives on (issue 18,
# SPEC §13: sequential reads >= 0.8x, writes >= 0.9x). In one run, interleaved (the order of
# the targets turns each repetition), the same sequential workloads on a file of --size beside
# the image ("host": that file system, O_DIRECT) and on avfsd's mount: dd bs=1M oflag=direct
# (conv=fdatasync) and iflag=direct, fio libaio direct 1 MiB writes (end_fsync) and reads at
# each depth. Prints the medians of --reps in MB/s (10^6 bytes/s), each mount's ratio to the
# host and the spread (max-min)/median as a measure of the noise. A benchmark, not a test: it
# judges nothing. --smoke: 64 MiB, one repetition, depths 1 and 4 (CI).
#
# usage: fuse-speed.sh [--smoke] [--size 4G] [--reps 3] [--depths "1 16"] [--block-size 4M]
#          [--variant NAME=AVFSD[:ARGS]]... [--only dd|fio] [--keep]
# --variant: a mount to measure (default: avfs=$AVFSD), each on its own image; ARGS (white space
# apart) go to that avfsd: two builds or two settings side by side (A/B) in one run.
# env: AVFSD MKFS FSCK (default: ../build); the images and files go under /var/tmp.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/benchlib.sh"
bad() { echo "fuse-speed: $*" >&2; exit 2; }

SIZE=4G
REPS=3
DEPTHS="1 16"
BLOCK_SIZE=4M
ONLY=
SMOKE=0
KEEP=0
VARIANTS=()
VALUE_OPTS="--size --reps --depths --block-size --only"
while [ $# -gt 0 ]; do
	if value_opt "$@"; then
		shift 2
		continue
	fi
	case $1 in
	--smoke) SMOKE=1; SIZE=64M; REPS=1; DEPTHS="1 4" ;;
	--variant) need_arg "$@"; VARIANTS+=("$2"); shift ;;
	--keep) KEEP=1 ;;
	-h|--help) usage; exit 0 ;;
	*) bad "unknown argument $1 (--help)" ;;
	esac
	shift
done
BYTES=$(bytes_of "$SIZE") || bad "--size $SIZE: a size (K/M/G)"
[ "$BYTES" -ge $((4 << 20)) ] && [ $((BYTES % (1 << 20))) = 0 ] ||
	bad "--size $SIZE: whole MiB, at least 4M"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || bad "--reps $REPS: a count"
for d in $DEPTHS; do [[ $d =~ ^[1-9][0-9]*$ ]] || bad "--depths: $d is not a depth"; done
case $ONLY in ""|dd|fio) ;; *) bad "--only $ONLY: dd or fio" ;; esac

. "$HERE/../tests/daemon_env.sh"
avfs_require
HAVE_FIO=0
command -v fio >/dev/null && HAVE_FIO=1
[ "$ONLY" = fio ] && [ "$HAVE_FIO" = 0 ] && bad "--only fio: fio is not installed"
[ ${#VARIANTS[@]} = 0 ] && VARIANTS=("avfs=$AVFSD")
NAMES=()
declare -A BIN ARGS IMGS MNTS SOCKS PIDS
for v in "${VARIANTS[@]}"; do
	n=${v%%=*}
	p=${v#*=}
	[[ $n =~ ^[a-zA-Z0-9_.-]+$ ]] && [ "$n" != host ] && [ "$n" != "$v" ] ||
		bad "--variant $v: NAME=AVFSD[:ARGS], NAME letters and digits, not 'host'"
	[ -z "${BIN[$n]:-}" ] || bad "--variant $n given twice"
	BIN[$n]=$(realpath -m "${p%%:*}")
	ARGS[$n]=
	[ "$p" != "${p%%:*}" ] && ARGS[$n]=${p#*:}
	[ -x "${BIN[$n]}" ] || bad "--variant $n: ${BIN[$n]} is not an executable"
	NAMES+=("$n")
done
avfs_env_init
LOG=$AVFS_T/avfsd.log
HOSTDIR=$AVFS_T/host
mkdir "$HOSTDIR"

stop_all() {
	local n
	for n in "${NAMES[@]}"; do
		[ -n "${PIDS[$n]:-}" ] && fuse_stop "${MNTS[$n]}" "${PIDS[$n]}" 30 >/dev/null
		PIDS[$n]=
	done
}
on_exit() {
	local rc=$?
	stop_all
	if [ "$KEEP" = 1 ]; then
		echo "kept $AVFS_T"
		exit $rc
	fi
	(exit $rc)
	avfs_cleanup	# removes $AVFS_T, exits with $?
}
trap on_exit EXIT
die() { { echo "fuse-speed: $*"; [ -f "$LOG" ] && tail -n 20 "$LOG"; } >&2; exit 1; }

# one image and mount per variant, the image a little larger than the file
IMG_MB=$((BYTES / 1048576 + BYTES / 1048576 / 4 + 1024))
for n in "${NAMES[@]}"; do
	IMGS[$n]=$AVFS_T/img.$n
	MNTS[$n]=$AVFS_T/mnt.$n
	SOCKS[$n]=$AVFS_T/sock.$n
	mkdir "${MNTS[$n]}"
	timeout 60 "$MKFS" --size "${IMG_MB}M" --block-size "$BLOCK_SIZE" "${IMGS[$n]}" \
		>/dev/null || die "mkfs of ${IMGS[$n]} failed"
	# shellcheck disable=SC2086 # ARGS: white space apart
	timeout --signal=KILL 86400 "${BIN[$n]}" --foreground --socket "${SOCKS[$n]}" \
		${ARGS[$n]} "${IMGS[$n]}" "${MNTS[$n]}" >>"$LOG" 2>&1 &
	PIDS[$n]=$!
	wait_mounted "${MNTS[$n]}" "${MNTS[$n]}/." "${PIDS[$n]}" 10 ||
		die "avfsd ($n) did not mount ${MNTS[$n]}"
done

dir_of() { [ "$1" = host ] && echo "$HOSTDIR" || echo "${MNTS[$1]}"; }

# MB/s of dd's summary line ("N bytes (...) copied, S s, ...")
dd_mbps() { awk '/copied/ { for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) s = $(i-1);
	if (s > 0) printf "%.1f", $1 / s / 1e6 }'; }

fio_mbps() {	# fio_mbps JSON read|write
	python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]
print("%.1f" % (j["io_bytes"] / (j["runtime"] / 1000.0) / 1e6) if j["runtime"] else "0")' "$1" "$2"
}

run() {	# run WORKLOAD TARGET: one measurement, MB/s on stdout
	local w=$1 dir out f mode
	dir=$(dir_of "$2")
	case $w in
	dd-write)
		rm -f "$dir/dd"
		out=$(timeout 1800 dd if=/dev/zero of="$dir/dd" bs=1M count=$((BYTES >> 20)) \
			oflag=direct conv=fdatasync 2>&1) || die "dd write on $2: $out"
		echo "$out" | dd_mbps ;;
	dd-read)
		out=$(timeout 1800 dd if="$dir/dd" of=/dev/null bs=1M iflag=direct 2>&1) ||
			die "dd read on $2: $out"
		rm -f "$dir/dd"	# one file at a time: the image holds one and a quarter
		echo "$out" | dd_mbps ;;
	fio-write-*|fio-read-*)
		f=$dir/fio.${w##*-}
		mode=${w#fio-}
		mode=${mode%-*}
		[ "$mode" = write ] && rm -f "$f"
		timeout 1800 fio --name=seq --filename="$f" --ioengine=libaio --direct=1 --bs=1M \
			--rw="$mode" --iodepth="${w##*-}" --size="$BYTES" --fallocate=none \
			--end_fsync=1 --output-format=json --output="$AVFS_T/fio.json" \
			>/dev/null 2>"$AVFS_T/fio.err" || die "fio $w on $2: $(cat "$AVFS_T/fio.err")"
		[ "$mode" = read ] && rm -f "$f"
		fio_mbps "$AVFS_T/fio.json" "$mode" ;;
	esac
}

WORKLOADS=()
[ "$ONLY" = fio ] || WORKLOADS+=(dd-write dd-read)
if [ "$HAVE_FIO" = 1 ] && [ "$ONLY" != dd ]; then
	for d in $DEPTHS; do WORKLOADS+=("fio-write-$d" "fio-read-$d"); done
fi
TARGETS=(host "${NAMES[@]}")
declare -A R	# R[workload,target] = figures, white space apart
echo "fuse-speed: $((BYTES >> 20)) MiB files, ${REPS} repetitions, targets ${TARGETS[*]}"
for r in $(seq "$REPS"); do
	order=()	# the targets turned by one each repetition
	for i in "${!TARGETS[@]}"; do
		order+=("${TARGETS[$(((i + r - 1) % ${#TARGETS[@]}))]}")
	done
	for w in "${WORKLOADS[@]}"; do
		for t in "${order[@]}"; do
			v=$(run "$w" "$t") || exit 1
			R[$w,$t]="${R[$w,$t]:-} $v"
			printf '  rep %d %-12s %-8s %9s MB/s\n' "$r" "$w" "$t" "$v"
		done
	done
done

median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END {
	if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
spread() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1; s += $1 } END {
	m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
	if (m > 0) printf "%.0f%%", 100 * (a[NR] - a[1]) / m; else print "n/a" }'; }
ratio() { awk -v b="$1" -v a="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }'; }
label() {
	case $1 in
	dd-write) echo "dd write 1M oflag=direct" ;;
	dd-read) echo "dd read 1M iflag=direct" ;;
	fio-write-*) echo "fio write 1M depth ${1##*-}" ;;
	fio-read-*) echo "fio read 1M depth ${1##*-}" ;;
	esac
}

UNCLEAN=0
for n in "${NAMES[@]}"; do
	fuse_stop "${MNTS[$n]}" "${PIDS[$n]}" 60 || UNCLEAN=1
	PIDS[$n]=
done
echo
echo "fuse-speed: medians of $REPS, MB/s = 10^6 bytes/s; spread = (max - min) / median"
echo "  host: $HOSTDIR on $(df --output=fstype,source "$HOSTDIR" | tail -n1 | tr -s ' ')"
for n in "${NAMES[@]}"; do
	echo "  $n: ${BIN[$n]} ${ARGS[$n]} (image ${IMGS[$n]}, $BLOCK_SIZE blocks)"
done
printf '  %-26s %9s' workload host
for n in "${NAMES[@]}"; do printf ' %9s %6s' "$n" "/host"; done
printf '   spread host'
for n in "${NAMES[@]}"; do printf ' %s' "$n"; done
echo
for w in "${WORKLOADS[@]}"; do
	h=$(median "${R[$w,host]}")
	printf '  %-26s %9s' "$(label "$w")" "$h"
	for n in "${NAMES[@]}"; do
		m=$(median "${R[$w,$n]}")
		printf ' %9s %6s' "$m" "$(ratio "$m" "$h")"
	done
	printf '   %s' "$(spread "${R[$w,host]}")"
	for n in "${NAMES[@]}"; do printf ' %s' "$(spread "${R[$w,$n]}")"; done
	echo
done
echo "  targets (issue 18, SPEC §13): reads >= 0.80, writes >= 0.90 of the host"
if [ "$UNCLEAN" = 1 ]; then
	echo "fuse-speed: warning: an avfsd did not shut down cleanly; the end of the log:"
	tail -n 30 "$LOG"
	[ "$SMOKE" = 1 ] && exit 1	# in CI the smoke run is also a test of the daemon
fi
exit 0
