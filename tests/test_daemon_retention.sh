#!/bin/bash
# test_daemon_retention.sh — per-directory retention and quotas on avfsd's mount (issue 16 item
# 3, "Done when" 3 short): a recorder writes three times the disk's capacity into a retained
# directory with no ENOSPC, the oldest unprotected segments deleted, a protected one kept, while
# reserved playback streams (examples/dvr --reserve) beside it miss no deadline; a quota's
# EDQUOT for write, fallocate, truncate and create, then retention inside the quota; avfs-admin
# quota/retention and setfattr with bad input refused; deletions logged and counted in stats;
# fsck clean after. The core's choices: test_space.c.
# env: AVFSD MKFS FSCK ADMIN DVR (default: ../build). Exit 77 without root, FUSE or attr.
set -u
. "$(dirname "$0")/daemon_env.sh"
: "${ADMIN:=$AVFS_ENV_DIR/../build/tools/avfs-admin}"
: "${DVR:=$AVFS_ENV_DIR/../build/examples/dvr}"
ADMIN=$(realpath -m "$ADMIN")
DVR=$(realpath -m "$DVR")
avfs_require
for t in setfattr getfattr setpriv fallocate truncate python3 md5sum; do
	command -v $t >/dev/null || avfs_skip "no $t (packages attr, util-linux, python3)"
done
avfs_env_init

admin() { "$ADMIN" --socket "$SOCK" "$@"; }
used() { find "$1" -type f -printf '%b\n' | awk '{ s += $1 * 512 } END { print s + 0 }'; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# 256 MiB image, 1 MiB blocks: about 240 data blocks
avfs_mkfs --size 256M --block-size 1M || { echo "FAIL mkfs"; exit 1; }
check "mount" avfs_start --allow-other || exit 1
CAP=$(df -B1 --output=size "$MNT" | tail -1)

# ---- configuration: avfs-admin and setfattr, bad input refused and nothing changed ----
mkdir "$MNT/cam" "$MNT/q" "$MNT/play" && echo x >"$MNT/plain"
t_bad() {
	fails() {	# fails STATUS TEXT CMD...: exit status STATUS and TEXT on stderr
		local want=$1 text=$2 rc
		shift 2
		"$@" >/dev/null 2>"$AVFS_T/err"
		rc=$?
		[ $rc = "$want" ] && grep -q "$text" "$AVFS_T/err" ||
			{ echo "  $*: exit $rc, $(cat "$AVFS_T/err")"; return 1; }
	}
	fails 2 "not a size" admin quota "$MNT/q" 0 &&
	fails 2 "not a size" admin quota "$MNT/q" 10X &&
	fails 2 "LOW < HIGH" admin retention "$MNT/cam" --high 50 --low 60 &&
	fails 2 "usage" admin retention "$MNT/cam" --high 101% --low 60% &&
	fails 2 "usage" admin retention "$MNT/cam" --high 90 &&
	fails 1 "not a directory" admin quota "$MNT/plain" 1G &&
	fails 1 "not on an AVFS mount" admin quota /tmp 1G &&
	fails 1 "root's alone" setpriv --reuid 1000 --regid 1000 --clear-groups "$ADMIN" \
		--socket "$SOCK" quota "$MNT/q" 1G &&
	fails 1 "Invalid argument" setfattr -n trusted.avfs.quota -v bogus "$MNT/q" &&
	fails 1 "Invalid argument" setfattr -n trusted.avfs.retain -v "80 90" "$MNT/q" &&
	fails 1 "Not a directory" setfattr -n trusted.avfs.quota -v 1G "$MNT/plain" &&
	[ -z "$(getfattr -d -m trusted --absolute-names "$MNT/q" "$MNT/plain" 2>/dev/null)" ]
}
check "bad rules refused with a reason, nothing set" t_bad
t_set() {
	admin retention "$MNT/cam" --high 90% --low 70% | grep -q "retention 90 70" &&
	[ "$(getfattr --only-values -n trusted.avfs.retain "$MNT/cam")" = "90 70" ] &&
	admin quota "$MNT/q" 8M | grep -q "quota 8388608" &&
	admin quota "$MNT/q" | grep -q "quota 8388608, retention none"
}
check "avfs-admin quota / retention set and show the attributes" t_set

# ---- the recorder: 3x the capacity into cam, beside reserved playback ----
head -c 4M /dev/urandom >"$AVFS_T/seg" && cp "$AVFS_T/seg" "$MNT/cam/keep" &&
	setfattr -n user.avfs.protected -v 1 "$MNT/cam/keep"
touch -d '2000-01-01' "$MNT/cam/keep"	# the oldest of all: retention must pass it over
KEEP_SUM=$(md5sum <"$AVFS_T/seg")
AVFS_SOCKET=$SOCK "$DVR" --mode avio --workload 2r0w --dir "$MNT/play" --duration 12 \
	--rate 8M --file-size 16M --reserve --json >"$AVFS_T/dvr.json" 2>"$AVFS_T/dvr.err" &
dvr_pid=$!
sleep 2	# dvr lays out its files, then plays
NSEG=$((3 * CAP / (4 << 20) + 1))
t_record() {
	local i
	for i in $(seq -w 0 $((NSEG - 1))); do
		cp "$AVFS_T/seg" "$MNT/cam/seg$i" 2>>"$AVFS_T/rec.err" ||
			{ echo "  seg$i: $(tail -1 "$AVFS_T/rec.err")"; return 1; }
	done
}
check "recorder: $NSEG segments of 4 MiB (3x the $((CAP >> 20)) MiB disk), no ENOSPC" t_record
wait $dvr_pid
check "reserved playback beside it: ran, zero deadline misses" \
	test "$(json "$AVFS_T/dvr.json" "d['deadline_misses'] == 0 and d['rt_requests'] > 0" 2>&1)" = True
t_kept() {
	local names first last n
	[ "$(md5sum <"$MNT/cam/keep")" = "$KEEP_SUM" ] || { echo "  keep changed"; return 1; }
	names=$(cd "$MNT/cam" && ls seg* | sort)
	n=$(echo "$names" | wc -l)
	first=$(echo "$names" | head -1)
	last=$(echo "$names" | tail -1)
	# what is left is the newest run, without a gap: the oldest went first
	[ "$last" = "seg$(printf %0${#NSEG}d $((NSEG - 1)))" ] &&
	[ "$n" = $((10#${last#seg} - 10#${first#seg} + 1)) ] &&
	[ "$n" -lt "$NSEG" ] ||
		{ echo "  left: $n segments, $first .. $last"; return 1; }
	echo "  kept $n segments ($first .. $last), used $(df --output=pcent "$MNT" | tail -1)"
}
check "oldest unprotected deleted, the protected one and the newest kept" t_kept
check "each deletion logged" grep -q "retention: deleted seg0*0 " "$LOG"

# ---- a quota: EDQUOT past it; then retention inside it ----
t_quota() {
	local e=$AVFS_T/err
	head -c 4M /dev/zero >"$MNT/q/f" &&
	! fallocate -l 16M "$MNT/q/g" 2>"$e" && grep -q "quota exceeded" "$e" &&
	! head -c 12M /dev/zero >"$MNT/q/f2" 2>"$e" && grep -q "quota exceeded" "$e" &&
	! truncate -s 100M "$MNT/q/f" 2>"$e" && grep -q "quota exceeded" "$e" &&
	! touch "$MNT/q/h" 2>"$e" && grep -q "quota exceeded" "$e" &&
	[ "$(used "$MNT/q")" = $((8 << 20)) ] || { echo "  $(cat "$e"), used $(used "$MNT/q")"; return 1; }
}
check "quota 8M: write, fallocate, truncate up and create refused with EDQUOT" t_quota
t_quota_retain() {
	admin retention "$MNT/q" --high 100 --low 50 >/dev/null &&
	head -c 3M /dev/zero >"$MNT/q/a" && head -c 3M /dev/zero >"$MNT/q/b" &&
	[ ! -e "$MNT/q/f" ] && [ ! -e "$MNT/q/f2" ] && [ -e "$MNT/q/g" ] &&
	[ "$(used "$MNT/q")" -le $((8 << 20)) ]
}
check "quota with retention: the oldest file goes instead of EDQUOT" t_quota_retain
# A deletion behind the kernel's back: the directory's attributes, which the kernel keeps for
# a second (fuse/fuseops.c, attr_timeout), go with retention's notice: stat sees the deletion's
# mtime at once, not the one it read just before.
t_dir_attrs() {
	local m0 m1
	mkdir "$MNT/r" && admin quota "$MNT/r" 8M >/dev/null &&
	admin retention "$MNT/r" --high 100 --low 50 >/dev/null &&
	head -c 3M /dev/zero >"$MNT/r/old" && head -c 3M /dev/zero >"$MNT/r/new" &&
	m0=$(stat -c %y "$MNT/r") &&
	dd if=/dev/zero of="$MNT/r/new" bs=1M count=3 seek=3 conv=notrunc status=none &&
	m1=$(stat -c %y "$MNT/r") &&
	[ "$m1" != "$m0" ] && [ ! -e "$MNT/r/old" ] || { echo "  mtime $m0, then ${m1:-?}"; return 1; }
}
check "a retention deletion: the directory's new mtime seen at once (cached attributes dropped)" \
	t_dir_attrs
admin stats --json >"$AVFS_T/stats.json"
check "stats --json: retention counted" \
	test "$(json "$AVFS_T/stats.json" "d['retention']['deleted'] > 0 and d['retention']['deleted_bytes'] >= d['retention']['deleted'] << 20 and d['retention']['edquot'] >= 4 and d['retention']['failed'] == 0")" = True
check "stats (table): a retention line" bash -c "'$ADMIN' --socket '$SOCK' stats | grep -q '^retention .* files deleted'"

# ---- the rules are the directory's: after a remount still there ----
check "unmount" avfs_stop
check "fsck clean after" "$FSCK" -n "$IMG"
check "mount again" avfs_start --allow-other
t_remount() {
	[ "$(getfattr --only-values -n trusted.avfs.quota "$MNT/q")" = 8388608 ] &&
	! head -c 9M /dev/zero >"$MNT/q/c" 2>"$AVFS_T/err" && grep -q "quota exceeded" "$AVFS_T/err"
}
check "the rules survive the remount, and hold" t_remount
check "unmount" avfs_stop
check "fsck clean at the end" "$FSCK" -n "$IMG"
avfs_summary
