#!/usr/bin/env python3
"""Threads in lock step (interleave.c): the merged trace switches thread
every few events, the case where the merge's runs are short and the
analysis gathers them into one array. Every figure the reference model
computes from `allocrr dump` (which takes the merge one event at a time)
must match the document, the threads' figures must match the program's
known counts, and each mark phase must hold exactly the calls between its
mark and the next."""
import anatest as a
from anatest import t

NT, ROUNDS, PER = 4, 200, 3


def test():
    trace = a.record("interleave")
    doc = a.analyze(trace)
    events = t.dump(trace)
    calls = [e for e in events if e["op"] in ("malloc", "free")]
    runs = 1 + sum(1 for x, y in zip(calls, calls[1:]) if x["tid"] != y["tid"])
    mean = len(calls) / runs
    t.expect(mean < 32, "interleave: runs of %.1f calls on average: the threads did not interleave" % mean)
    a.check_model(doc, events, "interleave")
    # per worker: ROUNDS * (PER + 1) allocations; frees PER * (ROUNDS - 2) + (ROUNDS - 1)
    workers = [r for r in doc["threads"]["list"] if r["allocs"] == ROUNDS * (PER + 1)]
    t.expect(len(workers) == NT, "interleave: threads %s" % doc["threads"]["list"])
    # the mark phases, against the dump: calls between a mark and the next
    marks = [i for i, e in enumerate(events) if e["op"] == "mark"]
    t.expect(len(marks) == ROUNDS // 25, "interleave: %d marks in the dump" % len(marks))
    ph = [p for p in doc["phases"] if p["by"] == "mark" and p["name"].startswith("round-")]
    t.expect(len(ph) == len(marks), "interleave: mark phases %s" % [p["name"] for p in ph])
    # a free counts when its block is known (allocated in the trace): the
    # process's exit frees a few blocks made before recording began
    live, known = set(), []
    for e in events:
        if e["op"] == "free":
            known.append(e.get("ptr") in live)
            live.discard(e.get("ptr"))
        else:
            known.append(False)
            if e["op"] in ("malloc", "calloc") and e.get("ret"):
                live.add(e["ret"])
    for k, (p, i) in enumerate(zip(ph, marks)):
        j = marks[k + 1] if k + 1 < len(marks) else len(events)
        allocs = sum(1 for e in events[i:j] if e["op"] in ("malloc", "calloc"))
        frees = sum(known[i:j])
        t.expect(p["allocs"] == allocs, "interleave: phase %s allocs %d, dump %d" % (p["name"], p["allocs"], allocs))
        t.expect(p["frees"] == frees, "interleave: phase %s frees %d, dump %d" % (p["name"], p["frees"], frees))


t.main(test)
