#!/usr/bin/env bash
# bench/run-all.sh: `make bench` - every benchmark side by side in one run,
# its tables written into docs/BENCHMARKS.md between markers.
set -uo pipefail

usage() {
	cat <<'EOF2'
usage: bash bench/run-all.sh [--smoke] [--doc FILE | --no-doc] [--only "PART..."] [BUILD_DIR]

Runs the benchmark parts one after the other against BUILD_DIR (default:
build), each a script of bench/ that alternates what it compares within
each round and prints medians, min-max and ratios as Markdown:
  record      allocrr record against heaptrack (bench-record.sh)
  analyze     allocrr analyze against heaptrack_print (bench-analyze.sh)
  replay      the replay engine's overhead and preparation speed (bench-replay.sh)
  allocators  every allocator on every bundled and recorded trace (bench-allocators.sh)
  redis       redis-server recorded under redis-benchmark, replayed (bench-redis.sh)
  seeds       the seeds' claims as this machine reproduces them (bench-seeds.sh)
  stacks      allocrr record --stacks / --stack-sample against heaptrack (bench-stacks.sh)
  matrix      builtin against glibc and mimalloc on the synthetic multi-thread
              working sets: RSS and time (bench-alloc-matrix.sh)
  dropin      whole programs with builtin (and jemalloc, mimalloc) preloaded
              against glibc: max RSS, minor faults, time (bench-dropin.sh)
then rewrites each part's section of docs/BENCHMARKS.md: the text between
<!-- bench:PART:begin --> and <!-- bench:PART:end --> (a part without
markers gets them, after the last generated section); everything else in
the file is kept. A part that fails or is skipped (exit 77: a tool missing)
keeps its previous section and is named at the end (exit 1 if one failed).

  --smoke          tiny inputs, one run each (seconds): checks that every part
                   runs and prints its table, not the figures; writes no doc
                   unless --doc is given
  --doc FILE       the document to rewrite (default docs/BENCHMARKS.md)
  --no-doc         print the tables, write nothing
  --only "P ..."   these parts only (the doc's "Last make bench" line is kept)
Environment: each part's own (RUNS, SCALE, ...: see bash bench/bench-PART.sh --help).
EOF2
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
smoke=0 doc=$src/docs/BENCHMARKS.md nodoc=0 only="" build=build docset=0
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--smoke) smoke=1 ;;
	--doc) [ $# -ge 2 ] || { usage >&2; exit 2; }; doc=$2; docset=1; shift ;;
	--no-doc) nodoc=1 ;;
	--only) [ $# -ge 2 ] || { usage >&2; exit 2; }; only=$2; shift ;;
	-*) usage >&2; exit 2 ;;
	*) build=$1 ;;
	esac
	shift
done
[ "$smoke" = 1 ] && [ "$docset" = 0 ] && nodoc=1
build=$(cd "$build" 2>/dev/null && pwd) || { echo "run-all: no build directory" >&2; exit 2; }
[ -x "$build/bin/allocrr" ] || { echo "run-all: no $build/bin/allocrr: build first" >&2; exit 1; }
parts="record analyze replay allocators redis seeds stacks matrix dropin"
[ -n "$only" ] && parts=$only
for p in $parts; do
	case $p in
	record | analyze | replay | allocators | redis | seeds | stacks | matrix | dropin) ;;
	*) echo "run-all: unknown part '$p'" >&2; exit 2 ;;
	esac
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-all.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# PART -> the environment it runs with (the exact command goes into the doc)
envof() {
	if [ "$smoke" = 1 ]; then
		case $1 in
		record) echo "RUNS=1 SCALE=small WORKLOADS=python3 HEAPTRACK_FULL=0" ;;
		analyze) echo "RUNS=1 SCALE=small WORKLOADS=python3" ;;
		replay) echo "RUNS=1 CALLS=100000" ;;
		allocators) echo "RUNS=1 SCALE=tiny BENCH_OUT=$tmp/out" ;;
		redis) echo "RUNS=1 REQUESTS=1000 BENCH_OUT=$tmp/out" ;;
		seeds) echo "RUNS=1" ;;
		stacks) echo "RUNS=1 SCALE=small WORKLOADS=sqlite3 MODES=native,stacks,sampled" ;;
		matrix) echo "RUNS=1 THREADS=2 SHARING=private MIXES=mixed PHASES=steady STEPS=2000" ;;
		dropin) echo "RUNS=1 SCALE=tiny PROGRAMS=true,sed,python3 ALLOCS=glibc,builtin" ;;
		esac
	else
		case $1 in
		record) echo "RUNS=${RUNS:-5} HEAPTRACK_FULL=0" ;;
		analyze) echo "RUNS=${RUNS:-3}" ;;
		replay) echo "RUNS=${RUNS:-5}" ;;
		matrix) echo "RUNS=${RUNS:-3} STEPS=50000" ;;
		dropin) echo "RUNS=${RUNS:-5}" ;;
		*) echo "RUNS=${RUNS:-3}" ;;
		esac
	fi
}
script() { case $1 in allocators) echo bench-allocators.sh ;; matrix) echo bench-alloc-matrix.sh ;; *) echo "bench-$1.sh" ;; esac; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%F %H:%M UTC')
failed="" skipped=""
for p in $parts; do
	e=$(envof "$p") s=$(script "$p")
	cmd="$e bash bench/$s build"
	echo "== $p: $cmd" >&2
	t0=$(date +%s)
	(cd "$src" && env $e bash "bench/$s" "$build" >"$tmp/$p.md" 2> >(tee "$tmp/$p.log" >&2))
	rc=$?
	echo "== $p: exit $rc in $(($(date +%s) - t0)) s" >&2
	if [ "$rc" = 77 ]; then
		skipped="$skipped $p"
		continue
	elif [ "$rc" != 0 ] || ! grep -q '^|---' "$tmp/$p.md"; then
		echo "run-all: part '$p' failed (exit $rc) or printed no table; last lines of its log:" >&2
		tail -n 5 "$tmp/$p.log" >&2
		failed="$failed $p"
		continue
	fi
	{
		echo "Command: \`$cmd\` ($(($(date +%s) - t0)) s)."
		echo
		sed 's/^## /### /' "$tmp/$p.md"
	} >"$tmp/$p.section"
	[ "$nodoc" = 1 ] && { cat "$tmp/$p.section"; echo; }
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "Last \`make bench\`: $start, $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')),"
	echo "$(ldd --version | head -n1 | sed 's/.* /glibc /'), load average $load0 at the start, $load1 at the end."
	if awk -v l="${load0%% *} ${load1%% *}" -v n="$(nproc)" 'BEGIN { split(l, a, " "); exit !(a[1] > n / 2 || a[2] > n / 2) }'; then
		echo "**Measured on a shared, loaded VM** (other jobs ran beside it: load above half the CPUs):"
		echo "times and their ratios are noisy; counts, sizes, bytes and RSS are not affected."
	fi
	[ -n "$skipped" ] && echo "Skipped (a tool missing; earlier section kept):$skipped."
	[ -n "$failed" ] && echo "Failed (earlier section kept):$failed."
} >"$tmp/run.section"
[ "$nodoc" = 1 ] && cat "$tmp/run.section"

if [ "$nodoc" = 0 ]; then
	# the run's own section only for a whole run: with --only, each part's
	# section carries its own date and load
	python3 - "$doc" "$tmp" $([ -z "$only" ] && echo run) $parts <<'PY' || { echo "run-all: could not update $doc" >&2; exit 1; }
import os, re, sys
doc, tmp, parts = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(doc).read() if os.path.exists(doc) else "# Benchmarks\n"
for p in parts:
    f = os.path.join(tmp, p + ".section")
    if not os.path.exists(f):
        continue
    body = open(f).read().rstrip("\n")
    b, e = f"<!-- bench:{p}:begin -->", f"<!-- bench:{p}:end -->"
    block = f"{b}\n{body}\n{e}"
    if b in text and e in text:
        text = re.sub(re.escape(b) + ".*?" + re.escape(e), lambda m: block, text, count=1, flags=re.S)
    else:
        ends = [m.end() for m in re.finditer(r"<!-- bench:[a-z]+:end -->", text)]
        at = ends[-1] if ends else len(text)
        text = text[:at] + "\n\n" + block + "\n" + text[at:]
tmpf = doc + ".tmp"
open(tmpf, "w").write(text.rstrip() + "\n")
os.replace(tmpf, doc)
PY
	echo "run-all: wrote $doc" >&2
fi
[ -n "$skipped" ] && echo "run-all: skipped (a tool missing):$skipped" >&2
[ -n "$failed" ] && { echo "run-all: failed:$failed" >&2; exit 1; }
exit 0
