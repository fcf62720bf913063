#!/bin/sh
# bench-replay.sh BUILD_DIR [BASE_BUILD_DIR] - the replayer's figures, as a
# Markdown table:
#   - engine overhead per call: a synthetic trace replayed into a bump
#     allocator (libarr-bump.so: a pointer bump, free does nothing) with
#     --touch none, with and without per-call timing; the bump call itself is
#     a few ns, so ns/call is an upper bound of the engine's own cost. Given
#     as wall time per call (what the target is about) and CPU time per call
#     (the process's CPU clock: steadier when other jobs share the machine);
#   - the same trace into glibc, for scale;
#   - workload preparation rate (events/s) and the preparing process's peak
#     memory against the trace's size (bounded memory);
#   - the engine's resident memory before the first call (baseline).
# With BASE_BUILD_DIR (e.g. a build of the previous commit), both builds are
# measured side by side on the same trace, runs alternating, and the table
# has a column for each. Every figure is the median of RUNS runs.
# Environment: CALLS (default 10000000), THREADS (default 1), RUNS (default 5).
set -eu
BUILD=$(cd "${1:-build}" && pwd)
BASE=
[ $# -ge 2 ] && BASE=$(cd "$2" && pwd)
PY=/usr/bin/python3
CALLS=${CALLS:-10000000} THREADS=${THREADS:-1} RUNS=${RUNS:-5}
for b in $BASE "$BUILD"; do
	for f in bin/allocrr bin/bench-replay-synth lib/libarr-bump.so; do
		[ -e "$b/$f" ] || { echo "bench-replay: missing $b/$f (build first)" >&2; exit 1; }
	done
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-replay.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
"$BUILD/bin/allocrr" record -q --rss-interval 0 -o synth.atr -- "$BUILD/bin/bench-replay-synth" "$CALLS" 4096 "$THREADS"

$PY - "$RUNS" "$THREADS" "$BUILD" $BASE <<'PY'
import json, os, re, resource, statistics, subprocess, sys

runs, threads, builds = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
names = ["after", "before"] if len(builds) > 1 else ["value"]
order = list(reversed(list(zip(names, builds))))  # the base first in each round

def allocrr(b): return os.path.join(b, "bin", "allocrr")
def cache(b):
    d = os.path.join("wl-" + str(builds.index(b)))
    os.makedirs(d, exist_ok=True)
    return d

# Preparation: each build has its own cache directory (workload versions
# differ); --rebuild forces the preparation every time.
prep = {n: [] for n in names}
events = {}
for _ in range(runs):
    for n, b in order:
        p = subprocess.run([allocrr(b), "replay", "--rebuild", "--cache-dir", cache(b), "-a", "glibc",
                            "--latency-every", "0", "--samples", "10", "--json", "synth.atr"],
                           capture_output=True, text=True, check=True)
        m = re.search(r"(\d+) events.* in ([0-9.]+) s", p.stderr)
        events[n] = int(m.group(1))
        prep[n].append(events[n] / float(m.group(2)) / 1e6)
# peak RSS of one preparation (children's max RSS: preparation dominates it)
prep_rss = {}
for n, b in order:
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True, check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)")
    out = subprocess.run([sys.executable, "-c", code, allocrr(b), "replay", "--rebuild", "--cache-dir", cache(b),
                          "-q", "-a", os.path.join(b, "lib", "libarr-bump.so"), "--touch", "none",
                          "--samples", "10", "synth.atr"], capture_output=True, text=True, check=True)
    prep_rss[n] = int(out.stdout)
wl_bytes = {n: sum(os.path.getsize(os.path.join(cache(b), f)) for f in os.listdir(cache(b))) for n, b in order}

def engine(alloc, every):
    res = {n: {"wall": [], "cpu": [], "base": [], "anom": []} for n in names}
    for _ in range(runs):
        for n, b in order:
            a = os.path.join(b, "lib", "libarr-bump.so") if alloc == "bump" else alloc
            p = subprocess.run([allocrr(b), "replay", "--cache-dir", cache(b), "-q", "-a", a, "--touch", "none",
                                "--latency-every", str(every), "--samples", "100", "--json", "synth.atr"],
                               capture_output=True, text=True, check=True)
            r = json.loads(p.stdout)["results"][0]
            res[n]["wall"].append(r["wall_ns"] / r["ops"])
            res[n]["cpu"].append(r["cpu_ns"] / r["ops"])
            res[n]["base"].append(r["baseline_rss"])
            res[n]["anom"].append(r["anomalies"])
    return {n: {k: statistics.median(v) for k, v in d.items()} for n, d in res.items()}

b0, b1, g0, g1 = engine("bump", 0), engine("bump", 1), engine("glibc", 0), engine("glibc", 1)
tb = os.path.getsize("synth.atr")
ev = events[names[0]]
rows = [
    ("engine into bump allocator, no timing (ns/call wall, upper bound of overhead)", lambda n: f"{b0[n]['wall']:.1f}", "<= 10"),
    ("engine into bump allocator, no timing (ns/call CPU)", lambda n: f"{b0[n]['cpu']:.1f}", ""),
    ("engine into bump allocator, every call timed (ns/call wall)", lambda n: f"{b1[n]['wall']:.1f}", ""),
    ("engine into glibc, no timing (ns/call wall)", lambda n: f"{g0[n]['wall']:.1f}", ""),
    ("engine into glibc, every call timed (ns/call wall)", lambda n: f"{g1[n]['wall']:.1f}", ""),
    ("workload preparation (M events/s)", lambda n: f"{statistics.median(prep[n]):.1f}", ">= 20"),
    ("preparing process peak RSS (MiB)", lambda n: f"{prep_rss[n] / 2**20:.1f}", "bounded"),
    ("trace size / workload size (MiB)", lambda n: f"{tb / 2**20:.1f} / {wl_bytes[n] / 2**20:.1f}", ""),
    ("workload bytes per call", lambda n: f"{wl_bytes[n] / ev:.2f}", ""),
    ("engine baseline RSS (MiB)", lambda n: f"{b0[n]['base'] / 2**20:.1f}", ""),
    ("anomalies (bump, glibc)", lambda n: f"{int(b0[n]['anom'])}, {int(g0[n]['anom'])}", "0"),
]
cols = list(reversed(names))
print(f"## allocrr replay: {ev:,} events, {threads} thread(s), median of {runs} runs\n")
print("| figure | " + " | ".join(cols) + " | target |")
print("|---|" + "---|" * len(cols) + "---|")
for label, f, target in rows:
    print(f"| {label} | " + " | ".join(f(n) for n in cols) + f" | {target} |")
PY
