"""Bad input, as a new user meets it: an empty, a garbage and a directory
trace, a misspelt command, a file where report's output directory goes, an
earlier collapsed-stacks file. Each is one line naming
the file (and the offset, for a trace), a non-zero exit, nothing else on
stdout, and nothing already there destroyed."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import arrtest  # noqa: E402
from arrtest import ALLOCRR, expect, tmpdir  # noqa: E402


def run(args, cwd):
    return subprocess.run([ALLOCRR, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def one_line(p, what, want_rc, *wants):
    err = p.stderr.strip()
    expect(p.returncode == want_rc, "%s: exit %d, want %d\n%s" % (what, p.returncode, want_rc, err))
    expect(len(err.splitlines()) == 1, "%s: want one line of error, got:\n%s" % (what, err))
    for w in wants:
        expect(w in err, "%s: error lacks %r:\n%s" % (what, w, err))
    expect(not p.stdout.strip(), "%s: nothing on stdout after the error, got:\n%s" % (what, p.stdout[-500:]))


def test():
    d = tmpdir()
    with open(os.path.join(d, "empty.atr"), "w"):
        pass
    with open(os.path.join(d, "garbage.atr"), "wb") as f:
        f.write(b"\x7fELF not a trace at all" * 50)
    os.mkdir(os.path.join(d, "dir.atr"))
    # every command that reads a trace words its errors as info does: file, what, offset
    for cmd in (["info"], ["dump"], ["analyze", "--trace-only"], ["analyze", "--trace-only", "--json"],
                ["replay", "-a", "glibc"]):
        one_line(run(cmd + ["empty.atr"], d), " ".join(cmd) + " empty.atr", 1, "'empty.atr'", "at offset 0",
                 "empty file")
        one_line(run(cmd + ["garbage.atr"], d), " ".join(cmd) + " garbage.atr", 1, "'garbage.atr'",
                 "not an allocrr trace", "at offset 0")
        one_line(run(cmd + ["dir.atr"], d), " ".join(cmd) + " dir.atr", 1, "'dir.atr'", "Is a directory")
        one_line(run(cmd + ["nope.atr"], d), " ".join(cmd) + " nope.atr", 1, "'nope.atr'", "No such file")

    # a misspelt command gets the nearest; nonsense gets the help's name; no arguments: the usage
    for typo, want in (("analyse", "did you mean 'allocrr analyze'?"), ("reprot", "did you mean 'allocrr report'?"),
                       ("zzzz", "see 'allocrr --help'")):
        one_line(run([typo, "x.atr"], d), "allocrr " + typo, 2, "'%s' is not a command" % typo, want)
    p = run([], d)
    expect(p.returncode == 2 and "usage: allocrr" in p.stderr, "allocrr alone: exit %d\n%s" % (p.returncode, p.stderr))

    # analyze --collapsed onto an earlier file, with a trace that cannot be read: the file kept
    with open(os.path.join(d, "keep.folded"), "w") as f:
        f.write("allocations;main 1\n")
    one_line(run(["analyze", "--trace-only", "--collapsed", "keep.folded", "nope.atr"], d), "analyze --collapsed", 1,
             "'nope.atr'")
    with open(os.path.join(d, "keep.folded")) as f:
        expect(f.read() == "allocations;main 1\n", "analyze --collapsed: a failed analysis changed the file")
    expect(not [n for n in os.listdir(d) if n.endswith(".tmp")], "temporary files left: %s" % os.listdir(d))

    # report -o onto a file: refused before any work, the file kept as it was
    trace = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "traces", "calls.atr"))
    with open(os.path.join(d, "r.yaml"), "w") as f:
        f.write("traces: [%s]\nallocators: []\n" % trace)
    with open(os.path.join(d, "afile"), "w") as f:
        f.write("keep me\n")
    one_line(run(["report", "-q", "r.yaml", "-o", "afile"], d), "report -o afile", 1, "'afile'", "Not a directory")
    with open(os.path.join(d, "afile")) as f:
        expect(f.read() == "keep me\n", "report -o afile: the file was changed")
    p = run(["report", "-q", "r.yaml", "-o", "out"], d)
    expect(p.returncode == 0 and os.path.isfile(os.path.join(d, "out", "report.json")),
           "report -o out: exit %d\n%s" % (p.returncode, p.stderr))


if __name__ == "__main__":
    arrtest.main(test)
