#!/usr/bin/env python3
"""Golden documents: `allocrr analyze --json` on the bundled traces (traces/)
never changes unintentionally (compared parsed, not as bytes); each also
agrees with the reference model, and the text summary shows its figures."""
import json
import os

import anatest as a
from anatest import t

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "traces")


def diff(a_, b_, path=""):
    """The first path where two parsed documents differ, or None."""
    if type(a_) is not type(b_):
        return "%s: %r != %r" % (path, a_, b_)
    if isinstance(a_, dict):
        for k in list(a_) + [k for k in b_ if k not in a_]:
            if k not in a_ or k not in b_:
                return "%s.%s: only in %s" % (path, k, "got" if k in a_ else "golden")
            d = diff(a_[k], b_[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(a_, list):
        if len(a_) != len(b_):
            return "%s: %d items != %d" % (path, len(a_), len(b_))
        for i, (x, y) in enumerate(zip(a_, b_)):
            d = diff(x, y, "%s.%d" % (path, i))
            if d:
                return d
        return None
    if isinstance(a_, float):
        return None if abs(a_ - b_) <= 1e-9 * max(1.0, abs(b_)) else "%s: %r != %r" % (path, a_, b_)
    return None if a_ == b_ else "%s: %r != %r" % (path, a_, b_)


def count(n):
    return "{:,}".format(n)


def check_text(name, doc, text):
    """The one-screen summary holds the document's headline figures."""
    lines = text.splitlines()
    t.expect(len(lines) <= 70, "%s: text summary is %d lines" % (name, len(lines)))
    t.expect(lines[0].startswith("== ") and (name + ".atr") in lines[0], "%s: heading %r" % (name, lines[0]))
    want = ["calls        " + count(doc["summary"]["calls"]),
            "leaks        ",
            " in %s block" % count(doc["leaks"]["blocks"]),
            "temporary    %s allocation" % count(doc["lifetimes"]["temporary"]["count"]),
            # no calloc: said so, not "0 calls, 0 B: fresh 0 B, reused 0 B"
            "calloc       %s call" % count(doc["zeroing"]["calloc_calls"]) if doc["zeroing"]["calloc_calls"]
            else "calloc       none called",
            "cross-thread %s free" % count(doc["threads"]["cross_frees"]["count"]),
            "sizes requested (log2 buckets, count)", "lifetimes (log2 buckets, count)", "--json"]
    for op, n in doc["summary"]["ops"].items():
        if n and op in ("malloc", "calloc", "realloc", "free"):
            want.append("%s %s" % (op, count(n)))
    # free(NULL) said beside the frees (calls.atr has one)
    if doc["summary"]["null_frees"]:
        want.append("free %s (%s of NULL)" % (count(doc["summary"]["ops"]["free"]), count(doc["summary"]["null_frees"])))
    for w in want:
        t.expect(w in text, "%s: %r not in the text summary:\n%s" % (name, w, text))
    # one histogram line per log2 bucket, the empty ones between two others
    # included (above the first non-zero one), sizes and lifetimes side by side
    def with_gaps(buckets):
        out = []
        for i, b in enumerate(buckets):
            if i and buckets[i - 1]["lo"] > 0:
                g = buckets[i - 1]["hi"]
                while 0 < g < b["lo"]:
                    out.append(0)
                    g *= 2
            out.append(b["count"])
        return out
    bars = [l for l in lines if l.lstrip().startswith(">=")]
    t.expect(len(bars) == max(len(with_gaps(doc["sizes"]["log2"])), len(with_gaps(doc["lifetimes"]["time_log2"]))),
             "%s: %d histogram lines" % (name, len(bars)))
    sizes = [count(c) for c in with_gaps(doc["sizes"]["log2"])]
    t.expect(all((" %s " % s) in (l + " ") for s, l in zip(sizes, bars)),
             "%s: size bucket counts %s in\n%s" % (name, sizes, "\n".join(bars)))
    if doc["sizes"]["top"]:
        top = doc["sizes"]["top"][0]
        t.expect("top sizes" in text and count(top["count"]) in text, "%s: top size %s" % (name, top))


def main():
    for name in ("calls", "endings", "fork", "fork-child"):
        trace = os.path.join(TRACES, name + ".atr")
        doc = a.analyze(trace)
        t.expect(doc["trace"].pop("path").endswith(name + ".atr"), "%s: trace.path" % name)
        want = json.load(open(os.path.join(HERE, "golden", name + ".json")))
        d = diff(doc, want)
        t.expect(d is None, "%s: differs from golden/%s.json at %s" % (name, name, d))
        a.check_model(doc, t.dump(trace), name)
        text = t.run([t.ALLOCRR, "analyze", "--trace-only", trace]).stdout.decode()
        check_text(name, doc, text)
    # the known facts of calls.atr (rec_calls): every function, 5 failures
    doc = a.analyze(os.path.join(TRACES, "calls.atr"))
    f = doc["leaks"]["failed_calls"]
    t.expect(f["total"] == 5 and f["overflow"] == 2, "calls: failed calls %s" % f)
    t.expect(doc["leaks"]["bytes"] == 0, "calls: rec_calls frees everything")


main()
