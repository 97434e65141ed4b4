#!/usr/bin/env python3
"""check_reserve.py — smoke versions of avfs-sim's admission and isolation studies (SPEC §7).

`reserve`: the set admission control admits meets every deadline, and every refusal is
accounted for with a reason; the admitted run's disk time split into the round model's terms
(its transfer share the disk's), the model's need of every prefix growing with it, no search
with --search-duration 0; the round model takes more than Fahrrad's test it replaced;
quotas refuse with -EDQUOT; the same seed gives the same figures; HD streams with 4 MiB
buffers: at least 12 admitted, all of them on time, where Fahrrad's test took 6; raw playbacks
in the innermost zones, whose layout admission is told, run on time; recordings that fill a
small disk (st318437) end the run as a full file system, not as misses. `isolation`: greedy
best-effort readers add no reserved miss; a greedy reserved reader gets about its rate when
best effort is busy and much more when it is idle; over-provisioning does not cost global
throughput; four streams reserving 20 % of disk time each get it. Short runs; the full-size
tables are in the closing notes of issue 7.
"""
import subprocess
import sys
import tempfile

from checklib import check, fails, run_json, verdict

sim = sys.argv[1]
MIB = 1048576


def run(*args):
    return run_json([sim, *args])


# ---- reserve ----
r = run("reserve", "--seeds", "2", "--duration", "120", "--json")
if r:
    for key in ("disk", "duration_s", "search_duration_s", "requests", "isolation", "test",
                "place", "alloc", "service", "seeds", "summary"):
        check(f"reserve json has {key}", key in r)
    check("reserve: the file system's default allocator, ZRR in runs", r.get("alloc") == "zrr-run")
    for s in r["seeds"]:
        for key in ("seed", "requested", "admitted", "admitted_rate_bps", "admission_load",
                    "disk_utilization", "rt_requests", "misses", "commit_max_s", "commits",
                    "checkpoints", "admitted_failed",
                    "max_streams", "max_rate_bps", "max_misses_full_duration",
                    "ratio_streams", "ratio_rate", "refused", "first_refusal",
                    "admitted_fahrrad", "sweep_round_ms", "sweep_gather_ms", "sweep_need",
                    "sweep_limit", "sweep", "measured", "max_sweep", "max_measured", "be_mib_s"):
            check(f"seed {s.get('seed')} has {key}", key in s)
        print(f"seed {s['seed']}: admitted {s['admitted']} of {s['requested']} "
              f"(load {s['admission_load']:.3f}), {s['rt_requests']} RT requests, "
              f"{s['misses']} misses; zero-miss maximum {s['max_streams']}")
        check(f"seed {s['seed']}: a set was admitted and ran", s["admitted"] > 0 and s["rt_requests"] > 0)
        check(f"seed {s['seed']}: the admitted set misses no deadline",
              s["misses"] == 0 and s["admitted_failed"] is None)
        # a commit is its journal write (the checkpoint after it, lazily): under a load that
        # leaves best effort one command per be_age (2 s) it takes a few floor periods, not
        # one per home and backup write (seed 1 took 16.9 s so)
        check(f"seed {s['seed']}: metadata commits go on beside the admitted set, each within "
              f"8 s ({s['commit_max_s']} s)", s["commit_max_s"] < 8)
        check(f"seed {s['seed']}: load within the limit, the limit within 1 - u_BE",
              s["admission_load"] == s["sweep_need"] and
              s["sweep_need"] <= s["sweep_limit"] <= 0.98)
        check(f"seed {s['seed']}: rounds of (p_min - W) / 2, some 100 ms at least",
              s["sweep_round_ms"] > 100)
        check(f"seed {s['seed']}: the rounds the hold gathers no shorter",
              s["sweep_gather_ms"] >= s["sweep_round_ms"])
        w = s["sweep"]
        check(f"seed {s['seed']}: the round model's shares add up to its need",
              abs(w["seek"] + w["rotation"] + w["transfer"] + w["write_turns"] + w["overheads"] +
                  w["margin"] + w["best_effort"] - s["sweep_need"]) < 0.002)
        check(f"seed {s['seed']}: coalescing (the mixer's default): fewer commands than requests "
              f"would need, no fewer than positionings", w["visits_per_s"] <= w["commands_per_s"])
        # the admitted run's disk time split into the model's terms (the simulated drive's
        # own components): the transfer term is exact, the others the model's to bound
        m = s.get("measured", {})
        for key in ("positionings_per_s", "waits_per_s", "commands_per_s", "seek", "rotation",
                    "write_rotation", "transfer", "overheads", "seek_ms_per_positioning",
                    "rotation_ms_per_wait"):
            check(f"seed {s['seed']}: measured {key}", key in m)
        if "transfer" in m:
            check(f"seed {s['seed']}: the model's transfer share is the disk's within 10 %",
                  abs(m["transfer"] - w["transfer"]) <= 0.10 * w["transfer"])
            check(f"seed {s['seed']}: the measured shares add up to the disk's utilization",
                  abs(m["seek"] + m["rotation"] + m["write_rotation"] + m["transfer"] +
                      m["overheads"] - s["disk_utilization"]) < 0.02)
        pn = s.get("prefix_need", [])
        check(f"seed {s['seed']}: the model's need of every prefix, growing with it",
              len(pn) == s["requested"] and
              all(a is None or (b is None or a <= b) for a, b in zip(pn, pn[1:])))
        # (the admitted set is not a prefix: admission may skip a heavy request and take
        # lighter ones after it, so it may outnumber the largest zero-miss prefix)
        check(f"seed {s['seed']}: admitted/max > 0.5", s["ratio_streams"] > 0.5)
        ref = s["refused"]
        check(f"seed {s['seed']}: every request admitted or refused",
              s["admitted"] + ref["ebusy"] + ref["edquot"] + ref["other"] == s["requested"])
        fr = s["first_refusal"]
        check(f"seed {s['seed']}: the first refusal is -EBUSY with a reason",
              fr is not None and fr["error"] == "-EBUSY" and fr["why"] != "")
        ms = s["max_sweep"]
        check(f"seed {s['seed']}: the maximum's round model and its run's split "
              f"(need {ms and ms['need']}, {s['max_measured'] and s['max_measured']['positionings_per_s']} "
              f"positionings/s)",
              ms is not None and ms["need"] > 0 and s["max_measured"]["transfer"] > 0 and
              s["be_mib_s"] == 0)
        rq = s.get("requests") or []
        check(f"seed {s['seed']}: the requests in order, admission's answer to each",
              len(rq) == s["requested"] and sum(x["admitted"] for x in rq) == s["admitted"]
              and all(x["rate_bps"] > 0 and x["buffer"] > x["io"] for x in rq))
    check("reserve summary: no miss", r["summary"]["misses"] == 0)
    check("the round model admits more than Fahrrad's test on these seeds",
          r["summary"]["admitted_mean"] > r["summary"]["admitted_fahrrad_mean"])

again = run("reserve", "--seeds", "1", "--first-seed", "2", "--duration", "120", "--json")
if r and again:
    check("reserve: the same seed gives the same figures", again["seeds"][0] == r["seeds"][1])

q = run("reserve", "--seeds", "1", "--duration", "60", "--search-duration", "30",
        "--quota-streams", "1", "--json")
if q:
    s = q["seeds"][0]
    print(f"one stream per uid: admitted {s['admitted']}, refused {s['refused']}")
    check("a quota of one stream per uid refuses with -EDQUOT (four uids: at most 4)",
          s["refused"]["edquot"] > 0 and s["admitted"] <= 4 and s["misses"] == 0)

# greedy best-effort readers beside the admitted set: admission keeps their floor, so the set
# still meets every deadline, and the readers get what is left
be = run("reserve", "--seeds", "1", "--duration", "120", "--search-duration", "0", "--be", "2",
         "--json")
if be:
    s = be["seeds"][0]
    print(f"--be 2: admitted {s['admitted']}, {s['misses']} misses, the readers "
          f"{s['be_mib_s']} MiB/s, the disk {s['disk_utilization']} busy")
    check("--be 2: said in the json", be.get("be_readers") == 2)
    check("--be 2: the admitted set misses nothing beside two greedy readers",
          s["misses"] == 0 and s["admitted_failed"] is None and s["rt_requests"] > 0)
    check("--be 2: the readers move data, the disk is busy",
          s["be_mib_s"] > 1 and s["disk_utilization"] > 0.95)
    check("--be 2: admission does not know of them (the same set as without)",
          r is None or s["admitted"] == r["seeds"][0]["admitted"])

# the test it replaced, run for comparison: its count beside is the round model's
f = run("reserve", "--seeds", "1", "--first-seed", "2", "--duration", "60", "--search-duration",
        "30", "--test", "fahrrad", "--json")
if f and r:
    check("--test fahrrad: Fahrrad's test decides, the round model's count beside",
          f["test"] == "fahrrad" and f["seeds"][0]["admitted"] == r["seeds"][1]["admitted_fahrrad"]
          and f["seeds"][0]["admitted_sweep"] == r["seeds"][1]["admitted"])

# ---- HD streams with 4 MiB buffers (issue 15: at least 12; Fahrrad's test took 6) ----
# (--search-duration 0: admission and the admitted run only, no search for the maximum)
hd = run("reserve", "--service", "19.39M:4M:512K", "--requests", "20", "--seeds", "1",
         "--duration", "120", "--search-duration", "0", "--json")
if hd:
    s = hd["seeds"][0]
    print(f"HD, 4 MiB buffers: admitted {s['admitted']} (Fahrrad's test {s['admitted_fahrrad']}), "
          f"{s['misses']} misses")
    check("--search-duration 0: no search", hd["search_duration_s"] == 0 and
          s["search_runs"] == 0 and s["max_streams"] == 0)
    check("HD with 4 MiB buffers: at least 12 admitted, none missing a deadline",
          s["admitted"] >= 12 and s["misses"] == 0 and s["admitted_failed"] is None)
    check("HD: Fahrrad's test took 6", s["admitted_fahrrad"] == 6)
    check("HD: a refusal says the rounds and the share", s["first_refusal"] is not None and
          "rounds of 731 ms" in s["first_refusal"]["why"])
    check("HD: the service is in the document", hd["service"] == {
        "rate_bps": 19390000, "buffer": 4 << 20, "io": 512 << 10, "write": False})

# raw playbacks in the innermost tenth (admission told their zone rates) and recordings
inner = run("reserve", "--place", "inner", "--seeds", "1", "--duration", "120",
            "--search-duration", "60", "--json")
if inner:
    s = inner["seeds"][0]
    print(f"inner: admitted {s['admitted']}, {s['misses']} misses")
    check("inner placement: admitted and on time", inner["place"] == "inner" and
          s["admitted"] > 0 and s["misses"] == 0 and s["admitted_failed"] is None)

# st318437 (18.4 GB): on seeds 6 and 21 the admitted recordings fill the file system, whose
# four recordings are all being played (none a DVR could delete). Their refused writes
# (-ENOSPC) are a full disk, not late ones: the run ends early, saying so, and no request
# completed late; before the disk fills, the same sets run clean.
for seed in (6, 21):
    st = run("reserve", "--disk", "st318437", "--first-seed", str(seed), "--seeds", "1",
             "--duration", "600", "--search-duration", "0", "--json")
    if st:
        s = st["seeds"][0]
        why = s["admitted_failed"] or ""
        print(f"st318437 seed {seed}: admitted {s['admitted']}, {s['misses']} misses; {why}")
        check(f"st318437 seed {seed}: the recordings fill the disk, said as such, none late",
              s["misses"] == 0 and "a recording found no room after" in why and
              st["summary"]["misses"] == 0 and st["summary"]["admitted_failed"] == 1)
    short = run("reserve", "--disk", "st318437", "--first-seed", str(seed), "--seeds", "1",
                "--duration", "300", "--search-duration", "0", "--json")
    if short:
        s = short["seeds"][0]
        check(f"st318437 seed {seed}: the same set, 300 s before the disk fills, on time",
              s["misses"] == 0 and s["admitted_failed"] is None and s["margin_min_ms"] > 100)

# ---- isolation ----
iso = run("isolation", "--scenario", "all", "--duration", "60", "--json")
if iso:
    sc = iso.get("scenarios", {})
    check("isolation all runs the four scenarios",
          set(sc) == {"be-greedy", "greedy-reserved", "overprovision", "fahrrad4"})

    bg = sc.get("be-greedy")
    if bg:
        cases = bg["cases"]
        nres = bg["reserved_readers"]
        base = cases[0]
        check(f"be-greedy: admission takes {nres} >= 4 readers of 3 MiB/s", nres >= 4)
        for c in cases:
            rsv = sum(x["mib_s"] for x in c["streams"][:nres])
            print(f"be-greedy {c['case']}: {c['rt_requests']} RT, {c['misses']} misses, "
                  f"reserved {rsv:.2f} MiB/s, util {c['disk_utilization']:.3f}")
            check(f"be-greedy {c['case']}: no reserved miss added",
                  c["misses"] == 0 and c["p0"] <= base["p0"])
            check(f"be-greedy {c['case']}: the reserved readers get their rate", rsv >= 0.97 * nres * 3)
        check("be-greedy: the BE readers take the rest", cases[-1]["disk_utilization"] > 0.95)

    gr = sc.get("greedy-reserved")
    if gr:
        busy, limited, idle = gr["cases"]
        g = busy["streams"][0]
        print(f"greedy reserved reader: {g['mib_s']:.2f} MiB/s with busy BE, "
              f"{limited['streams'][0]['mib_s']:.2f} beside 4 MiB/s BE, "
              f"{idle['streams'][0]['mib_s']:.2f} alone")
        check("greedy reserved with busy BE: within 25 % of its 3 MiB/s", abs(g["mib_s"] - 3) <= 0.75)
        check("greedy reserved with busy BE: its reservation as real time", g["rt_mib_s"] >= 0.9 * 3)
        check("rate-limited BE readers keep their 4 MiB/s beside the greedy reserved reader",
              all(x["mib_s"] >= 0.95 * 4 for x in limited["streams"][1:]))
        check("greedy reserved takes the rest beside them", limited["streams"][0]["mib_s"] > 3 * 3)
        check("greedy reserved alone: far more than its rate", idle["streams"][0]["mib_s"] > 3 * 3)
        check("greedy-reserved: no miss", all(c["misses"] == 0 for c in gr["cases"]))

    op = sc.get("overprovision")
    if op:
        base, t35, t36, ctl = (c["total_mib_s"] for c in op["cases"])
        print(f"overprovision aggregate MiB/s: baseline {base:.2f}, Table 3.5 {t35:.2f}, "
              f"Table 3.6 {t36:.2f}, control {ctl:.2f}")
        check("over-provisioning costs no throughput against reserving the rate", t35 >= 0.97 * ctl)
        check("over-provisioning keeps 85 % of the all-BE aggregate",
              t35 >= 0.85 * base and t36 >= 0.85 * base)
        check("the video gets its 4 MiB/s", all(abs(c["streams"][0]["mib_s"] - 4) < 0.2 for c in op["cases"]))
        check("overprovision: no miss", all(c["misses"] == 0 for c in op["cases"]))

    fr = sc.get("fahrrad4")
    if fr:
        byname = {c["case"]: c for c in fr["cases"]}
        check("fahrrad4: 20 % at 125 ms is infeasible by the model (two seeks take 25.3 ms)",
              byname.get("m 100 ms, stream 4 period 125 ms", {}).get("feasible") is False)
        c = byname.get("m 100 ms, stream 4 period 2000 ms")
        if c:
            u = [x["rt_util"] for x in c["streams"]]
            print("fahrrad4 m 100 ms, period 2 s: RT util " + " ".join(f"{x:.3f}" for x in u))
            check("fahrrad4: each stream gets 20 % (within 3 points)", all(abs(x - 0.20) <= 0.03 for x in u))
            check("fahrrad4 period 2 s: no miss", c["misses"] == 0)
        check("fahrrad4 with m = 100 ms: no miss at any period",
              all(c.get("misses", 0) == 0 for c in fr["cases"] if c["case"].startswith("m 100")))

# hold = sweep with Fahrrad's four greedy reserved streams: as first built it missed 880
# deadlines in the first minute of the 2 s case at m = 100 ms and tens of thousands in 600 s
# in every m = 100 ms case; mended, a handful at most (not none: docs/DESIGN.md, "Decisions
# measured", says why it stays off)
sw = run("isolation", "--scenario", "fahrrad4", "--duration", "60", "--set", "hold=sweep", "--json")
if sw:
    cases = [c for c in sw["scenarios"]["fahrrad4"]["cases"] if "misses" in c]
    print("fahrrad4, hold=sweep, 60 s: misses " + " ".join(str(c["misses"]) for c in cases))
    check("fahrrad4 with hold=sweep: 8 feasible cases, at most 8 misses in all",
          len(cases) == 8 and sum(c["misses"] for c in cases) <= 8)

at = run("isolation", "--scenario", "greedy-reserved", "--duration", "60", "--bw", "at-once", "--json")
if at:
    check("isolation --bw at-once runs",
          at["bw_policy"] == "at-once" and len(at["scenarios"]["greedy-reserved"]["cases"]) == 3)

# traces carry each request's stream (docs/TRACE.md): the greedy reserved reader alone has
# real-time rows with deadlines and spare best-effort rows without; busy BE readers are BE
with tempfile.TemporaryDirectory() as tmp:
    p = subprocess.run([sim, "isolation", "--scenario", "greedy-reserved", "--duration", "30",
                        "--trace", f"{tmp}/t"], capture_output=True, text=True)
    check("isolation --trace runs", p.returncode == 0)
    rows = {}
    for case in (0, 2):
        try:
            with open(f"{tmp}/t.greedy-reserved.{case}.csv") as f:
                head = f.readline().strip()
                rows[case] = [dict(zip(head.split(","), line.strip().split(","))) for line in f]
        except OSError as e:
            fails.append(f"trace of case {case}: {e}")
            rows[case] = []
            head = ""
        check(f"trace of case {case}: the docs/TRACE.md header",
              head == "submit_ns,complete_ns,stream,class,dir,offset,length,deadline_ns,result,service_ns")
    kinds = {(x["stream"], x["class"], x["deadline_ns"] != "0") for x in rows[0]}
    check(f"busy case trace: stream 0 real-time, streams 1 and 2 best effort (got {sorted(kinds)})",
          kinds == {("0", "rt", True), ("1", "be", False), ("2", "be", False)})
    kinds = {(x["stream"], x["class"], x["deadline_ns"] != "0") for x in rows[2]}
    check(f"alone: stream 0 real-time within its rate, spare best effort beyond (got {sorted(kinds)})",
          kinds == {("0", "rt", True), ("0", "be", False)})

for bad in (["reserve", "--isolation", "maybe"], ["reserve", "--scenario", "all"],
            ["reserve", "--test", "edf"], ["reserve", "--k", "0"], ["reserve", "--place", "moon"],
            ["reserve", "--service", "19.39M:4M"], ["reserve", "--service", "19.39M:256K:512K"],
            ["reserve", "--service", "19.39M:4M:512K:sideways"], ["isolation", "--test", "sweep"],
            ["reserve", "--seeds", "0"], ["reserve", "--alloc", "runs"], ["isolation"], ["isolation", "--scenario", "nope"],
            ["isolation", "--scenario", "all", "--seeds", "3"],
            ["isolation", "--scenario", "all", "--bw", "sometimes"],
            ["isolation", "--scenario", "be-greedy", "--disk", "nope"],
            ["reserve", "--seeds", "1", "--disk", "nope"],
            ["isolation", "--scenario", "all", "--set", "hold=lazy"], ["reserve", "--set", "hold"],
            ["reserve", "--set", "nope=1"], ["reserve", "--search-duration", "-1"],
            ["reserve", "--duration", "0"], ["reserve", "--be", "-1"], ["reserve", "--be", "65"],
            ["reserve", "--be", "two"], ["isolation", "--scenario", "all", "--be", "1"],
            ["isolation", "--scenario", "all",
                                             "--search-duration", "0"]):
    p = subprocess.run([sim, *bad], capture_output=True, text=True)
    check(f"bad input {bad}: exit 2 with a message", p.returncode == 2 and p.stderr.strip() != "")

verdict()
