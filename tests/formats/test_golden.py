#!/usr/bin/env python3
"""Golden traces: the reader's output on the bundled traces never changes."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "traces")


def check_filters(trace):
    """dump's filters print exactly the matching lines of the full dump."""
    full = t.run([t.ALLOCRR, "dump", "--json", trace]).stdout.decode().splitlines()
    events = [json.loads(line) for line in full]
    tids = sorted({e["tid"] for e in events})
    t.expect(len(tids) >= 2, "filters: want a trace of several threads")

    def dump(*args):
        return t.run([t.ALLOCRR, "dump", "--json", *args, trace]).stdout.decode().splitlines()

    def lines(pred):
        return [line for line, e in zip(full, events) if pred(e)]

    t.expect(dump("--op", "free") == lines(lambda e: e["op"] == "free"), "--op free")
    t.expect(dump("-e", "malloc,thread_exit") == lines(lambda e: e["op"] in ("malloc", "thread_exit")),
             "-e malloc,thread_exit")
    calls = lines(lambda e: e["op"] in t.CALLS)
    t.expect(dump("--op", "calls") == calls and calls, "--op calls")
    t.expect(dump("--tid", str(tids[1])) == lines(lambda e: e["tid"] == tids[1]), "--tid")
    mid = events[len(events) // 2]["t"]
    t.expect(dump("--from", "%.9f" % (mid / 1e9)) == lines(lambda e: e["t"] >= mid), "--from")
    t.expect(dump("--to", "%.9f" % (mid / 1e9)) == lines(lambda e: e["t"] < mid), "--to")
    t.expect(dump("-n", "3", "--op", "calls") == calls[:3], "--limit")
    for bad in (["--op", "mallocc"], ["--limit", "0"], ["--from", "soon"], ["--tid", "x1"], ["--tid"]):
        p = subprocess.run([t.ALLOCRR, "dump", *bad, trace], capture_output=True)
        t.expect(p.returncode == 2 and p.stderr.startswith(b"allocrr: "),
                 "dump %s: exit %d, %r" % (bad, p.returncode, p.stderr))


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
    check_filters(os.path.join(TRACES, "endings.atr"))
    cut = os.path.join(TRACES, "endings-cut.atr")
    p = subprocess.run([t.ALLOCRR, "dump", "--json", cut], capture_output=True)
    t.expect(p.returncode == 1, "cut trace: exit %d" % p.returncode)
    t.expect(p.stdout.decode() == open(os.path.join(TRACES, "endings-cut.dump.jsonl")).read(),
             "cut trace: the complete chunks differ")
    t.expect(p.stderr.decode() == "allocrr: '%s': trace is truncated at offset 383: chunk cut short\n" % cut,
             "cut trace: message %r" % p.stderr.decode())


t.main(test)
