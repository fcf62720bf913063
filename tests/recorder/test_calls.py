#!/usr/bin/env python3
"""Every function, known calls: the trace holds each call, in order, with
the same arguments, results and errno as the program itself saw."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PROG = sys.argv[1]


def parse_log(path):
    rows = []
    for line in open(path):
        op, a, b, c, ptr, ret, err = line.split()
        hexp = lambda s: 0 if s in ("(nil)", "0") else int(s, 16)
        rows.append((op, int(a), int(b), int(c), hexp(ptr), hexp(ret), int(err)))
    return rows


def window(events):
    """Main-thread calls between the start and end sentinels."""
    calls = [e for e in events if e["op"] in t.CALLS]
    start = next(i for i, e in enumerate(calls) if e["op"] == "malloc" and e["size"] == 1234567)
    tid = calls[start]["tid"]
    end = next(i for i, e in enumerate(calls) if e["op"] == "malloc" and e["size"] == 7654321)
    return [e for e in calls[start + 2:end] if e["tid"] == tid]


def as_row(e):
    op = e["op"]
    h = lambda k: int(e.get(k, "0x0"), 16)
    if op in ("malloc", "valloc", "pvalloc"):
        return (op, e["size"], 0, 0, 0, h("ret"), e.get("err", 0))
    if op == "calloc":
        return (op, e["nmemb"], e["size"], 0, 0, h("ret"), e.get("err", 0))
    if op == "realloc":
        return (op, e["size"], 0, 0, h("ptr"), h("ret"), e.get("err", 0))
    if op == "reallocarray":
        return (op, e["nmemb"], e["size"], 0, h("ptr"), h("ret"), e.get("err", 0))
    if op in ("posix_memalign", "aligned_alloc", "memalign"):
        return (op, e["align"], e["size"], 0, 0, h("ret"), e.get("err", 0))
    if op == "free":
        return (op, 0, 0, 0, h("ptr"), 0, 0)
    raise AssertionError("unexpected op %s" % op)


def test():
    d = t.tmpdir()
    out, log = os.path.join(d, "calls.atr"), os.path.join(d, "calls.log")
    # With a malloc library given, record on top of it (LD_PRELOAD set before
    # `allocrr record`, which puts the recorder first): the pointers in the
    # trace must be that library's, as the program saw them.
    under = sys.argv[2] if len(sys.argv) > 2 else None
    p = t.record(out, [PROG, log], check=False, env={"LD_PRELOAD": under} if under else None)
    t.expect(p.returncode == 0, "calls exited %d under the recorder (errno disturbed?): %s"
             % (p.returncode, p.stderr.decode()))
    want = parse_log(log)
    got = [as_row(e) for e in window(t.dump(out))]
    t.expect(len(got) == len(want), "trace has %d calls in the window, program made %d:\n%s"
             % (len(got), len(want), "\n".join(map(str, got))))
    for i, (g, w) in enumerate(zip(got, want)):
        t.expect(g == w, "call %d differs:\n trace   %s\n program %s" % (i, g, w))
    inf = t.info(out)
    t.expect(inf["clean"] and inf["ending"] == "exit" and inf["status"] == 0, "ending: %s" % inf)
    if under:
        # glibc's small blocks come from the brk heap next to the program
        # (0x55..., 0x56...); the built-in allocator maps its segments in
        # the mmap area (0x7f..., lower with ASLR and many mappings: 0x7e...).
        t.expect(want[0][5] >> 44 == 0x7, "malloc(100) = %#x: not the preloaded allocator's" % want[0][5])
    for op in t.CALLS:
        t.expect(inf["ops"][op] >= 1, "no %s in info: %s" % (op, inf["ops"]))
    t.expect(inf["failed"] >= 5, "failed calls not counted: %s" % inf)


t.main(test)
