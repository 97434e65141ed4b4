"""checklib.py — what the check_*.py scripts share: a named check that prints ok or MISS and
keeps the misses, a command run with its exit status checked, a file's digest, the verdict."""
import hashlib
import subprocess
import sys

fails = []


def check(name, ok):
    print(f"  {name:68s} {'ok' if ok else 'MISS'}")
    if not ok:
        fails.append(name)


def run(cmd, code=0):
    """Run cmd; an exit status other than code is a miss. The CompletedProcess, text output."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != code:
        fails.append(f"{cmd[1:]}: exit {p.returncode}, want {code}: {p.stderr.strip()[-300:]}")
    return p


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def verdict():
    print("FAILED: " + ", ".join(fails) if fails else "all checks passed")
    sys.exit(1 if fails else 0)
