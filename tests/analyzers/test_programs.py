#!/usr/bin/env python3
"""Real programs: sqlite3 running inserts and python3 building strings
(PYTHONMALLOC=malloc), recorded and analysed; every figure the reference
model computes from the dump must match the document exactly, and the
sections must be internally consistent. Skips (77) when sqlite3 is missing."""
import os
import shutil
import subprocess
import sys

import anatest as a
from anatest import t


def consistent(doc, what):
    s, sz, lt, lv, lk = doc["summary"], doc["sizes"], doc["lifetimes"], doc["live"], doc["leaks"]
    allocs = sum(r["count"] for r in sz["log2"])
    t.expect(sum(r["bytes"] for r in sz["log2"]) == s["bytes_requested"], "%s: log2 bytes" % what)
    t.expect(lt["freed"] + lk["blocks"] <= allocs, "%s: freed + live <= allocations" % what)
    t.expect(sum(r["count"] for r in lt["time_log2"]) == lt["freed"] == sum(
        r["count"] for r in lt["events_log2"]), "%s: lifetime histograms count every release" % what)
    t.expect(sum(r["allocs"] for r in lt["churn_by_size"]) == allocs, "%s: churn allocs" % what)
    t.expect(lv["final_bytes"] == lk["bytes"] and lv["final_blocks"] == lk["blocks"], "%s: final" % what)
    t.expect(sum(r["bytes"] for r in lk["by_size"]) == lk["bytes"], "%s: by_size sums" % what)
    t.expect(sum(r["blocks"] for r in lk["by_thread"]) == lk["blocks"], "%s: by_thread sums" % what)
    t.expect(max(lv["timeline"]["bytes_max"]) == lv["peak_bytes"], "%s: the timeline keeps the peak" % what)
    t.expect(len(lv["timeline"]["t"]) <= 2000, "%s: bounded timeline" % what)
    z = doc["zeroing"]
    ok_callocs = s["ops"]["calloc"] - doc["leaks"]["failed_calls"]["by_op"].get("calloc", 0)
    t.expect(z["fresh_calls"] + z["reused_calls"] == z["calloc_calls"] == ok_callocs, "%s: calloc classes" % what)
    rss = doc["rss"]["recorded"]
    t.expect(rss["samples"] > 0 and rss["peak"] >= rss["final"] > 0, "%s: RSS %s" % (what, rss))


def run(name, cmd, stdin=None, env=None):
    out = os.path.join(t.tmpdir(), name + ".atr")
    p = subprocess.run([t.ALLOCRR, "record", "-q", "--no-children", "-o", out, "--", *cmd], input=stdin,
                       capture_output=True, env=dict(os.environ, **(env or {})), timeout=300)
    t.expect(p.returncode == 0, "%s: record exited %d: %s" % (name, p.returncode, p.stderr[-500:]))
    doc = a.analyze(out)
    a.check_model(doc, t.dump(out), name)
    consistent(doc, name)
    return doc


def main():
    if not shutil.which("sqlite3"):
        print("sqlite3 not installed: skipped")
        sys.exit(77)
    lines = ["CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER);",
             "CREATE INDEX t_name ON t(name);", "BEGIN;"]
    lines += ["INSERT INTO t(name, v) VALUES('n%d-%s', %d);" % (i, "y" * (i % 23), i % 97) for i in range(3000)]
    lines += ["COMMIT;", "SELECT count(*), sum(v) FROM t;"]
    doc = run("sqlite3", ["sqlite3", ":memory:"], stdin="\n".join(lines).encode())
    t.expect(doc["sizes"]["realloc_growth"]["count"] > 0, "sqlite3 reallocs")
    prog = "s = sorted(str(i) * (i % 7) for i in range(20000)); print(len(s))"
    doc = run("python3", [sys.executable, "-c", prog], env={"PYTHONMALLOC": "malloc"})
    t.expect(doc["lifetimes"]["temporary"]["count"] > 0, "python3 has temporary allocations")


main()
