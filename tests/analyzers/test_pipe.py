#!/usr/bin/env python3
"""The analysis reads the merge through a pipe (formats/merge.c): the merge
on a thread of its own, short runs copied into batches, long runs handed
out in place, finished chunks held until the analysis is past them.
pipemix.c records a trace with both kinds of runs, strings (marks) in
both, and several chunks per thread; pipe_check.c compares the pipe's
events with the merge's one at a time, after pauses that let the pipe's
thread run ahead, also when the pipe is closed early and on a truncated
and a corrupted copy (same events before the error, same error). The
analysis of the trace must match the reference model from `allocrr dump`,
and its mark phases the dump's marks.
argv[1]: the pipe_check binary."""
import os
import re
import shutil
import sys

import anatest as a
from anatest import t


def check(trace, *stops):
    p = t.run([sys.argv[1], trace, *map(str, stops)])
    m = re.match(r"events (\d+) segments (\d+) chunks (\d+) short_runs (\d+) long_runs (\d+) ending (-?\d+)",
                 p.stdout.decode())
    t.expect(m, "pipe_check: %r" % p.stdout)
    return [int(x) for x in m.groups()]


def test():
    trace = a.record("pipemix")
    ev, segs, chunks, short, long_, ending = check(trace, 1, 5, 40)
    t.expect(ending == 0, "pipemix: the trace ended with %d" % ending)
    # the pipe's thread runs from 4 chunks up; the holding matters once chunks finish while batches are out
    t.expect(chunks >= 12, "pipemix: %d chunks, want several per thread" % chunks)
    # short runs (the threads in lock step) are copied, long ones (bursts) handed out in place
    t.expect(short > 1000 and long_ >= 6, "pipemix: %d short and %d long runs, want both" % (short, long_))

    doc = a.analyze(trace)
    events = t.dump(trace)
    t.expect(doc["trace"]["events"] == ev == len(events), "pipemix: %d events analysed, %d merged, %d dumped" % (
        doc["trace"]["events"], ev, len(events)))
    a.check_model(doc, events, "pipemix")
    marks = [e["name"] for e in events if e["op"] == "mark"]
    # the phases: one per mark, after the one from the start to the first mark
    ph = [p["name"] for p in doc["phases"] if p["by"] == "mark"][1:]
    t.expect(len(marks) >= 20 and ph == marks, "pipemix: mark phases %s, dump %s" % (ph[:5], marks[:5]))

    # cut in the middle of a chunk, and a chunk's body spoiled: the same prefix, the same error
    size = os.path.getsize(trace)
    cut = os.path.join(t.tmpdir(), "cut.atr")
    with open(trace, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(size * 3 // 5))
    ev2, *_, ending2 = check(cut, 3)
    t.expect(ending2 < 0 and 0 < ev2 < ev, "pipemix cut: %d events, ending %d" % (ev2, ending2))
    bad = os.path.join(t.tmpdir(), "bad.atr")
    shutil.copy(trace, bad)
    with open(bad, "r+b") as f:
        f.seek(size // 2)
        f.write(b"\xff" * 64)
    ev3, *_, ending3 = check(bad, 2)
    t.expect(ending3 < 0 and ev3 < ev, "pipemix corrupt: %d events, ending %d" % (ev3, ending3))


t.main(test)
