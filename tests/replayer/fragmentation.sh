#!/bin/sh
# The seeds' experiment (seeds/004): recorded, replayed into glibc, the heap
# grows by about 20,480 KB in the checkerboard case and by about nothing in
# the contiguous one. Measured two ways: glibc's own arena (mallinfo2) and
# resident memory.
. "$(dirname "$0")/lib.sh"
for m in checkerboard contiguous; do
	"$ALLOCRR" record -q -o $m.atr -- "$BINDIR/replay-test-frag" $m 2> $m.native || fail "recording $m"
	"$ALLOCRR" replay -q -a glibc --threads serial --json $m.atr > $m.json || fail "replay $m"
	"$ALLOCRR" replay -q -a glibc --threads serial --fragmentation --phase fill=0..100001 --phase rest:100001: \
		--analysis --json $m.atr > $m.frag.json ||
		fail "fragmentation replay $m"
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

# The same from the fragmentation figures. At the end the checkerboard keeps
# 50,000 free 208-byte holes no 400-byte request fits (external: resident,
# not usable by any live block); the contiguous heap has none. Internal: a
# 200-byte request is served 200 usable bytes, a 400-byte one 408.
f = {m: json.load(open(m + ".frag.json"))["allocators"][0]["fragmentation"] for m in ("checkerboard", "contiguous")}
for m, x in f.items():
    e = x["at"]["end"]
    print(f"{m}: at the end live {e['live']//1024} KB, usable {e['usable']//1024} KB, RSS {e['rss']//1024} KB: "
          f"internal {e['internal']//1024} KB, external {e['external']//1024} KB; J&W peak vs peak "
          f"{x['jw']['peak_vs_peak']:.3f}")
    assert x["usable_known"] and e["live"] == x["final_live"]
    assert x["at"]["peak_live"]["live"] == x["peak_live"], x["at"]["peak_live"]
holes = 50000 * 208 / 1024
ext_cb = f["checkerboard"]["at"]["end"]["external"] / 1024
ext_ct = f["contiguous"]["at"]["end"]["external"] / 1024
assert abs(ext_cb - ext_ct - holes) < holes * 0.15, (ext_cb, ext_ct)
assert ext_ct < 1024, ext_ct
int_ct = f["contiguous"]["at"]["end"]["internal"]
assert abs(int_ct - 50000 * 8) < 50000 * 8 * 0.10 + 64, int_ct
assert f["checkerboard"]["jw"]["peak_vs_peak"] > f["contiguous"]["jw"]["peak_vs_peak"] + 0.2

# Per phase (calls 0..100001: the 200-byte blocks and the guard; then the
# rest): the heap grows by ~20 MB after the fill in the checkerboard only.
for m in ("checkerboard", "contiguous"):
    ph = {p["name"]: p for p in json.load(open(m + ".frag.json"))["allocators"][0]["rss"]["phases"]}
    fill, rest = ph["fill"], ph["rest"]
    grew = (rest["rss_end"] - fill["rss_end"]) / 1024
    print(f"{m}: phase fill peak live {fill['peak_live']}, RSS {fill['rss_end']//1024} KB; the rest grew RSS by "
          f"{grew:.0f} KB")
    assert abs(fill["peak_live"] - 20000016) < 20000016 * 0.01, fill  # sampled: ~500 samples in the phase
    assert fill["samples"] > 10 and rest["samples"] > 10
    if m == "checkerboard":
        assert abs(grew - 20480) < 20480 * 0.10, grew
    else:
        assert abs(grew) < 1024, grew
PY
echo "ok"
