#!/bin/sh
# bench-replay.sh [BUILD_DIR] - the replayer's figures, as a Markdown table:
#   - engine overhead per call: a synthetic trace replayed into a bump
#     allocator (libarr-bump.so: a pointer bump, free does nothing) with
#     --touch none, with and without per-call timing; the bump call itself is
#     a few ns, so ns/call is an upper bound of the engine's own cost;
#   - the same trace into glibc, for scale;
#   - workload preparation rate (events/s) and the preparing process's peak
#     memory against the trace's size (bounded memory);
#   - the engine's resident memory before the first call (baseline).
# Environment: CALLS (default 10000000), THREADS (default 1), RUNS (default 3).
set -eu
BUILD=${1:-build}
BUILD=$(cd "$BUILD" && pwd)
ALLOCRR=$BUILD/bin/allocrr
SYNTH=$BUILD/bin/bench-replay-synth
BUMP=$BUILD/lib/libarr-bump.so
PY=/usr/bin/python3
CALLS=${CALLS:-10000000} THREADS=${THREADS:-1} RUNS=${RUNS:-3}
for f in "$ALLOCRR" "$SYNTH" "$BUMP"; do
	[ -e "$f" ] || { echo "bench-replay: missing $f (build first)" >&2; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-replay.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
"$ALLOCRR" record -q --rss-interval 0 -o synth.atr -- "$SYNTH" "$CALLS" 4096 "$THREADS"

# preparation: best of RUNS, peak RSS of the preparing process
$PY - "$ALLOCRR" "$RUNS" <<'PY' > prep.txt
import resource, subprocess, sys, time, re, os
allocrr, runs = sys.argv[1], int(sys.argv[2])
best = None
for _ in range(runs):
    p = subprocess.run([allocrr, "replay", "--rebuild", "-a", "glibc", "--latency-every", "0",
                        "--samples", "10", "--json", "synth.atr"], capture_output=True, text=True, check=True)
    m = re.search(r"(\d+) events.* in ([0-9.]+) s", p.stderr)
    ev, s = int(m.group(1)), float(m.group(2))
    best = s if best is None or s < best else best
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(ev, best, rss, os.path.getsize("synth.atr"), os.path.getsize("synth.atr.wl"))
PY
read EVENTS PREP_S PREP_RSS TRACE_BYTES WL_BYTES < prep.txt

run() { # ALLOCATOR LATENCY_EVERY -> "ns_per_call baseline_rss"
	best=
	for i in $(seq "$RUNS"); do
		"$ALLOCRR" replay -q -a "$1" --touch none --latency-every "$2" --samples 100 --json synth.atr > r.json
		v=$($PY -c "import json; r=json.load(open('r.json'))['results'][0]; print(r['wall_ns']/r['ops'], r['baseline_rss'], r['anomalies'])")
		set -- "$1" "$2"
		ns=${v%% *}
		if [ -z "$best" ] || $PY -c "import sys; sys.exit(not ($ns < ${best%% *}))"; then best=$v; fi
	done
	echo "$best"
}
BUMP0=$(run "$BUMP" 0)
BUMP1=$(run "$BUMP" 1)
GLIBC0=$(run glibc 0)
GLIBC1=$(run glibc 1)

$PY - "$EVENTS" "$PREP_S" "$PREP_RSS" "$TRACE_BYTES" "$WL_BYTES" "$BUMP0" "$BUMP1" "$GLIBC0" "$GLIBC1" "$THREADS" <<'PY'
import sys
ev, prep_s, prep_rss, tb, wb = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
b0, b1, g0, g1 = [list(map(float, a.split())) for a in sys.argv[6:10]]
print(f"## allocrr replay: {ev:,} events, {sys.argv[10]} thread(s)\n")
print("| figure | value | target |")
print("|---|---|---|")
print(f"| engine into bump allocator, no timing (ns/call, upper bound of overhead) | {b0[0]:.1f} | <= 10 |")
print(f"| engine into bump allocator, every call timed (ns/call) | {b1[0]:.1f} | |")
print(f"| engine into glibc, no timing (ns/call) | {g0[0]:.1f} | |")
print(f"| engine into glibc, every call timed (ns/call) | {g1[0]:.1f} | |")
print(f"| workload preparation (M events/s) | {ev / prep_s / 1e6:.1f} | >= 20 |")
print(f"| preparing process peak RSS (MiB) | {prep_rss / 2**20:.1f} | bounded |")
print(f"| trace size / workload size (MiB) | {tb / 2**20:.1f} / {wb / 2**20:.1f} | |")
print(f"| workload bytes per call | {wb / ev:.2f} | |")
print(f"| engine baseline RSS (MiB) | {b0[1] / 2**20:.1f} | |")
print(f"| anomalies (bump, glibc) | {int(b0[2])}, {int(g0[2])} | 0 |")
PY
