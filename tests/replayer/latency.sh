#!/bin/sh
# Latency percentiles per operation are ordered (p50 <= p90 <= p99 <= p99.9
# <= max), count every call (or about one in N with --latency-every N, also
# in a loop alternating two calls, which a fixed stride would alias), and come
# with the timer's resolution, in the driver's entries and in `replay --json`.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o frag.atr -- "$BINDIR/replay-test-frag" contiguous 2>/dev/null || fail "recording"
"$ALLOCRR" record -q -o small.atr -- "$BINDIR/replay-test-zeroing" small || fail "recording"
allocs="-a glibc"
[ -e "$BINDIR/../lib/liballocrr-malloc.so" ] && allocs="$allocs -a builtin"
for t in frag small; do
	"$ALLOCRR" replay -q $allocs --analysis --json $t.atr > $t.a.json || fail "replay $t"
	"$ALLOCRR" replay -q $allocs --json $t.atr > $t.r.json || fail "replay $t"
	"$ALLOCRR" replay -q $allocs --latency-every 10 --analysis --json $t.atr > $t.10.json || fail "replay $t"
done
"$ALLOCRR" replay -q $allocs frag.atr > frag.txt || fail "table"
grep -q "p50/p90/p99/p99.9/max" frag.txt || fail "the table shows no p99.9"
$PY - <<'PY' || fail "latency"
import json
for t, ops in (("frag", {"malloc": 150001, "free": 100000}), ("small", {"calloc": 100000, "free": 100000})):
    a = json.load(open(t + ".a.json"))["allocators"]
    r = json.load(open(t + ".r.json"))["results"]
    ten = json.load(open(t + ".10.json"))["allocators"]
    for e, x, e10 in zip(a, r, ten):
        for op, n in ops.items():
            for lat in (e["latency"][op], x["latency"][op]):
                v = [lat[k] for k in ("p50", "p90", "p99", "p999", "max")]
                assert v == sorted(v), (t, e["allocator"], op, lat)
                assert lat["count"] == n, (t, op, lat["count"], n)
                assert lat["resolution_ns"] >= 1
            c10 = e10["latency"][op]["count"]
            assert abs(c10 - n / 10) < n / 10 * 0.1, (t, op, c10)
            print(t, e["allocator"], op, e["latency"][op])
PY
echo "ok"
