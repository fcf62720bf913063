#!/usr/bin/env python3
"""Recording a program that runs on another allocator: jemalloc, mimalloc and
tcmalloc, each preloaded under a plain program and linked into one, with 1 and
4 threads. Every call is recorded, its stamps follow the program's real time
(the trace lasts at least 80% of the program's main and no longer than the
recorded process lived), and the replay finds no
free of an unknown block, no block returned twice and no lost object.

usage: test_otheralloc.py PLAIN_BINARY [NAME=LINKED_BINARY]..."""
import os
import time
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

LIBDIR = "/usr/lib/x86_64-linux-gnu"
PRELOAD = {"jemalloc": "libjemalloc.so.2", "mimalloc": "libmimalloc.so.2",
           "tcmalloc": "libtcmalloc_minimal.so.4"}
MS = 150


def check(d, name, cmd, threads, env=None):
    out = os.path.join(d, "%s-%d.atr" % (name, threads))
    t0 = time.monotonic()
    p = t.record(out, cmd + [str(threads), str(MS)], env=env)
    wall_ns = (time.monotonic() - t0) * 1e9  # the whole recorded process, start-up and exit included
    elapsed_ns, mallocs = map(int, p.stdout.split())
    inf = t.info(out)
    what = "%s, %d threads" % (name, threads)
    t.expect(inf["clean"], "%s: not clean: %s" % (what, inf))
    dur = inf["duration_ns"]
    # no shorter than the program's own main, no longer than the process lived
    t.expect(0.8 * elapsed_ns <= dur <= wall_ns,
             "%s: trace lasts %.3f s, the program ran %.3f s" % (what, dur / 1e9, elapsed_ns / 1e9))
    ev = t.dump(out)
    mine = [e for e in ev if e["op"] == "malloc" and 2000 <= e.get("size", 0) < 2000 + threads]
    t.expect(len(mine) == mallocs, "%s: %d mallocs recorded, the program made %d" % (what, len(mine), mallocs))
    span = mine[-1]["t"] - mine[0]["t"]
    t.expect(span >= 0.8 * MS / 1e3, "%s: the program's calls span %.3f s, it ran %d ms" % (what, span, MS))
    last = {}
    for e in ev:
        t.expect(e["t"] >= last.get(e["tid"], 0), "%s: thread %d goes back in time" % (what, e["tid"]))
        last[e["tid"]] = e["t"]
    rep = t.run([t.ALLOCRR, "replay", "-q", "-a", "glibc", "--json", out])
    import json
    repairs = json.loads(rep.stdout)["workload"]["repairs"]
    bad = {k: repairs[k] for k in ("unknown_free", "double_free", "unknown_realloc", "lost_object")
           if repairs[k]}
    t.expect(not bad and repairs["alloc_before_free"] <= 8, "%s: replay repairs %s" % (what, repairs))
    return len(ev)


def test():
    plain, linked = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    d = t.tmpdir()
    cases = []
    for name, so in sorted(PRELOAD.items()):
        path = os.path.join(LIBDIR, so)
        if os.path.exists(path):
            cases.append(("%s preloaded" % name, [plain], {"LD_PRELOAD": path}))
        else:
            print("no %s: not tested preloaded" % path)
    for name, path in linked:
        cases.append(("%s linked" % name, [path], None))
    if not cases:
        print("SKIP: none of jemalloc, mimalloc, tcmalloc is installed (scripts/deps.sh)")
        sys.exit(77)
    for name, cmd, env in cases:
        for threads in (1, 4):
            n = check(d, name, cmd, threads, env)
            print("%s, %d threads: %d events ok" % (name, threads, n))


t.main(test)
