#!/usr/bin/env bash
# check-workloads.sh: each benchmark workload of bench/workloads/ runs at a
# small scale, succeeds, and prints the same output twice.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bash tests/workloads/check-workloads.sh

Runs every generator of bench/workloads/ at a small scale, twice, and checks
that each run succeeds and that both runs print the same output:
  py_strings.py   (PYTHONMALLOC=malloc)
  sqlite_gen.py   piped into sqlite3 :memory:
  gen_c.py        compiled with gcc -O1 -c -Wall -Wextra -Werror
  stress.c        built with cc -O2 -pthread, run with 4 threads
  runstat.c       built, reports the status of the command it ran
A tool that is missing (sqlite3) makes its check print SKIP.
Environment: PYTHON=PATH picks the python3 (default /usr/bin/python3 if present).
Exits 0 when all checks pass, 1 otherwise.
EOF
}

case "${1:-}" in
-h | --help)
	usage
	exit 0
	;;
'') ;;
*)
	usage >&2
	exit 2
	;;
esac

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../bench/workloads" && pwd)
if [ -n "${PYTHON:-}" ]; then
	python=$PYTHON
elif [ -x /usr/bin/python3 ]; then
	python=/usr/bin/python3
else
	python=python3
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-workloads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
	echo "FAIL $1: $2"
	failures=$((failures + 1))
}

# check NAME COMMAND...: runs COMMAND twice; both must succeed with the same,
# non-empty stdout.
check() {
	local name=$1 i rc
	shift
	for i in 1 2; do
		rc=0
		"$@" >"$tmp/$name.$i" 2>"$tmp/$name.err" || rc=$?
		if [ "$rc" -ne 0 ]; then
			fail "$name" "run $i exited with status $rc ($(head -c 300 "$tmp/$name.err"))"
			return 0
		fi
	done
	if [ ! -s "$tmp/$name.1" ]; then
		fail "$name" "printed nothing"
	elif ! cmp -s "$tmp/$name.1" "$tmp/$name.2"; then
		fail "$name" "output differs between two runs"
	else
		echo "ok   $name: $(head -c 100 "$tmp/$name.1" | head -n1)"
	fi
}

# These run where set -e does not apply (under ||), so each step checks.
run_sqlite() {
	"$python" "$src/sqlite_gen.py" 2000 >"$tmp/w.sql" || return
	sqlite3 :memory: <"$tmp/w.sql"
}

run_gen_c() {
	"$python" "$src/gen_c.py" 3000 >"$tmp/big.c" || return
	[ "$(wc -l <"$tmp/big.c")" -ge 2500 ] || { echo "too few lines" >&2; return 1; }
	gcc -O1 -Wall -Wextra -Werror -c "$tmp/big.c" -o "$tmp/big.o" || return
	md5sum <"$tmp/big.c"
}

run_runstat() {
	local rc=0
	"$tmp/runstat" "$tmp/stat" sh -c 'exit 3' || rc=$?
	[ "$rc" = 3 ] || { echo "exit status $rc, not 3" >&2; return 1; }
	# SECONDS MAXRSS_KIB STATUS MINFLT
	awk '$1 >= 0 && $2 > 0 && $3 == 3 && $4 > 0 { ok = 1 } END { exit !ok }' "$tmp/stat" ||
		{ echo "bad stat line: $(cat "$tmp/stat")" >&2; return 1; }
	echo "runstat ok"
}

check py_strings env PYTHONMALLOC=malloc "$python" "$src/py_strings.py" 20000
if command -v sqlite3 >/dev/null; then
	check sqlite_gen run_sqlite
else
	echo "SKIP sqlite_gen: no sqlite3"
fi
check gen_c run_gen_c
if cc -O2 -pthread -Wall -Wextra -Werror "$src/stress.c" -o "$tmp/stress" 2>"$tmp/cc.err"; then
	check stress "$tmp/stress" 200000 4
else
	fail stress "does not build: $(head -c 300 "$tmp/cc.err")"
fi
if cc -O2 -Wall -Wextra -Werror "$src/runstat.c" -o "$tmp/runstat" 2>"$tmp/cc.err"; then
	check runstat run_runstat
else
	fail runstat "does not build: $(head -c 300 "$tmp/cc.err")"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all workload checks passed"
