#!/usr/bin/env python3
"""Golden traces: the reader's output on the bundled traces never changes."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "traces")


def test():
    for name in ("calls", "endings"):
        trace = os.path.join(TRACES, name + ".atr")
        got = t.run([t.ALLOCRR, "dump", "--json", trace]).stdout.decode()
        want = open(os.path.join(TRACES, name + ".dump.jsonl")).read()
        t.expect(got == want, "%s: dump differs from the golden output" % name)
        info = json.loads(t.run([t.ALLOCRR, "info", "--json", trace]).stdout)
        info.pop("file")
        want_info = json.loads(open(os.path.join(TRACES, name + ".info.json")).read())
        t.expect(info == want_info, "%s: info differs:\n%s\n%s" % (name, info, want_info))
    # The text form too (written by printf before print.c formatted lines
    # itself): every call with its failures, fork and RSS lines.
    for name in ("calls", "fork"):
        trace = os.path.join(TRACES, name + ".atr")
        got = t.run([t.ALLOCRR, "dump", trace]).stdout.decode()
        want = open(os.path.join(TRACES, name + ".dump.txt")).read()
        t.expect(got == want, "%s: text dump differs from the golden output" % name)
    cut = os.path.join(TRACES, "endings-cut.atr")
    p = subprocess.run([t.ALLOCRR, "dump", "--json", cut], capture_output=True)
    t.expect(p.returncode == 1, "cut trace: exit %d" % p.returncode)
    t.expect(p.stdout.decode() == open(os.path.join(TRACES, "endings-cut.dump.jsonl")).read(),
             "cut trace: the complete chunks differ")
    t.expect(p.stderr.decode() == "allocrr: '%s': trace is truncated at offset 383: chunk cut short\n" % cut,
             "cut trace: message %r" % p.stderr.decode())


t.main(test)
