"""The replay table reads as a table: every figure ends where its
allocator's name ends (latency cells of five figures included), counts are
grouped in thousands, latencies in ns with u and m as analyze writes them;
info's counts grouped too, its live bytes at the end in units."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import arrtest  # noqa: E402
from arrtest import ALLOCRR, expect, tmpdir  # noqa: E402


def test():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    trace = os.path.join(root, "traces", "python3.atr")
    d = tmpdir()
    p = subprocess.run([ALLOCRR, "replay", "-q", "--runs", "2", "--zeroing", "--cache-dir", d, "-a", "glibc",
                        "-a", "builtin", trace], capture_output=True, text=True, timeout=300)
    expect(p.returncode == 0, "replay: exit %d\n%s" % (p.returncode, p.stderr))
    lines = p.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.split() == ["glibc", "builtin"])
    ends = [m.end() for m in re.finditer(r"\S+", lines[head])]
    rows = []
    for l in lines[head + 1:]:
        if not l.strip():
            break
        if not l.startswith(" ") and ("(" in l or len(l) < ends[0] - 5):  # a section's title
            continue
        rows.append(l)
    expect(len(rows) > 20, "the table has its rows:\n" + p.stdout)
    for l in rows:
        for e in ends:
            ok = len(l) >= e and l[e - 1] != " " and (len(l) == e or l[e] == " ")
            expect(ok, "a cell does not end under its allocator's name (column %d):\n%s\n%s" % (e, lines[head], l))
    calls = json.loads(arrtest.run([ALLOCRR, "info", "--json", trace]).stdout)["calls"]
    row = [l.split() for l in rows if l.startswith("calls ")]
    expect(row and row[0][1:] == ["{:,}".format(calls)] * 2, "calls in thousands, %d: %s" % (calls, row))
    lat = [l for l in rows if l.startswith("  malloc ")]
    expect(lat and all(re.fullmatch(r"(<?\d+|\d+\.\du|\d+\.\dm)(/(<?\d+|\d+\.\du|\d+\.\dm)){4}", c)
                       for c in lat[0].split()[1:]), "latency cells as analyze writes them: %s" % lat)
    expect("calls, 1 thread, 0 sync points" in p.stdout, "the heading's grammar:\n" + lines[0])

    # info: the counts as the JSON has them, grouped; bytes in units, as analyze writes them
    j = json.loads(arrtest.run([ALLOCRR, "info", "--json", trace]).stdout)
    txt = arrtest.run([ALLOCRR, "info", trace]).stdout.decode()
    for want in ("calls        {:,} ({:,} failed), {:,} thread{}".format(
                     j["calls"], j["failed"], j["threads"], "" if j["threads"] == 1 else "s"),
                 "events       {:,}\n".format(j["events"]),
                 "in {:,} blocks".format(j["peak_live_blocks"]),
                 "    malloc" + " " * 11 + "{:>12,}".format(j["ops"]["malloc"]),
                 "live at end  %s" % ("%.1f KiB" % (j["live_bytes_at_end"] / 1024)
                                      if j["live_bytes_at_end"] >= 1024 else "%d B" % j["live_bytes_at_end"])):
        expect(want in txt, "info: %r not in:\n%s" % (want, txt))

    # one count of events everywhere: info's, analyze's, and the family's (record's tree)
    a = json.loads(arrtest.run([ALLOCRR, "analyze", "--trace-only", "--json", trace]).stdout)
    f = json.loads(arrtest.run([ALLOCRR, "info", "--json", "--tree", trace]).stdout)
    fam = [m["events"] for m in f["traces"]] if "traces" in f else [f["events"]]
    expect(j["events"] == a["traces"][0]["trace"]["events"] == fam[0] and j["events"] > j["calls"],
           "events: info %d, analyze %d, family %s, calls %d"
           % (j["events"], a["traces"][0]["trace"]["events"], fam, j["calls"]))


if __name__ == "__main__":
    arrtest.main(test)
