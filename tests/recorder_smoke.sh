#!/bin/bash
# recorder_smoke.sh — bench/recorder.sh --smoke end to end (issue 16): two cameras (ffmpeg)
# and two players (rdrt) beside the reader and the copier on ext4 with mq-deadline and on
# avfsd, each on a small hddemu disk for a few seconds. The tables must list both with their
# segments and reads counted, --out's JSON must agree and hold ext4's cameras' timed writes
# (wlat.so in ffmpeg); bad arguments are refused with exit 2. It judges no figure (lateness
# depends on the machine; a camera stuck past the trial is stopped, its calls lost).
# Env: HDDEMU HDDEMU_ATTACH AVFSD MKFS ADMIN RDRT WLAT (the built binaries).
# Exits 77 (SKIP) without root, /dev/fuse, losetup, ffmpeg with libx264, or a built hddemu.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/checks.sh"
R=$HERE/../bench/recorder.sh

check "--mode x: refused (exit 2)" fails_with "--mode: record, play or both" bash "$R" --mode x
check "--no-search without --k: refused" fails_with "--no-search needs --k N" bash "$R" --no-search
check "--configs: an unknown one refused" fails_with "unknown configuration 'xfs'" \
	bash "$R" --configs xfs
check "--rate: out of range refused" fails_with "--rate: bits per second" bash "$R" --rate 5G

[ "$(id -u)" = 0 ] || avfs_skip "needs root (FUSE mounts, loop devices)"
[ -c /dev/fuse ] || avfs_skip "no /dev/fuse"
command -v losetup >/dev/null || avfs_skip "no losetup"
command -v ffmpeg >/dev/null || avfs_skip "no ffmpeg"
ffmpeg -hide_banner -encoders 2>/dev/null | grep -q libx264 || avfs_skip "ffmpeg without libx264"
[ -x "${HDDEMU:-}" ] || avfs_skip "hddemu is not built (\$HDDEMU)"

bench_smoke recorder.sh
for c in ext4-mq-deadline avfsd; do
	check "the cameras' table has $c: segments, late, stopped counted" awk -v c="$c" '
		/^cameras:/ { t = 1 } /^players:/ { t = 0 }
		t && $1 == c && $4 $5 $6 ~ /^[0-9]+$/ { f = 1 } END { exit !f }' "$T/table"
	check "the players' table has $c: reads, late, stopped counted" awk -v c="$c" '
		/^players:/ { t = 1 } t && $1 == c && $4 $5 $6 ~ /^[0-9]+$/ { f = 1 }
		END { exit !f }' "$T/table"
done
check "--out: the JSON has the table's segments; ext4's cameras timed, its players' reads" \
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = {}
for l in open(sys.argv[2]):
    if l.startswith("players:"):
        break
    f = l.split()
    if len(f) > 3 and f[0] in ("ext4-mq-deadline", "avfsd") and f[1] != "trials:":
        rows[f[0]] = f[3]
ok = True
for e in d["configs"]:
    t = e["record"]["trials"][0]
    ok &= (str(t["segments"]) == rows[e["configuration"]] and t["programs"] == 2
           and e["play"]["trials"][0]["players"] == 2)
    if e["configuration"] == "ext4-mq-deadline":
        ok &= (t["cameras_timed"] == 2 and t["writes"] > 0 and t["segments"] >= 2
               and e["play"]["trials"][0]["reads"] > 0)
sys.exit(0 if ok and len(d["configs"]) == 2 else 1)' "$T/out.json" "$T/table"
avfs_summary
