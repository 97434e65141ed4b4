#!/bin/bash
# parity.sh — one scenario through avfs-sim in virtual time and through avfsd on hddemu in real
# time, printed side by side (issue "One engine": the simulator's figures are the daemon's).
# Both run the same engine (engine/) and the same workload plan (sim/workload.c) on the same
# layout: `avfs-sim fill` formats and fills hddemu's disk with the code avfs-sim fills its
# simulated one with, so the same files lie at the same places. Real time: a fresh hddemu of the
# model on a loop device (scheduler none), avfsd --disk-model on it, `avfs-sim realtime` playing
# the streams through libavio (with their reservations) and the pictures through the mount; the
# figures are the daemon's own metrics over the run's window, and hddemu's timing error.
# A benchmark: it prints; with --check it also judges the agreement the issue asks for (equal
# misses, utilization within 3 points, margin p1 within 10 %) and exits 1 when it fails.
#
# usage: parity.sh [--model avfs-250g] [--size BYTES] [--workload 4r2w] [--be pictures]
#          [--duration 120] [--fill 0.8] [--seed 1] [--set NAME=VALUE]... [--json] [--out FILE]
#          [--check] [--keep] [--smoke]
# --size: the model's outer part (hddemu --size, avfs-sim --size); default the whole model.
# --set: a scheduler setting for both (avfsd --set, avfs-sim --set).
# --smoke: a short run for CI (avfs-250g's first 16 GiB, 10 s, seed 2, --check).
# One libavio process holds one reservation per file: a seed whose playbacks share a recording
# is refused in real time ("File exists"); take another seed.
# env: HDDEMU HDDEMU_ATTACH AVFSD AVFS_SIM (default: ../build, ../tools); work under /var/tmp.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/benchlib.sh"
tool_paths HDDEMU=../build/tools/hddemu HDDEMU_ATTACH=../tools/hddemu-attach \
	AVFSD=../build/daemon/avfsd AVFS_SIM=../build/tools/avfs-sim

MODEL=avfs-250g
SIZE=
WORKLOAD=4r2w
BE=pictures
DURATION=120
FILL=0.8
SEED=1
JSON=0
OUT=
CHECK=0
KEEP=0
SETS=()

bad() { echo "parity: $*" >&2; exit 2; }
VALUE_OPTS="--model --size --workload --be --duration --fill --seed --out"
while [ $# -gt 0 ]; do
	case $1 in
	--set) need_arg "$@"; SETS+=(--set "$2"); shift ;;
	--json) JSON=1 ;;
	--check) CHECK=1 ;;
	--keep) KEEP=1 ;;
	--smoke) SIZE=16G; DURATION=10; SEED=2; CHECK=1 ;;
	-h|--help) usage; exit 0 ;;
	*) value_opt "$@" || bad "unknown argument $1 (--help)"; shift ;;
	esac
	shift
done
[ -n "$OUT" ] && OUT=$(realpath -m "$OUT")
[[ $WORKLOAD =~ ^[0-9]+r[0-9]+w$ ]] || bad "--workload: NrMw, e.g. 4r2w"
case $BE in none|pictures) ;; *) bad "--be: none or pictures (what a client reaches in real time)" ;; esac
[[ $SEED =~ ^[0-9]+$ ]] || bad "--seed: a number"
is_num "$DURATION" || bad "--duration: seconds"

[ "$(id -u)" = 0 ] || { echo "parity: needs root (FUSE, loop devices)" >&2; exit 77; }
[ -c /dev/fuse ] || { echo "parity: no /dev/fuse" >&2; exit 77; }
command -v losetup >/dev/null || { echo "parity: losetup is not installed" >&2; exit 77; }
for b in "$HDDEMU" "$HDDEMU_ATTACH" "$AVFSD" "$AVFS_SIM"; do
	[ -x "$b" ] || { echo "parity: $b is missing or not built" >&2; exit 1; }
done

T0=$(date +%s)
say() { printf 'parity [%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }
W=$(mktemp -d /var/tmp/parity-XXXXXX) || exit 1
HMNT=$W/hdd
FMNT=$W/fs
SOCK=$W/avfsd.sock
LOG=$W/log
mkdir "$HMNT" "$FMNT"
HDD_PID= LOOP= AVFSD_PID=

teardown() {
	if [ -n "$AVFSD_PID" ]; then
		fuse_stop "$FMNT" "$AVFSD_PID" 60
		AVFSD_PID=
	fi
	if [ -n "$LOOP" ]; then
		timeout 60 "$HDDEMU_ATTACH" --detach "$LOOP" >>"$LOG" 2>&1 || losetup -d "$LOOP" 2>/dev/null
		LOOP=
	fi
	if [ -n "$HDD_PID" ]; then
		fuse_stop "$HMNT" "$HDD_PID" 30
		HDD_PID=
	fi
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	teardown
	if mounted "$FMNT" || mounted "$HMNT"; then
		echo "parity: could not unmount everything; left $W" >&2
	elif [ "$KEEP" = 1 ] || [ $rc != 0 ]; then
		rm -f "$W/backing.img"
		echo "parity: logs in $W" >&2
	else
		rm -rf "$W"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'echo "parity: interrupted" >&2; exit 130' INT TERM HUP
fail() { echo "parity: $*" >&2; [ -s "$LOG" ] && tail -n 15 "$LOG" | sed 's/^/    /' >&2; exit 1; }

SIM_ARGS=(--disk "$MODEL" --workload "$WORKLOAD" --reserve --be "$BE" --duration "$DURATION"
	--fill "$FILL" --seed "$SEED" ${SIZE:+--size "$SIZE"} "${SETS[@]}")

# ---- virtual time ----
say "avfs-sim: $WORKLOAD reserved + $BE, $DURATION s, $MODEL${SIZE:+ (first $SIZE)}, seed $SEED"
"$AVFS_SIM" "${SIM_ARGS[@]}" --json >"$W/sim.json" 2>>"$LOG" || fail "avfs-sim failed"

# ---- real time ----
say "hddemu $MODEL${SIZE:+ --size $SIZE}, filled in fast mode by avfs-sim fill"
"$HDDEMU" --model "$MODEL" --backing "$W/backing.img" ${SIZE:+--size "$SIZE"} --foreground \
	"$HMNT" >>"$LOG" 2>&1 &
HDD_PID=$!
wait_mounted "$HMNT" "$HMNT/disk" "$HDD_PID" || fail "hddemu did not come up"
echo 1 >"$HMNT/fast" || fail "hddemu: no fast mode"
LOOP=$(timeout 60 "$HDDEMU_ATTACH" "$HMNT" --scheduler none 2>>"$LOG" | grep -o '/dev/loop[0-9]*' | tail -n1)
[ -b "$LOOP" ] || { LOOP=; fail "hddemu-attach gave no loop device"; }
timeout 1800 "$AVFS_SIM" fill --disk "$MODEL" --fill "$FILL" --seed "$SEED" ${SIZE:+--size "$SIZE"} \
	"$LOOP" >>"$LOG" 2>&1 || fail "avfs-sim fill failed"
echo 0 >"$HMNT/fast"
say "avfsd --disk-model $MODEL on $LOOP; avfs-sim realtime for $DURATION s"
"$AVFSD" --foreground --disk-model "$MODEL" --socket "$SOCK" "${SETS[@]}" "$LOOP" "$FMNT" >>"$LOG" 2>&1 &
AVFSD_PID=$!
wait_mounted "$FMNT" "$SOCK" "$AVFSD_PID" 30 || fail "avfsd did not mount"
timeout $((${DURATION%.*} + 300)) "$AVFS_SIM" realtime --mount "$FMNT" --hddemu "$HMNT" \
	"${SIM_ARGS[@]}" --json >"$W/real.json" 2>>"$LOG" || fail "avfs-sim realtime failed"
teardown

# ---- side by side ----
python3 - "$W/sim.json" "$W/real.json" "$CHECK" "$JSON" "${OUT:-}" <<'EOF'
import json, sys
sim = json.load(open(sys.argv[1]))
both = json.load(open(sys.argv[2]))
real, rt = both["run"], both["realtime"]
check, as_json, out = sys.argv[3] == "1", sys.argv[4] == "1", sys.argv[5]
classes = ["0", "<1", "<5", "<20", "<50", "<100", "<200", ">=200"]
def util(r): return 100 * r["disk_utilization"]
p1s, p1r = sim["margin_ms"]["p01"], real["margin_ms"]["p01"]
agree = {
    "misses_equal": sim["deadline_misses"] == real["deadline_misses"] == 0,
    "utilization_within_3_points": abs(util(sim) - util(real)) <= 3,
    "margin_p1_within_10_percent": p1s > 0 and abs(p1r - p1s) <= 0.10 * p1s,
}
doc = {"sim": sim, "real": real, "realtime": rt, "agreement": agree}
if out:
    json.dump(doc, open(out, "w"), indent=1)
if as_json:
    print(json.dumps(doc, indent=1))
else:
    print(f"parity: {sim['workload']} reserved + best effort, {sim['duration_s']} s on {sim['disk']}"
          f"{' (first %.1f GB)' % (sim['size'] / 1e9) if 'size' in sim else ''}, fill {sim['fill']}, seed {sim['seed']}")
    print(f"  {'':28s} {'avfs-sim (virtual)':>20s} {'avfsd on hddemu':>20s}")
    row = lambda name, a, b: print(f"  {name:28s} {a:>20} {b:>20}")
    row("RT requests", sim["rt_requests"], real["rt_requests"])
    row("deadline misses", sim["deadline_misses"], real["deadline_misses"])
    row("disk utilization (%)", f"{util(sim):.1f}", f"{util(real):.1f}")
    row("margin p1 (ms)", f"{p1s:.1f}", f"{p1r:.1f}")
    row("margin p50 (ms)", f"{sim['margin_ms']['p50']:.1f}", f"{real['margin_ms']['p50']:.1f}")
    for c in classes:
        row(f"seeks {c} GB", sim["seek_classes"][c], real["seek_classes"][c])
    row("BE throughput (Mbit/s)", f"{sim['be_mbps']:.1f}", f"{real['be_mbps']:.1f}")
    row("commands", sim["commands"], real["commands"])
    row("E(T_wait) (ms)", f"{sim['e_twait_ms']:.2f}", f"{real['e_twait_ms']:.2f}")
    print(f"  hddemu: timing error mean {rt['hddemu_timing_err_mean_us']:.1f} us, max "
          f"{rt['hddemu_timing_err_max_us']:.1f} us, {rt['hddemu_late']} late; its own utilization "
          f"{100 * rt['hddemu_utilization']:.1f} %; {rt['reservations']} reservations admitted, "
          f"{rt['pictures']} pictures, {rt['client_errors']} client errors")
    print("  agreement: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in agree.items()))
sys.exit(1 if check and not all(agree.values()) else 0)
EOF
