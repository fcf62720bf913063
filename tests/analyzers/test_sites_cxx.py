#!/usr/bin/env python3
"""C++ call sites (sites_cxx.cc, -O2 -g), as heaptrack_print names them:
frames demangled and qualified ("app::Store::fill(int)", not
"_ZN3app5Store4fillEi" nor "fill"), no symbol versions
("__libc_start_main@@GLIBC_2.34"), and every call of a chain of inlined
calls a frame of its own with its call line (dwarf_getscopes alone gives
only the innermost: fill and deep2 were lost and main named at fill's
line). Checked in the sites' stacks, the flame graph, the collapsed
stacks, `dump --stacks` and the text output."""
import json
import os
import re
import sys

import anatest as a
from anatest import t

SRC = sys.argv[1]
if len(sys.argv) < 3:
    print("skip: no C++ compiler, sites_cxx.cc not built")
    sys.exit(77)
PROG = sys.argv[2]


def line(tag):
    return t.marker_line(SRC, tag)


def frames(stack):
    """[(function, line)] of "func file:line" strings."""
    out = []
    for f in stack:
        head, _, where = f.rpartition(" ")
        if ":" in where and where.rsplit(":", 1)[1].isdigit() and head:
            out.append((head, int(where.rsplit(":", 1)[1])))
        else:
            out.append((f, 0))
    return out


def find_chain(fr, chain, what):
    """chain ([(prefix, line)]) appears in fr as consecutive frames."""
    for i in range(len(fr) - len(chain) + 1):
        if all(fr[i + k][0].startswith(p) and ln in (None, fr[i + k][1]) for k, (p, ln) in enumerate(chain)):
            return
    t.expect(False, "%s: want consecutive frames %s in %s" % (what, chain, fr))


def test():
    d = t.tmpdir()
    trace = os.path.join(d, "cxx.atr")
    t.record(trace, [PROG], extra=["--stacks"])
    folded = os.path.join(d, "cxx.folded")
    doc = a.analyze(trace, "--what", "sites", "--collapsed", folded)
    s = doc["sites"]
    rows = [r for k in s if k.startswith("by_") for r in s[k]]
    names = [r["function"] for r in rows] + [f for r in rows for f in r["stack"]]
    bad = [n for n in names if n.startswith("_Z") or " _Z" in n or "@" in n]
    t.expect(not bad, "mangled or versioned names: %s" % bad[:5])

    # libstdc++'s first malloc (its exception pool, from its constructor, before the
    # recorder's) is stacked like every other call
    nostack = [r for r in rows if r["function"] == "[no stack]"]
    t.expect(not nostack, "calls without a stack in a --stacks recording: %s" % nostack[:1])

    vec = [r for r in s["by_bytes"] if any(f.startswith("app::Store::fill(int) ") for f in r["stack"])]
    t.expect(len(vec) == 1, "one site of the vector's growth: %s" % [r["function"] for r in s["by_bytes"]])
    fr = frames(vec[0]["stack"])
    t.expect(vec[0]["function"].startswith("std::") and "allocate" in vec[0]["function"],
             "the vector's site is the library's allocate: %s" % vec[0]["function"])
    t.expect(any(f.startswith("std::_Vector_base<long, std::allocator<long> >::_M_allocate(") for f, _ in fr),
             "the inlined _M_allocate between allocate and _M_realloc_insert: %s" % fr)
    find_chain(fr, [("std::vector<long, std::allocator<long> >::push_back(", None),
                    ("app::Store::fill(int)", line("FILL")), ("main", line("MAIN_FILL"))], "vector growth")
    # the site is the library's code; its caller the program's function that grew the vector
    t.expect(vec[0].get("caller") == {"function": "app::Store::fill(int)", "file": vec[0]["caller"]["file"],
                                      "line": line("FILL")} and
             os.path.realpath(vec[0]["caller"]["file"]) == os.path.realpath(SRC), "vector's caller: %s" % vec[0].get("caller"))
    t.expect(vec[0]["allocs"] >= 10 and vec[0]["leaked_bytes"] >= 10000 * 8, "vector figures: %s" % vec[0])

    grow = [r for r in s["by_bytes"] if any(f.startswith("app::Store::grow(int) ") for f in r["stack"])]
    t.expect(grow, "the string's growth in app::Store::grow(int): %s" % [r["stack"] for r in s["by_bytes"]])
    t.expect(any(ln == line("GROW") for f, ln in frames(grow[0]["stack"]) if f == "app::Store::grow(int)"),
             "grow's frame at the GROW line: %s" % grow[0]["stack"])

    deep = [r for r in s["by_bytes"] if r["allocs"] == 1 and r["bytes"] == 4002]
    t.expect(len(deep) == 1, "the site of deep3's malloc(4002): %s" % [(r["function"], r["bytes"]) for r in rows])
    dr = deep[0]
    t.expect("caller" not in dr, "a site in the program's sources has no caller: %s" % dr.get("caller"))
    t.expect(dr["function"] == "app::deep3(unsigned long)" and dr["line"] == line("DEEP3")
             and dr["inlined_into"] == "app::deep2(unsigned long)", "deep site: %s" % dr)
    find_chain(frames(dr["stack"]), [("app::deep3(unsigned long)", line("DEEP3")),
                                     ("app::deep2(unsigned long)", line("DEEP2")),
                                     ("app::deep1(unsigned long)", line("DEEP1")), ("main", line("MAIN_DEEP"))],
               "deep stack")

    # the flame graph: main > deep1 > deep2 > deep3, inlined
    def child(node, prefix):
        for c in node.get("children", []):
            if c["name"].startswith(prefix):
                return c
        t.expect(False, "no child %s of %s: %s" % (prefix, node["name"],
                                                     [c["name"] for c in node.get("children", [])]))
    n = s["flame"]["allocations"]
    while not n["name"] == "main":
        n = max(n["children"], key=lambda c: c["value"])
    for f in ("app::deep1(", "app::deep2(", "app::deep3("):
        n = child(n, f)
        t.expect(n.get("inlined") and n["value"] == 4002, "flame %s: %s" % (f, {k: n.get(k) for k in n if k != "children"}))

    # collapsed: the same chain, root first
    lines = open(folded).read().splitlines()
    # FlameGraph's format: frames root first, ';' between, the count (bytes) after the last space
    bad = [ln for ln in lines if not re.fullmatch(r"(allocations|leaks|live_at_peak)(;[^;]+)+ [1-9][0-9]*", ln)]
    t.expect(lines and not bad, "collapsed lines that do not parse: %s" % bad[:3])
    total = sum(int(ln.rsplit(" ", 1)[1]) for ln in lines if ln.startswith("allocations;"))
    t.expect(total == sum(r["bytes"] for r in s["by_bytes"]), "collapsed allocations sum to %d bytes, sites to %d"
             % (total, sum(r["bytes"] for r in s["by_bytes"])))
    t.expect(any(ln.startswith("allocations;") and
                 ";main;app::deep1(unsigned long);app::deep2(unsigned long);app::deep3(unsigned long) 4002" in ln
                 for ln in lines), "collapsed: %s" % [ln for ln in lines if "deep" in ln])

    # dump --stacks names the same frames
    p = t.run([t.ALLOCRR, "dump", "--json", "--stacks", trace])
    ev = [e for e in map(json.loads, p.stdout.decode().splitlines()) if e["op"] == "malloc" and e.get("size") == 4002]
    fns = [f["func"] for f in ev[0]["stack"]] if len(ev) == 1 else []
    t.expect(fns[:4] == ["app::deep3(unsigned long)", "app::deep2(unsigned long)", "app::deep1(unsigned long)",
                         "main"], "dump --stacks: %s" % fns)

    # the text output names the site demangled
    txt = t.run([t.ALLOCRR, "analyze", "--trace-only", "--what", "sites", trace]).stdout.decode()
    t.expect("app::deep3(" in txt and "_Z" not in txt, "text output:\n%s" % txt)
    t.expect("std::__new_allocator<>::allocate()" in txt and
             "    from app::Store::fill(int) sites_cxx.cc:%d\n" % line("FILL") in txt, "text output:\n%s" % txt)


t.main(test)
