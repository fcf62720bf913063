#!/usr/bin/env python3
"""allocrr_mark(): three marks show in `dump` in order, with their names and
between the right calls; a second thread's marks carry its tid; the replay's
workload prep ignores them (counted as ignored events); the program runs the
same without the recorder. usage: test_marks.py MARKS [MARKS_CXX]"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    out = os.path.join(d, "marks.atr")
    t.run([sys.argv[1], "x"])  # natively: no recorder, no crash
    t.record(out, [sys.argv[1], "x"])
    ev = t.dump(out)
    marks = [e for e in ev if e["op"] == "mark"]
    main = [e for e in ev if e["op"] == "malloc" and e["size"] in (111, 222)]
    mtid = main[0]["tid"]
    mine = [e["name"] for e in marks if e["tid"] == mtid]
    t.expect(mine == ["load", "work", "done"], "main thread's marks: %s" % mine)
    other = [e for e in marks if e["tid"] != mtid]
    t.expect([e["name"] for e in other] == ["t-load", "t-done"], "second thread's marks: %s" % other)
    # Each mark sits between the calls it separates, in the main thread's order.
    seq = [e for e in ev if e["tid"] == mtid and (e["op"] == "mark" or e.get("size") in (111, 222))]
    kinds = "".join("M" if e["op"] == "mark" else ("a" if e["size"] == 111 else "b") for e in seq)
    t.expect(kinds == "M" + "a" * 100 + "M" + "b" * 50 + "M", "order of marks and calls: %s" % kinds)
    text = t.run([t.ALLOCRR, "dump", "-e", "mark", out]).stdout.decode().splitlines()
    t.expect([line.split()[-1] for line in text] == ["load", "work", "done", "t-load", "t-done"],
             "text dump: %s" % text)
    inf = t.info(out)
    t.expect(inf["format"] == "1.3", "format %s" % inf["format"])  # RSS sampled: rss_peak may appear
    t.expect(inf["ops"].get("mark") == 5, "info counts %s marks" % inf["ops"].get("mark"))
    rep = json.loads(t.run([t.ALLOCRR, "replay", "-q", "-a", "glibc", "--json", out]).stdout)
    wl = rep["workload"]
    nrss = inf["ops"].get("rss", 0) + inf["ops"].get("rss_peak", 0)
    t.expect(wl["repairs"]["ignored_event"] == 5 + nrss, "prep ignored %d events, want 5 marks + %d rss" % (
        wl["repairs"]["ignored_event"], nrss))
    calls = sum(v for k, v in inf["ops"].items() if k in t.CALLS)
    t.expect(wl["calls"] == calls, "replayed calls %d, recorded %d" % (wl["calls"], calls))
    if len(sys.argv) > 2:
        out2 = os.path.join(d, "cxx.atr")
        t.run([sys.argv[2]])
        t.record(out2, [sys.argv[2]])
        names = [e["name"] for e in t.dump(out2) if e["op"] == "mark"]
        t.expect(names == ["cxx-begin", "cxx-end"], "C++ marks: %s" % names)


t.main(test)
