"""cli.options: each command's option table (read from cli/*.c) is what its
--help lists, line for line, and the parser's errors are one line and a
hint with exit 2: an unknown or misspelt option (with the nearest one
suggested), a missing value, a bad number, a value given to a flag.

usage: test_options.py CLI_SOURCE_DIR TRACE
"""
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t  # noqa: E402

ENTRY = re.compile(r"CLI_(FLAG|UINT|LONG|U64|SIZE|STRING|LIST|CALLBACK)\(\s*(?:'(.)'|0)\s*,\s*\"([a-z0-9-]+)\""
                   r"(?:\s*,\s*(CLI_ARG_[A-Z]+))?")
COMMON = [("FLAG", "h", "help", None), ("FLAG", "V", "version", None)]


def tables(src):
    """{command: [(type, short, long, arg kind)]}; "" is allocrr itself."""
    out = {}
    for path in sorted(glob.glob(os.path.join(src, "*.c"))):
        base = os.path.basename(path)
        if base == "allocrr.c":
            cmd = ""
        elif base.startswith("cmd_"):
            cmd = base[4:-2]
        else:
            continue
        text = open(path).read()
        t.expect("cli_options_parse(" in text, "%s does not parse by its table" % base)
        out[cmd] = [m.groups() for m in ENTRY.finditer(text)]
    return out


def takes_value(entry):
    kind, _, _, arg = entry
    return kind != "FLAG" and (kind != "CALLBACK" or arg == "CLI_ARG_REQUIRED")


def run(cmd, *args):
    argv = [t.ALLOCRR] + ([cmd] if cmd else []) + list(args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def usage_error(cmd, args, want):
    """Exit 2, nothing on stdout, stderr: 'allocrr: WANT...' and the hint."""
    p = run(cmd, *args)
    lines = p.stderr.splitlines()
    hint = "try 'allocrr %s--help'" % (cmd + " " if cmd else "")
    what = "allocrr %s %s" % (cmd, " ".join(args))
    t.expect(p.returncode == 2, "%s: exit %d, want 2 (%r)" % (what, p.returncode, p.stderr))
    t.expect(not p.stdout, "%s: printed %r" % (what, p.stdout[:200]))
    t.expect(len(lines) == 2 and lines[1] == hint, "%s: want a line and %r, got %r" % (what, hint, p.stderr))
    t.expect(lines[0].startswith("allocrr: " + want), "%s: %r does not start with %r" % (what, lines[0], want))
    return lines[0]


def check(src, trace):
    tabs = tables(src)
    t.expect(set(tabs) == {"", "record", "info", "dump", "replay", "analyze", "report", "diff"},
             "commands with tables: %s" % sorted(tabs))
    for cmd, table in tabs.items():
        t.expect(cmd == "" or len(table) >= 2, "%s: only %d options read from its table" % (cmd, len(table)))
        entries = table + COMMON
        p = run(cmd, "--help")
        t.expect(p.returncode == 0 and p.stdout.startswith("usage: allocrr"), "%s --help: exit %d" % (cmd, p.returncode))
        # the option lines of the help: "  -x, --name ARG  text" or "      --name[=ARG]"
        listed = re.findall(r"^  (?:-(.), |    )--([a-z0-9-]+)", p.stdout, re.M)
        want = [(s or "", name) for _, s, name, _ in entries]
        t.expect(sorted(listed) == sorted(want), "%s --help lists %s, the table has %s" % (
            cmd, sorted(set(listed) ^ set(want)), "these as well" if listed else want))
        names = [e[2] for e in entries]
        for e in entries:
            kind, short, name, _ = e
            # misspelt: a letter doubled in the middle; the suggestion is a nearest name
            bad = name[:2] + name[1] + name[2:] if len(name) > 2 else name + "x"
            if any(n.startswith(bad) for n in names):
                continue
            line = usage_error(cmd, ["--" + bad], "unknown option '--%s'" % bad)
            best = min(distance(bad, n) for n in names)
            m = re.search(r"; did you mean '--([a-z0-9-]+)'\?$", line)
            t.expect(m and distance(bad, m.group(1)) == best, "%s --%s: no nearest suggestion in %r" % (cmd, bad, line))
            if takes_value(e):
                usage_error(cmd, ["--" + name], "option '--%s' needs a value" % name)
                if short:
                    usage_error(cmd, ["-" + short], "option '-%s' needs a value" % short)
            elif kind == "FLAG" and name not in ("help", "version"):
                usage_error(cmd, ["--%s=1" % name], "option '--%s' takes no value" % name)
            if kind in ("UINT", "LONG", "U64", "SIZE"):
                usage_error(cmd, ["--" + name, "x1", "a"], "--%s: 'x1' is not a number" % name)
                usage_error(cmd, ["--%s=99999999999999999999999" % name, "a"], "--%s wants a number" % name)
        usage_error(cmd, ["-%"], "unknown option '-%'")
        p = run(cmd, "--version")
        t.expect(p.returncode == 0 and p.stdout.startswith("allocrr "), "%s --version: %r" % (cmd, p.stdout))
    # a nowhere-near name gets no suggestion
    line = usage_error("replay", ["--zzzzzzzzzzzzz", trace], "unknown option '--zzzzzzzzzzzzz'")
    t.expect("did you mean" not in line, "a far name got a suggestion: %r" % line)
    # values every way: "--name=V", "--name V", "-nV", grouped "-jn V", prefixes, options after the trace
    for args in (["--limit=3", trace], ["--limit", "3", trace], ["-n3", trace], [trace, "--lim", "3"],
                 ["-n", "3", "--", trace]):
        p = run("dump", *args)
        t.expect(p.returncode == 0 and len(p.stdout.splitlines()) == 3, "dump %s: %d lines, exit %d, %r" % (
            args, len(p.stdout.splitlines()), p.returncode, p.stderr))
    p = run("dump", "-jn", "2", trace)
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    t.expect(p.returncode == 0 and len(rows) == 2, "dump -jn 2: %r" % p.stdout)
    usage_error("diff", ["--al", trace, trace], "option '--al' is ambiguous")
    usage_error("dump", ["--limit", "0", trace], "--limit wants a number of at least 1, not '0'")
    usage_error("replay", ["--runs", "1001", trace], "--runs wants a number from 1 to 1000, not '1001'")
    usage_error("replay", ["--threads", "paralel", trace], "--threads must be serial, parallel or auto")
    # record stops at the command: its options are the command's own
    usage_error("record", ["--bogus", "true"], "unknown option '--bogus'")
    p = run("record", "-q", "-o", os.path.join(t.tmpdir(), "t.atr"), "true", "--bogus")
    t.expect(p.returncode == 0, "record true --bogus: exit %d, %r" % (p.returncode, p.stderr))


if __name__ == "__main__":
    t.main(lambda: check(sys.argv[1], sys.argv[2]))
