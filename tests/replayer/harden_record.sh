#!/bin/sh
# `allocrr record -o PATH` replaces only what it wrote: earlier allocrr traces
# (by their magic) that are regular files, and says which; anything else named
# PATH or PATH.<digits>[.<digits>] is left alone.
. "$(dirname "$0")/lib.sh"
CALLS="$BINDIR/replay-test-calls"
echo notes > notes.txt
echo one > notes.txt.1
echo year > notes.txt.2024
echo x > notes.txt.12.3
if "$ALLOCRR" record -q -o notes.txt -- "$CALLS" 2>err; then fail "record over a text file succeeded"; fi
grep -q "notes.txt.*not an allocrr trace" err || fail "no reason given: $(cat err)"
for f in notes.txt notes.txt.1 notes.txt.2024 notes.txt.12.3; do
	[ -f $f ] || fail "$f was deleted"
done
[ "$(cat notes.txt)" = notes ] || fail "notes.txt was changed"
# A trace whose siblings are not all traces: only the traces go.
"$ALLOCRR" record -q -o t.atr -- "$CALLS" || fail "recording"
cp t.atr t.atr.123
cp t.atr t.atr.77.2
echo keep > t.atr.2024
ln -s t.atr t.atr.555
"$ALLOCRR" record -o t.atr -- "$CALLS" 2>err || fail "re-recording"
grep -q "replaced 3 earlier traces: t.atr, t.atr.77.2, t.atr.123" err || fail "what was replaced: $(cat err)"
[ "$(cat t.atr.2024)" = keep ] || fail "t.atr.2024 (not a trace) was deleted"
[ -L t.atr.555 ] || fail "a symlink was deleted"
[ ! -e t.atr.123 ] && [ ! -e t.atr.77.2 ] || fail "earlier child traces kept"
"$ALLOCRR" info t.atr > /dev/null || fail "new trace unreadable"
# Never a non-regular file: a fifo and a directory stay.
mkfifo fifo
if "$ALLOCRR" record -q -o fifo -- "$CALLS" 2>err; then fail "record over a fifo succeeded"; fi
[ -p fifo ] || fail "the fifo was replaced"
grep -q "fifo.*not a regular file" err || fail "fifo: $(cat err)"
# A symlink named PATH is not followed nor replaced.
echo target > target
ln -s target link.atr
if "$ALLOCRR" record -q -o link.atr -- "$CALLS" 2>err; then fail "record over a symlink succeeded"; fi
[ -L link.atr ] && [ "$(cat target)" = target ] || fail "symlink replaced or followed"
# A device node (made here, like /dev/full, if we may) stays a device.
if mknod full c 1 7 2>/dev/null; then
	if "$ALLOCRR" record -q -o full -- "$CALLS" 2>err; then fail "record over a device succeeded"; fi
	[ -c full ] || fail "the device node was replaced"
fi
echo ok
