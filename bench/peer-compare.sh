#!/bin/bash
# peer-compare.sh — AVFS against ext4 with the kernel's own schedulers on one emulated disk
# (SPEC §11–§13, issue 9): per configuration a fresh hddemu disk on a loop device, the file
# system made and filled to --fill in fast mode, then examples/dvr in real time (POSIX O_DIRECT
# on ext4, libavio on avfsd); prints one table (dvr's QoS, hddemu's utilization and seeks).
# A benchmark, not a test: it judges nothing. Run as root. --smoke: a tiny run for CI.
#
# usage: peer-compare.sh [--model avfs-250g] [--size BYTES] [--workload 8r0w] [--duration 120]
#          [--fill 0.8] [--be none|greedy] [--be-size 2G] [--file-size 512M] [--seed 1] [--reserve]
#          [--json] [--out FILE] [--configs ext4-mq-deadline,ext4-bfq,ext4-kyber,ext4-none,avfsd]
#          [--search [--search-duration 20] [--search-max 32]] [--keep] [--trace] [--smoke]
#          [--scenario FILE] [--rate 19.39M] [--io 512K] [--depth 8] [--stall AT:LENGTH]
# A configuration is ext4-SCHED or avfsd[-SCHED] (SCHED: the loop device's scheduler,
# mq-deadline bfq kyber none; avfsd's default is none: it orders its requests itself).
# --be greedy: a sequential reader of a --be-size file beside the streams (O_DIRECT on ext4, the
# FUSE mount on avfsd); its MB/s is the BE column. --reserve: dvr --reserve on avfsd.
# --search: after the measured run, per configuration the largest mix of the workload's
# read:write ratio with zero misses, by doubling then bisection over shorter runs.
# --json: the same as JSON on stdout; --out FILE: the JSON into FILE as well as the table.
# --keep: keep the work directory (logs, results, the last backing file); --trace: hddemu's
# per-request trace of each configuration there too (docs/HDDEMU.md).
# --scenario FILE: a scenario file (docs/SCENARIOS.md) gives the disk model, size, fill,
# duration, seed, allocator (avfsd), the workload (one playback and one recording class alike
# in rate, request size and buffer: --rate, --io, --depth = buffer / io), reserved or not, and
# --be greedy for one uncapped sequential best-effort reader of 1M requests; a scenario real
# time cannot play as written is refused with the key (bench/scenario_rt.py). Options given on
# the command line override the file's values. --rate/--io/--depth: dvr's stream (bits/s,
# K/M/G = 10^3..; bytes a request; requests in flight).
# --stall AT:LENGTH: in each measured run (not the search's trials) the drive stalls once for
# LENGTH, AT seconds after dvr starts (hddemu's MOUNTDIR/stall, docs/HDDEMU.md), as a real one
# does in error recovery; seconds, or with a unit s, ms ("20:2", "20s:500ms"). The report
# says so, counts the stall hddemu took, and gives the misses per stream and when they fell
# (dvr's --csv, run.dvr.csv).
# env: HDDEMU HDDEMU_ATTACH AVFSD MKFS ADMIN DVR AVFS_SIM (default: ../build, ../tools); work
# under /var/tmp.
# AVFS_MKFS_ARGS: extra mkfs.avfs options for the avfsd configurations (e.g. "--alloc contig").
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH_NAME=peer-compare
. "$HERE/benchlib.sh"
tool_paths HDDEMU=../build/tools/hddemu HDDEMU_ATTACH=../tools/hddemu-attach \
	AVFSD=../build/daemon/avfsd MKFS=../build/tools/mkfs.avfs ADMIN=../build/tools/avfs-admin \
	DVR=../build/examples/dvr AVFS_SIM=../build/tools/avfs-sim

MODEL=avfs-250g
SIZE=
WORKLOAD=8r0w
DURATION=120
FILL=0.8
BE=none
FILE_SIZE=512M
SEED=1
BE_SIZE=2G
RESERVE=0
JSON=0
OUT=
CONFIGS=ext4-mq-deadline,ext4-bfq,ext4-kyber,ext4-none,avfsd
KEEP=0
TRACE=0
SEARCH=0
SEARCH_DURATION=20
SEARCH_MAX=32
SMOKE=0
RATE=19390000	# dvr's defaults: 19.39 Mbit/s, 512 KiB requests, 8 in flight per stream
IO=$((512 << 10))
DEPTH=8
SCENARIO=
AVFS_ALLOC=
STALL=
STALL_AT=
STALL_LEN=

bad() { echo "peer-compare: $*" >&2; exit 2; }
VALUE_OPTS="--model --size --workload --duration --fill --be --file-size --seed --be-size --out
	--configs --search-duration --search-max --rate --io --depth --stall"
# --scenario first, wherever it stands, so that the other options override the file
for ((i = 1; i <= $#; i++)); do
	if [ "${!i}" = --scenario ]; then
		j=$((i + 1))
		[ $j -le $# ] || bad "--scenario needs a value"
		SCENARIO=${!j}
	fi
done
if [ -n "$SCENARIO" ]; then
	[ -x "$AVFS_SIM" ] || bad "--scenario: $AVFS_SIM (avfs-sim, the file's parser) is not built"
	canon=$("$AVFS_SIM" run "$SCENARIO" --print) || bad "--scenario: $SCENARIO refused (above)"
	assigns=$(python3 "$HERE/scenario_rt.py" "$SCENARIO" <<<"$canon") || exit 2
	eval "$assigns"
	# the file's allocator (zrr-run, zrr or contig; canonical form names it) for mkfs.avfs
	[ -n "$AVFS_ALLOC" ] && AVFS_MKFS_ARGS="${AVFS_MKFS_ARGS:-} --alloc $AVFS_ALLOC"
fi
while [ $# -gt 0 ]; do
	case $1 in
	--reserve) RESERVE=1 ;;
	--json) JSON=1 ;;
	--keep) KEEP=1 ;;
	--trace) TRACE=1; KEEP=1 ;;
	--search) SEARCH=1 ;;
	--smoke)	# CI: a small model, a few seconds, two configurations
		SMOKE=1; MODEL=travelstar-20g; SIZE=4G; WORKLOAD=2r0w; DURATION=3; FILL=0.1
		FILE_SIZE=32M; BE_SIZE=64M; CONFIGS=ext4-mq-deadline,avfsd ;;
	-h|--help) usage; exit 0 ;;
	--scenario) shift ;;	# read above
	*) value_opt "$@" || bad "unknown argument $1 (--help)"; shift ;;
	esac
	shift
done

# ---- arguments ----
[[ $WORKLOAD =~ ^([0-9]+)r([0-9]+)w$ ]] || bad "--workload: NrMw, e.g. 8r0w"
NR=${BASH_REMATCH[1]}
NW=${BASH_REMATCH[2]}
NR=$((10#$NR)); NW=$((10#$NW))
[ $((NR + NW)) -gt 0 ] || bad "--workload: no streams"
positive "$DURATION" || bad "--duration: positive seconds"
positive "$SEARCH_DURATION" || bad "--search-duration: positive seconds"
is_num "$FILL" && awk -v f="$FILL" 'BEGIN { exit !(f >= 0 && f <= 0.95) }' ||
	bad "--fill: 0 to 0.95"
[[ $SEED =~ ^[0-9]+$ ]] || bad "--seed: a number"
RATE=$(awk -v r="$RATE" 'BEGIN { m = 1; u = substr(r, length(r))
	if (u == "K" || u == "k") m = 1e3; else if (u == "M") m = 1e6; else if (u == "G") m = 1e9
	if (m > 1) r = substr(r, 1, length(r) - 1)
	if (r !~ /^[0-9]+(\.[0-9]+)?$/ || r * m < 1000) exit 1; printf "%.0f", r * m }') ||
	bad "--rate: bits per second, K/M/G = 10^3..., e.g. 19.39M"
IO=$(bytes_of "$IO") && [ "$IO" -ge 4096 ] && [ $((IO % 4096)) = 0 ] ||
	bad "--io: a multiple of 4096 bytes, e.g. 512K"
[[ $DEPTH =~ ^[0-9]+$ ]] && [ "$DEPTH" -ge 1 ] || bad "--depth: a positive count"
[[ $SEARCH_MAX =~ ^[0-9]+$ ]] && [ "$SEARCH_MAX" -ge 1 ] || bad "--search-max: a positive count"
if [ -n "$STALL" ]; then	# AT and LENGTH in seconds; hddemu's word is LENGTH in us
	read -r STALL_AT STALL_LEN < <(awk -v s="$STALL" 'function sec(v,  m) {
		m = 1
		if (v ~ /ms$/) { m = 1e-3; v = substr(v, 1, length(v) - 2) }
		else if (v ~ /s$/) v = substr(v, 1, length(v) - 1)
		if (v !~ /^[0-9]+(\.[0-9]+)?$/) exit 1
		return v * m }
		BEGIN { n = split(s, p, ":"); if (n != 2) exit 1; printf "%s %s\n", sec(p[1]), sec(p[2]) }')
	[ -n "$STALL_LEN" ] || bad "--stall: AT:LENGTH, seconds or with s or ms, e.g. 20:2"
	awk -v a="$STALL_AT" -v l="$STALL_LEN" -v d="$DURATION" \
		'BEGIN { exit !(a < d && l >= 0.001 && l <= 600) }' ||
		bad "--stall: AT within --duration ($DURATION s), LENGTH from 1 ms to 600 s"
fi
case $BE in none|greedy) ;; *) bad "--be: none or greedy" ;; esac
FILE_BYTES=$(bytes_of "$FILE_SIZE") && [ "$FILE_BYTES" -ge $((4 << 20)) ] ||
	bad "--file-size: a size of at least 4M, e.g. 512M"
FILE_BYTES=$(((FILE_BYTES + (4 << 20) - 1) >> 22 << 22))	# whole 4 MiB writes
BE_BYTES=$(bytes_of "$BE_SIZE") && [ "$BE_BYTES" -ge $((4 << 20)) ] || bad "--be-size: at least 4M"
BE_BYTES=$(((BE_BYTES + (4 << 20) - 1) >> 22 << 22))
if [ -n "$SIZE" ]; then
	SIZE_BYTES=$(bytes_of "$SIZE") || bad "--size: bytes, K/M/G/T"
fi
[ -n "$OUT" ] && OUT=$(realpath -m "$OUT")
configs_of "$CONFIGS" "ext4-(mq-deadline|bfq|kyber|none)|avfsd(-(mq-deadline|bfq|kyber|none))?" \
	"ext4-SCHED or avfsd[-SCHED]"
# play files: enough for the run, and for the largest mix the search may try
PLAY=$NR
if [ "$SEARCH" = 1 ] && [ "$NR" -gt 0 ] && [ "$SEARCH_MAX" -gt "$PLAY" ]; then
	PLAY=$SEARCH_MAX
fi

# ---- facilities ----
need_facilities losetup fusermount3 mkfs.ext4 fallocate python3 mount umount dd
need_built "$HDDEMU" "$HDDEMU_ATTACH" "$DVR"
case $CONFIGS in *avfsd*) need_built "$AVFSD" "$MKFS" "$ADMIN" ;; esac


. "$HERE/hddlib.sh"	# the work directory, cleanup and fail, disk_start, fs_make, teardown, ...

# Fill and files (fast mode). Play files and the BE file are written between slices of the
# fill, so that both file systems place them over the filled region alike: play-i sits after a
# fraction u_i of the fill, u_i uniform random from --seed (SPEC §12: files picked at random
# from a filled file system; the same places in every configuration), the BE file after all of
# it. Fill files are fallocate'd (no data written); play and BE files are written with zeros,
# which hddemu keeps as holes in the backing file yet times as data.
FILLED=0
NFILL=0

populate() {
	local size used target pos i p
	read -r size used < <(fs_bytes)
	target=$(awk -v s="$size" -v f="$FILL" -v u="$used" -v p=$((PLAY * FILE_BYTES)) \
		-v b=$([ "$BE" = greedy ] && echo "$BE_BYTES" || echo 0) \
		'BEGIN { t = s * f - u - p - b; printf "%.0f", (t > 0 ? t : 0) }')
	FILLED=0
	NFILL=0
	say "$CUR: filling to $FILL of $size bytes: $PLAY play files of $FILE_BYTES bytes," \
		"$target bytes fallocate'd$([ "$BE" = greedy ] && echo ", a BE file of $BE_BYTES bytes")"
	# play-i after the fraction u_i of the fill, in the order of position
	while read -r p i; do
		fill_to "$(awk -v t="$target" -v p="$p" 'BEGIN { printf "%.0f", t * p }')" || return 1
		write_zeros "$FMNT/play-$i.ts" "$FILE_BYTES" || return 1
	done < <(python3 -c 'import random, sys
r = random.Random(int(sys.argv[2]))
for p, i in sorted((r.random(), i) for i in range(int(sys.argv[1]))):
    print("%.9f %d" % (p, i))' "$PLAY" "$SEED")
	fill_to "$target" || return 1
	if [ "$BE" = greedy ]; then
		write_zeros "$FMNT/be.dat" "$BE_BYTES" || return 1
	fi
	sync
	read -r size used < <(fs_bytes)
	awk -v s="$size" -v u="$used" 'BEGIN { printf "%.4f\n", u / s }' >"$RES/$CUR/fill"
}

# The greedy BE reader: sequential 1 MiB O_DIRECT reads of FILE, wrapping, for SECONDS;
# prints MB/s (10^6 bytes/s), bytes, seconds.
be_reader() {
	python3 - "$1" "$2" <<'EOF'
import mmap, os, sys, time
path, dur, bs = sys.argv[1], float(sys.argv[2]), 1 << 20
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
size = os.fstat(fd).st_size // bs * bs
buf = mmap.mmap(-1, bs)
n = off = 0
t0 = time.monotonic()
while time.monotonic() - t0 < dur:
    r = os.preadv(fd, [buf], off)
    n += r
    off = off + r if r > 0 and off + r < size else 0
el = time.monotonic() - t0
print("%.3f %d %.3f" % (n / el / 1e6, n, el))
EOF
}

# stall_writer AT LENGTH OUT: after AT seconds, LENGTH seconds into hddemu's stall file; the
# seconds it actually waited (from its start) into OUT. For dvr_run's measured run.
stall_writer() {
	local t0=$EPOCHREALTIME
	trap 'kill $! 2>/dev/null; exit 143' TERM	# the sleep too
	sleep "$1" &
	wait $!
	printf '%dus\n' "$(awk -v l="$2" 'BEGIN { printf "%.0f", l * 1e6 }')" >"$HMNT/stall" ||
		{ echo "$CUR: cannot write hddemu's stall file" >>"$WARN"; return 1; }
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }' >"$3"
}

# dvr_run WORKLOAD SECONDS OUT [stall]: one real-time measurement; OUT.dvr.json, OUT.hdd,
# OUT.be, OUT.admin.json (avfsd). With "stall" and --stall, the drive stalls during it
# (OUT.stall: when, OUT.dvr.csv: dvr's requests). Status: dvr's.
dvr_run() {
	local wl=$1 dur=$2 out=$3 rc nstr shm limit stall_pid= csv=()
	[[ $wl =~ ^([0-9]+)r([0-9]+)w$ ]]
	nstr=$((BASH_REMATCH[1] + BASH_REMATCH[2]))
	shm=$((nstr * DEPTH * IO + (16 << 20)))
	[ "$FS_KIND" = ext4 ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
	fast 0 && echo reset >"$HMNT/stats" || { fail "cannot switch hddemu to real time"; return 1; }
	if [ "$BE" = greedy ]; then
		be_reader "$FMNT/be.dat" "$dur" >"$out.be" 2>>"$LOG" &
		BE_PID=$!
	fi
	limit=$(awk -v d="$dur" 'BEGIN { printf "%d", d * 3 + 120 }')
	rm -f "$out.dvr.json" "$out.stall" "$out.dvr.csv"
	if [ "${4:-}" = stall ] && [ -n "$STALL" ]; then
		csv=(--csv "$out.dvr.csv")
		stall_writer "$STALL_AT" "$STALL_LEN" "$out.stall" 2>>"$LOG" &
		stall_pid=$!
		KIDS+=("$stall_pid")
	fi
	if [ "$FS_KIND" = ext4 ]; then
		run "$limit" "$out.dvr.json" "$DVR" --mode posix --workload "$wl" --dir "$FMNT" \
			--rate "$RATE" --io "$IO" --depth "$DEPTH" \
			--duration "$dur" --file-size "$FILE_BYTES" --json "${csv[@]}"
	else
		AVFS_SOCKET=$SOCK AVFS_SHM_SIZE=$shm run "$limit" "$out.dvr.json" "$DVR" --mode avio \
			--rate "$RATE" --io "$IO" --depth "$DEPTH" \
			--workload "$wl" --dir "$FMNT" --duration "$dur" --file-size "$FILE_BYTES" --json \
			$([ "$RESERVE" = 1 ] && echo --reserve) "${csv[@]}"
	fi
	rc=$?
	if [ -n "$stall_pid" ]; then	# dvr may have ended first: no stall left behind
		kill -0 "$stall_pid" 2>/dev/null &&
			echo "$CUR: dvr ended before the stall at ${STALL_AT}s" >>"$WARN"
		kill_wait "$stall_pid"
		KIDS=()	# the stall writer was peer-compare's only one
		echo 0 >"$HMNT/stall" 2>>"$LOG"
	fi
	if [ -n "$BE_PID" ]; then
		wait_exit "$BE_PID" 30 || echo "$CUR: the BE reader failed (see $LOG)" >>"$WARN"
		BE_PID=
	fi
	hdd_stats "$out.hdd"
	if [ "$FS_KIND" = avfsd ]; then
		timeout 30 "$ADMIN" --socket "$SOCK" stats --json >"$out.admin.json" 2>>"$LOG"
	fi
	fast 1
	return $rc
}

# search: the largest n (reads; writes at the workload's ratio) with zero misses, by doubling
# from the workload's mix, then bisection. One line per trial in $RES/$CUR/search.
mix_of() {	# mix_of N: the NrMw mix with N streams of the primary direction
	if [ "$NR" -gt 0 ]; then
		echo "${1}r$(((2 * $1 * NW + NR) / (2 * NR)))w"
	else
		echo "0r${1}w"
	fi
}

trial() {	# trial N: 0 when the mix ran with zero misses and no errors
	local wl k rc
	wl=$(mix_of "$1")
	k=$(wc -l <"$RES/$CUR/search" 2>/dev/null || echo 0)
	say "$CUR: search: $wl for ${SEARCH_DURATION}s"
	dvr_run "$wl" "$SEARCH_DURATION" "$RES/$CUR/s$k"
	rc=$?
	echo "$1 $wl $rc s$k" >>"$RES/$CUR/search"
	[ $rc = 0 ] && python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["deadline_misses"] == 0 and d["io_errors"] == 0 else 1)' \
		"$RES/$CUR/s$k.dvr.json" 2>/dev/null
}

search() {
	local lo=0 hi= n
	n=$([ "$NR" -gt 0 ] && echo "$NR" || echo "$NW")
	[ "$n" -gt "$SEARCH_MAX" ] && n=$SEARCH_MAX
	: >"$RES/$CUR/search"
	while [ -z "$hi" ]; do	# doubling
		if trial "$n"; then
			lo=$n
			[ "$n" -ge "$SEARCH_MAX" ] && break
			n=$((n * 2 > SEARCH_MAX ? SEARCH_MAX : n * 2))
		else
			hi=$n
		fi
		alive || return 1
	done
	while [ -n "$hi" ] && [ $((hi - lo)) -gt 1 ]; do	# bisection
		n=$(((lo + hi) / 2))
		if trial "$n"; then lo=$n; else hi=$n; fi
		alive || return 1
	done
	echo "$lo $(mix_of "$lo") ${hi:+$(mix_of "$hi")}" >"$RES/$CUR/search.result"
}

one_config() {	# one_config: the configuration $CUR, from a fresh disk to its results
	local kind sched rc
	kind=${CUR%%-*}
	sched=${CUR#*-}
	[ "$sched" = "$CUR" ] && sched=none
	config_start "$kind" "$sched" || return 1
	populate || return 1
	say "$CUR: measuring $WORKLOAD for ${DURATION}s in real time$([ "$BE" = greedy ] &&
		echo ', with a greedy BE reader')$([ -n "$STALL" ] &&
		echo ", the drive stalling ${STALL_LEN}s at ${STALL_AT}s")"
	dvr_run "$WORKLOAD" "$DURATION" "$RES/$CUR/run" stall
	rc=$?
	[ -s "$RES/$CUR/run.dvr.json" ] || { fail "dvr produced no result (exit $rc)"; return 1; }
	[ $rc = 0 ] || echo "$CUR: dvr exit status $rc (a request failed; see $LOG)" >>"$WARN"
	if [ "$SEARCH" = 1 ]; then
		search || return 1
	fi
	say "$CUR: done"
}

PARAMS=$W/params.json
python3 - "$PARAMS" <<EOF
import json, sys
json.dump({"model": "$MODEL", "size_bytes": ${SIZE_BYTES:-None}, "workload": "$WORKLOAD",
           "rate_bps": $RATE, "io_bytes": $IO, "depth": $DEPTH,
           "duration_s": $DURATION, "fill": $FILL, "be": "$BE",
           "be_file_bytes": $([ "$BE" = greedy ] && echo "$BE_BYTES" || echo None),
           "play_files": $PLAY, "file_size_bytes": $FILE_BYTES, "seed": $SEED,
           "reserve": bool($RESERVE), "avfs_mkfs_args": "${AVFS_MKFS_ARGS:-}",
           "scenario": "$SCENARIO" or None,
           "stall": {"at_s": ${STALL_AT:-0}, "length_s": ${STALL_LEN:-0}} if "$STALL" else None,
           "configs": "$CONFIGS".split(","),
           "search": {"duration_s": $SEARCH_DURATION, "max": $SEARCH_MAX} if $SEARCH else None},
          open(sys.argv[1], "w"))
EOF

for CUR in "${CFG[@]}"; do
	one_config
	teardown
done

# ---- the report ----
python3 - "$W" "$JSON" "$OUT" "$HERE" <<'EOF'
import json, os, sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, sys.argv[4])
from benchlib import emit, load, kv
W, as_json, out = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
R = os.path.join(W, "results")
P = json.load(open(os.path.join(W, "params.json")))

ETIME = 62


def stall_of(base, h):
    """the stall of a measured run: taken by hddemu, when written (s after dvr's launch), and
    dvr's misses per stream and when they were due (s on dvr's clock; per whole second of
    it in misses_by_second), from its --csv"""
    s = {"taken": h.get("stalls"), "written_at_s": None, "misses_by_stream": None,
         "miss_first_s": None, "miss_last_s": None, "misses_by_second": None}
    try:
        s["written_at_s"] = float(open(base + ".stall").read())
    except (OSError, ValueError):
        pass
    try:
        by, due = {}, []
        with open(base + ".dvr.csv") as f:
            next(f)
            for line in f:	# stream,k,issue_ns,deadline_ns,complete_ns,result (dvr.c)
                st, _, _, dl, co, res = line.strip().split(",")
                dl, co, res = int(dl), int(co), int(res)
                by.setdefault(st, 0)
                if res == -ETIME or (co > dl and not (res < 0 and res != -ETIME)):
                    by[st] += 1
                    due.append(dl)
        s["misses_by_stream"] = by
        if due:
            s["miss_first_s"], s["miss_last_s"] = min(due) / 1e9, max(due) / 1e9
            s["misses_by_second"] = [0] * (max(due) // 1000000000 + 1)
            for dl in due:
                s["misses_by_second"][dl // 1000000000] += 1
    except (OSError, ValueError, StopIteration):
        pass
    return s


def measured(base):
    """dvr's summary, hddemu's statistics, BE and avfsd figures of one run."""
    r = {}
    d = load(base + ".dvr.json")
    if d:
        for k in ("workload", "elapsed_s", "rt_requests", "deadline_misses", "io_errors", "p0",
                  "margin_ms", "read_mbs", "write_mbs"):
            r[k] = d.get(k)
    h = kv(base + ".hdd")
    r["disk_utilization"] = h.get("utilization")
    r["seek_mean_gb"] = h["seek_mean_bytes"] / 1e9 if "seek_mean_bytes" in h else None
    r["hddemu"] = h
    if os.path.exists(base + ".be"):
        try:
            r["be_mbs"] = float(open(base + ".be").read().split()[0])
        except (OSError, ValueError, IndexError):
            r["be_mbs"] = None
    if os.path.exists(base + ".stall") or os.path.exists(base + ".dvr.csv"):
        r["stall"] = stall_of(base, h)
    a = load(base + ".admin.json")
    if a:
        r["avfsd"] = {"disk_utilization": a.get("disk_utilization"), "rt": a.get("rt"),
                      "seek_distance": a.get("seek_distance"), "be": a.get("be"),
                      "queue": a.get("queue")}
    return r

results, searches = [], []
for c in P["configs"]:
    d = os.path.join(R, c)
    e = {"configuration": c}
    if os.path.exists(os.path.join(d, "error")):
        e["error"] = open(os.path.join(d, "error")).read().strip()
    if os.path.exists(os.path.join(d, "run.dvr.json")):
        e.update(measured(os.path.join(d, "run")))
    try:
        e["fill_actual"] = float(open(os.path.join(d, "fill")).read())
    except (OSError, ValueError):
        pass
    results.append(e)
    if P["search"]:
        s = {"configuration": c, "duration_s": P["search"]["duration_s"], "trials": []}
        try:
            for line in open(os.path.join(d, "search")):
                n, wl, rc, k = line.split()
                t = measured(os.path.join(d, k))
                t["exit"] = int(rc)
                t["zero_misses"] = (rc == "0" and t.get("deadline_misses") == 0
                                    and t.get("io_errors") == 0)
                s["trials"].append(t)
        except OSError:
            pass
        try:	# "LO LO_MIX [HI_MIX]": no HI_MIX when the search reached --search-max
            r = open(os.path.join(d, "search.result")).read().split()
            s["max_zero_miss"] = r[1] if int(r[0]) > 0 else None
            s["first_failing"] = r[2] if len(r) > 2 else None
            s["capped"] = len(r) == 2
        except (OSError, IndexError, ValueError):
            s["error"] = e.get("error", "no result")
        searches.append(s)

warnings = [l.strip() for l in open(os.path.join(W, "warnings")) if l.strip()]
for e in results:
    t = (e.get("hddemu") or {}).get("timing_err_mean_us")
    if isinstance(t, (int, float)) and t > 1000:
        warnings.append("%s: hddemu's mean timing error %.0f us exceeds 1 ms"
                        % (e["configuration"], t))
    if P.get("stall") and "rt_requests" in e and (e.get("stall") or {}).get("taken") != 1:
        warnings.append("%s: hddemu took %s stalls in the measured run, not 1"
                        % (e["configuration"], (e.get("stall") or {}).get("taken")))
doc = {"params": P, "results": results, "search": searches if P["search"] else None,
       "warnings": warnings}
if emit(doc, as_json, out):
    sys.exit(0)

def f(v, fmt):
    return "-" if v is None else fmt % v

def pct(v, fmt):
    return "-" if v is None else fmt % (100 * v)

print("peer-compare: model %s%s (hddemu, real time), workload %s: %.2f Mbit/s per stream, "
      "%d KiB requests, depth %d" % (P["model"], ", %d bytes" % P["size_bytes"] if P["size_bytes"]
      else "", P["workload"], P["rate_bps"] / 1e6, P["io_bytes"] >> 10, P["depth"]))
be = ("greedy sequential 1 MiB O_DIRECT reader of a %d MiB file" % (P["be_file_bytes"] >> 20)
      if P["be"] == "greedy" else "none")
print("  %g s per configuration, disk filled to %g (fallocate) with %d play files of %d MiB "
      "at random places in the fill (seed %d); BE: %s" % (P["duration_s"], P["fill"],
      P["play_files"], P["file_size_bytes"] >> 20, P["seed"], be))
print("  ext4: mkfs.ext4 defaults, mount -o noinit_itable, dvr --mode posix (io_uring O_DIRECT);"
      " avfsd: mkfs.avfs --disk-model %s%s, dvr --mode avio%s" % (P["model"],
      " " + P["avfs_mkfs_args"] if P["avfs_mkfs_args"] else "",
      " --reserve" if P["reserve"] else ""))
if P.get("scenario"):
    print("  scenario %s (bench/scenario_rt.py; options given beside it override it)" % P["scenario"])
print("  one fresh emulated disk per configuration; utilization and seeks from hddemu; "
      "margin = deadline - completion")
print()
hdr = ("configuration", "RT requests", "misses", "P0", "margin p1 ms", "margin p50 ms",
       "disk util", "mean seek GB", "BE MB/s")
rows = []
for e in results:
    if "rt_requests" not in e:
        rows.append((e["configuration"], "FAILED: " + e.get("error", "?")))
        continue
    m = e.get("margin_ms") or {}
    rows.append((e["configuration"], "%d" % e["rt_requests"], "%d" % e["deadline_misses"],
                 "%.4g" % e["p0"], f(m.get("p01"), "%.1f"), f(m.get("p50"), "%.1f"),
                 pct(e["disk_utilization"], "%.1f%%"),
                 f(e["seek_mean_gb"], "%.2f"), f(e.get("be_mbs"), "%.1f")))
w = [max([len(hdr[i])] + [len(r[i]) for r in rows if len(r) > 2 or i == 0])
     for i in range(len(hdr))]
print("  ".join(h.rjust(w[i]) if i else h.ljust(w[i]) for i, h in enumerate(hdr)))
for r in rows:
    if len(r) == 2:
        print(r[0].ljust(w[0]) + "  " + r[1])
    else:
        print("  ".join(v.rjust(w[i]) if i else v.ljust(w[i]) for i, v in enumerate(r)))
terr = [(e["hddemu"]["timing_err_mean_us"], e["hddemu"]["timing_err_max_us"]) for e in results
        if "rt_requests" in e and "timing_err_mean_us" in (e.get("hddemu") or {})]
if terr:
    print("hddemu's timing error (reply - model completion): mean %.0f-%.0f us, max %.1f ms"
          % (min(t[0] for t in terr), max(t[0] for t in terr), max(t[1] for t in terr) / 1e3))
if P.get("stall"):
    print()
    print("stall: the drive stalled %g s, %g s after dvr started, once per measured run (hddemu's "
          "stall file); misses by stream; when the missed requests were due (s on dvr's clock, "
          "which starts ~0.1 s after its launch)" % (P["stall"]["length_s"], P["stall"]["at_s"]))
    for e in results:
        st = e.get("stall")
        if not st:
            continue
        by = st.get("misses_by_stream") or {}
        due = ("-" if st.get("miss_first_s") is None
               else "%.2f-%.2f s" % (st["miss_first_s"], st["miss_last_s"]))
        order = sorted(by, key=lambda n: (n[0], int(n[1:])))	# r0 r1 ... w0 ...
        print("  %s: stalls taken %s (written at %s s), misses %s, due %s, margin min %s ms; "
              "by stream: %s" % (e["configuration"], f(st.get("taken"), "%d"),
                                 f(st.get("written_at_s"), "%.2f"),
                                 f(e.get("deadline_misses"), "%d"), due,
                                 f((e.get("margin_ms") or {}).get("min"), "%.1f"),
                                 " ".join("%s:%d" % (n, by[n]) for n in order) or "-"))
if P["search"]:
    print()
    print("search: the largest mix (read:write as %s) with zero misses, runs of %g s "
          "(shorter than the measured run: a mix that holds here may still miss in a longer run)"
          % (P["workload"], P["search"]["duration_s"]))
    hdr2 = ("configuration", "max zero-miss", "first failing", "trials (mix:misses, utilization)")
    rows = []
    for s in searches:
        tr = " ".join("%s:%s,%s" % (t.get("workload") or "?", f(t.get("deadline_misses"), "%d"),
                      pct(t.get("disk_utilization"), "%.0f%%")) for t in s["trials"])
        best = s.get("max_zero_miss") or ("-" if "error" not in s else "FAILED")
        if s.get("capped"):
            best = ">= " + best
        rows.append((s["configuration"], best, s.get("first_failing") or "-", tr))
    w = [max([len(hdr2[i])] + [len(r[i]) for r in rows]) for i in range(3)]
    print("  ".join(hdr2[i].ljust(w[i]) for i in range(3)) + "  " + hdr2[3])
    for r in rows:
        print("  ".join(r[i].ljust(w[i]) for i in range(3)) + "  " + r[3])
if warnings:
    print()
    for l in warnings:
        print("warning: " + l)
EOF
rc=$?
[ $rc = 0 ] || { echo "peer-compare: the report failed" >&2; FAILED_ANY=1; exit 1; }
[ -z "${FAILED_ANY:-}" ] && [ ! -s "$WARN" ] || exit 1
exit 0
