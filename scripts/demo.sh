#!/usr/bin/env bash
# make demo: record a bundled real workload (python3 building and sorting
# strings, PYTHONMALLOC=malloc so every object is a malloc) with its call
# stacks into allocrr-report/demo.atr, then `allocrr report` on configs/demo.yaml with it added: the
# trace's analyses beside two bundled traces, each replayed into glibc, the
# built-in allocator and every other allocator installed; the terminal
# summary at a glance, then where the HTML page and the full summary are.
#   scripts/demo.sh [BUILD_DIR]     (DEMO_N: strings to build, default 100000)
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
allocrr=$build/bin/allocrr
[ -x "$allocrr" ] || { echo "demo: no $allocrr: run 'make build' first" >&2; exit 1; }
out="allocrr-report"   # the recording and its report go here
mkdir -p "$out"
py=/usr/bin/python3
[ -x "$py" ] || py=$(python3 -c 'import sys; print(sys.executable)')  # the interpreter, not a shim
n=${DEMO_N:-100000}

step() { printf '\n== %s\n' "$*"; }

step "1/3 allocrr record --stacks -o $out/demo.atr -- $py bench/workloads/py_strings.py $n"
PYTHONMALLOC=malloc "$allocrr" record --stacks -o "$out/demo.atr" -- "$py" bench/workloads/py_strings.py "$n"

step "2/3 allocrr info $out/demo.atr"
"$allocrr" info "$out/demo.atr"

installed=()
for a in jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4; do
	ldconfig -p 2>/dev/null | grep -q "${a#*:}" && installed+=("${a%%:*}")
done
others=$(IFS=,; echo "${installed[*]:-}" | sed 's/,/, /g')
step "3/3 allocrr report $out/demo.yaml (configs/demo.yaml with $out/demo.atr added: 3 traces x glibc, builtin${others:+, $others}; 3 runs each)"
rc=0
sed "/^traces:/a\\  - $out/demo.atr" configs/demo.yaml >"$out/demo.yaml"   # the recording first
"$allocrr" report "$out/demo.yaml" >"$out/summary.txt" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "demo: allocrr report failed (exit $rc)" >&2; exit "$rc"; }

step "the report at a glance (replays: medians of 3 runs, min-max; ratios to glibc)"
python3 bench/alloc-table.py "$out/report.json" --best
echo
sed -n '/^checks$/,$p' "$out/summary.txt"
echo
echo "full terminal summary: $out/summary.txt ($(wc -l <"$out/summary.txt") lines)"
echo "report page:           $(pwd)/$out/report.html"
echo "data:                  $out/report.json, $out/report.csv"
[ "$rc" = 3 ] && echo "(a check of configs/demo.yaml broke: see above)"
exit "$rc"
