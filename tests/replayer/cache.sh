#!/bin/sh
# The workload cache: built once, reused, rebuilt when the trace changes
# (new contents, new mtime) or the cache is damaged; --cache-dir honoured.
. "$(dirname "$0")/lib.sh"
prepared() { "$ALLOCRR" replay -a glibc "$@" 2>&1 >/dev/null | grep -c "prepared" || true; }
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-calls" || fail "recording"
[ "$(prepared t.atr)" = 1 ] || fail "first replay did not prepare"
[ "$(prepared t.atr)" = 0 ] || fail "second replay prepared again"
touch -d '2001-01-01' t.atr
[ "$(prepared t.atr)" = 1 ] || fail "new mtime: cache not rebuilt"
[ "$(prepared t.atr)" = 0 ] || fail "rebuilt cache not reused"
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-frag" contiguous 2>/dev/null || fail "recording 2"
"$ALLOCRR" replay -a glibc --json t.atr 2>err > r.json || fail "replay of the new trace"
grep -q prepared err || fail "new trace: cache not rebuilt"
[ "$(json 'd["workload"]["calls"]' r.json)" -gt 200000 ] || fail "stale workload replayed"
head -c 100 t.atr.wl > x && mv x t.atr.wl
[ "$(prepared t.atr)" = 1 ] || fail "damaged cache not rebuilt"
mkdir cache
[ "$(prepared --cache-dir cache t.atr)" = 1 ] || fail "cache dir: not prepared"
ls cache/t.atr.*.wl > /dev/null || fail "cache dir: no workload"
[ "$(prepared --cache-dir cache t.atr)" = 0 ] || fail "cache dir: not reused"
[ "$(prepared --rebuild t.atr)" = 1 ] || fail "--rebuild"
echo "ok"
