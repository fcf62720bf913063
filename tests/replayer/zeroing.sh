#!/bin/sh
# The seeds' zeroing cases (seeds/001), each recorded and replayed three
# ways: calloc as recorded, calloc made a malloc, calloc made a malloc +
# memset. Faults and RSS are counted, never timed:
#   fresh 256 MiB: malloc + memset faults every page in; calloc and malloc
#                  touch none of them (>= 50x fewer faults, no RSS);
#   64-byte loop:  no page-level effect either way (the memset is small);
#   reused 64 KiB: calloc touches the block's pages as malloc + memset does
#                  (a full clear: the replay never wrote the block, so a
#                  bare malloc faults none of them in).
# Medians of 5 runs: one run's counts of the reused block's ~16 pages move
# by 3-4 (8-11 as recorded, 9-11 with the memset), enough to break a
# single-run comparison on a quiet machine.
. "$(dirname "$0")/lib.sh"
allocs="glibc"
[ -e "$BINDIR/../lib/liballocrr-malloc.so" ] && allocs="$allocs builtin"
for m in fresh small reused; do
	"$ALLOCRR" record -q -o $m.atr -- "$BINDIR/replay-test-zeroing" $m || fail "recording $m"
	args=""
	for a in $allocs; do args="$args -a $a"; done
	"$ALLOCRR" replay -q $args --threads serial --zeroing --analysis --runs 5 --json $m.atr > $m.json || fail "replay $m"
done
$PY - $allocs <<'PY' || fail "zeroing effects not reproduced"
import json, sys
MiB = 1 << 20
for m in ("fresh", "small", "reused"):
    for e in json.load(open(m + ".json"))["allocators"]:
        z = e["zeroing"]
        f = {k: z[k + "_minor_faults"] for k in ("as_recorded", "calloc_as_malloc", "calloc_as_malloc_memset")}
        rss = {k: z[k + "_peak_rss"] for k in ("as_recorded", "calloc_as_malloc", "calloc_as_malloc_memset")}
        print(f"{m:7} {e['allocator']:8} faults {f}  peak RSS MiB "
              f"{ {k: round(v / MiB, 1) for k, v in rss.items()} }")
        assert z["calloc_calls"] > 0
        if m == "fresh":
            assert f["calloc_as_malloc_memset"] >= 50 * max(f["as_recorded"], 1), f
            assert f["calloc_as_malloc_memset"] >= 50 * max(f["calloc_as_malloc"], 1), f
            assert rss["calloc_as_malloc_memset"] >= 250 * MiB, rss
            assert rss["as_recorded"] < 16 * MiB and rss["calloc_as_malloc"] < 16 * MiB, rss
        elif m == "small":
            # a small memset a call: no page-level effect either way
            lo, hi = min(f.values()), max(f.values())
            assert hi <= lo * 1.5 + 16, f
            assert max(rss.values()) < 16 * MiB, rss
        else:
            # the block is not fresh, so calloc clears all of it: it touches
            # its pages as the memset does, where a bare malloc touches none
            assert f["as_recorded"] >= 0.6 * f["calloc_as_malloc_memset"], f
            assert f["as_recorded"] >= f["calloc_as_malloc"] + 4, f
PY
echo "ok"
