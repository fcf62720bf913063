#!/usr/bin/env python3
"""allocrr analyze's options and bad input: --what picks sections, --top and
--points bound the tables, bad options exit 2, damaged traces exit 1 with a
one-line error naming the file and offset."""
import json
import os
import shutil
import subprocess

import anatest as a
from anatest import t

TRACES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "traces")
ALL = ["summary", "sizes", "lifetimes", "live", "leaks", "threads", "rss", "zeroing", "phases"]


def run(*args):
    return subprocess.run([t.ALLOCRR, "analyze", *args], capture_output=True, timeout=60)


def main():
    calls = os.path.join(TRACES, "calls.atr")
    doc = a.analyze(calls)
    t.expect(list(doc) == ["trace"] + ALL, "default: every section, in order: %s" % list(doc))
    doc = a.analyze(calls, "--what", "leaks,sizes")
    t.expect(list(doc) == ["trace", "sizes", "leaks"], "--what leaks,sizes: %s" % list(doc))
    t.expect(a.analyze(calls, "-w", "all").keys() == a.analyze(calls).keys(), "--what all")
    doc = a.analyze(calls, "--top", "2", "--what", "sizes")
    t.expect(len(doc["sizes"]["top"]) == 2 and doc["sizes"]["distinct_sizes"] > 2, "--top 2: %s" % doc["sizes"])
    trace = a.record("leaker", "40")
    doc = a.analyze(trace, "--points", "8")
    n = len(doc["live"]["timeline"]["t"])
    t.expect(2 <= n <= 8, "--points 8: live timeline has %d points" % n)
    t.expect(max(doc["live"]["timeline"]["bytes_max"]) == doc["live"]["peak_bytes"], "peak kept in 8 points")
    t.expect(len(doc["rss"]["recorded"]["timeline"]["t"]) <= 8, "--points bounds the RSS timeline")
    full = a.analyze(trace)
    # the RSS samples (every 10 ms) have distinct times; the calls' may not
    t.expect(len(full["rss"]["recorded"]["timeline"]["t"]) > 8, "more points by default")
    # text output, help
    p = run("--trace-only", calls)
    t.expect(p.returncode == 0 and b"\nleaks        " in p.stdout and not p.stderr, "text output: %r" % p.stderr)
    p = run("--help")
    t.expect(p.returncode == 0 and b"--what" in p.stdout and b"--phase" in p.stdout, "--help")
    # bad usage: exit 2, one line naming the problem, a hint
    for bad in (["--what", "sizes,bogus"], ["--what", ""], ["--top", "0"], ["--points", "x"],
                ["--phase", "nocolon"], ["--phase", "a:2s:1s"], ["--phase", "a:1ev:2s"], ["--bogus"],
                ["--what"], [], ["-a", "glibc", "--trace-only"], ["--runs", "0"]):
        p = run(*bad, *([calls] if bad else []))
        err = p.stderr.decode()
        t.expect(p.returncode == 2 and err.startswith("allocrr: ") and "try 'allocrr analyze --help'" in err,
                 "analyze %s: exit %d, %r" % (bad, p.returncode, err))
        t.expect(not p.stdout, "analyze %s: printed %r" % (bad, p.stdout[:100]))
    # -a: the replay-side entries, one per allocator, in the trace's document
    own = os.path.join(t.tmpdir(), "calls.atr")  # its workload cache goes beside it
    shutil.copy(calls, own)
    p = run("--json", "-a", "glibc", "--what", "summary", own)
    t.expect(p.returncode == 0, "-a glibc: exit %d, %r" % (p.returncode, p.stderr))
    al = json.loads(p.stdout)["traces"][0]["allocators"]
    t.expect([e["allocator"] for e in al] == ["glibc"] and "fragmentation" in al[0] and "zeroing" in al[0],
             "-a glibc: %r" % [sorted(e) for e in al])
    # zeroing: a trace without calloc says so, not a line of zeros; a few calloc bytes
    # (under 1% of those requested) leave the zeroing replays apart by noise alone
    txt = run("--trace-only", os.path.join(TRACES, "fork.atr")).stdout.decode()
    t.expect("\ncalloc       none called\n" in txt, "no calloc:\n%s" % txt)
    txt = run("--trace-only", os.path.join(TRACES, "calls.atr")).stdout.decode()
    t.expect("calloc is 0.0022% of the bytes requested: the zeroing replays differ by noise" in txt,
             "the noise note:\n%s" % txt)
    txt = run("--trace-only", os.path.join(TRACES, "endings.atr")).stdout.decode()
    t.expect("differ by noise" not in txt, "8%% of the bytes is no noise:\n%s" % txt)
    # damaged input: exit 1, "allocrr: 'FILE': ... at offset N", no crash
    d = t.tmpdir()
    cut = os.path.join(TRACES, "endings-cut.atr")
    p = run("--json", cut)
    err = p.stderr.decode().strip()
    t.expect(p.returncode == 1 and "endings-cut.atr" in err and "at offset " in err and "\n" not in err,
             "truncated: exit %d, %r" % (p.returncode, err))
    doc = json.loads(p.stdout)["traces"][0]
    t.expect(doc["trace"]["truncated"] and doc["summary"]["calls"] > 0, "truncated: the prefix is analysed")
    # marked partial, in the JSON and the text, with where it was cut
    t.expect(doc["trace"].get("partial") is True and doc["trace"]["cut_at"] > 0, "partial: %s" % doc["trace"])
    p = run("--trace-only", cut)
    t.expect(p.returncode == 1 and "\npartial      the trace is cut at offset %d" % doc["trace"]["cut_at"]
             in p.stdout.decode(), "the text says partial:\n%s" % p.stdout.decode()[:400])
    # cut before its first events chunk: the error only, no analysis of zeros
    head = os.path.join(d, "head.atr")
    blob = open(os.path.join(TRACES, "python3.atr"), "rb").read()
    open(head, "wb").write(blob[:300])
    for args in ((), ("--json",)):
        p = run("--trace-only", *args, head)
        t.expect(p.returncode == 1 and not p.stdout and b"head.atr" in p.stderr and b"at offset " in p.stderr,
                 "cut before the first chunk %s: exit %d, stdout %r, stderr %r" % (args, p.returncode, p.stdout[:200],
                                                                                   p.stderr))
    data = bytearray(open(calls, "rb").read())
    for off in range(len(data) // 3, len(data), max(1, len(data) // 20)):
        bad = os.path.join(d, "flip.atr")
        flipped = bytearray(data)
        flipped[off] ^= 0x5A
        open(bad, "wb").write(flipped)
        p = run("--json", bad)
        err = p.stderr.decode().strip()
        t.expect(p.returncode in (0, 1) and (p.returncode == 0 or ("flip.atr" in err and "\n" not in err)),
                 "bit flip at %d: exit %d, %r" % (off, p.returncode, err))
    text = os.path.join(d, "notatrace.atr")
    shutil.copy(__file__, text)
    p = run(text)
    t.expect(p.returncode == 1 and b"notatrace.atr" in p.stderr, "not a trace: %d %r" % (p.returncode, p.stderr))
    p = run(os.path.join(d, "missing.atr"))
    t.expect(p.returncode == 1 and b"missing.atr" in p.stderr, "missing file: %r" % p.stderr)


main()
