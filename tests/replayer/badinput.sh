#!/bin/sh
# Bad input exits 1 naming the file (and the offset for a damaged trace);
# bad usage exits 2; unknown or missing allocators say what is wrong.
. "$(dirname "$0")/lib.sh"
expect() { # CODE PATTERN CMD...
	code=$1 pat=$2; shift 2
	set +e; "$@" > out 2> err; rc=$?; set -e
	[ $rc = "$code" ] || { cat err; fail "'$*' exited $rc, expected $code"; }
	grep -q -- "$pat" err || { cat err; fail "'$*': no '$pat' in the message"; }
}
"$ALLOCRR" record -q -o good.atr -- "$BINDIR/replay-test-frag" contiguous 2>/dev/null || fail "recording"
size=$(wc -c < good.atr)
head -c $((size * 2 / 3)) good.atr > cut.atr
expect 1 "'cut.atr'.*offset" "$ALLOCRR" replay -q cut.atr
"$ALLOCRR" replay -q --partial -a glibc cut.atr > /dev/null || fail "--partial"
cp good.atr bad.atr
printf 'XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX' | dd of=bad.atr bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
expect 1 "'bad.atr'.*offset" "$ALLOCRR" replay -q bad.atr
echo "not a trace" > junk.atr
expect 1 "'junk.atr'" "$ALLOCRR" replay -q junk.atr
expect 1 "'missing.atr'" "$ALLOCRR" replay -q missing.atr
expect 2 "no trace" "$ALLOCRR" replay
expect 2 "--threads" "$ALLOCRR" replay --threads sideways good.atr
expect 2 "--touch" "$ALLOCRR" replay --touch some good.atr
expect 2 "unknown option" "$ALLOCRR" replay --frobnicate good.atr
expect 2 "unknown allocator 'hoard'" "$ALLOCRR" replay -a hoard good.atr
expect 2 "bad tunables" "$ALLOCRR" replay -a glibc:mmap_threshold good.atr
expect 1 "cannot read '/nonexistent/libx.so'" "$ALLOCRR" replay -a /nonexistent/libx.so good.atr
"$ALLOCRR" replay --help | grep -q "usage: allocrr replay" || fail "--help"
echo "ok"
