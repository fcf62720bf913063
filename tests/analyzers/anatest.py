"""Helpers for the analyzer tests: run `allocrr analyze --json`, and an
independent reference model of the trace-side figures computed in Python
from `allocrr dump --json`, so the C analyzers are checked against a second
implementation as well as against the programs' known answers."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t  # noqa: E402

BIN = os.path.join(t.BUILD, "tests", "bin")


def analyze(trace, *args):
    p = t.run([t.ALLOCRR, "analyze", "--json", "--trace-only", *args, trace])
    doc = json.loads(p.stdout)
    t.expect(doc["allocrr"] and len(doc["traces"]) == 1, "analyze: want one trace")
    return doc["traces"][0]


def record(name, *args, extra=()):
    out = os.path.join(t.tmpdir(), name + ".atr")
    t.record(out, [os.path.join(BIN, "an_" + name), *args], extra=extra)
    return out


def failed(e):
    if e["op"] == "posix_memalign":
        return e.get("err", 0) != 0
    return "err" in e


def nbytes(e, page=4096):
    size = e.get("size", 0)
    if e["op"] == "pvalloc":
        return max(page, (size + page - 1) // page * page)
    if e["op"] in ("calloc", "reallocarray"):
        n = e["nmemb"] * size
        return n if n < 2 ** 64 else 2 ** 64 - 1
    return size


def model(events, page=4096):
    """The figures the analyzers compute, from the dump (heaptrack's
    temporary definition, per thread)."""
    m = {"calls": 0, "failed": 0, "bytes": 0, "temporary": 0, "cross": {}, "peak": 0, "null_frees": 0}
    live = {}  # addr -> (size, tid, seq)
    seq = {}
    cur = 0
    for e in events:
        op = e["op"]
        if op not in t.CALLS:
            continue
        m["calls"] += 1
        f = failed(e)
        m["failed"] += f
        ptr = int(e.get("ptr", "0x0"), 16)
        ret = int(e.get("ret", "0x0"), 16)
        m["null_frees"] += op == "free" and not ptr
        if op in ("free", "realloc", "reallocarray") and ptr and (op == "free" or not f or nbytes(e, page) == 0):
            if ptr in live:
                size, tid, s = live.pop(ptr)
                cur -= size
                if op == "free" and seq[tid] == s:
                    m["temporary"] += 1
                if tid != e["tid"]:
                    k = (tid, e["tid"])
                    c, b = m["cross"].get(k, (0, 0))
                    m["cross"][k] = (c + 1, b + size)
        if op != "free" and not f and ret:
            size = nbytes(e, page)
            if ret in live:
                cur -= live[ret][0]
            seq[e["tid"]] = seq.get(e["tid"], 0) + 1
            live[ret] = (size, e["tid"], seq[e["tid"]])
            cur += size
            m["bytes"] += size
            m["peak"] = max(m["peak"], cur)
    m["live_bytes"] = sum(v[0] for v in live.values())
    m["live_blocks"] = len(live)
    m["live"] = live
    return m


def check_model(doc, events, what):
    """Every figure the model has must match the document exactly."""
    m = model(events, doc["trace"]["page_size"])
    s = doc["summary"]
    t.expect(s["calls"] == m["calls"], "%s: calls %d, model %d" % (what, s["calls"], m["calls"]))
    t.expect(s["failed"] == m["failed"], "%s: failed %d, model %d" % (what, s["failed"], m["failed"]))
    t.expect(s["null_frees"] == m["null_frees"], "%s: null_frees %d, model %d" % (
        what, s["null_frees"], m["null_frees"]))
    t.expect(s["bytes_requested"] == m["bytes"], "%s: bytes_requested %d, model %d" % (
        what, s["bytes_requested"], m["bytes"]))
    t.expect(doc["live"]["peak_bytes"] == m["peak"], "%s: peak %d, model %d" % (
        what, doc["live"]["peak_bytes"], m["peak"]))
    t.expect(doc["leaks"]["bytes"] == m["live_bytes"] and doc["leaks"]["blocks"] == m["live_blocks"],
             "%s: leaks %d/%d, model %d/%d" % (what, doc["leaks"]["bytes"], doc["leaks"]["blocks"],
                                                m["live_bytes"], m["live_blocks"]))
    tmp = doc["lifetimes"]["temporary"]["count"]
    t.expect(tmp == m["temporary"], "%s: temporary %d, model %d" % (what, tmp, m["temporary"]))
    cross = {(r["alloc_tid"], r["free_tid"]): (r["count"], r["bytes"]) for r in doc["threads"]["matrix"]}
    t.expect(cross == m["cross"], "%s: cross-thread matrix %s, model %s" % (what, cross, m["cross"]))
    return m


def churn(doc, lo):
    for r in doc["lifetimes"]["churn_by_size"]:
        if r["lo"] == lo:
            return r
    return {"allocs": 0, "freed": 0, "temporary": 0, "short_lived": 0}
