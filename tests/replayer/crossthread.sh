#!/bin/sh
# Every block freed by another thread: replays serially and in parallel with
# every call executed, sync points in use, and no anomaly. The fragmentation
# run's live bytes, kept by each thread as blocks cross threads, add up: the
# same at the end either way, and the recorded peak is reached.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o cross.atr -- "$BINDIR/replay-test-crossfree" || fail "recording"
for t in serial parallel; do
	"$ALLOCRR" replay -q -a glibc --threads $t --json cross.atr > $t.json || fail "replay $t"
	"$ALLOCRR" replay -q -a glibc --threads $t --fragmentation --analysis --json cross.atr > $t.frag.json ||
		fail "fragmentation replay $t"
	$PY - $t.json $t <<'PY' || fail "$t replay"
import json, sys
d = json.load(open(sys.argv[1])); w = d["workload"]; r = d["results"][0]
print(f"{sys.argv[2]}: {r['ops']}/{w['calls']} calls, {w['sync_points']} sync points, "
      f"{r['threads']} threads, anomalies {r['anomalies']}, repairs {w['repairs']}")
assert w["threads"] == 5 and w["sync_points"] >= 30000, w
assert r["ops"] == w["calls"] >= 50000
assert r["anomalies"] == 0
assert r["threads"] == (1 if sys.argv[2] == "serial" else 5)
assert sum(v for k, v in w["repairs"].items() if k != "ignored_event") == 0
f = json.load(open(sys.argv[1].replace(".json", ".frag.json")))["allocators"][0]["fragmentation"]
print(f"{sys.argv[2]}: final live {f['final_live']}, peak live {f['peak_live']}, at peak live "
      f"{f['at']['peak_live']['live']} (call {f['at']['peak_live']['op_index']})")
assert f["at"]["end"]["live"] == f["final_live"]
assert f["at"]["peak_live"]["op_index"] > 0 and 0 < f["at"]["peak_live"]["live"] <= f["peak_live"] * 2
# serial replays the recorded order: the moment of the recorded peak holds it
# exactly; parallel threads run ahead of or behind one another there
if sys.argv[2] == "serial":
    assert f["at"]["peak_live"]["live"] >= f["peak_live"]
PY
done
$PY - <<'PY' || fail "live bytes differ between serial and parallel replay"
import json
s, p = (json.load(open(t + ".frag.json"))["allocators"][0]["fragmentation"] for t in ("serial", "parallel"))
assert s["final_live"] == p["final_live"], (s["final_live"], p["final_live"])
assert s["at"]["peak_live"]["live"] == s["peak_live"]  # serial: the recorded order, so the exact peak
PY
echo "ok"
