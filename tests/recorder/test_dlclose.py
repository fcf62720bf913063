#!/usr/bin/env python3
"""dlclose with stacks: a library allocates, is closed, and another library
is loaded at the same address and allocates. The trace's modules say the
first went away (an unloaded entry), and the sites analysis and dump name
each allocation by the library that was mapped when it was made."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PROG, LIB_A, LIB_B = sys.argv[1], sys.argv[2], sys.argv[3]


def test():
    d = t.tmpdir()
    out = os.path.join(d, "dlclose.atr")
    p = t.record(out, [PROG, LIB_A, LIB_B], extra=["--stacks"])
    ba, bb = p.stdout.decode().split()
    t.expect(ba == bb, "library B was not loaded where A was (%s, %s): the test needs the same place" % (ba, bb))

    p = t.run([t.ALLOCRR, "analyze", "--json", "--what", "sites", out])
    sites = json.loads(p.stdout.decode())["traces"][0]["sites"]["by_bytes"]
    by = {s["function"]: s for s in sites}
    for fn, lib, size, n in (("dlc_alloc_a", LIB_A, 1111, 100), ("dlc_alloc_b", LIB_B, 2222, 200)):
        s = by.get(fn)
        t.expect(s is not None, "no site %s: %s" % (fn, [x["function"] for x in sites]))
        t.expect(s["allocs"] == n and s["bytes"] == n * size, "%s: %d allocs, %d bytes" % (fn, s["allocs"], s["bytes"]))
        t.expect(os.path.realpath(s.get("module", "")) == os.path.realpath(lib), "%s in %s" % (fn, s.get("module")))
        t.expect(s["file"].endswith("dlc_lib.c"), "%s file %s" % (fn, s.get("file")))

    # dump names them the same way, event by event
    p = t.run([t.ALLOCRR, "dump", "--json", "--stacks", out])
    names = {}
    for line in p.stdout.decode().splitlines():
        e = json.loads(line)
        if e["op"] == "malloc" and e.get("size") in (1111, 2222) and e.get("stack"):
            names.setdefault(e["size"], set()).add(e["stack"][0]["func"])
    t.expect(names == {1111: {"dlc_alloc_a"}, 2222: {"dlc_alloc_b"}}, "dump frames: %s" % names)


t.main(test)
