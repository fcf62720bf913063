#!/bin/sh
# Regenerate the workload seed corpus (tests/fuzz/workloads/*.seed: *.wl files are ignored by git) after a change
# of the workload format (ARR_WL_VERSION): workloads of the golden traces and
# of a recorded test program (every op) and of threads.ev (threads handing
# blocks to each other: sync points).
#   sh tests/fuzz/make-workload-seeds.sh build
set -eu
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
A="$BUILD/bin/allocrr"
OUT="$SRC/tests/fuzz/workloads"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for t in "$SRC"/traces/*.atr; do cp "$t" "$TMP/"; done
"$BUILD/bin/repair_trace" "$TMP/threads.atr" < "$SRC/tests/fuzz/threads.ev"
"$A" record -q -o "$TMP/calls.atr" -- "$BUILD/bin/replay-test-calls"
rm -f "$OUT"/*.seed
mkdir -p "$OUT"
for t in "$TMP"/*.atr; do
	"$A" replay -q --partial -a glibc --samples 4 --cache-dir "$TMP" "$t" > /dev/null 2>&1 || continue
	mv "$TMP/$(basename "$t")".*.wl "$OUT/$(basename "$t" .atr).seed"
done
ls -l "$OUT"
