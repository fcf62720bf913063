#!/usr/bin/env python3
"""Call sites of a program with known figures (sites.c, built -O2 -g): an
allocation inlined into its caller is named as the inlined function with
its line, inlined into the caller at the call's line; every per-site table
(live at the peak, leaked, calls, bytes, temporaries, calloc fresh and
reused, fragmentation) against the program's known answers and against a
model of the live set at the peak computed here from `allocrr dump`; the
checkerboard site is charged the fragmentation, the contiguous one little;
the flame graphs' trees and the collapsed stacks agree, and both merge a
function's frames (two_lines' two return addresses are one node, one
collapsed line, but two sites with their lines in the tables)."""
import json
import os
import sys

import anatest as a
from anatest import t

SRC = sys.argv[1]
N = 2000
PAGE = 4096


def marker_line(tag):
    return t.marker_line(SRC, tag)


def peak_live_set(events):
    """addr -> size of the blocks live at the first moment of the peak of live bytes."""
    def walk(stop):
        live, cur, peak, at = {}, 0, 0, -1
        for i, e in enumerate(events):
            op = e["op"]
            if op not in t.CALLS:
                continue
            f = a.failed(e)
            ptr, ret = int(e.get("ptr", "0x0"), 16), int(e.get("ret", "0x0"), 16)
            if op in ("free", "realloc", "reallocarray") and ptr and (op == "free" or not f
                                                                      or a.nbytes(e) == 0):
                cur -= live.pop(ptr, 0)
            if op != "free" and not f and ret:
                cur -= live.pop(ret, 0)
                live[ret] = a.nbytes(e)
                cur += live[ret]
                if cur > peak:
                    peak, at = cur, i
            if i == stop:
                return live, peak, at
        return live, peak, at
    _, peak, at = walk(-1)
    live, _, _ = walk(at)
    return live, peak


def model_fragmentation(live):
    """Per page holding live bytes: its bytes not covered by live blocks."""
    used = {}
    for addr, size in live.items():
        p = addr
        while p < addr + size:
            page = p // PAGE
            end = min(addr + size, (page + 1) * PAGE)
            used[page] = used.get(page, 0) + end - p
            p = end
    return sum(PAGE - u for u in used.values())


def row(table, func):
    hits = [r for r in table if r["function"] == func]
    t.expect(len(hits) == 1, "one %s row in %s" % (func, [r["function"] for r in table]))
    return hits[0]


def walk_tree(node, path, out):
    kids = node.get("children", [])
    t.expect(sum(k["value"] for k in kids) <= node["value"], "flame node %s: children above it" % path)
    if not kids or node["value"] > sum(k["value"] for k in kids):
        out[path] = node["value"] - sum(k["value"] for k in kids)
    for k in kids:
        walk_tree(k, path + ";" + k["name"], out)


def test():
    d = t.tmpdir()
    trace = a.record("sites", extra=["--stacks"])
    folded = os.path.join(d, "sites.folded")
    doc = a.analyze(trace, "--collapsed", folded)
    s = doc["sites"]
    src = os.path.realpath(SRC)

    # the inlined allocation: grow() at its malloc, inlined into make_name at the call
    g = row(s["by_leaked"], "grow")
    t.expect(os.path.realpath(g["file"]) == src and g["line"] == marker_line("INLINE")
             and g["inlined_into"] == "make_name" and g["leaked_bytes"] == 333, "inlined site: %s" % g)
    t.expect(g["stack"][0] == "grow %s:%d" % (g["file"], marker_line("INLINE"))
             and g["stack"][1] == "make_name %s:%d" % (g["file"], marker_line("CALLER"))
             and g["stack"][2].startswith("main "), "inlined site's stack: %s" % g["stack"][:3])

    # dump --stacks: the inlined frame and the one it sits in share the return address
    p = t.run([t.ALLOCRR, "dump", "--json", "--stacks", trace])
    ev = [e for e in map(json.loads, p.stdout.decode().splitlines()) if e["op"] == "malloc" and e.get("size") == 333]
    fr = ev[0]["stack"] if len(ev) == 1 else []
    t.expect(len(fr) >= 3 and [f["func"] for f in fr[:3]] == ["grow", "make_name", "main"]
             and fr[0].get("inlined") and not fr[1].get("inlined") and fr[0]["addr"] == fr[1]["addr"]
             and fr[0]["line"] == marker_line("INLINE") and fr[1]["line"] == marker_line("CALLER"),
             "dump of the inlined allocation: %s" % fr[:3])

    # live at the peak: the checkerboard's kept half, the contiguous blocks, the inlined leak
    live, peak = peak_live_set(t.dump(trace))
    t.expect(doc["live"]["peak_bytes"] == peak, "peak %d, model %d" % (doc["live"]["peak_bytes"], peak))
    ck, co = row(s["by_live_at_peak"], "checker"), row(s["by_live_at_peak"], "contiguous")
    t.expect(ck["live_at_peak_bytes"] == N * 64 and co["live_at_peak_bytes"] == N * 256,
             "live at peak: checker %d, contiguous %d" % (ck["live_at_peak_bytes"], co["live_at_peak_bytes"]))
    t.expect(s["by_live_at_peak"][0]["function"] == "contiguous", "by_live_at_peak: %s" % s["by_live_at_peak"][0])
    at_peak = sum(r["live_at_peak_bytes"] for r in s["by_live_at_peak"])
    t.expect(at_peak == peak, "sites' live bytes at the peak sum to %d, the peak is %d" % (at_peak, peak))
    t.expect(ck["peak_bytes"] == 2 * N * 64 and ck["bytes"] == 2 * N * 64 and ck["allocs"] == 2 * N
             and ck["leaked_bytes"] == 0 and ck["line"] == marker_line("CHECKER"), "checker: %s" % ck)
    t.expect(row(s["by_allocs"], "checker") == s["by_allocs"][0], "by_allocs: %s" % s["by_allocs"][0])
    t.expect(s["by_bytes"][0]["function"] == "contiguous", "by_bytes: %s" % s["by_bytes"][0])

    # fragmentation: the checkerboard's holes are charged to it
    fr = s["by_fragmentation"]
    t.expect(fr[0]["function"] == "checker", "most fragmentation: %s" % fr[0]["function"])
    ckf, cof = row(fr, "checker")["fragmentation_bytes"], row(fr, "contiguous")["fragmentation_bytes"]
    t.expect(ckf > N * 64 and cof < 0.1 * N * 256 and ckf > 4 * cof,
             "fragmentation: checker %d (live %d), contiguous %d (live %d)" % (ckf, N * 64, cof, N * 256))
    want = model_fragmentation(live)
    t.expect(abs(s["fragmentation_bytes"] - want) <= len(s["by_fragmentation"]) + 2,
             "fragmentation in all %d, model %d" % (s["fragmentation_bytes"], want))

    # sampled stacks: the fragmentation charged to a site is estimated from its sampled blocks,
    # on pages whose occupancy counts every live block (the unsampled ones are no holes: taken as
    # holes, and scaled up, the checkerboard was charged ~30 times the truth)
    sp = os.path.join(d, "sampled.atr")
    t.record(sp, [os.path.join(a.BIN, "an_sites")], extra=["--stacks", "--stack-sample", "256"])
    ss = a.analyze(sp, "--what", "sites")["sites"]
    t.expect(ss.get("sampled", {}).get("mean_bytes") == 256, "sampled: %s" % ss.get("sampled"))
    for fn in ("checker", "contiguous"):
        full = row(s["by_fragmentation"], fn)["fragmentation_bytes"]
        est = row(ss["by_fragmentation"], fn)["fragmentation_bytes"]
        t.expect(abs(est - full) <= 0.25 * full + 512, "%s: fragmentation %d sampled, %d in full" % (fn, est, full))
    t.expect(abs(ss["fragmentation_bytes"] - s["fragmentation_bytes"]) <= 0.25 * s["fragmentation_bytes"],
             "fragmentation in all: %d sampled, %d in full" % (ss["fragmentation_bytes"], s["fragmentation_bytes"]))

    # calloc by site, classified as the zeroing section does
    z = row(s["by_calloc"], "zeroed")
    t.expect(z["calloc_bytes"] == 32 * 1000 and z["line"] == marker_line("CALLOC"), "calloc site: %s" % z)
    zs = doc["zeroing"]
    fresh = sum(r["calloc_fresh_bytes"] for r in s["by_calloc"])
    reused = sum(r["calloc_reused_bytes"] for r in s["by_calloc"])
    t.expect(fresh == zs["fresh_bytes"] and reused == zs["reused_bytes"] and z["calloc_fresh_bytes"] >= 16000
             and z["calloc_reused_bytes"] > 0 and z["calloc_fresh_bytes"] + z["calloc_reused_bytes"] == 32000,
             "calloc fresh/reused by site %d/%d, zeroing %d/%d" % (fresh, reused, zs["fresh_bytes"],
                                                                   zs["reused_bytes"]))
    tmp = sum(r["temporaries"] for r in s["by_temporaries"])
    t.expect(tmp == doc["lifetimes"]["temporary"]["count"], "temporaries by site %d, lifetimes %d" % (
        tmp, doc["lifetimes"]["temporary"]["count"]))

    # flame graphs: the trees hold what the collapsed stacks say
    lines = open(folded).read().splitlines()
    for graph in ("allocations", "live_at_peak", "leaks"):
        tree = s["flame"][graph]
        leaves = {}
        walk_tree(tree, "", leaves)
        col = {}
        for l in lines:
            stack, v = l.rsplit(" ", 1)
            if stack.startswith(graph + ";"):
                key = stack[len(graph):]
                col[key] = col.get(key, 0) + int(v)
        t.expect(leaves == col, "%s: tree leaves %s, collapsed %s" % (graph, sorted(leaves.items())[:4],
                                                                    sorted(col.items())[:4]))
        t.expect(tree["value"] == sum(col.values()), "%s: root %d" % (graph, tree["value"]))
        def counts_add_up(n):  # a node's count is its callees' and its own stacks': never less than theirs
            kids = n.get("children", [])
            t.expect(n["count"] >= sum(k["count"] for k in kids) and n["count"] >= 0, "%s count: %s" % (graph, n["name"]))
            for k in kids:
                counts_add_up(k)
        counts_add_up(tree)
    fl = s["flame"]
    t.expect(fl["leaks"]["count"] == doc["leaks"]["blocks"] and fl["live_at_peak"]["count"] == len(live)
             and fl["allocations"]["count"] == sum(r["allocs"] for r in s["by_allocs"]),
             "flame counts: leaks %d (blocks %d), live at peak %d (model %d), allocations %d" % (
                 fl["leaks"]["count"], doc["leaks"]["blocks"], fl["live_at_peak"]["count"], len(live),
                 fl["allocations"]["count"]))
    t.expect(any(l.startswith("leaks;") and l.endswith(";main;make_name;grow 333") for l in lines),
             "collapsed: the inlined leak: %s" % [l for l in lines if l.startswith("leaks")])

    # frames merged by function (FlameGraph's convention): two_lines allocates on two lines
    two = sorted((r["line"], r["bytes"]) for r in s["by_bytes"] if r["function"] == "two_lines")
    t.expect(two == [(marker_line("TWO_A"), 1000), (marker_line("TWO_B"), 2000)],
             "two_lines: one site per line in the tables: %s" % two)

    def named(node, name, out):
        if node["name"] == name:
            out.append(node)
        for k in node.get("children", []):
            named(k, name, out)
    nodes = []
    named(s["flame"]["allocations"], "two_lines", nodes)
    t.expect(len(nodes) == 1 and nodes[0]["value"] == 3000 and "line" not in nodes[0]
             and os.path.realpath(nodes[0].get("file", "")) == src,
             "two_lines: one flame node, its file and no single line: %s" % nodes)
    co = row(s["by_live_at_peak"], "contiguous")
    cn = []
    named(s["flame"]["allocations"], "contiguous", cn)
    t.expect(len(cn) == 1 and cn[0].get("line") == co["line"] == marker_line("CONTIGUOUS"),
             "a node of one line keeps it: %s" % cn)
    paths = [l.rsplit(" ", 1)[0] for l in lines]
    t.expect(len(paths) == len(set(paths)), "collapsed: a path of functions twice: %s" % sorted(
        p for p in set(paths) if paths.count(p) > 1)[:3])
    tl = [l for l in lines if l.startswith("allocations;") and l.endswith(";main;two_lines 3000")]
    t.expect(len(tl) == 1, "collapsed: two_lines as one line of 3000: %s" % [l for l in lines if "two_lines" in l])

    # the terminal form: the sites tables, the inlined site named with its caller
    out = t.run([t.ALLOCRR, "analyze", "--trace-only", trace]).stdout.decode()
    t.expect("call sites by live bytes at the peak" in out and "call sites by leaked bytes" in out
             and "grow < make_name" in out and "sites.c:%d" % marker_line("INLINE") in out,
             "text form lacks the sites:\n" + out)

    # the tree is bounded: few nodes kept, the rest folded into "(other)"
    p = t.run([t.ALLOCRR, "analyze", "--json", "--what", "sites", trace])
    t.expect(json.loads(p.stdout)["traces"][0]["sites"]["flame"]["max_nodes"] >= 100, "max_nodes")


t.main(test)
