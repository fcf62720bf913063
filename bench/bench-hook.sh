#!/usr/bin/env bash
# bench-hook.sh [BUILD_DIR]: the recorder's cost per call on the calling
# thread: ns of thread CPU time per malloc+free pair, natively and recorded,
# alternating, median of RUNS (default 5). Also the encoder's cost per event
# and the reader's rate on the trace just recorded.
set -euo pipefail
build=${1:-build}
runs=${RUNS:-5}
n=${PAIRS:-20000000}
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for i in $(seq "$runs"); do
	"$build/bin/bench-pair" "$n" >>"$tmp/native"
	"$build/bin/allocrr" record -q -o "$tmp/pair.atr" -- "$build/bin/bench-pair" "$n" >>"$tmp/rec"
done
nat=$(median <"$tmp/native")
rec=$(median <"$tmp/rec")
echo "| malloc+free pair, thread CPU | native $nat ns | recorded $rec ns | overhead per call $(awk -v a="$rec" -v b="$nat" 'BEGIN{printf "%.1f", (a-b)/2}') ns |"
echo "(\`RUNS=$runs bash bench/bench-hook.sh $build\` on $(date -u '+%Y-%m-%d %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"
"$build/bin/bench-encode" "$tmp/pair.atr" 5000000
