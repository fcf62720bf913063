#!/usr/bin/env python3
"""The text renderer on sections computed elsewhere (tests/analyzers/
allocators.json: the replay side's "allocators" and a report's "checks",
per the schema): a block per allocator, human units from the key names."""
import json
import os
import sys

import anatest as a
from anatest import t

HERE = os.path.dirname(os.path.abspath(__file__))


def row(out, label):
    """The cells of the allocators table's row with this label."""
    for l in out.splitlines():
        if l.strip().startswith(label + "  "):
            return l.strip()[len(label):].split("  ")
    raise AssertionError("no row %r in:\n%s" % (label, out))


def main():
    out = t.run([sys.argv[1], os.path.join(HERE, "allocators.json")]).stdout.decode()
    cells = lambda label: [c.strip() for c in row(out, label) if c.strip()]
    head = [l for l in out.splitlines() if l.strip().startswith("glibc")]
    t.expect(head and head[0].split() == ["glibc", "builtin"], "render: one column per allocator, in order:\n" + out)
    # values in human units, the lowest marked, a missing figure as "-"
    for label, want in (("peak RSS", ["40 MiB", "24 MiB*"]), ("peak / ideal", ["1.950", "1.170*"]),
                        ("wall time", ["2.5 ms", "-"]), ("min-max", ["2.4-2.6 ms", "-"]),
                        ("minor faults", ["321", "-"]), ("external frag. @peak RSS", ["19.5 MiB", "-"]),
                        ("calloc->malloc+memset", ["9.0 ms, 65,546 pf", "-"]),
                        # below the timer's resolution: "<10", not 0; the best p99 marked
                        ("malloc", ["20/90/300", "<10/30/45.0u*"]), ("free", ["15/60/200", "-"])):
        t.expect(cells(label) == want, "render: row %r is %r, want %r" % (label, cells(label), want))
    for want in ("== x.atr ==", "calls        1,000", "requested    3 MiB", "checks: 1 of 2 broken",
                 "  FAIL  leaks.bytes == 0  [x.atr]  value 4 KiB (4,096), limit 0",
                 "  ok    peak_rss <= 1.1 * glibc  (1 of 1)", "--json"):
        t.expect(want in out, "render: %r not in:\n%s" % (want, out))
    t.expect(out.index("allocators (") < out.index("checks:"), "render: the checks after the traces")
    # call sites: C++ names folded to fit ("<>", then "()"), 1,048,572 B as 1.0 MiB (not "1024.0 KiB",
    # a column too wide), the program's caller of a library site, a site without lines at module+offset
    site = [l for l in out.splitlines() if l.startswith("  std::__new_allocator<>::allocate() < std")]
    t.expect(site and site[0].endswith(" new_allocator.h:137        1.0 MiB       0 B   1.0 MiB        18     4 KiB"),
             "render: site row %r" % site)
    t.expect("\n    from app::Index::operator<<(std::map<> const&) index.cc:42\n" in out,
             "render: the site's caller:\n" + out)
    t.expect(any(l.startswith("  operator<=> ") and " app+0x11c1 " in l for l in out.splitlines()),
             "render: a site without lines:\n" + out)
    # a waste below 0 (live bytes not resident: touch none) is "-", not a negative byte count
    doc = json.load(open(os.path.join(HERE, "allocators.json")))
    fr = doc["traces"][0]["allocators"][0]["fragmentation"]
    fr["internal_bytes"], fr["external_bytes"] = 4096, -12288
    neg = os.path.join(t.tmpdir(), "neg.json")
    json.dump(doc, open(neg, "w"))
    out = t.run([sys.argv[1], neg]).stdout.decode()
    t.expect(cells("internal frag. @peak RSS")[0] == "4 KiB" and cells("external frag. @peak RSS")[0] == "-"
             and "-12" not in out, "render: negative external: %r" % cells("external frag. @peak RSS"))
    bad = os.path.join(t.tmpdir(), "bad.json")
    open(bad, "w").write('{"traces": [')
    p = t.run([sys.argv[1], bad], check=False)
    t.expect(p.returncode == 1 and b"offset" in p.stderr, "render: bad JSON: %r" % p.stderr)


main()
