#!/usr/bin/env bash
# make demo: record a bundled real workload (python3 building and sorting
# strings, PYTHONMALLOC=malloc so every object is a malloc) into
# allocrr-report/demo.atr, then `allocrr report configs/demo.yaml`: the
# trace's analyses beside two bundled traces, each replayed into glibc, the
# built-in allocator and every other allocator installed; the terminal
# summary, then where the HTML page is.
#   scripts/demo.sh [BUILD_DIR]     (DEMO_N: strings to build, default 100000)
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
allocrr=$build/bin/allocrr
[ -x "$allocrr" ] || { echo "demo: no $allocrr: run 'make build' first" >&2; exit 1; }
out=allocrr-report   # configs/demo.yaml names allocrr-report/demo.atr
mkdir -p "$out"
py=/usr/bin/python3
[ -x "$py" ] || py=$(python3 -c 'import sys; print(sys.executable)')  # the interpreter, not a shim
n=${DEMO_N:-100000}

step() { printf '\n== %s\n' "$*"; }

step "1/3 allocrr record -o $out/demo.atr -- $py bench/workloads/py_strings.py $n"
PYTHONMALLOC=malloc "$allocrr" record -o "$out/demo.atr" -- "$py" bench/workloads/py_strings.py "$n"

step "2/3 allocrr info $out/demo.atr"
"$allocrr" info "$out/demo.atr"

installed=()
for a in jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4; do
	ldconfig -p 2>/dev/null | grep -q "${a#*:}" && installed+=("${a%%:*}")
done
step "3/3 allocrr report configs/demo.yaml (3 traces x glibc, builtin${installed[*]:+, ${installed[*]}}; 3 runs each)"
rc=0
"$allocrr" report configs/demo.yaml || rc=$?
echo
echo "report: $(pwd)/$out/report.html  (also report.json, report.csv beside it)"
[ "$rc" = 3 ] && echo "(a check of configs/demo.yaml broke: see above)"
exit "$rc"
