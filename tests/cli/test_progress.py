"""Progress on long work: on a terminal's stderr a line rewritten in place
with a bar, the percentage, the rate and the time left, each rewrite within
the terminal's width; nothing of it when stderr is not a terminal. For
analyze, report (its analyses and replays) and replay."""
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import arrtest  # noqa: E402
from arrtest import ALLOCRR, expect, tmpdir  # noqa: E402

COLS = 72


def on_terminal(args, cwd):
    """Run with stderr on a pty COLS wide; returns (exit, what it wrote there)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLS, 0, 0))
    p = subprocess.Popen([ALLOCRR, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 120)
        if not r:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        out += data
    os.close(master)
    return p.wait(timeout=120), out.decode(errors="replace")


def bars(err):
    return [s for s in re.split(r"[\r\n]", err.replace("\x1b[K", "")) if re.search(r"\[[# ]{20}\]", s)]


def test():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    d = tmpdir()
    trace = os.path.join(root, "traces", "python3.atr")
    with open(os.path.join(d, "r.yaml"), "w") as f:
        f.write("traces: [%s]\nallocators: [glibc]\nreplay: {runs: 2, cache_dir: %s/wl}\n" % (trace, d))
    for what, args, unit in (("analyze", ["analyze", "--trace-only", trace], "events/s"),
                             ("replay", ["replay", "--runs", "3", "--cache-dir", d, "-a", "glibc", trace], "calls/s"),
                             ("report", ["report", "-o", d + "/out", "r.yaml"], "calls/s")):
        rc, err = on_terminal(args, d)
        expect(rc == 0, "%s on a terminal: exit %d\n%s" % (what, rc, err))
        b = bars(err)
        expect(b, "%s on a terminal: no progress bar in:\n%r" % (what, err))
        expect(any(unit in s for s in b), "%s: no rate (%s) in the bars:\n%s" % (what, unit, "\n".join(b)))
        expect(any(re.search(r"\d+%", s) for s in b), "%s: no percentage:\n%s" % (what, "\n".join(b)))
        if what != "analyze":  # a replay after the first knows the time left
            expect(any("ETA" in s for s in b), "%s: no time left in the bars:\n%s" % (what, "\n".join(b)))
        wide = [s for s in b if len(s) >= COLS]
        expect(not wide, "%s: progress lines wider than the terminal (%d):\n%s" % (what, COLS, "\n".join(wide)))
        # not a terminal: no bar, no carriage return
        p = subprocess.run([ALLOCRR, *args], cwd=d, capture_output=True, text=True, timeout=120)
        expect(p.returncode == 0, "%s: exit %d\n%s" % (what, p.returncode, p.stderr))
        expect(not bars(p.stderr) and "\r" not in p.stderr, "%s: progress written to a pipe:\n%r" % (what, p.stderr))


if __name__ == "__main__":
    arrtest.main(test)
