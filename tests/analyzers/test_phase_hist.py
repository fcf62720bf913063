#!/usr/bin/env python3
"""Histograms per phase: tests/analyzers/phasemix.c marks phases whose size
and lifetime mixes are known exactly; each phase's sizes.log2 and
lifetimes.{time,events}_log2 hold that mix; the mark phases together add
up to the whole trace's sizes and lifetimes sections; a user range (by
events) gets the histograms a Python model computes from `allocrr dump`."""
import anatest as a
from anatest import t

MS30 = 30 * 1000 * 1000


def buckets(h):
    return {(b["lo"], b["hi"]): (b["count"], b["bytes"]) for b in h}


def add(total, h):
    for k, (n, b) in buckets(h).items():
        c = total.get(k, (0, 0))
        total[k] = (c[0] + n, c[1] + b)


def log2_bucket(v):
    return (0, 1) if v == 0 else (1 << (v.bit_length() - 1), 1 << v.bit_length())


def main():
    trace = a.record("phasemix")
    doc = a.analyze(trace)
    ph = {p["name"]: p for p in doc["phases"] if p["by"] == "mark"}
    t.expect(["small", "large", "hold", "end"] == [n for n in ph if n != "start"],
             "mark phases in order: %s" % list(ph))
    small, large, hold = ph["small"], ph["large"], ph["hold"]
    t.expect(buckets(small["sizes"]["log2"]) == {(16, 32): (200, 4800), (32, 64): (100, 4800)},
             "small: sizes %s" % small["sizes"])
    t.expect(small["lifetimes"] == {"time_log2": [], "events_log2": []},
             "small frees nothing: %s" % small["lifetimes"])
    t.expect(buckets(large["sizes"]["log2"]) == {(65536, 131072): (10, 1000000)},
             "large: sizes %s" % large["sizes"])
    t.expect(buckets(large["lifetimes"]["events_log2"]) == {(1, 2): (10, 1000000)},
             "large: each block freed by the next event: %s" % large["lifetimes"])
    t.expect(hold["sizes"]["log2"] == [], "hold allocates nothing: %s" % hold["sizes"])
    held = buckets(hold["lifetimes"]["time_log2"])
    t.expect(sum(n for n, _ in held.values()) == 300 and sum(b for _, b in held.values()) == 9600,
             "hold frees the 300 small blocks: %s" % held)
    t.expect(all(hi > MS30 for _, hi in held), "hold: every lifetime >= 30 ms: %s" % held)
    t.expect(buckets(hold["lifetimes"]["events_log2"]) != {}, "hold: lifetimes in events too")

    # the mark phases cover the trace: their histograms add up to the sections
    for sec, key, whole in (("sizes", "log2", doc["sizes"]["log2"]),
                            ("lifetimes", "time_log2", doc["lifetimes"]["time_log2"]),
                            ("lifetimes", "events_log2", doc["lifetimes"]["events_log2"])):
        total = {}
        for p in ph.values():
            add(total, p[sec][key])
        t.expect(total == buckets(whole), "phases' %s.%s add up to the section: %s vs %s" %
                 (sec, key, total, buckets(whole)))

    # a user range by events: against a model of the dump's slice
    events = t.dump(trace)
    lo, hi = len(events) // 3, len(events) - 5
    got = [p for p in a.analyze(trace, "--phase", "mid:%dev:%dev" % (lo, hi))["phases"] if p["name"] == "mid"]
    t.expect(len(got) == 1, "one user phase 'mid'")
    sizes, ev_life = {}, {}
    live = {}
    for i, e in enumerate(events):
        if e["op"] not in t.CALLS or a.failed(e):
            continue
        ptr, ret = int(e.get("ptr", "0x0"), 16), int(e.get("ret", "0x0"), 16)
        if e["op"] == "free" and ptr in live:
            size, at = live.pop(ptr)
            if lo <= i < hi:
                k = log2_bucket(i - at)
                c = ev_life.get(k, (0, 0))
                ev_life[k] = (c[0] + 1, c[1] + size)
        elif e["op"] == "malloc" and ret:
            live[ret] = (e["size"], i)
            if lo <= i < hi:
                k = log2_bucket(e["size"])
                c = sizes.get(k, (0, 0))
                sizes[k] = (c[0] + 1, c[1] + e["size"])
    ops = {e["op"] for e in events[lo:hi] if e["op"] in t.CALLS}
    t.expect(ops <= {"malloc", "free"}, "the slice holds mallocs and frees only (the model's scope): %s" % ops)
    t.expect(buckets(got[0]["sizes"]["log2"]) == sizes, "mid: sizes %s, model %s" % (got[0]["sizes"], sizes))
    t.expect(buckets(got[0]["lifetimes"]["events_log2"]) == ev_life,
             "mid: lifetimes in events %s, model %s" % (got[0]["lifetimes"], ev_life))


t.main(main)
