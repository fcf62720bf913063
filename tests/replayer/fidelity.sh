#!/bin/sh
# A serial replay, itself recorded, makes the original calls in order with
# the same arguments (tests/replayer/calls.c: all ten functions, failures,
# realloc(NULL, n), realloc(p, 0)).
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o orig.atr -- "$BINDIR/replay-test-calls" || fail "recording calls"
"$ALLOCRR" replay -q -a glibc --json orig.atr > res.json || fail "replay"
[ -s orig.atr.wl ] || fail "no workload cached beside the trace"
"$ALLOCRR" record -q -o replay.atr -- "$ENGINE" --threads serial orig.atr.wl > /dev/null || fail "recording the replay"
"$ALLOCRR" dump --json orig.atr > orig.jsonl
"$ALLOCRR" dump --json replay.atr > replay.jsonl
$PY "$SRCDIR/check_fidelity.py" orig.jsonl replay.jsonl || fail "replay differs from the recording"
# every replayed call, none repaired, no divergence
[ "$(json 'd["results"][0]["ops"]' res.json)" = "$(json 'd["workload"]["calls"]' res.json)" ] || fail "ops != calls"
[ "$(json 'd["results"][0]["anomalies"]' res.json)" = 0 ] || fail "anomalies"
# and the same with every other allocator there is
for a in jemalloc mimalloc tcmalloc; do
	"$ALLOCRR" replay -q -a $a --json orig.atr > $a.json 2>/dev/null || continue
	[ "$(json 'd["results"][0]["ops"]' $a.json)" = "$(json 'd["workload"]["calls"]' $a.json)" ] || fail "$a: ops"
done
echo "ok"
