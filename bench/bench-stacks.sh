#!/usr/bin/env bash
# bench-stacks.sh: the cost of `allocrr record --stacks` on real workloads,
# side by side with plain recording and heaptrack, in one run.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bash bench/bench-stacks.sh [BUILD_DIR]

For python3 (PYTHONMALLOC=malloc, strings built and sorted) and sqlite3
(inserts, two indexes, :memory:), runs RUNS rounds, alternating within each:
  native         the workload alone
  allocrr        allocrr record (no stacks)
  stacks-fp      allocrr record --stacks (frame-pointer walk, the default)
  stacks-unw     the same with ALLOCRR_UNWIND=libunwind (DWARF unwinding)
  heaptrack      heaptrack -r (record only), when installed
and prints a Markdown table of median wall times, slowdowns against native,
trace bytes per event and the deepest recorded stack's mean depth.

Environment:
  RUNS=N           rounds (default 3)
  SCALE=small|full workload sizes (default small: the machine is shared)
  PYTHON=PATH      the python3 to measure (default /usr/bin/python3)
EOF2
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build_dir=${1:-build}
runs=${RUNS:-3}
case "${SCALE:-small}" in
full) py_n=500000 sql_n=200000 ;;
small) py_n=50000 sql_n=20000 ;;
*) echo "bench-stacks: SCALE must be small or full" >&2; exit 2 ;;
esac
python=${PYTHON:-/usr/bin/python3}
allocrr=$(cd "$build_dir/bin" && pwd)/allocrr
heaptrack=$(command -v heaptrack || true)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-stacks.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$python" "$here/workloads/sqlite_gen.py" "$sql_n" >"$tmp/w.sql"

now() { date +%s%N; }
# run MODE WORKLOAD: prints the wall time in ns
run() {
	local mode=$1 wl=$2 t0 t1 in=/dev/null
	local -a cmd env=()
	case "$wl" in
	python3) cmd=("$python" "$here/workloads/py_strings.py" "$py_n"); env=(PYTHONMALLOC=malloc) ;;
	sqlite3) cmd=("$(command -v sqlite3)" :memory:); in=$tmp/w.sql ;;
	esac
	local -a pre=()
	case "$mode" in
	native) ;;
	allocrr) pre=("$allocrr" record -q -o "$tmp/$wl-$mode.atr" --) ;;
	stacks-fp) pre=("$allocrr" record -q --stacks -o "$tmp/$wl-$mode.atr" --) ;;
	stacks-unw) pre=("$allocrr" record -q --stacks -o "$tmp/$wl-$mode.atr" --); env+=(ALLOCRR_UNWIND=libunwind) ;;
	heaptrack) pre=("$heaptrack" -r -o "$tmp/ht-$wl") ;;
	esac
	t0=$(now)
	env "${env[@]}" "${pre[@]}" "${cmd[@]}" <"$in" >/dev/null 2>&1
	t1=$(now)
	echo $((t1 - t0))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

modes=(native allocrr stacks-fp stacks-unw)
[ -n "$heaptrack" ] && modes+=(heaptrack)
echo "| workload | mode | median s | slowdown | bytes/event | mean depth |"
echo "|---|---|---|---|---|---|"
for wl in python3 sqlite3; do
	declare -A times=()
	for ((r = 0; r < runs; r++)); do
		for m in "${modes[@]}"; do
			times[$m]+="$(run "$m" "$wl") "
		done
	done
	nat=$(echo "${times[native]}" | tr ' ' '\n' | grep . | median)
	for m in "${modes[@]}"; do
		med=$(echo "${times[$m]}" | tr ' ' '\n' | grep . | median)
		bpe=n/a depth=n/a
		if [ -f "$tmp/$wl-$m.atr" ]; then
			bpe=$("$allocrr" info --json "$tmp/$wl-$m.atr" | "$python" -c 'import json,sys; print(json.loads(sys.stdin.readline())["bytes_per_event"])')
			if [ "$m" != allocrr ]; then
				depth=$("$allocrr" dump --json --stacks --op malloc,calloc,realloc "$tmp/$wl-$m.atr" | "$python" -c '
import json, sys
n = d = 0
for line in sys.stdin:
    e = json.loads(line); n += 1; d += len(e.get("stack", []))
print("%.1f" % (d / max(n, 1)))')
			fi
		fi
		awk -v w="$wl" -v m="$m" -v t="$med" -v n="$nat" -v b="$bpe" -v d="$depth" \
			'BEGIN { printf "| %s | %s | %.3f | x%.2f | %s | %s |\n", w, m, t / 1e9, t / n, b, d }'
	done
	unset times
done
