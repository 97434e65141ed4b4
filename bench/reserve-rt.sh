#!/bin/bash
# reserve-rt.sh — admission in real time (issue 15): the reservation requests of one seed of
# `avfs-sim reserve` (random rates, buffers and request sizes; playbacks and recordings), asked
# of avfsd one after the other on a fresh hddemu disk filled to --fill, each by one
# examples/dvr --reserve in a folder of its own (a playback reads its own file, written between
# slices of the fill at a place drawn from --seed; a recording writes a new one). The daemon
# answers each as its admission does; the admitted ones then run side by side in real time for
# --duration seconds. Prints per request the simulator's answer (avfs-sim reserve, the same
# admission code on the named model) and the daemon's, and what each admitted stream got: RT
# requests, misses, the smallest completion margin; then the disk's utilization, the longest
# metadata commit (avfs-admin status) and hddemu's timing error. Beside the streams, as
# ordinary file traffic, dd writes a 4 KiB file with conv=fsync every --fsync-every seconds
# (0: none); the fsyncs' count, median and longest time are printed too. A benchmark, not a
# test: it judges nothing. Run as root. --smoke: a tiny run for CI.
#
# usage: reserve-rt.sh [--seed 1] [--requests 20] [--duration 120] [--fill 0.8]
#          [--model avfs-250g] [--size BYTES] [--file-size 512M] [--fsync-every 5]
#          [--json] [--out FILE] [--keep] [--smoke]
# avfsd runs with --disk-model MODEL, so that its admission knows the emulated disk's seek
# curve and zones as the simulator's does (without it, a model derived from the superblock's
# service times). The dvr processes start 0.5 s apart, in the sequence's order, so that the daemon meets the
# requests in that order; each runs --duration seconds from its start. With --size the disk is
# the model's outer part and the simulator's answers (the whole model) may differ.
# env: HDDEMU HDDEMU_ATTACH AVFSD MKFS ADMIN DVR AVFS_SIM (default: ../build, ../tools);
# AVFSD_ARGS: more avfsd options (e.g. "--set commit-wait=0"); work
# under /var/tmp.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH_NAME=reserve-rt
. "$HERE/benchlib.sh"
tool_paths HDDEMU=../build/tools/hddemu HDDEMU_ATTACH=../tools/hddemu-attach \
	AVFSD=../build/daemon/avfsd MKFS=../build/tools/mkfs.avfs ADMIN=../build/tools/avfs-admin \
	DVR=../build/examples/dvr AVFS_SIM=../build/tools/avfs-sim

MODEL=avfs-250g
SIZE=
SEED=1
REQUESTS=20
DURATION=120
FILL=0.8
FILE_SIZE=512M
JSON=0
OUT=
KEEP=0
TRACE=0
STAGGER=0.5
FSYNC_EVERY=5

bad() { echo "reserve-rt: $*" >&2; exit 2; }
VALUE_OPTS="--model --size --seed --requests --duration --fill --file-size --fsync-every --out"
while [ $# -gt 0 ]; do
	case $1 in
	--json) JSON=1 ;;
	--keep) KEEP=1 ;;
	--smoke)	# CI: a small model, three requests, a few seconds
		MODEL=travelstar-20g; SIZE=4G; REQUESTS=3; DURATION=3; FILL=0.1; FILE_SIZE=32M
		FSYNC_EVERY=1 ;;
	-h|--help) usage; exit 0 ;;
	*) value_opt "$@" || bad "unknown argument $1 (--help)"; shift ;;
	esac
	shift
done
[[ $SEED =~ ^[0-9]+$ ]] || bad "--seed: a number"
[[ $REQUESTS =~ ^[0-9]+$ ]] && [ "$REQUESTS" -ge 1 ] && [ "$REQUESTS" -le 64 ] ||
	bad "--requests: 1 to 64"
positive "$DURATION" || bad "--duration: positive seconds"
is_num "$FSYNC_EVERY" || bad "--fsync-every: seconds, 0 for none"
is_num "$FILL" && awk -v f="$FILL" 'BEGIN { exit !(f >= 0 && f <= 0.9) }' || bad "--fill: 0 to 0.9"
FILE_BYTES=$(bytes_of "$FILE_SIZE") && [ "$FILE_BYTES" -ge $((4 << 20)) ] ||
	bad "--file-size: a size of at least 4M, e.g. 512M"
FILE_BYTES=$(((FILE_BYTES + (4 << 20) - 1) >> 22 << 22))	# whole 4 MiB writes
if [ -n "$SIZE" ]; then
	SIZE_BYTES=$(bytes_of "$SIZE") || bad "--size: bytes, K/M/G/T"
fi
[ -n "$OUT" ] && OUT=$(realpath -m "$OUT")

need_facilities losetup fusermount3 fallocate python3 dd
need_built "$HDDEMU" "$HDDEMU_ATTACH" "$DVR" "$AVFSD" "$MKFS" "$ADMIN" "$AVFS_SIM"

# the sequence and the simulator's answers (no run: --search-duration 0, one second)
SEQ=$("$AVFS_SIM" reserve --disk "$MODEL" --first-seed "$SEED" --seeds 1 --requests "$REQUESTS" \
	--duration 1 --search-duration 0 --json) || bad "avfs-sim reserve refused (above)"

. "$HERE/hddlib.sh"	# the work directory, cleanup and fail, disk_start, fs_make, fill_to, ...

# One line per request: index, bits/s, buffer bytes, request bytes, r|w, the simulator's answer
python3 -c '
import json, sys
for i, r in enumerate(json.load(sys.stdin)["seeds"][0]["requests"]):
    print(i, r["rate_bps"], r["buffer"], r["io"], "w" if r["write"] else "r",
          1 if r["admitted"] else 0)' <<<"$SEQ" >"$W/sequence" || { echo "no sequence" >&2; exit 1; }

CUR=avfsd
AVFSD_ARGS="--disk-model $MODEL ${AVFSD_ARGS:-}"
config_start avfsd none || exit 1
# Fill (fast mode): the playbacks' files between slices of it, play file j after a fraction
# u_j of the fill, u_j uniform random from --seed (as peer-compare.sh places its play files)
read -r size used < <(fs_bytes)
NPLAY=$(awk '$5 == "r"' "$W/sequence" | wc -l)
target=$(awk -v s="$size" -v f="$FILL" -v u="$used" -v p=$((NPLAY * FILE_BYTES)) \
	'BEGIN { t = s * f - u - p; printf "%.0f", (t > 0 ? t : 0) }')
FILLED=0
NFILL=0
say "filling to $FILL of $size bytes: $NPLAY play files of $FILE_BYTES bytes"
while read -r p i; do
	fill_to "$(awk -v t="$target" -v p="$p" 'BEGIN { printf "%.0f", t * p }')" || exit 1
	mkdir -p "$FMNT/r$i"
	[ "$(awk -v i="$i" '$1 == i { print $5 }' "$W/sequence")" = r ] || continue
	write_zeros "$FMNT/r$i/play-0.ts" "$FILE_BYTES" || exit 1
done < <(python3 -c 'import random, sys
r = random.Random(int(sys.argv[2]))
for p, i in sorted((r.random(), i) for i in range(int(sys.argv[1]))):
    print("%.9f %d" % (p, i))' "$REQUESTS" "$SEED")
fill_to "$target" || exit 1
sync

# Real time: the requests in order, one dvr each
fast 0 && echo reset >"$HMNT/stats" || { fail "cannot switch hddemu to real time"; exit 1; }
say "$REQUESTS requests, ${DURATION} s each, in real time"
limit=$(awk -v d="$DURATION" -v n="$REQUESTS" -v s="$STAGGER" \
	'BEGIN { printf "%d", d * 2 + n * s + 120 }')
PIDS=()
while read -r i rate buf io dir sim; do
	AVFS_SOCKET=$SOCK AVFS_SHM_SIZE=$((buf + (16 << 20))) timeout -k 10 "$limit" "$DVR" \
		--mode avio --reserve --workload "$([ "$dir" = r ] && echo 1r0w || echo 0r1w)" \
		--dir "$FMNT/r$i" --rate "$rate" --io "$io" --depth $((buf / io)) \
		--duration "$DURATION" --file-size "$FILE_BYTES" --json \
		>"$RES/dvr$i.json" 2>"$RES/dvr$i.err" &
	PIDS+=($!)
	KIDS+=($!)
	sleep "$STAGGER"
done <"$W/sequence"
# ordinary traffic beside them: a small file written and fsynced now and then, timed
PROBE=
if awk -v f="$FSYNC_EVERY" 'BEGIN { exit !(f > 0) }'; then
	(
		end=$(($(date +%s) + limit))
		while [ "$(date +%s)" -lt "$end" ]; do
			sleep "$FSYNC_EVERY"
			[ -e "$RES/fsync.stop" ] && break
			t0=$(date +%s.%N)
			dd if=/dev/zero of="$FMNT/fsync-probe" bs=4k count=1 conv=fsync \
				status=none 2>>"$RES/fsync.err" || echo fail >>"$RES/fsync"
			echo "$t0 $(date +%s.%N)" >>"$RES/fsync"
		done
	) &
	PROBE=$!
	KIDS+=($PROBE)
fi
for p in "${PIDS[@]}"; do wait "$p"; done
[ -n "$PROBE" ] && { touch "$RES/fsync.stop"; wait "$PROBE" 2>/dev/null; }	# (its dd ends)
KIDS=()
hdd_stats "$RES/hdd.stats"
timeout 30 "$ADMIN" --socket "$SOCK" status --json >"$RES/status.json" 2>>"$LOG"
fast 1
teardown

python3 - "$W/sequence" "$RES" "$JSON" "$OUT" "$MODEL" "${SIZE_BYTES:-0}" "$SEED" "$REQUESTS" \
	"$DURATION" "$FILL" <<'PY'
import json, sys
seq, res, as_json, out = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
params = {"model": sys.argv[5], "size": int(sys.argv[6]), "seed": int(sys.argv[7]),
          "requests": int(sys.argv[8]), "duration_s": float(sys.argv[9]),
          "fill": float(sys.argv[10])}
rows = []
for line in open(seq):
    i, rate, buf, io, d, sim = line.split()
    row = {"index": int(i), "rate_bps": int(rate), "buffer": int(buf), "io": int(io),
           "write": d == "w", "sim_admitted": sim == "1", "admitted": False, "why": None,
           "rt_requests": 0, "misses": 0, "io_errors": 0, "margin_min_ms": None}
    try:
        r = json.load(open(f"{res}/dvr{i}.json"))
        row.update(admitted=True, rt_requests=r["rt_requests"], misses=r["deadline_misses"],
                   io_errors=r["io_errors"], margin_min_ms=r["margin_ms"]["min"])
    except (OSError, ValueError, KeyError):
        err = open(f"{res}/dvr{i}.err").read().strip().splitlines()
        row["why"] = err[0] if err else "dvr said nothing"
    rows.append(row)
hdd = dict(l.split(None, 1) for l in open(f"{res}/hdd.stats") if len(l.split()) == 2)
try:
    commit_max = json.load(open(f"{res}/status.json"))["commit_max_s"]
except (OSError, ValueError, KeyError):
    commit_max = None
fsyncs, fsync_fail = [], 0
try:
    for line in open(f"{res}/fsync"):
        if line.strip() == "fail":
            fsync_fail += 1
        else:
            a, b = map(float, line.split())
            fsyncs.append(b - a)
except OSError:
    pass
fsyncs.sort()
adm = [r for r in rows if r["admitted"]]
margins = [r["margin_min_ms"] for r in adm if r["margin_min_ms"] is not None]
summary = {"admitted": len(adm), "sim_admitted": sum(r["sim_admitted"] for r in rows),
           "same_answers": sum(r["admitted"] == r["sim_admitted"] for r in rows),
           "admitted_rate_bps": sum(r["rate_bps"] for r in adm),
           "rt_requests": sum(r["rt_requests"] for r in adm),
           "misses": sum(r["misses"] for r in adm), "io_errors": sum(r["io_errors"] for r in adm),
           "margin_min_ms": min(margins) if margins else None,
           "disk_utilization": float(hdd.get("utilization", "0")),
           "timing_err_mean_us": float(hdd.get("timing_err_mean_us", "0")),
           "timing_err_max_us": float(hdd.get("timing_err_max_us", "0")),
           "commit_max_s": commit_max, "fsyncs": len(fsyncs), "fsync_failures": fsync_fail,
           "fsync_median_s": fsyncs[len(fsyncs) // 2] if fsyncs else None,
           "fsync_max_s": fsyncs[-1] if fsyncs else None}
doc = {"params": params, "requests": rows, "summary": summary}
if out:
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
if as_json:
    json.dump(doc, sys.stdout, indent=1)
    print()
    sys.exit(0)
print(f"reserve-rt: avfs-sim reserve seed {params['seed']}'s first {params['requests']} "
      f"requests on avfsd, hddemu {params['model']}"
      + (f" ({params['size']} bytes)" if params["size"] else "")
      + f", fill {params['fill']}, {params['duration_s']:g} s in real time")
print(f"{'#':>3} {'Mbit/s':>7} {'buffer':>7} {'io':>5} {'dir':>3}  {'sim':>5} {'avfsd':>6}"
      f" {'RT req':>7} {'misses':>6} {'margin min ms':>13}")
for r in rows:
    print(f"{r['index']:>3} {r['rate_bps'] / 1e6:>7.2f} {r['buffer'] >> 20:>6}M "
          f"{r['io'] >> 10:>4}K {'w' if r['write'] else 'r':>3}  "
          f"{'yes' if r['sim_admitted'] else 'no':>5} {'yes' if r['admitted'] else 'no':>6}"
          + (f" {r['rt_requests']:>7} {r['misses'] + r['io_errors']:>6} "
             f"{r['margin_min_ms']:>13.0f}" if r["admitted"] else ""))
s = summary
print(f"admitted {s['admitted']} of {len(rows)} ({s['admitted_rate_bps'] / 1e6:.1f} Mbit/s; the "
      f"simulator {s['sim_admitted']}, the same answer to {s['same_answers']}); "
      f"{s['rt_requests']} RT requests, {s['misses']} misses, {s['io_errors']} errors, "
      f"smallest margin {s['margin_min_ms'] if s['margin_min_ms'] is None else round(s['margin_min_ms'])} ms; "
      f"disk {s['disk_utilization'] * 100:.1f} % busy; longest metadata commit "
      + ("unknown" if s['commit_max_s'] is None else f"{s['commit_max_s']:.1f} s")
      + (f"; {s['fsyncs']} fsyncs beside (dd), median {s['fsync_median_s']:.2f} s, longest "
         f"{s['fsync_max_s']:.2f} s, {s['fsync_failures']} failed" if s['fsyncs'] else "")
      + f"; hddemu timing error mean "
      f"{s['timing_err_mean_us']:.0f} us, max {s['timing_err_max_us'] / 1000:.1f} ms")
PY
