#!/usr/bin/env bash
# bench/bench-alloc.sh [BUILD_DIR] - the built-in allocator side by side with
# glibc (and jemalloc/mimalloc when installed), in one run: each measurement is
# taken RUNS times, alternating allocators, and the median is printed with its
# ratio to glibc. Needs bench-alloc-micro and liballocrr-malloc.so built.
set -u
build=${1:-build}
runs=${RUNS:-5}
micro=$build/bin/bench-alloc-micro
lib=$build/lib/liballocrr-malloc.so
[ -x "$micro" ] && [ -f "$lib" ] || { echo "bench-alloc: build $micro and $lib first" >&2; exit 1; }
lib=$(readlink -f "$lib")

names=(glibc builtin) preloads=("" "$lib")
for p in jemalloc:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 mimalloc:/usr/lib/x86_64-linux-gnu/libmimalloc.so.2; do
	[ -f "${p#*:}" ] && { names+=("${p%%:*}"); preloads+=("${p#*:}"); }
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# measure KEY FIELD ALLOCS... CMD: run CMD under each allocator RUNS times, alternating;
# field FIELD of each output line is collected into $tmp/KEY.NAME
measure() {
	local key=$1 field=$2; shift 2
	local n=$1; shift; local sel=("${@:1:$n}"); shift "$n"
	for ((r = 0; r < runs; r++)); do
		for i in "${sel[@]}"; do
			LD_PRELOAD=${preloads[$i]} "$@" | awk -v f="$field" '{print $f}' >>"$tmp/$key.${names[$i]}"
		done
	done
}
med() { median <"$tmp/$1.$2"; }
all=(); for i in "${!names[@]}"; do all+=("$i"); done

echo "== allocator benchmarks: medians of $runs alternating runs ($(date -u +%F), $(nproc) CPUs)"
echo
echo "-- malloc(64)+free pair, ns (ratio to glibc)"
measure pair 1 ${#all[@]} "${all[@]}" "$micro" pair 20000000
g=$(med pair glibc)
for n in "${names[@]}"; do v=$(med pair "$n"); printf "  %-9s %7.2f  %s\n" "$n" "$v" "$(ratio "$v" "$g")"; done

echo
echo "-- a buffer grown by realloc, 262 bytes at a time from 1100 bytes to 7 KiB (16 000 of them, every other kept):"
echo "   ns per realloc (ratio to glibc), share of reallocs that kept the block in place"
measure regrow 1 ${#all[@]} "${all[@]}" "$micro" regrow 16000
measure regrow_same 2 ${#all[@]} "${all[@]}" "$micro" regrow 16000
g=$(med regrow glibc)
for n in "${names[@]}"; do v=$(med regrow "$n"); printf "  %-9s %7.1f  %s  %3s %% in place\n" "$n" "$v" "$(ratio "$v" "$g")" "$(med regrow_same "$n")"; done

echo
echo "-- calloc vs malloc+memset, ns per call (calloc/memset ratio; <= 1 is the goal)"
printf "  %-10s %-9s %12s %14s %6s\n" size alloc calloc malloc+memset ratio
for size in 64 4096 65536 1048576 268435456; do
	iters=""; [ "$size" -ge 268435456 ] && iters=2
	measure "c$size" 1 2 0 1 "$micro" calloc "$size" $iters
	measure "m$size" 2 2 0 1 "$micro" calloc "$size" $iters
	for n in glibc builtin; do
		c=$(med "c$size" "$n"); m=$(med "m$size" "$n")
		printf "  %-10s %-9s %12.1f %14.1f %6s\n" "$size" "$n" "$c" "$m" "$(ratio "$c" "$m")"
	done
done

echo
echo "-- a huge block taken, written (a byte an OS page) and freed in a loop, us per iteration (ratio to glibc)"
printf "  %-9s" alloc; for size in 2097152 8388608 33554432; do printf " %12s" "$((size >> 20)) MiB"; done; echo
for size in 2097152 8388608 33554432; do measure "h$size" 1 ${#all[@]} "${all[@]}" "$micro" huge "$size" 200; done
for n in "${names[@]}"; do
	printf "  %-9s" "$n"
	for size in 2097152 8388608 33554432; do v=$(med "h$size" "$n"); printf " %12s" "$v ($(ratio "$v" "$(med "h$size" glibc)"))"; done
	echo
done

echo
echo "-- calloc of a fresh 256 MiB block: time, RSS growth right after"
measure fresh_ms 1 ${#all[@]} "${all[@]}" "$micro" calloc-fresh
measure fresh_kb 2 ${#all[@]} "${all[@]}" "$micro" calloc-fresh
for n in "${names[@]}"; do printf "  %-9s %8.3f ms %8s KB\n" "$n" "$(med fresh_ms "$n")" "$(med fresh_kb "$n")"; done

echo
echo "-- checkerboard (seed 004): RSS growth in KB while allocating 50,000 x 400 B"
printf "  %-9s %12s %12s\n" alloc checkerboard contiguous
measure checker 1 ${#all[@]} "${all[@]}" "$micro" checker
measure contig 1 ${#all[@]} "${all[@]}" "$micro" contiguous
for n in "${names[@]}"; do printf "  %-9s %12s %12s\n" "$n" "$(med checker "$n")" "$(med contig "$n")"; done

# whole programs: wall time and peak RSS from /usr/bin/time
if [ -x /usr/bin/time ]; then
	cat >"$tmp/t.py" <<'PY'
import json
d = {str(i): [i, str(i) * 3, {"k": i}] for i in range(300000)}
s = json.dumps(d)
assert json.loads(s) == d
words = sorted(str(i * 7919)[::-1] for i in range(600000))
print(len(s), words[0])
PY
	{
		echo "create table t(a integer primary key, b text, c real); create index tb on t(b); begin;"
		for i in $(seq 1 60000); do echo "insert into t(b,c) values('v$((i * 7919 % 10007))-$i', $i.5);"; done
		echo "commit; select count(*), sum(c) from t; update t set b = b || b where a % 3 = 0; select count(*) from t;"
	} >"$tmp/t.sql"
	prog() {
		case $1 in
		python3) PYTHONMALLOC=malloc /usr/bin/time -f "%e %M" -o "$tmp/tm" python3 "$tmp/t.py" >/dev/null ;;
		sqlite3) /usr/bin/time -f "%e %M" -o "$tmp/tm" sqlite3 :memory: <"$tmp/t.sql" >/dev/null ;;
		stress) /usr/bin/time -f "%e %M" -o "$tmp/tm" "$build/bin/test-alloc-stress-libc" 30000 >/dev/null ;;
		esac
		cat "$tmp/tm"
	}
	echo
	echo "-- whole programs under LD_PRELOAD: seconds and peak RSS (ratio to glibc)"
	for p in python3 sqlite3 stress; do
		[ "$p" = stress ] && [ ! -x "$build/bin/test-alloc-stress-libc" ] && continue
		command -v "$p" >/dev/null || [ "$p" = stress ] || continue
		for ((r = 0; r < runs; r++)); do
			for i in "${all[@]}"; do
				LD_PRELOAD=${preloads[$i]} prog "$p" | tail -1 >>"$tmp/prog.$p.${names[$i]}"
			done
		done
		gt=$(awk '{print $1}' "$tmp/prog.$p.glibc" | median); gm=$(awk '{print $2}' "$tmp/prog.$p.glibc" | median)
		for n in "${names[@]}"; do
			t=$(awk '{print $1}' "$tmp/prog.$p.$n" | median); m=$(awk '{print $2}' "$tmp/prog.$p.$n" | median)
			printf "  %-8s %-9s %6.2f s (%s)  %8s KB (%s)\n" "$p" "$n" "$t" "$(ratio "$t" "$gt")" "$m" "$(ratio "$m" "$gm")"
		done
	done
fi
