"""The terminal summary reads on a terminal: a variant matrix's allocator
table (configs/allocator-matrix.yaml, names of fifty characters) comes in
blocks no wider than 120 columns, each column headed by its whole name
broken after its ':' and ','s, every variant and every figure row there.
The histograms of analyze show the empty buckets between two others, so a
gap reads as one: bucket after bucket doubles, counts as the JSON has them."""
import json
import re
import os
import shutil
import subprocess

from report_common import expect, tmpdir

import arrtest


def test():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    d = tmpdir()
    os.symlink(os.path.join(root, "traces"), os.path.join(d, "traces"))
    os.mkdir(os.path.join(d, "configs"))
    shutil.copy(os.path.join(root, "configs", "allocator-matrix.yaml"), os.path.join(d, "configs"))
    p = subprocess.run([arrtest.ALLOCRR, "report", "configs/allocator-matrix.yaml"], cwd=d, capture_output=True,
                       text=True, timeout=600)
    expect(p.returncode == 0, "allocator-matrix exited %d:\n%s" % (p.returncode, p.stderr[-2000:]))
    out = p.stdout
    lines = out.splitlines()
    first = next(i for i, l in enumerate(lines) if l.startswith("allocators ("))
    last = next(i for i, l in enumerate(lines) if l.startswith("checks:"))
    table = lines[first + 1:last]
    wide = [l for l in table if len(l) > 120]
    expect(not wide, "allocator table lines over 120 columns:\n" + "\n".join(wide))
    # blocks: each opens with heading lines, then the same figure rows
    blocks, cur = [], []
    for l in table:
        if not l.strip():
            blocks.append(cur)
            cur = []
        else:
            cur.append(l)
    blocks.append(cur)
    # the notes under the table (why peak / ideal is "-": this trace is 3.5 KiB) are no block of columns
    notes = [b for b in blocks if b and b[0].startswith("  no peak / ideal:")]
    expect(len(notes) == 1 and "every allocator: too small a trace" in notes[0][0], "the note: %s" % notes)
    blocks = [b for b in blocks if b and b not in notes]
    expect(len(blocks) >= 2, "eight variants of 50 characters need more than one block:\n" + "\n".join(table))
    start = lambda b: next(i for i, l in enumerate(b) if l.startswith("  wall time"))
    rows = lambda b: [l[2:].lstrip().split("  ")[0] for l in b[start(b):]]
    want_rows = rows(blocks[0])
    for b in ("wall time", "peak RSS", "external frag. @peak RSS"):
        expect(b in want_rows, "row %r in the allocator table:\n%s" % (b, "\n".join(blocks[0])))
    # every variant's name, put together again from its heading lines, column by column
    names = []
    for b in blocks:
        expect(rows(b) == want_rows, "every block has the same rows:\n%s" % "\n".join(b))
        head = b[:start(b)]
        width = max(len(l) for l in head)
        head = [l.ljust(width) for l in head]
        # columns: runs of non-blank characters in the union of the heading lines
        filled = [any(h[i] != " " for h in head) for i in range(width)]
        i = 0
        while i < width:
            if not filled[i]:
                i += 1
                continue
            j = i
            while j < width and filled[j]:
                j += 1
            names.append("".join(h[i:j].strip() for h in head))
            i = j
    want = ["glibc:mmap_threshold=%d,trim_threshold=%d" % (m, t) for m in (65536, 131072, 1048576)
            for t in (131072, 4194304)] + ["builtin:purge_delay=0", "builtin:purge_delay=1000"]
    expect(names == want, "the columns' names, in order: %r, want %r\n%s" % (names, want, "\n".join(table)))

    check_histograms(root)


def check_histograms(root):
    trace = os.path.join(root, "traces", "calls.atr")  # its sizes and lifetimes have gaps
    run = lambda *a: subprocess.run([arrtest.ALLOCRR, "analyze", "--trace-only", "--what", "sizes,lifetimes", *a,
                                     trace], capture_output=True, text=True, timeout=120)
    doc = json.loads(run("--json").stdout)["traces"][0]
    out = run().stdout.splitlines()
    start = next(i for i, l in enumerate(out) if l.startswith("sizes requested"))
    for col, key, unit in ((0, "sizes.log2", "B"), (1, "lifetimes.time_log2", "s")):
        buckets = doc
        for k in key.split("."):
            buckets = buckets[k]
        rows = []
        for l in out[start + 1:]:
            cells = re.findall(r">=\s+([\d.]+ \S+) [# ]{20} ([\d,]+)", l)
            if not cells:
                break
            if len(cells) > col:
                rows.append(cells[col])
        want = {}
        for b in buckets:
            want[b["lo"]] = b["count"]
        expect(len(rows) >= len(buckets), "%s: %d rows for %d buckets:\n%s" % (key, len(rows), len(buckets),
                                                                             "\n".join(out)))
        nonzero = sorted(b["lo"] for b in buckets if b["lo"] > 0)
        # from the first bucket above zero on, every bucket up to the last, with its count (0 when empty)
        expect(len([r for r in rows if r[1] == "0"]) == sum(
            1 for lo in range(64) if nonzero and nonzero[0] < (1 << lo) < nonzero[-1] and (1 << lo) not in want),
            "%s: the empty buckets between two others are shown:\n%s" % (key, "\n".join(out)))
        total = sum(int(r[1].replace(",", "")) for r in rows)
        expect(total == sum(want.values()), "%s: counts %d, want %d" % (key, total, sum(want.values())))

    # the top tables' sizes exact under 1 MiB: sqlite3's 4,104-byte requests are not "4.0 KiB" beside
    # its 4 KiB leak
    sq = os.path.join(root, "traces", "sqlite3.atr")
    doc = json.loads(arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", "--json", sq], text=True).stdout)
    text = arrtest.run([arrtest.ALLOCRR, "analyze", "--trace-only", sq], text=True).stdout.splitlines()
    top = text[text.index(next(l for l in text if l.startswith("top sizes"))) + 2:][:8]
    for row, want in zip(top, doc["traces"][0]["sizes"]["top"]):
        size = want["size"]
        shown = "{:,} B".format(size) if size < 1 << 20 else None
        expect(shown is None or " ".join(row.split()[:2]) == shown, "top size %d shown as %r" % (size, row))
    expect(any("4,104 B" in r for r in top) and not any("4.0 KiB" in r for r in top), "\n".join(top))


if __name__ == "__main__":
    arrtest.main(test)
