#!/usr/bin/env python3
"""--stacks on real programs built without frame pointers (Debian's sqlite3
and python3): the program runs and prints as natively, the trace reads
cleanly, every allocation carries a stack of at least one frame that names
a recorded module, and the sites section has sites."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
SQL = "\n".join(["CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);", "BEGIN;"] +
                ["INSERT INTO t(name) VALUES('n%d-%s');" % (i, "y" * (i % 23)) for i in range(3000)] +
                ["COMMIT;", "SELECT count(*), max(name) FROM t;"]) + "\n"
PYPROG = "import json\nd = {str(i): [i] * (i % 7) for i in range(20000)}\nprint(len(json.dumps(d)))\n"


def check(name, cmd, stdin, env=None):
    d = t.tmpdir()
    out = os.path.join(d, name + ".atr")
    native = subprocess.run(cmd, input=stdin, capture_output=True, env=env)
    t.expect(native.returncode == 0 and native.stdout, "%s failed natively" % name)
    p = subprocess.run([t.ALLOCRR, "record", "-q", "--stacks", "-o", out, "--", *cmd], input=stdin,
                       capture_output=True, env=env)
    t.expect(p.returncode == 0 and p.stdout == native.stdout, "%s under --stacks: exit %d, %r"
             % (name, p.returncode, p.stderr[-300:]))
    inf = t.info(out)
    t.expect(inf["clean"] and inf["format"] == "1.3" and inf["events"] > 10000, "%s trace: %s" % (name, inf))
    dp = t.run([t.ALLOCRR, "dump", "--json", "--stacks", out])
    allocs = nostack = 0
    for line in dp.stdout.decode().splitlines():
        e = json.loads(line)
        if e["op"] in ("malloc", "calloc", "realloc") and not e.get("failed"):
            allocs += 1
            if not e.get("stack"):
                nostack += 1
    t.expect(allocs > 5000 and nostack == 0, "%s: %d of %d allocations without a stack" % (name, nostack, allocs))
    ap = t.run([t.ALLOCRR, "analyze", "--json", "--what", "sites", out])
    sites = json.loads(ap.stdout.decode())["traces"][0]["sites"]
    t.expect(sites["recorded"] and sites["sites"] > 0 and sites["by_bytes"], "%s sites: %s" % (name, sites))
    t.expect(all("+0x" in s["function"] or s.get("module") for s in sites["by_bytes"]),
             "%s: a site outside every module: %s" % (name, sites["by_bytes"]))


def test():
    if not shutil.which("sqlite3"):
        print("SKIP: no sqlite3")
        sys.exit(77)
    check("sqlite3", ["sqlite3", ":memory:"], SQL.encode())
    check("python3", [PY, "-c", PYPROG], b"", env=dict(os.environ, PYTHONMALLOC="malloc"))


t.main(test)
