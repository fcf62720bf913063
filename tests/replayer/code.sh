#!/bin/sh
# The serving allocator's code is resident before the baseline RSS is read,
# so peaks count the replayed heap only, whatever the library's layout: the
# kernel maps a library's text 16 pages around each first call into it, and
# which pages a run maps first moved the built-in library's serial peaks of
# small traces by 40 KB between two builds of the same heap code. The JSON
# says how much code that is (allocator_code): all of the built-in
# library's executable segment, and some of libc's for glibc.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-calls" || fail "recording"
"$ALLOCRR" replay -q -t serial -a builtin -a glibc --json t.atr > r.json || fail "replay"
lib=$(json 'd["results"][0]["library"]' r.json)
code=$(json 'd["results"][0]["allocator_code"]' r.json)
[ -f "$lib" ] || fail "builtin's library $lib is no file"
# the executable LOAD segments' sizes, from the ELF program headers
text=$($PY - "$lib" <<'X'
import struct, sys
b = open(sys.argv[1], "rb").read()
phoff, = struct.unpack_from("<Q", b, 0x20)
phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
total = 0
for i in range(phnum):
    p_type, p_flags = struct.unpack_from("<II", b, phoff + i * phentsize)
    p_memsz, = struct.unpack_from("<Q", b, phoff + i * phentsize + 0x28)
    if p_type == 1 and p_flags & 1:
        total += p_memsz
print(total)
X
)
[ "$text" -gt 0 ] || fail "no executable segment in $lib"
[ "$code" -ge "$text" ] || fail "builtin: $code bytes of code resident before the baseline, its text is $text"
[ "$code" -le $((text + 8192)) ] || fail "builtin: $code bytes of code counted, more than its text ($text)"
gcode=$(json 'd["results"][1]["allocator_code"]' r.json)
[ "$(json 'd["results"][1]["allocator"]' r.json)" = glibc ] && [ "$gcode" -gt 0 ] ||
	fail "glibc: allocator_code $gcode"
# the baseline holds that code
base=$(json 'd["results"][0]["baseline_rss"]' r.json)
[ "$base" -gt "$code" ] || fail "baseline $base below the code it holds ($code)"
echo "ok: builtin code $code bytes (text $text), glibc $gcode"
