#!/usr/bin/env python3
"""check_probe.py — avfs-sim's disk probe, run as a user runs it, meets SPEC §11's figures.

Smoke-runs `avfs-sim disk --probe --json` on every model (it must work and print sane JSON)
and checks the avfs-250g figures of the foundation issue. Exits non-zero on any miss.
"""
import json
import subprocess
import sys

from checklib import fails, near, verdict

sim = sys.argv[1]


def probe(model):
    out = subprocess.run([sim, "disk", "--disk", model, "--probe", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


for model in ["avfs-250g", "barracuda-500g", "st318437", "travelstar-20g", "ssd"]:
    r = probe(model)
    rates = [p["mbs"] for p in r["rate_mbs"]]
    print(f"{model}: random 4k {r['random_4k_ms']:.2f} ms, outer {r['outer_rate_mbs']:.1f} "
          f"inner {r['inner_rate_mbs']:.1f} MB/s")
    if len(rates) != 8 or min(rates) <= 0:
        fails.append(f"{model}: rates")
    if r["rotational"] and not rates[0] > rates[-1]:
        fails.append(f"{model}: outer not faster than inner")

r = probe("avfs-250g")
print("avfs-250g against SPEC §11:")
near("rotational_latency_ms", r["rotational_latency_ms"], 4.1667, 0.05)
near("outer_rate_mbs", r["outer_rate_mbs"], 70, 0.03)
near("inner_rate_mbs", r["inner_rate_mbs"], 38, 0.03)
near("seek_ms.track", r["seek_ms"]["track"], 0.8, 0.05)
near("seek_ms.mean", r["seek_ms"]["mean"], 8.5, 0.05)
near("seek_ms.full", r["seek_ms"]["full"], 17, 0.05)
ok = 11 <= r["random_4k_ms"] <= 15
print(f"  {'random_4k_ms':24s} {r['random_4k_ms']:9.3f}  want 11..15  {'ok' if ok else 'MISS'}")
if not ok:
    fails.append("random_4k_ms")

# the same seed gives the same figures; bad input is refused with exit code 2
again = probe("avfs-250g")
if again != r:
    fails.append("probe not deterministic")
for bad in (["disk", "--disk", "floppy", "--probe"], ["disk", "--probe", "--seed", "x"],
            ["disk"], ["--workload", "8x"], ["--policy", "nope", "--workload", "1r0w"]):
    p = subprocess.run([sim] + bad, capture_output=True, text=True)
    if p.returncode != 2 or not p.stderr.strip():
        fails.append(f"bad input {bad} gave {p.returncode}")

verdict()
