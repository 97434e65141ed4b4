#!/usr/bin/env python3
"""recorder_judge.py - one trial of bench/recorder.sh judged: were any segments (reads) late?

usage: recorder_judge.py OUT --slack MS --segment S --duration S

Reads the trial's files OUT.* (recorder.sh writes them): for cameras OUT.wlat/wlat.PID (wlat.so's
calls of each ffmpeg), OUT.ffmpegI.log, for players OUT.rdrtI (examples/rdrt's lines), and for
both OUT.exit ("I STATUS" per camera or player), OUT.load ("reader_bytes copier_bytes seconds")
and OUT.hdd (hddemu's statistics). Prints one JSON object; "ok" is true when every program
exited 0 and no segment (read) was late. It runs nothing and changes nothing.
"""
import argparse
import glob
import json
import math
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import kv  # noqa: E402 (bench/ is not a package)

# ffmpeg's messages that say it lagged, dropped or lost data
FFMPEG_TROUBLE = re.compile(r"past duration|drop|Non-monoton|buffer underflow|error|Error")


def pct(sorted_values, p):
    """the p-quantile (0..1) by nearest rank; None when empty"""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(p * len(sorted_values)) - 1)]


def common(out, r):
    """exit statuses, the best-effort load and hddemu's figures into r"""
    exits = []
    try:
        exits = [int(line.split()[1]) for line in open(out + ".exit") if line.split()]
    except (OSError, ValueError, IndexError):
        pass
    r["programs"] = len(exits)
    r["failed"] = sum(1 for e in exits if e != 0)
    try:
        rb, cb, sec = open(out + ".load").read().split()
        sec = float(sec)
        r["reader_mbs"] = int(rb) / sec / 1e6 if sec > 0 else None
        r["copier_mbs"] = int(cb) / sec / 1e6 if sec > 0 else None
        r["load_s"] = sec
    except (OSError, ValueError):
        r["reader_mbs"] = r["copier_mbs"] = None
    h = kv(out + ".hdd")
    r["disk_utilization"] = h.get("utilization")
    r["hddemu_timing_err_mean_us"] = h.get("timing_err_mean_us")
    r["hddemu_timing_err_max_us"] = h.get("timing_err_max_us")


def record(out, a, r):
    slack_us = a.slack * 1000
    writes, calls = [], []
    segs = {}	# path -> the largest latency of its open, writes and close (us)
    dropped = 0
    cams = 0
    for path in sorted(glob.glob(out + ".wlat/wlat.*")):
        cams += 1
        for line in open(path):
            if line.startswith("#"):
                m = re.search(r"dropped (\d+)", line)
                dropped += int(m.group(1)) if m else 0
                continue
            f = line.rstrip("\n").split(" ", 3)
            if len(f) != 4:
                continue
            op, lat, name = f[0], int(f[1]), f[3]
            calls.append(lat)
            if op == "w":
                writes.append(lat)
            if re.search(r"/seg-\d+\.mp4$", name):
                segs[name] = max(segs.get(name, 0), lat)
    writes.sort()
    calls.sort()
    late = sorted(n for n, lat in segs.items() if lat > slack_us)
    trouble = 0
    for path in glob.glob(out + ".ffmpeg*.log"):
        trouble += sum(1 for line in open(path, errors="replace") if FFMPEG_TROUBLE.search(line))
    # segments end at key frames (1 s apart in the camera's file), so their count is not judged,
    # beyond one at least per camera
    r.update({
        "cameras_timed": cams, "segments": len(segs),
        "late_segments": len(late), "late_examples": late[:5],
        "writes": len(writes), "calls_dropped": dropped,
        "write_p999_ms": pct(writes, 0.999) / 1e3 if writes else None,
        "write_max_ms": writes[-1] / 1e3 if writes else None,
        "call_max_ms": calls[-1] / 1e3 if calls else None,
        "ffmpeg_trouble_lines": trouble,
    })
    r["ok"] = (r["failed"] == 0 and r["programs"] > 0 and cams == r["programs"] and
               not late and len(segs) >= cams and trouble == 0 and dropped == 0)


def play(out, a, r):
    delays = []
    reads_per = []
    for path in sorted(glob.glob(out + ".rdrt*")):
        n = 0
        for line in open(path):
            f = line.split()
            if line.startswith("#") or len(f) != 4:
                continue
            delays.append(float(f[2]))
            n += 1
        reads_per.append(n)
    delays.sort()
    late = sum(1 for d in delays if d > a.slack)
    r.update({
        "players": len(reads_per), "reads": len(delays), "late_reads": late,
        "delay_p999_ms": pct(delays, 0.999), "delay_max_ms": delays[-1] if delays else None,
    })
    r["ok"] = (r["failed"] == 0 and r["programs"] > 0 and len(reads_per) == r["programs"] and
               all(n > 0 for n in reads_per) and late == 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--slack", type=float, required=True)
    p.add_argument("--segment", type=float, required=True)
    p.add_argument("--duration", type=float, required=True)
    a = p.parse_args()
    m = re.search(r"(record|play)-k(\d+)$", a.out)
    if not m:
        sys.exit("recorder_judge: %s: not a trial's name (MODE-kN)" % a.out)
    r = {"mode": m.group(1), "k": int(m.group(2))}
    common(a.out, r)
    (record if r["mode"] == "record" else play)(a.out, a, r)
    json.dump(r, sys.stdout)
    print()


if __name__ == "__main__":
    main()
