#!/bin/sh
# The seeds' experiment (seeds/004): recorded, replayed into glibc, the heap
# grows by about 20,480 KB in the checkerboard case and by about nothing in
# the contiguous one. Measured two ways: glibc's own arena (mallinfo2) and
# resident memory.
. "$(dirname "$0")/lib.sh"
for m in checkerboard contiguous; do
	"$ALLOCRR" record -q -o $m.atr -- "$BINDIR/replay-test-frag" $m 2> $m.native || fail "recording $m"
	"$ALLOCRR" replay -q -a glibc --threads serial --json $m.atr > $m.json || fail "replay $m"
done
$PY - <<'PY' || fail "fragmentation not reproduced"
import json
phase1 = 100000 * 208 + 32       # 200-byte blocks are 208-byte chunks, and a guard
r = {m: json.load(open(m + ".json"))["results"][0] for m in ("checkerboard", "contiguous")}
for m, x in r.items():
    grew = (x["mallinfo2"]["arena"] - phase1) / 1024
    print(f"{m}: replayed heap grew by {grew:.0f} KB in the last step; final RSS {x['final_rss']//1024} KB; "
          f"anomalies {x['anomalies']}")
    assert x["anomalies"] == 0 and x["ops"] > 250000 - 50001
cb = (r["checkerboard"]["mallinfo2"]["arena"] - phase1) / 1024
ct = (r["contiguous"]["mallinfo2"]["arena"] - phase1) / 1024
assert abs(cb - 20480) < 20480 * 0.05, cb
assert abs(ct) < 512, ct
rss = (r["checkerboard"]["final_rss"] - r["contiguous"]["final_rss"]) / 1024
print(f"final RSS difference {rss:.0f} KB")
assert abs(rss - 20480) < 20480 * 0.10, rss
PY
echo "ok"
