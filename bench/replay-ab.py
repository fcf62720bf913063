#!/usr/bin/env python3
"""replay-ab.py - replay one trace into several allocator variants, alternating,
and print the medians side by side (the A/B tool behind docs/allocator.md).

usage: bench/replay-ab.py [-n RUNS] [--allocrr PATH] [--env NAME:VAR=VALUE]...
                          [--bin NAME:PATH]... [--replay-arg ARG]... TRACE NAME=ALLOCATOR...

Each variant NAME=ALLOCATOR is replayed RUNS times (default 5); each round
runs every variant once, in the order given, so slow drift of a noisy
machine spreads over all of them. ALLOCATOR is what `allocrr replay -a`
takes (builtin, glibc, mimalloc, builtin:purge_delay=0, a .so path).
--bin NAME:PATH uses another build's allocrr for one variant (for a
"before" build of the built-in allocator: its allocrr finds its own
liballocrr-malloc.so), --env NAME:VAR=VALUE sets an environment variable for
one variant. Output: one line per variant with the medians of wall time,
CPU time, peak RSS (what the replayed heap added) and minor page faults,
then every run's wall time and peak.

Example: bench/replay-ab.py -n 7 --bin before:/tmp/base/build/bin/allocrr \\
             stress.atr now=builtin before=builtin mi=mimalloc
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def main():
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip().removeprefix("usage: "),
                                 description=__doc__.split("\n\n")[2])
    ap.add_argument("-n", "--runs", type=int, default=5)
    ap.add_argument("--allocrr", default=os.path.join(src, "build", "bin", "allocrr"))
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--replay-arg", action="append", default=[])
    ap.add_argument("trace")
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    variants = []
    for v in a.variants:
        name, sep, alloc = v.partition("=")
        if not sep or not name or not alloc:
            ap.error(f"variant '{v}': expected NAME=ALLOCATOR")
        variants.append((name, alloc))
    names = {n for n, _ in variants}
    env = {n: dict(os.environ) for n in names}
    binary = {n: a.allocrr for n in names}
    for e in a.env:
        name, _, kv = e.partition(":")
        k, sep, val = kv.partition("=")
        if name not in names or not sep:
            ap.error(f"--env '{e}': expected NAME:VAR=VALUE with a known NAME")
        env[name][k] = val
    for b in a.bin:
        name, sep, path = b.partition(":")
        if name not in names or not sep:
            ap.error(f"--bin '{b}': expected NAME:PATH with a known NAME")
        binary[name] = path
    res = {n: [] for n in names}
    for r in range(a.runs):
        for name, alloc in variants:
            cmd = [binary[name], "replay", "-q", "-a", alloc, "--latency-every", "0",
                   "--samples", "200", "--json"] + a.replay_arg + [a.trace]
            p = subprocess.run(cmd, env=env[name], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"replay-ab: {name}: {' '.join(cmd)} failed: {p.stderr.strip()}")
            x = json.loads(p.stdout)["results"][0]
            res[name].append((x["wall_ns"] / 1e6, x["cpu_ns"] / 1e6, x["peak_rss"] / 1024,
                              x["minor_faults"]))
        print(f"round {r + 1}/{a.runs}", file=sys.stderr)
    for name, _ in variants:
        t = res[name]
        med = [statistics.median(x[i] for x in t) for i in range(4)]
        print(f"{name:>10}: wall {med[0]:7.1f} ms  cpu {med[1]:7.1f} ms  peak {med[2]:8.0f} KB"
              f"  faults {med[3]:6.0f}   walls {' '.join('%.0f' % x[0] for x in t)}"
              f"  peaks {' '.join('%.0f' % x[2] for x in t)}")


if __name__ == "__main__":
    main()
