#!/bin/bash
# reserve_rt_smoke.sh — bench/reserve-rt.sh --smoke end to end (issue 15): three reservation
# requests of avfs-sim reserve's seed 1 asked of avfsd on a small hddemu disk, the admitted
# ones run a few seconds; the table and --out's JSON must list all three, each either admitted
# and run (RT requests > 0) or refused with the daemon's reason, and the JSON carry the disk's
# figures. Env: HDDEMU HDDEMU_ATTACH AVFSD MKFS ADMIN DVR AVFS_SIM (the built binaries). It
# judges no figure. Exits 77 (SKIP) without root, /dev/fuse or losetup, or when hddemu is not
# built.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/checks.sh"
avfs_need_hddemu

bench_smoke reserve-rt.sh
check "the table has a line per request" \
	eval '[ "$(grep -cE "^ +[0-2] +[0-9.]+ +[0-9]+M +[0-9]+K +[rw] " "$T/table")" = 3 ]'
check "the summary line says what was admitted and missed" \
	grep -qE "^admitted [0-3] of 3 .* misses" "$T/table"
check "--out: every request either ran (RT requests > 0) or was refused with a reason" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["requests"]
ok = len(rows) == 3 and all((r["admitted"] and r["rt_requests"] > 0 and r["why"] is None) or
                            (not r["admitted"] and "refused" in r["why"]) for r in rows)
s = d["summary"]
ok = ok and s["admitted"] == sum(r["admitted"] for r in rows) and \
    (s["admitted"] == 0 or s["disk_utilization"] > 0) and \
    d["params"]["model"] == "travelstar-20g" and d["params"]["requests"] == 3 and \
    s["fsync_failures"] == 0 and (s["admitted"] == 0 or
                                  s["fsyncs"] >= 1 and s["fsync_max_s"] >= s["fsync_median_s"] > 0)
sys.exit(0 if ok else 1)' "$T/out.json"
bash "$HERE/../bench/reserve-rt.sh" --requests 0 >/dev/null 2>"$T/err"
rc=$?
check "--requests 0 refused (exit 2, said)" eval 'test $rc = 2 && grep -q "requests" "$T/err"'
bash "$HERE/../bench/reserve-rt.sh" --fill 2 >/dev/null 2>"$T/err"
rc=$?
check "--fill 2 refused (exit 2)" test $rc = 2
bash "$HERE/../bench/reserve-rt.sh" --fsync-every soon >/dev/null 2>"$T/err"
rc=$?
check "--fsync-every soon refused (exit 2, said)" eval 'test $rc = 2 && grep -q "fsync-every" "$T/err"'
avfs_summary
