#!/bin/sh
# The workload cache cannot be hijacked nor silently wrong: its temporary is
# created without following a planted symlink; a workload that does not match
# its checksum, or whose trace changed anywhere (same size and mtime), is
# rebuilt, and a damaged parallel workload is caught before it runs.
. "$(dirname "$0")/lib.sh"
prepared() { "$ALLOCRR" replay -a glibc "$@" 2>&1 >/dev/null | grep -c "prepared" || true; }
# flip FILE OFFSET: invert one byte in place, keeping size and mtime
flip() { $PY - "$1" "$2" <<'PYEOF'
import os, sys
p, off = sys.argv[1], int(sys.argv[2])
st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x5a]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
PYEOF
}
"$ALLOCRR" record -q -o t.atr -- "$BINDIR/replay-test-calls" || fail "recording"
"$ALLOCRR" record -q -o x.atr -- "$BINDIR/replay-test-crossfree" || fail "recording crossfree"

# A symlink planted where the temporary would go is neither followed nor replaced.
echo precious > victim
sh -c 'for i in 0 1 2 3 4 5 6 7 8 9; do ln -s "$PWD/victim" "t.atr.wl.tmp.$(($$ + i))"; done
       exec "$1" replay -q -a glibc t.atr' sh "$ALLOCRR" > /dev/null || fail "replay with planted symlinks"
[ "$(cat victim)" = precious ] || fail "a planted symlink made replay overwrite another file"
[ -s t.atr.wl ] || fail "no workload written"

# Every byte of the workload is checked: damage anywhere is rebuilt, and the
# results are those of the trace.
"$ALLOCRR" replay -q -a glibc --json t.atr > good.json || fail "replay"
what='[d["workload"][k] for k in ("calls", "slots", "ideal_rss")] + [d["results"][0]["ops"]]'
[ -n "$(json "$what" good.json)" ] || fail "no workload figures"
size=$(stat -c %s t.atr.wl)
for off in 24 100 300 $((size / 2)) $((size - 20)) $((size - 1)); do
	cp t.atr.wl saved.wl
	flip t.atr.wl $off
	"$ALLOCRR" replay -a glibc --json t.atr > r.json 2>err || fail "damage at $off: replay failed: $(cat err)"
	grep -q prepared err || fail "workload damaged at offset $off of $size replayed without a rebuild"
	[ "$(json "$what" r.json)" = "$(json "$what" good.json)" ] || fail "damage at $off: other calls replayed"
done

# A trace changed after its first 4 KiB, same size and mtime: not the old cache.
"$ALLOCRR" replay -q -a glibc x.atr > /dev/null || fail "replay crossfree"
[ "$(prepared x.atr)" = 0 ] || fail "crossfree cache not reused"
flip x.atr $(( $(stat -c %s x.atr) - 300 ))
if "$ALLOCRR" replay -a glibc x.atr > /dev/null 2>err && ! grep -q prepared err; then
	fail "a trace damaged past 4 KiB replayed from its stale cache"
fi

# A damaged parallel workload says so at once (the guard would wait 30 s).
"$ALLOCRR" record -q -o p.atr -- "$BINDIR/replay-test-crossfree" || fail "recording crossfree 2"
"$ALLOCRR" replay -q -a glibc -t parallel p.atr > /dev/null || fail "parallel replay"
flip p.atr.wl $(( $(stat -c %s p.atr.wl) / 2 ))
rc=0
timeout 20 "$ALLOCRR" replay -a glibc -t parallel p.atr > /dev/null 2>err || rc=$?
[ $rc != 124 ] || fail "damaged parallel workload waited for the guard"
[ $rc = 0 ] && grep -q prepared err || fail "damaged parallel workload not rebuilt (exit $rc): $(cat err)"
# Something of the user's where the cache would go (TRACE.wl: a file, a FIFO,
# a directory) is never replaced, with --rebuild neither, nor waited on: the
# replay says so (exit 1) and the file is as it was.
"$ALLOCRR" record -q -o u.atr -- "$BINDIR/replay-test-calls" || fail "recording u"
echo "the user's notes" > u.atr.wl
for opt in "" --rebuild; do
	rc=0
	timeout 20 "$ALLOCRR" replay -a glibc $opt u.atr > /dev/null 2>err || rc=$?
	[ $rc = 1 ] || fail "replay $opt over a user's u.atr.wl: exit $rc, want 1: $(cat err)"
	grep -q "'u.atr.wl' exists and is not an allocrr workload; not replacing it" err || fail "message: $(cat err)"
	[ "$(cat u.atr.wl)" = "the user's notes" ] || fail "replay $opt replaced a user's file named u.atr.wl"
done
rm u.atr.wl && mkfifo u.atr.wl
rc=0
timeout 20 "$ALLOCRR" replay -a glibc u.atr > /dev/null 2>err || rc=$?
[ $rc = 1 ] || fail "replay over a FIFO u.atr.wl: exit $rc, want 1 (124: it waited): $(cat err)"
[ -p u.atr.wl ] || fail "the FIFO u.atr.wl was replaced"
rm u.atr.wl
"$ALLOCRR" replay -q -a glibc u.atr > /dev/null || fail "replay once u.atr.wl is gone"
echo ok
