#!/usr/bin/env python3
"""check_mkfs_profile.py — `mkfs.avfs --profile` and `--profile FILE` (SPEC §3, §6.4, issue 8).

A quick profile measured by mkfs, or loaded from `avfs-admin profile --out FILE` of the same
image, lands in the superblock (read back from the image itself) and fsck.avfs finds the file
system clean; bad profile files and misuse are refused with the image unchanged (and not even
created). Exits non-zero on any miss.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

from checklib import check, digest, fails, run, verdict

mkfs, fsck, admin = sys.argv[1], sys.argv[2], sys.argv[3]
SIZE = 128 << 20


def stored(img):
    """The service-time figures in the superblock (fs/format.h: disk_model[32], then rate_max,
    rate_min, seek_avg_ns, rotation_ns as little-endian u64), found by the model's name."""
    with open(img, "rb") as f:
        blk = f.read(4096)
    pos = blk.find(b"profiled\0")
    if pos < 0:
        return None
    return dict(zip(("rate_max", "rate_min", "seek_avg_ns", "rotation_ns"),
                    struct.unpack_from("<4Q", blk, pos + 32)))


def mkfs_json(args, img):
    p = run([mkfs, "--json"] + args + [img])
    try:
        return json.loads(p.stdout)
    except ValueError:
        fails.append(f"{args}: no JSON on stdout")
        return {}


def clean(img):
    return subprocess.run([fsck, "-n", img], capture_output=True).returncode == 0


with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:
    # ---- measured now ----
    print("mkfs.avfs --profile (measured now):")
    img = os.path.join(tmp, "measured.img")
    j = mkfs_json(["--profile", "--size", "128M"], img)
    sb = stored(img)
    print(f"  stored: {sb}")
    check("created, formatted, model_source measured, disk_model profiled",
          j.get("model_source") == "measured" and j.get("disk_model") == "profiled" and
          j.get("size") == SIZE)
    check("the superblock holds what mkfs printed",
          sb is not None and all(sb[k] == j.get(k) for k in sb))
    check("a positive transfer rate recorded", sb is not None and sb["rate_max"] > 0 and
          0 < sb["rate_min"] <= sb["rate_max"])
    check("fsck.avfs -n: clean", clean(img))
    p = run([mkfs, "-f", "--profile", img])	# over the AVFS just made
    check("the table says what was stored",
          "measured now" in p.stdout and "service time" in p.stdout)

    # ---- from a profile file of the same image ----
    print("mkfs.avfs --profile FILE (avfs-admin profile --quick --out FILE):")
    img = os.path.join(tmp, "file.img")
    with open(img, "wb") as f:
        f.truncate(SIZE)
    prof = os.path.join(tmp, "profile.json")
    run([admin, "profile", "--quick", "--quiet", "--out", prof, img])
    with open(prof) as f:
        svc = json.load(f)["svc_model"]
    want = {"rate_max": round(svc["dmax"]), "rate_min": round(svc["dmin"]),
            "seek_avg_ns": round(svc["tk_ns"]), "rotation_ns": round(svc["tr_ns"])}
    for form in (["--profile", prof], [f"--profile={prof}"]):
        j = mkfs_json(["-f"] + form, img)	# -f: the image holds AVFS from the last round
        sb = stored(img)
        print(f"  {form[0][:10]}: svc_model {svc}")
        check(f"{' '.join(form)[:10]}...: the file's svc_model in the superblock",
              j.get("model_source") == "file" and sb == want and
              all(j.get(k) == v for k, v in want.items()))
        check(f"{' '.join(form)[:10]}...: fsck.avfs -n clean", clean(img))

    # ---- bad profile files: refused, nothing written ----
    print("bad profile files:")
    good = json.dumps({"svc_model": svc})

    def variant(**kv):
        return json.dumps({"svc_model": {**svc, **kv}})

    bad = {
        "missing file": None,
        "not JSON": "{\"svc_model\": {",
        "a JSON array": "[1, 2]",
        "no svc_model": json.dumps({"device": "x"}),
        "a key missing": json.dumps({"svc_model": {k: v for k, v in svc.items() if k != "dmin"}}),
        "a string for a number": variant(tk_ns="fast"),
        "negative rate": variant(dmax=-1),
        "zero rate": variant(dmin=0),
        "dmin above dmax": variant(dmin=svc["dmax"] * 2 + 1, dmax=svc["dmax"] + 1),
        "a 0.1 ms rotation": variant(tr_ns=100000),
        "another device's size": variant(lmax=SIZE * 2),
        "lmax not an integer": variant(lmax=SIZE + 0.5),
        "a directory": "DIR",
    }
    before = digest(img)
    for what, text in bad.items():
        path = os.path.join(tmp, "bad.json")
        if os.path.isdir(path):
            os.rmdir(path)
        elif os.path.exists(path):
            os.unlink(path)
        if text == "DIR":
            os.mkdir(path)
        elif text is not None:
            with open(path, "w") as f:
                f.write(text)
        p = run([mkfs, "--profile", path, img], 1)
        check(f"{what}: exit 1, a message, the image unchanged",
              p.stderr.strip() != "" and not p.stdout.strip() and digest(img) == before)
    fresh = os.path.join(tmp, "fresh.img")
    with open(os.path.join(tmp, "other.json"), "w") as f:
        f.write(variant(lmax=SIZE * 2))
    run([mkfs, "--profile", os.path.join(tmp, "other.json"), "--size", "128M", fresh], 1)
    check("a profile of another size: a new image is not even created", not os.path.exists(fresh))
    with open(os.path.join(tmp, "good.json"), "w") as f:
        f.write(good)

    # ---- misuse ----
    # (mkfs(8)'s exit status: 1 for a usage error too)
    for args, code in ((["--profile", "--disk-model", "avfs-250g"], 1),
                       (["--profile", os.path.join(tmp, "good.json"), "--disk-model", "ssd"], 1),
                       (["--backend", "uring"], 1),
                       (["--profile", os.path.join(tmp, "good.json"), "--backend", "uring"], 1),
                       (["--profile", "--backend", "bogus"], 1),
                       (["--profile", "--backend", "sg"], 1)):
        p = run([mkfs] + args + [img], code)
        check(f"{' '.join(a if '/' not in a else 'FILE' for a in args)}: exit {code}, image "
              f"unchanged", p.stderr.strip() != "" and digest(img) == before)
    small = os.path.join(tmp, "small.img")
    run([mkfs, "--profile", "--size", "16M", small], 1)
    j = mkfs_json(["--size", "16M"], small)
    check("a named model still records its figures (avfs-250g: 70 MB/s outer)",
          j.get("model_source") == "named" and j.get("rate_max") == 70000000)

verdict()
