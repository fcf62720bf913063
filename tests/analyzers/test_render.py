#!/usr/bin/env python3
"""The text renderer on sections computed elsewhere (tests/analyzers/
allocators.json: the replay side's "allocators" and a report's "checks",
per the schema): a block per allocator, human units from the key names."""
import os
import sys

import anatest as a
from anatest import t

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out = t.run([sys.argv[1], os.path.join(HERE, "allocators.json")]).stdout.decode()
    for want in ("allocators: glibc", "allocators: builtin", "fragmentation", "peak_rss         40.0 MiB",
                 "peak_over_ideal  1.950", "p50", "20 ns", "12.0 us", "wall_ns", "2.5 ms", "minor_faults  321",
                 "growth_bytes_per_s  1.0 MiB/s", "timeline: 2 points", "checks", "peak_rss <= 1.1 * glibc",
                 "yes"):
        t.expect(want in out, "render: %r not in:\n%s" % (want, out))
    t.expect(out.index("allocators: glibc") < out.index("allocators: builtin") < out.index("checks"),
             "render: order kept")
    bad = os.path.join(t.tmpdir(), "bad.json")
    open(bad, "w").write('{"traces": [')
    p = t.run([sys.argv[1], bad], check=False)
    t.expect(p.returncode == 1 and b"offset" in p.stderr, "render: bad JSON: %r" % p.stderr)


main()
