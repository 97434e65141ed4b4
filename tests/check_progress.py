#!/usr/bin/env python3
"""check_progress.py — mkfs.avfs's and fsck.avfs's progress line (issue 17): with stderr on a
terminal (a pseudo-terminal here), a line redrawn in place with the step, a bar and a
percentage that reaches 100 % (mkfs writing the metadata of a 512 GiB image, fsck loading
it); nothing of it when stderr is a file or with -q; stdout unchanged either way."""
import os
import subprocess
import sys
import tempfile

from checklib import check, on_tty, verdict

mkfs, fsck = sys.argv[1], sys.argv[2]


def frames(drawn, prefix):
    return [f.replace("\x1b[K", "") for f in drawn.split("\r") if f.startswith(prefix)]


with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    img = os.path.join(tmp, "big.img")
    rc, drawn = on_tty([mkfs, "--size", "512G", img])
    f = frames(drawn, "mkfs.avfs: ")
    print(f"  mkfs frames: {len(f)}, last: {f[-1] if f else '-'}")
    check("mkfs on a terminal: exit 0, progress redrawn in place", rc == 0 and len(f) >= 2)
    check("mkfs: the writing of the metadata, a bar, up to 100 %",
          any("writing the metadata" in x and "[" in x and "100%" in x for x in f))
    check("mkfs: the line is cleared at the end", drawn.rstrip("\n").endswith("\r\x1b[K"))
    p = subprocess.run([mkfs, "-f", "--size", "512G", img], capture_output=True, text=True)
    check("mkfs with stderr in a file: no progress",
          p.returncode == 0 and "\r" not in p.stderr and "writing the metadata" not in p.stderr)
    rc, drawn = on_tty([mkfs, "-f", "-q", img])
    check("mkfs -q on a terminal: no progress", rc == 0 and "%" not in drawn)
    rc, drawn = on_tty([fsck, "-n", img])
    f = frames(drawn, "fsck.avfs: ")
    print(f"  fsck frames: {len(f)}, last: {f[-1] if f else '-'}")
    check("fsck on a terminal: exit 0, loading the metadata with a bar",
          rc == 0 and any("loading the metadata" in x and "[" in x and "%" in x for x in f))
    p = subprocess.run([fsck, "-n", img], capture_output=True, text=True)
    check("fsck with stderr in a file: no progress, the report on stdout",
          p.returncode == 0 and p.stderr == "" and ": clean" in p.stdout)
verdict()
