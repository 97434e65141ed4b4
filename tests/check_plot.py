#!/usr/bin/env python3
"""check_plot.py — avfs-admin plot as a user runs it, on a trace from avfs-sim.

The SVG is well-formed XML; each of its three panels holds exactly one series group per stream of
the trace (best effort is no stream); the miss count in the summary is the one docs/TRACE.md
defines, counted here from the CSV (also on a copy of the trace with misses planted); bad input
exits 1 and leaves no output, not even a temporary file, and an existing output untouched.
usage: check_plot.py AVFS_SIM AVFS_ADMIN
"""
import csv
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from checklib import check, fails, verdict

sim, admin = sys.argv[1], sys.argv[2]
SVG = "{http://www.w3.org/2000/svg}"


def plot(*args):
    return subprocess.run([admin, "plot", *args], capture_output=True, text=True)


def expected(path):
    """Streams, RT requests per stream, misses and requests, as docs/TRACE.md defines them."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    rt = {}
    for r in rows:
        if int(r["stream"]) >= 0:
            rt.setdefault(int(r["stream"]), 0)
            rt[int(r["stream"])] += r["class"] == "rt"
    misses = sum(1 for r in rows if r["class"] == "rt" and
                 (int(r["deadline_ns"]) - int(r["complete_ns"]) < 0 or int(r["result"]) == -62))
    be = sum(1 for r in rows if r["class"] == "be")
    return rows, rt, misses, be


def check_svg(svg, trace):
    rows, rt, misses, be = expected(trace)
    name = os.path.basename(trace)
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as e:
        check(f"{name}: the SVG is well-formed XML ({e})", False)
        return
    check(f"{name}: the root is <svg>", root.tag == SVG + "svg")
    check(f"{name}: titled with the trace's name", root.findtext(SVG + "title") == name)
    panels = {p.get("data-panel"): p for p in root.findall(SVG + "g[@class='panel']")}
    check(f"{name}: three panels: {sorted(panels)}", sorted(panels) == ["head", "margin", "util"])
    for pname, panel in panels.items():
        ids = [g.get("data-stream") for g in panel.findall(SVG + "g[@class='series']")]
        check(f"{name}: panel {pname}: one series per stream ({len(ids)} for {len(rt)})",
              sorted(int(i) for i in ids) == sorted(rt))
        check(f"{name}: panel {pname}: best effort is not a stream", "-1" not in ids)
        check(f"{name}: panel {pname} has axes", len(panel.findall(SVG + "g[@class='axes']")) == 1)
    if be:
        check(f"{name}: best effort drawn in the head panel, apart from the streams",
              panels["head"].find(SVG + "g[@class='others'][@data-class='be']") is not None)
    per_stream = {int(g.get("data-stream")): (int(g.get("data-rt")), int(g.get("data-misses")))
                  for g in panels["margin"].findall(SVG + "g[@class='series']")}
    check(f"{name}: RT requests per stream", all(per_stream[s][0] == n for s, n in rt.items()))
    check(f"{name}: misses per stream add up", sum(m for _, m in per_stream.values()) == misses)
    drawn = [g for g in panels["margin"].findall(SVG + "g[@class='series']") if int(g.get("data-rt"))]
    check(f"{name}: one CDF per RT stream", all(g.find(SVG + "polyline") is not None for g in drawn))
    m = panels["margin"].find(SVG + "g[@class='margin-line']")
    check(f"{name}: m = 500 ms marked", m is not None and float(m.get("data-margin-ms")) == 500)
    summary = root.find(SVG + "text[@class='summary']")
    text = summary.text if summary is not None else ""
    found = re.search(r"deadline misses: (\d+)", text)
    check(f"{name}: summary counts {misses} misses: {text!r}",
          found is not None and int(found.group(1)) == misses and
         int(summary.get("data-misses")) == misses)
    check(f"{name}: summary counts requests, streams",
          int(summary.get("data-requests")) == len(rows) and
         int(summary.get("data-streams")) == len(rt))
    util = float(summary.get("data-utilization"))
    check(f"{name}: utilization {util:.3f} is a fraction", 0 < util <= 1.0001)


with tempfile.TemporaryDirectory() as d:
    trace, svg = os.path.join(d, "T.csv"), os.path.join(d, "T.svg")
    p = subprocess.run([sim, "--disk", "avfs-250g", "--workload", "3r1w", "--duration", "20",
                        "--be", "random", "--trace", trace], capture_output=True, text=True)
    check(f"avfs-sim wrote a trace: {p.stderr.strip()}", p.returncode == 0 and os.path.exists(trace))
    if fails:
        verdict()
    rows, rt, misses, be = expected(trace)
    check(f"the trace has streams 0..3 and best effort", sorted(rt) == [0, 1, 2, 3] and be > 0)

    p = plot(trace, "--out", svg)
    check(f"plot: exit 0 and an SVG: {p.stderr.strip()}", p.returncode == 0 and os.path.exists(svg))
    if os.path.exists(svg):
        check_svg(svg, trace)
    check("no temporary file left behind", sorted(os.listdir(d)) == ["T.csv", "T.svg"])

    # misses planted: some RT requests complete late, some fail with -ETIME
    missed = os.path.join(d, "M.csv")
    with open(trace) as src, open(missed, "w") as dst:
        dst.write(src.readline())
        k = 0
        for line in src:
            f = line.rstrip("\n").split(",")
            if f[3] == "rt":
                k += 1
                if k % 7 == 0:
                    f[7] = str(int(f[1]) - 1000)
                elif k % 11 == 0:
                    f[8] = "-62"
            dst.write(",".join(f) + "\n")
    msvg = os.path.join(d, "M.svg")
    p = plot(missed, "--out", msvg)
    check("plot of a trace with misses: exit 0", p.returncode == 0 and expected(missed)[2] > 40)
    if os.path.exists(msvg):
        check_svg(msvg, missed)

    # bad input: exit 1, a message, no output (and an existing one left as it was)
    lines = open(trace).read().splitlines(keepends=True)
    bad = {
        "malformed.csv": "".join(lines[:9] + ["1,2,3\n"] + lines[9:]),
        "badclass.csv": "".join(lines[:20] + ["1,2,0,xx,r,0,4096,0,0\n"]),
        "badheader.csv": "a,b,c\n" + "".join(lines[1:]),
        "empty.csv": "",
        "header.csv": lines[0],
    }
    for fname, content in bad.items():
        with open(os.path.join(d, fname), "w") as f:
            f.write(content)
    out = os.path.join(d, "bad.svg")
    for fname, where in (("missing.csv", None), ("malformed.csv", ":10:"),
                         ("badclass.csv", ":21:"), ("badheader.csv", ":1:"),
                         ("empty.csv", None), ("header.csv", None)):
        p = plot(os.path.join(d, fname), "--out", out)
        check(f"{fname}: exit 1, a message{' naming line ' + where if where else ''}, no output "
             f"(exit {p.returncode}: {p.stderr.strip()})",
              p.returncode == 1 and p.stderr.strip() != "" and not os.path.exists(out) and
             (where is None or where in p.stderr))
    with open(out, "w") as f:
        f.write("old")
    p = plot(os.path.join(d, "malformed.csv"), "--out", out)
    check("a failed plot leaves an existing output", p.returncode == 1 and open(out).read() == "old")
    os.unlink(out)
    p = plot(trace, "--out", os.path.join(d, "no", "such", "dir", "x.svg"))
    check("--out in a missing directory: exit 1", p.returncode == 1 and "cannot" in p.stderr)
    leftovers = sorted(set(os.listdir(d)) - {"T.csv", "T.svg", "M.csv", "M.svg"} - set(bad))
    check(f"no stray files after the failures: {leftovers}", leftovers == [])
    for args in ([trace], ["--out", svg], [trace, "--out", svg, "--margin", "5"],
                 [trace, "--out", svg, "--bin", "x"], [trace, "--out", trace]):
        p = plot(*args)
        check(f"bad usage {args[-2:]}: exit 2", p.returncode == 2 and p.stderr.strip() != "")
    p = plot("--help")
    check("--help", p.returncode == 0 and "--out" in p.stdout)

verdict()
