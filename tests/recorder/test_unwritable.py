#!/usr/bin/env python3
"""An unwritable output leaves the program running and exiting as without
the recorder, with exactly one line on stderr."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t


def test():
    prog = sys.argv[1]
    native = subprocess.run([prog, "exit"], capture_output=True)
    t.expect(native.returncode == 3, "endings exit: %d" % native.returncode)
    env = dict(os.environ, LD_PRELOAD=t.PRELOAD, ALLOCRR_OUTPUT="/nonexistent-dir/x.atr")
    p = subprocess.run([prog, "exit"], capture_output=True, env=env)
    t.expect(p.returncode == native.returncode, "exit %d, want %d" % (p.returncode, native.returncode))
    t.expect(p.stdout == native.stdout, "stdout differs")
    lines = p.stderr.decode().splitlines()
    t.expect(len(lines) == 1 and lines[0].startswith("allocrr: ") and "/nonexistent-dir/x.atr" in lines[0],
             "stderr should be one allocrr line naming the file: %r" % lines)
    # A full disk (/dev/full fails every write with ENOSPC): same again.
    env = dict(os.environ, LD_PRELOAD=t.PRELOAD, ALLOCRR_OUTPUT="/dev/full")
    p = subprocess.run([prog, "exit"], capture_output=True, env=env)
    t.expect(p.returncode == native.returncode and p.stdout == native.stdout, "disk full changed the program")
    lines = p.stderr.decode().splitlines()
    t.expect(len(lines) == 1 and "No space left on device" in lines[0], "disk full: stderr %r" % lines)
    # Without the CLI, a writable output just works, and is overwritten.
    d = t.tmpdir()
    out = os.path.join(d, "env.atr")
    for _ in range(2):
        env = dict(os.environ, LD_PRELOAD=t.PRELOAD, ALLOCRR_OUTPUT=out)
        p = subprocess.run([prog], capture_output=True, env=env)
        t.expect(p.returncode == 0 and p.stderr == b"", "env-only recording: %s" % p.stderr)
        t.expect(t.traces(out) == [out], "env-only mode wrote %s" % t.traces(out))
        t.expect(t.info(out)["clean"], "env-only trace not clean")


t.main(test)
