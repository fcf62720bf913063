#!/usr/bin/env python3
"""Sampled stacks (`allocrr record --stack-sample 512K`): a deterministic
program of a million allocations from four sites with different size mixes,
recorded once with every stack and once with a Poisson sample of them. The
sampled trace says its mean, keeps every call (unsampled ones with stack id
0, far fewer stacked calls), and the sites section's scaled-up bytes and
counts per site are within 10% of the full recording's exact figures."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import arrtest as t

PROG = sys.argv[1]
SITES = ["site_small", "site_medium", "site_calloc", "site_large"]


def sites_of(trace, collapsed=None):
    args = [t.ALLOCRR, "analyze", "--json", "--what", "sites", "--top", "50"]
    if collapsed:
        args += ["--collapsed", collapsed]
    p = t.run(args + [trace])
    sec = json.loads(p.stdout.decode())["traces"][0]["sites"]
    got = {}
    for s in sec["by_bytes"]:
        if s["function"] in SITES:
            t.expect(s["function"] not in got, "site %s listed twice" % s["function"])
            got[s["function"]] = s
    t.expect(sorted(got) == sorted(SITES), "%s: sites %s" % (trace, [s["function"] for s in sec["by_bytes"]]))
    return sec, got


def stacked_calls(trace):
    """(allocating calls, those with a stack) of the trace, from dump."""
    p = t.run([t.ALLOCRR, "dump", "--json", "--stacks", trace])
    calls = stacked = 0
    for line in p.stdout.decode().splitlines():
        e = json.loads(line)
        if e["op"] in ("malloc", "calloc"):
            calls += 1
            stacked += bool(e.get("stack"))
    return calls, stacked


def test():
    d = t.tmpdir()
    full, smp = os.path.join(d, "full.atr"), os.path.join(d, "sampled.atr")
    t.record(full, [PROG], extra=["--stacks"])
    t.record(smp, [PROG], extra=["--stack-sample", "512K"])

    fsec, fsites = sites_of(full)
    folded = os.path.join(d, "sampled.folded")
    ssec, ssites = sites_of(smp, folded)
    t.expect("sampled" not in fsec, "a full recording says sampled: %s" % fsec.get("sampled"))
    t.expect(ssec.get("sampled") == {"mean_bytes": 512 * 1024}, "sampled: %s" % ssec.get("sampled"))

    fc, fs = stacked_calls(full)
    sc, ss = stacked_calls(smp)
    t.expect(fc == sc and fc > 1000000, "calls: full %d, sampled %d" % (fc, sc))
    t.expect(fs == fc, "full recording: %d of %d calls with a stack" % (fs, fc))
    # ~8 GB allocated: ~16,000 samples of a million calls
    t.expect(2000 < ss < 100000, "sampled recording: %d of %d calls with a stack" % (ss, sc))

    for name in SITES:
        for key in ("bytes", "allocs"):
            exact, est = fsites[name][key], ssites[name][key]
            t.expect(exact > 0 and abs(est - exact) <= 0.10 * exact,
                     "%s %s: sampled estimate %d, exact %d (%.1f%% off)"
                     % (name, key, est, exact, 100.0 * (est - exact) / exact))
            print("%s %s: exact %d, estimated %d (%+.2f%%)" % (name, key, exact, est,
                                                                100.0 * (est - exact) / exact))
    with open(folded) as f:
        roots = {line.split(";", 1)[0].split(" ")[0] for line in f}
    t.expect(roots and roots <= {"allocations_estimated", "live_at_peak_estimated", "leaks_estimated"},
             "collapsed roots of a sampled trace: %s" % roots)

    # bad values are refused with a message, before anything runs
    p = t.run([t.ALLOCRR, "record", "-q", "-o", os.path.join(d, "x.atr"), "--stack-sample=12Q", "--", PROG],
              check=False)
    t.expect(p.returncode != 0 and b"--stack-sample" in p.stderr, "bad --stack-sample: %s" % p.stderr)


t.main(test)
