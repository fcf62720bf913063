#!/usr/bin/env bash
# bench/bench-alloc-harden.sh [BUILD_DIR] [TRACE] - what the allocator's
# hardening (docs/allocator.md) costs: liballocrr-malloc.so (the default
# mask: encoded links, segment-map test) and liballocrr-malloc-hardfull.so
# (every check: block grid and double-free tests on free's fast path too)
# against the same code without it (liballocrr-malloc-nohard.so), RUNS
# alternating runs each (default 7), medians and ratios to the plain one:
#   pair    malloc(64)+free, ns (CPU time: the machine may be shared)
#   churn   free+malloc of a random one of 64 Ki live blocks, ns (CPU time:
#           frees of cold blocks, where reading the freed block's first word
#           costs most)
#   replay  a recorded trace (TRACE, else python3 recorded here) replayed
#           serially, wall and CPU ms (bench/replay-ab.py)
set -u
build=${1:-build}
trace=${2:-}
runs=${RUNS:-7}
micro=$build/bin/bench-alloc-micro
hard=$build/lib/liballocrr-malloc.so full=$build/lib/liballocrr-malloc-hardfull.so
plain=$build/lib/liballocrr-malloc-nohard.so
for f in "$micro" "$hard" "$full" "$plain" "$build/bin/allocrr"; do
	[ -e "$f" ] || { echo "bench-alloc-harden: build $f first" >&2; exit 1; }
done
hard=$(readlink -f "$hard") full=$(readlink -f "$full") plain=$(readlink -f "$plain")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

# ab KEY CMD...: run CMD RUNS times under each library, alternating
ab() {
	local key=$1; shift
	for ((r = 0; r < runs; r++)); do
		LD_PRELOAD=$hard "$@" >>"$tmp/$key.hard"
		LD_PRELOAD=$full "$@" >>"$tmp/$key.full"
		LD_PRELOAD=$plain "$@" >>"$tmp/$key.plain"
	done
	local h f p
	h=$(median <"$tmp/$key.hard") f=$(median <"$tmp/$key.full") p=$(median <"$tmp/$key.plain")
	printf "  %-8s default %8.2f (%s)  full %8.2f (%s)  plain %8.2f\n" "$key" "$h" "$(ratio "$h" "$p")" \
		"$f" "$(ratio "$f" "$p")" "$p"
}

echo "== hardening cost: medians of $runs alternating runs ($(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
ab pair "$micro" pair "${PAIR_ITERS:-5000000}" cpu
ab churn "$micro" churn "${CHURN_ROUNDS:-20}" cpu

if [ -z "$trace" ]; then
	py=$(command -v python3 >/dev/null && python3 -c 'import sys; print(sys.executable)')
	[ -n "$py" ] || { echo "  replay   skipped: no python3 to record"; exit 0; }
	cat >"$tmp/t.py" <<'PY'
import json
d = {str(i): [i, str(i) * 3, {"k": i}] for i in range(30000)}
s = json.dumps(d)
assert json.loads(s) == d
print(len(sorted(str(i * 7919)[::-1] for i in range(60000))))
PY
	trace=$tmp/py.atr
	PYTHONMALLOC=malloc "$build/bin/allocrr" record -q -o "$trace" -- "$py" "$tmp/t.py" >/dev/null || exit 1
fi
echo "  replay of $(basename "$trace"):"
python3 "$here/replay-ab.py" -n "$runs" --allocrr "$build/bin/allocrr" --replay-arg=--threads --replay-arg=serial \
	"$trace" default="$hard" full="$full" plain="$plain" 2>/dev/null | sed 's/^/  /'
