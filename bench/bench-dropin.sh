#!/usr/bin/env bash
# bench-dropin.sh: the built-in allocator as a drop-in (LD_PRELOAD of
# liballocrr-malloc.so) in whole programs, against glibc and the other
# allocators installed, side by side in one run: max RSS, minor faults and
# wall time (issue 13: builtin's RSS never above glibc's, small programs
# included, where the allocator's fixed cost is most of the difference).
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bash bench/bench-dropin.sh [BUILD_DIR]

Runs each program RUNS times with every allocator, alternating the
allocators within each round (their order rotated from round to round):
  glibc     no preload
  builtin   LD_PRELOAD=BUILD_DIR/lib/liballocrr-malloc.so
  jemalloc  LD_PRELOAD=libjemalloc.so.2   (if installed)
  mimalloc  LD_PRELOAD=libmimalloc.so.2   (if installed)
through bench/workloads/runstat.c (fork, exec, wait4: ru_maxrss, ru_minflt of
the program and the children it waited for, e.g. cc1 under gcc), and prints a
Markdown table of medians: max RSS (KB) per allocator with its ratio to
glibc's, minor faults, and wall time as a ratio to glibc's. Every run's
output is compared with glibc's: a program whose output differs fails the
bench.

Programs: true (nothing but start-up: the fixed cost alone), sed (one line of
a file), sort and awk (a generated word list), python3 (dicts, json, sorting;
pymalloc on, as users run it), sqlite3 (bench/workloads/sqlite_gen.py into
:memory:), gcc (gcc -O1 -c on a file from bench/workloads/gen_c.py: cc1 and
as under the preload too), analyze (BUILD_DIR/bin/allocrr analyze on the
bundled traces/python3.atr), and programs no part of the allocator was tuned on:
bc (a big power, modulo), perl (a hash of 200 000 joined lists), git (log
--stat of this checkout, when it is a git work tree), tar (a copy of this
tree's docs and allocator sources, taken at the start, through gzip: tar, gzip
and the shell preloaded), xz (-6 of 3 MB
of a generated JSON file), pyjson (python3 loading and dumping that 20 MB JSON
file), pythreads (python3, four threads building and trimming lists of
json strings), pyphases (python3: 200 000 strings of 1 KB made and dropped,
then 1.5 M tuples, which live in arenas python maps itself: found
2026-12-07), perlhash (perl: a hash of 100 000 five-element arrays, whose
bucket array realloc doubles to 2 MiB), perlio (perl counting the 3-digit
prefixes of 2 000 000 lines: per line a malloc of 1-8 KiB whose size shrinks
by the line's length, two such blocks alive at a time), gdb (gdb --batch printing 1+1: three
threads) and java (java -version: 18 threads, 7 000 calls); and eleven
allocation patterns of bench/workloads/patterns.c found on 2026-12-07
(hugecalloc: 1-16 MB callocs of random sizes; hugebuf: four 1-8 MB buffers
replaced among small blocks; rounds: a thousand small blocks made and freed,
over and over; threads: 64 short-lived threads at a time doing the same;
pairs: the same two threads at a time, 600 in all; replace: 4 096 blocks of 1-3 KB replaced at random; aligned: the same with
posix_memalign; builders: strings grown by realloc 1-100 bytes a call;
batches: 25-1 600 blocks of 16-64 bytes made and freed, over and over, as
glibc's bench-malloc-simple does; handoff: two chains of 40 threads that
each replace random slots of 5 000 blocks of 8-1 000 bytes and hand them to
the next, as mimalloc-bench's larson does, 2026-12-07 evening; refill: two
threads that each make 200 blocks of 8-64 KB, write them and free them all,
a new thread each round, as mimalloc-bench's mstress does, 2026-12-07
night). A program whose tool is missing is left out.

Arguments:
  BUILD_DIR        CMake build tree holding lib/liballocrr-malloc.so (default: build)

Environment:
  RUNS=N           rounds (default 3)
  SCALE=full|tiny  input sizes (default full; tiny for bench/smoke.sh)
  PROGRAMS="..."   subset and order, separated by spaces or commas (default: true sed sort awk python3
                   sqlite3 gcc analyze bc perl git tar xz pyjson pythreads pyphases perlhash perlio gdb java
                   hugecalloc hugebuf rounds threads pairs replace aligned builders batches handoff refill)
  ALLOCS="..."     allocators (default: glibc builtin jemalloc mimalloc; a missing one is left
                   out); NAME=LIB preloads LIB as NAME (e.g. before=/tmp/old/liballocrr-malloc.so,
                   to compare two builds of the library in one run)
  RAW=FILE         also write every measurement, one per line, to FILE
EOF
}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"
bench_setup "$@"
scale=${SCALE:-full}
programs=${PROGRAMS:-true sed sort awk python3 sqlite3 gcc analyze bc perl git tar xz pyjson pythreads pyphases perlhash perlio gdb java hugecalloc hugebuf rounds threads pairs replace aligned builders batches handoff refill}
programs=${programs//,/ } # commas too: run-all.sh passes no spaces
allocs_want=${ALLOCS:-glibc builtin jemalloc mimalloc}
allocs_want=${allocs_want//,/ }

die() {
	echo "bench-dropin: $*" >&2
	exit 1
}
note() { echo "bench-dropin: $*" >&2; }

case "$scale" in
full) words=200000 py_n=100000 sql_n=20000 c_lines=3000 json_n=150000 thr_n=40000 bc_e=200000 git_n=400 perlhash_n=100000 lines_n=2000000 pat_scale=1 phase_n=200000 ;;
tiny) words=2000 py_n=2000 sql_n=500 c_lines=200 json_n=2000 thr_n=500 bc_e=2000 git_n=5 perlhash_n=1000 lines_n=20000 pat_scale=100 phase_n=2000 ;;
*) die "SCALE must be 'full' or 'tiny', not '$scale'" ;;
esac
builtin_lib=$build/lib/liballocrr-malloc.so
[ -f "$builtin_lib" ] || die "no $builtin_lib: build first"
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3) || die "python3 not found"

# an allocator's library: the first that exists of the usual places
find_lib() {
	local name=$1 d
	for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
		[ -f "$d/$name" ] && { echo "$d/$name"; return 0; }
	done
	return 1
}
allocs=""
declare -A lib
for a in $allocs_want; do
	case $a in
	glibc) lib[$a]="" ;;
	builtin) lib[$a]=$builtin_lib ;;
	jemalloc) lib[$a]=$(find_lib libjemalloc.so.2) || { note "jemalloc not installed: left out"; continue; } ;;
	mimalloc) lib[$a]=$(find_lib libmimalloc.so.2) || { note "mimalloc not installed: left out"; continue; } ;;
	*=*)
		[ -f "${a#*=}" ] || die "no library '${a#*=}' for '${a%%=*}'"
		lib[${a%%=*}]=${a#*=} a=${a%%=*}
		;;
	*) die "unknown allocator '$a'" ;;
	esac
	allocs="$allocs $a"
done
case " $allocs " in *" glibc "*) ;; *) die "ALLOCS must include glibc (the ratios' base)" ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-dropin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 "$here/workloads/runstat.c" -o "$tmp/runstat"
cc -O2 -pthread "$here/workloads/patterns.c" -o "$tmp/patterns"

# inputs
"$python" - "$words" >"$tmp/words.txt" <<'PY'
import random, sys
r = random.Random(13)
syl = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qua", "bri", "dor"]
for i in range(int(sys.argv[1])):
    print("".join(r.choice(syl) for _ in range(r.randint(1, 5))), r.randint(0, 99999), r.choice(syl))
PY
cat >"$tmp/work.py" <<'PY'
import json, sys, collections
n = int(sys.argv[1])
d = {f"k{i}": [i, str(i) * 3, {"v": i / 7}] for i in range(n)}
s = json.dumps(d, sort_keys=True)
d2 = json.loads(s)
c = collections.Counter(len(k) for k in d2)
print(len(s), sorted(c.items())[:3], sorted(d2)[n // 2])
PY
"$python" "$here/workloads/sqlite_gen.py" "$sql_n" >"$tmp/work.sql"
"$python" "$here/workloads/gen_c.py" "$c_lines" >"$tmp/work.c"
"$python" - "$json_n" "$tmp/big.json" <<'PY'
import json, random, sys
r = random.Random(1)
d = [{"id": i, "name": "n%d" % i, "tags": [r.choice("abcdefg") * r.randint(1, 30) for _ in range(r.randint(0, 8))],
      "v": r.random()} for i in range(int(sys.argv[1]))]
json.dump(d, open(sys.argv[2], "w"))
PY
cat >"$tmp/threads.py" <<'PY'
import json, sys, threading
def work(k, n):
    out = []
    for i in range(n):
        out.append(json.dumps({"k": k, "i": i, "s": "x" * (i % 300), "l": list(range(i % 40))}))
        if len(out) > 2000:
            out = out[1000:]
ts = [threading.Thread(target=work, args=(k, int(sys.argv[1]))) for k in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print("done")
PY
echo "2^$bc_e % 7" >"$tmp/bc.in"
# tar's input: a copy, so that its output stays the same while the tree
# changes under the bench (run-all.sh rewrites docs/ after it; an edit)
mkdir "$tmp/tree" && cp -R "$src/docs" "$src/allocator" "$tmp/tree/"
"$python" -c 'import random, sys
r = random.Random(7)
sys.stdout.write("".join("%d\n" % r.randint(1, 2000000) for _ in range(int(sys.argv[1]))))' "$lines_n" >"$tmp/lines.txt"
head -c 3000000 "$tmp/big.json" >"$tmp/part.json" # xz: a few seconds a run
trace=$src/traces/python3.atr
[ -f "$trace" ] || die "no $trace"

# program NAME -> sets cmd (array) and cmd_in (stdin file)
program() {
	cmd_in=/dev/null
	case $1 in
	true) cmd=(/bin/true) ;;
	sed) cmd=(sed -n 1p "$tmp/words.txt") ;;
	sort) cmd=(sort -k2,2n -k1,1 "$tmp/words.txt") ;;
	awk) cmd=(awk '{ n[$3]++; t += $2 } END { for (k in n) print k, n[k]; print t }' "$tmp/words.txt") ;;
	python3) cmd=("$python" "$tmp/work.py" "$py_n") ;;
	sqlite3)
		command -v sqlite3 >/dev/null || return 1
		cmd=(sqlite3 :memory:) cmd_in=$tmp/work.sql
		;;
	gcc)
		command -v gcc >/dev/null || return 1
		cmd=(gcc -O1 -c "$tmp/work.c" -o "$tmp/work.o")
		;;
	analyze)
		[ -x "$build/bin/allocrr" ] || return 1
		cmd=("$build/bin/allocrr" analyze --trace-only --json "$trace")
		;;
	bc)
		command -v bc >/dev/null || return 1
		cmd=(bc) cmd_in=$tmp/bc.in
		;;
	perl)
		command -v perl >/dev/null || return 1
		cmd=(perl -e 'my %h; $h{$_} = join(",", 1 .. ($_ % 50)) for 1 .. 200000; print scalar(keys %h), "\n"')
		;;
	git)
		command -v git >/dev/null && git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || return 1
		cmd=(git -C "$src" log --stat -n "$git_n" --no-color)
		;;
	tar)
		command -v gzip >/dev/null || return 1
		cmd=(sh -c 'tar cf - -C "$1" docs allocator | gzip -6 | wc -c' sh "$tmp/tree")
		;;
	xz)
		command -v xz >/dev/null || return 1
		cmd=(xz -6 -c -T1 "$tmp/part.json")
		;;
	pyjson) cmd=("$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(len(json.dumps(d)))' "$tmp/big.json") ;;
	pythreads) cmd=("$python" "$tmp/threads.py" "$thr_n") ;;
	pyphases) cmd=("$python" -c 'import sys; n = int(sys.argv[1]); a = [("x" * 1000) + str(i) for i in range(n)]; del a; b = [(i, i + 1) for i in range(n * 15 // 2)]; print(len(b))' "$phase_n") ;;
	perlio)
		command -v perl >/dev/null || return 1
		cmd=(perl -ne '$h{$1}++ if /^(\d\d\d)/; END { print scalar(keys %h), "\n" }' "$tmp/lines.txt")
		;;
	perlhash)
		command -v perl >/dev/null || return 1
		cmd=(perl -e 'my %h; $h{$_} = [1 .. 5] for 1 .. '"$perlhash_n"'; print scalar(keys %h), "\n"')
		;;
	gdb)
		command -v gdb >/dev/null || return 1
		cmd=(gdb --batch -nx -ex "print 1+1")
		;;
	hugecalloc | hugebuf | rounds | threads | pairs | replace | aligned | builders | batches | handoff | refill)
		cmd=("$tmp/patterns" "$1" "$pat_scale")
		;;
	java)
		command -v java >/dev/null || return 1
		cmd=(java -version)
		;;
	*) die "unknown program '$1'" ;;
	esac
}
progs=""
for p in $programs; do
	if program "$p"; then progs="$progs $p"; else note "$p: not installed, left out"; fi
done

results=$tmp/results
: >"$results"
# run PROGRAM ALLOC ROUND: one measurement line
# (program alloc round seconds maxrss_kib minflt status same_output)
run() {
	local p=$1 a=$2 r=$3 status=0 secs=- rss=- flt=- same=1
	program "$p"
	local pre=()
	# set by runstat in the child, just before the exec: runstat preloaded
	# itself would put the allocator's pages in the child's pre-exec copy,
	# which ru_maxrss counts (bench/workloads/runstat.c)
	[ -n "${lib[$a]}" ] && pre=(env "RUNSTAT_PRELOAD=${lib[$a]}")
	"${pre[@]}" "$tmp/runstat" "$tmp/stat" "${cmd[@]}" <"$cmd_in" >"$tmp/out" 2>"$tmp/err" || status=$?
	read -r secs rss _ flt <"$tmp/stat" || true
	# gcc's output is its object file; the others print
	[ "$p" = gcc ] && cat "$tmp/work.o" >>"$tmp/out"
	if [ "$a" = glibc ] && [ ! -f "$tmp/ref.$p" ]; then
		cp "$tmp/out" "$tmp/ref.$p"
	elif ! cmp -s "$tmp/out" "$tmp/ref.$p"; then
		same=0
	fi
	if [ "$status" -ne 0 ]; then
		note "$p/$a round $r failed with status $status:"
		head -c 400 "$tmp/err" >&2
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$a" "$r" "$secs" "$rss" "$flt" "$status" "$same" >>"$results"
}

# glibc first once per program, for the reference output
for p in $progs; do
	note "$p: reference run (glibc)"
	run "$p" glibc 0
done
set -- $allocs
nalloc=$#
for r in $(seq 1 "$runs"); do
	note "round $r of $runs"
	for p in $progs; do
		# rotate the order from round to round
		set -- $allocs
		for k in $(seq 1 $(((r - 1) % nalloc))); do set -- "${@:2}" "$1"; done
		for a in "$@"; do run "$p" "$a" "$r"; done
	done
done
[ -n "${RAW:-}" ] && cp "$results" "$RAW"

"$python" - "$results" "$runs" $allocs <<'PY'
import statistics, sys
path, runs, allocs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows, order, bad = {}, [], []
for line in open(path):
    p, a, r, secs, rss, flt, status, same = line.rstrip("\n").split("\t")
    if p not in order:
        order.append(p)
    if r == "0":
        continue
    if status != "0" or same != "1":
        bad.append(f"{p}/{a} round {r}: " + (f"status {status}" if status != "0" else "output differs from glibc's"))
        continue
    rows.setdefault((p, a), []).append((float(secs), int(rss), int(flt)))
med = lambda xs: statistics.median(xs)
others = [a for a in allocs if a != "glibc"]
print("## Drop-in: whole programs with each allocator preloaded\n")
hdr = ["program", "glibc max RSS KB"] + [f"{a} RSS" for a in others] + ["glibc minflt"] + \
      [f"{a} minflt" for a in others] + [f"{a} time" for a in others]
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
above = counted = 0
for p in order:
    g = rows.get((p, "glibc"))
    if not g:
        continue
    gs, gr, gf = (med(x[i] for x in g) for i in range(3))
    m = {}
    for a in others:
        v = rows.get((p, a))
        m[a] = tuple(med(x[i] for x in v) for i in range(3)) if v else None
    cells = [p, f"{gr:,.0f}"]
    for a in others:
        if m[a] is None:
            cells.append("-")
            continue
        ratio = m[a][1] / gr
        cells.append(f"{m[a][1]:,.0f} ({ratio:.3f}" + ("!" if a == "builtin" and ratio > 1.0 else "") + ")")
    cells.append(f"{gf:,.0f}")
    cells += [f"{m[a][2]:,.0f} ({m[a][2] / gf:.2f})" if m[a] else "-" for a in others]
    cells += [f"{m[a][0] / gs:.2f}" if m[a] and gs > 0 else "-" for a in others]
    if m.get("builtin"):
        counted += 1
        above += m["builtin"][1] > gr
    print("| " + " | ".join(cells) + " |")
print(f"\nMedians of {runs} runs. RSS: ru_maxrss from wait4 (the largest of the program and the children it")
print("waited for); minflt: ru_minflt (their minor page faults); time: wall time over glibc's.")
print("A ratio over 1.000 for builtin is marked '!' (issue 13's bound).")
if counted:
    print(f"builtin's max RSS above glibc's on {above} of {counted} programs.")
if bad:
    print("\nFailed runs (left out of the medians): " + "; ".join(bad) + ".")
    sys.exit(1)
PY
