"""The page of a trace whose memory goes through a wrapper and a deep
recursion (tests/analyzers/callers.c), in headless Chromium: the site table
names xmalloc's callers "· via xmalloc", and the flame graph draws descend's
150-call recursion as one frame, its tooltip saying how deep it went, and
ping <-> pong's 12 rounds as one round, its tooltip naming the cycle; the
graph is a few rows tall, not 66. Skips (77) without chromium."""
import os
import sys

from report_common import expect, report, tmpdir, write

import arrtest
from test_html import DevTools, chromium, flame_state

PROG = sys.argv[1]
ROW = 18


def test():
    exe = chromium()
    if not exe:
        print("skip: chromium not installed (apt-get install chromium)")
        sys.exit(77)
    d = tmpdir()
    tr = os.path.join(d, "callers.atr")
    arrtest.record(tr, [PROG], extra=["--stacks"])
    cfg = write(os.path.join(d, "c.yaml"), "traces: [%s]\noutput: {dir: %s/out}\n" % (tr, d))
    report(cfg, "-q", check=0)
    dt = DevTools(exe, "--window-size=1300,3000")
    try:
        dt.open("file://" + os.path.join(d, "out", "report.html"))
        text = dt.eval("document.body.innerText")
        for want in ("load_c · via xmalloc", "load_a · via xmalloc", "parse_y · via my_alloc"):
            expect(want in text, "page lacks %r" % want)
        st = flame_state(dt)
        expect(st and st["what"] == "allocations", "flame graph: %s" % st)
        rows = round(st["h"] / ROW)
        expect(rows <= 20, "the flame graph is %d rows tall" % rows)
        found = {}
        for depth in range(1, min(rows, 8)):
            y = st["y"] + depth * ROW + ROW / 2
            for x in range(int(st["w"]) - 2, 0, -4):
                dt.mouse("move", st["x"] + x, y)
                tip = dt.eval("(function(){var t=document.querySelector('.flame-tip');"
                              "return t.style.display == 'block' ? t.innerText : null;})()")
                for name in ("descend", "ping"):
                    if tip and tip.startswith(name + "\n") and name not in found:
                        found[name] = tip
            if len(found) == 2:
                break
        tip = found.get("descend")
        expect(tip and "recursion: up to " in tip and "drawn as one frame" in tip, "descend's tooltip: %s" % tip)
        # ping <-> pong, a cycle of two: drawn once, the tooltip names it
        tip = found.get("ping")
        expect(tip and "recursion: the cycle ping → pong → ping up to 12 rounds in a row, drawn as one round" in tip,
               "ping's tooltip: %s" % tip)
        expect(not dt.console(), "console messages: %s" % dt.console()[:3])
    finally:
        dt.close()


if __name__ == "__main__":
    arrtest.main(test)
