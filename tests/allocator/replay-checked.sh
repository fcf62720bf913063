#!/usr/bin/env bash
# tests/allocator/replay-checked.sh ALLOCRR DEBUG_LIB
# Records real programs (python3, sqlite3) and replays their traces, serial
# and with their threads, into the allocator built with its invariant checks
# at level 2 (liballocrr-malloc-debug.so): a broken invariant aborts the
# replay; python3's threads also with an arena each (span_arenas=8,span_split=0). Every call must be replayed, none repaired. Skips (77) a program
# that is not installed; fails if neither is.
set -u
allocrr=$1 lib=$2
[ -x "$allocrr" ] && [ -f "$lib" ] || { echo "missing $allocrr or $lib"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0 ran=0

# check NAME TRACE MODE: replay TRACE into the checked allocator
check() {
	local name=$1 trace=$2 mode=$3
	if ! "$allocrr" replay -q -a "$lib" --threads "$mode" --samples 50 --json "$trace" >"$name.json" 2>"$name.err"; then
		echo "FAIL $name: replay failed"; head -5 "$name.err"; fail=$((fail + 1)); return
	fi
	ran=$((ran + 1))
	if python3 - "$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
calls = d["workload"]["calls"]
r = d["results"][0]
ok = r["ops"] == calls and r["anomalies"] == 0 and calls > 10000
print("%s %s: %d of %d calls, %d anomalies" % ("ok  " if ok else "FAIL", sys.argv[1][:-5], r["ops"], calls, r["anomalies"]))
sys.exit(0 if ok else 1)
PY
	then :; else fail=$((fail + 1)); fi
}

# the interpreter itself, not a wrapper that execs it (pyenv's shims)
py=$(command -v python3 >/dev/null && python3 -c 'import sys; print(sys.executable)')
if [ -n "$py" ]; then
	cat >t.py <<'PY'
import json, re, collections, threading
def work(n):
    d = {str(i): [i, str(i) * 3, {"k": i}] for i in range(n)}
    s = json.dumps(d, sort_keys=True)
    assert json.loads(s) == d
    return collections.Counter(re.findall(r"\d\d", s)).most_common(3)
ts = [threading.Thread(target=work, args=(3000,)) for _ in range(3)]
for t in ts: t.start()
print(work(6000))
for t in ts: t.join()
PY
	if PYTHONMALLOC=malloc "$allocrr" record -q -o py.atr -- "$py" t.py >/dev/null; then
		check python3-serial py.atr serial
		check python3-parallel py.atr parallel
		# every thread its own span-heap arena (the default splits only
		# threads that contend): remote frees across arenas, steal
		ALLOCRR_MALLOC_OPTIONS=span_arenas=8,span_split=0 check python3-arenas py.atr parallel
	else
		echo "FAIL recording python3"; fail=$((fail + 1))
	fi
fi

if command -v sqlite3 >/dev/null; then
	{
		echo "create table t(a integer primary key, b text);"
		echo "create index tb on t(b);"
		echo "begin;"
		for i in $(seq 1 8000); do echo "insert into t(b) values('v$((i * 7919 % 10007))-$i');"; done
		echo "commit;"
		echo "update t set b = b || b where a % 3 = 0;"
		echo "delete from t where a % 5 = 0;"
		echo "select count(*), length(group_concat(b)) from t;"
	} >t.sql
	if "$allocrr" record -q -o sq.atr -- sqlite3 :memory: <t.sql >/dev/null; then
		check sqlite3 sq.atr serial
	else
		echo "FAIL recording sqlite3"; fail=$((fail + 1))
	fi
fi

[ $ran -eq 0 ] && [ $fail -eq 0 ] && { echo "skip: neither python3 nor sqlite3 is installed"; exit 77; }
echo "$ran replays, $fail failed"
[ $fail -eq 0 ]
