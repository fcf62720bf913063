#!/bin/sh
# Build the libFuzzer targets (clang, libclang-rt-14-dev) and run each for
# SECONDS over its seed corpus (copied, so new inputs stay out of the tree):
#   sh tests/fuzz/run.sh SECONDS [--if-available]
# With --if-available (CI), a machine without clang's libFuzzer skips.
set -eu
SECS=${1:-120}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B="$SRC/build-fuzz"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' > "$probe/p.c"
if ! clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2>/dev/null; then
	[ "${2:-}" = --if-available ] && { echo "fuzz: skipped (no clang with libFuzzer: ALLOCRR_DEPS=full scripts/deps.sh)"; exit 0; }
	echo "fuzz: needs clang and libclang-rt-14-dev (ALLOCRR_DEPS=full scripts/deps.sh)" >&2
	exit 1
fi
cmake -S "$SRC" -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALLOCRR_FUZZ=ON >/dev/null
cmake --build "$B" --target fuzz-trace fuzz-workload fuzz-config fuzz-json -j"$(nproc)" >/dev/null
run() { # TARGET MAX_LEN SEEDS...
	t=$1 len=$2
	shift 2
	rm -rf "$B/corpus-$t" && mkdir -p "$B/corpus-$t" "$B/crashes-$t"
	cp "$@" "$B/corpus-$t/"
	echo "fuzz: $t for $SECS s"
	"$B/bin/$t" -max_total_time="$SECS" -max_len="$len" -malloc_limit_mb=512 -rss_limit_mb=2560 \
		-artifact_prefix="$B/crashes-$t/" -print_final_stats=1 "$B/corpus-$t" 2>"$B/$t.log" ||
		{ tail -n 40 "$B/$t.log" >&2; echo "fuzz: $t failed; the input is in $B/crashes-$t/" >&2; exit 1; }
	grep -E "stat::number_of_executed_units|Done" "$B/$t.log" | tail -n 2
}
run fuzz-trace 65536 "$SRC"/traces/*.atr
run fuzz-workload 16384 "$SRC"/tests/fuzz/workloads/*.seed
run fuzz-config 8192 "$SRC"/configs/*.yaml
run fuzz-json 65536 "$SRC"/traces/*.json
