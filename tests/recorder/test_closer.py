#!/usr/bin/env python3
"""A program that closes every fd and reuses the numbers: its files get only
its own bytes, and the trace stays whole."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    out, data = os.path.join(d, "closer.atr"), os.path.join(d, "data.txt")
    t.record(out, [sys.argv[1], data])
    t.expect(open(data, "rb").read() == b"hello\n", "the program's file got %r" % open(data, "rb").read()[:80])
    inf = t.info(out)
    t.expect(inf["clean"], "trace not clean: %s" % inf)
    t.expect(inf["ops"]["malloc"] >= 300000 and inf["ops"]["free"] >= 300000, "lost events: %s" % inf["ops"])


t.main(test)
