#!/bin/sh
# An allocator library the dynamic linker cannot preload when the engine
# starts (gone, or being relinked after `allocrr replay` checked it) is
# skipped by ld.so with a warning: the engine would replay into glibc under
# the allocator's name. It must fail instead, saying so; with the library
# there, the same wrapper replays.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-calls" || fail "recording"
cat > engine.sh <<X
#!/bin/sh
LD_PRELOAD="\$WANT" exec "$ENGINE" "\$@"
X
chmod +x engine.sh
rc=0
WANT=$PWD/gone.so ALLOCRR_REPLAY_ENGINE=$PWD/engine.sh "$ALLOCRR" replay -q -a glibc t.atr > out.txt 2> err.txt || rc=$?
[ "$rc" != 0 ] || fail "a replay whose library was not loaded succeeded: $(cat out.txt)"
grep -q "could not be loaded" err.txt || fail "no reason given: $(cat err.txt)"
lib=$(dirname "$ALLOCRR")/../lib/liballocrr-malloc.so
if [ -r "$lib" ]; then
	WANT=$lib ALLOCRR_REPLAY_ENGINE=$PWD/engine.sh "$ALLOCRR" replay -q -a glibc t.atr > out.txt 2> err.txt ||
		fail "replay with the library there: $(cat err.txt)"
fi
echo ok
