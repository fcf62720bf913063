#!/usr/bin/env python3
"""Known answers from tests/analyzers/cases.c, one mode per ctest entry,
each also checked against the reference model (anatest.model)."""
import sys

import anatest as a
from anatest import t


def zero(doc, events):
    callocs = [e for e in events if e["op"] == "calloc"]
    t.expect(len(callocs) == 5, "zero: want the program's 5 callocs, trace has %d" % len(callocs))
    z = doc["zeroing"]
    MiB = 1 << 20
    want = {
        "calloc_calls": 5, "calloc_bytes": 8000 + 256 * MiB + 2 * MiB,
        # fresh: the first 4000 and the 256 MiB block; both 1 MiB blocks come
        # from the heap's top, where the 4000-byte blocks were: reused
        "fresh_calls": 2, "fresh_bytes": 4000 + 256 * MiB,
        "reused_calls": 3, "reused_bytes": 4000 + 2 * MiB,
        # only the 256 MiB one: the freed 1 MiB mmap raised the threshold past 1 MiB
        "mmap_calls": 1, "mmap_bytes": 256 * MiB,
    }
    got = {k: z[k] for k in want}
    t.expect(got == want, "zero: got %s\nwant %s" % (got, want))
    lm = z["large_malloc"]
    t.expect(lm["calls"] == 1 and lm["mmap_calls"] == 1 and lm["bytes"] == MiB,
             "zero: the 1 MiB malloc is one large mmapped block: %s" % lm)
    t.expect(z["model"]["mmap_threshold_final"] > MiB, "zero: threshold not raised: %s" % z["model"])


def realloc(doc, events):
    lost = doc["leaks"]["lost_by_failed_realloc"]
    t.expect(lost["count"] == 1 and lost["bytes"] == 1000, "realloc: lost %s, want 1 block of 1000" % lost)
    t.expect(lost["failed_resizes"] == 2 and lost["failed_resize_bytes"] == 3000, "realloc: %s" % lost)
    t.expect(doc["leaks"]["bytes"] == 1000 and doc["leaks"]["blocks"] == 1, "realloc: leaks %s" % doc["leaks"])


def fail(doc, events):
    f = doc["leaks"]["failed_calls"]
    t.expect((f["overflow"], f["out_of_memory"], f["invalid"], f["other"]) == (2, 1, 1, 0),
             "fail: failed calls by cause %s" % f)
    t.expect(f["by_op"] == {"calloc": 1, "reallocarray": 1, "malloc": 1, "posix_memalign": 1},
             "fail: by op %s" % f["by_op"])
    t.expect(doc["summary"]["failed"] == 4, "fail: summary.failed %d" % doc["summary"]["failed"])


def temp(doc, events):
    tmp = doc["lifetimes"]["temporary"]
    t.expect(tmp["count"] == 1500 and tmp["bytes"] == 1000 * 24 + 500 * 100, "temp: %s" % tmp)
    for lo, want in ((16, 1000), (32, 0), (64, 500)):
        r = a.churn(doc, lo)
        t.expect(r["temporary"] == want, "temp: size class %d: %s, want %d temporary" % (lo, r, want))
    t.expect(a.churn(doc, 32)["allocs"] == 500, "temp: 500 blocks of 40 bytes")


def threads(doc, events):
    tids = []
    for e in events:
        if e["op"] == "thread_start" and e["tid"] not in tids:
            tids.append(e["tid"])
    t.expect(len(tids) == 3, "threads: want main, A and B: %s" % tids)
    main, ta, tb = tids
    m = {(r["alloc_tid"], r["free_tid"]): (r["count"], r["bytes"]) for r in doc["threads"]["matrix"]}
    t.expect(m.get((ta, tb)) == (100, 6400), "threads: A -> B %s in %s" % (m.get((ta, tb)), m))
    t.expect(m.get((tb, main)) == (30, 3840), "threads: B -> main %s in %s" % (m.get((tb, main)), m))
    cf = doc["threads"]["cross_frees"]
    t.expect(cf["count"] >= 130, "threads: cross frees %s" % cf)
    t.expect(doc["threads"]["count"] == 3, "threads: count %d" % doc["threads"]["count"])


def sizecap(doc, events):
    # the sizes analysis's cap, from the dump: sizes below 4 KiB all kept, from
    # 4 KiB up the first 65,536 distinct ones, later new ones counted as other
    small, big, other = set(), {}, 0
    for e in events:
        if e["op"] in t.CALLS and e.get("ret", "0x0") != "0x0" and not a.failed(e) and e["op"] != "free":
            n = a.nbytes(e)
            if n < 4096:
                small.add(n)
            elif n in big or len(big) < 65536:
                big[n] = big.get(n, 0) + 1
            else:
                other += 1
    s = doc["sizes"]
    t.expect(other == 4464 + 1000 + 1, "sizecap: the model counts %d other sizes" % other)
    t.expect(s["other_sizes"] == other, "sizecap: other_sizes %d, want %d" % (s["other_sizes"], other))
    t.expect(s["distinct_sizes"] == len(small) + len(big),
             "sizecap: distinct_sizes %d, want %d" % (s["distinct_sizes"], len(small) + len(big)))
    top = sorted(((-c, n) for n, c in big.items()), key=lambda x: x)[:2]
    got = [x for x in s["top"] if x["size"] >= 4096][:2]
    t.expect(got == [{"size": n, "count": -c} for c, n in top] == [
        {"size": 4096, "count": 4}, {"size": 200000, "count": 3}], "sizecap: top %s" % s["top"])


def main():
    mode = sys.argv[1]
    trace = a.record("cases", mode)
    doc = a.analyze(trace)
    events = t.dump(trace)
    a.check_model(doc, events, mode)
    globals()[mode](doc, events)


main()
