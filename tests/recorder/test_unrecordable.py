#!/usr/bin/env python3
"""Programs the loader will not preload the recorder into: a statically
linked one, and a set-user-ID one of another user. `allocrr record` says so
before it runs them, one line, and they still run (their exit status kept)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t  # noqa: E402


def record(d, prog):
    return subprocess.run([t.ALLOCRR, "record", "-o", os.path.join(d, "u.atr"), "--", prog, "7"],
                          capture_output=True, text=True, timeout=60)


def test():
    d = t.tmpdir()
    src = os.path.join(d, "s.c")
    with open(src, "w") as f:
        f.write('#include <stdlib.h>\nint main(int c, char **v) { free(malloc(100)); return atoi(v[1]); }\n')
    static = os.path.join(d, "static")
    p = subprocess.run(["cc", "-static", "-O1", "-o", static, src], capture_output=True, text=True)
    if p.returncode:
        print("skipped: cannot link statically here: %s" % p.stderr.strip()[:200])
        sys.exit(77)
    p = record(d, static)
    t.expect(p.returncode == 7, "static: exit %d, want the program's 7" % p.returncode)
    t.expect("statically linked" in p.stderr and "cannot be recorded" in p.stderr, "static: %r" % p.stderr)
    dyn = os.path.join(d, "dyn")
    subprocess.run(["cc", "-O1", "-o", dyn, src], check=True)
    p = record(d, dyn)
    t.expect(p.returncode == 7 and "cannot be recorded" not in p.stderr, "dynamic: %d %r" % (p.returncode, p.stderr))
    if os.geteuid() == 0:
        # set-user-ID of another user (nobody): secure mode drops LD_PRELOAD
        suid = os.path.join(d, "suid")
        shutil.copy(dyn, suid)
        os.chmod(d, 0o755)
        os.chown(suid, 65534, 65534)
        os.chmod(suid, 0o4755)
        p = record(d, suid)
        t.expect(p.returncode == 7 and "set-user-ID" in p.stderr, "setuid: %d %r" % (p.returncode, p.stderr))


t.main(test)
