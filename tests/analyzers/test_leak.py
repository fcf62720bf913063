#!/usr/bin/env python3
"""A program that leaks 64 KiB every 10 ms (leaker.c): the leak's bytes and
blocks are exact, and the recorded RSS grows at the leak's rate (within 10%
of the rate the trace's own timestamps give)."""
import anatest as a
from anatest import t

N, SIZE = 120, 65536


def main():
    trace = a.record("leaker", str(N))
    doc = a.analyze(trace)
    events = t.dump(trace)
    m = a.check_model(doc, events, "leaker")
    leaks = doc["leaks"]
    row = [r for r in leaks["by_size"] if r["size"] == SIZE]
    t.expect(row and row[0]["blocks"] == N and row[0]["bytes"] == N * SIZE,
             "leaker: by_size %s, want %d blocks of %d" % (leaks["by_size"], N, SIZE))
    t.expect(leaks["by_size"][0]["size"] == SIZE, "leaker: the 64 KiB leak comes first (largest bytes)")
    t.expect(sum(r["blocks"] for r in leaks["by_thread"]) == leaks["blocks"] == m["live_blocks"],
             "leaker: by_thread %s" % leaks["by_thread"])
    big = [r for r in leaks["largest"] if r["size"] == SIZE]
    t.expect(len(big) == min(N, 20), "leaker: largest %s" % leaks["largest"][:3])
    # the truth: leaked bytes over the time the leaks took
    times = [e["t"] for e in events if e["op"] == "malloc" and e.get("size") == SIZE]
    truth = (N - 1) * SIZE / ((times[-1] - times[0]) / 1e9)
    rss = doc["rss"]["recorded"]
    t.expect(rss["samples"] >= N // 2, "leaker: only %d RSS samples" % rss["samples"])
    g = rss["growth_bytes_per_s"]
    t.expect(abs(g - truth) <= 0.10 * truth, "leaker: RSS grows %.0f B/s, truth %.0f B/s" % (g, truth))
    t.expect(rss["peak"] >= N * SIZE, "leaker: RSS peak %d below the leak" % rss["peak"])
    tl = rss["timeline"]
    t.expect(len(tl["t"]) == len(tl["rss"]) == len(tl["live"]) > 10, "leaker: rss timeline %s" % tl.keys())
    t.expect(doc["live"]["final_bytes"] == N * SIZE + sum(
        v[0] for k, v in m["live"].items() if v[0] != SIZE), "leaker: live.final_bytes")


main()
