#!/usr/bin/env bash
# make demo: record a bundled real workload (python3 building and sorting
# strings, PYTHONMALLOC=malloc so every object is a malloc), show what the
# trace holds, then replay it into glibc and the built-in allocator.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
allocrr=$build/bin/allocrr
out=${DEMO_OUT:-$build/demo}
mkdir -p "$out"
py=$(command -v /usr/bin/python3 || command -v python3)
echo "== allocrr record -o $out/demo.atr -- python3 bench/workloads/py_strings.py 100000"
PYTHONMALLOC=malloc "$allocrr" record -o "$out/demo.atr" -- "$py" bench/workloads/py_strings.py 100000
echo
echo "== allocrr info $out/demo.atr"
"$allocrr" info "$out/demo.atr"
echo
echo "== allocrr dump $out/demo.atr | head"
"$allocrr" dump "$out/demo.atr" | head -n 12 || true  # head closes the pipe early
echo
echo "== allocrr replay $out/demo.atr"
"$allocrr" replay "$out/demo.atr"
