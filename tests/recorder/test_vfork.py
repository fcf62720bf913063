#!/usr/bin/env python3
"""vfork + execve with an environment without the recorder: the child's exec
is recorded in its own trace (the recorder put back), the parent's trace goes
on whole after the vfork; a forked grandchild that SIGKILLs itself leaves a
trace that readers call truncated and that still holds its complete chunks."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def counts(trace):
    """mallocs by size, for the sizes the program uses as labels."""
    # a killed process's trace has no end: dump prints its complete chunks,
    # then says so and exits 1
    p = t.run([t.ALLOCRR, "dump", "-e", "malloc", trace], check=False)
    t.expect(p.returncode == 0 or (p.returncode == 1 and b"truncated" in p.stderr),
             "dump %s: exit %d, %r" % (trace, p.returncode, p.stderr))
    out = {}
    for line in p.stdout.decode().splitlines():
        for size in (606, 707, 808, 909):
            if "(%d)" % size in line:
                out[size] = out.get(size, 0) + 1
    return out


def test():
    d = t.tmpdir()
    out = os.path.join(d, "vf.atr")
    t.record(out, [sys.argv[1]])
    by, n = {}, {}
    for tr in t.traces(out):
        n[tr] = counts(tr)
        for size in n[tr]:
            by.setdefault(size, []).append(tr)
    t.expect(by.get(707) == [out] and by.get(808) == [out], "parent's calls: %s" % by)
    t.expect(t.info(out)["clean"], "parent's trace not clean: %s" % t.info(out))
    t.expect(len(by.get(909, [])) == 1 and n[by[909][0]][909] == 10, "vfork child: %s" % by.get(909))
    t.expect(t.info(by[909][0])["clean"], "vfork child's trace not clean")
    t.expect(len(by.get(606, [])) == 1, "killed grandchild: %s" % by.get(606))
    inf = t.info(by[606][0], check=False)
    t.expect(not inf["clean"] and inf["ending"] == "truncated", "killed child's trace: %s" % inf)
    t.expect(0 < inf["ops"]["malloc"] < 100000, "killed child kept %d mallocs" % inf["ops"]["malloc"])


t.main(test)
