#!/usr/bin/env bash
# bench/smoke.sh BUILD_DIR: the ctest entry bench.smoke. Runs `make bench`'s
# driver with tiny inputs and one run per measurement (bench/run-all.sh
# --smoke) into a copy of docs/BENCHMARKS.md, and checks that every part ran
# and wrote its table between its markers, and that the hand-written text
# around the markers is kept. It checks no figure: performance is the
# bench's business, not the tests'. Exits 77 (skip) when every part was
# skipped for a missing tool.
set -u
build=$(cd "${1:?usage: smoke.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
doc=$tmp/BENCHMARKS.md
{
	echo "# Benchmarks"
	echo
	echo "hand-written introduction, kept"
	echo
	echo "<!-- bench:seeds:begin -->"
	echo "a stale table, replaced"
	echo "<!-- bench:seeds:end -->"
	echo
	echo "hand-written closing text, kept"
} >"$doc"
fail() { echo "bench.smoke: $*" >&2; exit 1; }

bash "$src/bench/run-all.sh" --smoke --doc "$doc" "$build" 2>"$tmp/log"
rc=$?
[ "$rc" = 0 ] || { tail -n 30 "$tmp/log" >&2; fail "bench/run-all.sh --smoke exited $rc"; }
grep -q '^hand-written introduction, kept$' "$doc" || fail "the introduction was lost"
grep -q '^hand-written closing text, kept$' "$doc" || fail "the closing text was lost"
grep -q 'a stale table, replaced' "$doc" && fail "the seeds' old section was not replaced"
skipped=$(sed -n 's/^run-all: skipped (a tool missing)://p' "$tmp/log")
ran=0
for p in run record analyze replay allocators redis seeds dropin; do
	case " $skipped " in *" $p "*) echo "bench.smoke: part $p skipped (a tool missing)"; continue ;; esac
	section=$(sed -n "/<!-- bench:$p:begin -->/,/<!-- bench:$p:end -->/p" "$doc")
	[ -n "$section" ] || fail "no section for part '$p' in the document"
	[ "$p" = run ] && continue
	printf '%s\n' "$section" | grep -q '^|---' || fail "part '$p' wrote no table"
	printf '%s\n' "$section" | grep -q '^Command: `' || fail "part '$p' wrote no command"
	ran=$((ran + 1))
done
[ "$(grep -c '<!-- bench:seeds:begin -->' "$doc")" = 1 ] || fail "the seeds' markers are not unique"
[ "$ran" -gt 0 ] || { echo "bench.smoke: every part skipped"; exit 77; }
echo "bench.smoke: $ran parts ran and wrote their tables"
