#!/usr/bin/env bash
# tests/allocator/preload.sh LIB STRESS_BIN [sanitize|plain]
# Runs real programs with and without LD_PRELOAD=LIB and requires identical
# output and exit status. Mode "sanitize" skips (77); the sanitizer build
# runs it "plain" on liballocrr-malloc-debug.so (invariant checks on).
set -u
lib=$1 stress=$2 mode=${3:-plain}
[ "$mode" = sanitize ] && { echo "skip: LD_PRELOAD tests do not run in sanitizer builds"; exit 77; }
[ -f "$lib" ] || { echo "missing $lib"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0 ran=0

# run NAME CMD...: compare stdout+stderr+status with and without the preload
run() {
	local name=$1; shift
	( cd "$tmp/work" && "$@" ) >"$tmp/$name.ref" 2>&1; local rc_ref=$?
	( cd "$tmp/work" && LD_PRELOAD="$lib" "$@" ) >"$tmp/$name.out" 2>&1; local rc=$?
	ran=$((ran + 1))
	if [ $rc_ref -ne 0 ] || [ $rc -ne $rc_ref ] || ! cmp -s "$tmp/$name.ref" "$tmp/$name.out"; then
		echo "FAIL $name: status $rc vs $rc_ref under glibc"
		diff "$tmp/$name.ref" "$tmp/$name.out" | head -20
		fail=$((fail + 1))
	else
		echo "ok   $name ($(wc -c <"$tmp/$name.out") bytes of output)"
	fi
}
mkdir -p "$tmp/work"

# bad ALLOCRR_MALLOC_OPTIONS items: one line each on stderr, with the
# offset, and the program runs on (the good items still apply); good
# ones: not a word
ALLOCRR_MALLOC_OPTIONS='purge_delay=1000,nosuch=1,young=99999999,span_min=8x' LD_PRELOAD="$lib" \
	ls -d / >"$tmp/opt.out" 2>"$tmp/opt.err"
if [ "$(cat "$tmp/opt.out")" = / ] && [ "$(wc -l <"$tmp/opt.err")" = 3 ] &&
	grep -q "^allocrr-malloc: ALLOCRR_MALLOC_OPTIONS at offset 17: 'nosuch=1': unknown option; ignored$" "$tmp/opt.err" &&
	grep -q "offset 26: 'young=99999999': value out of range" "$tmp/opt.err" &&
	grep -q "offset 41: 'span_min=8x': not name=number" "$tmp/opt.err"; then
	echo "ok   bad ALLOCRR_MALLOC_OPTIONS said on stderr"
else
	echo "FAIL bad ALLOCRR_MALLOC_OPTIONS:"; cat "$tmp/opt.out" "$tmp/opt.err"; fail=$((fail + 1))
fi
ALLOCRR_MALLOC_OPTIONS='purge_delay=1000,mmap_threshold=256k' LD_PRELOAD="$lib" ls -d / \
	>"$tmp/opt.out" 2>"$tmp/opt.err"
if [ "$(cat "$tmp/opt.out")" = / ] && [ ! -s "$tmp/opt.err" ]; then
	echo "ok   good ALLOCRR_MALLOC_OPTIONS silent"
else
	echo "FAIL good ALLOCRR_MALLOC_OPTIONS:"; cat "$tmp/opt.err"; fail=$((fail + 1))
fi

# the preload must actually be in effect: malloc_stats() is answered by us
if command -v python3 >/dev/null; then
	LD_PRELOAD="$lib" python3 -c 'import ctypes; ctypes.CDLL(None).malloc_stats()' 2>"$tmp/ms" >/dev/null
	if grep -q 'allocrr malloc' "$tmp/ms"; then echo "ok   preload active"; else echo "FAIL preload not active"; fail=$((fail + 1)); fi
	cat >"$tmp/work/t.py" <<'PY'
import json, re, collections, hashlib
d = {str(i): [i, str(i) * 3, {"k": i, "f": i / 7}] for i in range(60000)}
s = json.dumps(d, sort_keys=True)
d2 = json.loads(s)
assert d == d2
c = collections.Counter(re.findall(r"\d\d", s))
words = sorted((str(i * 7919)[::-1] for i in range(100000)))
print(len(s), hashlib.sha256(s.encode()).hexdigest(), c.most_common(5), words[:3], words[-1])
big = bytearray(50 * 1024 * 1024); big[-1] = 7
print(sum(big[-10:]), len(b"x".join([b"ab" * i for i in range(2000)])))
PY
	PYTHONMALLOC=malloc run python3 python3 t.py
fi

if command -v sqlite3 >/dev/null; then
	{
		echo "create table t(a integer primary key, b text, c real);"
		echo "create index tb on t(b);"
		echo "begin;"
		for i in $(seq 1 20000); do echo "insert into t(b,c) values('v$((i * 7919 % 10007))-$i', $i.5);"; done
		echo "commit;"
		echo "select count(*), sum(c), min(b), max(b) from t;"
		echo "select b, count(*) from t group by substr(b,1,3) order by 2 desc limit 5;"
		echo "update t set b = b || b where a % 3 = 0;"
		echo "delete from t where a % 5 = 0;"
		echo "select count(*), length(group_concat(b)) from t;"
		echo "with recursive r(x) as (select 1 union all select x+1 from r where x < 50000) select sum(x), count(*) from r;"
	} >"$tmp/work/t.sql"
	run sqlite3 sh -c 'sqlite3 :memory: < t.sql'
fi

if command -v gcc >/dev/null; then
	cat >"$tmp/work/c.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
struct node { int v; struct node *next; };
static int sum(struct node *n) { int s = 0; for (; n; n = n->next) s += n->v; return s; }
int main(int argc, char **argv) { struct node a = {argc, 0}, b = {2, &a}; printf("%d %s\n", sum(&b), argv[0]); return 0; }
C
	run gcc-c sh -c 'gcc -O2 -g -Wall -c c.c -o c.o && sha256sum c.o'
fi

if command -v git >/dev/null; then
	run git-version git --version
	(
		cd "$tmp/work" && git init -q repo && cd repo &&
		for i in 1 2 3 4 5; do echo "line $i" >>f.txt; git add f.txt;
			GIT_AUTHOR_DATE="2020-01-0$i 00:00:00 +0000" GIT_COMMITTER_DATE="2020-01-0$i 00:00:00 +0000" \
			git -c user.name=t -c user.email=t@e commit -q -m "commit $i"; done
	) >/dev/null 2>&1
	run git-log git -C repo log --stat --format='%H %an %s'
fi

run stress "$stress" 50000

echo "$ran runs, $fail failed"
[ $fail -eq 0 ] && [ $ran -gt 0 ]
