#!/usr/bin/env python3
"""dlopen under the recorder: a library found through the program's own
RUNPATH still loads (the hook keeps dlopen's caller), its calls are recorded;
opened with RTLD_DEEPBIND, the recorder says once on stderr that the
library's calls bypass it (they do: none of them is in the trace)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    out = os.path.join(d, "deep.atr")
    p = t.record(out, [sys.argv[1]])
    t.expect(p.stdout == b"ok\n", "plain dlopen: %r %r" % (p.stdout, p.stderr))
    t.expect(b"DEEPBIND" not in p.stderr, "warned without RTLD_DEEPBIND: %r" % p.stderr)
    n = sum(1 for e in t.dump(out) if e["op"] == "malloc" and e["size"] == 555)
    t.expect(n == 10, "plain dlopen: %d of the library's 10 mallocs recorded" % n)
    p = t.record(out, [sys.argv[1], "deep"])
    t.expect(p.stdout == b"ok\n", "RTLD_DEEPBIND dlopen: %r %r" % (p.stdout, p.stderr))
    warn = [line for line in p.stderr.decode().splitlines() if "RTLD_DEEPBIND" in line]
    t.expect(len(warn) == 1 and "libarrdeep.so" in warn[0], "warnings: %s" % warn)
    n = sum(1 for e in t.dump(out) if e["op"] == "malloc" and e["size"] == 555)
    print("RTLD_DEEPBIND: %d of the library's 10 mallocs recorded; warning: %s" % (n, warn[0]))


t.main(test)
