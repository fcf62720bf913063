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
# and the same with every other allocator; one that is not installed makes
# the test skip (ctest's code 77) once the others have passed
missing=
for a in jemalloc mimalloc tcmalloc; do
	if ! "$ALLOCRR" replay -q -a $a --json orig.atr > $a.json 2> $a.err; then
		grep -q "not found; install" $a.err || fail "$a: $(cat $a.err)"
		missing="$missing $a"
		continue
	fi
	[ "$(json 'd["results"][0]["ops"]' $a.json)" = "$(json 'd["workload"]["calls"]' $a.json)" ] || fail "$a: ops"
done
if [ -n "$missing" ]; then
	echo "SKIP: not installed:$missing (scripts/deps.sh installs them)"
	exit 77
fi
echo "ok"
