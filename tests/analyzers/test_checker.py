#!/usr/bin/env python3
"""The seeds' fragmentation experiment (checker.c), trace side: live bytes
exact in both patterns; under glibc the checkerboard's recorded RSS ends
~20 MB above the contiguous one's (the 400-byte blocks cannot use the holes)."""
import anatest as a
from anatest import t

N = 100000


def main():
    docs = {}
    for mode in ("checkerboard", "contiguous"):
        trace = a.record("checker", mode, extra=["--rss-interval", "5"])
        doc = a.analyze(trace)
        a.check_model(doc, t.dump(trace), mode)
        docs[mode] = doc
    cb, ct = docs["checkerboard"]["live"], docs["contiguous"]["live"]
    guard = 16
    t.expect(cb["peak_bytes"] == N // 2 * 200 + guard + N // 2 * 400, "checkerboard peak %d" % cb["peak_bytes"])
    t.expect(cb["final_bytes"] == cb["peak_bytes"], "checkerboard final %d" % cb["final_bytes"])
    t.expect(ct["peak_bytes"] == N * 200 + guard, "contiguous peak %d" % ct["peak_bytes"])
    t.expect(ct["final_bytes"] == guard + N // 2 * 400, "contiguous final %d" % ct["final_bytes"])
    t.expect(cb["final_blocks"] == N + 1 and ct["final_blocks"] == N // 2 + 1, "final blocks")
    tl = docs["checkerboard"]["live"]["timeline"]
    t.expect(max(tl["bytes_max"]) == cb["peak_bytes"], "timeline keeps the peak")
    t.expect(min(tl["bytes_min"]) == 0 or min(tl["bytes_min"]) < 1000, "timeline keeps the start")
    rb = docs["checkerboard"]["rss"]["recorded"]["peak"]
    rc = docs["contiguous"]["rss"]["recorded"]["peak"]
    t.expect(rb - rc > 15e6, "checkerboard RSS peak %d vs contiguous %d: want ~20 MB more" % (rb, rc))
    un_b = docs["checkerboard"]["rss"]["recorded"]["unexplained_peak"]
    un_c = docs["contiguous"]["rss"]["recorded"]["unexplained_peak"]
    t.expect(un_c > 15e6 and un_b > 0, "unexplained RSS: contiguous keeps its freed 20 MB (%d), %d" % (un_c, un_b))


main()
