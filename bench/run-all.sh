#!/usr/bin/env bash
# Run every benchmark script (bench/bench-*.sh) against one build.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
for b in bench/bench-*.sh; do
  echo "== $b"
  bash "$b" "$build"
done
