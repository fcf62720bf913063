"""The HTML page in headless Chromium: no console message at all (errors,
uncaught exceptions, warnings), the page finished drawing, and every chart
box holds a drawn canvas. Skips (77) without chromium. Set
ALLOCRR_SCREENSHOT=file.png to also save a screenshot."""
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile

from report_common import expect, record_leaker, report, tmpdir, write

import arrtest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(exe, page, *extra):
    """Load page; returns (dom, console lines)."""
    profile = tempfile.mkdtemp(prefix="allocrr-chromium-")
    try:
        p = subprocess.run([exe, *FLAGS, "--user-data-dir=" + profile, *extra, "file://" + page],
                           capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
    return p.stdout, console


class Charts(html.parser.HTMLParser):
    """Counts chart boxes, and canvases inside them; reads body attributes."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.boxes = []
        self.body = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag in ("meta", "link", "br", "img", "input", "hr"):
            return
        if a.get("data-chart") == "1":
            self.boxes.append(0)
            self.stack.append(("box", len(self.boxes) - 1))
        else:
            self.stack.append((tag, None))
        if tag == "canvas":
            for kind, idx in reversed(self.stack):
                if kind == "box":
                    self.boxes[idx] += 1
                    break

    def handle_endtag(self, tag):
        while self.stack:
            kind, _ = self.stack.pop()
            if kind == tag or (kind == "box" and tag == "div"):
                break


def test():
    exe = chromium()
    if not exe:
        print("skip: chromium not installed (apt-get install chromium)")
        sys.exit(77)
    leaker = sys.argv[1]
    d = tmpdir()

    # The detector must see a console error, or a clean page proves nothing.
    bad = write(os.path.join(d, "bad.html"),
                "<html><body><script>console.error('deliberate'); undefinedFn();</script></body></html>")
    _, console = browse(exe, bad, "--dump-dom")
    expect(any("deliberate" in l for l in console), "console errors are not detected: %s" % console)

    tr = record_leaker(leaker, d, 4)
    cfg = write(os.path.join(d, "r.yaml"), """\
traces: [%s]
allocators: [glibc, builtin]
replay: {samples: 200}
checks: [leaks.bytes == 4000, peak_rss <= 2 * glibc + 1MiB]
output: {dir: %s/out}
""" % (tr, d))
    report(cfg, "-q", check=0)
    page = os.path.join(d, "out", "report.html")
    text = open(page).read()
    expect(not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text), "the page loads nothing from the network")
    dom, console = browse(exe, page, "--dump-dom", "--window-size=1400,3000")
    expect(not console, "console messages:\n" + "\n".join(console))
    c = Charts()
    c.feed(dom)
    expect(c.body.get("data-ready") == "1", "the page did not finish drawing (body %s)" % c.body)
    # recorded run, replays, fragmentation, time, sizes, lifetimes, latency
    expect(len(c.boxes) >= 7, "%d charts, want >= 7" % len(c.boxes))
    expect(int(c.body.get("data-charts", 0)) == len(c.boxes), "data-charts %s vs %d boxes" % (
        c.body.get("data-charts"), len(c.boxes)))
    empty = [i for i, n in enumerate(c.boxes) if n == 0]
    expect(not empty, "charts without a canvas: %s" % empty)
    for want in ("Checks", "Fragmentation at the key moments", "Zeroing", "Latency per call", "Leaks",
                 "Threads", "glibc", "builtin"):
        expect(want in dom, "page lacks %r" % want)
    shot = os.environ.get("ALLOCRR_SCREENSHOT")
    if shot:
        browse(exe, page, "--screenshot=" + os.path.abspath(shot), "--window-size=1400,3000")


if __name__ == "__main__":
    arrtest.main(test)
