#!/bin/bash
# smallfiles.sh — small files on AVFS against ext4 (issue 18, done-when 1): on an image of
# --size (mkfs.avfs on a sparse file, avfsd, the FUSE mount) copy a tree (cp -a, default
# /usr/share/doc) and write --files files of 1 .. 64 KB (random sizes and bytes from a fixed
# seed); the same on ext4 (mkfs.ext4 on a sparse file of the same size, loop mount). Checks:
# everything fits with room left, diff -r finds the two trees identical, fsck.avfs -n is clean
# after, and AVFS's space used (df's used, after minus before) is within --max-ratio of
# ext4's. Prints both, the ratio, the host bytes each sparse image took (du) and the times.
# AVFS's df counts its data region in 4 KiB units (inodes, directories and unit maps live
# in the metadata region mkfs sized beforehand, as ext4's inode tables); ext4's counts its
# directory and extent blocks too. --smoke: a 1 GiB image, 1,000 files and the repository's
# docs/ and man/ (seconds; the suite's smallfiles_smoke).
#
# usage: smallfiles.sh [--smoke] [--size 16G] [--files 100000] [--tree DIR] [--seed 1]
#          [--block-size 4M] [--max-ratio 2] [--no-ext4] [--keep]
# env: AVFSD MKFS FSCK (default: ../build); the images go under /var/tmp.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/benchlib.sh"
bad() { echo "smallfiles: $*" >&2; exit 2; }

SIZE=16G
FILES=100000
TREE=/usr/share/doc
SEED=1
BLOCK_SIZE=4M
MAX_RATIO=2
EXT4=1
KEEP=0
SMOKE=0
VALUE_OPTS="--size --files --tree --seed --block-size --max-ratio"
while [ $# -gt 0 ]; do
	if value_opt "$@"; then
		shift 2
		continue
	fi
	case $1 in
	--smoke) SMOKE=1 ;;
	--no-ext4) EXT4=0 ;;
	--keep) KEEP=1 ;;
	-h|--help) usage; exit 0 ;;
	*) bad "unknown argument $1 (--help)" ;;
	esac
	shift
done
if [ "$SMOKE" = 1 ]; then
	SIZE=1G
	FILES=1000
	TREE="$HERE/../docs $HERE/../man"
fi
BYTES=$(bytes_of "$SIZE") || bad "--size $SIZE: a size (K/M/G/T)"
[ "$BYTES" -ge $((256 << 20)) ] || bad "--size $SIZE: at least 256M"
[[ $FILES =~ ^[0-9]+$ ]] || bad "--files $FILES: a count"
[[ $SEED =~ ^[0-9]+$ ]] || bad "--seed $SEED: a number"
positive "$MAX_RATIO" || bad "--max-ratio $MAX_RATIO: a number above 0"
for t in $TREE; do [ -d "$t" ] || bad "--tree $t: not a directory"; done

. "$HERE/../tests/daemon_env.sh"
avfs_require
if [ "$EXT4" = 1 ]; then
	command -v mkfs.ext4 >/dev/null || avfs_skip "no mkfs.ext4 (--no-ext4 runs without)"
	command -v losetup >/dev/null || avfs_skip "no losetup (--no-ext4 runs without)"
	[ -e /dev/loop-control ] || avfs_skip "no loop devices (--no-ext4 runs without)"
fi
avfs_env_init
EXT_IMG=$AVFS_T/ext4.img
EXT_MNT=$AVFS_T/ext4
mkdir "$EXT_MNT"
on_exit() {
	local rc=$?
	mounted "$EXT_MNT" && umount "$EXT_MNT"
	if [ "$KEEP" = 1 ]; then
		avfs_stop >/dev/null 2>&1
		echo "kept $AVFS_T"
		exit $rc
	fi
	(exit $rc)
	avfs_cleanup
}
trap on_exit EXIT
die() { { echo "smallfiles: FAIL: $*"; [ -f "$LOG" ] && tail -n 20 "$LOG"; } >&2; exit 1; }

used() { df -B1 --output=used "$1" | tail -n1 | tr -d ' '; }
avail() { df -B1 --output=avail "$1" | tail -n1 | tr -d ' '; }
host_bytes() { du -B1 "$1" | cut -f1; }

# the files: NAME sizes 1 .. 64 KB and bytes from the seed, 1,000 to a directory
gen() {
	python3 - "$1" "$FILES" "$SEED" <<'EOF'
import os, random, sys
root, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(seed)
for i in range(n):
    d = os.path.join(root, "small", "d%03d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    size = r.randint(1000, 64000)
    with open(os.path.join(d, "f%06d" % i), "wb") as f:
        f.write(r.randbytes(size))
EOF
}

fill() {	# fill DIR: the tree and the files; seconds on stdout
	local t0 t1
	t0=$(date +%s.%N)
	mkdir "$1/tree" || return 1
	# shellcheck disable=SC2086 # TREE: white space apart
	cp -a $TREE "$1/tree/" || return 1
	gen "$1" || return 1
	sync -f "$1/." || return 1
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'
}

echo "smallfiles: $SIZE images, tree $TREE, $FILES files of 1-64 KB (seed $SEED)"
avfs_mkfs --size "$SIZE" --block-size "$BLOCK_SIZE" || die "mkfs.avfs failed"
# (avfs_start's, with room for a long copy)
timeout --signal=KILL 86400 "$AVFSD" --foreground --socket "$SOCK" "$IMG" "$MNT" >>"$LOG" 2>&1 &
AVFS_PID=$!
wait_mounted "$MNT" "$MNT/." "$AVFS_PID" 10 || die "avfsd did not mount $MNT"
A0=$(used "$MNT")
ATIME=$(fill "$MNT") || die "copying onto AVFS failed (space left: $(avail "$MNT") bytes)"
A1=$(used "$MNT")
AAVAIL=$(avail "$MNT")
[ "$AAVAIL" -gt 0 ] || die "AVFS is full"
AUSED=$((A1 - A0))
NFILES=$(find "$MNT" -type f | wc -l)

echo "  files on AVFS: $NFILES, $AAVAIL bytes still free"
printf '  AVFS: %d bytes used (df), %.1f s\n' "$AUSED" "$ATIME"
if [ "$EXT4" = 1 ]; then
	truncate -s "$SIZE" "$EXT_IMG"
	mkfs.ext4 -q -F "$EXT_IMG" || die "mkfs.ext4 failed"
	mount -o loop "$EXT_IMG" "$EXT_MNT" || die "loop mount of ext4 failed"
	E0=$(used "$EXT_MNT")
	ETIME=$(fill "$EXT_MNT") || die "copying onto ext4 failed"
	E1=$(used "$EXT_MNT")
	EUSED=$((E1 - E0))
	RATIO=$(awk -v a="$AUSED" -v e="$EUSED" 'BEGIN { printf "%.2f", a / e }')
	printf '  ext4: %d bytes used (df), %.1f s; AVFS/ext4 space used: %s (at most %s)\n' \
		"$EUSED" "$ETIME" "$RATIO" "$MAX_RATIO"
	# (symlinks compared as links: /usr/share/doc has some that point nowhere)
	diff -r --no-dereference "$EXT_MNT/tree" "$MNT/tree" >"$AVFS_T/diff" 2>&1 &&
		diff -r --no-dereference "$EXT_MNT/small" "$MNT/small" >>"$AVFS_T/diff" 2>&1 ||
		die "diff -r: the trees differ: $(head -n 5 "$AVFS_T/diff")"
	echo "  diff -r: identical"
	umount "$EXT_MNT"
	printf '  host bytes the sparse images hold (du): AVFS %d, ext4 %d\n' \
		"$(host_bytes "$IMG")" "$(host_bytes "$EXT_IMG")"
fi
avfs_stop || die "avfsd did not stop cleanly"
"$FSCK" -n "$IMG" >"$AVFS_T/fsck" 2>&1 || die "fsck.avfs -n: $(head -n 20 "$AVFS_T/fsck")"
echo "  fsck.avfs -n: clean"
if [ "$EXT4" = 1 ]; then
	awk -v r="$RATIO" -v m="$MAX_RATIO" 'BEGIN { exit !(r <= m) }' ||
		die "AVFS used $RATIO times ext4's space"
fi
echo "smallfiles: ok"
