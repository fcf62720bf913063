#!/bin/sh
# The replay driver's allocators entries (cli/replays.c, as `analyze -a` and
# `report` get them) have every key of the schema, with sane values, for
# glibc and builtin, and for jemalloc, mimalloc and tcmalloc when installed
# (skipped, and said, otherwise).
. "$(dirname "$0")/lib.sh"
"$ALLOCRR" record -q -o calls.atr -- "$BINDIR/replay-test-calls" || fail "recording calls"
"$ALLOCRR" record -q -o frag.atr -- "$BINDIR/replay-test-frag" checkerboard 2>/dev/null || fail "recording frag"
n=0
for a in glibc builtin jemalloc mimalloc tcmalloc; do
	case $a in glibc|builtin) ;; *)
		if ! "$ALLOCRR" replay -q -a $a --latency-every 0 calls.atr > /dev/null 2> $a.err; then
			grep -q "install the Debian package" $a.err || fail "$a: $(cat $a.err)"
			echo "skip $a: $(cat $a.err)"
			continue
		fi ;;
	esac
	for t in calls frag; do
		"$ALLOCRR" replay -q -a $a --runs 3 --zeroing --fragmentation --analysis --json $t.atr > $a.$t.json ||
			fail "replay $t into $a"
	done
	n=$((n + 1))
done
[ $n -ge 2 ] || fail "glibc and builtin must run"
$PY - *.calls.json *.frag.json <<'PY' || fail "schema keys"
import json, sys
need = {
    "": ["allocator", "library", "runs", "time", "fragmentation", "zeroing", "latency", "rss"],
    "time": ["wall_ns", "wall_ns_min", "wall_ns_max", "cpu_ns", "minor_faults"],
    "fragmentation": ["peak_rss", "peak_live", "final_rss", "final_live", "internal_bytes", "external_bytes",
                      "peak_over_ideal", "ideal_rss", "jw", "at"],
    "fragmentation.jw": ["avg_over_time", "at_peak_live", "at_peak_rss", "peak_vs_peak"],
    "zeroing": ["as_recorded_ns", "calloc_as_malloc_ns", "calloc_as_malloc_memset_ns",
                "as_recorded_minor_faults", "calloc_as_malloc_minor_faults",
                "calloc_as_malloc_memset_minor_faults", "as_recorded_peak_rss"],
    "rss": ["timeline", "peak", "growth_bytes_per_s"],
    "rss.timeline": ["t", "rss", "live", "op_index"],
}
moment = ["op_index", "t_ns", "rss", "live", "usable", "internal", "external"]
for path in sys.argv[1:]:
    doc = json.load(open(path))
    assert len(doc["allocators"]) == 1, path
    e = doc["allocators"][0]
    for sect, keys in need.items():
        o = e
        for p in filter(None, sect.split(".")):
            o = o[p]
        missing = [k for k in keys if k not in o]
        assert not missing, (path, sect, missing)
    for m in ("peak_live", "peak_rss", "end"):
        missing = [k for k in moment if k not in e["fragmentation"]["at"][m]]
        assert not missing, (path, m, missing)
    assert e["runs"] == 3
    t = e["time"]
    assert t["wall_ns_min"] <= t["wall_ns"] <= t["wall_ns_max"], t
    f = e["fragmentation"]
    assert f["peak_rss_min"] <= f["peak_rss"] <= f["peak_rss_max"], f
    assert f["peak_live"] > 0 and f["final_live"] <= f["peak_live"], f
    tl = e["rss"]["timeline"]
    assert 0 < len(tl["t"]) <= 2000 and len({len(v) for v in tl.values()}) == 1, path
    assert tl["op_index"] == sorted(tl["op_index"]) and tl["t"] == sorted(tl["t"]), path
    assert max(tl["live"]) <= f["peak_live"], path
    assert e["latency"] and all("resolution_ns" in v and "p999" in v for v in e["latency"].values()), path
    print(f"{path}: every key; peak RSS {f['peak_rss']}, peak live {f['peak_live']}, "
          f"external at the end {f['at']['end']['external']}, J&W peak vs peak {f['jw']['peak_vs_peak']:.3f}")
PY
echo "ok"
