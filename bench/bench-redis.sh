#!/usr/bin/env bash
# bench-redis.sh: a real server's workload, recorded and replayed into every allocator.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bash bench/bench-redis.sh [BUILD_DIR]

Starts Debian's redis-server (no persistence, 127.0.0.1, a free port) under
`allocrr record`, loads it with redis-benchmark (-n REQUESTS per test, a
bounded run that stops by itself), shuts it down, then runs
`allocrr report bench/redis.yaml`: the server's trace replayed RUNS times
into glibc (default, arena_max=1, trim_threshold=0), builtin (default,
purge_delay=0), jemalloc (default, decay 0), mimalloc and tcmalloc, and
prints on stdout a Markdown table (bench/alloc-table.py) ending with the
allocator and settings that give this workload the lowest peak RSS, and at
what speed. Needs redis-server and redis-tools (ALLOCRR_DEPS=bench
scripts/deps.sh installs them); without them it says so and exits 77.

Arguments:
  BUILD_DIR    CMake build tree holding bin/allocrr (default: build)
Environment:
  RUNS=N       replays per allocator variant (default 3)
  REQUESTS=N   redis-benchmark -n (default 100000)
  CLIENTS=N    redis-benchmark -c (default 20)
  SIZE=N       redis-benchmark -d, value bytes (default 256)
  BENCH_OUT=DIR  where the trace and the report go (default allocrr-report/bench)
EOF2
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"
bench_setup "$@"
requests=${REQUESTS:-100000} clients=${CLIENTS:-20} size=${SIZE:-256}
for v in "$runs" "$requests" "$clients" "$size"; do
	case "$v" in '' | *[!0-9]* | 0) echo "bench-redis: RUNS, REQUESTS, CLIENTS, SIZE: positive integers" >&2; exit 2 ;; esac
done
allocrr=$build/bin/allocrr
[ -x "$allocrr" ] || { echo "bench-redis: no $allocrr: build first" >&2; exit 1; }
for t in redis-server redis-benchmark redis-cli; do
	command -v "$t" >/dev/null || {
		echo "bench-redis: skipped: no $t (apt-get install redis-server redis-tools)" >&2
		exit 77
	}
done
note() { echo "bench-redis: $*" >&2; }

cd "$src"
out=${BENCH_OUT:-allocrr-report/bench}   # bench/redis.yaml reads allocrr-report/bench/redis.atr
mkdir -p "$out"
rm -f "$out"/redis.atr*
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-redis.XXXXXX")
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
port=$("$(command -v python3)" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=$(command -v redis-server)
note "recording $server on 127.0.0.1:$port ..."
"$allocrr" record -q -o "$out/redis.atr" -- "$server" --port "$port" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$tmp" --daemonize no --logfile "$tmp/redis.log" &
pid=$!
for _ in $(seq 100); do
	redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
	sleep 0.1
done
redis-cli -p "$port" ping 2>/dev/null | grep -q PONG || { note "redis-server did not start"; cat "$tmp/redis.log" >&2; exit 1; }
tests=set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,lrange_100
note "redis-benchmark -n $requests -c $clients -d $size -t $tests ..."
redis-benchmark -h 127.0.0.1 -p "$port" -n "$requests" -c "$clients" -d "$size" -r 100000 -t "$tests" -q \
	>"$tmp/bench.txt" 2>&1 || { note "redis-benchmark failed"; cat "$tmp/bench.txt" >&2; exit 1; }
redis-cli -p "$port" info memory | grep -E '^used_memory:|^used_memory_rss:|^mem_allocator:' |
	tr -d '\r' >"$tmp/mem.txt" || true
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$pid" || true
pid=
[ -s "$out/redis.atr" ] || { note "no trace written"; exit 1; }

sed -e "s|^\(  runs:\) [0-9]*|\1 $runs|" -e "s|allocrr-report/bench|$out|g" bench/redis.yaml >"$tmp/redis.yaml"
note "allocrr report bench/redis.yaml (RUNS=$runs) ..."
rc=0
"$allocrr" report -q "$tmp/redis.yaml" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { note "allocrr report failed (exit $rc)"; exit 1; }

ver=$("$server" --version | sed 's/.*v=\([^ ]*\).*/\1/')
echo "## A real server: redis-server"
echo
echo "\`RUNS=$runs REQUESTS=$requests bash bench/bench-redis.sh\` on $(date -u '+%F %H:%M UTC'), $(nproc) CPUs," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg). Debian's redis-server $ver (linked with" \
	"$(grep '^mem_allocator:' "$tmp/mem.txt" | cut -d: -f2 || echo '?'); recorded, its calls go through" \
	"allocrr's recorder to it) recorded under \`redis-benchmark -n $requests -c $clients -d $size -r 100000" \
	"-t $tests\` on 127.0.0.1, then \`allocrr report bench/redis.yaml\`: medians of $runs replays." \
	"Throughput under the recorder, requests/s: $(tr '\r' '\n' <"$tmp/bench.txt" | sed 's/: */ /; s/ requests per second.*//' | grep -E '^[A-Za-z_0-9 ()]+ [0-9.]+$' | awk '{v=$NF; $NF=""; printf "%s%s %s", s, $0, v; s=", "}')."
echo
"$(command -v python3)" "$here/alloc-table.py" "$out/redis/report.json" --best
