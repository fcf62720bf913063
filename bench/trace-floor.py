#!/usr/bin/env python3
"""trace-floor.py: an information floor for a trace's size, from its dump.

Usage: allocrr dump --json TRACE | python3 bench/trace-floor.py

For malloc and free events (others are skipped) it adds up, with each
column's zeroth-order entropy over the whole trace:
  - the size of each malloc,
  - the time delta of each event against the previous event of its thread,
    in the trace's 16 ns units,
  - for each free, log2 of the number of blocks live in the freeing thread:
    what naming the freed block costs when it is chosen uniformly at random,
and prints the bytes per event that an ideal coder keeping exactly this
(and no returned pointers) would need. It is a floor only where frees pick
their victims at random, as the 4-thread stress does (bench/workloads/
stress.c; docs/BENCHMARKS.md); programs that mostly free recent blocks do
better than it (python3's trace: 1.13 bytes/event against 1.52 here).
"""
import collections
import json
import math
import sys


def entropy(counter):
    n = sum(counter.values())
    return -sum(v / n * math.log2(v / n) for v in counter.values()), n


def main():
    sizes, deltas = collections.Counter(), collections.Counter()
    last_t, live = {}, collections.Counter()
    free_bits, nfree, nev = 0.0, 0, 0
    for line in sys.stdin:
        e = json.loads(line)
        op, tid = e["op"], e["tid"]
        if op not in ("malloc", "free"):
            continue
        nev += 1
        t = e["t"] // 16
        if tid in last_t:
            deltas[t - last_t[tid]] += 1
        last_t[tid] = t
        if op == "malloc":
            sizes[e["size"]] += 1
            live[tid] += 1
        elif e["ptr"] != "0x0":
            free_bits += math.log2(max(live[tid], 1))
            nfree += 1
            live[tid] -= 1
    if not nev:
        sys.exit("trace-floor: no malloc or free events on stdin")
    hs, ns = entropy(sizes)
    ht, nt = entropy(deltas)
    total = hs * ns + ht * nt + free_bits
    print("events %d: size %.2f bits/malloc, time delta %.2f bits/event, "
          "free identity %.2f bits/free" % (nev, hs, ht, free_bits / max(nfree, 1)))
    print("floor: %.2f bytes/event" % (total / 8 / nev))


if __name__ == "__main__":
    main()
