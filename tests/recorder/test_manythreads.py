#!/usr/bin/env python3
"""Thousands of short-lived threads: each one's events are flushed at its
exit and the recorder's memory does not grow with the thread count."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    out = os.path.join(d, "many.atr")
    t.record(out, [sys.argv[1]])
    ev = t.dump(out)
    n = sum(1 for e in ev if e["op"] == "malloc" and e["size"] == 77)
    t.expect(n == 2000, "malloc(77) x %d, want 2000" % n)
    inf = t.info(out)
    t.expect(inf["threads"] == 2001, "threads: %d" % inf["threads"])
    t.expect(inf["ops"]["thread_exit"] == 2000, "thread exits: %d" % inf["ops"]["thread_exit"])
    t.expect(inf["clean"], "not clean")
    t.check_frees_live(ev, "manythreads")


t.main(test)
