#!/usr/bin/env python3
"""python3 (PYTHONMALLOC=malloc) under the recorder: same output, a clean
trace in which every free names a live block."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

SCRIPT = r"""
import random
random.seed(7)
words = ["w%d-%s" % (i, "x" * (i % 37)) for i in range(60000)]
random.shuffle(words)
d = {w: len(w) for w in words}
words.sort()
print(len(words), sum(d.values()), words[0], words[-1])
"""


def test():
    d = t.tmpdir()
    out = os.path.join(d, "py.atr")
    env = {"PYTHONMALLOC": "malloc"}
    cmd = ["/usr/bin/python3", "-c", SCRIPT]
    native = t.run(cmd, env=env)
    rec = t.record(out, cmd, env=env)
    t.expect(rec.stdout == native.stdout, "output differs: %r vs %r" % (rec.stdout, native.stdout))
    inf = t.info(out)
    t.expect(inf["clean"] and inf["ending"] == "exit", "not clean: %s" % inf)
    t.expect(inf["events"] > 200000, "too few events: %d" % inf["events"])
    t.expect(inf["bytes_per_event"] <= 2.0, "%.2f bytes per event" % inf["bytes_per_event"])
    t.expect(inf["peak_rss"] > 0 and inf["ops"]["rss"] > 0, "no RSS samples")
    t.check_frees_live(t.dump(out), "python3")


t.main(test)
