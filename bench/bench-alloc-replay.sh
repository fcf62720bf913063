#!/usr/bin/env bash
# bench/bench-alloc-replay.sh [BUILD_DIR] - issue 4's benchmark: the built-in
# allocator against glibc, jemalloc and mimalloc on traces of real programs.
#
# Records (once; kept in TRACE_DIR) the four workloads of bench/workloads/:
#   py      PYTHONMALLOC=malloc python3 py_strings.py
#   sqlite  sqlite3 :memory: < (sqlite_gen.py 200000)
#   cc1     gcc -O1 -c on gen_c.py 100000 output (the trace whose exe is cc1)
#   stress  stress.c, STRESS_N allocations over 4 threads
# then replays each trace RUNS times with `allocrr replay -a glibc -a builtin
# -a jemalloc -a mimalloc` (every allocator in its own fresh process, one
# after the other, so each round alternates them) and prints a Markdown table
# of the medians: wall time and peak RSS (what the replayed heap added), each
# as a ratio to glibc, and builtin's time against mimalloc's, with the
# issue's targets. Then, unless PRELOAD=0, the same programs run whole under
# LD_PRELOAD (time and max RSS from /usr/bin/time, alternating, medians).
#
# Environment: RUNS (3), BASE_LIB (a liballocrr-malloc.so to compare against,
# e.g. from a build of the previous commit: an extra "before" column), TRACE_DIR (a fresh temp dir; reuse it to skip
# recording), STRESS_N (10000000), LATENCY (0: --latency-every value; 0 means
# no per-call clock reads, so time is the allocator's, not the timer's),
# PRELOAD (1), WORKLOADS ("py sqlite cc1 stress").
set -eu
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3} stress_n=${STRESS_N:-10000000} latency=${LATENCY:-0}
workloads=${WORKLOADS:-py sqlite cc1 stress}
allocrr=$build/bin/allocrr
[ -x "$allocrr" ] && [ -f "$build/lib/liballocrr-malloc.so" ] ||
	{ echo "bench-alloc-replay: build $allocrr and liballocrr-malloc.so first" >&2; exit 1; }
dir=${TRACE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/bench-alloc-replay.XXXXXX")}
mkdir -p "$dir"
wl=$src/bench/workloads
py=/usr/bin/python3

# ---- inputs and traces (kept between runs) ----
[ -x "$dir/stress" ] || cc -O2 -pthread "$wl/stress.c" -o "$dir/stress"
[ -f "$dir/x.sql" ] || $py "$wl/sqlite_gen.py" 200000 >"$dir/x.sql"
[ -f "$dir/x.c" ] || $py "$wl/gen_c.py" 100000 >"$dir/x.c"
run_wl() { # NAME: run workload NAME in $dir (stdin/stdout set by the caller)
	case $1 in
	py) PYTHONMALLOC=malloc $py "$wl/py_strings.py" ;;
	sqlite) sqlite3 :memory: <"$dir/x.sql" ;;
	cc1) gcc -O1 -c "$dir/x.c" -o "$dir/x.o" ;;
	stress) "$dir/stress" "$stress_n" 4 ;;
	esac
}
for w in $workloads; do
	[ -f "$dir/$w.atr" ] && continue
	echo "recording $w ..." >&2
	(cd "$dir" && rm -f "rec-$w.atr"* && run_wl_rec() { "$allocrr" record -q -o "rec-$w.atr" -- "$@"; } &&
		case $w in
		py) PYTHONMALLOC=malloc run_wl_rec $py "$wl/py_strings.py" >/dev/null ;;
		sqlite) run_wl_rec sqlite3 :memory: <x.sql >/dev/null ;;
		cc1) run_wl_rec gcc -O1 -c x.c -o x.o ;;
		stress) run_wl_rec ./stress "$stress_n" 4 >/dev/null ;;
		esac)
	if [ "$w" = cc1 ]; then
		for f in "$dir/rec-cc1.atr"*; do
			"$allocrr" info "$f" | grep -q '^  process .*/cc1$' && mv "$f" "$dir/cc1.atr"
		done
	else
		mv "$dir/rec-$w.atr" "$dir/$w.atr"
	fi
	rm -f "$dir/rec-$w.atr"*
	[ -f "$dir/$w.atr" ] || { echo "bench-alloc-replay: no trace for $w" >&2; exit 1; }
done

# ---- replays ----
for ((r = 0; r < runs; r++)); do
	for w in $workloads; do
		echo "replay $w, round $((r + 1))/$runs ..." >&2
		"$allocrr" replay -q -a glibc ${BASE_LIB:+-a "$BASE_LIB"} -a builtin -a jemalloc -a mimalloc \
			--latency-every "$latency" \
			--samples 200 --json "$dir/$w.atr" >"$dir/r-$w-$r.json"
	done
done

echo "== replays: medians of $runs rounds ($(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
BASE_LIB=${BASE_LIB:-} $py - "$dir" "$runs" $workloads <<'PY'
import json, os, statistics, sys
d, runs, wls = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
base = os.environ.get("BASE_LIB", "")
names = ["glibc"] + (["before"] if base else []) + ["builtin", "jemalloc", "mimalloc"]
print("| trace | threads | glibc time, peak RSS | " + " | ".join(names[1:]) + " | builtin/mimalloc time | targets (time, RSS) |")
print("|---|---|---|" + "---|" * len(names[1:]) + "---|---|")
for w in wls:
    t = {n: [] for n in names}; m = {n: [] for n in names}; th = 1
    for r in range(runs):
        doc = json.load(open(f"{d}/r-{w}-{r}.json"))
        for res in doc["results"]:
            n = res["allocator"]
            if base and n == base:
                n = "before"
            if n in t:
                t[n].append(res["wall_ns"] / 1e9); m[n].append(res["peak_rss"] / 1024)
                th = res.get("threads", th)
    T = {n: statistics.median(v) for n, v in t.items() if v}
    M = {n: statistics.median(v) for n, v in m.items() if v}
    multi = th not in (1, "serial") and str(th) != "1"
    goal = 0.6 if multi else 0.8
    cells = [f"{T['glibc']:.3f} s, {M['glibc']:.0f} KB"]
    for n in names[1:]:
        cells.append(f"{T[n] / T['glibc']:.2f}×, {M[n] / M['glibc']:.2f}×" if n in T else "-")
    vm = f"{T['builtin'] / T['mimalloc']:.2f}×" if "mimalloc" in T else "-"
    ok = lambda c: "✓" if c else "✗"
    tg = (f"≤{goal}× {ok(T['builtin'] / T['glibc'] <= goal)}, ≤1.0× {ok(M['builtin'] <= M['glibc'])}"
          + (f", ≤1.1× mi {ok(T['builtin'] <= 1.1 * T['mimalloc'])}" if "mimalloc" in T else ""))
    print(f"| {w} | {th} | " + " | ".join(cells) + f" | {vm} | {tg} |")
PY

[ "${PRELOAD:-1}" = 0 ] && exit 0
command -v /usr/bin/time >/dev/null || exit 0
libs=(glibc:)
[ -n "${BASE_LIB:-}" ] && libs+=("before:$BASE_LIB")
libs+=(builtin:$(readlink -f "$build/lib/liballocrr-malloc.so"))
for p in jemalloc:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 mimalloc:/usr/lib/x86_64-linux-gnu/libmimalloc.so.2; do
	[ -f "${p#*:}" ] && libs+=("$p")
done
rm -f "$dir/preload.txt"
for ((r = 0; r < runs; r++)); do
	for w in $workloads; do
		for l in "${libs[@]}"; do
			echo "preload $w ${l%%:*}, round $((r + 1))/$runs ..." >&2
			(cd "$dir" && LD_PRELOAD=${l#*:} /usr/bin/time -f "%e %M" -o "$dir/tm" \
				bash -c "$(declare -f run_wl); dir=$dir wl=$wl py=$py stress_n=$stress_n run_wl $w" >/dev/null)
			echo "$w ${l%%:*} $(cat "$dir/tm")" >>"$dir/preload.txt"
		done
	done
done
echo
echo "== whole programs under LD_PRELOAD: medians of $runs alternating runs (ratio to glibc)"
echo
$py - "$dir/preload.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    w, n, t, m = line.split()
    rows.setdefault(w, {}).setdefault(n, []).append((float(t), float(m)))
names = [n for n in ("before", "builtin", "jemalloc", "mimalloc") if any(n in by for by in rows.values())]
print("| program | glibc | " + " | ".join(names) + " |")
print("|---|---|" + "---|" * len(names))
for w, by in rows.items():
    med = {n: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for n, v in by.items()}
    g = med["glibc"]
    cells = [f"{g[0]:.2f} s, {g[1]:.0f} KB"]
    for n in names:
        cells.append(f"{med[n][0] / g[0]:.2f}×, {med[n][1] / g[1]:.2f}×" if n in med else "-")
    print(f"| {w} | " + " | ".join(cells) + " |")
PY
