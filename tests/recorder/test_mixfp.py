#!/usr/bin/env python3
"""A stack through code with and without frame pointers (main and mix_leaf
with them, mix_middle in a library built without): the default unwinder
gives every frame, in order, up to _start, untruncated; the frame-pointer
walk (ALLOCRR_UNWIND=fp) gives a stack too, and never crashes."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PROG = sys.argv[1]


def leaf_event(trace):
    p = t.run([t.ALLOCRR, "dump", "--json", "--stacks", trace])
    hits = [json.loads(l) for l in p.stdout.decode().splitlines()]
    hits = [e for e in hits if e["op"] == "malloc" and e.get("size") == 5555]
    t.expect(len(hits) == 1, "malloc(5555) recorded %d times" % len(hits))
    return hits[0]


def test():
    d = t.tmpdir()
    out = os.path.join(d, "mix.atr")
    t.record(out, [PROG], extra=["--stacks"])
    ev = leaf_event(out)
    names = [f["func"] for f in ev["stack"]]
    t.expect(names[:3] == ["mix_leaf", "mix_middle", "main"], "mixed stack: %s" % names)
    t.expect(names[-1] == "_start" and not ev.get("stack_truncated"), "not whole: %s, truncated %s"
             % (names, ev.get("stack_truncated")))
    t.expect(ev["stack"][1].get("file", "").endswith("mixfp_lib.c"), "middle frame: %s" % ev["stack"][1])

    out2 = os.path.join(d, "mix-fp.atr")
    t.record(out2, [PROG], extra=["--stacks"], env={"ALLOCRR_UNWIND": "fp"})
    names2 = [f["func"] for f in leaf_event(out2)["stack"]]
    t.expect(names2[:2] == ["mix_leaf", "mix_middle"], "frame-pointer walk: %s" % names2)


t.main(test)
