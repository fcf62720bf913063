#!/bin/sh
# install.sh BUILD SRC: `cmake --install` into a temporary prefix gives a
# working toolkit: the CLI records and replays from there, a program built
# against allocrr.pc reads traces, man pages render, completion completes.
set -eu
BUILD=$(cd "$1" && pwd) SRC=$(cd "$2" && pwd)
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed"; exit 77; }
command -v cc >/dev/null || { echo "SKIP: no C compiler"; exit 77; }
PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/allocrr-install.XXXXXX")
trap 'rm -rf "$PREFIX"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$BUILD" --prefix "$PREFIX" > "$PREFIX/install.log" || fail "cmake --install"
LIBDIR=$(sed -n 's/^libdir=\${prefix}\///p' "$PREFIX"/lib*/pkgconfig/allocrr.pc 2>/dev/null | head -n 1)
[ -n "$LIBDIR" ] || fail "no allocrr.pc installed"
for f in bin/allocrr bin/allocrr-replay-engine $LIBDIR/allocrr/liballocrr-record.so $LIBDIR/liballocrr-malloc.so \
	$LIBDIR/liballocrr.so.0 $LIBDIR/liballocrr.so include/allocrr/trace.h include/allocrr/error.h \
	share/bash-completion/completions/allocrr share/man/man1/allocrr.1; do
	[ -e "$PREFIX/$f" ] || fail "not installed: $f"
done
# every header in the tree is installed
for h in "$SRC"/include/allocrr/*.h; do
	[ -e "$PREFIX/include/allocrr/$(basename "$h")" ] || fail "header not installed: $(basename "$h")"
done

# a program outside the tree, built with pkg-config alone
export PKG_CONFIG_PATH="$PREFIX/$LIBDIR/pkgconfig"
[ "$(pkg-config --modversion allocrr)" = "$("$PREFIX/bin/allocrr" --version | cut -d' ' -f2)" ] || fail "pc version"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$PREFIX/count" "$SRC/tests/toolkit/count.c" $(pkg-config --cflags --libs allocrr) \
	-Wl,-rpath,"$PREFIX/$LIBDIR" || fail "building against allocrr.pc"
ldd "$PREFIX/count" | grep -q "$PREFIX/$LIBDIR/liballocrr.so.0" || fail "count does not use liballocrr.so.0"
for t in calls.atr gcc.atr.16279; do
	out=$("$PREFIX/count" "$SRC/traces/$t") || fail "count $t"
	want=$("$PREFIX/bin/allocrr" info --json "$SRC/traces/$t" | python3 -c \
		'import json,sys; d=json.load(sys.stdin); print("calls=%d" % sum(v for k, v in d["ops"].items() if k in
		("malloc","calloc","realloc","free","posix_memalign","aligned_alloc","memalign","valloc","pvalloc",
		"reallocarray")))')
	case "$out" in *" $want "*) ;; *) fail "$t: count says '$out', info says $want" ;; esac
	echo "$out"
done
# a bad file: an error, not a crash
echo "not a trace" > "$PREFIX/bad.atr"
"$PREFIX/count" "$PREFIX/bad.atr" 2> "$PREFIX/err" && fail "count accepted a bad trace"
grep -q "bad magic" "$PREFIX/err" || fail "count: $(cat "$PREFIX/err")"

# the installed CLI finds its recorder, engine and allocator
cd "$PREFIX"
unset ALLOCRR_PRELOAD_LIB ALLOCRR_REPLAY_ENGINE
"$PREFIX/bin/allocrr" record -q -o rec.atr -- "$PREFIX/count" "$SRC/traces/calls.atr" > /dev/null ||
	fail "installed record"
"$PREFIX/bin/allocrr" replay -q -a glibc -a builtin --json rec.atr > rep.json || fail "installed replay"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["results"]
assert [x["allocator"] for x in r] == ["glibc", "builtin"] and all(x["ops"] == d["workload"]["calls"] > 0 for x in r), r' \
	rep.json || fail "installed replay results"

# a man page for allocrr and each command, rendering without warnings
for cmd in $("$PREFIX/bin/allocrr" --help | sed -n '/^commands:/,/^$/{s/^  \([a-z][a-z0-9-]*\) .*/\1/p}'); do
	page="$PREFIX/share/man/man1/allocrr-$cmd.1"
	[ -s "$page" ] || fail "no man page for $cmd"
	# the page says what --help says: every long option is there
	for o in $("$PREFIX/bin/allocrr" "$cmd" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
		grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" "$page" || fail "allocrr-$cmd.1 lacks $o"
	done
	if command -v groff >/dev/null; then
		w=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff $page"
		[ -z "$w" ] || fail "allocrr-$cmd.1: $w"
	fi
done

# bash completion: commands and a command's options
got=$(PATH="$PREFIX/bin:$PATH" bash -c '. "$1"; COMP_WORDS=(allocrr re); COMP_CWORD=1; _allocrr; echo "${COMPREPLY[*]}"' \
	_ "$PREFIX/share/bash-completion/completions/allocrr")
[ "$got" = "record replay report" ] || fail "completion of 're': '$got'"
got=$(PATH="$PREFIX/bin:$PATH" bash -c '. "$1"; COMP_WORDS=(allocrr info --t); COMP_CWORD=2; _allocrr; echo "${COMPREPLY[*]}"' \
	_ "$PREFIX/share/bash-completion/completions/allocrr")
[ "$got" = "--tree" ] || fail "completion of 'info --t': '$got'"

# allocrr_mark() from C and C++, when its header is there
if [ -e "$PREFIX/include/allocrr/mark.h" ]; then
	printf '#include <allocrr/mark.h>\nint main(void) { return 0; }\n' > m.c
	cc -c -Wall -Werror -I"$PREFIX/include" m.c -o m.o || fail "mark.h from C"
	if command -v c++ >/dev/null; then
		cp m.c m.cc
		c++ -c -Wall -Werror -I"$PREFIX/include" m.cc -o mcc.o || fail "mark.h from C++"
	fi
fi
echo ok
