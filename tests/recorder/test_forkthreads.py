#!/usr/bin/env python3
"""fork while other threads allocate: every child leaves a whole trace with
its own calls, the parent's trace is whole and counts every fork."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    out = os.path.join(d, "ft.atr")
    p = t.record(out, [sys.argv[1]], check=False)
    t.expect(p.returncode == 0, "the program failed under the recorder: %d %s" % (p.returncode, p.stderr))
    files = t.traces(out)
    t.expect(len(files) == 21, "want the parent's trace and 20 children's, got %d" % len(files))
    inf = t.info(out)
    t.expect(inf["clean"] and inf["ops"].get("fork") == 20, "parent: %s" % inf)
    for f in files:
        if f == out:
            continue
        ci = t.info(f)
        t.expect(ci["clean"] and ci["ending"] == "exit", "child %s not clean: %s" % (f, ci))
        n = sum(1 for e in t.dump(f) if e["op"] == "malloc" and e["size"] == 4242)
        t.expect(n == 100, "child %s: %d x malloc(4242), want 100" % (f, n))


t.main(test)
