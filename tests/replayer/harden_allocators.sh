#!/bin/sh
# Allocators and tunables are checked before anything runs: a library that is
# not a malloc is refused (exit 1), so glibc's results never carry its name;
# unknown tunables and bad or out-of-range values are refused (exit 2); the
# table shows each allocator's full label.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-calls" || fail "recording"
refused() { # EXIT SPEC PATTERN
	rc=0
	"$ALLOCRR" replay -q -a "$2" t.atr > out 2>err || rc=$?
	[ $rc = $1 ] || fail "-a '$2': exit $rc, want $1: $(cat err)"
	grep -q "$3" err || fail "-a '$2': message '$(cat err)' lacks '$3'"
	[ ! -s out ] || fail "-a '$2': results printed"
}
head -c 4096 /dev/urandom > garbage.so
printf '\177ELF' > short.so
refused 1 /etc/passwd "not a malloc library"
refused 1 ./garbage.so "not a malloc library"
refused 1 ./short.so "not a malloc library"
for lib in /usr/lib/*-linux-gnu/libzstd.so.1 /lib/*-linux-gnu/libz.so.1; do
	[ -f "$lib" ] && refused 1 "$lib" "exports no malloc"
done
refused 2 glibc:mmap_threshold=abc "mmap_threshold"
refused 2 glibc:mmap_threshold=-1 "mmap_threshold"
refused 2 glibc:perturb=256 "0 to 255"
refused 2 glibc:nosuch=1 "unknown tunable 'nosuch'"
refused 2 glibc:mxfast=1000 "mxfast"
refused 2 builtin:nosuch=1 "unknown tunable 'nosuch'"
refused 2 builtin:purge_delay=fast "purge_delay"
refused 2 builtin:mmap_threshold=2m "mmap_threshold"
refused 2 builtin:mmap_threshold=1x "mmap_threshold"
# accepted: a malloc library by path, valid tunables
"$ALLOCRR" replay -q -a "$BINDIR/../lib/liballocrr-malloc.so" t.atr > /dev/null 2>err ||
	fail "the built-in allocator by path refused: $(cat err)"
"$ALLOCRR" replay -q -a glibc:mmap_threshold=131072,perturb=255 -a builtin:mmap_threshold=256k t.atr > /dev/null 2>err ||
	fail "valid tunables refused: $(cat err)"
"$ALLOCRR" replay -q -a builtin:purge_delay=0 -a builtin:purge_delay=1000 t.atr > table 2>err || fail "replay: $(cat err)"
head -n 3 table | grep -q "builtin:purge_delay=0 .*builtin:purge_delay=1000" || fail "labels cut: $(head -n 3 table)"
echo ok
