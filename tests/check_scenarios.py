#!/usr/bin/env python3
"""check_scenarios.py — every shipped scenario file (scenarios/*.scn) run by avfs-sim for five
simulated seconds on the outer 32 GiB of its disk model (--set size=32G: the fill before the
run takes no time), as a user runs them: the JSON has a class per [stream] section and a
generator per [be] section, with figures that make sense; the canonical form (--print) reads
back to itself; a file of avfs-sim's own workload gives that workload's figures; overrides and
search --grow do what they say; bad files exit 2 with FILE:LINE: field 'KEY'. The full-length
figures are in docs/SCENARIOS.md.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

from checklib import check, run, run_json, verdict

sim, folder = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(folder, "*.scn")))
SHORT = ["--duration", "5", "--set", "size=32G"]
check(f"{len(files)} scenario files shipped (at least 10)", len(files) >= 10)


def sections(path):
    """The [stream NAME] and [be NAME] names of a file, in order, and each one's count."""
    out = {"stream": [], "be": []}
    kind = None
    for line in open(path):
        line = line.split("#")[0].strip()
        m = re.match(r"\[\s*(stream|be)\s+(\S+)\s*\]$", line)
        if m:
            kind = m.group(1)
            out[kind].append([m.group(2), 1])
        elif kind and re.match(r"count\s*=", line):
            out[kind][-1][1] = int(line.split("=")[1])
    return out


def strip(d):
    return {k: v for k, v in d.items() if k not in ("wall_s", "fill_wall_s", "decision_us",
                                                    "scenario", "workload", "rate_bps", "io",
                                                    "depth", "reserved", "classes",
                                                    "generators")}


for path in files:
    name = os.path.basename(path)
    head = "".join(line for line in open(path) if line.startswith("#"))
    check(f"{name}: its header cites a paper's section and what it reports",
          re.search(r"papers/00[0-4] .*§", head) is not None and "report" in head)
    r = run_json([sim, "run", path, *SHORT, "--json"])
    if not r:
        continue
    sec = sections(path)
    check(f"{name}: a class per [stream] section, in order",
          [c["name"] for c in r["classes"]] == [n for n, _ in sec["stream"]] and
          [c["streams"] for c in r["classes"]] == [k for _, k in sec["stream"]])
    check(f"{name}: a generator per [be] section, in order",
          [g["name"] for g in r["generators"]] == [n for n, _ in sec["be"]])
    check(f"{name}: utilization within 0..1, P0 within 0..1",
          0 <= r["disk_utilization"] <= 1 and 0 <= r["p0"] <= 1)
    for c in r["classes"]:
        sane = (c["misses"] <= c["rt_requests"] and c["mib_s"] >= 0 and 0 <= c["p0"] <= 1 and
                c["overdue"] >= 0)
        moving = c["streams"] == 0 or c["mib_s"] > 0
        rt = c["streams"] == 0 or c["deadlines"] == "none" or c["rt_requests"] > 0
        check(f"{name}: class {c['name']}: sane, moves data, real time when it has deadlines",
              sane and moving and rt)
        if c["asked_mib_s"] and c["streams"]:
            # over 5 s the last buffer's worth may still be held back for its deadline (tm
            # sends a request near its deadline: up to 1.7 s of a 4 MiB buffer at 19.39 Mbit/s);
            # a request or a round more than the rate may be done (phases, rounds up)
            check(f"{name}: class {c['name']} got half its rate or more, a quarter over at most",
                  0.5 * c["asked_mib_s"] <= c["mib_s"] <= 1.25 * c["asked_mib_s"])
    for g in r["generators"]:
        busy = g["kind"] == "delete" or g["count"] == 0 or g["requests"] > 0
        check(f"{name}: generator {g['name']}: requests done, no errors",
              busy and g["errors"] == 0 and g["bytes"] >= 0)
    # the canonical form reads back to itself
    p1 = run([sim, "run", path, "--print"])
    with tempfile.NamedTemporaryFile("w", suffix=".scn", delete=False) as t:
        t.write(p1.stdout)
    p2 = run([sim, "run", t.name, "--print"])
    os.unlink(t.name)
    check(f"{name}: --print reads back to the same text", p1.stdout and p1.stdout == p2.stdout)

# A file of avfs-sim's own NrMw workload gives that workload's figures, seed for seed.
dvr = os.path.join(folder, "papers001-8r0w.scn")
a = run_json([sim, "run", dvr, *SHORT, "--seed", "3", "--json"])
b = run_json([sim, "--workload", "8r0w", "--duration", "5", "--size", "32G", "--seed", "3",
              "--json"])
if a and b:
    check("papers001-8r0w.scn --seed 3 == --workload 8r0w --seed 3", strip(a) == strip(b))
pre = os.path.join(folder, "papers003-table2.scn")
a = run_json([sim, "run", pre, "--duration", "20", "--set", "size=32G", "--json"])
b = run_json([sim, "preempt", "--duration", "20", "--size", "32G", "--json"])
if a and b:
    row = b["runs"][2]
    check("papers003-table2.scn == avfs-sim preempt's chunked + JIT row",
          a["hp_mean_ms"] == row["hp_mean_ms"] and a["hp_requests"] == row["hp_requests"] and
          a["be_mbps"] == row["be_mbps"])

# The same seed, the same figures; overrides reach classes and generators.
t31 = os.path.join(folder, "papers004-table3.1.scn")
small = SHORT
a = run_json([sim, "run", t31, *small, "--json"])
b = run_json([sim, "run", t31, *small, "--json"])
if a and b:
    check("the same seed gives the same figures",
          strip(a) == strip(b) and a["classes"] == b["classes"])
o = run_json([sim, "run", t31, *small, "--set", "dvd.count=3", "--set", "streamer.count=0",
              "--policy", "edf", "--json"])
if o:
    cls = {c["name"]: c for c in o["classes"]}
    gen = {g["name"]: g for g in o["generators"]}
    check("--set CLASS.count and --policy override the file",
          cls["dvd"]["streams"] == 3 and gen["streamer"]["requests"] == 0 and
          o["policy"] == "edf" and o["duration_s"] == 5)

# search --grow: one class grows, the rest stay; a fitting range has no miss anywhere.
s = run_json([sim, "search", os.path.join(folder, "papers001-2r0w-delete.scn"), "--grow", "play",
              "--max", "3", *small, "--json"])
if s:
    print(f"search --grow play (5 s runs, up to 3): largest {s['largest']}")
    check("search --grow: each count run, the largest without a miss",
          [x["count"] for x in s["steps"]] == [1, 2, 3] and s["largest"] == 3 and
          s["best"]["classes"][0]["streams"] == 3)

# Bad files: exit 2, the file, its line and the field; nothing run.
bad = [("[stream a]\nrate = 3\n", ":2: field 'rate': '3': say the unit"),
       ("disk = avfs-250g\nfill = 2\n", ":2: field 'fill'"),
       ("[stream a]\nrate = 1MiB/s\nround = 1s\nbuffer = 4M\n", ":3: field 'round'"),
       ("[be x]\nkind = delete\nio = 4K\n", ":3: field 'io'"),
       ("[stream a]\nrate = 1MiB/s\nspeed = 3\n", ":3: field 'speed': unknown key")]
with tempfile.TemporaryDirectory() as d:
    for text, want in bad:
        path = os.path.join(d, "bad.scn")
        open(path, "w").write(text)
        q = subprocess.run([sim, "run", path], capture_output=True, text=True)
        check(f"bad file ({want}): exit 2 with FILE:LINE: field",
              q.returncode == 2 and f"{path}{want}" in q.stderr and q.stdout == "")
for args in (["run", t31, "--set", "dvd.rate=fast"], ["run", t31, "--set", "nope.count=1"],
             ["search", t31], ["search", t31, "--grow", "nope"], ["run"],
             ["run", os.path.join(folder, "missing.scn")]):
    q = subprocess.run([sim, *args], capture_output=True, text=True)
    check(f"bad command line {args[1:]}: exit 2 with a message",
          q.returncode == 2 and q.stderr.strip() != "")

verdict()
