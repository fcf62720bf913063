#!/usr/bin/env python3
"""The bundled traces of real programs (traces/README.md): allocrr info
reads them exactly as when they were recorded, and each replays into glibc
in full."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "traces")
REAL = ["python3.atr", "sqlite3.atr", "gcc.atr", "gcc.atr.16279", "gcc.atr.16299"]


def test():
    for name in REAL:
        trace = os.path.join(TRACES, name)
        info = t.info(trace)
        info.pop("file")
        want = json.load(open(trace + ".info.json"))
        t.expect(info == want, "%s: info differs from the golden output:\n%s\n%s" % (name, info, want))
    # the family, from any of its traces
    want = json.load(open(os.path.join(TRACES, "gcc.tree.json")))
    for name in ("gcc.atr", "gcc.atr.16279", "gcc.atr.16299"):
        f = json.loads(t.run([t.ALLOCRR, "info", "--tree", "--json", os.path.join(TRACES, name)]).stdout)
        f["family"] = os.path.basename(f["family"])
        for m in f["traces"]:
            m["file"] = os.path.basename(m["file"])
        t.expect(f == want, "%s: family differs from gcc.tree.json:\n%s" % (name, f))
    # replay each (a copy: the workload cache goes beside the trace)
    d = t.tmpdir()
    for name in ("python3.atr", "sqlite3.atr", "gcc.atr.16279"):
        trace = os.path.join(d, name)
        shutil.copy(os.path.join(TRACES, name), trace)
        p = t.run([t.ALLOCRR, "replay", "-q", "-a", "glibc", "--json", trace])
        r = json.loads(p.stdout)
        res = r["results"][0]
        t.expect(res["ops"] == r["workload"]["calls"] and res["anomalies"] == 0,
                 "%s: replayed %d of %d calls, %d anomalies" % (name, res["ops"], r["workload"]["calls"],
                                                                res["anomalies"]))


t.main(test)
