"""Short runs' recorded RSS (the bundled traces): sqlite3.atr holds one RSS
sample, python3.atr three over 20 ms. One sample has no growth (null, not
0 B/s), and its chart says "One RSS sample: N" and draws the point, where
it was a flat empty axis; a run of under a second shows the change and the
time ("+11.4 MiB in 20.1 ms"), not a rate extrapolated to a second (the
page's tile read 570 MiB/s for python3). Terminal, JSON and page (headless
Chromium, when installed). And a replay's RSS curve reaches its peak: the
leaker's 4 MiB block, allocated and freed between two of 200 samples, was in
glibc's peak_rss but on no sample (the curve topped at 36 KiB); the measure
run's samples are each their interval's peak (VmHWM), which places it."""
import json
import os
import sys

from report_common import expect, report, tmpdir, write

import arrtest

LEAKER = sys.argv[1]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "traces")
SQ, PY = os.path.join(ROOT, "sqlite3.atr"), os.path.join(ROOT, "python3.atr")


def human(b):
    u = 0
    while b >= 1024 and u < 4:
        b, u = b / 1024, u + 1
    return b, ["B", "KiB", "MiB", "GiB", "TiB"][u]


def test():
    recs = {}
    for tr in (SQ, PY):
        doc = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", "--json", tr], text=True).stdout)
        recs[tr] = doc["traces"][0]["rss"]["recorded"]
    sq, py = recs[SQ], recs[PY]
    expect(sq["samples"] == 1 and sq["growth_bytes_per_s"] is None and sq["net_growth_bytes_per_s"] is None,
           "one sample, no growth: %s" % {k: v for k, v in sq.items() if k != "timeline"})
    expect(py["samples"] == 3 and 1e7 < py["span_ns"] < 1e9 and isinstance(py["growth_bytes_per_s"], float),
           "python3: three samples within a second: %s" % {k: v for k, v in py.items() if k != "timeline"})

    text = arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", SQ], text=True).stdout
    line = [l for l in text.splitlines() if l.startswith("RSS ")]
    expect(line and line[0].endswith(", one sample") and "/s" not in line[0], "sqlite3's RSS line: %s" % line)
    text = arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", PY], text=True).stdout
    line = [l for l in text.splitlines() if l.startswith("RSS ")]
    v, u = human(py["final"] - py["first"])
    want = "+%.1f %s in %.1f ms, 3 samples" % (v, u, py["span_ns"] / 1e6)
    expect(line and line[0].endswith(want) and "/s" not in line[0], "python3's RSS line: %s, want %s" % (line, want))

    # RSS the heap does not explain, less what the process held before its heap
    # counted (the first sample: python3's interpreter, 2.9 MiB of it)
    expect(0 < py["baseline"] <= py["first"] and py["unexplained_growth_peak"] == py["unexplained_peak"] - py["baseline"]
           and 0 < py["unexplained_growth_peak"] < py["unexplained_peak"], "python3's baseline: %s" %
           {k: v for k, v in py.items() if k != "timeline"})
    line = [l.strip() for l in text.splitlines() if "does not explain" in l]
    v, u = human(py["unexplained_growth_peak"])
    expect(line and ("(%.1f %s above the first sample's " % (v, u)) in line[0], "the text's unexplained RSS: %s" % line)

    # the recorded true peak: the leaker's 4 MiB block, written and freed within a
    # millisecond, is on no sample (they read about 2 MiB), but in the kernel's
    # high-water mark (rss_peak), which a replay's choice of --touch reads: without it
    # the replay took "touched little of what it allocated" and ran --touch none.
    # The leaker sleeps 30 ms first, so there is a first sample before the churn; one
    # sample a second leaves the spike between the first and the last whatever the
    # machine's speed (a sanitizer build's memset is slow enough for a 10 ms sample).
    d = tmpdir()
    lk = os.path.join(d, "leak.atr")
    arrtest.record(lk, [LEAKER, "2", "30"], ["--rss-interval", "1000"])
    ev = arrtest.dump(lk)
    samples = [e["rss"] for e in ev if e["op"] == "rss"]
    peaks = [e["rss"] for e in ev if e["op"] == "rss_peak"]
    rec = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", "--json", lk], text=True).stdout
                     )["traces"][0]["rss"]["recorded"]
    MiB = 1 << 20
    # the kernel folds its per-CPU page counts lazily: its mark may be a few dozen pages short
    slack = 64 * 4096
    expect(len(samples) >= 2 and len(peaks) == 1 and rec["true_peak"] == peaks[0],
           "samples %s, rss_peak %s, true_peak %s" % (samples, peaks, rec["true_peak"]))
    expect(rec["true_peak"] >= samples[0] + 4 * MiB - slack and rec["peak"] + 3 * MiB < rec["true_peak"],
           "true peak %d: 4 MiB above the first sample %d, the samples (peak %d) miss it"
           % (rec["true_peak"], samples[0], rec["peak"]))
    text = arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", lk], text=True).stdout
    line = [l.strip() for l in text.splitlines() if "true peak" in l]
    # the text's bytes drop the decimal of a whole number ("6 MiB"; VmHWM is in KiB, so it can be)
    tp = rec["true_peak"] / MiB
    tp = ("%.0f" if tp == int(tp) else "%.1f") % tp
    expect(line and line[0].startswith("true peak %s MiB (the kernel's high-water mark), " % tp)
           and line[0].endswith(" above the sampled peak"), "the text's true peak: %s" % line)
    # `info` says the same peak, the kernel's, and the samples' beside it
    info = json.loads(arrtest.run([arrtest.ALLOCRR, "info", "--json", lk], text=True).stdout)
    expect(info["true_peak_rss"] == rec["true_peak"] and info["peak_rss"] == rec["peak"],
           "info --json: true_peak_rss %s, peak_rss %s" % (info.get("true_peak_rss"), info.get("peak_rss")))
    text = arrtest.run([arrtest.ALLOCRR, "info", lk], text=True).stdout
    line = [l.strip() for l in text.splitlines() if l.strip().startswith("peak RSS")]
    expect(line and line[0].startswith("peak RSS     %.1f" % (rec["true_peak"] / MiB))
           and "(the kernel's high-water mark; highest sample " in line[0], "info's peak RSS line: %s" % line)
    arrtest.run([arrtest.ALLOCRR, "record", "-q", "--rss-interval", "0", "-o", lk + "0", "--", LEAKER, "2"])
    rec0 = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", "--json", lk + "0"], text=True).stdout
                      )["traces"][0]["rss"]["recorded"]
    expect(rec0["true_peak"] is None and rec0["samples"] == 0, "--rss-interval 0: %s" % rec0)
    info0 = json.loads(arrtest.run([arrtest.ALLOCRR, "info", "--json", lk + "0"], text=True).stdout)
    expect(info0["true_peak_rss"] is None and info0["peak_rss"] == 0, "info --json, --rss-interval 0: %s" % info0)

    # the replay's curve and its peak
    cfg = write(os.path.join(d, "lk.yaml"), "traces: [%s]\nallocators: [glibc]\nreplay: {zeroing: false, samples: 200}\n"
                "output: {dir: %s/out-lk, html: false, csv: false}\n" % (lk, d))
    report(cfg, "-q", check=0)
    g = json.load(open(os.path.join(d, "out-lk", "report.json")))["traces"][0]["allocators"][0]
    expect(g["fragmentation"]["touch"] != "none", "the replay touches: %s" % g["fragmentation"]["touch"])
    peak, tl = g["fragmentation"]["peak_rss"], g["rss"]["timeline"]
    # the kernel's RSS counters lag by up to 64 pages a thread (the same slack as above): the 4 MiB
    # block reads 3.77-4.2 MB above the baseline; without it the curve tops at tens of KiB
    expect(peak >= 3.5 * MiB and max(tl["rss"]) == peak, "glibc's curve reaches its peak %d: max %d, %d points"
           % (peak, max(tl["rss"]), len(tl["rss"])))
    at = g["rss"].get("peak_between_samples")
    expect(at is not None and 3900 < at <= g["calls"], "where: after the churn, at call %s of %d" % (at, g["calls"]))

    from test_html import browse, chromium
    exe = chromium()
    if not exe:
        print("chromium not installed: the page not checked")
        return
    cfg = write(os.path.join(d, "r.yaml"), "traces: [%s, %s]\noutput: {dir: %s/out, csv: false}\n" % (SQ, PY, d))
    report(cfg, "-q", check=0)
    dom, console = browse(exe, os.path.join(d, "out", "report.html"), "--dump-dom", "--virtual-time-budget=10000")
    expect(not console, "console: %s" % console[:5])
    expect('data-ready="1"' in dom, "the page finished drawing")
    v, u = human(sq["rss"] if "rss" in sq else sq["peak"])
    want = ">One RSS sample: %.2f %s at " % (v, u)
    expect(dom.count(want) == 1, "the one-sample note, %r, once:\n%s" % (want, dom[dom.find("Recorded run"):][:1500]))
    expect('"v">one sample</div><div class="k">RSS growth<' in dom, "sqlite3's RSS tile says one sample")
    expect(dom.count(">RSS change in 20.") == 1 and dom.count(">RSS growth<") == 1,
           "python3's tile: the change in 20 ms")
    expect("B/s<" not in dom, "no RSS rate on either tile")
    # sqlite3 calls no calloc: said so, not a table of zeros; python3 has its table
    expect(dom.count(">calloc: none called.<") == 1 and dom.count(">  fresh memory<") + dom.count(">fresh memory<") >= 1,
           "zeroing cards: %s" % dom[dom.find("Zeroing"):][:600])
    expect(">true peak RSS<" not in dom, "no true peak tile for traces without one")
    # lifetimes under the stamps' resolution are said to be so, not read as 0 ns
    expect(">0ns–1ns: 42,678 blocks freed under the same timestamp as their allocation" in dom,
           "python3's lifetimes note")


if __name__ == "__main__":
    arrtest.main(test)
