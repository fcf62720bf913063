#!/usr/bin/env python3
"""sqlite3 running a generated SQL script: same output under the recorder,
every free names a live block."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def sql():
    lines = ["CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER);",
             "CREATE INDEX t_name ON t(name);", "CREATE INDEX t_v ON t(v);", "BEGIN;"]
    for i in range(20000):
        lines.append("INSERT INTO t(name, v) VALUES('n%d-%s', %d);" % (i, "y" * (i % 23), (i * 7919) % 1000))
    lines += ["COMMIT;", "SELECT count(*), sum(v) FROM t;",
              "SELECT name FROM t WHERE v = 17 ORDER BY name LIMIT 3;",
              "SELECT v, count(*) FROM t GROUP BY v ORDER BY 2 DESC, 1 LIMIT 3;"]
    return "\n".join(lines) + "\n"


def test():
    d = t.tmpdir()
    script = sql().encode()
    out = os.path.join(d, "sqlite.atr")
    native = subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True)
    t.expect(native.returncode == 0 and native.stdout, "sqlite3 failed natively")
    rec = t.record(out, ["sqlite3", ":memory:"], check=False, env=None) if False else None
    p = subprocess.run([t.ALLOCRR, "record", "-q", "-o", out, "--", "sqlite3", ":memory:"],
                       input=script, capture_output=True)
    t.expect(p.returncode == 0, "recorded sqlite3 exited %d: %s" % (p.returncode, p.stderr))
    t.expect(p.stdout == native.stdout, "output differs")
    inf = t.info(out)
    t.expect(inf["clean"] and inf["events"] > 50000, "trace: %s" % inf)
    t.check_frees_live(t.dump(out), "sqlite3")


t.main(test)
