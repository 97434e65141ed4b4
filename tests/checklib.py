"""checklib.py — what the check_*.py scripts share: a named check that prints ok or MISS and
keeps the misses, a measured figure checked against the one it should be, a command run with
its exit status checked (and its JSON read), a file's digest, the verdict."""
import hashlib
import json
import os
import pty
import subprocess
import sys

fails = []


def check(name, ok):
    print(f"  {name:68s} {'ok' if ok else 'MISS'}")
    if not ok:
        fails.append(name)


def near(name, got, want, frac=0.05):
    """A check that got (None: not measured) is within frac of want."""
    ok = got is not None and abs(got - want) <= frac * want
    shown = "-" if got is None else f"{got:.6g}"
    print(f"  {name:24s} {shown:>12}  want {want:.4g} ±{frac * 100:.0f}%  {'ok' if ok else 'MISS'}")
    if not ok:
        fails.append(name)


def run(cmd, code=0):
    """Run cmd; an exit status other than code is a miss. The CompletedProcess, text output."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != code:
        fails.append(f"{cmd[1:]}: exit {p.returncode}, want {code}: {p.stderr.strip()[-300:]}")
    return p


def run_json(cmd):
    """run(cmd); its stdout as JSON, or None when it failed or printed no JSON (a miss)."""
    p = run(cmd)
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout)
    except ValueError:
        fails.append(f"{cmd[1:]}: no JSON on stdout")
        return None


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def verdict():
    print("FAILED: " + ", ".join(fails) if fails else "all checks passed")
    sys.exit(1 if fails else 0)


def on_tty(argv):
    """argv with stderr on a pseudo-terminal, stdout discarded: (exit status, what it drew)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:     # EIO: the other side is closed
            break
        if not chunk:
            break
        out += chunk
    rc = proc.wait()
    os.close(master)
    return rc, out.decode(errors="replace")
