#!/usr/bin/env python3
"""fork: the child records into FILE.PID; the parent's trace has the fork."""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def sizes(ev):
    return collections.Counter(e["size"] for e in ev if e["op"] == "malloc")


def test():
    d = t.tmpdir()
    out = os.path.join(d, "fork.atr")
    p = t.record(out, [sys.argv[1]])
    child = int(p.stdout.decode().strip())
    files = t.traces(out)
    t.expect(files == sorted([out, "%s.%d" % (out, child)]), "traces: %s" % files)
    parent_ev, child_ev = t.dump(out), t.dump("%s.%d" % (out, child))
    ps, cs = sizes(parent_ev), sizes(child_ev)
    t.expect(ps[111] == 11 and ps[333] == 33 and ps[222] == 0, "parent sizes: %s" % ps)
    t.expect(cs[222] == 22 and cs[111] == 0 and cs[333] == 0, "child sizes: %s" % cs)
    forks = [e for e in parent_ev if e["op"] == "fork"]
    t.expect(len(forks) == 1 and forks[0]["pid"] == child, "fork events: %s" % forks)
    ci = t.info("%s.%d" % (out, child))
    t.expect(ci["pid"] == child and ci.get("parent_trace") == out, "child info: %s" % ci)
    t.expect(ci["clean"] and ci["ending"] == "exit", "child ending: %s" % ci)
    # --no-children: only the top process
    out2 = os.path.join(d, "nochild.atr")
    t.record(out2, [sys.argv[1]], extra=["--no-children"])
    t.expect(t.traces(out2) == [out2], "with --no-children: %s" % t.traces(out2))


t.main(test)
