#!/bin/bash
# retention.sh — issue 16 "Done when" 3 in real time: a real recorder (ffmpeg, stream copy of
# an 8 Mbit/s MPEG-TS, 10 s segments, as fast as the disk takes them) writes --times the
# disk's capacity into a directory with retention (--high/--low of the file system) on an
# AVFS mount over hddemu (avfs-250g, its outer --size), while reserved playback streams
# (examples/dvr --reserve, libavio) read beside it. Reports: ffmpeg's exit and any ENOSPC,
# segments written and left, what retention deleted (avfs-admin stats), the protected file
# kept, the streams' deadline misses and smallest margin, hddemu's timing error, and fsck.avfs
# -n after.
# A benchmark: it prints figures; exit 1 only when something failed outright. Run as root.
#
# usage: retention.sh [--size 4G] [--times 3] [--high 90] [--low 80] [--streams 2]
#          [--rate 19.39M] [--model avfs-250g] [--keep]
# env: HDDEMU HDDEMU_ATTACH AVFSD MKFS FSCK ADMIN DVR (default: ../build, ../tools); work
# under /var/tmp.
set -u -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/benchlib.sh"
tool_paths HDDEMU=../build/tools/hddemu HDDEMU_ATTACH=../tools/hddemu-attach \
	AVFSD=../build/daemon/avfsd MKFS=../build/tools/mkfs.avfs FSCK=../build/tools/fsck.avfs \
	ADMIN=../build/tools/avfs-admin DVR=../build/examples/dvr

bad() { echo "retention.sh: $*" >&2; exit 2; }
SIZE=4G TIMES=3 HIGH=90 LOW=80 STREAMS=2 RATE=19.39M MODEL=avfs-250g KEEP=0
VALUE_OPTS="--size --times --high --low --streams --rate --model"
while [ $# -gt 0 ]; do
	case $1 in
	--keep) KEEP=1 ;;
	-h|--help) usage; exit 0 ;;
	*) value_opt "$@" || bad "unknown option $1 (--help)"; shift ;;
	esac
	shift
done
SIZE_BYTES=$(bytes_of "$SIZE") && [ "$SIZE_BYTES" -ge $((1 << 30)) ] || bad "--size: at least 1G"
[[ $TIMES =~ ^[1-9][0-9]*$ ]] || bad "--times: a whole number above 0"
[[ $STREAMS =~ ^[0-9]+$ ]] || bad "--streams: a count"
[[ $HIGH =~ ^[0-9]+$ && $LOW =~ ^[0-9]+$ ]] && [ "$LOW" -ge 1 ] && [ "$LOW" -lt "$HIGH" ] &&
	[ "$HIGH" -le 100 ] || bad "--high/--low: whole percentages, 1 <= low < high <= 100"
[ "$(id -u)" = 0 ] || { echo "retention.sh: run as root"; exit 1; }
for t in ffmpeg losetup fusermount3 python3; do
	command -v $t >/dev/null || { echo "retention.sh: no $t"; exit 1; }
done

W=$(mktemp -d /var/tmp/avfs-retention-XXXXXX) || exit 1
LOG=$W/log
HMNT=$W/hdd FMNT=$W/mnt SOCK=$W/sock
mkdir -p "$HMNT" "$FMNT"
HDD_PID= AVFSD_PID= LOOP= DVR_PID=
cleanup() {
	cd / || true
	[ -n "$DVR_PID" ] && kill_wait "$DVR_PID"
	[ -n "$AVFSD_PID" ] && fuse_stop "$FMNT" "$AVFSD_PID" 60
	[ -n "$LOOP" ] && { timeout 60 "$HDDEMU_ATTACH" --detach "$LOOP" >>"$LOG" 2>&1 ||
			    timeout 30 losetup -d "$LOOP"; }
	[ -n "$HDD_PID" ] && fuse_stop "$HMNT" "$HDD_PID" 30
	if [ $KEEP = 1 ]; then echo "retention.sh: kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "retention.sh: $*" >&2; tail -5 "$LOG" >&2; exit 1; }

# the recorder's input: 20 s of an 8 Mbit/s MPEG-TS, looped by ffmpeg
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc=size=640x360:rate=25 -t 20 \
	-c:v mpeg2video -b:v 8M -minrate 8M -maxrate 8M -bufsize 2M -f mpegts "$W/in.ts" \
	2>>"$LOG" || fail "cannot make the recorder's input"

"$HDDEMU" --model "$MODEL" --backing "$W/backing" --size "$SIZE_BYTES" --foreground "$HMNT" \
	>>"$LOG" 2>&1 &
HDD_PID=$!
wait_mounted "$HMNT" "$HMNT/disk" "$HDD_PID" || fail "hddemu did not mount"
echo 1 >"$HMNT/fast"
out=$(timeout 60 "$HDDEMU_ATTACH" "$HMNT" --scheduler none 2>>"$LOG") || fail "hddemu-attach failed"
LOOP=$(printf '%s\n' "$out" | grep -o '/dev/loop[0-9]*' | tail -n1)
[ -b "$LOOP" ] || fail "no loop device: $out"
"$MKFS" -f --disk-model "$MODEL" "$LOOP" >>"$LOG" 2>&1 || fail "mkfs.avfs failed"
# avfsd's log lines stamped with CLOCK_MONOTONIC, as dvr's request times are
mono() { python3 -c 'import time; print("%.3f" % time.monotonic())'; }
"$AVFSD" --foreground --socket "$SOCK" "$LOOP" "$FMNT" > >(python3 -u -c '
import sys, time
for l in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.monotonic(), l))' >>"$W/avfsd.log") 2>&1 &
AVFSD_PID=$!
wait_mounted "$FMNT" "$SOCK" "$AVFSD_PID" 30 || fail "avfsd did not mount"
mkdir "$FMNT/rec" "$FMNT/play"
"$ADMIN" --socket "$SOCK" retention "$FMNT/rec" --high "$HIGH" --low "$LOW" >>"$LOG" ||
	fail "avfs-admin retention failed"
head -c 64M /dev/urandom >"$W/keep" && cp "$W/keep" "$FMNT/rec/incident.ts" &&
	setfattr -n user.avfs.protected -v 1 "$FMNT/rec/incident.ts" &&
	touch -d 2000-01-01 "$FMNT/rec/incident.ts" || fail "cannot write the protected file"
CAP=$(df -B1 --output=size "$FMNT" | tail -1)
MEDIA_S=$((TIMES * CAP * 8 / 8000000))
echo "disk: hddemu $MODEL --size $SIZE_BYTES, $((CAP >> 20)) MiB of data space; retention" \
	"$HIGH/$LOW % of it on rec/; recorder: ffmpeg -c copy, ${MEDIA_S} s of 8 Mbit/s media" \
	"($((TIMES * CAP >> 20)) MiB, ${TIMES}x), 10 s segments; $STREAMS reserved playbacks of $RATE"

DUR=0
if [ "$STREAMS" -gt 0 ]; then
	# the play files laid out in fast mode, then everything in real time
	AVFS_SOCKET=$SOCK timeout 600 "$DVR" --mode avio --workload "${STREAMS}r0w" \
		--dir "$FMNT/play" --duration 0.1 --file-size 256M >>"$LOG" 2>&1 ||
		fail "dvr could not lay out its files"
fi
echo 0 >"$HMNT/fast"
echo reset >"$HMNT/stats" 2>/dev/null
"$ADMIN" --socket "$SOCK" reset >>"$LOG" 2>&1
t0=$(date +%s.%N)
cd "$FMNT/rec" || exit 1
ffmpeg -nostdin -loglevel error -stream_loop -1 -i "$W/in.ts" -t "$MEDIA_S" -c copy -map 0 \
	-f segment -segment_time 10 -reset_timestamps 1 "seg%06d.ts" >"$W/ffmpeg.log" 2>&1 &
FF_PID=$!
if [ "$STREAMS" -gt 0 ]; then
	(	# runs of 30 s back to back while the recorder records
		i=0
		while kill -0 $FF_PID 2>/dev/null; do
			mono >"$W/dvr.$i.t0"
			AVFS_SOCKET=$SOCK "$DVR" --mode avio --workload "${STREAMS}r0w" \
				--dir "$FMNT/play" --duration 30 --file-size 256M --rate "$RATE" \
				--reserve --json --csv "$W/dvr.$i.csv" >"$W/dvr.$i.json" \
				2>>"$LOG" || break
			i=$((i + 1))
		done
	) &
	DVR_PID=$!
fi
wait $FF_PID
FF_RC=$?
t1=$(date +%s.%N)
if [ -n "$DVR_PID" ]; then
	wait_exit "$DVR_PID" 60 >/dev/null || kill_wait "$DVR_PID"
	DVR_PID=
fi
cd / || exit 1
"$ADMIN" --socket "$SOCK" stats --json >"$W/stats.json" 2>>"$LOG"
LEFT=$(ls "$FMNT/rec" | grep -c '^seg')
LAST=$(ls "$FMNT/rec" | grep '^seg' | sort | tail -1)
FIRST=$(ls "$FMNT/rec" | grep '^seg' | sort | head -1)
KEPT=$(cmp -s "$W/keep" "$FMNT/rec/incident.ts" && echo yes || echo NO)
USED=$(df --output=pcent "$FMNT" | tail -1)
cat "$HMNT/stats" >"$W/hdd.stats" 2>>"$LOG"	# the emulation's own error over the run
echo "1" >"$HMNT/fast"
fuse_stop "$FMNT" "$AVFSD_PID" 120
AVFSD_PID=
"$FSCK" -n "$LOOP" >"$W/fsck.out" 2>&1
FSCK_RC=$?
python3 - "$W" "$FF_RC" "$t0" "$t1" "$LEFT" "$FIRST" "$LAST" "$KEPT" "$USED" "$FSCK_RC" <<'PY'
import json, os, sys
w, ff_rc, t0, t1, left, first, last, kept, used, fsck_rc = sys.argv[1:]
ff = open(os.path.join(w, "ffmpeg.log")).read()
st = json.load(open(os.path.join(w, "stats.json")))
r = st.get("retention", {})
print("recorder: ffmpeg exit %s in %.0f s; ENOSPC in its log: %s" % (
    ff_rc, float(t1) - float(t0), "YES" if "No space left" in ff else "no"))
print("segments left: %s (%s .. %s); disk use %s; protected file kept: %s" % (
    left, first, last, used.strip(), kept))
print("retention: %d files deleted (%.1f MB) in %d passes, %d failed" % (
    r.get("deleted", 0), r.get("deleted_bytes", 0) / 1e6, r.get("passes", 0), r.get("failed", 0)))
runs = []
for f in sorted(os.listdir(w)):
    if f.startswith("dvr.") and f.endswith(".json"):
        try:
            runs.append(json.load(open(os.path.join(w, f))))
        except ValueError:
            pass
if runs:
    print("reserved playback: %d runs of 30 s, %d RT requests, %d deadline misses, smallest "
          "margin %.1f ms" % (len(runs), sum(d["rt_requests"] for d in runs),
                              sum(d["deadline_misses"] for d in runs),
                              min(d["margin_ms"]["min"] for d in runs)))
else:
    print("reserved playback: no run completed")
# each miss (dvr's clock from its start, which the script took just before) beside the
# retention passes around it (avfsd's log, stamped on the same clock)
dels = []
for l in open(os.path.join(w, "avfsd.log"), errors="replace"):
    t, _, rest = l.partition(" ")
    if "retention: deleted" in rest:
        dels.append(float(t))
for f in sorted(os.listdir(w)):
    if not (f.startswith("dvr.") and f.endswith(".csv")):
        continue
    start = float(open(os.path.join(w, f[:-4] + ".t0")).read())
    for row in open(os.path.join(w, f)).readlines()[1:]:
        s, k, iss, dl, done, res = row.strip().split(",")
        if int(done) > int(dl) or int(res) < 0:
            at = start + int(done) / 1e9
            near = [d - at for d in dels if abs(d - at) < 5]
            print("  miss: %s k %s, late %.1f ms at %.1f s of %s; deletions within 5 s: %d%s"
                  % (s, k, (int(done) - int(dl)) / 1e6, int(done) / 1e9, f, len(near),
                     " (nearest %+.2f s)" % min(near, key=abs) if near else ""))
print("daemon: RT misses %d of %d; disk utilization %.1f %%" % (
    st["rt"]["misses"], st["rt"]["requests"], 100 * st["disk_utilization"]))
hdd = {}
try:
    for l in open(os.path.join(w, "hdd.stats")):
        k, _, v = l.partition(" ")
        hdd[k] = v.strip()
    print("hddemu's timing error (reply - model completion): mean %s us, max %.1f ms" % (
        hdd["timing_err_mean_us"], float(hdd["timing_err_max_us"]) / 1e3))
except (OSError, KeyError, ValueError):
    print("hddemu's timing error: not read")
print("fsck.avfs -n: exit %s" % fsck_rc)
PY
[ "$FF_RC" = 0 ] && [ "$KEPT" = yes ] && [ "$FSCK_RC" = 0 ]
