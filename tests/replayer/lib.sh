# lib.sh - shared by the replayer test scripts. Arguments of every script:
#   ALLOCRR ENGINE BINDIR SRCDIR
set -eu
ALLOCRR=$1 ENGINE=$2 BINDIR=$3 SRCDIR=$4
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/replay-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
# json EXPR FILE: evaluate a Python expression on the JSON document d
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[2])); print($1)" "$1" "$2" 2>/dev/null ||
         $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$2"; }
