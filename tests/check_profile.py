#!/usr/bin/env python3
"""check_profile.py — `avfs-admin profile` (SPEC §6.4), run as a user runs it.

On the simulated avfs-250g it must recover the model's own parameters within 5%; on a 256 MiB
image file it must finish with positive rates, say rotational as sysfs does and leave the file
as it was; bad input gives exit 1 (device) or 2 (usage). Exits non-zero on any miss.
"""
import json
import os
import sys
import tempfile

from checklib import check, digest, fails, near, run as run_cmd, run_json, verdict

admin = sys.argv[1]

# avfs-250g's documented parameters (SPEC §11, disk/hddmodel.c): 7200 rpm, 70 MB/s outer to
# 38 MB/s inner, seeks 0.8 ms track-to-track, 8.5 ms mean over random LBA pairs, 17 ms full
# stroke; 250,000,000,000 bytes.
T_R_MS = 60e3 / 7200
MODEL = {
    "rotation_ms": T_R_MS,
    "rotational_latency_ms": T_R_MS / 2,
    "outer_rate_mbs": 70.0,
    "inner_rate_mbs": 38.0,
    "seek_ms.track": 0.8,
    "seek_ms.mean": 8.5,
    "seek_ms.full": 17.0,
    "svc_model.tr_ns": T_R_MS * 1e6,
    "svc_model.tk_ns": 8.5e6,
    "svc_model.dmax": 70e6,
    "svc_model.dmin": 38e6,
}
CAPACITY = 250000000000


def run(args, code=0):
    return run_cmd([admin, "profile"] + args, code)


def profile(args):
    return run_json([admin, "profile"] + args + ["--json"])


def get(r, key):
    for k in key.split("."):
        r = r[k]
    return r


def sysfs_rotational(path):
    """What disk/uring.c reads: queue/rotational of the file system's device, or of the whole
    disk for a partition; anything without a sysfs entry counts as not rotational."""
    dev = os.stat(path).st_dev
    base = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    q = base + "/queue/rotational"
    if not os.path.exists(q):
        if not os.path.exists(base + "/partition"):
            return False
        q = base + "/../queue/rotational"   # the kernel follows M:m before ".."
    try:
        with open(q) as f:
            return f.read().strip() == "1"
    except OSError:
        return False


# ---- the simulated disk: the model's own parameters, within 5% ----
r = profile(["sim:avfs-250g"])
if r:
    print("sim:avfs-250g against its model (SPEC §11):")
    for key, want in MODEL.items():
        near(key, get(r, key), want)
    check("rotational, rotation measured", r["rotational"] and r["rotation_measured"])
    check("capacity and lmax are the model's", r["capacity_bytes"] == CAPACITY and
          r["svc_model"]["lmax"] == CAPACITY)
    # the chunk size of SPEC §6: the smallest request size within 1% of the best throughput
    sizes = [c["bytes"] for c in r["chunk_mbs"]]
    rates = {c["bytes"]: c["mbs"] for c in r["chunk_mbs"]}
    best = max(rates.values())
    chunk = r["chunk_bytes"]
    print(f"  chunk {chunk} B at {rates.get(chunk, 0):.2f} MB/s, best {best:.2f} MB/s")
    check("request sizes 4 KiB .. 4 MiB", sizes[0] == 4096 and sizes[-1] == 4 << 20)
    check("chunk size <= 4 MiB, within 1% of the best",
          0 < chunk <= 4 << 20 and rates.get(chunk, 0) >= 0.99 * best)
    check("no smaller size is within 1% of the best",
          all(rates[s] < 0.99 * best for s in sizes if s < chunk))
    pts = [p["mbs"] for p in r["rate_mbs"]]
    check("8+ rate points, falling from outer to inner",
          len(pts) >= 8 and all(b <= a * 1.01 for a, b in zip(pts, pts[1:])))
    curve = [p["ms"] for p in r["seek_curve"]]
    check("seek curve: 6+ points, rising with distance",
          len(curve) >= 6 and all(b >= a for a, b in zip(curve, curve[1:])))
    check("1/3 stroke between track-to-track and full stroke",
          r["seek_ms"]["track"] < r["seek_ms"]["third"] < r["seek_ms"]["full"])
    again = profile(["sim:avfs-250g"])
    check("the same seed gives the same profile", again == r)

with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:
    # --out keeps the same JSON document as --json prints
    out = os.path.join(tmp, "profile.json")
    p = run(["--quick", "--out", out, "sim:avfs-250g"])
    q = profile(["--quick", "sim:avfs-250g"])
    with open(out) as f:
        check("--out FILE holds the --json document", json.load(f) == q)
    check("the table names the chunk size and the model",
          "chunk size" in p.stdout and "tk_ns" in p.stdout)
    if q:
        check("--quick on the simulated disk: seeks within 10%",
              abs(q["seek_ms"]["mean"] - 8.5) <= 0.85 and abs(q["seek_ms"]["full"] - 17) <= 1.7)

    # a flash model: said so, no mechanics
    s = profile(["sim:ssd"])
    if s:
        check("sim:ssd: non-rotational, no rotation or seeks, positive rates",
              not s["rotational"] and not s["rotation_measured"] and s["seek_ms"] is None and
              s["outer_rate_mbs"] > 0 and s["random_4k_ms"] > 0)

    # ---- a real image file through io_uring: reads only ----
    img = os.path.join(tmp, "disk.img")
    with open(img, "wb") as f:
        f.truncate(256 << 20)   # sparse
        for off in (0, 100 << 20, (256 << 20) - (1 << 20)):
            f.seek(off)
            f.write(os.urandom(1 << 20))
    before = digest(img)
    i = profile(["--quick", img])
    after = digest(img)
    print(f"image file on {'a rotational' if sysfs_rotational(img) else 'a non-rotational'} "
          f"device by sysfs:")
    if i:
        print(f"  outer {i['outer_rate_mbs']:.0f} MB/s, random 4 KiB {i['random_4k_ms']:.3f} ms, "
              f"chunk {i['chunk_bytes']} B, rotation measured: {i['rotation_measured']}")
        check("image: completes with positive rates",
              i["backend"] == "uring" and i["outer_rate_mbs"] > 0 and i["inner_rate_mbs"] > 0 and
              all(c["mbs"] > 0 for c in i["chunk_mbs"]) and i["random_4k_ms"] > 0 and
              i["svc_model"]["dmax"] > 0 and i["svc_model"]["dmin"] > 0)
        check("image: rotational as sysfs says", i["rotational"] == sysfs_rotational(img))
        check("image: mechanics only where a rotation was found",
              (i["seek_ms"] is None) == (not i["rotation_measured"]) and
              (i["rotational"] or not i["rotation_measured"]))
        if i["rotation_measured"]:
            check("image: a plausible rotation period", 2 <= i["rotation_ms"] <= 40)
    check("image: left as it was (the profiler never writes)", before == after)

    # ---- bad input ----
    small = os.path.join(tmp, "small.img")
    with open(small, "wb") as f:
        f.truncate(16 << 20)
    for args, code in ((["/nonexistent/disk.img"], 1), (["sim:nosuchmodel"], 1), ([small], 1),
                       ([tmp], 1), ([], 2), (["--seed", "x", "sim:avfs-250g"], 2),
                       (["--bogus", "sim:avfs-250g"], 2), (["sim:ssd", "sim:ssd"], 2)):
        p = run(args, code)
        if not p.stderr.strip():
            fails.append(f"{args}: no message on stderr")
        if p.stdout.strip():
            fails.append(f"{args}: output on stdout")
    print("bad input: exit codes and messages checked")

verdict()
