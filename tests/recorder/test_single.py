#!/usr/bin/env python3
"""The recorder leaves a single-threaded program single-threaded for glibc
(its malloc skips the arena lock, its mutexes their locked instructions),
and still records every call."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PROG = sys.argv[1]


def test():
    native = subprocess.run([PROG], capture_output=True, check=True).stdout.decode()
    t.expect(native == "single_threaded=1\n", "native run: %r" % native)
    d = t.tmpdir()
    out = os.path.join(d, "single.atr")
    p = t.record(out, [PROG], timeout=120)
    t.expect(p.stdout.decode() == native, "recorded run printed %r, natively %r"
             % (p.stdout.decode(), native))
    inf = t.info(out)
    ev = t.dump(out)
    mallocs = sum(1 for e in ev if e["op"] == "malloc" and 16 <= e["size"] < 216)
    frees = sum(1 for e in ev if e["op"] == "free")
    t.expect(mallocs >= 201000, "mallocs recorded: %d of 201000" % mallocs)
    t.expect(frees >= 201000, "frees recorded: %d of 201000" % frees)
    t.expect(inf["clean"], "trace did not end cleanly: %s" % inf)


t.main(test)
