#!/usr/bin/env python3
"""Cut and corrupted traces: every complete chunk is still read, the error
names the file and the byte offset, and nothing crashes."""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def dump_count(path):
    p = subprocess.run([t.ALLOCRR, "dump", "--json", path], capture_output=True)
    t.expect(p.returncode in (0, 1), "dump of %s crashed: %d %s" % (path, p.returncode, p.stderr[-500:]))
    return p.returncode, len(p.stdout.splitlines()), p.stderr.decode()


def test():
    d = t.tmpdir()
    out = os.path.join(d, "full.atr")
    t.record(out, [sys.argv[1]], extra=["--rss-interval", "1"])
    data = open(out, "rb").read()
    rc, full, _ = dump_count(out)
    t.expect(rc == 0 and full > 100000, "full dump: rc %d, %d events" % (rc, full))
    cut = os.path.join(d, "cut.atr")
    prev = 0
    for size in sorted(random.Random(1).sample(range(len(data)), 60)) + [len(data) - 1]:
        open(cut, "wb").write(data[:size])
        rc, n, err = dump_count(cut)
        t.expect(n >= prev, "cut at %d yields fewer events (%d) than a shorter cut (%d)" % (size, n, prev))
        prev = n
        if rc:
            t.expect(err.startswith("allocrr: '%s': " % cut) and "offset" in err,
                     "cut at %d: unclear error %r" % (size, err))
        inf = subprocess.run([t.ALLOCRR, "info", "--json", cut], capture_output=True)
        t.expect(inf.returncode in (0, 1), "info crashed on a cut trace")
        if inf.returncode == 0:
            t.expect(b'"clean":false' in inf.stdout, "cut trace reported clean")
    t.expect(prev > full * 0.5, "a trace cut one byte short lost too much: %d of %d" % (prev, full))
    bad = os.path.join(d, "bad.atr")
    rnd = random.Random(2)
    for i in range(150):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        open(bad, "wb").write(b)
        for cmd in ("dump", "info"):
            p = subprocess.run([t.ALLOCRR, cmd, "--json", bad], capture_output=True)
            t.expect(p.returncode in (0, 1), "%s crashed on corrupted input (rc %d)" % (cmd, p.returncode))
            if p.returncode:
                t.expect(p.stderr.decode().startswith("allocrr: '%s'" % bad), "unclear error %r" % p.stderr)


t.main(test)
