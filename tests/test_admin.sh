#!/bin/bash
# test_admin.sh — reservations and statistics through a running avfsd (issue 7, SPEC §7, §10):
# avfs-admin reserve/streams/release/status/stats --json, over-subscription refused with a
# reason, per-user quotas from --config, a client killed while holding a reservation frees
# it, a dvr run with reservations traced and plotted (one series per stream), a malformed
# configuration refused, stats --prometheus parsed by prometheus_client. Env: AVFSD MKFS FSCK
# ADMIN DVR (the built binaries).
set -u
. "$(dirname "$0")/daemon_env.sh"
avfs_require
: "${ADMIN:=$AVFS_ENV_DIR/../build/tools/avfs-admin}"
: "${DVR:=$AVFS_ENV_DIR/../build/examples/dvr}"
command -v python3 >/dev/null || { echo "FAIL: python3 is needed to read the JSON"; exit 1; }
NOBODY="setpriv --reuid 1000 --regid 1000 --clear-groups"
avfs_env_init

cat >"$AVFS_T/avfsd.conf" <<'EOF'
# test configuration: a scheduler setting, admission settings, quotas
margin=500ms
be-floor 2%
isolation on
quota uid=1000 rate=10M streams=1
clients-per-uid 32
detached-quota streams=2 share=50%
EOF
admin() { "$ADMIN" --socket "$SOCK" "$@"; }
# jq-like: json FILE EXPR (EXPR in python over `d`)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

check "mkfs.avfs 4G, 4 MiB blocks" avfs_mkfs --size 4G --block-size 4M
check "avfsd mounts with --config" avfs_start --allow-other --config "$AVFS_T/avfsd.conf"
dd if=/dev/urandom of="$MNT/movie" bs=1M count=16 status=none
chmod 666 "$MNT/movie"

# ---- reserve, streams, refusal ----
out=$(admin reserve "$MNT/movie" --rate 19.39Mbit --buffer 16M)
check "reserve: admitted, says its id" grep -q "^reservation 1:" <<<"$out"
admin streams --json >"$AVFS_T/s.json"
check "streams --json: one detached read stream at 2423750 B/s" \
	test "$(json "$AVFS_T/s.json" "[(s['id'], s['detached'], s['direction'], s['rate']) for s in d['streams']]")" = \
	"[(1, True, 'read', 2423750)]"
n=1
refused=
for i in $(seq 40); do
	if admin reserve "$MNT/movie" --rate 19.39Mbit --buffer 16M >/dev/null 2>"$AVFS_T/err"; then
		n=$((n + 1))
	else
		refused=$?
		break
	fi
done
echo "  admitted $n HD streams with 16 MiB buffers before the first refusal"
check "over-subscription refused (exit 1)" test "$refused" = 1
check "the refusal says why (the disk: its rounds and the share they need)" \
	grep -q "refused (Device or resource busy): the disk: rounds of .* ms need" "$AVFS_T/err"
check "the refusal says what is left" grep -q "left: .* of disk time" "$AVFS_T/err"
check "the refusal gives the largest rate still admitted" grep -q "at most .* MB/s" "$AVFS_T/err"
admin status --json >"$AVFS_T/st.json"
check "status: $n streams, load within 1 - be_floor" test "$(json "$AVFS_T/st.json" \
	"d['streams'] == $n and 0 < d['admission']['load'] <= 1 - d['admission']['be_floor'] + 1e-9")" = True
admin reserve "$MNT/movie" --rate fast --buffer 1M 2>/dev/null
check "a bad rate is bad usage (exit 2)" test $? = 2
# messages that say what is wrong (issue 17)
says() {	# says RC TEXT CMD...: CMD exits RC and says TEXT on stderr
	local rc=$1 text=$2 err got
	shift 2
	err=$("$@" 2>&1 >/dev/null)
	got=$?
	[ $got = "$rc" ] && case "$err" in *"$text"*) true ;; *) false ;; esac && return 0
	echo "  '$*': exit $got, '$err'; want $rc, '$text'"
	return 1
}
check "reserve --read --write: they exclude each other (exit 2)" \
	says 2 "--read and --write exclude each other" "$ADMIN" reserve "$MNT/movie" --rate 1M --buffer 1M --read --write
check "reserve on a file off any AVFS mount: says so" \
	says 1 "/etc/passwd is not on an AVFS mount" "$ADMIN" reserve /etc/passwd --rate 1M --buffer 1M
check "reserve on another file system's file through --socket: says so (was EXDEV)" \
	says 1 "is not on the file system this avfsd serves" admin reserve /etc/passwd --rate 1M --buffer 1M
check "release -1: not a reservation id (exit 2)" says 2 "'-1' is not a reservation id" admin release -1
mkdir "$AVFS_T/plain"
check "dvr --mode avio on a folder off AVFS: refused before it writes anything" \
	bash -c "'$DVR' --mode avio --workload 1r0w --dir '$AVFS_T/plain' --duration 1 2>&1 | grep -q 'is not on an AVFS mount' && [ -z \"\$(ls -A '$AVFS_T/plain')\" ]"
# every write failing (a full tmpfs), each failure late (a 1 us period): errors, not misses
mkdir "$AVFS_T/full"
if mount -t tmpfs -o size=1M tmpfs "$AVFS_T/full"; then
	dd if=/dev/zero of="$AVFS_T/full/fill" bs=64K count=32 status=none 2>/dev/null
	"$DVR" --mode posix --workload 0r1w --dir "$AVFS_T/full" --duration 0.01 --rate 32G --io 4K \
		--depth 1 --json >"$AVFS_T/full.json" 2>"$AVFS_T/full.err"
	rc=$?
	umount "$AVFS_T/full"
	check "dvr whose every request fails, late: exit 1, every one an I/O error, the errno said (was: misses, exit 0)" \
		test "$rc $(json "$AVFS_T/full.json" "d['io_errors'] == d['rt_requests'] > 0 and d['deadline_misses'] == 0") $(grep -c 'requests failed, the first with: No space left on device' "$AVFS_T/full.err")" = "1 True 1"
else
	echo "(no tmpfs to fill: dvr's I/O errors are not checked)"
fi
admin reserve "$MNT/movie" --rate 1M --buffer 256K >/dev/null 2>"$AVFS_T/err"
check "a buffer not larger than one request: refused as invalid" grep -q "Invalid argument" "$AVFS_T/err"

# ---- release ----
check "release 1" admin release 1
admin streams --json >"$AVFS_T/s.json"
check "release 1: $((n - 1)) streams left, 1 not among them" test "$(json "$AVFS_T/s.json" \
	"len(d['streams']) == $n - 1 and 1 not in [s['id'] for s in d['streams']]")" = True
admin release 1 2>"$AVFS_T/err"
check "release 1 again: exit 1, no such reservation" bash -c "[ $? = 1 ] && grep -q 'no such reservation' '$AVFS_T/err'"
for id in $(json "$AVFS_T/s.json" "' '.join(str(s['id']) for s in d['streams'])"); do
	admin release "$id" >/dev/null
done
check "all released: no streams" test "$(admin streams --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["streams"]))')" = 0

# ---- quotas (uid 1000: one stream, 10 MB/s) ----
check "uid 1000 reserves within its quota" $NOBODY "$ADMIN" --socket "$SOCK" reserve "$MNT/movie" --rate 2M --buffer 16M
$NOBODY "$ADMIN" --socket "$SOCK" reserve "$MNT/movie" --rate 2M --buffer 16M 2>"$AVFS_T/err"
check "uid 1000's second stream: refused by its quota (exit 1, -EDQUOT)" \
	bash -c "[ $? = 1 ] && grep -q 'Disk quota exceeded' '$AVFS_T/err'"
admin reserve "$MNT/movie" --rate 2M --buffer 16M >"$AVFS_T/out"
root_id=$(sed -n 's/^reservation \([0-9]*\):.*/\1/p' "$AVFS_T/out")
$NOBODY "$ADMIN" --socket "$SOCK" release "$root_id" 2>"$AVFS_T/err"
check "uid 1000 cannot release root's reservation" bash -c "[ $? = 1 ] && grep -q 'not permitted' '$AVFS_T/err'"
for id in $(admin streams --json | python3 -c 'import json,sys; print(" ".join(str(s["id"]) for s in json.load(sys.stdin)["streams"]))'); do
	admin release "$id" >/dev/null
done

# ---- a client killed while holding a reservation ----
AVFS_SOCKET=$SOCK "$DVR" --mode avio --workload 1r0w --dir "$MNT" --duration 60 \
	--file-size 64M --reserve >"$AVFS_T/dvr1.out" 2>&1 &
dvr_pid=$!
held=0
for i in $(seq 100); do
	if [ "$(admin streams --json | python3 -c 'import json,sys; print(sum(1 for s in json.load(sys.stdin)["streams"] if not s["detached"]))')" = 1 ]; then
		held=1
		break
	fi
	sleep 0.1
done
check "dvr --reserve holds one client reservation" test $held = 1
kill -9 $dvr_pid
wait $dvr_pid 2>/dev/null
freed=0
for i in $(seq 50); do
	if [ "$(admin streams --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["streams"]))')" = 0 ]; then
		freed=1
		break
	fi
	sleep 0.1
done
check "kill -9 of the client frees its reservation" test $freed = 1

# ---- a traced dvr run with reservations: stats and plot ----
admin trace --duration 9 --out "$AVFS_T/trace.csv" >/dev/null 2>"$AVFS_T/trace.err" &
trace_pid=$!
sleep 0.3
AVFS_SOCKET=$SOCK "$DVR" --mode avio --workload 4r2w --dir "$MNT" --duration 6 \
	--file-size 64M --reserve --json >"$AVFS_T/dvr.json" 2>"$AVFS_T/dvr.err"
check "dvr 4r2w --reserve: admitted and ran" test -s "$AVFS_T/dvr.json"
check "dvr 4r2w --reserve: zero misses" test "$(json "$AVFS_T/dvr.json" "d['deadline_misses']")" = 0
admin stats --json >"$AVFS_T/stats.json"
check "stats --json: every documented field" test "$(json "$AVFS_T/stats.json" "all(k in d for k in ('uptime_s','disk_utilization','rt','streams','seek_distance','be','queue','model','mixer')) and all(k in d['rt'] for k in ('requests','misses','p0','margin_ms')) and all(k in d['rt']['margin_ms'] for k in ('min','p001','p01','p50'))")" = True
check "stats --json: consistent (RT requests = dvr's, no misses, utilization in (0, 1], seeks counted)" \
	test "$(json "$AVFS_T/stats.json" "d['rt']['requests'] >= $(json "$AVFS_T/dvr.json" "d['rt_requests']") and d['rt']['misses'] == 0 and 0 < d['disk_utilization'] <= 1 and sum(d['seek_distance']['counts']) > 0 and d['model']['rotation_ms'] > 0 and d['rt']['margin_ms']['min'] <= d['rt']['margin_ms']['p50']")" = True
check "stats (table) runs" bash -c "'$ADMIN' --socket '$SOCK' stats | grep -q 'disk utilization'"
# a reservation to show per stream, then the Prometheus exposition read by Prometheus's parser
admin reserve "$MNT/movie" --rate 1M --buffer 1M >/dev/null
# the python that has Prometheus's parser: PATH's, or Debian's (python3-prometheus-client
# installs for /usr/bin/python3 only); neither: a failure that says what to install
PROM_PY=
for py in python3 /usr/bin/python3; do
	"$py" -c 'import prometheus_client.parser' 2>/dev/null && PROM_PY=$py && break
done
prometheus_parses() {
	[ -n "$PROM_PY" ] || { echo "  no prometheus_client for python3 (apt-get install" \
		"python3-prometheus-client, or pip install prometheus-client)"; return 1; }
	"$PROM_PY" "$AVFS_ENV_DIR/check_prometheus.py" "$ADMIN" "$SOCK"
}
check "stats --prometheus: Prometheus's parser reads it; the JSON's figures" prometheus_parses
check "reset refused to another user (exit 1)" bash -c "! $NOBODY '$ADMIN' --socket '$SOCK' reset 2>/dev/null"
check "reset by root: a new measurement, no RT request in it yet" bash -c "'$ADMIN' --socket '$SOCK' reset >/dev/null && '$ADMIN' --socket '$SOCK' stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[\"rt\"][\"requests\"] == 0 else 1)'"
wait $trace_pid
check "trace --duration 9: a file, header first" bash -c "head -1 '$AVFS_T/trace.csv' | grep -q '^submit_ns,complete_ns,stream,class'"
check "trace: the six dvr streams' RT requests in it" test "$(awk -F, 'NR > 1 && $4 == "rt" { s[$3] = 1 } END { print length(s) }' "$AVFS_T/trace.csv")" -ge 6
check "plot the trace" "$ADMIN" plot "$AVFS_T/trace.csv" --out "$AVFS_T/trace.svg"
check "plot: well-formed SVG with one series per stream of the trace" python3 - "$AVFS_T/trace.svg" "$AVFS_T/trace.csv" <<'EOF'
import csv, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
series = {}
for g in root.iter('{http://www.w3.org/2000/svg}g'):
    if 'series' in (g.get('class') or '').split() and g.get('data-stream') is not None:
        series[g.get('data-stream')] = series.get(g.get('data-stream'), 0) + 1
in_svg = {s for s in series if s.lstrip('-').isdigit() and int(s) >= 0}
in_trace = {r['stream'] for r in csv.DictReader(open(sys.argv[2])) if int(r['stream']) >= 0}
print("  streams in the trace:", sorted(in_trace, key=int), "series in the SVG:", sorted(in_svg, key=int))
sys.exit(0 if in_svg == in_trace and len(in_trace) >= 6 else 1)
EOF
$NOBODY "$ADMIN" --socket "$SOCK" trace --duration 1 --out "$AVFS_T/t2.csv" 2>"$AVFS_T/err"
check "trace is root's: uid 1000 refused, no file left" bash -c "[ $? = 1 ] && [ ! -e '$AVFS_T/t2.csv' ]"

# ---- stop; a malformed configuration ----
check "clean unmount" avfs_stop
# refused NAME WHAT EXPECTED CONTENT: avfsd with the configuration CONTENT exits non-zero and
# its log has EXPECTED (the file, line and setting)
refused() {
	printf "$4" >"$AVFS_T/$1.conf"
	timeout 30 "$AVFSD" --foreground --socket "$SOCK" --config "$AVFS_T/$1.conf" "$IMG" "$MNT" \
		>"$AVFS_T/$1.log" 2>&1
	local rc=$?
	check "$2" bash -c "[ $rc -ne 0 ] && grep -q '$1.conf:$3' '$AVFS_T/$1.log'"
}
refused bad "a malformed configuration: avfsd exits non-zero, naming the line" "1: quota" \
	'quota uid=1000 rate=lots\n'
refused bad2 "a client limit out of range: refused, naming the line" "2: detached-quota" \
	'margin=500ms\ndetached-quota share=150%%\n'
check "nothing mounted after the refusal" bash -c "! grep -q ' $MNT fuse' /proc/mounts"
check "fsck.avfs -n clean" timeout 60 "$FSCK" -n "$IMG"
avfs_summary
