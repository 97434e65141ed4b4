#!/bin/bash
# io-cost.sh — the software cost of avfsd on a fast device (SPEC §13): in one run on one image
# file, sequential 4 MiB reads of one large file (a) by fio with io_uring and O_DIRECT on the raw
# image's data region, (b) by libavio through avfsd (bench/avio_read), (c) through the FUSE
# mount (fio psync 1 MiB, or dd); prints MB/s of each and the ratios (b)/(a), (c)/(a).
# A benchmark, not a test: it judges nothing. --smoke: small sizes, one repetition (CI).
#
# usage: io-cost.sh [--smoke] [--size MiB] [--reps N] [--depths "1 4"] [--keep]
# env: AVFSD MKFS FSCK AVIO_READ (default: ../build); the image goes under /var/tmp.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${AVIO_READ:=$HERE/../build/bench/avio_read}"
AVIO_READ=$(realpath -m "$AVIO_READ")
SIZE_MB=1024
REPS=3
DEPTHS="1 4"
SMOKE=0
KEEP=0
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=1; SIZE_MB=64; REPS=1; DEPTHS="1" ;;
	--size) SIZE_MB=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--depths) DEPTHS=$2; shift ;;
	--keep) KEEP=1 ;;
	-h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "io-cost.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
. "$HERE/../tests/daemon_env.sh"
avfs_require
[ -x "$AVIO_READ" ] || { echo "io-cost: $AVIO_READ is not built"; exit 1; }
HAVE_FIO=0
command -v fio >/dev/null && HAVE_FIO=1
avfs_env_init
[ "$KEEP" = 1 ] && trap 'echo "kept $AVFS_T"; [ -n "$AVFS_PID" ] && avfs_stop' EXIT

BS=$((4 << 20))
BYTES=$((SIZE_MB << 20))
IMG_GB=$(((SIZE_MB + 1023) / 1024 + 1))

die() { echo "io-cost: $*"; [ -f "$LOG" ] && tail -n 20 "$LOG"; exit 1; }

# fio's read rate in MB/s (10^6 bytes/s) from its JSON output
fio_mbps() {
	python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print("%.1f" % (j["io_bytes"] / (j["runtime"] / 1000.0) / 1e6) if j["runtime"] else "0")' "$1"
}

best() {	# best of the given figures
	printf '%s\n' "$@" | sort -g | tail -n1
}

ratio() {	# ratio B A
	awk -v b="$1" -v a="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }'
}

echo "io-cost: preparing a ${IMG_GB} GiB image with 4 MiB blocks and a ${SIZE_MB} MiB file"
avfs_mkfs --size "${IMG_GB}G" --block-size 4M || die "mkfs failed"
DATA_OFF=$(timeout 30 "$FSCK" --json -n "$IMG" | python3 -c \
	'import json,sys; print(json.load(sys.stdin).get("data_offset", ""))' 2>/dev/null)
if [ -z "$DATA_OFF" ]; then	# fsck's JSON lacks it: ask mkfs on a twin image
	DATA_OFF=$(timeout 30 "$MKFS" --json --size "${IMG_GB}G" --block-size 4M "$AVFS_T/twin" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["data_offset"])')
	rm -f "$AVFS_T/twin"
fi
avfs_start || die "avfsd did not start"
timeout 600 dd if=/dev/urandom of="$AVFS_T/chunk" bs=1M count=64 status=none
for i in $(seq $(((SIZE_MB + 63) / 64))); do cat "$AVFS_T/chunk"; done | head -c "$BYTES" |
	timeout 900 dd of="$MNT/big" bs=4M iflag=fullblock conv=fsync status=none || die "write failed"
rm -f "$AVFS_T/chunk"
[ "$(stat -c %s "$MNT/big")" = "$BYTES" ] || die "the file has the wrong size"

declare -A A B
C=
for d in $DEPTHS; do
	av=()
	bv=()
	for r in $(seq "$REPS"); do
		if [ "$HAVE_FIO" = 1 ]; then
			timeout 600 fio --name=raw --filename="$IMG" --readonly --ioengine=io_uring \
				--direct=1 --bs=4M --rw=read --iodepth="$d" --offset="$DATA_OFF" \
				--size="$BYTES" --output-format=json --output="$AVFS_T/a.json" \
				>/dev/null || die "fio on the raw image failed"
			av+=("$(fio_mbps "$AVFS_T/a.json")")
		else	# dd with O_DIRECT, depth 1 only
			out=$(timeout 600 dd if="$IMG" of=/dev/null bs=4M iflag=direct,skip_bytes \
				skip="$DATA_OFF" count=$((BYTES / BS)) 2>&1) || die "dd on the image failed"
			av+=("$(echo "$out" | awk '/copied/ { for (i = 1; i <= NF; i++)
				if ($i ~ /^s,?$/) s = $(i-1); print $1 / s / 1e6 }')")
		fi
		out=$(AVFS_SHM_SIZE=$((d * BS + (1 << 20))) timeout 600 "$AVIO_READ" --bs "$BS" \
			--depth "$d" "$MNT/big") || die "avio_read failed: $out"
		bv+=("$(echo "$out" | sed -n 's/.*: \([0-9.]*\) MB\/s.*/\1/p')")
	done
	A[$d]=$(best "${av[@]}")
	B[$d]=$(best "${bv[@]}")
done
cv=()
for r in $(seq "$REPS"); do
	if [ "$HAVE_FIO" = 1 ]; then
		timeout 600 fio --name=fuse --filename="$MNT/big" --readonly --ioengine=psync \
			--bs=1M --rw=read --size="$BYTES" --output-format=json \
			--output="$AVFS_T/c.json" >/dev/null || die "fio through the mount failed"
		cv+=("$(fio_mbps "$AVFS_T/c.json")")
	else
		out=$(timeout 600 dd if="$MNT/big" of=/dev/null bs=1M 2>&1) || die "dd failed"
		cv+=("$(echo "$out" | awk '/copied/ { for (i = 1; i <= NF; i++)
			if ($i ~ /^s,?$/) s = $(i-1); print $1 / s / 1e6 }')")
	fi
done
C=$(best "${cv[@]}")
if ! avfs_stop >"$AVFS_T/stop.out" 2>&1; then
	UNCLEAN=1
else
	UNCLEAN=0
fi

echo
echo "io-cost: sequential reads of ${SIZE_MB} MiB, best of ${REPS}; MB/s = 10^6 bytes/s"
echo "  image $IMG (on $(df --output=fstype "$AVFS_T" | tail -n1)), data region from byte $DATA_OFF"
[ "$HAVE_FIO" = 1 ] || echo "  (fio not installed: dd iflag=direct for (a), dd for (c))"
for d in $DEPTHS; do
	printf '  (a) fio io_uring O_DIRECT, raw image, 4 MiB, depth %-2s %9s MB/s\n' "$d" "${A[$d]}"
	printf '  (b) libavio via avfsd, 4 MiB, depth %-2s            %9s MB/s   (b)/(a) = %s\n' \
		"$d" "${B[$d]}" "$(ratio "${B[$d]}" "${A[$d]}")"
done
d1=${DEPTHS%% *}
printf '  (c) FUSE mount, %-8s 1 MiB, depth 1             %9s MB/s   (c)/(a) = %s (vs (a) depth %s)\n' \
	"$([ "$HAVE_FIO" = 1 ] && echo 'fio psync' || echo dd)" "$C" "$(ratio "$C" "${A[$d1]}")" "$d1"
echo "  targets (SPEC §13): (b)/(a) >= 0.90, (c)/(a) >= 0.60"
if [ "$UNCLEAN" = 1 ]; then
	echo "io-cost: warning: avfsd did not shut down cleanly; the end of its log:"
	cat "$AVFS_T/stop.out"
	tail -n 30 "$LOG"
	[ "$SMOKE" = 1 ] && exit 1	# in CI the smoke run is also a test of the daemon
fi
exit 0
