#!/usr/bin/env python3
"""Each way of ending: the process exits as it would without the recorder,
no event is lost, and the trace says how it ended."""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PROG = sys.argv[1]
# mode -> (ending, status)
CASES = {
    "return": ("exit", 0), "exit": ("exit", 3), "_exit": ("_exit", 4),
    "abort": ("signal", signal.SIGABRT), "segv": ("signal", signal.SIGSEGV),
    "term": ("signal", signal.SIGTERM), "exec": ("exec", 0), "kill": (None, None),
    # A recorder thread glibc counted would keep this process alive forever.
    "pthread_exit": ("exit", 0),
}


def test():
    d = t.tmpdir()
    for mode, (ending, status) in CASES.items():
        native = subprocess.run([PROG, mode], capture_output=True, timeout=60).returncode
        out = os.path.join(d, mode + ".atr")
        try:
            p = t.record(out, [PROG, mode], check=False, timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s: still running after 60 s under the recorder" % mode)
        want_rc = native if native >= 0 else 128 - native
        t.expect(p.returncode == want_rc, "%s: exit %d under the recorder, %d without"
                 % (mode, p.returncode, want_rc))
        inf = t.info(out)
        if mode == "kill":
            t.expect(not inf["clean"] and inf["ending"] == "truncated",
                     "kill: trace should be readable and truncated: %s" % inf)
            continue
        t.expect(inf["clean"] and inf["ending"] == ending and inf["status"] == status,
                 "%s: ending %s status %s, want %s %s" % (mode, inf["ending"], inf.get("status"),
                                                         ending, status))
        ev = t.dump(out)
        n555 = sum(1 for e in ev if e["op"] == "malloc" and e["size"] == 555)
        n556 = sum(1 for e in ev if e["op"] == "malloc" and e["size"] == 556)
        t.expect(n555 == 5 and n556 == 1, "%s: lost events (555: %d, 556: %d)" % (mode, n555, n556))
        if mode == "exec":
            execs = [e for e in ev if e["op"] == "exec"]
            t.expect(execs and execs[0]["path"] == "/bin/true", "exec event: %s" % execs)
            t.expect(len(t.traces(out)) == 2, "exec'd image not recorded: %s" % t.traces(out))


t.main(test)
