#!/usr/bin/env python3
"""check_profile_write.py — `avfs-admin profile --write`, `--backend`, the identification and the
progress lines (SPEC §6.4, issue 8), run as a user runs them.

--write measures sequential writes (against request size, and at a few points across the disk):
always on sim:, on a zeroed image file, and with --force over what it recognises; refused with
exit 1 and the image unchanged on one that holds AVFS (primary or backup superblock) or what
libblkid recognises: a real ext4 (mkfs.ext4) and swap area (mkswap), a GPT (built here with its
CRCs), an MBR with a Linux partition, and an empty MBR (an empty dos partition table is one).
Exits non-zero on any miss.
"""
import json
import os
import subprocess
import sys
import struct
import tempfile
import uuid
import zlib

from checklib import check, digest, fails, on_tty, run as run_cmd, verdict

admin, mkfs = sys.argv[1], sys.argv[2]
MIB = 1 << 20


def run(args, code=0):
    return run_cmd([admin, "profile"] + args, code)


def gpt_image(path, size=128 * MIB):
    """A GPT with one partition, as sfdisk writes it: protective MBR, header and entries with
    their CRCs, and the backup header and entries at the end."""
    lbas = size // 512
    entry = uuid.UUID("0fc63daf-8483-4772-8e79-3d69d8477de4").bytes_le + uuid.uuid4().bytes_le + \
        struct.pack("<QQQ", 2048, 206847, 0) + "linux".encode("utf-16-le").ljust(72, b"\0")
    entries = entry.ljust(128 * 128, b"\0")
    ecrc = zlib.crc32(entries)
    disk = uuid.uuid4().bytes_le

    def header(mine, other, first_entry):
        h = struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x10000, 92, 0, 0, mine, other, 34,
                        lbas - 34, disk, first_entry, 128, 128, ecrc)
        return h[:16] + struct.pack("<I", zlib.crc32(h)) + h[20:]
    pmbr = bytearray(512)
    pmbr[446:462] = bytes([0, 0, 2, 0, 0xee, 0xff, 0xff, 0xff]) + struct.pack("<II", 1, lbas - 1)
    pmbr[510:512] = b"\x55\xaa"
    return image(path, size, marks=[(0, bytes(pmbr)), (512, header(1, lbas - 1, 2)),
                                    (1024, entries), ((lbas - 33) * 512, entries),
                                    ((lbas - 1) * 512, header(lbas - 1, 1, lbas - 33))])


def profile(args):
    p = run(args + ["--json"])
    try:
        return json.loads(p.stdout), p
    except ValueError:
        fails.append(f"{args}: no JSON on stdout")
        return None, p


def image(path, size=128 * MIB, marks=()):
    """A sparse zeroed image with bytes written at (offset, bytes) places."""
    with open(path, "wb") as f:
        f.truncate(size)
        for off, data in marks:
            f.seek(off)
            f.write(data)
    return path


def write_figures(r, where):
    """The write keys of --write: present, positive, and read keys untouched."""
    ok = (r["write"] is True and r["writes"] > 0 and len(r["write_chunk_mbs"]) >= 4 and
          all(c["mbs"] > 0 for c in r["write_chunk_mbs"]) and
          r["write_chunk_bytes"] in [c["bytes"] for c in r["write_chunk_mbs"]] and
          r["write_chunk_max_mbs"] > 0 and len(r["write_rate_mbs"]) >= 2 and
          all(p["mbs"] > 0 for p in r["write_rate_mbs"]))
    check(f"{where}: write figures present and positive", ok)


IDENT_KEYS = {"transport", "vendor", "product", "serial", "firmware", "lba_format", "write_cache",
              "max_transfer", "rotation_rate"}

# ---- the simulated disk: --write always allowed ----
print("sim:avfs-250g --write:")
r, p = profile(["--quick", "--write", "sim:avfs-250g"])
if r:
    write_figures(r, "sim")
    wmax = max(c["mbs"] for c in r["write_chunk_mbs"])
    print(f"  write: chunk {r['write_chunk_bytes']} B at {wmax:.2f} MB/s; across the disk "
          + ", ".join(f"{p['mbs']:.1f}" for p in r["write_rate_mbs"]) + " MB/s")
    check("sim: writes no faster than the model's transfer rate (no write cache)",
          wmax <= r["outer_rate_mbs"] * 1.02 and
          all(p["mbs"] <= r["outer_rate_mbs"] * 1.02 for p in r["write_rate_mbs"]))
    check("sim: write rate falls from the outer to the inner edge",
          r["write_rate_mbs"][0]["mbs"] > r["write_rate_mbs"][-1]["mbs"])
    check("sim: backend sim, ident keys all there, none identified",
          r["backend"] == "sim" and set(r["ident"]) == IDENT_KEYS and
          r["ident"]["transport"] == "" and r["ident"]["write_cache"] is None)
    check("sim: --write leaves the read figures as they were",
          (r["outer_rate_mbs"], r["chunk_bytes"]) ==
          (lambda q: (q["outer_rate_mbs"], q["chunk_bytes"]))(profile(["--quick",
                                                                       "sim:avfs-250g"])[0]))
    t = run(["--quick", "--write", "sim:avfs-250g"])
    check("sim: the table shows the write throughput",
          "write throughput against request size" in t.stdout and
          "write rate across the disk" in t.stdout)
r, _ = profile(["--quick", "sim:avfs-250g"])
if r:
    check("without --write: write false, [] and null, no writes",
          r["write"] is False and r["writes"] == 0 and r["write_chunk_mbs"] == [] and
          r["write_chunk_bytes"] is None and r["write_rate_mbs"] == [])

with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:
    # ---- image files: scratch or not ----
    print("image files:")
    zero = image(os.path.join(tmp, "zero.img"))
    r, p = profile(["--quick", "--write", "--backend", "uring", zero])
    if r:
        write_figures(r, "zeroed image")
        check("zeroed image: backend uring", r["backend"] == "uring")
    avfs = os.path.join(tmp, "avfs.img")
    subprocess.run([mkfs, "-q", "--size", "128M", avfs], check=True)
    backup_only = os.path.join(tmp, "avfs-backup.img")
    subprocess.run([mkfs, "-q", "--size", "128M", backup_only], check=True)
    with open(backup_only, "r+b") as f:     # the primary superblock gone, the backup left
        f.write(bytes(4096))
    ext4 = image(os.path.join(tmp, "ext4.img"))
    subprocess.run(["mkfs.ext4", "-q", "-F", ext4], check=True)
    swap = image(os.path.join(tmp, "swap.img"))
    subprocess.run(["mkswap", swap], check=True, capture_output=True)
    mbr = bytearray(512)                    # one Linux partition, sectors 2048..206847
    mbr[446:462] = bytes([0, 0x20, 0x21, 0, 0x83, 0x2a, 0xac, 0x0c]) + \
        struct.pack("<II", 2048, 204800)
    mbr[510:512] = b"\x55\xaa"
    refused = {
        "AVFS": avfs,
        "AVFS (backup superblock)": backup_only,
        "ext4": ext4,
        "swap": swap,
        "dos (an MBR with a partition)": image(os.path.join(tmp, "mbr.img"), marks=[(0, bytes(mbr))]),
        "dos (an empty MBR)": image(os.path.join(tmp, "mbr0.img"), marks=[(510, b"\x55\xaa")]),
        "gpt": gpt_image(os.path.join(tmp, "gpt.img")),
    }
    for what, img in refused.items():
        before = digest(img)
        p = run(["--quick", "--write", img], 1)
        check(f"--write refused on {what}, image unchanged, said why",
              digest(img) == before and "refused" in p.stderr and not p.stdout.strip() and
              what.split()[0].split("/")[0] in p.stderr)
    for what in ("AVFS", "ext4"):
        r, p = profile(["--quick", "--write", "--force", refused[what]])
        if r:
            write_figures(r, f"--force over {what}")
            check(f"--force over {what}: says what it overwrites",
                  "--force" in p.stderr and "overwriting" in p.stderr)
    # reads only without --write: the AVFS image stays as it was
    before = digest(avfs)
    run(["--quick", "--quiet", avfs])
    check("without --write the AVFS image is left as it was", digest(avfs) == before)

    # ---- progress: on a terminal only (SPEC §10) ----
    _, shown = on_tty([admin, "profile", "--quick", "sim:avfs-250g"])
    check("progress on a terminal: 'avfs-admin: profile: STEP [bar] N%', redrawn in place",
          "\ravfs-admin: profile: " in shown and "%" in shown and "[" in shown)
    _, shown = on_tty([admin, "profile", "--quick", "--quiet", "sim:avfs-250g"])
    check("--quiet on a terminal: no progress", "profile: " not in shown)
    p = run(["--quick", "sim:avfs-250g"])
    check("stderr not a terminal: no progress, nothing on stderr", p.stderr == "")

    # ---- bad usage and unusable backends ----
    for args, code in ((["--force", "sim:avfs-250g"], 2), (["--backend", "sg", "sim:ssd"], 2),
                       (["--backend", "scsi", zero], 2), (["--backend", "sg", zero], 1)):
        p = run(args, code)
        if not p.stderr.strip() or p.stdout.strip():
            fails.append(f"{args}: want a message on stderr and nothing on stdout")
    print("bad usage: exit codes and messages checked")

verdict()
