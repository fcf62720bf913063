#!/bin/sh
# Replay never heads for more memory than the machine has: --touch defaults
# to none when the program touched little of what it allocated (its recorded
# RSS) or when touching could not fit in the available memory (with a note);
# an explicit --touch page/all that cannot fit is refused (exit 1).
# (The traces are written with the encoder; their huge requests fail under
# glibc, so even a replay without these checks stays harmless.)
. "$(dirname "$0")/lib.sh"
WRITE="$BINDIR/repair_trace"
touch_of() { json 'd["touch"]' "$1"; }
# 1 TiB live at once: more than any test machine has
cat > huge.ev <<'X'
1 100 malloc size=0x10000000000 ret=0x7f0000000000
1 200 free ptr=0x7f0000000000
X
"$WRITE" huge.atr < huge.ev || fail "writing huge.atr"
"$ALLOCRR" replay -a glibc --json huge.atr > r.json 2> err || fail "default replay of huge.atr: $(cat err)"
[ "$(touch_of r.json)" = none ] || fail "huge.atr replayed with --touch $(touch_of r.json)"
grep -q "touch none" err && grep -q "available" err || fail "no note on the fallback: $(cat err)"
for t in page all; do
	rc=0
	"$ALLOCRR" replay -q -a glibc --touch $t huge.atr > /dev/null 2> err || rc=$?
	[ $rc = 1 ] || fail "--touch $t on huge.atr: exit $rc, want 1"
	grep -q "available" err || fail "--touch $t: $(cat err)"
done
"$ALLOCRR" replay -q -a glibc --touch none --json huge.atr > r.json || fail "--touch none refused"
# 64 MiB requested, 1 MiB resident when recorded: it only touched a page
cat > sparse.ev <<'X'
0 50 rss size=1048576
1 100 malloc size=67108864 ret=0x7f0000000000
0 150 rss size=1048576
1 200 free ptr=0x7f0000000000
X
"$WRITE" sparse.atr < sparse.ev || fail "writing sparse.atr"
"$ALLOCRR" replay -a glibc --json sparse.atr > r.json 2> err || fail "replay sparse: $(cat err)"
[ "$(touch_of r.json)" = none ] || fail "sparse.atr replayed with --touch $(touch_of r.json)"
grep -q "recorded" err || fail "no note on the default: $(cat err)"
"$ALLOCRR" replay -q -a glibc --touch page --json sparse.atr > r.json || fail "explicit --touch page refused"
[ "$(touch_of r.json)" = page ] || fail "explicit --touch page not honoured"
# a program that touches what it allocates keeps the default, page
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-calls" || fail "recording"
"$ALLOCRR" replay -q -a glibc --json t.atr > r.json || fail "replay"
[ "$(touch_of r.json)" = page ] || fail "calls replayed with --touch $(touch_of r.json)"
echo ok
