#!/usr/bin/env bash
# bench-seeds.sh: the seeds' tables as this machine reproduces them.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bash bench/bench-seeds.sh [BUILD_DIR]

Runs `allocrr report bench/seeds.yaml` on the seed scenario traces the
build recorded (BUILD_DIR/traces/scenarios/*.atr: traces/scenarios/README.md
says what each one is), replaying each into glibc, glibc with the mmap
threshold held at 128 KiB and the built-in allocator, RUNS times each
(medians), and prints on stdout a Markdown table: for each claim of the seed
articles, the seed's figure, this machine's (read from report.json by
bench/seeds-table.py), the tolerance and whether they agree. Progress goes
to stderr.

Arguments:
  BUILD_DIR   CMake build tree holding bin/allocrr and the traces (default: build)
Environment:
  RUNS=N      replays per allocator (default 3)
  OUT=DIR     keep the report there (default: a temporary directory)
EOF2
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"
bench_setup "$@"
allocrr=$build/bin/allocrr
[ -x "$allocrr" ] || { echo "bench-seeds: no $allocrr: build first" >&2; exit 1; }
[ -f "$build/traces/scenarios/threshold.atr" ] ||
	{ echo "bench-seeds: no seed traces in $build/traces/scenarios (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-seeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=${OUT:-$tmp/report}

# the config as committed, with this build's traces and RUNS
sed -e "s|build/traces/scenarios/|$build/traces/scenarios/|" -e "s|^\(  runs:\) [0-9]*|\1 $runs|" \
	-e "s|cache_dir: .*|cache_dir: $tmp/workloads|" "$here/seeds.yaml" >"$tmp/seeds.yaml"
echo "bench-seeds: allocrr report bench/seeds.yaml (RUNS=$runs) ..." >&2
rc=0
(cd "$src" && "$allocrr" report -q -o "$out" "$tmp/seeds.yaml") || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "bench-seeds: allocrr report failed (exit $rc)" >&2; exit 1; }

echo "## The seeds, reproduced"
echo
echo "\`RUNS=$runs bash bench/bench-seeds.sh\` on $(date -u '+%F %H:%M UTC'), $(nproc) CPUs," \
	"$(ldd --version | head -n1 | sed 's/.* //' | sed 's/^/glibc /'), load average $(cut -d' ' -f1-3 /proc/loadavg)." \
	"Medians of $runs replays; the seeds' figures are theirs (other machines, other glibc versions):" \
	"counts and sizes should agree closely, times within a factor."
echo
python3 "$here/seeds-table.py" "$out/report.json"
