#!/usr/bin/env python3
"""A live set that grows past 2 MiB several times (growth.c: 400,000 blocks
live at once, reallocs, then frees in a scrambled order): after each
in-place doubling every block must still be found, so every free is known
(no unknown frees), the peak and the leaks are exact, and every figure of
the reference model matches. The sanitizer build also checks the table's
probe runs after each growth (analyzers/core.c, live_check)."""
import anatest as a
from anatest import t

N = 200000


def main():
    trace = a.record("growth", str(N))
    doc = a.analyze(trace)
    events = t.dump(trace)
    a.check_model(doc, events, "growth")
    s = doc["summary"]
    sizes = [i % 97 + 1 for i in range(N)]
    for i in range(0, N, 7):
        sizes[i] += 200
    leaked = sum(sizes[i] for i in range(0, N, 1000))
    # the program's own blocks: all N live at once after the reallocs (plus p itself)
    at_once = sum(sizes) + N * 8
    t.expect(s["peak_live_bytes"] >= at_once,
             "growth: peak %d below the %d bytes live at once" % (s["peak_live_bytes"], at_once))
    n_leak = len(range(0, N, 1000))
    t.expect(doc["leaks"]["blocks"] >= n_leak, "growth: %d leaked blocks, want at least %d" % (
        doc["leaks"]["blocks"], n_leak))
    t.expect(doc["leaks"]["bytes"] >= leaked,
             "growth: leaked %d bytes, want at least %d" % (doc["leaks"]["bytes"], leaked))
    # every free of the program's blocks found its block after the table moved
    ours = set()
    unknown = 0
    for e in events:
        if e["op"] in ("malloc", "realloc") and e.get("ret"):
            if e["op"] == "realloc":
                ours.discard(e.get("ptr"))
            ours.add(e["ret"])
        elif e["op"] == "free" and e.get("ptr") not in (None, "0x0"):
            if e["ptr"] not in ours:
                unknown += 1
            ours.discard(e["ptr"])
    t.expect(s["unknown_frees"] == unknown,
             "growth: %d unknown frees, the dump says %d" % (s["unknown_frees"], unknown))
    peak = doc["live"]["peak_blocks"]
    t.expect(peak >= N, "growth: live peak %d blocks, want %d" % (peak, N))


main()
