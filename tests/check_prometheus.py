#!/usr/bin/env python3
"""check_prometheus.py — `avfs-admin stats --prometheus` read by Prometheus's own parser
(prometheus_client, Debian's python3-prometheus-client), against the stats JSON of the same
daemon (issue 17, Done when 5): it parses; every family has HELP and TYPE; every sample
carries the device and mount point; the real-time requests and misses, the margin quantiles
(seconds), the disk utilization and the reservations (one labelled series each, by id) are
the JSON's figures. Run by test_admin.sh on a daemon that has just served a dvr run.
usage: check_prometheus.py ADMIN SOCKET"""
import json
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

admin, sock = sys.argv[1], sys.argv[2]
run = lambda *a: subprocess.run([admin, "--socket", sock, *a], check=True,
                                capture_output=True, text=True).stdout
# the utilization is busy time over the time since the measurement began, so it moves between
# two snapshots of an idle daemon: the exposition's must lie between a JSON taken before it
# and one taken after; every counter must equal the JSON's (nothing runs meanwhile)
before = json.loads(run("stats", "--json"))
text = run("stats", "--prometheus")
doc = json.loads(run("stats", "--json"))
fails = 0


def check(name, ok, why=""):
    global fails
    print(("ok " if ok else "FAIL ") + name + ("" if ok else ": " + why))
    fails += not ok


try:
    families = {f.name: f for f in text_string_to_metric_families(text)}
except ValueError as e:
    print(text)
    check("the exposition parses", False, str(e))
    sys.exit(1)
check("the exposition parses (%d families)" % len(families), len(families) >= 15)
check("every family has HELP and a type",
      all(f.documentation and f.type in ("counter", "gauge") for f in families.values()),
      str([(f.name, f.type) for f in families.values() if not f.documentation]))
samples = [s for f in families.values() for s in f.samples]
check("every sample is labelled with the device and mount point",
      all(s.labels.get("device") == doc["device"] and
          s.labels.get("mountpoint") == doc["mountpoint"] for s in samples))


def value(name, **labels):
    for s in samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


# counters: the parser names the family without _total, the samples keep it
check("avfs_rt_requests_total is a counter", families.get("avfs_rt_requests") is not None and
      families["avfs_rt_requests"].type == "counter")
check("RT requests and misses as in the JSON",
      value("avfs_rt_requests_total") == doc["rt"]["requests"] and
      value("avfs_rt_misses_total") == doc["rt"]["misses"] and doc["rt"]["requests"] > 0,
      "%s %s" % (value("avfs_rt_requests_total"), doc["rt"]["requests"]))
u = value("avfs_disk_utilization_ratio")
lo, hi = sorted((before["disk_utilization"], doc["disk_utilization"]))
check("disk utilization as in the JSON (between the JSON before and after)",
      u is not None and lo - 1e-9 <= u <= hi + 1e-9, "%s not in [%s, %s]" % (u, lo, hi))
m = doc["rt"]["margin_ms"]
check("RT margins at quantiles 0, 0.001, 0.01, 0.5, in seconds",
      all(abs(value("avfs_rt_margin_seconds", quantile=q) - m[k] / 1e3) < 1e-9
          for q, k in (("0", "min"), ("0.001", "p001"), ("0.01", "p01"), ("0.5", "p50"))))
streams = doc["streams"]
check("avfs_streams counts the reservations (%d)" % len(streams),
      value("avfs_streams") == len(streams))
check("one series per reservation, with its figures",
      all(value("avfs_stream_requests_total", id=str(s["id"])) == s["requests"] and
          value("avfs_stream_rate_bytes_per_second", id=str(s["id"])) == s["rate"] and
          value("avfs_stream_utilization_ratio", id=str(s["id"])) == s.get("utilization") and
          value("avfs_stream_margin_seconds", id=str(s["id"]), quantile="0.5") is not None and
          value("avfs_stream_misses_total", id=str(s["id"]), direction=s["direction"]) == s["misses"]
          for s in streams))
sys.exit(1 if fails else 0)
