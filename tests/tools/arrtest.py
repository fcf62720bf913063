"""Helpers for allocrr's script tests: run the CLI, read dumps, assert.

Every helper raises AssertionError with a message that says what differed,
so a failing ctest shows the reason in its output.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ.get("ALLOCRR_BUILD", "")
ALLOCRR = os.path.join(BUILD, "bin", "allocrr")
PRELOAD = os.path.join(BUILD, "lib", "liballocrr-record.so")

# Call ops, the ten functions.
CALLS = {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
         "memalign", "valloc", "pvalloc", "reallocarray"}


_tmpdirs = []
_failed = False
_excepthook = sys.excepthook


def _note_failure(*exc):
    global _failed
    _failed = True
    _excepthook(*exc)


sys.excepthook = _note_failure


@atexit.register
def _remove_tmpdirs():
    """A passing test leaves nothing behind; a failing one (or
    ALLOCRR_KEEP_TMP=1) keeps its directories and names them."""
    if _failed or os.environ.get("ALLOCRR_KEEP_TMP"):
        for d in _tmpdirs:
            sys.stderr.write("kept %s\n" % d)
        return
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)


def tmpdir():
    d = tempfile.mkdtemp(prefix="allocrr-test-")
    _tmpdirs.append(d)
    return d


def run(args, check=True, env=None, **kw):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run(args, capture_output=True, env=full_env, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout: %s\nstderr: %s" % (
            args, p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def record(out, cmd, extra=(), check=True, env=None, timeout=None):
    return run([ALLOCRR, "record", "-q", "-o", out, *extra, "--", *cmd], check=check, env=env,
               timeout=timeout)


def dump(trace):
    p = run([ALLOCRR, "dump", "--json", trace])
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


def info(trace, check=True):
    p = run([ALLOCRR, "info", "--json", trace], check=check)
    return json.loads(p.stdout.decode().splitlines()[0])


def traces(out):
    """The trace and its children's traces, as `allocrr record` names them."""
    d, base = os.path.split(out)
    names = [n for n in os.listdir(d or ".")
             if n == base or (n.startswith(base + ".") and
                              n[len(base) + 1:].replace(".", "").isdigit())]
    return sorted(os.path.join(d, n) for n in names)


def check_frees_live(events, what, allow_unknown=0):
    """Every free (and realloc of a pointer) names a block live in the trace."""
    live = set()
    unknown = []
    for e in events:
        op = e["op"]
        if op not in CALLS:
            continue
        ptr = int(e.get("ptr", "0x0"), 16)
        ret = int(e.get("ret", "0x0"), 16)
        failed = "err" in e and op != "posix_memalign" or (op == "posix_memalign" and e["err"] != 0)
        if op in ("free", "realloc", "reallocarray") and ptr:
            releases = op == "free" or not failed or (op == "realloc" and e.get("size") == 0)
            if releases:
                if ptr in live:
                    live.discard(ptr)
                else:
                    unknown.append(e)
        if op != "free" and ret:
            live.add(ret)
    if len(unknown) > allow_unknown:
        raise AssertionError("%s: %d frees of blocks not live in the trace, first: %s" % (
            what, len(unknown), unknown[:3]))
    return live


def marker_line(src, tag):
    """The line of SRC that holds the comment /* TAG */ (what a test expects a frame to name)."""
    with open(src) as f:
        for i, line in enumerate(f, 1):
            if "/* %s */" % tag in line:
                return i
    raise AssertionError("no marker %s in %s" % (tag, src))


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def main(fn):
    try:
        fn()
    except AssertionError as e:
        print("FAIL:", e, file=sys.stderr)
        sys.exit(1)
    print("ok")
