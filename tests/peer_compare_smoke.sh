#!/bin/bash
# peer_compare_smoke.sh — bench/peer-compare.sh --smoke end to end (issue 9): ext4 with
# mq-deadline and avfsd, each on a fresh small hddemu disk for a few seconds; the table must
# list both with a numeric RT-requests column > 0, and --out's JSON must agree with it; with
# --stall the drive stalls once in each run (hddemu took one stall, the report says so).
# A scenario file (issue 15) the same way: its workload, rate and greedy reader reach the run
# (the smoke's disk and a smaller mix given beside it), and a scenario real time cannot play
# is refused with the key. Env: HDDEMU HDDEMU_ATTACH AVFSD MKFS ADMIN DVR AVFS_SIM (the built
# binaries). It judges no figure.
# Exits 77 (SKIP) without root, /dev/fuse or losetup, or when hddemu is not built.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/checks.sh"
avfs_need_hddemu

bench_smoke peer-compare.sh --stall 1:0.5
for c in ext4-mq-deadline avfsd; do
	check "the table has $c with RT requests > 0" \
		awk -v c="$c" '$1 == c && $2 ~ /^[0-9]+$/ && $2 > 0 { f = 1 } END { exit !f }' "$T/table"
done
check "the parameters are printed" grep -q "model travelstar-20g.*workload 2r0w" "$T/table"
check "--out: the JSON has both configurations with the table's RT requests" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = {l.split()[0]: l.split()[1] for l in open(sys.argv[2]) if l.split()}
r = {e["configuration"]: e for e in d["results"]}
sys.exit(0 if all(str(r[c]["rt_requests"]) == rows[c] and r[c]["disk_utilization"] > 0
                  for c in ("ext4-mq-deadline", "avfsd")) else 1)' "$T/out.json" "$T/table"
check "--stall: the parameters and the table say it, hddemu took one stall in each run" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["params"]["stall"] == {"at_s": 1, "length_s": 0.5} and all(
    e["stall"]["taken"] == 1 and e["hddemu"]["stall_ns_total"] == 500000000
    and sum(e["stall"]["misses_by_stream"].values()) == e["deadline_misses"]
    for e in d["results"])
sys.exit(0 if ok and "stall: the drive stalled 0.5 s, 1 s after" in open(sys.argv[2]).read()
         else 1)' "$T/out.json" "$T/table"
bash "$HERE/../bench/peer-compare.sh" --smoke --stall 3:1 >/dev/null 2>"$T/err"
rc=$?
check "--stall: AT beyond --duration refused (exit 2, said)" \
	eval 'test $rc = 2 && grep -q "AT within --duration" "$T/err"'
bash "$HERE/../bench/peer-compare.sh" --smoke --stall 1:2x >/dev/null 2>"$T/err"
rc=$?
check "--stall: a bad LENGTH refused (exit 2)" eval 'test $rc = 2 && grep -q "AT:LENGTH" "$T/err"'

S=$HERE/../scenarios
bash "$HERE/../bench/peer-compare.sh" --scenario "$S/peer-mix-3to1-be.scn" --smoke \
	--workload 3r1w --rate 8M --configs avfsd --out "$T/scn.json" >"$T/scn" 2>"$T/err"
rc=$?
cat "$T/scn"
[ $rc = 0 ] || { echo "peer-compare.sh --scenario exit status $rc; its stderr:"; cat "$T/err"; }
check "--scenario: exits 0" test $rc = 0
check "--scenario: the file's greedy reader, the given mix and rate ran" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p, r = d["params"], d["results"][0]
sys.exit(0 if p["be"] == "greedy" and p["workload"] == "3r1w" and p["rate_bps"] == 8000000
         and p["scenario"].endswith("peer-mix-3to1-be.scn") and r["rt_requests"] > 0 else 1)' "$T/scn.json"
bash "$HERE/../bench/peer-compare.sh" --scenario "$S/papers004-table3.1.scn" --smoke \
	>/dev/null 2>"$T/err"
rc=$?
check "--scenario: per-round deadlines refused (exit 2, the key named)" \
	eval 'test $rc = 2 && grep -q "round" "$T/err"'
avfs_summary
