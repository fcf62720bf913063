"""Past one machine: `report --plan` prints one command per unit of work;
run through `xargs -P 2`, then `report --results DIR` assembles a report
equal to a direct run (every trace-side section, the allocators, the
deterministic replay figures, the checks). `--jobs 2` gives the same. A
missing unit names the command that makes it; a result of another plan is
refused."""
import json
import os
import subprocess
import sys

from report_common import expect, load_json, record_leaker, report, tmpdir, write

import arrtest


def summary(doc):
    """What must not depend on how the units ran."""
    out = []
    for t in doc["traces"]:
        side = {k: v for k, v in t.items() if k != "allocators"}
        als = [(a["allocator"], a["calls"], a["fragmentation"]["peak_live"], a["fragmentation"]["ideal_rss"])
               for a in t.get("allocators", [])]
        out.append((json.dumps(side, sort_keys=True), als))
    checks = [(c["check"], c["trace"], c["allocator"], c["ok"]) for c in doc["checks"]]
    return out, checks


def test():
    leaker = sys.argv[1]
    d = tmpdir()
    t1 = record_leaker(leaker, d, 1)
    t2 = record_leaker(leaker, d, 6)
    cfg = write(os.path.join(d, "r.yaml"), """\
traces: [%s, %s]
allocators: [glibc, builtin, {name: %s/absent.so, optional: true}]
replay: {zeroing: false, samples: 50, cache_dir: %s/wl}
checks: [leaks.bytes < 5000, fragmentation.peak_live == glibc]
output: {dir: %s/direct, html: false}
""" % (t1, t2, d, d, d))
    report(cfg, "-q", check=3)  # t2 leaks 6000 bytes
    direct = load_json(os.path.join(d, "direct", "report.json"))

    res = os.path.join(d, "results")
    p = report(cfg, "--plan", "--results", res, check=0)
    plan = [l for l in p.stdout.splitlines() if l.strip()]
    expect(len(plan) == 2 * (1 + 3), "2 traces x (analyses + 3 variants): %d lines" % len(plan))
    expect(all("--unit %d " % k in l for k, l in enumerate(plan)), "one unit per line, in order")
    x = subprocess.run(["xargs", "-d", "\n", "-P", "2", "-n", "1", "sh", "-c"], input=p.stdout, text=True,
                       capture_output=True)
    expect(x.returncode == 0, "units through xargs: %d\n%s" % (x.returncode, x.stderr[-2000:]))
    expect(len(os.listdir(res)) == len(plan), "one result file per unit: %s" % os.listdir(res))
    report(cfg, "-q", "--results", res, "-o", os.path.join(d, "assembled"), check=3)
    assembled = load_json(os.path.join(d, "assembled", "report.json"))
    expect(summary(assembled) == summary(direct), "assembled report differs from the direct one")
    names = [a["allocator"] for a in assembled["traces"][0]["allocators"]]
    expect(names == ["glibc", "builtin"], "the absent optional allocator is skipped: %s" % names)

    report(cfg, "-q", "--jobs", "2", "-o", os.path.join(d, "jobs"), check=3)
    jobs = load_json(os.path.join(d, "jobs", "report.json"))
    expect(summary(jobs) == summary(direct), "--jobs 2 report differs from the direct one")
    expect(not [n for n in os.listdir(os.path.join(d, "jobs")) if n.startswith(".units")],
           "--jobs leaves no unit files behind")

    os.unlink(os.path.join(res, "unit-5.json"))
    p = report(cfg, "-q", "--results", res, "-o", os.path.join(d, "partial"), check=1)
    expect("unit 5 " in p.stderr and "--unit 5" in p.stderr, "a missing unit names its command:\n" + p.stderr)

    other = write(os.path.join(d, "other.yaml"), "traces: [%s, %s]\nallocators: [builtin, glibc]\n"
                  "output: {dir: %s/other}\n" % (t1, t2, d))
    p = report(other, "-q", "--results", res, check=1)
    expect("not unit" in p.stderr, "a result of another plan is refused:\n" + p.stderr)
    p = report(cfg, "--plan", check=2)
    expect("--results" in p.stderr, "--plan without --results is a usage error")


if __name__ == "__main__":
    arrtest.main(test)
