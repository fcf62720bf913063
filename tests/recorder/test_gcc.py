#!/usr/bin/env python3
"""gcc -c: the driver, cc1 and as are each recorded (children included), and
the object file is the same as without the recorder."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

SRC = "".join("int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n"
              % (i, i) for i in range(300))


def test():
    d = t.tmpdir()
    src = os.path.join(d, "x.c")
    open(src, "w").write(SRC)
    t.run(["gcc", "-O1", "-c", src, "-o", os.path.join(d, "native.o")])
    out = os.path.join(d, "gcc.atr")
    t.record(out, ["gcc", "-O1", "-c", src, "-o", os.path.join(d, "rec.o")])
    t.expect(open(os.path.join(d, "native.o"), "rb").read() == open(os.path.join(d, "rec.o"), "rb").read(),
             "object files differ")
    exes = {}
    for f in t.traces(out):
        inf = t.info(f)
        t.expect(inf["clean"], "%s not clean: %s" % (f, inf))
        exes.setdefault(os.path.basename(inf["exe"]), []).append((f, inf))
    for want in ("cc1", "as"):
        t.expect(any(e == want or e.endswith("-" + want) for e in exes), "no %s trace among %s" % (want, list(exes)))
    t.expect(any(e.startswith("gcc") or e.startswith("x86_64-linux-gnu-gcc") for e in exes),
             "no driver trace among %s" % list(exes))
    cc1 = [f for e, fs in exes.items() if e == "cc1" for f, _ in fs][0]
    t.check_frees_live(t.dump(cc1), "cc1")


t.main(test)
