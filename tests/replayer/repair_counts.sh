#!/bin/sh
# The replayer's repairs, each from a trace written with the encoder: the
# count of each is exact, no other repair is made, and every call the
# workload keeps is run by the engine (serial and parallel, glibc and
# builtin when built). Also: a trace whose only calls failed replays.
. "$(dirname "$0")/lib.sh"
WRITE="$BINDIR/repair_trace"
# check NAME EXPECTED_CALLS alloc_before_free unknown_free double_free unknown_realloc lost_object
check() {
	name=$1 calls=$2
	shift 2
	"$WRITE" $name.atr < $name.ev || fail "$name: writing the trace"
	for mode in serial parallel; do
		"$ALLOCRR" replay -q -t $mode --json $name.atr > $name.json 2>err ||
			fail "$name ($mode): replay failed: $(cat err)"
		got=$(json '" ".join(str(d["workload"]["repairs"][k]) for k in ("alloc_before_free", "unknown_free", "double_free", "unknown_realloc", "lost_object"))' $name.json)
		[ "$got" = "$*" ] || fail "$name ($mode): repairs '$got', want '$*'"
		[ "$(json 'd["workload"]["calls"]' $name.json)" = "$calls" ] || fail "$name: workload calls, want $calls"
		for ops in $(json '" ".join(str(r["ops"]) for r in d["results"])' $name.json); do
			[ "$ops" = "$calls" ] || fail "$name ($mode): $ops calls run of $calls"
		done
		[ -n "$(json 'd["results"][0]["ops"]' $name.json)" ] || fail "$name: no results"
	done
}
cat > alloc_before_free.ev <<'X'
# the same address returned twice before its free: one repair, all calls kept
1 100 malloc size=16 ret=0x10000
1 200 malloc size=32 ret=0x10000
1 300 free ptr=0x10000
1 400 free ptr=0x10000
X
check alloc_before_free 4  1 0 0 0 0
cat > unknown_free.ev <<'X'
1 100 malloc size=16 ret=0x10000
1 200 free ptr=0x50000
1 300 free ptr=0x10000
X
check unknown_free 2  0 1 0 0 0
cat > double_free.ev <<'X'
1 100 malloc size=16 ret=0x20000
1 200 free ptr=0x20000
1 300 free ptr=0x20000
X
check double_free 2  0 0 1 0 0
cat > unknown_realloc.ev <<'X'
1 100 realloc ptr=0x70000 size=32 ret=0x80000
1 200 reallocarray ptr=0x71000 nmemb=4 size=8 ret=0x81000
1 300 free ptr=0x80000
1 400 free ptr=0x81000
X
check unknown_realloc 4  0 0 0 2 0
cat > lost_object.ev <<'X'
# displaced twice before its free: the first object is left live
1 100 malloc size=16 ret=0x10000
1 200 malloc size=16 ret=0x10000
1 300 malloc size=16 ret=0x10000
1 400 free ptr=0x10000
1 500 free ptr=0x10000
X
check lost_object 5  2 0 0 0 1
cat > twothreads.ev <<'X'
# across threads: thread 2 frees what thread 1 allocated (a sync, no repair),
# then frees it again (double free), and frees what nobody allocated
1 100 malloc size=100 ret=0x30000
2 5000000 free ptr=0x30000
2 6000000 free ptr=0x30000
2 7000000 free ptr=0x90000
1 8000000 malloc size=8 ret=0x30000
1 9000000 free ptr=0x30000
X
check twothreads 4  0 1 1 0 0
cat > idle_threads.ev <<'X'
# threads whose only calls are dropped (unknown frees): no entries, no blocks
1 100 malloc size=16 ret=0x10000
2 200 free ptr=0x60000
3 300 free ptr=0x61000
4 400 free ptr=0x62000
1 500 free ptr=0x10000
X
check idle_threads 2  0 3 0 0 0
cat > failed_only.ev <<'X'
# every call failed: nothing to allocate, but the calls are replayed
1 100 malloc size=0x7fffffffffff err=12
1 200 calloc nmemb=0x100000000 size=0x100000000 err=12
1 300 posix_memalign align=3 size=16 err=22
1 400 realloc ptr=0 size=0x7fffffffffff err=12
X
check failed_only 4  0 0 0 0 0
echo ok
