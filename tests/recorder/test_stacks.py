#!/usr/bin/env python3
"""Call stacks (`allocrr record --stacks`) of a program with known call
paths: the recorded frames, their symbols and lines, the truncation of a
deep recursion, a thread's stack, the sites section and the collapsed
stacks, a stripped copy whose binary is gone afterwards (addresses as
module+offset, inside the right function), traces without stacks unchanged,
and the new chunks skipped by a reader that does not know them."""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PROG, SRC, LIB = sys.argv[1], sys.argv[2], sys.argv[3]


def marker_line(tag):
    return t.marker_line(SRC, tag)


def dump_stacks(trace):
    p = t.run([t.ALLOCRR, "dump", "--json", "--stacks", trace])
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


def chunks(path):
    """(type, flags) of every chunk, read by the format's framing alone."""
    data = open(path, "rb").read()
    pos = struct.unpack_from("<I", data, 12)[0]
    out = []
    while pos < len(data):
        sync, typ, flags, body = struct.unpack_from("<IHHI", data, pos)
        t.expect(sync == 0x4B4E4843, "bad sync at %d" % pos)
        out.append((typ, flags, pos))
        pos += 12 + body
    return out


def one(events, op, size):
    hits = [e for e in events if e["op"] == op and e.get("size") == size]
    t.expect(len(hits) >= 1, "no %s(%d) recorded" % (op, size))
    return hits[0]


def funcs(ev):
    return [f["func"] for f in ev.get("stack", [])]


def test():
    d = t.tmpdir()
    out = os.path.join(d, "stacks.atr")
    t.record(out, [PROG, LIB], extra=["--stacks=64"])
    ev = dump_stacks(out)

    # a library loaded by dlopen after the first stacks: named too
    lib = one(ev, "malloc", 999)
    t.expect(funcs(lib)[:2] == ["lib_alloc", "main"], "dlopened library's stack: %s" % funcs(lib))
    t.expect(len([c for c in chunks(out) if c[0] == 4]) >= 1, "no modules chunk")
    t.expect(lib["stack"][0].get("line") == 7 and lib["stack"][0]["file"].endswith("stacks_lib.c"),
             "library frame: %s" % lib["stack"][0])

    leak = one(ev, "malloc", 4321)
    t.expect(funcs(leak)[:4] == ["leaky", "path_b", "path_a", "main"], "leak stack: %s" % funcs(leak))
    # the default unwinder (CFI rules) walks through libc to _start: the stack is whole
    t.expect(funcs(leak)[-1] == "_start" and not leak.get("stack_truncated"), "whole stack: %s, truncated %s"
             % (funcs(leak), leak.get("stack_truncated")))
    f0 = leak["stack"][0]
    t.expect(f0.get("file", "").endswith("stacks.c") and f0.get("line") == marker_line("LEAK"),
             "leak frame: %s, want stacks.c:%d" % (f0, marker_line("LEAK")))

    deep = one(ev, "malloc", 777)
    t.expect(deep["stack_truncated"] and len(deep["stack"]) == 64, "deep: %d frames, truncated %s"
             % (len(deep["stack"]), deep["stack_truncated"]))
    t.expect(set(funcs(deep)) == {"recurse"}, "deep frames: %s" % set(funcs(deep)))
    t.expect(deep["stack"][0]["line"] == marker_line("DEEP"), "deep line %s" % deep["stack"][0])

    th = one(ev, "calloc", 555)
    t.expect(funcs(th)[:2] == ["thread_leaf", "thread_fn"], "thread stack: %s" % funcs(th))
    t.expect(th["tid"] != leak["tid"], "the calloc ran on the main thread")

    temps = [e for e in ev if e["op"] == "malloc" and e.get("size") == 100]
    t.expect(len(temps) == 1000 and all(funcs(e)[:2] == ["temp_site", "main"] for e in temps),
             "temporaries: %d, first %s" % (len(temps), funcs(temps[0]) if temps else None))
    t.expect(len({e["stack"][0]["addr"] for e in temps}) == 1, "one call site for 1000 calls")
    frees = [e for e in ev if e["op"] == "free"]
    t.expect(frees and all("stack" not in e for e in frees), "frees carry no stack")

    # sites, and collapsed stacks
    folded = os.path.join(d, "stacks.folded")
    p = t.run([t.ALLOCRR, "analyze", "--json", "--what", "sites", "--collapsed", folded, out])
    sites = json.loads(p.stdout.decode())["traces"][0]["sites"]
    t.expect(sites["recorded"], "sites: not recorded")
    # the program's only leak; libc's own (stdout's buffer, the thread's TLS, dlopen's) are
    # charged through whole stacks to the lines of main that called printf, pthread_create, dlopen
    mine = [s for s in sites["by_leaked"] if os.path.realpath(s.get("module", "")) == os.path.realpath(PROG)]
    t.expect(len([s for s in mine if s["function"] == "leaky"]) == 1
             and all(s["function"] in ("leaky", "main") for s in mine), "leak sites in the program: %s" % mine)
    top = [s for s in mine if s["function"] == "leaky"][0]
    t.expect(top["function"] == "leaky" and top["leaked_bytes"] == 4321 and top["line"] == marker_line("LEAK"),
             "leak site: %s" % top)
    t.expect(top["stack"][:4] == ["leaky %s:%d" % (top["file"], top["line"])] + top["stack"][1:4]
             and top["stack"][3].startswith("main "), "leak site stack: %s" % top["stack"])
    tt = sites["by_temporaries"][0]
    t.expect(tt["function"] == "temp_site" and tt["temporaries"] == 1000 and tt["allocs"] == 1000
             and tt["bytes"] == 100000 and tt["peak_bytes"] == 100 and tt["line"] == marker_line("TEMP"),
             "top temporary site: %s" % tt)
    t.expect(sites["by_allocs"][0]["function"] == "temp_site", "by_allocs: %s" % sites["by_allocs"][0])
    # the deep recursion: its site names recurse at the DEEP line, its stack cut and marked
    deep_site = [s for s in sites["by_bytes"] if s["function"] == "recurse"]
    t.expect(len(deep_site) == 1 and deep_site[0]["line"] == marker_line("DEEP") and deep_site[0]["bytes"] == 777
             and deep_site[0]["stack"][-1] == "[truncated]" and len(deep_site[0]["stack"]) == 65
             and all(f.startswith("recurse ") for f in deep_site[0]["stack"][:-1]), "deep site: %s" % deep_site)
    # the dlopened library's site, and the thread's
    lib_site = [s for s in sites["by_bytes"] if s["function"] == "lib_alloc"]
    t.expect(len(lib_site) == 1 and lib_site[0]["line"] == 7 and lib_site[0]["file"].endswith("stacks_lib.c"),
             "library site: %s" % lib_site)
    th_site = [s for s in sites["by_calloc"] if s["function"] == "thread_leaf"]
    t.expect(len(th_site) == 1 and th_site[0]["calloc_bytes"] == 555 and th_site[0]["line"] == marker_line("THREAD")
             and th_site[0]["stack"][1].startswith("thread_fn "), "thread site: %s" % th_site)
    lines = open(folded).read().splitlines()
    t.expect(any(l.endswith(";main;path_a;path_b;leaky 4321") and l.startswith("allocations;") for l in lines),
             "collapsed allocations: %s" % lines[:5])
    leaks = [l for l in lines if l.startswith("leaks;") and ";main;path_a;" in l]
    t.expect(len(leaks) == 1 and leaks[0].endswith(";main;path_a;path_b;leaky 4321"), "collapsed leaks: %s" % leaks)
    t.expect(any(l.endswith(";main;temp_site 100000") for l in lines), "collapsed temporaries missing")

    # a stripped copy, gone by analysis time: module+offset, inside leaky
    copy = os.path.join(d, "stacks-copy")
    shutil.copy(PROG, copy)
    t.run(["strip", copy])
    out2 = os.path.join(d, "stripped.atr")
    t.record(out2, [copy], extra=["--stacks"])
    os.unlink(copy)
    leak2 = one(dump_stacks(out2), "malloc", 4321)
    name = leak2["stack"][0]["func"]
    t.expect(name.startswith("stacks-copy+0x"), "stripped, gone: %s" % name)
    off = int(name.split("+")[1], 16)
    nm = t.run(["nm", PROG]).stdout.decode().split("\n")
    syms = sorted((int(a, 16), n) for a, k, n in (l.split() for l in nm if len(l.split()) == 3)
                  if k in "tT")
    owner = [n for a, n in syms if a < off][-1]
    t.expect(owner == "leaky", "offset 0x%x of the stripped copy is in %s, not leaky" % (off, owner))
    # the report of the stripped trace names the same offset as the leak's site
    p = t.run([t.ALLOCRR, "analyze", "--json", "--what", "sites", out2])
    st = [s for s in json.loads(p.stdout.decode())["traces"][0]["sites"]["by_leaked"]
          if s["function"].startswith("stacks-copy+0x") and s["bytes"] == 4321]
    # (libc's own leaks -- stdio's buffer, a thread's TLS -- are charged to main's calls: other sites)
    t.expect(len(st) == 1 and st[0]["function"] == name and st[0]["leaked_bytes"] == 4321 and "file" not in st[0],
             "stripped leak site: %s, want %s" % (st, name))

    t.expect(st[0].get("module_offset") == "0x%x" % off, "stripped leak site's module offset: %s" % st)

    # symbols but no lines (debug info stripped, the binary kept): the sites
    # tell apart by the return address in the module, in JSON and text
    nodbg = os.path.join(d, "stacks-nodbg")
    shutil.copy(PROG, nodbg)
    t.run(["strip", "--strip-debug", nodbg])
    out4 = os.path.join(d, "nodbg.atr")
    t.record(out4, [nodbg], extra=["--stacks"])
    p = t.run([t.ALLOCRR, "analyze", "--json", "--what", "sites", out4])
    st = [s for s in json.loads(p.stdout.decode())["traces"][0]["sites"]["by_leaked"]
          if s["function"] == "leaky" and s["bytes"] == 4321]
    t.expect(len(st) == 1 and "file" not in st[0] and st[0].get("module_offset", "").startswith("0x"),
             "no-lines leak site: %s" % st)
    where = "stacks-nodbg+" + st[0]["module_offset"]
    txt = t.run([t.ALLOCRR, "analyze", "--what", "sites", out4]).stdout.decode()
    t.expect(any(l.split()[:2] == ["leaky", where] for l in txt.splitlines()),
             "text names the no-lines site %s:\n%s" % (where, txt))

    # without --stacks: no stack chunks, no stack column, no stacks feature
    out3 = os.path.join(d, "plain.atr")
    t.record(out3, [PROG])
    ch = chunks(out3)
    t.expect(all(typ in (1, 2) and flags == 0 for typ, flags, _ in ch), "plain trace chunks: %s" % ch)
    t.expect(all("stack" not in e for e in dump_stacks(out3)), "plain trace has stacks")
    # RSS samples may come with an rss_peak (1.3); without them a trace keeps 1.1 or 1.2
    t.expect(t.info(out3)["format"] == "1.3" and t.info(out)["format"] == "1.3",
             "formats: plain %s, stacks %s" % (t.info(out3)["format"], t.info(out)["format"]))
    out5, out6 = os.path.join(d, "plain0.atr"), os.path.join(d, "stacks0.atr")
    t.record(out5, [PROG], ["--rss-interval", "0"])
    t.record(out6, [PROG], ["--rss-interval", "0", "--stacks"])
    t.expect(t.info(out5)["format"] == "1.1" and t.info(out6)["format"] == "1.2",
             "formats without RSS: plain %s, stacks %s" % (t.info(out5)["format"], t.info(out6)["format"]))
    t.expect(os.path.getsize(out3) < os.path.getsize(out), "plain trace not smaller")
    p = t.run([t.ALLOCRR, "analyze", "--json", "--what", "sites", out3])
    t.expect("sites" not in json.loads(p.stdout.decode())["traces"][0], "sites of a plain trace")
    t.expect(b"no call stacks" in p.stderr, "no note that the trace has no stacks: %r" % p.stderr)
    ch = chunks(out)
    t.expect(any(typ == 3 for typ, _, _ in ch) and any(typ == 4 for typ, _, _ in ch)
             and all(flags == 1 for typ, flags, _ in ch if typ == 1), "stack trace chunks: %s" % ch)

    # the new chunks renamed to a type no reader knows: skipped, every event still read
    data = bytearray(open(out, "rb").read())
    n = 0
    for typ, _, pos in ch:
        if typ in (3, 4):
            struct.pack_into("<H", data, pos + 4, 0x7777)
            n += 1
    hidden = os.path.join(d, "hidden.atr")
    open(hidden, "wb").write(data)
    inf = t.info(hidden)
    t.expect(inf["skipped_chunks"] == n and inf["clean"], "skipped %s of %d" % (inf["skipped_chunks"], n))
    ev2 = dump_stacks(hidden)
    t.expect(len(ev2) == len(ev) and all("stack" not in e for e in ev2), "events of the hidden trace")
    t.expect(t.info(out)["skipped_chunks"] == 0, "a 1.2 reader skipped its own chunks")

    for bad in ("--stacks=0", "--stacks=121", "--stacks=x", "--stacks="):
        p = subprocess.run([t.ALLOCRR, "record", "-q", "-o", os.path.join(d, "x.atr"), bad, "--", PROG],
                           capture_output=True, timeout=60)
        t.expect(p.returncode == 2 and b"--stacks" in p.stderr, "%s: exit %d %r" % (bad, p.returncode, p.stderr))

    # damaged stack and module chunks: one line naming the file and the chunk's offset, exit 1
    # count: more entries than the body holds; a build id longer than 64 bytes
    for typ, field, fmt, val in ((3, 4, "<I", 0xFFFFFF), (4, 0, "<I", 0xFFFFFF), (4, 8 + 25, "<B", 200)):
        pos = [p for ty, _, p in ch if ty == typ][0]
        bad = bytearray(open(out, "rb").read())
        struct.pack_into(fmt, bad, pos + 12 + field, val)
        path = os.path.join(d, "bad%d-%d.atr" % (typ, field))
        open(path, "wb").write(bad)
        p = subprocess.run([t.ALLOCRR, "dump", "--stacks", path], capture_output=True, timeout=60)
        err = p.stderr.decode()
        t.expect(p.returncode == 1 and str(pos) in err and path in err and len(err.splitlines()) == 1,
                 "damaged chunk type %d at %d: exit %d, %r" % (typ, pos, p.returncode, err))


t.main(test)
