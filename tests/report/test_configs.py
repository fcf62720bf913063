"""The example configs in configs/ run as they are: from a directory laid out
like the repository root (traces/ beside configs/), each one exits 0 and
writes what its output section says."""
import os
import subprocess
import sys

from report_common import expect, tmpdir

import arrtest


def test():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    d = tmpdir()
    os.symlink(os.path.join(root, "traces"), os.path.join(d, "traces"))
    os.symlink(os.path.join(root, "configs"), os.path.join(d, "configs"))
    names = sorted(n for n in os.listdir(os.path.join(root, "configs")) if n.endswith(".yaml"))
    expect("demo.yaml" in names, "configs/demo.yaml exists")
    for n in names:
        p = subprocess.run([arrtest.ALLOCRR, "report", "-q", "configs/" + n], cwd=d, capture_output=True,
                           text=True, timeout=600)
        expect(p.returncode == 0, "configs/%s exited %d:\n%s" % (n, p.returncode, p.stderr[-2000:]))
    out = os.path.join(d, "allocrr-report")
    for f in ("report.json", "report.csv", "report.html"):
        expect(os.path.getsize(os.path.join(out, f)) > 0, "demo wrote %s" % f)
    # the workload caches went to the configured cache, not beside the bundled traces
    expect(os.listdir(os.path.join(out, "workloads")), "workloads cached in allocrr-report/workloads")


if __name__ == "__main__":
    arrtest.main(test)
