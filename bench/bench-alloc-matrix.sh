#!/usr/bin/env bash
# bench/bench-alloc-matrix.sh [BUILD_DIR] - the built-in allocator's RSS and
# time matrix on the synthetic multi-thread workloads of bench/workloads/mtwork.c.
#
# For every combination of THREADS x SHARING x MIXES x PHASES it records
# `mtwork T SHARING MIX PHASE STEPS` once with `allocrr record` (kept in
# TRACE_DIR), replays it RUNS times with `allocrr replay -a glibc -a builtin
# -a mimalloc --json` (each allocator in a fresh process, one after the
# other, so rounds alternate them), and prints a Markdown table of medians:
# builtin's time against glibc and mimalloc, its peak RSS against glibc's,
# and peak RSS / ideal RSS (the live requested bytes at their peak) for
# every allocator. A cell that misses a target (time <= 0.8x glibc with one
# thread, <= 0.6x with more, <= 1.0x mimalloc; peak RSS <= 1.00x glibc) is
# marked with '!'. Shared with one thread is skipped (no other thread).
#
# Environment: THREADS ("1 2 4 8"), SHARING ("private shared"), MIXES ("small
# mixed large"), PHASES ("steady wave"), STEPS (200000 per thread), RUNS (5),
# TRACE_DIR (a fresh temp dir; reuse it to skip recording), ALLOCS (the -a
# list, default "glibc builtin mimalloc"; glibc and builtin must be in it),
# EXTRA (more .atr files to put in the same table, e.g. the traces of
# bench-alloc-replay.sh's TRACE_DIR), FLOOR=1 (replay into
# BUILD_DIR/lib/libarr-lifo.so too, bench/replayer/lifo.c: per-thread LIFO
# lists that never give memory back, the least work a malloc can do; two more
# columns: the floor's time over glibc's, and builtin's time above the floor
# over glibc's above it — the allocators' own work compared, without the
# replay engine's and the working set's page faults). A floor on the private
# rows only: on the shared ones its frees strand blocks in the freeing
# thread's lists, the allocating thread maps fresh memory, and its page
# faults make it slower than glibc (2026-12-03: t8 shared large steady 5.9x);
# on the large rows its 1 MiB chunks fault more than a coalescing heap, and
# builtin was below it on some (negative "over floor"). Not in make bench.
# Small check: THREADS=4 SHARING=private MIXES=mixed PHASES=steady RUNS=1 bench/bench-alloc-matrix.sh
set -eu
case ${1:-} in -h | --help)
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
esac
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
allocrr=$build/bin/allocrr
[ -x "$allocrr" ] || { echo "bench-alloc-matrix: build $allocrr first" >&2; exit 1; }
threads=${THREADS:-1 2 4 8} sharing=${SHARING:-private shared} mixes=${MIXES:-small mixed large}
phases=${PHASES:-steady wave} steps=${STEPS:-200000} runs=${RUNS:-5}
allocs=${ALLOCS:-glibc builtin mimalloc}
floor=
if [ "${FLOOR:-0}" = 1 ]; then
	floor=$build/lib/libarr-lifo.so
	[ -f "$floor" ] || { echo "bench-alloc-matrix: FLOOR=1 needs $floor (cmake --build)" >&2; exit 1; }
	allocs="$allocs $floor"
fi
dir=${TRACE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/bench-alloc-matrix.XXXXXX")}
mkdir -p "$dir"
[ -x "$dir/mtwork" ] || cc -O2 -pthread "$src/bench/workloads/mtwork.c" -o "$dir/mtwork"

traces=()
for t in $threads; do
	for s in $sharing; do
		[ "$t" = 1 ] && [ "$s" = shared ] && continue
		for m in $mixes; do
			for p in $phases; do
				name=t$t-$s-$m-$p-$steps
				if [ ! -f "$dir/$name.atr" ]; then
					echo "recording $name ..." >&2
					"$allocrr" record -q -o "$dir/$name.atr.tmp" -- "$dir/mtwork" "$t" "$s" "$m" "$p" "$steps" \
						>/dev/null
					mv "$dir/$name.atr.tmp" "$dir/$name.atr"
				fi
				traces+=("$dir/$name.atr")
			done
		done
	done
done
for x in ${EXTRA:-}; do traces+=("$x"); done
aargs=()
for a in $allocs; do aargs+=(-a "$a"); done
for ((r = 0; r < runs; r++)); do
	for f in "${traces[@]}"; do
		b=$(basename "$f" .atr)
		echo "replay $b, round $((r + 1))/$runs ..." >&2
		"$allocrr" replay -q "${aargs[@]}" --latency-every 0 --samples 200 --json "$f" >"$dir/r-$b-$r.json"
	done
done

echo "== bench-alloc-matrix: medians of $runs rounds ($(date -u +%F), $(nproc) CPUs, load" \
	"$(cut -d' ' -f1-3 /proc/loadavg)), $steps steps a thread"
echo
python3 - "$dir" "$runs" "$floor" "${traces[@]}" <<'EOF'
import json, os, statistics, sys
d, runs, floor, traces = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
med = statistics.median
allocs = None
rows = []
for f in traces:
    b = os.path.basename(f)[:-4]
    res = {}
    for r in range(runs):
        for x in json.load(open(os.path.join(d, f"r-{b}-{r}.json")))["results"]:
            res.setdefault(x["allocator"], []).append(x)
    allocs = allocs or list(res)
    m = {a: {k: med(x[k] for x in v) for k in ("wall_ns", "peak_rss", "ideal_rss")} for a, v in res.items()}
    rows.append((b, res["builtin"][0]["threads"], m))
fl = [a for a in allocs if floor and a == floor]
allocs = [a for a in allocs if a not in fl]
others = [a for a in allocs if a not in ("glibc", "builtin")]
hdr = ["trace", "time/glibc"] + [f"time/{a}" for a in others] + ["RSS/glibc", "glibc MB"] + \
      [f"peak/ideal {a}" for a in allocs] + (["floor/glibc", "over floor/glibc"] if fl else [])
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
miss = 0
for b, thr, m in rows:
    g, me = m["glibc"], m["builtin"]
    tg = me["wall_ns"] / g["wall_ns"]
    tmax = 0.8 if thr <= 2 else 0.6   # the replayer's main thread counts as one
    cells = [b, f"{tg:.2f}" + ("!" if tg > tmax else "")]
    for a in others:
        t = me["wall_ns"] / m[a]["wall_ns"]
        cells.append(f"{t:.2f}" + ("!" if a == "mimalloc" and t > 1.0 else ""))
    rg = me["peak_rss"] / g["peak_rss"]
    cells += [f"{rg:.3f}" + ("!" if rg > 1.0 else ""), f"{g['peak_rss'] / 2**20:.1f}"]
    cells += [f"{m[a]['peak_rss'] / m[a]['ideal_rss']:.2f}" if m[a]["ideal_rss"] else "-" for a in allocs]
    miss += any(c.endswith("!") for c in cells)
    if fl:
        f = m[fl[0]]["wall_ns"]
        cells.append(f"{f / g['wall_ns']:.2f}")
        cells.append(f"{(me['wall_ns'] - f) / (g['wall_ns'] - f):.2f}" if g["wall_ns"] > f else "-")
    print("| " + " | ".join(cells) + " |")
print(f"\n{miss} of {len(rows)} traces miss a target ('!'). Peak RSS is what the replayed heap added;")
print("ideal is the most requested bytes live at once.")
if fl:
    print("floor: libarr-lifo.so (per-thread LIFO lists, nothing given back); over floor: (builtin - floor) /")
    print("(glibc - floor), wall times: the allocators' own work compared.")
EOF
