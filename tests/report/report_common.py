"""Shared by the report tests: record the leaker, write configs, run report."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import arrtest  # noqa: E402
from arrtest import ALLOCRR, expect, run, tmpdir  # noqa: E402,F401


def record_leaker(leaker, d, n):
    out = os.path.join(d, "leak%d.atr" % n)
    arrtest.record(out, [leaker, str(n)])
    return out


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def report(config, *extra, check=None):
    """Run allocrr report; returns the CompletedProcess (text decoded)."""
    p = subprocess.run([ALLOCRR, "report", *extra, config], capture_output=True, text=True)
    if check is not None and p.returncode != check:
        raise AssertionError("report %s exited %d, want %d\nstdout: %s\nstderr: %s" % (
            config, p.returncode, check, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def load_json(path):
    with open(path) as f:
        return json.load(f)
