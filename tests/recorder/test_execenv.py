#!/usr/bin/env python3
"""A program that resets LD_PRELOAD and the ALLOCRR_* variables for what it
runs keeps its children recorded: a posix_spawn with only "LD_PRELOAD=", an
execv after unsetenv, an execve with an empty environment; each child's
trace holds its ten marked mallocs. And `env LD_PRELOAD=libjemalloc.so.2`
records the child on jemalloc when it is installed."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def sizes(trace):
    return {e["size"] for e in t.dump(trace) if e["op"] == "malloc"}


def test():
    d = t.tmpdir()
    out = os.path.join(d, "env.atr")
    t.record(out, [sys.argv[1]])
    found = {}
    for tr in t.traces(out):
        s = sizes(tr)
        for k in (701, 702, 703):
            if k in s:
                found[k] = tr
    t.expect(sorted(found) == [701, 702, 703], "children recorded: %s of %s" % (found, t.traces(out)))
    for k, tr in found.items():
        n = sum(1 for e in t.dump(tr) if e["op"] == "malloc" and e["size"] == k)
        t.expect(n == 10, "%s: %d mallocs of %d" % (tr, n, k))
    je = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    if os.path.exists(je):
        out2 = os.path.join(d, "je.atr")
        p = t.record(out2, ["env", "LD_PRELOAD=" + je, "/usr/bin/python3", "-c",
                            "import os; print(os.environ['LD_PRELOAD'])"])
        t.expect(p.stdout.decode().strip().endswith(":" + je), "child's LD_PRELOAD: %r" % p.stdout)
        kids = [tr for tr in t.traces(out2) if t.info(tr)["exe"].startswith("/usr/bin/python3")]
        t.expect(len(kids) == 1 and t.info(kids[0])["ops"]["malloc"] > 100, "python3 not recorded: %s" % kids)
    else:
        print("no %s: the env LD_PRELOAD=jemalloc case is not tested" % je)


t.main(test)
