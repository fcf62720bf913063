#!/usr/bin/env python3
"""A trace whose addresses crowd the end of the live set (collide_trace.c):
every doubling of the table rehashes in place with probe runs that wrap
from the table's end to slot 0, set aside and inserted last, and past 256
of them the fallback copy. Every free must still find its block: no
unknown frees, the peak and the leaks exact. The sanitizer build also
checks the table's probe runs after each growth (core.c, live_check).
argv[1]: the collide_trace binary."""
import os
import sys

import anatest as a
from anatest import t

N = 300000


def main():
    trace = os.path.join(t.tmpdir(), "collide.atr")
    t.run([sys.argv[1], trace, str(N)])
    # the zeroing analysis would keep 300,000 scattered ranges: left out
    doc = a.analyze(trace, "-w", "summary,live,leaks,lifetimes")
    s, leaks = doc["summary"], doc["leaks"]
    kept = len(range(0, N, 1000))
    t.expect(s["calls"] == 2 * N - kept, "collide: %d calls, want %d" % (s["calls"], 2 * N - kept))
    t.expect(s["unknown_frees"] == 0, "collide: %d frees did not find their block" % s["unknown_frees"])
    t.expect(doc["live"]["peak_blocks"] == N and s["peak_live_bytes"] == 16 * N,
             "collide: peak %d blocks, %d bytes, want %d, %d" % (
                 doc["live"]["peak_blocks"], s["peak_live_bytes"], N, 16 * N))
    t.expect(leaks["blocks"] == kept and leaks["bytes"] == 16 * kept,
             "collide: leaks %d blocks, %d bytes, want %d, %d" % (
                 leaks["blocks"], leaks["bytes"], kept, 16 * kept))
    freed = doc["lifetimes"]["freed"]
    t.expect(freed == N - kept, "collide: %d blocks freed, want %d" % (freed, N - kept))


main()
