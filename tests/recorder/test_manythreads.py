#!/usr/bin/env python3
"""Thousands of short-lived threads: each one's events are flushed at its
exit and the recorder's memory does not grow with the thread count."""
import json
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

    # bounded: 2000 threads end with the resident memory of 400 (the same 50
    # at a time), so nothing of the recorder's stays behind per thread; its
    # per-thread buffers alone are tens of KiB each, 1600 of them would be
    # tens of MiB. RSS from the trace's own samples (the last one at the end).
    def rss_peak(rounds):
        o = os.path.join(d, "r%d.atr" % rounds)
        t.record(o, [sys.argv[1], str(rounds)])
        p = t.run([t.ALLOCRR, "analyze", "--trace-only", "--json", "-w", "rss", o])
        return json.loads(p.stdout.decode())["traces"][0]["rss"]["recorded"]["peak"]
    small = min(rss_peak(8) for _ in range(2))
    big = rss_peak(40)
    print("peak RSS: 400 threads %d KiB, 2000 threads %d KiB" % (small >> 10, big >> 10))
    t.expect(big <= small + (4 << 20), "peak RSS grew with the thread count: %d KiB for 400 threads, "
             "%d KiB for 2000" % (small >> 10, big >> 10))


t.main(test)
