#!/usr/bin/env bash
# bench-stacks.sh: the cost of `allocrr record --stacks` on real workloads,
# side by side with plain recording and heaptrack, in one run.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bash bench/bench-stacks.sh [BUILD_DIR]

For python3 (PYTHONMALLOC=malloc, strings built and sorted), sqlite3
(inserts, two indexes, :memory:) and cc1 (gcc's compiler proper, -O1, on a
generated C file, as bench-analyze.sh runs it), runs RUNS rounds,
alternating the modes within each:
  native         the workload alone
  allocrr        allocrr record (no stacks)
  stacks         allocrr record --stacks (the default unwinder: cached CFA rules)
  stacks-fp      the same with ALLOCRR_UNWIND=fp (frame pointers only)
  stacks-unw     the same with ALLOCRR_UNWIND=libunwind (libunwind's unw_backtrace)
  sampled        allocrr record --stack-sample 512K
  heaptrack      heaptrack -r (record only), when installed
  allocrr-nice   allocrr record with ALLOCRR_FLUSHER_NICE=10 (not in the
                 default set: name it in MODES)
and prints the load average at the start, then a Markdown table of median
wall and CPU (user + system) times and the least CPU time of the rounds,
their slowdowns against native, trace bytes per event and the mean number
of frames of the stacks recorded, then the load average at the end. On a
shared machine the least CPU time is the firm figure: other jobs only ever
add to a run's time (cache and core contention), so the median moves with
the load and the minimum much less. A load above half the CPUs is flagged,
and the table's last column gives the 1-minute load average when each
workload's rounds ended, so a figure can be read with the load it had.

Environment:
  RUNS=N           rounds (default 3)
  SCALE=small|medium|full  workload sizes (default medium: about a second of
                   native run each, so that a run is well above the timer's
                   0.01 s and the recorder's start-up; small: ~0.25 s each)
  PYTHON=PATH      the python3 to measure (default /usr/bin/python3)
  WORKLOADS="..."  subset and order (default: python3 sqlite3 cc1)
  MODES="..."      subset of the modes, by spaces or commas (default: all but allocrr-nice)
EOF2
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build_dir=${1:-build}
runs=${RUNS:-3}
case "${SCALE:-medium}" in
full) py_n=500000 sql_n=200000 c_lines=100000 ;;
medium) py_n=200000 sql_n=100000 c_lines=30000 ;;
small) py_n=50000 sql_n=20000 c_lines=10000 ;;
*) echo "bench-stacks: SCALE must be small, medium or full" >&2; exit 2 ;;
esac
case "$runs" in '' | *[!0-9]* | 0) echo "bench-stacks: RUNS must be a positive integer" >&2; exit 2 ;; esac
python=${PYTHON:-/usr/bin/python3}
allocrr=$(cd "$build_dir/bin" && pwd)/allocrr
heaptrack=$(command -v heaptrack || true)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-stacks.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$python" "$here/workloads/sqlite_gen.py" "$sql_n" >"$tmp/w.sql"
"$python" "$here/workloads/gen_c.py" "$c_lines" >"$tmp/big.c"
# cc1 exactly as the driver would run it, writing to our own .s
bench_cc1 "$tmp/big.c" "$tmp/big.s"

# run MODE WORKLOAD: prints "wall_ns cpu_ns" (cpu: user + system of the run's processes)
run() {
	local mode=$1 wl=$2 in=/dev/null
	local -a cmd env=()
	case "$wl" in
	python3) cmd=("$python" "$here/workloads/py_strings.py" "$py_n"); env=(PYTHONMALLOC=malloc) ;;
	sqlite3) cmd=("$(command -v sqlite3)" :memory:); in=$tmp/w.sql ;;
	cc1) cmd=("${cc1_cmd[@]}") ;;
	esac
	local -a pre=()
	local rec=("$allocrr" record -q -o "$tmp/$wl-$mode.atr")
	case "$mode" in
	native) ;;
	allocrr) pre=("${rec[@]}" --) ;;
	stacks) pre=("${rec[@]}" --stacks --) ;;
	stacks-fp) pre=("${rec[@]}" --stacks --); env+=(ALLOCRR_UNWIND=fp) ;;
	stacks-unw) pre=("${rec[@]}" --stacks --); env+=(ALLOCRR_UNWIND=libunwind) ;;
	sampled) pre=("${rec[@]}" --stack-sample 512K --) ;;
	allocrr-nice) pre=("${rec[@]}" --); env+=(ALLOCRR_FLUSHER_NICE=10) ;;
	heaptrack) pre=("$heaptrack" -r -o "$tmp/ht-$wl") ;;
	esac
	/usr/bin/env "${env[@]}" /usr/bin/time -f "%e %U %S" -o "$tmp/time" "${pre[@]}" "${cmd[@]}" <"$in" >/dev/null 2>&1
	awk '{ printf "%.0f %.0f\n", $1 * 1e9, ($2 + $3) * 1e9 }' "$tmp/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
least() { sort -n | head -n1; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
loaded() { awk -v l="$1" -v n="$(nproc)" 'BEGIN { exit !(l + 0 > n / 2) }'; }

read -r -a modes <<<"$(echo "${MODES:-native allocrr stacks stacks-fp stacks-unw sampled heaptrack}" | tr , " ")"
[ -n "$heaptrack" ] || modes=("${modes[@]/heaptrack/}")
read -r -a wls <<<"${WORKLOADS:-python3 sqlite3 cc1}"
load0=$(loadavg)
echo "bench-stacks: $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, SCALE=${SCALE:-medium}, RUNS=$runs, load average $load0 at the start"
echo
echo "| workload | mode | median wall s | slowdown | median cpu s | cpu slowdown | least cpu s | least cpu slowdown | bytes/event | mean frames | load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for wl in "${wls[@]}"; do
	declare -A walls=() cpus=()
	for ((r = 0; r < runs; r++)); do
		for m in "${modes[@]}"; do
			[ -n "$m" ] || continue
			read -r w c < <(run "$m" "$wl")
			walls[$m]+="$w "
			cpus[$m]+="$c "
		done
	done
	wl_load=$(cut -d' ' -f1 /proc/loadavg)
	nat=$(echo "${walls[native]}" | tr ' ' '\n' | grep . | median)
	natc=$(echo "${cpus[native]}" | tr ' ' '\n' | grep . | median)
	natl=$(echo "${cpus[native]}" | tr ' ' '\n' | grep . | least)
	for m in "${modes[@]}"; do
		[ -n "$m" ] || continue
		med=$(echo "${walls[$m]}" | tr ' ' '\n' | grep . | median)
		medc=$(echo "${cpus[$m]}" | tr ' ' '\n' | grep . | median)
		minc=$(echo "${cpus[$m]}" | tr ' ' '\n' | grep . | least)
		bpe=n/a depth=n/a
		if [ -f "$tmp/$wl-$m.atr" ]; then
			bpe=$("$allocrr" info --json "$tmp/$wl-$m.atr" | "$python" -c 'import json,sys; print(json.loads(sys.stdin.readline())["bytes_per_event"])')
			if [ "${m%-nice}" != allocrr ]; then
				depth=$("$allocrr" dump --json --stacks --op malloc,calloc,realloc "$tmp/$wl-$m.atr" | "$python" -c '
import json, sys
n = d = 0
for line in sys.stdin:
    e = json.loads(line)
    if e.get("stack"):
        n += 1; d += len(e["stack"])
print("%.1f" % (d / max(n, 1)))')
			fi
		fi
		awk -v w="$wl" -v m="$m" -v t="$med" -v n="$nat" -v c="$medc" -v nc="$natc" -v l="$minc" -v nl="$natl" \
			-v b="$bpe" -v d="$depth" -v ld="$wl_load" \
			'BEGIN { printf "| %s | %s | %.3f | x%.2f | %.3f | x%.2f | %.3f | x%.2f | %s | %s | %s |\n", w, m, t / 1e9, t / n,
				 c / 1e9, c / (nc ? nc : 1), l / 1e9, l / (nl ? nl : 1), b, d, ld }'
	done
	unset walls cpus
done
load1=$(loadavg)
echo
echo "Load average $load1 at the end."
if loaded "${load0%% *}" || loaded "${load1%% *}"; then
	echo "**Loaded machine** (1-minute load above half the CPUs): wall times and medians are noisy; read the least CPU times."
fi
