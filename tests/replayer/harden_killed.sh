#!/bin/sh
# A trace without its end record (the program was SIGKILLed: the recorder
# writes whole chunks, so the cut falls on a chunk boundary) is truncated for
# every reader: info says so, dump and replay fail with the offset unless
# replay is given --partial.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-crossfree" || fail "recording"
# drop the END chunk (type 2), keep every events chunk whole
$PY - t.atr cut.atr <<'PYEOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
hdr = struct.unpack_from("<I", b, 12)[0]
out, off, ends = bytearray(b[:hdr]), hdr, 0
while off < len(b):
    sync, typ, flags, body = struct.unpack_from("<IHHI", b, off)
    if typ == 2:
        ends += 1
    else:
        out += b[off:off + 12 + body]
    off += 12 + body
assert ends == 1, ends
open(sys.argv[2], "wb").write(out)
PYEOF
size=$(stat -c %s cut.atr)
"$ALLOCRR" info cut.atr | grep -q "truncated at offset $size" || fail "info: not truncated"
if "$ALLOCRR" dump cut.atr > d.txt 2>err; then fail "dump of a trace without its end exited 0"; fi
grep -q "cut.atr'.*truncated at offset $size" err || fail "dump: no truncation error: $(cat err)"
[ "$(wc -l < d.txt)" -gt 1000 ] || fail "dump: the complete chunks were not printed"
if "$ALLOCRR" replay -a glibc cut.atr > /dev/null 2>err; then fail "replay of a trace without its end exited 0"; fi
grep -q "truncated at offset $size" err && grep -q -- --partial err || fail "replay: $(cat err)"
"$ALLOCRR" replay -q -a glibc --partial cut.atr > /dev/null || fail "replay --partial"
# the cached workload of the cut trace must not let a plain replay pass later
if "$ALLOCRR" replay -q -a glibc cut.atr > /dev/null 2>err; then fail "cached partial workload replayed without --partial"; fi
# a real SIGKILL
"$ALLOCRR" record -q -o k.atr -- /bin/sh -c 'kill -9 $$' && fail "killed program exited 0"
"$ALLOCRR" info k.atr | grep -q truncated || fail "info: killed trace not truncated"
if "$ALLOCRR" replay -q -a glibc k.atr > /dev/null 2>&1; then fail "replay of a killed trace exited 0"; fi
echo ok
