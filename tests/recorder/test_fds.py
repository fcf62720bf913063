#!/usr/bin/env python3
"""The recorder's fds stay out of the program's way: a program that closes
every fd (close_range), opens files and dup2s a file onto the recorder's own
fd numbers sees the same fd numbers as natively in 20 runs, its file gets only
its own bytes, and every trace is whole."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    data, out = os.path.join(d, "data.txt"), os.path.join(d, "fd.atr")
    native = t.run([sys.argv[1], data]).stdout
    t.expect(open(data, "rb").read() == b"mine\n", "native run wrote %r" % open(data, "rb").read())
    for run in range(20):
        os.unlink(data)
        got = t.record(out, [sys.argv[1], data]).stdout
        t.expect(got == native, "run %d: fds %r, natively %r" % (run, got, native))
        body = open(data, "rb").read()
        t.expect(body == b"mine\n", "run %d: the program's file got %r" % (run, body[:80]))
        inf = t.info(out)
        t.expect(inf["clean"] and inf["ops"]["malloc"] >= 500000, "run %d: %s" % (run, inf))
    print("fds %s in 20 runs" % native.decode().strip())


t.main(test)
