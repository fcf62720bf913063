"""A trace of a family (traces/gcc.atr: the gcc driver, cc1 and as): by
default the report takes the family's largest trace, `select: NAME` the
largest of program NAME (so does `FILE@NAME`), `children: true` all of them; each choice is said
on stderr."""
import json
import os
import shutil
import subprocess

from report_common import expect, tmpdir

import arrtest


def run(d, trace_entry):
    cfg = os.path.join(d, "r.yaml")
    with open(cfg, "w") as f:
        f.write("traces:\n  - %s\nallocators: [glibc]\nreplay: {runs: 1, zeroing: false}\n"
                "output: {dir: %s, json: report.json}\n" % (trace_entry, os.path.join(d, "out")))
    p = subprocess.run([arrtest.ALLOCRR, "report", "-q", cfg], capture_output=True, text=True, timeout=600)
    expect(p.returncode == 0, "%s: exit %d: %s" % (trace_entry, p.returncode, p.stderr[-1500:]))
    doc = json.load(open(os.path.join(d, "out", "report.json")))
    return [os.path.basename(t["trace"]["path"]) for t in doc["traces"]], doc, p.stderr


def test():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    d = tmpdir()
    for n in os.listdir(os.path.join(root, "traces")):
        if n.startswith("gcc.atr"):
            shutil.copy(os.path.join(root, "traces", n), d)
    gcc = os.path.join(d, "gcc.atr")
    names, doc, err = run(d, gcc)
    expect(len(names) == 1 and names[0] != "gcc.atr", "default: the largest trace, not the driver: %s" % names)
    expect(doc["traces"][0]["trace"]["exe"].endswith("/cc1"), "the largest is cc1: %s" % doc["traces"][0]["trace"])
    expect(names[0] in err, "said which trace it chose: %r" % err)
    names, doc, _ = run(d, "{path: %s, select: as}" % gcc)
    expect(len(names) == 1 and doc["traces"][0]["trace"]["exe"].endswith("-as"), "select: as -> %s" % names)
    # FILE@NAME, as every command takes it (was "no such trace 'gcc.atr@as'")
    names, doc, _ = run(d, "%s@as" % gcc)
    expect(len(names) == 1 and doc["traces"][0]["trace"]["exe"].endswith("-as"), "gcc.atr@as -> %s" % names)
    names, _, _ = run(d, "{path: %s, children: true}" % gcc)
    expect(len(names) == 3 and "gcc.atr" in names, "children: true -> all three: %s" % names)
    # a mistyped member is an error, in a config and on the command line, never the
    # family's largest under the name given
    for entry in ("%s.99999" % gcc, "{path: %s.99999, select: as}" % gcc, "%s@cc2" % gcc):
        cfg = os.path.join(d, "bad.yaml")
        with open(cfg, "w") as f:
            f.write("traces:\n  - %s\nallocators: [glibc]\noutput: {dir: %s}\n" % (entry, os.path.join(d, "bad")))
        p = subprocess.run([arrtest.ALLOCRR, "report", "-q", cfg], capture_output=True, text=True, timeout=600)
        expect(p.returncode == 2 and ("no such trace" in p.stderr or "no trace of 'cc2'" in p.stderr)
               and not os.path.exists(os.path.join(d, "bad", "report.json")),
               "config %s: exit %d, %s" % (entry, p.returncode, p.stderr[-500:]))
    p = subprocess.run([arrtest.ALLOCRR, "analyze", "--trace-only", gcc + ".99999"], capture_output=True, text=True)
    expect(p.returncode == 1 and not p.stdout and ("no such trace '%s.99999'" % gcc) in p.stderr
           and "gcc.atr.16279" in p.stderr, "analyze a mistyped member: exit %d, %s" % (p.returncode, p.stderr))


if __name__ == "__main__":
    arrtest.main(test)
