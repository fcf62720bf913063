#!/usr/bin/env bash
# bench-record.sh: recorder overhead of `allocrr record` against heaptrack on
# real workloads, measured side by side in one run.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bash bench/bench-record.sh [BUILD_DIR]

Builds the workloads of bench/workloads/ into a temporary directory, then for
each workload runs, alternating within each round, RUNS times:
  native           the workload alone
  allocrr          BUILD_DIR/bin/allocrr record -o T.atr -- CMD
  heaptrack -r     heaptrack -r -o H CMD   (record only)
  heaptrack        heaptrack -o H CMD      (record and interpret; optional)
and prints on stdout a Markdown table of medians, ready for docs/BENCHMARKS.md:
native time, slowdowns (median time under the tool / median native time),
allocrr trace bytes, events (from `allocrr info --json`, summed over the trace
files of all recorded processes), bytes per event, heaptrack file sizes, and
the peak RSS of the recorded process natively and under allocrr. Progress goes
to stderr. Columns of a tool that is missing read "n/a".

Workloads: python3 (PYTHONMALLOC=malloc, ~500k strings built and sorted),
sqlite3 (~200k inserts, two indexes, :memory:), cc1 (gcc's compiler proper on
a ~100k-line C file, run directly so heaptrack sees it), gcc (the same compile
through the driver: driver, cc1 and as; allocrr only, since heaptrack does not
follow children), stress (4 threads, ~10M malloc + ~10M free).

Arguments:
  BUILD_DIR        CMake build tree holding bin/allocrr (default: build)

Environment:
  RUNS=N           rounds per workload (default 5)
  SCALE=full|small full sizes (default) or ~10x smaller for a quick check
  WORKLOADS="..."  subset and order (default: python3 sqlite3 cc1 gcc stress)
  HEAPTRACK_FULL=0 skip the full (interpreting) heaptrack runs; they are also
                   skipped on cc1, where Debian's heaptrack 1.4 interpreter
                   ran out of memory (19 GB) on this workload
  PYTHON=PATH      the python3 to measure (default /usr/bin/python3 if present)
  RAW=FILE         also write every measurement, one per line, to FILE
EOF
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wl_src=$here/workloads
build_dir=${1:-build}
runs=${RUNS:-5}
scale=${SCALE:-full}
workloads=${WORKLOADS:-python3 sqlite3 cc1 gcc stress}
heaptrack_full=${HEAPTRACK_FULL:-1}

die() {
	echo "bench-record: $*" >&2
	exit 1
}
note() { echo "bench-record: $*" >&2; }

case "$runs" in
'' | *[!0-9]* | 0) die "RUNS must be a positive integer, not '$runs'" ;;
esac
case "$scale" in
full) py_n=500000 sql_n=200000 c_lines=100000 stress_n=10000000 ;;
small) py_n=50000 sql_n=20000 c_lines=10000 stress_n=1000000 ;;
*) die "SCALE must be 'full' or 'small', not '$scale'" ;;
esac

# The real interpreter, not a wrapper script (pyenv shims are bash scripts,
# and heaptrack would trace bash instead of python).
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

allocrr=
if [ -x "$build_dir/bin/allocrr" ]; then
	allocrr=$(cd "$build_dir/bin" && pwd)/allocrr
else
	note "no $build_dir/bin/allocrr: its columns will read n/a"
fi
heaptrack=
if command -v heaptrack >/dev/null; then
	heaptrack=$(command -v heaptrack)
else
	note "heaptrack not found: its columns will read n/a"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-record.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

note "building workloads in $tmp (SCALE=$scale)"
cc -O2 -pthread "$wl_src/stress.c" -o "$tmp/stress"
cc -O2 "$wl_src/runstat.c" -o "$tmp/runstat"
"$python" "$wl_src/sqlite_gen.py" "$sql_n" >"$tmp/workload.sql"
"$python" "$wl_src/gen_c.py" "$c_lines" >"$tmp/big.c"

# cc1 exactly as the driver would run it, writing to our own .s
bench_cc1 "$tmp/big.c" "$tmp/big.s"

# Sets cmd (the command), cmd_env (extra environment), cmd_in (its stdin),
# descr (how the table describes it) and has_heaptrack for workload $1.
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
		;;
	gcc)
		cmd=("$(command -v gcc)" -O1 -c "$tmp/big.c" -o "$tmp/big.o")
		descr="gcc -O1 -c (driver, cc1, as)"
		has_heaptrack=0
		;;
	stress)
		cmd=("$tmp/stress" "$stress_n" 4)
		descr="4 threads, $stress_n malloc + free"
		;;
	*)
		die "unknown workload '$1' (known: python3 sqlite3 cc1 gcc stress)"
		;;
	esac
}

# Sums the "events" of every trace that `allocrr info --json` describes,
# whether it prints one object, an array, or one object per line; n/a if it
# fails or prints no events.
count_events() {
	local json
	json=$("$allocrr" info --json "$@" 2>/dev/null) || {
		echo n/a
		return
	}
	printf '%s' "$json" | "$python" -c '
import json, sys
text = sys.stdin.read()
try:
    docs = [json.loads(text)]
except ValueError:
    docs = [json.loads(l) for l in text.splitlines() if l.strip()]
def events(d):
    if isinstance(d, list):
        return sum(events(x) for x in d)
    if isinstance(d, dict):
        if "events" in d:
            e = d["events"]
            return sum(e.values()) if isinstance(e, dict) else int(e)
        for key in ("traces", "files"):
            if key in d:
                return events(d[key])
    raise ValueError("no events key")
if not docs:
    raise ValueError("no output")
print(sum(events(d) for d in docs))
' 2>/dev/null || echo n/a
}

bytes_of() {
	local total=0 f
	for f in "$@"; do
		[ -f "$f" ] && total=$((total + $(stat -c %s "$f")))
	done
	echo "$total"
}

results=$tmp/results.tsv
: >"$results"
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

# run_mode WORKLOAD MODE ROUND: one measured run; appends a line to $results:
# workload mode round seconds maxrss_kib file_bytes events status
run_mode() {
	local wl=$1 mode=$2 round=$3 dir=$tmp/run status=0 bytes=- events=- files=()
	rm -rf "$dir"
	mkdir -p "$dir"
	local prefix=()
	case "$mode" in
	native) ;;
	allocrr) prefix=("$allocrr" record -o "$dir/T.atr" --) ;;
	heaptrack-r) prefix=("$heaptrack" -r -o "$dir/H") ;;
	heaptrack) prefix=("$heaptrack" -o "$dir/H") ;;
	esac
	env "${cmd_env[@]}" "$tmp/runstat" "$dir/stat" "${prefix[@]}" "${cmd[@]}" \
		<"$cmd_in" >"$dir/out" 2>"$dir/err" || status=$?
	local secs=- rss=-
	read -r secs rss _ <"$dir/stat" || true
	if [ "$status" -ne 0 ]; then
		note "$wl/$mode round $round failed with status $status:"
		tail -n 5 "$dir/err" >&2
		printf '%s\t%s\t%s\t-\t-\t-\t-\t%s\n' "$wl" "$mode" "$round" "$status" >>"$results"
		rm -rf "$dir"
		return 0
	fi
	case "$mode" in
	native)
		cp "$dir/out" "$tmp/$wl.native.out"
		;;
	allocrr)
		shopt -s nullglob
		files=("$dir"/T.atr*)
		shopt -u nullglob
		if [ ${#files[@]} -gt 0 ]; then
			bytes=$(bytes_of "${files[@]}")
			events=$(count_events "${files[@]}")
		fi
		if ! cmp -s "$dir/out" "$tmp/$wl.native.out"; then
			note "$wl: output under allocrr differs from the native output"
		fi
		;;
	heaptrack*)
		shopt -s nullglob
		files=("$dir"/H.*)
		shopt -u nullglob
		[ ${#files[@]} -gt 0 ] && bytes=$(bytes_of "${files[@]}")
		;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$wl" "$mode" "$round" "$secs" "$rss" \
		"$bytes" "$events" "$status" >>"$results"
	rm -rf "$dir"
}

descrs=$tmp/descr.tsv
: >"$descrs"
for wl in $workloads; do
	setup_workload "$wl"
	printf '%s\t%s\n' "$wl" "$descr" >>"$descrs"
	modes=(native)
	[ -n "$allocrr" ] && modes+=(allocrr)
	if [ -n "$heaptrack" ] && [ "$has_heaptrack" = 1 ]; then
		modes+=(heaptrack-r)
		[ "$heaptrack_full" = 1 ] && [ "$wl" != cc1 ] && modes+=(heaptrack)
	fi
	for round in $(seq 1 "$runs"); do
		for mode in "${modes[@]}"; do
			note "$wl: round $round/$runs: $mode"
			run_mode "$wl" "$mode" "$round"
		done
	done
done

[ -n "${RAW:-}" ] && cp "$results" "$RAW"

# The report.
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
cmdline="RUNS=$runs SCALE=$scale"
[ -n "${WORKLOADS:-}" ] && cmdline="$cmdline WORKLOADS=\"$workloads\""
[ "$heaptrack_full" != 1 ] && cmdline="$cmdline HEAPTRACK_FULL=$heaptrack_full"
cmdline="$cmdline bash bench/bench-record.sh $build_dir"
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
versions="gcc $(gcc -dumpfullversion), sqlite3 $(sqlite3 --version | cut -d' ' -f1), $("$python" --version 2>&1)"
[ -n "$heaptrack" ] && versions="$versions, $("$heaptrack" --version 2>&1 | head -n1)"
"$python" - "$results" "$descrs" "$runs" "$cmdline" "$(nproc) CPUs, ${cpu:-unknown CPU}" \
	"$versions" "$([ -n "$allocrr" ] && echo yes || echo no)" "$load_start" "$load_end" <<'EOF'
import statistics, sys, time

results, descrs, runs, cmdline, machine, versions, have_allocrr, load0, load1 = sys.argv[1:]
rows = {}
for line in open(results):
    wl, mode, _, secs, rss, size, events, status = line.rstrip("\n").split("\t")
    rows.setdefault((wl, mode), []).append((secs, rss, size, events, status))
order = [l.rstrip("\n").split("\t") for l in open(descrs)]

def values(wl, mode, field):
    vals = []
    for r in rows.get((wl, mode), []):
        v = r[field]
        if v not in ("-", "n/a", ""):
            vals.append(float(v))
    return vals

def med(wl, mode, field):
    vals = values(wl, mode, field)
    return statistics.median(vals) if vals else None

def failed(wl, mode):
    return any(r[4] != "0" for r in rows.get((wl, mode), []))

def mb(b):
    if b is None:
        return "n/a"
    if b >= 1e6:
        return "%.1f MB" % (b / 1e6)
    return "%.0f kB" % (b / 1e3)

def count(n):
    if n is None:
        return "n/a"
    return "%.2fM" % (n / 1e6) if n >= 1e5 else "%d" % n

def slowdown(wl, mode, native):
    if (wl, mode) not in rows:
        return "n/a"
    t = med(wl, mode, 0)
    if t is None or native is None:
        return "failed"
    s = "×%.2f" % (t / native)
    return s + " (some runs failed)" if failed(wl, mode) else s

print("## Recorder overhead")
print()
print("`%s` on %s, %s (load average %s at the start, %s at the end)." % (
    cmdline, time.strftime("%Y-%m-%d %H:%M %Z"), machine, load0, load1))
print("Versions: %s. allocrr %s." % (versions, "measured" if have_allocrr == "yes" else "not built (n/a)"))
try:
    busy = max(float(load0.split()[0]), float(load1.split()[0])) > 0.5 * float(machine.split()[0])
except (ValueError, IndexError):
    busy = False
if busy:
    print()
    print("**Warning: the machine was busy with other work (see the load averages); "
          "times and slowdowns are unreliable, sizes, events and RSS are not affected.**")
print()
print("| workload | native (min–max) | allocrr | heaptrack -r | heaptrack | allocrr trace | events | bytes/event "
      "| heaptrack -r file | heaptrack file | max RSS native | max RSS allocrr |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for wl, descr in order:
    native = med(wl, "native", 0)
    size = med(wl, "allocrr", 2)
    events = med(wl, "allocrr", 3)
    bpe = "%.2f" % (size / events) if size is not None and events else "n/a"
    rss_n = med(wl, "native", 1)
    rss_a = med(wl, "allocrr", 1)
    if rss_a is not None and rss_n is not None:
        rss_a_s = "%.0f MiB (%+.1f MiB)" % (rss_a / 1024, (rss_a - rss_n) / 1024)
    else:
        rss_a_s = "n/a"
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        descr,
        "%.2f s (%.2f–%.2f)" % (native, min(values(wl, "native", 0)), max(values(wl, "native", 0)))
        if native is not None else "failed",
        slowdown(wl, "allocrr", native),
        slowdown(wl, "heaptrack-r", native),
        slowdown(wl, "heaptrack", native),
        mb(size), count(events), bpe,
        mb(med(wl, "heaptrack-r", 2)) if (wl, "heaptrack-r") in rows else "n/a",
        mb(med(wl, "heaptrack", 2)) if (wl, "heaptrack") in rows else "n/a",
        "%.0f MiB" % (rss_n / 1024) if rss_n is not None else "n/a",
        rss_a_s))
print()
print("Medians of %s runs, the tools alternating within each round; slowdown = median time under "
      "the tool / median native time. Events and trace bytes sum all trace files allocrr wrote "
      "(the gcc row: driver, cc1 and as). heaptrack does not follow children, so the gcc row has "
      "no heaptrack columns; the full heaptrack (recording and interpreting) is not run on cc1, "
      "where Debian's heaptrack 1.4 ran out of memory. Max RSS is ru_maxrss: the largest process "
      "of the tree." % runs)
EOF
