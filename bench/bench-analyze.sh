#!/usr/bin/env bash
# bench-analyze.sh: speed and memory of `allocrr analyze --json` (every
# trace-side analysis, one pass) against heaptrack_print on recordings of
# the same programs, measured side by side in one run.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bash bench/bench-analyze.sh [BUILD_DIR]

Builds the workloads of bench/workloads/ into a temporary directory, records
each once with `allocrr record` (RSS sampling on) and once with heaptrack,
then runs, alternating within each round, RUNS times:
  analyze          allocrr analyze --trace-only --json T.atr  (every trace-side section)
  analyze-summary  allocrr analyze --trace-only --json -w summary T.atr (the core alone)
  heaptrack_print  heaptrack_print H.zst                  (its default report)
and prints on stdout a Markdown table of medians, ready for docs/BENCHMARKS.md:
events (allocrr) or allocations (heaptrack), wall time, millions of events
per second, and the peak RSS of the analysing process. Progress goes to
stderr. Columns of a tool that is missing read "n/a".

Workloads: python3 (PYTHONMALLOC=malloc, strings built and sorted), sqlite3
(inserts, two indexes, :memory:), cc1 (gcc's compiler proper on a generated
C file; heaptrack is not run on it: Debian's heaptrack 1.4 ran out of memory
interpreting it), stress (4 threads of malloc/free, allocrr only), long (the
same program, 2 threads and 5x the calls: a 100M-event trace, whose max RSS
shows that memory follows the live set, not the trace's length; allocrr
only), empty (a program that allocates nothing: the fixed start-up cost
every trace pays).

Arguments:
  BUILD_DIR        CMake build tree holding bin/allocrr (default: build)

Environment:
  RUNS=N           rounds per workload (default 3)
  SCALE=full|small full sizes (default: the recorder benchmark's) or ~10x
                   smaller for a quick check
  WORKLOADS="..."  subset and order (default: python3 sqlite3 cc1 stress long empty)
  PYTHON=PATH      the python3 to record (default /usr/bin/python3 if present)
  RAW=FILE         also write every measurement, one per line, to FILE
  KEEP=DIR         keep each workload's allocrr trace as DIR/WORKLOAD-SCALE.atr
                   (to compare documents before and after a change)
EOF
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wl_src=$here/workloads
build_dir=${1:-build}
runs=${RUNS:-3}
scale=${SCALE:-full}
workloads=${WORKLOADS:-python3 sqlite3 cc1 stress long empty}

die() {
	echo "bench-analyze: $*" >&2
	exit 1
}
note() { echo "bench-analyze: $*" >&2; }

case "$runs" in
'' | *[!0-9]* | 0) die "RUNS must be a positive integer, not '$runs'" ;;
esac
case "$scale" in
full) py_n=500000 sql_n=200000 c_lines=100000 stress_n=10000000 long_n=50000000 ;;
small) py_n=50000 sql_n=20000 c_lines=10000 stress_n=1000000 long_n=5000000 ;;
*) die "SCALE must be 'full' or 'small', not '$scale'" ;;
esac

if [ -n "${PYTHON:-}" ]; then
	python=$PYTHON
elif [ -x /usr/bin/python3 ]; then
	python=/usr/bin/python3
else
	python=$(python3 -c 'import sys; print(sys.executable)') || die "python3 not found"
fi
for tool in sqlite3 gcc cc; do
	command -v "$tool" >/dev/null || die "'$tool' not found"
done
[ -x "$build_dir/bin/allocrr" ] || die "no $build_dir/bin/allocrr: build first"
allocrr=$(cd "$build_dir/bin" && pwd)/allocrr
heaptrack= heaptrack_print=
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
	heaptrack=$(command -v heaptrack)
	heaptrack_print=$(command -v heaptrack_print)
else
	note "heaptrack or heaptrack_print not found: its columns will read n/a"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-analyze.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

note "building workloads in $tmp (SCALE=$scale)"
cc -O2 -pthread "$wl_src/stress.c" -o "$tmp/stress"
cc -O2 "$wl_src/runstat.c" -o "$tmp/runstat"
echo 'int main(void) { return 0; }' >"$tmp/empty.c"
cc -O2 "$tmp/empty.c" -o "$tmp/empty"
"$python" "$wl_src/sqlite_gen.py" "$sql_n" >"$tmp/workload.sql"
"$python" "$wl_src/gen_c.py" "$c_lines" >"$tmp/big.c"

# cc1 exactly as the driver would run it, writing to our own .s
bench_cc1 "$tmp/big.c" "$tmp/big.s"

# Sets cmd, cmd_env, cmd_in, descr and has_heaptrack for workload $1.
setup_workload() {
	cmd_env=()
	cmd_in=/dev/null
	has_heaptrack=1
	case "$1" in
	python3)
		cmd=("$python" "$wl_src/py_strings.py" "$py_n")
		cmd_env=(PYTHONMALLOC=malloc)
		descr="python3, $py_n strings"
		;;
	sqlite3)
		cmd=("$(command -v sqlite3)" :memory:)
		cmd_in=$tmp/workload.sql
		descr="sqlite3, $sql_n inserts, 2 indexes"
		;;
	cc1)
		cmd=("${cc1_cmd[@]}")
		descr="cc1 -O1, $(wc -l <"$tmp/big.c")-line C file"
		has_heaptrack=0
		;;
	stress)
		cmd=("$tmp/stress" "$stress_n" 4)
		descr="4 threads, $stress_n malloc + free"
		has_heaptrack=0
		;;
	long)
		cmd=("$tmp/stress" "$long_n" 2)
		descr="2 threads, $long_n malloc + free"
		has_heaptrack=0
		;;
	empty)
		cmd=("$tmp/empty")
		descr="a program that allocates nothing"
		;;
	*)
		die "unknown workload '$1' (known: python3 sqlite3 cc1 stress long empty)"
		;;
	esac
}

results=$tmp/results.tsv
: >"$results"
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

# measure WORKLOAD MODE ROUND COUNT CMD...: appends
# workload mode round seconds maxrss_kib count status
measure() {
	local wl=$1 mode=$2 round=$3 count=$4 status=0 secs=- rss=-
	shift 4
	"$tmp/runstat" "$tmp/stat" "$@" >/dev/null 2>"$tmp/err" || status=$?
	read -r secs rss _ <"$tmp/stat" || true
	if [ "$status" -ne 0 ]; then
		note "$wl/$mode round $round failed with status $status:"
		tail -n 5 "$tmp/err" >&2
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$wl" "$mode" "$round" "$secs" "$rss" "$count" "$status" >>"$results"
}

descrs=$tmp/descr.tsv
: >"$descrs"
for wl in $workloads; do
	setup_workload "$wl"
	printf '%s\t%s\n' "$wl" "$descr" >>"$descrs"
	dir=$tmp/run-$wl
	mkdir -p "$dir"
	note "$wl: recording with allocrr"
	env "${cmd_env[@]}" "$allocrr" record -q --no-children -o "$dir/T.atr" -- "${cmd[@]}" \
		<"$cmd_in" >/dev/null 2>"$tmp/err" || die "$wl: allocrr record failed: $(tail -n 3 "$tmp/err")"
	events=$("$allocrr" analyze --json -w summary "$dir/T.atr" |
		"$python" -c 'import json,sys; print(json.load(sys.stdin)["traces"][0]["trace"]["events"])')
	hfile=
	allocs=-
	if [ -n "$heaptrack" ] && [ "$has_heaptrack" = 1 ]; then
		note "$wl: recording with heaptrack"
		(cd "$dir" && env "${cmd_env[@]}" "$heaptrack" -o "$dir/H" "${cmd[@]}" <"$cmd_in" >/dev/null 2>"$tmp/err") ||
			note "$wl: heaptrack failed: $(tail -n 3 "$tmp/err")"
		hfile=$(ls "$dir"/H*.zst "$dir"/H*.gz 2>/dev/null | head -n1 || true)
		if [ -n "$hfile" ]; then
			allocs=$("$heaptrack_print" "$hfile" 2>/dev/null |
				sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' | head -n1)
			[ -n "$allocs" ] || allocs=-
		fi
	fi
	for round in $(seq 1 "$runs"); do
		note "$wl: round $round/$runs"
		measure "$wl" analyze "$round" "$events" "$allocrr" analyze --trace-only --json "$dir/T.atr"
		measure "$wl" analyze-summary "$round" "$events" "$allocrr" analyze --trace-only --json -w summary "$dir/T.atr"
		[ -n "$hfile" ] && measure "$wl" heaptrack_print "$round" "$allocs" "$heaptrack_print" "$hfile"
	done
	if [ -n "${KEEP:-}" ]; then
		mkdir -p "$KEEP" && cp "$dir/T.atr" "$KEEP/$wl-$scale.atr"
	fi
	rm -rf "$dir"
done

[ -n "${RAW:-}" ] && cp "$results" "$RAW"

load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
cmdline="RUNS=$runs SCALE=$scale"
[ -n "${WORKLOADS:-}" ] && cmdline="$cmdline WORKLOADS=\"$workloads\""
cmdline="$cmdline bash bench/bench-analyze.sh $build_dir"
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
"$python" - "$results" "$descrs" "$runs" "$cmdline" "$(nproc) CPUs, ${cpu:-unknown CPU}" \
	"$load_start" "$load_end" <<'EOF'
import statistics, sys, time

results, descrs, runs, cmdline, machine, load0, load1 = sys.argv[1:]
rows = {}
for line in open(results):
    wl, mode, _, secs, rss, count, status = line.rstrip("\n").split("\t")
    if status == "0" and secs != "-":
        rows.setdefault((wl, mode), []).append((float(secs), float(rss), count))
order = [l.rstrip("\n").split("\t") for l in open(descrs)]

def cell(wl, mode):
    r = rows.get((wl, mode))
    if not r:
        return ["n/a"] * 4
    secs = statistics.median(x[0] for x in r)
    rss = statistics.median(x[1] for x in r)
    n = r[0][2]
    if n in ("-", ""):
        return ["n/a", "%.2f s" % secs, "n/a", "%.1f MiB" % (rss / 1024)]
    n = int(n)
    return ["%.2fM" % (n / 1e6), "%.2f s" % secs, "%.1f" % (n / secs / 1e6), "%.1f MiB" % (rss / 1024)]

print("## Analysis speed")
print()
print("`%s` on %s, %s (load average %s at the start, %s at the end)." % (
    cmdline, time.strftime("%Y-%m-%d %H:%M %Z"), machine, load0, load1))
try:
    busy = max(float(load0.split()[0]), float(load1.split()[0])) > 0.5 * float(machine.split()[0])
except (ValueError, IndexError):
    busy = False
if busy:
    print()
    print("**Warning: the machine was busy with other work (see the load averages); "
          "times and rates are unreliable, counts and RSS are not affected.**")
print()
print("| workload | events | analyze | M events/s | max RSS | -w summary | M events/s "
      "| heaptrack allocations | heaptrack_print | M allocations/s | max RSS |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for wl, descr in order:
    a = cell(wl, "analyze")
    s = cell(wl, "analyze-summary")
    h = cell(wl, "heaptrack_print")
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        descr, a[0], a[1], a[2], a[3], s[1], s[2], h[0], h[1], h[2], h[3]))
print()
print("Medians of %s runs, alternating within each round. Events: every event of the allocrr "
      "trace (calls, RSS samples, thread events); heaptrack allocations: its \"calls to "
      "allocation functions\" (frees not counted). Max RSS is the analysing process's ru_maxrss."
      % runs)
EOF
