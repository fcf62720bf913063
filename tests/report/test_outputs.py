"""report.json has the schema of `analyze --json` (the same trace sections,
equal for the same trace), plus "checks"; the CSV parses with python's csv
module, has the documented columns, and its rows match the JSON."""
import csv
import json
import os
import sys

from report_common import expect, load_json, record_leaker, report, tmpdir, write

import arrtest

COLUMNS = ["trace", "allocator", "section", "metric", "value", "unit"]
UNITS = {"bytes", "ns", "count", "ratio", "per_s", ""}


def strip_volatile(t):
    """Replays time themselves; the trace side is deterministic."""
    t = dict(t)
    t.pop("allocators", None)
    return t


def test():
    leaker = sys.argv[1]
    d = tmpdir()
    tr = record_leaker(leaker, d, 3)
    cfg = write(os.path.join(d, "r.yaml"), """\
traces: [%s]
allocators: [glibc, builtin]
replay: {zeroing: false, samples: 50}
output: {dir: %s/out, html: false}
""" % (tr, d))
    report(cfg, "-q", check=0)
    doc = load_json(os.path.join(d, "out", "report.json"))
    ana = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--json", tr]).stdout)
    expect(doc["allocrr"] == ana["allocrr"], "same tool version")
    expect(len(doc["traces"]) == 1 and "checks" in doc, "one trace and a checks list")
    a, b = strip_volatile(ana["traces"][0]), strip_volatile(doc["traces"][0])
    expect(sorted(a) == sorted(b), "same sections: %s vs %s" % (sorted(a), sorted(b)))
    for k in a:
        expect(a[k] == b[k], "section %s differs:\nanalyze %s\nreport  %s" % (
            k, json.dumps(a[k])[:600], json.dumps(b[k])[:600]))
    als = doc["traces"][0]["allocators"]
    expect([x["allocator"] for x in als] == ["glibc", "builtin"], "allocators in config order")
    for x in als:
        for key in ("peak_rss", "peak_live", "final_rss", "peak_over_ideal"):
            expect(key in x["fragmentation"], "%s: fragmentation.%s" % (x["allocator"], key))

    with open(os.path.join(d, "out", "report.csv"), newline="") as f:
        rows = list(csv.reader(f))
    expect(rows[0] == COLUMNS, "header %s" % rows[0])
    body = [dict(zip(COLUMNS, r)) for r in rows[1:]]
    expect(all(len(r) == 6 for r in rows), "six fields per row")
    expect(all(r["unit"] in UNITS for r in body), "units: %s" % sorted({r["unit"] for r in body}))
    for r in body:
        if r["value"] != "":
            float(r["value"])
    index = {(r["allocator"], r["section"], r["metric"]): r for r in body}
    t = doc["traces"][0]
    for (al, sec, met, want) in [
            ("", "leaks", "bytes", t["leaks"]["bytes"]),
            ("", "summary", "calls", t["summary"]["calls"]),
            ("", "live", "peak_bytes", t["live"]["peak_bytes"]),
            ("glibc", "fragmentation", "peak_rss", als[0]["fragmentation"]["peak_rss"]),
            ("builtin", "time", "wall_ns", als[1]["time"]["wall_ns"])]:
        r = index.get((al, sec, met))
        expect(r is not None, "no CSV row for %s %s.%s" % (al or "trace", sec, met))
        expect(float(r["value"]) == float(want), "CSV %s.%s = %s, JSON %s" % (sec, met, r["value"], want))
        expect(r["trace"] == tr, "trace column %r" % r["trace"])
    expect(index[("", "leaks", "bytes")]["unit"] == "bytes", "leaks.bytes in bytes")
    expect(index[("builtin", "time", "wall_ns")]["unit"] == "ns", "wall_ns in ns")
    expect(t["leaks"]["bytes"] == 3000, "the leaker leaked 3 x 1000 bytes: %s" % t["leaks"]["bytes"])
    expect(not any("timeline" in r["metric"] for r in body), "timelines stay out of the CSV")

    # --json prints the same document on stdout
    p = report(cfg, "-q", "--json", check=0)
    same = json.loads(p.stdout)
    expect(strip_volatile(same["traces"][0]) == b, "--json prints report.json's trace")


if __name__ == "__main__":
    arrtest.main(test)
