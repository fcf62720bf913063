#!/usr/bin/env python3
"""RSS the heap does not explain when live bytes were not all resident at
the first sample (untouched_trace.c: a 64 MiB block allocated before the
first RSS sample and written after it, as sort does with its buffer). The
baseline (RSS - live at the first sample) is then negative, and the growth
counted from it read more than the unexplained RSS itself: sort's terminal
line said "up to 5.4 MiB (9.6 MiB above the first sample's 0 B)". The
growth counts from a baseline of at least 0: never above the peak.
argv[1]: the untouched_trace binary."""
import os
import sys

import anatest as a
from anatest import t

MiB = 1 << 20


def main():
    trace = os.path.join(t.tmpdir(), "untouched.atr")
    t.run([sys.argv[1], trace])
    rec = a.analyze(trace, "-w", "summary,rss")["rss"]["recorded"]
    peak = 71 * MiB - 64 * MiB - 1000 * 1000
    t.expect(rec["unexplained_peak"] == peak and rec["unexplained_peak_t"] == 6000,
             "unexplained peak %s at %s, want %d at %d" % (rec["unexplained_peak"], rec["unexplained_peak_t"],
                                                           peak, 6000))
    t.expect(rec["baseline"] == 3 * MiB - 64 * MiB, "baseline %s, want %d" % (rec["baseline"], 3 * MiB - 64 * MiB))
    t.expect(rec["unexplained_growth_peak"] == peak,
             "growth %s, want %d (the peak less a baseline of 0)" % (rec["unexplained_growth_peak"], peak))
    text = t.run([t.ALLOCRR, "analyze", "--trace-only", trace], text=True).stdout
    line = [l.strip() for l in text.splitlines() if "does not explain" in l]
    t.expect(line and "up to 6.0 MiB" in line[0] and "(6.0 MiB above the first sample's 0 B" in line[0],
             "the text's line: %s" % line)


if __name__ == "__main__":
    t.main(main)
