#!/bin/sh
# A replayed thread that waits for another's whole run (a main thread that
# only starts and joins a worker) sleeps instead of spinning: a parallel
# replay with one busy thread uses about one CPU. While it spun (pause, then
# sched_yield) it kept a second CPU busy: the replay's cpu_ns read about
# twice its wall time, and nothing else could use that CPU. (Can only fail
# where a second CPU is free for the spinner to take.)
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o idle.atr -- "$BINDIR/replay-test-idle" >/dev/null || fail "recording"
"$ALLOCRR" replay -q -a glibc --threads parallel --runs 3 --json idle.atr >par.json || fail "parallel replay"
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
$PY - "$ncpu" <<'PY' || fail "pace_idle"
import json, sys
ncpu = int(sys.argv[1])
d = json.load(open("par.json"))
w, r = d["workload"], d["results"][0]
assert r["ops"] == w["calls"] and r["anomalies"] == 0, (r["ops"], w["calls"])
ratio = r["cpu_ns"] / r["wall_ns"]
print(f"{w['calls']} calls, wall {r['wall_ns'] / 1e6:.1f} ms, cpu {r['cpu_ns'] / 1e6:.1f} ms: cpu/wall {ratio:.2f}")
if ncpu >= 2:
    # one busy thread: ~1.0 (the RSS sampler adds little); a spinning waiter read ~2.0 here
    assert ratio < 1.5, f"cpu/wall {ratio:.2f}: a waiting replay thread burns a CPU"
PY
echo "ok"
