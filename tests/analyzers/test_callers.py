#!/usr/bin/env python3
"""Who is charged through a wrapper or a recursion (callers.c): the callers
of xmalloc (a well-known wrapper) and of my_alloc (named like one, two
callers) are the sites, each with its own figures, `via` the wrapper, where
the wrapper's call of malloc used to gather them all into one site;
grow_buffer_alloc, named like a wrapper but with one caller, stays the site;
the tables still sum to the trace's figures. descend(), recursing 150 calls
deep, is one flame node with its `recursion` depth, not a tower of nested
nodes, in the tree and in the collapsed stacks; so are ping() <-> pong()
(a cycle of 2, 12 rounds) and tri_a -> tri_b -> tri_c (a cycle of 3, 8
rounds): main -> ping (recursion 12, cycle ["ping", "pong"]) -> pong -> ping (the last
round's allocating call), with the bytes exact at every level; and the text
table names the loaders."""
import os
import sys

import anatest as a
from anatest import t

SRC = sys.argv[1]


def test():
    tr = a.record("callers", extra=["--stacks"])
    coll = os.path.join(t.tmpdir(), "callers.collapsed")
    doc = a.analyze(tr, "--collapsed", coll)
    s = doc["sites"]
    rows = {r["function"]: r for r in s["by_bytes"]}
    for fn, n, tag in (("load_a", 100, "LOAD_A"), ("load_b", 200, "LOAD_B"), ("load_c", 300, "LOAD_C")):
        r = rows.get(fn)
        t.expect(r, "%s is a site: %s" % (fn, sorted(rows)))
        t.expect(r["via"] == "xmalloc" and r["line"] == t.marker_line(SRC, tag), "%s via xmalloc at its line: %s"
                 % (fn, r))
        t.expect(r["allocs"] == n and r["bytes"] == 1000 * n and r["leaked_bytes"] == 1000 * n
                 and r["peak_bytes"] == 1000 * n and r["live_at_peak_bytes"] == 1000 * n, "%s's figures: %s" % (fn, r))
    for fn, n, tag in (("parse_x", 50, "PARSE_X"), ("parse_y", 70, "PARSE_Y")):
        r = rows.get(fn)
        t.expect(r and r["via"] == "my_alloc" and r["allocs"] == n and r["leaked_bytes"] == 500 * n
                 and r["line"] == t.marker_line(SRC, tag), "%s via my_alloc: %s" % (fn, r))
    t.expect("xmalloc" not in rows and "my_alloc" not in rows, "no wrapper is a site: %s" % sorted(rows))
    g = rows.get("grow_buffer_alloc")
    t.expect(g and "via" not in g and g["allocs"] == 40 and g["line"] == t.marker_line(SRC, "GROW"),
             "one caller: the function stays the site: %s" % g)
    t.expect(sum(r["leaked_bytes"] for r in s["by_leaked"]) == doc["leaks"]["bytes"], "leaks sum to the trace's")
    t.expect(sum(r["bytes"] for r in s["by_bytes"]) == doc["summary"]["bytes_requested"], "bytes sum")

    # the recursion: one node, its depth; no descend under descend anywhere
    found = []

    def walk(n, parent):
        if n["name"] == "descend":
            found.append(n)
            t.expect(parent != "descend", "descend nested in descend")
        for ch in n.get("children", []):
            walk(ch, n["name"])
    walk(s["flame"]["allocations"], None)
    t.expect(len(found) == 1, "one descend node: %d" % len(found))
    d = found[0]
    t.expect(d["value"] == 40960 and d["count"] == 10 and d.get("recursion", 0) >= 50,
             "descend: 10 x 4096 bytes, recursion %s deep" % d.get("recursion"))
    with open(coll) as f:
        lines = [l for l in f if l.startswith("allocations;") and ";descend" in l]
    t.expect(lines and all(l.count(";descend") == 1 for l in lines), "collapsed: descend once a line: %s" % lines[:2])

    # indirect recursion: each cycle once under main, its rounds on its first node, the bytes exact
    def find(n, name):
        if n["name"] == name:
            return n
        return next((m for m in (find(c, name) for c in n.get("children", [])) if m), None)
    main = find(s["flame"]["allocations"], "main") or {}
    kids = {c["name"]: c for c in main.get("children", [])}
    for first, cyc, rounds in (("ping", ["ping", "pong"], 12), ("tri_a", ["tri_a", "tri_b", "tri_c"], 8)):
        n, names = kids.get(first), []
        t.expect(n and n.get("cycle") == cyc and n.get("recursion") == rounds,
                 "%s: cycle %s, %d rounds: %s" % (first, cyc, rounds,
                                                  {k: v for k, v in (n or {}).items() if k != "children"}))
        x = n
        while x:  # down the one path: the cycle once, then the bottom round's call that allocates
            names.append(x["name"])
            t.expect(x["value"] == 5 * 2048 and x["count"] == 5, "%s under %s: %s" % (x["name"], names, x))
            x = (x.get("children") or [None])[0]
        t.expect(names == cyc + [first], "%s's path: %s" % (first, names))
    with open(coll) as f:
        ping = [l.strip() for l in f if l.startswith("allocations;") and ";ping" in l]
    t.expect(len(ping) == 1 and ping[0].endswith(";main;ping;pong;ping 10240"), "collapsed ping: %s" % ping)

    text = t.run([t.ALLOCRR, "analyze", "--trace-only", "-w", "sites", tr], text=True).stdout
    t.expect("  load_c via xmalloc " in text and "  parse_y via my_alloc " in text,
             "the text table names the loaders:\n" + text[:3000])


if __name__ == "__main__":
    t.main(test)
