#!/usr/bin/env python3
"""Trace families: a shell that forks python3 and ls, and one that execs
python3, recorded; `allocrr record` shows the tree, `info --tree` reads it
back, and `replay` picks the largest trace or the one selected."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PY = "/usr/bin/python3"
WORK = "d = sorted(str(i) for i in range(3000))"


def tree(trace):
    return json.loads(t.run([t.ALLOCRR, "info", "--tree", "--json", trace]).stdout)


def test():
    d = t.tmpdir()
    out = os.path.join(d, "sh.atr")
    # forks: python3 and ls are children of the shell
    p = t.run([t.ALLOCRR, "record", "-o", out, "--", "sh", "-c", "%s -c '%s'; ls > /dev/null" % (PY, WORK)])
    err = p.stderr.decode()
    t.expect("wrote" not in err, "record still lists files: %r" % err)
    files = t.traces(out)
    t.expect(len(files) == 3, "want sh, python3 and ls traces, got %s" % files)
    t.expect(err.startswith("%s: 3 traces, " % out), "tree header: %r" % err)
    lines = err.splitlines()[2:]
    t.expect(len(lines) == 3, "want a line per trace: %r" % err)
    py = [l for l in lines if "python3" in l]
    t.expect(len(py) == 1 and " * " in py[0] and re.search(r"\|- python3", py[0]), "python3 line: %r" % err)
    t.expect(all(" * " not in l for l in lines if "python3" not in l), "only python3 marked: %r" % err)

    f = tree(out)
    names = [m["program"] for m in f["traces"]]
    t.expect(names[0] in ("dash", "sh", "bash") and f["traces"][0]["parent"] == -1, "top: %s" % names)
    for m in f["traces"][1:]:
        t.expect(m["parent"] == 0 and not m["exec"] and m["ppid"] == f["traces"][0]["pid"],
                 "%s: parent %d" % (m["program"], m["parent"]))
    largest = f["traces"][f["largest"]]
    t.expect(largest["program"].startswith("python3") and largest["marked"], "largest: %s" % largest)
    t.expect(f["events"] == sum(m["events"] for m in f["traces"]), "events do not add up")
    # any member finds the same family
    for m in f["traces"]:
        t.expect(tree(m["file"]) == f, "the family read from %s differs" % m["file"])
    # the text tree lists every trace
    txt = t.run([t.ALLOCRR, "info", "--tree", largest["file"]]).stdout.decode()
    t.expect(all(os.path.basename(x) in txt for x in files), "info --tree: %r" % txt)

    # -q: silent
    p = t.record(out, ["sh", "-c", "%s -c '%s'; ls > /dev/null" % (PY, WORK)])
    t.expect(p.stderr == b"", "-q printed %r" % p.stderr)
    t.expect(len(t.traces(out)) == 3, "old traces left: %s" % t.traces(out))

    # replay: the largest by default, and says so; or the one selected
    def replay(*args):
        p = t.run([t.ALLOCRR, "replay", "-a", "glibc", "--json", *args], check=False)
        return p.returncode, p.stdout, p.stderr.decode()

    rc, so, se = replay(out)
    t.expect(rc == 0 and json.loads(so)["trace"] == tree(out)["traces"][tree(out)["largest"]]["file"],
             "replay chose %s" % so[:100])
    t.expect(re.search(r"allocrr: using .*\(python3[^ ]*, pid \d+, ", se), "no note of the choice: %r" % se)
    for sel in (["--select", "ls", out], [out + "@ls"]):
        rc, so, se = replay(*sel)
        chosen = json.loads(so)["trace"]
        t.expect(rc == 0 and [m for m in tree(out)["traces"] if m["file"] == chosen][0]["program"] == "ls",
                 "%s chose %s" % (sel, chosen))
    rc, so, se = replay(out + "@nosuchprogram")
    t.expect(rc == 2 and "no trace of 'nosuchprogram'" in se and "ls" in se, "bad selector: %d %r" % (rc, se))
    # a child named by its own file is the one replayed
    ls = [m["file"] for m in tree(out)["traces"] if m["program"] == "ls"][0]
    rc, so, se = replay(ls)
    t.expect(rc == 0 and json.loads(so)["trace"] == ls and "using" not in se, "child by name: %r" % se)

    # exec: the shell becomes a shell, then python3 (FILE, FILE.PID, FILE.PID.2),
    # each image the next one's parent; any of them finds the family
    out2 = os.path.join(d, "exec.atr")
    t.record(out2, ["sh", "-c", "exec sh -c \"exec %s -c '%s'\"" % (PY, WORK)])
    f = tree(out2)
    t.expect(len(f["traces"]) == 3, "exec: %s" % [m["file"] for m in f["traces"]])
    a, s2, b = f["traces"]
    t.expect(a["ending"] == "exec" and s2["ending"] == "exec" and b["pid"] == s2["pid"] == a["pid"] and
             s2["parent"] == 0 and b["parent"] == 1 and b["exec"] and s2["exec"], "exec chain: %s" % f["traces"])
    t.expect(b["file"] == "%s.%d.2" % (out2, a["pid"]), "exec naming: %s" % b["file"])
    for m in f["traces"]:
        t.expect(tree(m["file"]) == f, "the family read from %s differs" % m["file"])
    # a FILE whose name ends in digits is not taken for a member
    out4 = os.path.join(d, "run.1")
    t.record(out4, ["sh", "-c", "%s -c '%s'; ls > /dev/null" % (PY, WORK)])
    f4 = tree(out4)
    t.expect(f4["family"] == out4 and len(f4["traces"]) == 3, "run.1: %s" % f4)
    for m in f4["traces"]:
        t.expect(tree(m["file"]) == f4, "the family read from %s differs" % m["file"])
    txt = t.run([t.ALLOCRR, "info", "--tree", out2]).stdout.decode()
    t.expect(re.search(r"\n +%d  exec python3" % a["pid"], txt), "exec not drawn: %r" % txt)

    # many traces: the record summary folds the small ones into one line,
    # and keeps the path to the largest (a grandchild: sh, sh, exec python3)
    out3 = os.path.join(d, "many.atr")
    script = "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do /bin/true; done; sh -c '%s -c \"%s\"'" % (PY, WORK)
    p = t.run([t.ALLOCRR, "record", "-o", out3, "--", "sh", "-c", script])
    err = p.stderr.decode()
    f = tree(out3)
    n = len(f["traces"])
    t.expect(n == len(t.traces(out3)) and n >= 17, "want 17 or more traces, got %d" % n)
    big = f["traces"][f["largest"]]
    t.expect(big["program"].startswith("python3"), "largest: %s" % big)
    t.expect(len(err.splitlines()) < 8 and re.search(r"\+ 15 more traces .* true 15", err),
             "not folded: %r" % err)
    i, depth = f["largest"], 0
    while i >= 0:
        t.expect(re.search(r" %s\n" % re.escape(os.path.basename(f["traces"][i]["file"])), err),
                 "%s, an ancestor of the largest, not shown: %r" % (f["traces"][i]["file"], err))
        i, depth = f["traces"][i]["parent"], depth + 1
    t.expect(depth >= 3, "want python3 below two shells: %s" % f["traces"])
    full = t.run([t.ALLOCRR, "info", "--tree", out3]).stdout.decode()
    t.expect(len(full.splitlines()) == 2 + n, "info --tree folds: %r" % full)

    # bad input: one line naming the file
    bad = os.path.join(d, "bad.atr")
    open(bad, "w").write("not a trace")
    p = t.run([t.ALLOCRR, "info", "--tree", bad], check=False)
    t.expect(p.returncode == 1 and p.stderr.decode().count("\n") == 1 and bad in p.stderr.decode(),
             "bad trace: %d %r" % (p.returncode, p.stderr))


t.main(test)
