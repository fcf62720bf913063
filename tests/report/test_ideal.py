"""peak / ideal where it cannot be read: a trace that fits in pages the
replay engine already has resident (glibc's RSS grows by 0 B) and one whose
program left its blocks untouched (replayed with --touch none) get
peak_over_ideal null, fragmentation.touch, and a line saying why in the
terminal summary and on the page (headless Chromium, when installed) instead
of "0.000" or a ratio of untouched pages to live bytes; a check on it is
broken and says why, not taken for a misspelt metric."""
import json
import os
import sys

from report_common import expect, load_json, report, tmpdir, write

import arrtest

PROG = sys.argv[1]


def frag(doc, name):
    return next(a for a in doc["traces"][0]["allocators"] if a["allocator"] == name)["fragmentation"]


def test():
    d = tmpdir()
    tiny, untouched = os.path.join(d, "tiny.atr"), os.path.join(d, "untouched.atr")
    arrtest.record(tiny, [PROG, "tiny"])
    arrtest.record(untouched, [PROG, "untouched"])

    doc = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--json", "-a", "glibc", "-a", "builtin", tiny],
                                 text=True).stdout)
    for name in ("glibc", "builtin"):
        f = frag(doc, name)
        expect(f["ideal_rss"] == sum(40 + i for i in range(30)), "ideal RSS: the 30 blocks, %d" % f["ideal_rss"])
        expect(f["touch"] == "page", "touched replay: %s" % f["touch"])
        expect(f["peak_over_ideal"] is None, "%s: no ratio for 1.6 KiB (peak RSS %d): %r" % (
            name, f["peak_rss"], f["peak_over_ideal"]))
        expect(set(f["jw"].values()) == {None}, "%s: no Johnstone & Wilson ratios over RSS: %s" % (name, f["jw"]))
    text = arrtest.run([arrtest.ALLOCRR, "analyze", "-a", "glibc", tiny], text=True).stdout
    expect("no peak / ideal: glibc: too small a trace (1.6 KiB live at its peak)" in text,
           "the note:\n" + text[-1500:])
    expect(" 0.000" not in text, "no 0.000 ratio:\n" + text[-1500:])

    # a trace of 1 MiB, written: the ratio is kept
    touched = os.path.join(d, "touched.atr")
    arrtest.record(touched, [PROG, "touched"])
    doc = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--json", "-a", "glibc", touched], text=True).stdout)
    g = frag(doc, "glibc")
    expect(g["ideal_rss"] == 1 << 20 and g["touch"] == "page", "1 MiB touched: %d %s" % (g["ideal_rss"], g["touch"]))
    expect(isinstance(g["peak_over_ideal"], float) and g["peak_rss"] > 1 << 19 and
           abs(g["peak_over_ideal"] - g["peak_rss"] / g["ideal_rss"]) < 1e-9,
           "the ratio kept: %r (peak %d)" % (g["peak_over_ideal"], g["peak_rss"]))
    expect(all(isinstance(v, float) for v in g["jw"].values()), "J&W ratios kept: %s" % g["jw"])

    # diff: a null ratio against a number is "not measurable in A", not "only in B"
    p = arrtest.run([arrtest.ALLOCRR, "diff", "-q", "--json", "-a", "glibc", tiny, touched], text=True)
    rows = {(r["scope"], r["metric"]): r for r in json.loads(p.stdout)["rows"]}
    r = rows.get(("glibc", "peak / ideal"))
    expect(r and r["a"] is None and isinstance(r["b"], float) and r.get("not_measurable") == "a",
           "diff --json, peak / ideal: %s" % r)
    m = rows.get(("trace", "mean request"))
    expect(m and abs(m["a"] - sum(40 + i for i in range(30)) / 30) < 1e-9 and m["b"] == 64 << 10,
           "mean request: bytes over the 30 and 16 requests, not over calls with the frees: %s" % m)
    for args in ([], ["--all"]):
        out = arrtest.run([arrtest.ALLOCRR, "diff", "-q", *args, "-a", "glibc", tiny, touched], text=True).stdout
        line = [l for l in out.splitlines() if "peak / ideal" in l or "peak_over_ideal" in l]
        expect(len(line) == 1 and line[0].endswith("not measurable in A") and "only in" not in line[0],
               "diff %s: the ratio's line: %s\n%s" % (args, line, out))
    out = arrtest.run([arrtest.ALLOCRR, "diff", "-q", "-a", "glibc", touched, tiny], text=True).stdout
    expect("not measurable in B" in out, "B's null:\n" + out)

    p = arrtest.run([arrtest.ALLOCRR, "analyze", "--json", "-a", "glibc", untouched], text=True)
    expect("--touch none" in p.stderr, "the replay says it chose touch none: %s" % p.stderr)
    g = frag(json.loads(p.stdout), "glibc")
    expect(g["touch"] == "none", "untouched replay: %s" % g["touch"])
    expect(g["ideal_rss"] == 64 << 20, "ideal RSS 64 MiB: %d" % g["ideal_rss"])
    expect(g["peak_over_ideal"] is None, "no ratio of untouched pages: %r" % g["peak_over_ideal"])
    expect(set(g["jw"].values()) == {None}, "no J&W ratio of untouched pages: %s" % g["jw"])
    expect(all(isinstance(v, float) for v in g.get("jw_mapped", {"x": 0.0}).values()),
           "the mapped bytes' ratios kept: %s" % g.get("jw_mapped"))
    text = arrtest.run([arrtest.ALLOCRR, "analyze", "-a", "glibc", untouched], text=True).stdout
    expect("no peak / ideal: glibc replayed with touch none" in text and "64 MiB peak live" in text,
           "the note:\n" + text[-1500:])

    # the page says the same; a touched replay keeps its ideal line
    # a check on it cannot hold and says why: broken (exit 3), not a misspelt metric (exit 2)
    cfg = write(os.path.join(d, "r.yaml"), "traces: [%s, %s]\nallocators: [glibc]\n"
                "checks: [peak_over_ideal <= 1.5]\n" % (tiny, untouched))
    p = report(cfg, "-o", os.path.join(d, "out"), check=3)
    expect("has no value here (null: not measurable on this replay" in p.stderr and "did you mean" not in p.stderr,
           "the check's error: %s" % p.stderr[-800:])
    expect("FAIL  peak_over_ideal <= 1.5  [%s, glibc]  'peak_over_ideal' has no value here" % tiny in p.stdout,
           "the terminal's check line:\n" + p.stdout[-800:])
    doc = load_json(os.path.join(d, "out", "report.json"))
    expect([t["allocators"][0]["fragmentation"]["peak_over_ideal"] for t in doc["traces"]] == [None, None],
           "report.json: null ratios")
    expect([c["ok"] for c in doc["checks"]] == [False, False] and all("unknown_metric" not in c for c in doc["checks"]),
           "checks: %s" % doc["checks"])
    from test_html import browse, chromium
    exe = chromium()
    if not exe:
        print("chromium not installed: the page's notes not checked")
        return
    dom, console = browse(exe, os.path.join(d, "out", "report.html"), "--dump-dom", "--virtual-time-budget=10000")
    expect(not console, "console: %s" % console[:5])
    expect('data-ready="1"' in dom, "the page finished drawing")
    # '>' before the text: drawn into an element, not the page's script
    expect(">No peak/ideal: glibc: too small a trace (1.60 KiB live at its peak)" in dom, "the page's tiny note")
    expect(">No peak/ideal: glibc replayed with touch none" in dom, "the page's untouched note")
    expect(dom.count(">No ideal RSS line: the replays wrote no block") == 1, "no ideal line for the untouched trace")


if __name__ == "__main__":
    arrtest.main(test)
