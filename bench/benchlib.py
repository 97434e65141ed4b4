"""benchlib.py - what the benchmarks' Python parts share (peer-compare.sh's report,
recorder_judge.py, recorder_report.py): reading the files a run leaves, writing a report's JSON.
It runs nothing."""
import json
import sys


def load(path):
    """a JSON file's document; None when it is missing or not JSON"""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def kv(path):
    """`key value` lines (hddemu's stats) as a dict: ints, floats, else strings; {} if missing"""
    d = {}
    try:
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) == 2:
                    try:
                        d[w[0]] = float(w[1]) if "." in w[1] or "e" in w[1] else int(w[1])
                    except ValueError:
                        d[w[0]] = w[1]
    except OSError:
        pass
    return d


def emit(doc, as_json, out):
    """doc as JSON into the file out (if any) and on stdout (if as_json); True when printed"""
    if out:
        with open(out, "w") as fo:
            json.dump(doc, fo, indent=1)
            fo.write("\n")
    if as_json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    return as_json
