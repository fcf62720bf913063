#!/bin/sh
# Every block freed by another thread: replays serially and in parallel with
# every call executed, sync points in use, and no anomaly.
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o cross.atr -- "$BINDIR/replay-test-crossfree" || fail "recording"
for t in serial parallel; do
	"$ALLOCRR" replay -q -a glibc --threads $t --json cross.atr > $t.json || fail "replay $t"
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
PY
done
echo "ok"
