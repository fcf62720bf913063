#!/usr/bin/env bash
# bench-allocators.sh: every allocator on every bundled and recorded trace.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bash bench/bench-allocators.sh [BUILD_DIR]

Records the workloads of bench/workloads/ with `allocrr record` into
allocrr-report/bench/traces/ (py: PYTHONMALLOC=malloc python3 py_strings.py;
sqlite: sqlite3 :memory: on sqlite_gen.py's inserts; cc1: the cc1 of
gcc -O1 -c on gen_c.py's file; stress: stress.c over 4 threads; perlio:
perl -ne counting the 3-digit prefixes of generated lines, a 1-8 KiB malloc
a line whose size shrinks by the line's length; pychurn: python3 with
pymalloc on, py_churn.py's medium strings of random sizes made and dropped),
then runs
`allocrr report configs/bench.yaml`: those traces and the bundled ones
(traces/python3.atr, sqlite3.atr, gcc.atr) replayed RUNS times into glibc,
builtin, jemalloc, mimalloc and tcmalloc (those installed), and prints on
stdout a Markdown table from report.json (bench/alloc-table.py): replay
time (median, min-max, ratio to glibc), peak RSS (ratio to glibc),
fragmentation at peak and the zeroing cost, and per trace the allocator
with the lowest peak RSS. Progress goes to stderr.

Arguments:
  BUILD_DIR         CMake build tree holding bin/allocrr (default: build)
Environment:
  RUNS=N            replays per allocator (default 3)
  SCALE=full|small|tiny  workload sizes (default full; tiny: the smoke test)
  WORKLOADS="..."   subset (default: py sqlite cc1 stress perlio pychurn; perlio
                    is left out where perl is missing)
  BENCH_OUT=DIR     where traces and report go (default allocrr-report/bench)
EOF2
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"
bench_setup "$@"
scale=${SCALE:-full}
workloads=${WORKLOADS:-py sqlite cc1 stress perlio pychurn}
case "$scale" in
full) py_n=200000 sql_n=100000 c_lines=30000 stress_n=2000000 lines_n=2000000 churn_n=300000 ;;
small) py_n=20000 sql_n=10000 c_lines=3000 stress_n=200000 lines_n=200000 churn_n=30000 ;;
tiny) py_n=2000 sql_n=500 c_lines=200 stress_n=5000 lines_n=5000 churn_n=2000 ;;
*) echo "bench-allocators: SCALE must be full, small or tiny" >&2; exit 2 ;;
esac
allocrr=$build/bin/allocrr
[ -x "$allocrr" ] || { echo "bench-allocators: no $allocrr: build first" >&2; exit 1; }
py=/usr/bin/python3
[ -x "$py" ] || py=$(python3 -c 'import sys; print(sys.executable)')
note() { echo "bench-allocators: $*" >&2; }

cd "$src"
bout=${BENCH_OUT:-allocrr-report/bench}   # configs/bench.yaml's paths
dir=$bout/traces
rm -rf "$dir" && mkdir -p "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-allocators.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
wl=$here/workloads
for w in $workloads; do
	note "recording $w (SCALE=$scale) ..."
	case $w in
	py) PYTHONMALLOC=malloc "$allocrr" record -q -o "$dir/py.atr" -- "$py" "$wl/py_strings.py" "$py_n" >/dev/null ;;
	sqlite)
		"$py" "$wl/sqlite_gen.py" "$sql_n" >"$tmp/x.sql"
		"$allocrr" record -q -o "$dir/sqlite.atr" -- sqlite3 :memory: <"$tmp/x.sql" >/dev/null
		;;
	cc1)
		"$py" "$wl/gen_c.py" "$c_lines" >"$tmp/x.c"
		"$allocrr" record -q -o "$tmp/gcc.atr" -- gcc -O1 -c "$tmp/x.c" -o "$tmp/x.o"
		for f in "$tmp/gcc.atr"*; do
			case $f in *.info.json) continue ;; esac
			"$allocrr" info "$f" | grep -q '^  process .*/cc1$' && cp "$f" "$dir/cc1.atr"
		done
		[ -f "$dir/cc1.atr" ] || { note "no cc1 among gcc's traces"; exit 1; }
		;;
	stress)
		cc -O2 -pthread "$wl/stress.c" -o "$tmp/stress"
		"$allocrr" record -q -o "$dir/stress.atr" -- "$tmp/stress" "$stress_n" 4 >/dev/null
		;;
	perlio)
		command -v perl >/dev/null || { note "perl not installed: perlio left out"; continue; }
		"$py" -c 'import random, sys
r = random.Random(7)
sys.stdout.write("".join("%d\n" % r.randint(1, 2000000) for _ in range(int(sys.argv[1]))))' "$lines_n" >"$tmp/lines.txt"
		"$allocrr" record -q -o "$dir/perlio.atr" -- \
			perl -ne '$h{$1}++ if /^(\d\d\d)/; END { print scalar(keys %h), "\n" }' "$tmp/lines.txt" >/dev/null
		;;
	pychurn) "$allocrr" record -q -o "$dir/pychurn.atr" -- "$py" "$wl/py_churn.py" "$churn_n" >/dev/null ;;
	*) note "unknown workload '$w'"; exit 2 ;;
	esac
done
rm -f "$dir"/*.info.json

# the recorded traces join the bundled ones
sed -e "s|^\(  runs:\) [0-9]*|\1 $runs|" -e "s|allocrr-report/bench|$bout|g" \
	-e "/^traces:/a\\  - \"$dir/*.atr\"" configs/bench.yaml >"$tmp/bench.yaml"
note "allocrr report configs/bench.yaml (RUNS=$runs) ..."
rc=0
"$allocrr" report -q "$tmp/bench.yaml" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { note "allocrr report failed (exit $rc)"; exit 1; }

echo "## Allocators on every trace"
echo
echo "\`RUNS=$runs SCALE=$scale bash bench/bench-allocators.sh\` on $(date -u '+%F %H:%M UTC')," \
	"$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg). \`allocrr report configs/bench.yaml\`:" \
	"replays (serial engine, pages touched as the program did, no per-call timing), medians of $runs" \
	"with min–max, ratios to glibc. Fragmentation at peak live = RSS / live bytes − 1 when live bytes peak (\`fragmentation.jw.at_peak_live\`)." \
	"Zeroing cost = the replay as recorded minus the same with calloc replayed as malloc; calloc saves =" \
	"malloc + memset minus as recorded (both within the runs' noise when small)."
echo
"$py" "$here/alloc-table.py" "$bout/allocators/report.json" --best
