#!/usr/bin/env python3
"""Phases given as event and time ranges (--phase): each phase's calls,
bytes, peak live bytes and temporary allocations equal what the reference
model finds in the same slice of `allocrr dump`."""
import anatest as a
from anatest import t


def slice_model(events, lo, hi, key, page):
    """Figures of the events whose position (index or t) is in [lo, hi)."""
    m = {"calls": 0, "bytes": 0, "temporary": 0, "peak": None}
    live, seq, cur = {}, {}, 0
    for i, e in enumerate(events):
        pos = i if key == "ev" else e["t"]
        inside = lo <= pos < hi
        op = e["op"]
        if op not in t.CALLS:
            continue
        if inside and m["peak"] is None:
            m["peak"] = cur
        f = a.failed(e)
        ptr, ret = int(e.get("ptr", "0x0"), 16), int(e.get("ret", "0x0"), 16)
        if op in ("free", "realloc", "reallocarray") and ptr and (op == "free" or not f or a.nbytes(e, page) == 0):
            if ptr in live:
                size, tid, s = live.pop(ptr)
                cur -= size
                if inside and op == "free" and seq[tid] == s:
                    m["temporary"] += 1
        if op != "free" and not f and ret:
            size = a.nbytes(e, page)
            if ret in live:
                cur -= live[ret][0]
            seq[e["tid"]] = seq.get(e["tid"], 0) + 1
            live[ret] = (size, e["tid"], seq[e["tid"]])
            cur += size
            if inside:
                m["bytes"] += size
                m["peak"] = max(m["peak"], cur)
        m["calls"] += inside
    return m


def main():
    trace = a.record("cases", "temp")
    events = t.dump(trace)
    n = len(events)
    mid_t = events[n // 2]["t"]
    specs = [("head", 0, 1200, "ev"), ("tail", 1200, n, "ev"), ("late", mid_t, 2 ** 64, "ns"),
             ("none", 10 ** 15, 2 ** 64, "ns")]
    args = []
    for name, lo, hi, unit in specs:
        args += ["--phase", "%s:%d%s:%s" % (name, lo, unit, "" if hi >= 2 ** 63 else "%d%s" % (hi, unit))]
    doc = a.analyze(trace, *args)
    got = {p["name"]: p for p in doc["phases"]}
    t.expect(set(got) == {s[0] for s in specs}, "phases: %s" % sorted(got))
    page = doc["trace"]["page_size"]
    for name, lo, hi, unit in specs:
        p, m = got[name], slice_model(events, lo, hi, unit, page)
        have = {"calls": p["calls"], "bytes": p["bytes_requested"], "temporary": p["temporary"],
                "peak": p["peak_live"] if p["calls"] else None}
        t.expect(have == m, "phase %s: %s, model %s" % (name, have, m))
        t.expect(p["by"] == ("events" if unit == "ev" else "time"), "phase %s: by %s" % (name, p["by"]))
    t.expect(got["head"]["calls"] + got["tail"]["calls"] == doc["summary"]["calls"], "head + tail = all")
    t.expect(got["head"]["temporary"] > 0 and got["tail"]["temporary"] > 0, "both halves have temporaries")
    t.expect(not got["none"]["seen"] and got["none"]["calls"] == 0, "a phase past the end: %s" % got["none"])


main()
