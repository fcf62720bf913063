#!/usr/bin/env python3
"""Phases from marks: tests/recorder/marks.c sets "load" (100 mallocs of 111
bytes), "work" (50 of 222) and "done" (frees all 150) with allocrr_mark();
each phase holds exactly its calls, bytes and live bytes."""
import os
import anatest as a
from anatest import t


def test():
    out = os.path.join(t.tmpdir(), "marks.atr")
    t.record(out, [os.path.join(a.BIN, "rec_marks")])
    ph = {p["name"]: p for p in a.analyze(out, "--what", "phases")["phases"] if p["by"] == "mark"}
    # events before the first mark (start-up, an early RSS sample) make a phase
    # "start" of their own
    names = [n for n in ph if n != "start"]
    t.expect(names[:3] == ["load", "work", "done"], "mark phases in order: %s" % list(ph))
    load, work, done = ph["load"], ph["work"], ph["done"]
    t.expect(load["allocs"] == 100 and load["frees"] == 0 and load["bytes_requested"] == 11100,
             "load: %s" % load)
    t.expect(work["allocs"] == 50 and work["bytes_requested"] == 50 * 222, "work: %s" % work)
    t.expect(load["live_end"] == 11100 and work["live_start"] == 11100 and work["live_end"] == 22200,
             "live bytes across the marks: %s %s" % (load, work))
    t.expect(done["frees"] >= 150 and done["live_start"] == 22200 and done["live_end"] < 22200 - 150 * 100,
             "done: %s" % done)
    t.expect(load["to_ns"] == work["from_ns"] and work["to_ns"] == done["from_ns"],
             "a phase ends where the next mark begins: %s %s %s" % (load, work, done))


t.main(test)
