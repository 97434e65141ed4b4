#!/usr/bin/env python3
"""scenario_rt.py — a scenario file's real-time run, as peer-compare.sh's settings.

Reads the canonical form of a scenario (`avfs-sim run FILE --print`, docs/SCENARIOS.md) on
stdin and prints shell assignments for bench/peer-compare.sh: MODEL SIZE FILL DURATION SEED
WORKLOAD RATE IO DEPTH RESERVE BE AVFS_ALLOC. It does not parse the file format itself (the
simulator's parser did, with its own messages) and runs nothing.

Real time runs what examples/dvr and peer-compare's greedy reader can play: at most one
playback class and one recording class, alike in rate, request size and buffer, with buffer
deadlines, files on the file system; best effort either none or one sequential reader with
no cap. Anything else is refused with the key that cannot be honoured (exit 2), so that a
figure is never reported for a scenario that did not run as written.
"""
import re
import shlex
import sys

FILE = sys.argv[1] if len(sys.argv) > 1 else "scenario"
MULT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 1 << 20, "Gi": 1 << 30}
SIZE_MULT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# top-level keys and the value real time can honour (None: any value is used below)
TOP_DEFAULTS = {"fill-rate": None, "block-size": "4M", "policy": "tm", "bw": "park",
                "predictor": "model", "hp-rate": "0"}


def refuse(where, key, why):
    sys.stderr.write("%s: [%s] %s: %s (real time runs what examples/dvr plays; "
                     "avfs-sim run takes the rest)\n" % (FILE, where, key, why))
    sys.exit(2)


def bits_per_s(v, where):
    m = re.fullmatch(r"([0-9.]+)\s*(Ki|Mi|Gi|K|M|G|)(bit|bps|B/s|B)?", v)
    if not m or (m.group(3) is None and float(m.group(1)) != 0):
        refuse(where, "rate", "cannot read %r" % v)
    r = float(m.group(1)) * MULT[m.group(2)]
    return round(r * (8 if m.group(3) in ("B", "B/s") else 1))


def size(v, where, key):
    m = re.fullmatch(r"([0-9]+)\s*(K|M|G|T|)(iB|B)?", v)
    if not m:
        refuse(where, key, "cannot read %r" % v)
    return int(m.group(1)) * SIZE_MULT[m.group(2)]


def seconds(v):
    m = re.fullmatch(r"([0-9.]+)\s*(ns|us|ms|s|)", v)
    f = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "": 1}[m.group(2)]
    return float(m.group(1)) * f


def sections(text):
    top, secs, cur = {}, [], None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"\[(stream|be)\s+([A-Za-z0-9_-]+)\]", line)
        if m:
            cur = {"kind": m.group(1), "name": m.group(2), "keys": {}}
            secs.append(cur)
            continue
        k, _, v = line.partition("=")
        (cur["keys"] if cur else top)[k.strip()] = v.strip()
    return top, secs


def main():
    top, secs = sections(sys.stdin.read())
    out = {"MODEL": top["disk"], "FILL": top["fill"], "SEED": top["seed"],
           "DURATION": "%g" % seconds(top["duration"])}
    if size(top["size"], "top", "size"):
        out["SIZE"] = str(size(top["size"], "top", "size"))
    out["AVFS_ALLOC"] = top["alloc"]
    for k, v in top.items():
        if k in ("disk", "size", "fill", "alloc", "duration", "seed", "fill-rate"):
            continue
        if k in TOP_DEFAULTS:
            if TOP_DEFAULTS[k] is not None and v != TOP_DEFAULTS[k]:
                refuse("top", k, "%s; avfsd runs with its defaults here (%s)" % (v, TOP_DEFAULTS[k]))
            continue
        refuse("top", k, "a scheduler setting; avfsd runs with its defaults here")
    nr = nw = 0
    shape = None
    reserved = set()
    be = "none"
    for s in secs:
        k, where = s["keys"], "%s %s" % (s["kind"], s["name"])
        if s["kind"] == "stream":
            if k["place"] != "file":
                refuse(where, "place", "raw I/O outside the file system")
            if "round" in k:
                refuse(where, "round", "per-round deadlines")
            if k.get("greedy", "no") != "no" or k.get("best-effort", "no") != "no":
                refuse(where, "greedy/best-effort", "a stream class without deadlines")
            if "reserve" in k and bits_per_s(k["reserve"], where) != bits_per_s(k["rate"], where):
                refuse(where, "reserve", "a reservation above the consumed rate")
            io = size(k["io"], where, "io")
            buf = size(k["buffer"], where, "buffer")
            if buf % io:
                refuse(where, "buffer", "not a whole number of requests")
            this = (bits_per_s(k["rate"], where), io, buf // io)
            if shape and this != shape:
                refuse(where, "rate/io/buffer", "differs from the other class (dvr plays one kind)")
            shape = this
            n = int(k["count"])
            if k["direction"] == "read":
                if nr:
                    refuse(where, "direction", "a second playback class")
                nr = n
            else:
                if nw:
                    refuse(where, "direction", "a second recording class")
                nw = n
            reserved.add(k["reserved"])
        else:
            if int(k.get("count", "1")) == 0:
                continue
            if be != "none" or k["kind"] != "sequential" or k.get("count", "1") != "1":
                refuse(where, "kind", "real time has one best-effort generator: a sequential "
                       "reader, count 1 (peer-compare's greedy reader)")
            if k.get("rate", "0") not in ("0", "none") or k.get("iops", "0") not in ("0", "none"):
                refuse(where, "rate/iops", "a capped reader")
            if size(k.get("io", "1M"), where, "io") != 1 << 20:
                refuse(where, "io", "the greedy reader reads 1M")
            be = "greedy"
    if shape is None:
        refuse("top", "stream", "no stream class")
    if len(reserved) > 1:
        refuse("top", "reserved", "some classes reserved and some not")
    out.update(WORKLOAD="%dr%dw" % (nr, nw), RATE=str(shape[0]), IO=str(shape[1]),
               DEPTH=str(shape[2]), RESERVE="1" if "yes" in reserved else "0", BE=be)
    for k in sorted(out):
        print("%s=%s" % (k, shlex.quote(out[k])))


if __name__ == "__main__":
    main()
