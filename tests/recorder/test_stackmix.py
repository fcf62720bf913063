#!/usr/bin/env python3
"""Remembered walks (recorder/unwind.c) on 32 stacks that share their
innermost state: every allocation of tests/recorder/stackmix.c must carry
its own path (leaf, c<k>, m<j>, main, by its size), whole, and cut at the
depth asked for; programs built with and without frame pointers."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

CALLS = 60000


def check(prog, depth):
    d = t.tmpdir()
    out = os.path.join(d, "mix.atr")
    t.record(out, [prog, str(CALLS)], extra=["--stacks=%d" % depth])
    p = t.run([t.ALLOCRR, "dump", "--json", "--stacks", "--op", "malloc", out])
    seen = set()
    n = 0
    for line in p.stdout.decode().splitlines():
        e = json.loads(line)
        size = e["size"]
        if not 1000 <= size < 1032:
            continue
        n += 1
        j, k = (size - 1000) // 8, (size - 1000) % 8
        fs = [f.get("func") for f in e.get("stack", [])]
        want = ["leaf", "c%d" % k, "m%d" % j, "main"][:depth]
        t.expect(fs[:len(want)] == want, "%s: malloc(%d) #%d has stack %s, want %s..." % (prog, size, n, fs, want))
        if depth <= 4:
            t.expect(len(fs) == depth and e.get("stack_truncated"),
                     "%s depth %d: %d frames, truncated %s" % (prog, depth, len(fs), e.get("stack_truncated")))
        else:
            t.expect(fs[-1] == "_start" and not e.get("stack_truncated"), "%s: not whole: %s" % (prog, fs))
        seen.add((j, k))
    t.expect(n == CALLS, "%s: %d allocations of the paths recorded, want %d" % (prog, n, CALLS))
    t.expect(len(seen) == 32, "%s: %d paths seen, want 32" % (prog, len(seen)))


def test():
    for prog in sys.argv[1:]:
        check(prog, 64)
        check(prog, 3)


t.main(test)
