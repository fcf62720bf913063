#!/bin/sh
# The engine dies with `allocrr replay`: killing the CLI (SIGKILL: it cannot
# clean up) leaves no engine running. A stand-in engine that only sleeps
# (ALLOCRR_REPLAY_ENGINE) keeps the test independent of replay speed.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-calls" || fail "recording"
cat > engine.sh <<'X'
#!/bin/sh
echo $$ > engine.pid
exec sleep 60
X
chmod +x engine.sh
ALLOCRR_REPLAY_ENGINE=$PWD/engine.sh "$ALLOCRR" replay -q -a glibc t.atr > /dev/null 2>&1 &
cli=$!
i=0
while [ ! -s engine.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s engine.pid ] || fail "the stand-in engine never started"
engine=$(cat engine.pid)
kill -0 "$engine" 2>/dev/null || fail "engine not running"
kill -KILL $cli
wait $cli 2>/dev/null || true
i=0
while kill -0 "$engine" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$engine" 2>/dev/null; then
	kill "$engine"
	fail "the engine outlived allocrr replay"
fi
echo ok
