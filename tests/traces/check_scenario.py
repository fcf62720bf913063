#!/usr/bin/env python3
"""A seed scenario's trace holds what its program did, and replaying it
into glibc shows the seed's effect where the effect can be counted.

    check_scenario.py NAME SCENARIO_DIR

NAME.atr in SCENARIO_DIR was recorded by the build (traces/CMakeLists.txt).
Counts come from the programs in traces/scenarios/: each asserted number is
what the program does, plus the 4 KiB stdout buffer of the programs that
print. Replays run with --threads serial; nothing here depends on timing.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

MIB = 1 << 20
PAGE = 4096
STDOUT_BUF = 4096


def info(trace):
    d = t.info(trace)
    t.expect(d["clean"] and d["ending"] == "exit" and d["status"] == 0,
             "%s: did not end cleanly: %s" % (trace, d["ending"]))
    t.expect(d["unknown_frees"] == 0, "%s: %d unknown frees" % (trace, d["unknown_frees"]))
    return d


def ops(d, **want):
    """The call counts are exactly want (absent: 0)."""
    got = {k: v for k, v in d["ops"].items() if k in t.CALLS and v}
    t.expect(got == want, "%s: calls %s, want %s" % (d["file"], got, want))


def replay(trace, *args):
    p = t.run([t.ALLOCRR, "replay", "-q", "--threads", "serial", "--cache-dir", t.tmpdir(), "--json",
               *args, trace])
    d = json.loads(p.stdout)
    r = d["results"][0]
    t.expect(r["anomalies"] == 0, "%s %s: %d anomalies" % (trace, args, r["anomalies"]))
    t.expect(r["ops"] == d["workload"]["calls"], "%s %s: replayed %d of %d calls" % (
        trace, args, r["ops"], d["workload"]["calls"]))
    return r


def calls(trace, op=None):
    return [e for e in t.dump(trace) if e["op"] in t.CALLS and (op is None or e["op"] == op)]


def small(trace, fn):
    d = info(trace)
    n = 100000
    ops(d, **{fn: n, "free": n})
    t.expect(d["bytes_requested"] == 64 * n, "bytes %d" % d["bytes_requested"])
    t.expect(d["peak_live_blocks"] == 1 and d["peak_live_bytes"] == 64, "more than one block live")
    rets = {e["ret"] for e in calls(trace, fn)}
    if fn == "malloc":
        # glibc's tcache hands the same block back every time
        t.expect(len(rets) == 1, "%d distinct blocks, want 1 reused" % len(rets))
    else:
        # glibc's calloc does not take from the tcache (seed 001), while
        # free fills it: seven blocks park there, and an eighth circulates
        # through the fastbin
        print("calloc: %d distinct blocks" % len(rets))
        t.expect(1 < len(rets) <= 8, "%d distinct blocks, want 2 to 8" % len(rets))
    r = replay(trace, "-a", "glibc")
    t.expect(r["ops"] == 2 * n, "ops %d" % r["ops"])


def big(trace, fn, size):
    d = info(trace)
    ops(d, **{fn: 1, "free": 1})
    t.expect(d["bytes_requested"] == size and d["peak_live_bytes"] == size, "bytes %d" % d["bytes_requested"])
    return size // PAGE


def scenario_small_malloc(trace):
    small(trace, "malloc")


def scenario_small_calloc(trace):
    small(trace, "calloc")


def scenario_big_calloc(trace):
    pages = big(trace, "calloc", 256 * MIB)
    # glibc maps the block fresh and skips the memset: nothing resident,
    # no page faulted in, until the program writes (seed: 4 KiB resident)
    none = replay(trace, "-a", "glibc", "--touch", "none")
    t.expect(none["minor_faults"] < pages // 100 and none["peak_rss"] < MIB,
             "calloc untouched: %d faults, peak %d" % (none["minor_faults"], none["peak_rss"]))
    # one byte per page: the zeroing moved to the first writes, one fault each
    page = replay(trace, "-a", "glibc", "--touch", "page")
    t.expect(page["minor_faults"] >= pages and page["peak_rss"] >= 256 * MIB,
             "calloc touched: %d faults, peak %d" % (page["minor_faults"], page["peak_rss"]))


def scenario_big_calloc_untouched(trace):
    big(trace, "calloc", 256 * MIB)


def scenario_big_memset(trace):
    pages = big(trace, "malloc", 256 * MIB)
    # the memset is not a call: the trace holds a malloc, and the replay's
    # --touch all writes every byte as the memset did
    r = replay(trace, "-a", "glibc", "--touch", "all")
    t.expect(r["minor_faults"] >= pages and r["peak_rss"] >= 256 * MIB,
             "memset: %d faults, peak %d" % (r["minor_faults"], r["peak_rss"]))


def scenario_huge_touch(trace):
    pages = big(trace, "malloc", 512 * MIB)
    r = replay(trace, "-a", "glibc", "--touch", "page")
    t.expect(r["minor_faults"] >= pages and r["peak_rss"] >= 512 * MIB,
             "512 MiB: %d faults, peak %d" % (r["minor_faults"], r["peak_rss"]))


SIZES = [64, 256, 1024, 4096, 16384, 65536, 131072, 196608, 262144, 1 * MIB, 4 * MIB, 16 * MIB]
ROUNDS = 32


def scenario_threshold(trace):
    d = info(trace)
    n = len(SIZES) * ROUNDS
    ops(d, calloc=n, free=n)
    t.expect(d["bytes_requested"] == ROUNDS * sum(SIZES), "bytes %d" % d["bytes_requested"])
    t.expect(d["peak_live_bytes"] == 16 * MIB, "peak live %d" % d["peak_live_bytes"])
    # pages of the blocks above the initial 128 KiB threshold, in one round
    mapped_pages = sum(s // PAGE for s in SIZES if s > 131072)
    dyn = replay(trace, "-a", "glibc")
    fixed = replay(trace, "-a", "glibc:mmap_threshold=131072")
    print("minor faults: dynamic threshold %d, fixed at 128 KiB %d (%.1fx)" % (
        dyn["minor_faults"], fixed["minor_faults"], fixed["minor_faults"] / max(dyn["minor_faults"], 1)))
    # fixed: every round maps its block again and faults every page in
    t.expect(fixed["minor_faults"] >= ROUNDS * mapped_pages * 9 // 10, "fixed: %d faults" % fixed["minor_faults"])
    # dynamic: the first round of each size faults, later rounds reuse the heap
    t.expect(dyn["minor_faults"] < 3 * mapped_pages, "dynamic: %d faults, want < %d" % (
        dyn["minor_faults"], 3 * mapped_pages))
    # after the 16 MiB blocks the heap holds one of them, free
    t.expect(dyn["mallinfo2"]["arena"] >= 16 * MIB > fixed["mallinfo2"]["arena"],
             "arena: dynamic %d, fixed %d" % (dyn["mallinfo2"]["arena"], fixed["mallinfo2"]["arena"]))


N_FRAG = 100000
CHUNK_200, CHUNK_400 = 208, 416  # glibc: size + 8-byte header, 16-aligned


def frag(trace, frees):
    d = info(trace)
    ops(d, malloc=N_FRAG + 1 + N_FRAG // 2 + 1, free=frees)
    t.expect(d["bytes_requested"] == N_FRAG * 200 + 16 + N_FRAG // 2 * 400 + STDOUT_BUF,
             "bytes %d" % d["bytes_requested"])
    return replay(trace, "-a", "glibc")


def scenario_checkerboard(trace):
    frag(trace, N_FRAG // 2)


def scenario_contiguous(trace):
    ct = frag(trace, N_FRAG)
    # the pair: replay the checkerboard beside it
    cb_trace = os.path.join(os.path.dirname(trace), "checkerboard.atr")
    cb = replay(cb_trace, "-a", "glibc")
    phase1 = N_FRAG * CHUNK_200 + 32
    grew = {m: (r["mallinfo2"]["arena"] - phase1) / 1024 for m, r in (("checkerboard", cb), ("contiguous", ct))}
    want = N_FRAG // 2 * CHUNK_400 / 1024
    print("heap growth in the last step: checkerboard %.0f KiB, contiguous %.0f KiB (seed: 20,480 and 0)" % (
        grew["checkerboard"], grew["contiguous"]))
    t.expect(abs(grew["checkerboard"] - want) < want * 0.05, "checkerboard grew %.0f KiB" % grew["checkerboard"])
    t.expect(abs(grew["contiguous"]) < 512, "contiguous grew %.0f KiB" % grew["contiguous"])
    rss = (cb["peak_rss"] - ct["peak_rss"]) / 1024
    print("peak RSS: checkerboard - contiguous = %.0f KiB" % rss)
    t.expect(abs(rss - want) < want * 0.10, "peak RSS difference %.0f KiB" % rss)


def scenario_reuse(trace):
    d = info(trace)
    ops(d, malloc=8, calloc=1, free=8)
    c = calls(trace)
    mallocs = [e for e in c if e["op"] == "malloc" and e["size"] != STDOUT_BUF]
    # malloc(64), free, malloc(64): the same block; the same for 32 bytes
    t.expect(mallocs[0]["size"] == 64 and mallocs[1]["size"] == 64 and mallocs[0]["ret"] == mallocs[1]["ret"],
             "64 B: not reused: %s" % mallocs[:2])
    t.expect(mallocs[2]["size"] == 32 and mallocs[3]["ret"] == mallocs[2]["ret"], "32 B: not reused")
    calloc = [e for e in c if e["op"] == "calloc"][0]
    t.expect(calloc["ret"] != mallocs[2]["ret"], "calloc got the live block")
    # three malloc(5): 32-byte chunks, one after the other
    fives = [int(e["ret"], 16) for e in mallocs if e["size"] == 5]
    t.expect(len(fives) == 3 and fives[1] - fives[0] == 32 and fives[2] - fives[1] == 32,
             "5 B blocks at %s" % [hex(a) for a in fives])
    out = open(trace + ".out").read()
    t.expect("same block yes, bytes 16-26: ord=hunter2" in out, "program saw: %r" % out)


def scenario_grow(trace):
    d = info(trace)
    ops(d, malloc=19, realloc=15, free=18)
    r = calls(trace, "realloc")
    in_place = [e for e in r if e["ret"] == e["ptr"]]
    moved = [e for e in r if e["ret"] != e["ptr"]]
    # six growths at the top of the heap stay; eight blocked ones move
    t.expect(len(in_place) >= 6 and all(e["size"] <= 65536 for e in in_place[:6]), "in place: %s" % in_place)
    t.expect(len([e for e in moved if e["size"] == 4096]) == 8, "moved: %s" % moved)
    rr = replay(trace, "-a", "glibc")
    t.expect(rr["latency"]["realloc"]["count"] == 15, "replayed reallocs %s" % rr["latency"].get("realloc"))


def main():
    name, d = sys.argv[1], sys.argv[2]
    fn = globals().get("scenario_" + name.replace("-", "_"))
    t.expect(fn is not None, "unknown scenario %s" % name)
    trace = os.path.join(d, name + ".atr")
    t.expect(os.path.exists(trace), "%s missing: build the scenario-traces target" % trace)
    fn(trace)


t.main(main)
