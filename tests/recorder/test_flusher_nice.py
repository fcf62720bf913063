#!/usr/bin/env python3
"""ALLOCRR_FLUSHER_NICE=10: the flusher thread runs 10 nice levels below
the program (19 at most), the program's own threads keep theirs; by
default (0) it is left alone; the trace is whole (a loop of 200,000 calls
while the flusher yields). The recorded python3 reads its own threads'
nice values from /proc/self/task."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PROBE = r"""
import os, time
xs = [bytes(64) for _ in range(200000)]  # calls enough to start the flusher and fill buffers
time.sleep(0.05)
me = os.getpid()
for tid in sorted(os.listdir("/proc/self/task")):
    stat = open("/proc/self/task/%s/stat" % tid).read()
    nice = int(stat[stat.rindex(")") + 2:].split()[16])
    print("main" if int(tid) == me else "other", nice)
"""


def threads(env, nice=0):
    d = t.tmpdir()
    out = os.path.join(d, "n.atr")
    cmd = ["nice", "-n", str(nice), PY, "-c", PROBE] if nice else [PY, "-c", PROBE]
    p = t.record(out, cmd, env=dict(env, PYTHONMALLOC="malloc"))
    rows = [line.split() for line in p.stdout.decode().splitlines()]
    info = t.info(out)
    return {k: [int(v) for k2, v in rows if k2 == k] for k in ("main", "other")}, info


def test():
    base = os.nice(0)
    got, info = threads({"ALLOCRR_FLUSHER_NICE": "10"})
    t.expect(got["main"] == [base], "main thread's nice: %s, want [%d]" % (got["main"], base))
    t.expect(got["other"] == [min(19, base + 10)], "flusher's nice: %s, want [%d]" % (got["other"], min(19, base + 10)))
    t.expect(info["events"] > 400000, "events: %d" % info["events"])

    if base <= 15:
        got, _ = threads({"ALLOCRR_FLUSHER_NICE": "10"}, nice=15 - base)
        t.expect(got["main"] == [15] and got["other"] == [19], "under nice 15: %s, want main 15, flusher 19" % got)

    got, _ = threads({})
    t.expect(got["other"] == [base], "by default: flusher's nice %s, want [%d]" % (got["other"], base))


t.main(test)
