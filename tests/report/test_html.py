"""The HTML page in headless Chromium: no console message at all (errors,
uncaught exceptions, warnings), the page finished drawing, and every chart
box holds a drawn canvas. A trace recorded with stacks gets the call-site
tables and flame graphs: driven through the DevTools protocol (over a pipe),
a real mouse click on a frame zooms into it and a click on the root zooms
out, hovering shows the frame. Skips (77) without chromium. Set
ALLOCRR_SCREENSHOT=file.png to also save a screenshot."""
import html.parser
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

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


class DevTools:
    """Chromium driven through the DevTools protocol on --remote-debugging-pipe
    (fd 3: commands in, fd 4: answers and events out, NUL-separated JSON)."""

    def __init__(self, exe, *extra):
        self.profile = tempfile.mkdtemp(prefix="allocrr-chromium-")
        cmd_r, self.w = os.pipe()
        self.r, out_w = os.pipe()

        def child():
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
        self.p = subprocess.Popen([exe, *FLAGS, "--user-data-dir=" + self.profile, "--remote-debugging-pipe",
                                   *extra, "about:blank"], preexec_fn=child, close_fds=False,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self.buf, self.id, self.events, self.session = b"", 0, [], None

    def _message(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise AssertionError("chromium did not answer in %ds" % timeout)
            data = os.read(self.r, 1 << 16)
            if not data:
                raise AssertionError("chromium closed its DevTools pipe")
            self.buf += data
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, timeout=60):
        self.id += 1
        m = {"id": self.id, "method": method, "params": params or {}}
        if self.session:
            m["sessionId"] = self.session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        while True:
            r = self._message(timeout)
            if r.get("id") == self.id:
                if "error" in r:
                    raise AssertionError("%s: %s" % (method, r["error"]))
                return r["result"]
            self.events.append(r)

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Runtime.enable")
        self.call("Page.enable")
        self.call("Page.navigate", {"url": url})
        for _ in range(300):
            if self.eval("document.body && document.body.getAttribute('data-ready')") == "1":
                return
            time.sleep(0.1)
        raise AssertionError("the page did not finish drawing")

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            raise AssertionError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def mouse(self, kind, x, y):
        if kind == "click":
            for t in ("mousePressed", "mouseReleased"):
                self.call("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left", "clickCount": 1})
        else:
            self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def console(self):
        """Console calls and uncaught exceptions seen so far."""
        return [e for e in self.events if e.get("method") in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown",
                                                               "Log.entryAdded")]

    def close(self):
        try:
            self.session = None
            self.call("Browser.close", timeout=10)
        except AssertionError:
            pass
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        os.close(self.w)
        os.close(self.r)
        shutil.rmtree(self.profile, ignore_errors=True)


FLAME = "document.querySelector('canvas[data-flame]')"


def flame_state(dt):
    return dt.eval("(function(){var c=%s; if(!c) return null; c.scrollIntoView(); var r=c.getBoundingClientRect();"
                   "return {frames: +c.getAttribute('data-frames'), focus: c.getAttribute('data-focus'),"
                   "what: c.getAttribute('data-flame'), x: r.left, y: r.top, w: r.width, h: r.height};})()" % FLAME)


def check_flames(exe, sites_prog, d):
    """A report of a trace with stacks: sites tables, flame graphs that zoom."""
    tr = os.path.join(d, "sites.atr")
    arrtest.record(tr, [sites_prog], extra=["--stacks"])
    cfg = write(os.path.join(d, "s.yaml"), "traces: [%s]\noutput: {dir: %s/sout}\n" % (tr, d))
    report(cfg, "-q", check=0)
    page = os.path.join(d, "sout", "report.html")
    dt = DevTools(exe, "--window-size=1400,3000")
    try:
        dt.open("file://" + page)
        text = dt.eval("document.body.innerText")
        for want in ("Call sites: who allocated the memory", "Flame graphs of the call stacks", "checker",
                     "grow (inlined into make_name)"):
            expect(want in text, "page lacks %r" % want)
        st = flame_state(dt)
        expect(st and st["what"] == "allocations" and st["focus"] == "all" and st["frames"] >= 5,
               "flame graph: %s" % st)
        # the frame under a point: find the deepest row with a frame named contiguous, by hovering
        row = 18
        found = None
        for depth in range(1, 12):
            y = st["y"] + depth * row + row / 2
            dt.mouse("move", st["x"] + 5, y)
            tip = dt.eval("(function(){var t=document.querySelector('.flame-tip');"
                          "return t.style.display == 'block' ? t.innerText : null;})()")
            expect(tip is not None, "no tooltip over row %d" % depth)
            if tip.startswith("contiguous"):
                found = (y, tip)
                break
        expect(found and "sites.c:" in found[1] and " of all" in found[1] and " allocations" in found[1],
               "hover: %s" % (found,))
        dt.mouse("click", st["x"] + 5, found[0])
        z = flame_state(dt)
        expect(z["focus"] == "contiguous" and z["frames"] < st["frames"], "after a click: %s (before %s)" % (z, st))
        dt.mouse("click", z["x"] + 5, z["y"] + row / 2)  # the root, above
        back = flame_state(dt)
        expect(back["focus"] == "all" and back["frames"] == st["frames"], "after a click on the root: %s" % back)
        # the other graphs
        dt.eval("Array.from(document.querySelectorAll('.tabs button')).filter(function(b){"
                "return b.textContent == 'leaked';}).pop().click()")
        lk = flame_state(dt)
        expect(lk["what"] == "leaks" and lk["frames"] >= 3, "leaks flame graph: %s" % lk)
        # the search: frames holding the term are counted (and drawn in magenta), once under a match
        dt.eval("(function(){var s=document.querySelector('.flame-search'); s.value='contiguous';"
                "s.dispatchEvent(new Event('input'));})()")
        m = dt.eval("(function(){var c=%s; return {m: +c.getAttribute('data-matched'), what: c.getAttribute('data-flame'),"
                    "found: document.querySelector('.flame-found').textContent};})()" % FLAME)
        expect(m["what"] == "leaks" and m["m"] == 0 and m["found"] == "no frame matches",
               "search in the leaks graph (contiguous frees everything): %s" % m)
        dt.eval("Array.from(document.querySelectorAll('.tabs button')).filter(function(b){"
                "return b.textContent == 'bytes allocated';}).pop().click()")
        m = dt.eval("(function(){var c=%s; return {m: +c.getAttribute('data-matched'),"
                    "found: document.querySelector('.flame-found').textContent};})()" % FLAME)
        want = sum(r["bytes"] for r in doc_sites(d)["by_bytes"] if r["function"] == "contiguous")
        expect(m["m"] == want and m["found"].startswith("matched "), "search 'contiguous': %s, want %d" % (m, want))
        # a site's function cell finds it in the flame graph
        dt.eval("Array.from(document.querySelectorAll('td.link')).filter(function(td){"
                "return td.textContent == 'checker';})[0].click()")
        m = dt.eval("(function(){var c=%s; return {m: +c.getAttribute('data-matched'),"
                    "term: document.querySelector('.flame-search').value};})()" % FLAME)
        want = sum(r["bytes"] for r in doc_sites(d)["by_bytes"] if r["function"] == "checker")
        expect(m["term"] == "checker" and m["m"] == want, "click on the site 'checker': %s, want %d" % (m, want))
        expect("estimate" not in dt.eval("document.body.innerText"), "a full recording's sites marked as estimates")
        msgs = dt.console()
        expect(not msgs, "console messages: %s" % msgs[:3])
        dt.eval("console.warn('deliberate')")  # the detector must see one, or a clean page proves nothing
        expect(len(dt.console()) == 1, "a console warning is not detected: %s" % dt.console())
    finally:
        dt.close()
    # sampled stacks: the sites' figures and the flame graph say they are estimates
    tr = os.path.join(d, "sampled.atr")
    arrtest.record(tr, [sites_prog], extra=["--stacks", "--stack-sample", "4K"])
    cfg = write(os.path.join(d, "p.yaml"), "traces: [%s]\noutput: {dir: %s/pout}\n" % (tr, d))
    report(cfg, "-q", check=0)
    dt = DevTools(exe, "--window-size=1300,2000")
    try:
        dt.open("file://" + os.path.join(d, "pout", "report.html"))
        text = dt.eval("document.body.innerText")
        expect("Call sites: who allocated the memory (estimates from a sample)" in text
               and "Flame graphs of the call stacks (estimates from a sample)" in text
               and "--stack-sample" in text, "a sampled trace's sites are not marked as estimates")
        cells = dt.eval("Array.from(document.querySelectorAll('.card table')).filter(function(t){"
                        "return t.querySelector('th').textContent.indexOf('site (top by') == 0;})[0].rows[1].cells[2]"
                        ".textContent")
        expect(cells.startswith("≈ "), "a sampled site's figure: %r" % cells)
        expect(not dt.console(), "console messages: %s" % dt.console()[:3])
    finally:
        dt.close()


def check_cxx(exe, prog, d):
    """C++ sites (tests/analyzers/sites_cxx.cc): names of hundreds of characters,
    shown with their template arguments folded as heaptrack does, in tables that
    fit their cards; the full name in the tooltip."""
    tr = os.path.join(d, "cxx.atr")
    arrtest.record(tr, [prog], extra=["--stacks"])
    cfg = write(os.path.join(d, "c.yaml"), "traces: [%s]\noutput: {dir: %s/cout}\n" % (tr, d))
    report(cfg, "-q", check=0)
    page = os.path.join(d, "cout", "report.html")
    check_fit(exe, page, wraps=1)
    dt = DevTools(exe, "--window-size=1300,2000")
    try:
        dt.open("file://" + page)
        cells = dt.eval("Array.from(document.querySelectorAll('td.link')).map(function(td){"
                        "return [td.textContent, td.title];})")
        short = [c for c in cells if c[0].startswith("std::__new_allocator<>::allocate(unsigned long, void const*)")
                 and c[0].endswith(" · from app::Store::fill(int) sites_cxx.cc:%d" % arrtest.marker_line(
                     os.path.join(os.path.dirname(__file__), "..", "analyzers", "sites_cxx.cc"), "FILL"))]
        expect(short and "std::__new_allocator<long>::allocate(" in short[0][1],
               "C++ site names: %s" % [c[0] for c in cells])
        expect(not dt.console(), "console messages: %s" % dt.console()[:3])
    finally:
        dt.close()


def doc_sites(d):
    with open(os.path.join(d, "sout", "report.json")) as f:
        return json.load(f)["traces"][0]["sites"]


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


def check_fit(exe, page, wraps=2):
    """No table wider than its card (a scrolled-off column is a figure lost),
    on a laptop's width and on half a screen's."""
    for width in (1300, 800):
        dt = DevTools(exe, "--window-size=%d,1000" % width)
        try:
            dt.open("file://" + page)
            over = dt.eval("""Array.from(document.querySelectorAll('.scroll'))
                .filter(function (s) { return s.scrollWidth > s.clientWidth + 1; })
                .map(function (s) { return s.closest('.card').querySelector('h3').textContent + ': ' +
                                    s.scrollWidth + ' px in ' + s.clientWidth; })""")
            # a wrapped path or expression breaks between its parts, never inside a word:
            # each word (between spaces, hyphens, '/', ',', '=', ':' and '(') of a wrapping cell lies on one line
            broken = dt.eval("""(function () { var out = [];
                document.querySelectorAll('td.wrap').forEach(function (td) {
                  td.childNodes.forEach(function (t) {
                    if (t.nodeType !== 3) return;
                    var re = /[^\\s\\/,=:(-]+/g, m;  // a hyphen is a break of its own
                    while ((m = re.exec(t.data))) {
                      var r = document.createRange(); r.setStart(t, m.index); r.setEnd(t, m.index + m[0].length);
                      var lines = {}; Array.from(r.getClientRects()).forEach(function (q) { lines[Math.round(q.top)] = 1; });
                      if (Object.keys(lines).length > 1) out.push(m[0]);
                    }
                  });
                });
                return out; })()""")
            nwrap = dt.eval("document.querySelectorAll('td.wrap').length")
        finally:
            dt.close()
        expect(not over, "%d px wide: tables cut off: %s" % (width, over))
        expect(nwrap >= wraps and not broken, "%d px wide: words broken across lines: %s" % (width, broken))


def check_legends(exe, page):
    """The time series: each curve its own colour, and hovering anywhere
    names every curve with its value there (not only those sampled at that
    very x)."""
    dt = DevTools(exe, "--window-size=1300,1000")
    try:
        dt.open("file://" + page)
        n = dt.eval("document.querySelectorAll('.legend').length")
        expect(n >= 2, "time series legends: %d, want the recorded run's and the replays'" % n)
        for i in range(n):
            names = dt.eval("""Array.from(document.querySelectorAll('.legend')[%d].querySelectorAll('span[style]'))
                .map(function (s) { return [s.textContent.replace(/^\\W+/, '').trim(), s.style.color]; })""" % i)
            expect(len(names) >= 2, "legend %d: %s" % (i, names))
            colors = [c for _, c in names]
            expect(len(set(colors)) == len(colors), "legend %d: two curves share a colour: %s" % (i, names))
            x, y, w, h = dt.eval("""(function () { var b = document.querySelectorAll('.legend')[%d].nextSibling;
                b.scrollIntoView(); var q = b.getBoundingClientRect(); return [q.left, q.top, q.width, q.height]; })()"""
                                 % i)
            for f in (0.3, 0.55, 0.8):
                dt.mouse("move", x + w * f, y + h / 2)
                text = dt.eval("document.querySelectorAll('.legend')[%d].textContent" % i)
                missing = [nm for nm, _ in names if nm + ":" not in text]
                expect(not missing, "legend %d hovered at %.0f%%: no value for %s in %r" % (i, f * 100, missing, text))
                # live bytes are known everywhere (0 before the first
                # allocation, however late a loaded machine lets the program
                # make it); a curve not sampled yet is named with "–" (a
                # recorder's first RSS sample waits for its thread to run)
                unvalued = [nm for nm, _ in names if (nm + ": –") in text]
                expect(not [nm for nm in unvalued if nm.startswith("live bytes")],
                       "legend %d hovered at %.0f%%: live bytes without a value in %r" % (i, f * 100, text))
    finally:
        dt.close()


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

    # a long path, as real recordings have: the checks table must wrap it between its parts
    long = os.path.join(d, "recordings-of-the-leaking-program-with-four-blocks", "nightly-run-2026-12-01")
    os.makedirs(long)
    # it sleeps 40 ms before its first allocation: the recorded run's chart
    # starts with RSS samples, and live bytes must still read 0 B there
    tr = os.path.join(long, "leak4.atr")
    arrtest.record(tr, [leaker, "4", "40"])
    cfg = write(os.path.join(d, "r.yaml"), """\
traces: [%s]
allocators: [glibc, builtin]
replay: {samples: 200}
checks: [leaks.bytes == 4000, peak_rss <= 2 * glibc + 1MiB, zeroing.calloc_as_malloc_memset_ns >= 0]
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
    check_fit(exe, page)
    check_legends(exe, page)
    check_flames(exe, sys.argv[2], d)
    if len(sys.argv) > 3 and sys.argv[3]:  # built when there is a C++ compiler
        check_cxx(exe, sys.argv[3], d)
    shot = os.environ.get("ALLOCRR_SCREENSHOT")
    if shot:
        browse(exe, page, "--screenshot=" + os.path.abspath(shot), "--window-size=1400,3000")


if __name__ == "__main__":
    arrtest.main(test)
