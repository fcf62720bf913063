"""Checks gate a report: passing checks exit 0, a broken one exits 3 and
names the check, its value and its limit, one naming no metric exits 2 at
its line:column with the nearest metric, and report.json records each
evaluation. Per-allocator checks are evaluated per allocator, and a bare
allocator name stands for that allocator's value of the same metric."""
import os
import sys

from report_common import expect, load_json, record_leaker, report, tmpdir, write

import arrtest


def test():
    leaker = sys.argv[1]
    d = tmpdir()
    clean = record_leaker(leaker, d, 0)
    leaky = record_leaker(leaker, d, 5)

    # trace-side checks: the clean run passes, the leaky one breaks
    cfg = write(os.path.join(d, "leaks.yaml"), """\
traces: [%s]
analyses: {what: [summary, leaks, live]}
checks:
  - leaks.bytes == 0
  - leaks.blocks <= 0 and summary.calls > 1000
output: {dir: %s/out-clean, html: false}
""" % (clean, d))
    p = report(cfg, "-q", check=0)
    doc = load_json(os.path.join(d, "out-clean", "report.json"))
    checks = doc["checks"]
    expect(len(checks) == 2 and all(c["ok"] for c in checks), "clean run: %s" % checks)
    expect(checks[0]["value"] == 0 and checks[0]["limit"] == 0 and checks[0]["allocator"] is None,
           "clean run entry: %s" % checks[0])

    cfg = write(os.path.join(d, "leaky.yaml"), """\
traces: [%s]
analyses: {what: [summary, leaks]}
checks:
  - leaks.bytes == 0
  - summary.calls > 1000
  - leaks.bytes <= 1100.5
output: {dir: %s/out-leaky, html: false, csv: false}
""" % (leaky, d))
    p = report(cfg, "-q", check=3)
    expect("check 'leaks.bytes == 0' broken" in p.stderr, "names the check:\n" + p.stderr)
    expect("value 4.9 KiB (5,000), limit 0" in p.stderr, "names value (in units, and exact) and limit:\n" + p.stderr)
    # a limit that is no whole number of bytes (1.1 * glibc) in the same units as the value
    expect("value 4.9 KiB (5,000), limit 1.1 KiB (1,100)" in p.stderr, "limit in units:\n" + p.stderr)
    expect("summary.calls > 1000' broken" not in p.stderr, "only the broken check:\n" + p.stderr)
    doc = load_json(os.path.join(d, "out-leaky", "report.json"))
    c0 = doc["checks"][0]
    expect(not c0["ok"] and c0["value"] == 5000 and c0["trace"] == leaky, "leaky entry: %s" % c0)
    expect(doc["checks"][1]["ok"], "calls check passes: %s" % doc["checks"][1])

    # per-allocator checks against glibc
    cfg = write(os.path.join(d, "alloc.yaml"), """\
traces: [%s]
allocators: [glibc, builtin]
replay: {zeroing: false}
analyses: {what: [summary]}
checks:
  - peak_rss <= 1000 * glibc
  - fragmentation.peak_rss < 4096
output: {dir: %s/out-alloc, html: false, csv: false}
""" % (clean, d))
    p = report(cfg, "-q", check=3)
    doc = load_json(os.path.join(d, "out-alloc", "report.json"))
    by = {(c["check"], c["allocator"]): c for c in doc["checks"]}
    # a check that names glibc skips glibc's own row (glibc against itself says nothing)
    expect(len(doc["checks"]) == 3 and ("peak_rss <= 1000 * glibc", "glibc") not in by,
           "two checks x two allocators, less glibc against itself: %s" % doc["checks"])
    gpeak = doc["traces"][0]["allocators"][0]["fragmentation"]["peak_rss"]
    b = by[("peak_rss <= 1000 * glibc", "builtin")]
    expect(b["ok"], "1000x glibc passes: %s" % b)
    expect(abs(b["limit"] - 1000 * gpeak) < 1e-6 * b["limit"], "limit is 1000 x glibc's peak %d: %s" % (gpeak, b))
    peak = doc["traces"][0]["allocators"][1]["fragmentation"]["peak_rss"]
    expect(b["value"] == peak, "value is builtin's peak_rss %d: %s" % (peak, b))
    # the 4 MiB block is touched: no allocator stays under 4 KiB
    for a in ("glibc", "builtin"):
        c = by[("fragmentation.peak_rss < 4096", a)]
        expect(not c["ok"], "peak_rss < 4096 must break for %s: %s" % (a, c))
        expect(("check 'fragmentation.peak_rss < 4096' broken for '%s' into '%s'" % (clean, a)) in p.stderr,
               "stderr names trace and allocator:\n" + p.stderr)

    # the same check with glibc alone: no row is left to check, and a gate that
    # checked nothing is broken (exit 3) with the reason, not passed in silence
    cfg = write(os.path.join(d, "alone.yaml"), """\
traces: [%s]
allocators: [glibc]
replay: {zeroing: false}
analyses: {what: [summary]}
checks: [peak_rss <= 1000 * glibc]
output: {dir: %s/out-alone, html: false, csv: false}
""" % (clean, d))
    p = report(cfg, "-q", check=3)
    doc = load_json(os.path.join(d, "out-alone", "report.json"))
    c = doc["checks"]
    expect(len(c) == 1 and not c[0]["ok"] and c[0]["allocator"] is None and "the only one replayed" in c[0]["error"],
           "glibc alone: one broken entry saying why: %s" % c)
    expect("check 'peak_rss <= 1000 * glibc' broken for '%s': it compares each allocator with 'glibc'" % clean
           in p.stderr, "stderr says nothing was checked:\n" + p.stderr)

    # a metric the report does not have (its analysis not run, or misspelt)
    # fails closed, as the config's mistake: exit 2 at the check's
    # line:column, with the nearest metric; the report is still written
    cfg = write(os.path.join(d, "missing.yaml"), """\
traces: [%s]
analyses: {what: [summary, leaks]}
checks:
  - summary.calls > 1000
  - lifetimes.temporaries >= 0
  - leaks.byte == 0
output: {dir: %s/out-missing, html: false, csv: false}
""" % (clean, d))
    p = report(cfg, "-q", check=2)
    expect(("%s:5:5: check 'lifetimes.temporaries >= 0': no metric 'lifetimes.temporaries'" % cfg) in p.stderr,
           "missing metric named at its line:column:\n" + p.stderr)
    expect(("%s:6:5: check 'leaks.byte == 0': no metric 'leaks.byte' in the report; did you mean 'leaks.bytes'?"
            % cfg) in p.stderr, "misspelt metric and its suggestion:\n" + p.stderr)
    expect("broken" not in p.stderr, "a config mistake is not a broken check:\n" + p.stderr)
    doc = load_json(os.path.join(d, "out-missing", "report.json"))
    expect([c["ok"] for c in doc["checks"]] == [True, False, False]
           and doc["checks"][2].get("did_you_mean") == "leaks.bytes", "entries: %s" % doc["checks"])

    # a misspelt allocator name is suggested as one, at its own column (in a flow list, quoted or not)
    line = ('checks: [peak_rss <= 1.1 * glibcc, "fragmentation.peak_rss <= 2 * bultin", '
            'peak_rs <= 1.1 * glibc]')
    cfg = write(os.path.join(d, "alloc-typo.yaml"), """\
traces: [%s]
allocators: [glibc, builtin]
replay: {zeroing: false, runs: 1}
%s
output: {dir: %s/out-typo, html: false, csv: false}
""" % (clean, line, d))
    p = report(cfg, "-q", check=2)
    for name, want in (("glibcc", "or allocator 'glibcc' in the report; did you mean the allocator 'glibc'?"),
                       ("bultin", "or allocator 'bultin' in the report; did you mean the allocator 'builtin'?"),
                       ("peak_rs ", "'peak_rs' in the report; did you mean 'peak_rss'?")):
        at = "%s:4:%d: check '" % (cfg, line.index(name) + 1)
        got = [l for l in p.stderr.splitlines() if l.startswith("allocrr: " + at)]
        expect(len(got) == 1 and got[0].endswith("no metric " + want),
               "%s: want %s...%s, got:\n%s" % (name, at, want, p.stderr))
    doc = load_json(os.path.join(d, "out-typo", "report.json"))
    expect(doc["checks"][0].get("did_you_mean_allocator") == "glibc" and "did_you_mean" not in doc["checks"][0],
           "report.json: %s" % doc["checks"][0])

    # gating on call sites (docs/report-config.md): the worst leaking site of a recording with stacks
    stacked = os.path.join(d, "stacked.atr")
    arrtest.record(stacked, [leaker, "10"], extra=["--stacks"])
    cfg = write(os.path.join(d, "sites.yaml"), """\
traces: [%s]
analyses: {what: [summary, leaks, sites]}
checks:
  - sites.by_leaked.0.leaked_bytes < 16KiB
  - sites.by_leaked.0.leaked_bytes < 8KiB
output: {dir: %s/out-sites, html: false, csv: false}
""" % (stacked, d))
    p = report(cfg, "-q", check=3)
    doc = load_json(os.path.join(d, "out-sites", "report.json"))
    expect([(c["ok"], c["value"]) for c in doc["checks"]] == [(True, 10000), (False, 10000)],
           "site checks: %s" % doc["checks"])
    expect("sites.by_leaked.0.leaked_bytes < 8KiB" in p.stderr, "the broken site check named:\n" + p.stderr)


if __name__ == "__main__":
    arrtest.main(test)
