#!/usr/bin/env python3
"""4 threads, every block freed by another thread: all calls recorded, each
free names a live block allocated by a different thread."""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

N, T = 20000, 4


def test():
    d = t.tmpdir()
    out = os.path.join(d, "threads.atr")
    t.record(out, [sys.argv[1]])
    ev = t.dump(out)
    t.expect(all(ev[i]["t"] <= ev[i + 1]["t"] for i in range(len(ev) - 1)), "dump not in time order")
    # Stamps from different cores that fall in the same time unit are ordered
    # by file position, so a free can precede its malloc in the dump: allow a
    # handful of such inversions (the replayer repairs them), never a loss.
    by_size = collections.Counter()
    addrs = set()
    for e in ev:
        if e["op"] == "malloc" and 1000 <= e["size"] < 1000 + T:
            by_size[(e["size"], e["tid"])] += 1
            addrs.add(e["ret"])
    frees = [e for e in ev if e["op"] == "free" and e["ptr"] in addrs]
    last_tid, own = {}, 0
    for e in ev:
        if e["op"] == "malloc" and e["ret"] in addrs:
            last_tid[e["ret"]] = e["tid"]
        elif e["op"] == "free" and e["ptr"] in addrs and last_tid.get(e["ptr"]) == e["tid"]:
            own += 1
    t.expect(len(frees) == N * T, "frees of the threads' blocks: %d, want %d" % (len(frees), N * T))
    t.expect(own <= 8, "%d frees look like same-thread frees" % own)
    t.expect(len(by_size) == T, "expected one size per thread: %s" % by_size)
    t.expect(all(n == N for n in by_size.values()), "mallocs per thread: %s" % by_size)
    t.check_frees_live(ev, "threads", allow_unknown=8)
    inf = t.info(out)
    t.expect(inf["threads"] == T + 1, "threads: %d" % inf["threads"])
    t.expect(inf["ops"]["thread_start"] == T + 1 and inf["ops"]["thread_exit"] == T,
             "thread starts/exits: %s" % inf["ops"])
    t.expect(inf["clean"], "not clean: %s" % inf)
    t.expect(inf["bytes_per_event"] < 4, "trace too big: %.2f B/event" % inf["bytes_per_event"])


t.main(test)
