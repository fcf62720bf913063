#!/usr/bin/env python3
"""RSS samples keep their interval under load: 4 threads keep both cores busy
(the recorder's flusher gets little CPU), yet the trace holds between half
and twice the samples that its duration and the interval call for, and they
are in time order, spaced by the interval asked for (`allocrr record
--rss-interval`, which sets ALLOCRR_RSS_INTERVAL_MS for the recorder: an
environment variable of that name given to `allocrr record` is overridden)."""
import json
import os
import resource
import time
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    out = os.path.join(d, "busy.atr")
    for interval_ms in (10, 25):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.monotonic()
        t.record(out, [sys.argv[1], "4", "800"], ["--rss-interval", str(interval_ms)])
        wall = time.monotonic() - w0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / wall
        inf = t.info(out)
        t.expect(inf["clean"], "not clean: %s" % inf)
        want = inf["duration_ns"] / (interval_ms * 1e6)
        got = inf["ops"].get("rss", 0)
        if cpus < 0.5:
            # Nothing samples a process that does not run: on a machine this
            # loaded the count says nothing about the recorder.
            print("SKIP: the machine is overloaded: the program got %.2f CPUs (%d samples)" % (cpus, got))
            sys.exit(77)
        t.expect(0.5 * want <= got <= 2 * want,
                 "%d RSS samples in %.3f s at %d ms: want %.0f (x0.5..x2)" % (
                     got, inf["duration_ns"] / 1e9, interval_ms, want))
        p = t.run([t.ALLOCRR, "dump", "--json", "-e", "rss", out])
        rss = [json.loads(line) for line in p.stdout.decode().splitlines()]
        t.expect(len(rss) == got, "dump shows %d samples, info %d" % (len(rss), got))
        t.expect(all(a["t"] <= b["t"] for a, b in zip(rss, rss[1:])), "RSS samples out of order")
        t.expect(all(e["rss"] > 0 for e in rss), "an RSS sample of 0 bytes")
        # The flusher samples on time when it runs; with every core busy the
        # program's own calls take the sample once 1.25 intervals have passed,
        # later by a call's time and the scheduler's (an ASan build beside
        # another test on 2 CPUs: 15.5 ms at 10), so up to twice the interval,
        # the same bound as the count's.
        gaps = sorted((b["t"] - a["t"]) / 1e6 for a, b in zip(rss, rss[1:]))
        med = gaps[len(gaps) // 2]
        t.expect(0.75 * interval_ms <= med <= 2 * interval_ms,
                 "median gap between RSS samples %.1f ms at %d ms" % (med, interval_ms))
        print("%d ms: %d samples, %.0f expected, median gap %.1f ms, %.2f CPUs" % (interval_ms, got, want, med, cpus))


t.main(test)
