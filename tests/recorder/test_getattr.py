#!/usr/bin/env python3
"""Recording with stacks a program whose threads call pthread_getattr_np() on
themselves first (the JVM's thread start): no hang, the program's output and
status unchanged, and the calls after it stacked."""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    d = t.tmpdir()
    prog = sys.argv[1]
    native = subprocess.run([prog], stdout=subprocess.PIPE, timeout=60)
    for flags in ([], ["--stacks"], ["--stacks", "--stack-sample", "1"]):
        out = os.path.join(d, "ga.atr")
        # a session of its own: a hung program is killed with the recorder
        p = subprocess.Popen([t.ALLOCRR, "record", "-q", "-o", out] + flags + ["--", prog],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            p.stdout_data, _ = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            t.expect(False, "record %s: hung (60 s)" % " ".join(flags))
            continue
        p.stdout = p.stdout_data
        t.expect(p.returncode == native.returncode == 0, "record %s: status %d, natively %d" %
                 (" ".join(flags), p.returncode, native.returncode))
        t.expect(p.stdout == native.stdout, "record %s: output %r, natively %r" %
                 (" ".join(flags), p.stdout, native.stdout))
        r = t.run([t.ALLOCRR, "dump", "--json", "--stacks", out])
        ev = [json.loads(line) for line in r.stdout.decode().splitlines()]
        m = [e for e in ev if e["op"] == "malloc" and e["size"] == 333]
        t.expect(len(m) == 4, "record %s: malloc(333) x %d, want 4" % (" ".join(flags), len(m)))
        if flags == ["--stacks"]:
            t.expect(all("body" in [f.get("func") for f in e.get("stack", [])] for e in m),
                     "malloc(333) without its stack through body(): %r" % m)
        t.check_frees_live(ev, "getattr")


t.main(test)
