"""allocrr diff: two recordings of the same program run with two arguments
that leak different amounts (2 and 10 blocks of 1000 bytes) differ by
exactly that, and so does the site of the leak when they were recorded with
stacks; two report.json files compare per allocator; a trace against
itself has no differences; colour only on a terminal."""
import json
import os
import sys

from report_common import expect, record_leaker, report, tmpdir, write

import arrtest


def rows_of(doc):
    return {(r["scope"], r["metric"]): r for r in doc["rows"]}


def test():
    leaker = sys.argv[1]
    d = tmpdir()
    a = record_leaker(leaker, d, 2)
    b = record_leaker(leaker, d, 10)
    p = arrtest.run([arrtest.ALLOCRR, "diff", "--json", a, b])
    doc = json.loads(p.stdout)
    r = rows_of(doc)
    lb, lk, calls = r[("trace", "leaked bytes")], r[("trace", "leaked blocks")], r[("trace", "calls")]
    expect(lb["a"] == 2000 and lb["b"] == 10000 and lb["delta"] == 8000, "leaked bytes: %s" % lb)
    expect(abs(lb["relative"] - 4.0) < 1e-9, "relative change 4.0: %s" % lb)
    expect(lk["delta"] == 8 and calls["delta"] == 8, "blocks and calls +8: %s %s" % (lk, calls))
    pk = r[("trace", "peak live bytes")]
    expect(pk["delta"] == 0, "the 4 MiB spike is the peak in both: %s" % pk)
    expect(doc["changed"] >= 3, "changed rows counted")

    p = arrtest.run([arrtest.ALLOCRR, "diff", a, b])
    out = p.stdout.decode()
    expect("leaked bytes" in out and "(+400.0%)" in out, "text shows the relative change:\n" + out)
    expect("\033[" not in out, "no colour when stdout is not a terminal")

    # counts grouped in thousands, as analyze prints them (bundled traces of 32,003 and 280,254 calls)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "traces")
    sq, py = os.path.join(root, "sqlite3.atr"), os.path.join(root, "python3.atr")
    n = [json.loads(arrtest.run([arrtest.ALLOCRR, "info", "--json", t]).stdout)["calls"] for t in (sq, py)]
    out = arrtest.run([arrtest.ALLOCRR, "diff", sq, py]).stdout.decode()
    row = [l.split() for l in out.splitlines() if l.split()[:1] == ["calls"]]
    expect(row and row[0][1:4] == ["{:,}".format(n[0]), "{:,}".format(n[1]), "+{:,}".format(n[1] - n[0])],
           "calls in thousands: %s, want %s\n%s" % (row, n, out))

    # sizes compare exact (4,096 B against 4,104 B, not 4.0 KiB against 4.0 KiB); with --all
    # a figure null in A is "not measurable in A", not "only in B"
    doc = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", "--json", sq]).stdout)
    ja, jb = os.path.join(d, "sa.json"), os.path.join(d, "sb.json")
    doc["traces"][0]["sizes"]["top"][0]["size"] = 4096
    doc["traces"][0]["live"]["peak_blocks"] = None
    json.dump(doc, open(ja, "w"))
    doc["traces"][0]["sizes"]["top"][0]["size"] = 4104
    doc["traces"][0]["live"]["peak_blocks"] = 412
    json.dump(doc, open(jb, "w"))
    out = arrtest.run([arrtest.ALLOCRR, "diff", ja, jb]).stdout.decode()
    row = [l for l in out.splitlines() if "most frequent size" in l]
    expect(row and row[0].split()[3:] == ["4,096", "B", "4,104", "B", "+8", "B", "(+0.2%)"], "exact sizes: %s" % row)
    out = arrtest.run([arrtest.ALLOCRR, "diff", "--all", ja, jb]).stdout.decode()
    row = [l for l in out.splitlines() if "sizes.top.0.size" in l]
    expect(row and row[0].split()[1:] == ["4,096", "B", "4,104", "B", "+8", "B", "(+0.2%)"], "--all, exact: %s" % row)
    row = [l for l in out.splitlines() if "live.peak_blocks" in l]
    expect(row and row[0].endswith("not measurable in A"), "--all, null in A: %s\n%s" % (row, out))

    p = arrtest.run([arrtest.ALLOCRR, "diff", a, a])
    expect("no differences" in p.stdout.decode(), "a trace against itself:\n" + p.stdout.decode())

    # two reports, per allocator
    outs = []
    for tr in (a, b):
        name = os.path.basename(tr)
        cfg = write(os.path.join(d, name + ".yaml"), """\
traces: [%s]
allocators: [glibc]
replay: {zeroing: false}
output: {dir: %s/out-%s, html: false, csv: false}
""" % (tr, d, name))
        report(cfg, "-q", check=0)
        outs.append(os.path.join(d, "out-" + name, "report.json"))
    p = arrtest.run([arrtest.ALLOCRR, "diff", "--json", *outs])
    r = rows_of(json.loads(p.stdout))
    expect(("glibc", "peak RSS") in r, "per-allocator peak RSS compared: %s" % sorted(r))
    expect(r[("trace", "leaked bytes")]["delta"] == 8000, "reports: leaked bytes +8000")

    p = arrtest.run([arrtest.ALLOCRR, "diff", "--all", *outs])
    expect("leaks.bytes" in p.stdout.decode(), "--all lists every differing metric")

    bad = write(os.path.join(d, "bad.json"), '{"traces": [')
    p = arrtest.run([arrtest.ALLOCRR, "diff", bad, a], check=False)
    expect(p.returncode == 1 and "offset" in p.stderr.decode(), "bad JSON: exit 1 with the offset: %s" % p.stderr)
    p = arrtest.run([arrtest.ALLOCRR, "diff", a], check=False)
    expect(p.returncode == 2, "one input: usage error")

    # recorded with stacks: the site of the leak is the one that changed, by exactly the 8 blocks;
    # the churn's and the spike's sites are the same on both sides and not shown
    sa, sb = os.path.join(d, "s2.atr"), os.path.join(d, "s10.atr")
    arrtest.record(sa, [leaker, "2"], extra=["--stacks"])
    arrtest.record(sb, [leaker, "10"], extra=["--stacks"])
    r = rows_of(json.loads(arrtest.run([arrtest.ALLOCRR, "diff", "--json", sa, sb]).stdout))
    sites = sorted({k[0] for k in r if k[0].startswith("site ")})
    # main's malloc(1000), named by file:line with debug info, else by module+offset (leaker is built without)
    expect(len(sites) == 1 and sites[0].startswith("site main "), "sites that changed: %s" % sites)
    lk, calls, at = (r.get((sites[0], m)) for m in ("leaked bytes", "calls", "live at the peak"))
    expect(lk and lk["a"] == 2000 and lk["b"] == 10000 and calls["delta"] == 8 and at is None,
           "the leak's site: %s" % {k: v for k, v in r.items() if k[0].startswith("site")})
    out = arrtest.run([arrtest.ALLOCRR, "diff", sa, sb]).stdout.decode()
    expect("call sites that changed most\n %s\n  leaked bytes " % sites[0][5:] in out, "diff text:\n" + out)
    out = arrtest.run([arrtest.ALLOCRR, "diff", a, b]).stdout.decode()
    expect("call sites" not in out, "traces without stacks have no sites rows:\n" + out)


if __name__ == "__main__":
    arrtest.main(test)
