#!/usr/bin/env python3
"""recorder_report.py - bench/recorder.sh's table: per configuration the largest K with no late
segment (read), the figures of that trial, and AVFS's K over the best ext4's.

usage: recorder_report.py WORKDIR JSON(0|1) [OUT]

Reads WORKDIR/params.json and WORKDIR/results/CONFIG/{record,play}.{trials,result}, the trials'
judgements (MODE-kN.json, by recorder_judge.py), and CONFIG/error or CONFIG/refused. Prints the
table (or JSON with JSON=1) and writes the JSON to OUT when given. It measures nothing.
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import emit, load  # noqa: E402 (bench/ is not a package)


def text(path):
    try:
        return open(path).read().strip()
    except OSError:
        return None


def f(v, fmt):
    return "-" if v is None else fmt % v


def main():
    w, as_json = sys.argv[1], sys.argv[2] == "1"
    out = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    P = json.load(open(os.path.join(w, "params.json")))
    modes = ["record", "play"] if P["mode"] == "both" else [P["mode"]]
    doc = {"params": P, "configs": []}
    for c in P["configs"]:
        d = os.path.join(w, "results", c)
        e = {"configuration": c, "error": text(os.path.join(d, "error"))}
        for m in modes:
            trials = []
            try:
                for line in open(os.path.join(d, m + ".trials")):
                    k, verdict = line.split()
                    t = load(os.path.join(d, "%s-k%s.json" % (m, k))) or {"k": int(k)}
                    t["verdict"] = verdict
                    trials.append(t)
            except (OSError, ValueError):
                pass
            res = (text(os.path.join(d, m + ".result")) or "").split()
            best = int(res[0]) if res else None
            s = {"max_k": best, "first_late_k": int(res[1]) if len(res) > 1 else None,
                 "trials": trials, "refused": text(os.path.join(d, m + ".refused"))}
            if best:	# the figures of the largest K with no late one
                s["at_max"] = next((t for t in trials if t.get("k") == best), None)
            elif trials:	# none held: the smallest tried
                s["at_max"] = min(trials, key=lambda t: t.get("k", 0))
            e[m] = s
        doc["configs"].append(e)
    # AVFS against the best ext4, per mode
    doc["ratios"] = {}
    for m in modes:
        ext4 = [e[m]["max_k"] for e in doc["configs"]
                if e["configuration"].startswith("ext4") and e[m]["max_k"] is not None]
        best = max(ext4) if ext4 else None
        for e in doc["configs"]:
            if e["configuration"].startswith("avfsd") and e[m]["max_k"] is not None and best:
                doc["ratios"]["%s %s" % (e["configuration"], m)] = e[m]["max_k"] / best
    if emit(doc, as_json, out):
        return
    print("recorder: model %s%s (hddemu, real time), %.2f Mbit/s per camera and player, "
          "%g s trials, slack %g ms" % (P["model"], ", %d bytes" % P["size_bytes"]
          if P["size_bytes"] else "", P["rate_bps"] / 1e6, P["duration_s"], P["slack_ms"]))
    print("  cameras: ffmpeg -re -stream_loop -1 -c copy of %s, %d s segments (mp4), writes timed "
          "by wlat.so; players: rdrt --mode posix, %d KiB reads" % (P["camera_file"],
          P["segment_s"], P["play_io"] >> 10))
    print("  beside them (--load %s): dd iflag=direct bs=1M of a %d MiB file (reader) and cp -r "
          "of a %d MiB tree of 64 MiB files (copier)" % (P.get("load", "reader,copier"),
                                                        P["be_bytes"] >> 20,
                                                        P["tree_bytes"] >> 20))
    dirty = P.get("dirty", "none")
    print("  ext4's dirty pages of the loop device: %s" % (
        "the kernel's limits" if dirty == "none" else
        "at most %s (BDI max_bytes, strict_limit)" % dirty))
    print("  K: %s" % ("doubling from %d then bisection, at most %d" % (P["k_start"], P["k_max"])
                       if P["search"] else "one trial of %d" % P["k_max"]))
    for m in modes:
        print()
        if m == "record":
            hdr = ("configuration", "max K", "first late", "segments", "late", "stopped",
                   "write p99.9 ms", "write max ms", "call max ms", "reader MB/s", "copier MB/s",
                   "util")
        else:
            hdr = ("configuration", "max K", "first late", "reads", "late", "stopped",
                   "delay p99.9 ms", "delay max ms", "", "reader MB/s", "copier MB/s", "util")
        rows = []
        for e in doc["configs"]:
            s = e[m]
            if s["refused"]:
                rows.append((e["configuration"], "REFUSED: " + s["refused"]))
                continue
            if e["error"] and not s["trials"]:
                rows.append((e["configuration"], "FAILED: " + e["error"]))
                continue
            t = s.get("at_max") or {}
            if m == "record":
                mid = (f(t.get("segments"), "%d"), f(t.get("late_segments"), "%d"),
                       f(t.get("failed"), "%d"), f(t.get("write_p999_ms"), "%.1f"),
                       f(t.get("write_max_ms"), "%.1f"),
                       f(t.get("call_max_ms"), "%.1f"))
            else:
                mid = (f(t.get("reads"), "%d"), f(t.get("late_reads"), "%d"),
                       f(t.get("failed"), "%d"), f(t.get("delay_p999_ms"), "%.1f"),
                       f(t.get("delay_max_ms"), "%.1f"), "")
            mk = s["max_k"]
            rows.append((e["configuration"], "%d" % mk if mk is not None else "-",
                         f(s["first_late_k"], "%d"), *mid,
                         f(t.get("reader_mbs"), "%.1f"), f(t.get("copier_mbs"), "%.1f"),
                         f(t.get("disk_utilization"), "%.2f")))
        print("%s: the largest K with no late %s; figures of that trial (of the smallest "
              "tried when none held); stopped: %s that did not end within 10 s of the trial "
              "(or failed)" % ("cameras" if m == "record" else "players",
                              "segment" if m == "record" else "read",
                              "ffmpegs" if m == "record" else "players"))
        wd = [max([len(hdr[i])] + [len(r[i]) for r in rows if len(r) > 2]) for i in range(len(hdr))]
        print("  ".join(h.rjust(wd[i]) if i else h.ljust(wd[i]) for i, h in enumerate(hdr)))
        for r in rows:
            if len(r) == 2:
                print(r[0].ljust(wd[0]) + "  " + r[1])
            else:
                print("  ".join(v.rjust(wd[i]) if i else v.ljust(wd[i]) for i, v in enumerate(r)))
        for e in doc["configs"]:
            tr = " ".join("K=%d:%s" % (t.get("k", 0), t["verdict"]) for t in e[m]["trials"])
            if tr:
                print("  %s trials: %s" % (e["configuration"], tr))
    if doc["ratios"]:
        print()
        for k, v in doc["ratios"].items():
            print("ratio %s: AVFS K / best ext4 K = %.2f" % (k, v))
    errs = [t.get("hddemu_timing_err_max_us") for e in doc["configs"] for m in modes
            for t in e[m]["trials"] if t.get("hddemu_timing_err_max_us") is not None]
    if errs:
        print("hddemu's timing error, largest max over all trials: %.1f ms" % (max(errs) / 1e3))


if __name__ == "__main__":
    main()
