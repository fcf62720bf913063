#!/bin/sh
# record.sh ALLOCRR OUT PROGRAM [ARG...] - record one seed scenario into OUT
# (OUT.out gets the program's own output), for the build. Fails if the
# program fails or leaves no trace.
set -eu
allocrr=$1 out=$2
shift 2
"$allocrr" record -q -o "$out" -- "$@" > "$out.out"
test -s "$out" || { echo "record.sh: no trace written to $out" >&2; exit 1; }
