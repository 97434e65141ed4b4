#!/bin/bash
# archive.sh — reading many files in disk order from user space (issue 16 item 4, papers/004
# ch. 4): examples/archiver (files sorted by the first block avfs_placement gives) against GNU
# tar (readdir order, and --sort=name) archiving the same tree of small files through an AVFS
# mount on hddemu (avfs-250g, a loop device); each archive goes through a pipe (tar skips
# reading when it writes to /dev/null). Per run and tool: seconds; then the time ratio tar /
# archiver of the medians. The tree is written in fast mode, names in random order (as a copy
# or a download fills a directory), then every run reads it in real time, tools taking turns.
# Both archives are checked: tar -tvf lists every file, extracting gives identical files.
# A benchmark, not a test: it judges nothing but correctness. Run as root.
#
# usage: archive.sh [--files 2000] [--dirs 20] [--max-size 1M] [--runs 3] [--model avfs-250g]
#          [--seed 1] [--keep] [--smoke]
# --files: files in the tree, spread over --dirs directories; sizes uniform in 4 KiB ..
# --max-size, random content. --smoke: no hddemu, a 512 MiB image file, 300 files of at most
# 128K, one run each: the checks and the figures of a plain image (CI; exit 77 without root,
# FUSE or GNU tar).
# env: HDDEMU HDDEMU_ATTACH AVFSD MKFS ARCHIVER (default: ../build, ../tools); work under
# /var/tmp.
set -u -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/benchlib.sh"
tool_paths HDDEMU=../build/tools/hddemu HDDEMU_ATTACH=../tools/hddemu-attach \
	AVFSD=../build/daemon/avfsd MKFS=../build/tools/mkfs.avfs \
	ARCHIVER=../build/examples/archiver

bad() { echo "archive.sh: $*" >&2; exit 2; }
FILES=2000 DIRS=20 MAX_SIZE=1M RUNS=3 MODEL=avfs-250g SEED=1 KEEP=0 SMOKE=0
VALUE_OPTS="--files --dirs --max-size --runs --model --seed"
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=1 ;;
	--keep) KEEP=1 ;;
	-h|--help) usage; exit 0 ;;
	*) value_opt "$@" || bad "unknown option $1 (--help)"; shift ;;
	esac
	shift
done
[[ $FILES =~ ^[1-9][0-9]*$ ]] || bad "--files: a count above 0"
[[ $DIRS =~ ^[1-9][0-9]*$ ]] || bad "--dirs: a count above 0"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || bad "--runs: a count above 0"
[[ $SEED =~ ^[0-9]+$ ]] || bad "--seed: a whole number"
MAX_BYTES=$(bytes_of "$MAX_SIZE") && [ "$MAX_BYTES" -ge 4096 ] || bad "--max-size: at least 4K"
if [ $SMOKE = 1 ]; then
	FILES=300 DIRS=6 MAX_BYTES=$((128 << 10)) RUNS=1
fi

skip() { echo "archive.sh: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (FUSE mounts, loop devices)"
[ -c /dev/fuse ] || skip "no /dev/fuse"
for t in fusermount3 tar python3 cmp; do
	command -v $t >/dev/null || skip "no $t"
done
tar --version 2>/dev/null | grep -q "GNU tar" || skip "tar is not GNU tar"
for b in "$AVFSD" "$MKFS" "$ARCHIVER"; do
	[ -x "$b" ] || { echo "archive.sh: $b is not built"; exit 1; }
done
if [ $SMOKE = 0 ]; then
	command -v losetup >/dev/null || skip "no losetup"
	[ -x "$HDDEMU" ] || { echo "archive.sh: $HDDEMU is not built"; exit 1; }
fi

W=$(mktemp -d /var/tmp/avfs-archive-XXXXXX) || exit 1
LOG=$W/log
HMNT=$W/hdd FMNT=$W/mnt SOCK=$W/sock
mkdir -p "$HMNT" "$FMNT"
HDD_PID= AVFSD_PID= LOOP=
cleanup() {
	cd / || true	# (the runs read from inside the mount)
	fuse_stop "$FMNT" "$AVFSD_PID" 60
	[ -n "$LOOP" ] && { timeout 60 "$HDDEMU_ATTACH" --detach "$LOOP" >>"$LOG" 2>&1 ||
			    timeout 30 losetup -d "$LOOP"; }
	[ -n "$HDD_PID" ] && fuse_stop "$HMNT" "$HDD_PID" 30
	if [ $KEEP = 1 ]; then
		echo "archive.sh: kept $W"
	else
		rm -rf "$W"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "archive.sh: $*" >&2; tail -5 "$LOG" >&2; exit 1; }
fast() { [ $SMOKE = 1 ] || echo "$1" >"$HMNT/fast"; }

# ---- the disk and the mount ----
if [ $SMOKE = 1 ]; then
	DEV=$W/img
	"$MKFS" --size 512M --block-size 1M "$DEV" >>"$LOG" 2>&1 || fail "mkfs.avfs failed"
else
	"$HDDEMU" --model "$MODEL" --backing "$W/backing" --foreground "$HMNT" >>"$LOG" 2>&1 &
	HDD_PID=$!
	wait_mounted "$HMNT" "$HMNT/disk" "$HDD_PID" || fail "hddemu did not mount"
	fast 1
	out=$(timeout 60 "$HDDEMU_ATTACH" "$HMNT" --scheduler none 2>>"$LOG") ||
		fail "hddemu-attach failed"
	LOOP=$(printf '%s\n' "$out" | grep -o '/dev/loop[0-9]*' | tail -n1)
	[ -b "$LOOP" ] || fail "no loop device: $out"
	DEV=$LOOP
	"$MKFS" -f --disk-model "$MODEL" "$DEV" >>"$LOG" 2>&1 || fail "mkfs.avfs failed"
fi
"$AVFSD" --foreground --socket "$SOCK" "$DEV" "$FMNT" >>"$LOG" 2>&1 &
AVFSD_PID=$!
wait_mounted "$FMNT" "$SOCK" "$AVFSD_PID" 30 || fail "avfsd did not mount"

# ---- the tree: names in random order, random sizes and content ----
python3 - "$FMNT/tree" "$FILES" "$DIRS" "$MAX_BYTES" "$SEED" <<'PY' || fail "cannot write the tree"
import os, random, sys
top, files, dirs, top_size, seed = sys.argv[1], *map(int, sys.argv[2:])
rnd = random.Random(seed)
names = ["d%03d/f%05d" % (i % dirs, i) for i in range(files)]
rnd.shuffle(names)
for d in range(dirs):
    os.makedirs(os.path.join(top, "d%03d" % d), exist_ok=True)
for n in names:
    with open(os.path.join(top, n), "wb") as f:
        f.write(rnd.randbytes(rnd.randint(4096, top_size)))
PY
BYTES=$(du -s -B1 --apparent-size "$FMNT/tree" | cut -f1)
echo "tree: $FILES files in $DIRS directories, $((BYTES >> 20)) MiB, sizes 4 KiB .. $((MAX_BYTES >> 10)) KiB," \
	"on $([ $SMOKE = 1 ] && echo "an image file" || echo "hddemu $MODEL")"

# ---- runs, tools taking turns ----
cd "$FMNT" || exit 1
declare -A T
run_tool() {	# run_tool NAME CMD...: its archive through a pipe into $W/NAME.tar; seconds
	local t0 t1
	t0=$(date +%s.%N)
	"$@" | cat >"$W/$1.tar" || return 1
	t1=$(date +%s.%N)
	T[$1]="${T[$1]:-} $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
}
archiver() { "$ARCHIVER" -v tree 2>>"$LOG"; }
tar_readdir() { tar -cf - tree; }
tar_sorted() { tar --sort=name -cf - tree; }
fast 0
for r in $(seq "$RUNS"); do
	for tool in archiver tar_readdir tar_sorted; do
		run_tool $tool || fail "$tool failed"
	done
done
fast 1

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf "%-12s %s\n" tool "seconds per run (median)"
for tool in archiver tar_readdir tar_sorted; do
	printf "%-12s %s (%s)\n" "$tool" "${T[$tool]# }" "$(echo "${T[$tool]}" | median)"
done
a=$(echo "${T[archiver]}" | median)
for tool in tar_readdir tar_sorted; do
	python3 -c "import sys; print('ratio %s / archiver: %.2f' % (sys.argv[1], float(sys.argv[2]) / float(sys.argv[3])))" \
		"$tool" "$(echo "${T[$tool]}" | median)" "$a"
done
grep "archiver:" "$LOG" | tail -1

# ---- the archives are right ----
n=$(tar -tvf "$W/archiver.tar" | grep -c '^-')
[ "$n" = "$FILES" ] || fail "tar -tvf lists $n files of the archiver's archive, not $FILES"
cmp -s <(tar -tf "$W/archiver.tar" | sort) <(tar -tf "$W/tar_sorted.tar" | sort) ||
	fail "the archiver's members differ from tar's"
mkdir "$W/x"
tar -xf "$W/archiver.tar" -C "$W/x" || fail "tar -xf of the archiver's archive failed"
diff -r "$FMNT/tree" "$W/x/tree" >>"$LOG" 2>&1 || fail "extracted files differ from the tree"
echo "checked: tar -tvf lists all $FILES files of the archiver's archive; extracted, identical"
