#!/usr/bin/env bash
# bench-stress-floor.sh: where the recorder's time goes on the 4-thread
# malloc/free stress, measured by switching its parts off one at a time.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bash bench/bench-stress-floor.sh [BUILD_DIR]

Builds a second liballocrr-record.so with ALLOCRR_DIAG_KNOBS=ON into a
temporary directory (the switches below exist only there), then runs the
stress workload (bench/workloads/stress.c: 4 threads, ~10M malloc + ~10M
free) RUNS times, alternating within each round:
  native        the program alone
  full          recorded as shipped: exact time on every call, encoded
  stale-time    the TSC read every 16th call per thread even with several
                threads (cross-thread order no longer exact)
  no-encode     exact time, but the flusher drops records instead of
                encoding and writing them
  stale+none    both: what the hooks and buffers alone cost
and prints medians of wall time and CPU time (user+sys) with their ratios to
native, then bench-clock's table (the cost of one clock read beside
cache-missing loads). Only `full` writes a usable trace.

Arguments:
  BUILD_DIR   CMake build tree holding bin/bench-clock (default: build)
Environment:
  RUNS=N      rounds (default 5)
  STRESS_N=N  allocations (default 10000000)
EOF
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
build=$(cd "${1:-build}" && pwd)
runs=${RUNS:-5}
stress_n=${STRESS_N:-10000000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-stress-floor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "building the diagnostic recorder ..." >&2
cmake -S "$src" -B "$tmp/diag" -DCMAKE_BUILD_TYPE=Release -DALLOCRR_DIAG_KNOBS=ON >/dev/null
cmake --build "$tmp/diag" -j2 --target allocrr-record >/dev/null
lib=$tmp/diag/lib/liballocrr-record.so
cc -O2 -pthread "$here/workloads/stress.c" -o "$tmp/stress"

variants="native full stale-time no-encode stale+none"
# one run: prints "wall cpu"
one() {
	local v=$1 envs=()
	case $v in
	native) ;;
	full) envs=(LD_PRELOAD="$lib" ALLOCRR_OUTPUT="$tmp/t.atr") ;;
	stale-time) envs=(LD_PRELOAD="$lib" ALLOCRR_OUTPUT="$tmp/t.atr" ALLOCRR_DIAG_STALE_TIME=1) ;;
	no-encode) envs=(LD_PRELOAD="$lib" ALLOCRR_OUTPUT="$tmp/t.atr" ALLOCRR_DIAG_NO_ENCODE=1) ;;
	stale+none) envs=(LD_PRELOAD="$lib" ALLOCRR_OUTPUT="$tmp/t.atr" ALLOCRR_DIAG_STALE_TIME=1
		ALLOCRR_DIAG_NO_ENCODE=1) ;;
	esac
	env "${envs[@]}" /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$tmp/stress" "$stress_n" 4 >/dev/null
	awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$tmp/time"
}

for v in $variants; do : >"$tmp/$v.wall"; : >"$tmp/$v.cpu"; done
for r in $(seq "$runs"); do
	echo "round $r/$runs ..." >&2
	for v in $variants; do
		read -r wall cpu < <(one "$v")
		echo "$wall" >>"$tmp/$v.wall"
		echo "$cpu" >>"$tmp/$v.cpu"
	done
done

median() { sort -n "$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
nw=$(median "$tmp/native.wall") nc=$(median "$tmp/native.cpu")
echo "| variant | wall s | × native | CPU s | × native |"
echo "|---|---|---|---|---|"
for v in $variants; do
	w=$(median "$tmp/$v.wall") c=$(median "$tmp/$v.cpu")
	awk -v v="$v" -v w="$w" -v c="$c" -v nw="$nw" -v nc="$nc" \
		'BEGIN { printf "| %s | %.2f | %.2f | %.2f | %.2f |\n", v, w, w / nw, c, c / nc }'
done
echo
"$build/bin/bench-clock"
