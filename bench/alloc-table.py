#!/usr/bin/env python3
"""alloc-table.py REPORT.JSON [--best]: allocators side by side, from report.json.

One Markdown table row per trace x allocator of an `allocrr report` run:
replay wall time, median and min-max of the report's runs, and its ratio to
glibc's; peak RSS and its ratio to glibc's; fragmentation at the peak
(RSS / live bytes - 1 at the peak of live bytes, `fragmentation.jw.at_peak_live`); what clearing
calloc's blocks cost (`zeroing.zeroing_cost_ns`: as recorded minus calloc
replayed as malloc) and what calloc saved against malloc + memset
(`zeroing.calloc_saves_ns`), "≈0 (x)" where the two replays' min–max ranges
overlap (a difference inside the noise of the runs). With --best, a line per trace naming the
allocator with the lowest peak RSS and its speed against glibc.
Used by `make demo` (scripts/demo.sh) and `make bench` (bench/bench-allocators.sh).
"""
import json
import sys


def ms(ns):
    return "-" if ns is None else (f"{ns / 1e6:.1f}" if abs(ns) >= 1e5 else f"{ns / 1e6:.3f}")


def diff_ms(z, a, b, key):
    """z[key] (median of a minus median of b) in ms, as "≈0 (x)" when the
    runs' min–max ranges of a and b overlap: a difference inside the noise."""
    d = z.get(key)
    if d is None:
        return "-"
    if z.get("calloc_calls") == 0:
        return "no calloc"
    lo_a, hi_a = z.get(a + "_ns_min", z.get(a + "_ns")), z.get(a + "_ns_max", z.get(a + "_ns"))
    lo_b, hi_b = z.get(b + "_ns_min", z.get(b + "_ns")), z.get(b + "_ns_max", z.get(b + "_ns"))
    if None not in (lo_a, hi_a, lo_b, hi_b) and lo_a <= hi_b and lo_b <= hi_a:
        return f"≈0 ({ms(d)})"
    return ms(d)


def mib(b):
    return "-" if b is None else f"{b / 2**20:.1f}"


def ratio(a, b):
    return f"×{a / b:.2f}" if a is not None and b else "-"


def main(argv):
    best = "--best" in argv
    paths = [a for a in argv if not a.startswith("--")]
    doc = json.load(open(paths[0]))
    print("| trace | calls | allocator | time ms (min–max) | × glibc | peak RSS MiB | × glibc "
          "| fragmentation at peak live | zeroing cost ms | calloc saves ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for t in doc["traces"]:
        name = t["trace"]["path"]
        calls = t.get("summary", {}).get("calls")
        al = t.get("allocators", [])
        g = next((a for a in al if a["allocator"] == "glibc"), None)
        gt = g["time"]["wall_ns"] if g else None
        gr = g["fragmentation"]["peak_rss"] if g else None
        for a in al:
            if a.get("skipped") or "time" not in a:
                continue
            tm, fr, z = a["time"], a["fragmentation"], a.get("zeroing", {})
            jw = fr.get("jw", {}).get("at_peak_live")
            rng = (f"{ms(tm['wall_ns'])} ({ms(tm.get('wall_ns_min', tm['wall_ns']))}–"
                   f"{ms(tm.get('wall_ns_max', tm['wall_ns']))})")
            print(f"| {name} | {calls:,} | {a['allocator']} | {rng} | {ratio(tm['wall_ns'], gt)} "
                  f"| {mib(fr['peak_rss'])} | {ratio(fr['peak_rss'], gr)} "
                  f"| {'-' if jw is None or jw < 0 else f'{jw:.1%}'} "
                  f"| {diff_ms(z, 'as_recorded', 'calloc_as_malloc', 'zeroing_cost_ns')} "
                  f"| {diff_ms(z, 'calloc_as_malloc_memset', 'as_recorded', 'calloc_saves_ns')} |")
        done = [a for a in al if "fragmentation" in a and not a.get("skipped")]
        if best and done:
            b = min(done, key=lambda a: (a["fragmentation"]["peak_rss"], a["time"]["wall_ns"]))
            f = min(done, key=lambda a: a["time"]["wall_ns"])
            low = b["fragmentation"]["peak_rss"]
            ties = [a["allocator"] for a in done
                    if a is not b and a["fragmentation"]["peak_rss"] <= low * 1.01]
            notes.append(f"- {name}: lowest peak RSS **{b['allocator']}** ({mib(low)} MiB, "
                         f"{ratio(low, gr)} glibc's) at {ratio(b['time']['wall_ns'], gt)} glibc's time"
                         + (f" (within 1 %: {', '.join(ties)})" if ties else "")
                         + f"; fastest {f['allocator']} ({ratio(f['time']['wall_ns'], gt)}, "
                         f"{mib(f['fragmentation']['peak_rss'])} MiB)")
    if notes:
        print()
        print("\n".join(notes))
    broken = [c for c in doc.get("checks", []) if not c.get("ok")]
    if broken:
        print()
        for c in broken:
            print(f"- check broken: `{c['check']}` for {c['trace']} into {c.get('allocator')}: "
                  f"value {c.get('value')}, limit {c.get('limit')}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
