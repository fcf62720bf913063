#!/bin/sh
# JSON output is valid UTF-8 whatever bytes a program's path, arguments or
# exec'd paths hold: invalid sequences become U+FFFD, valid ones are kept.
. "$(dirname "$0")/lib.sh"
bad=$(printf 'prog-\377\376-\303\251')   # two invalid bytes, then a valid é
cp "$BINDIR/replay-test-calls" "./$bad"
"$ALLOCRR" record -q -o t.atr -- "./$bad" "$(printf 'arg-\200\300\257-\342\202')" 2>/dev/null || fail "recording"
"$ALLOCRR" info --json t.atr > info.json || fail "info --json"
$PY - info.json <<'PYEOF' || fail "info --json: not valid UTF-8 JSON"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))  # strict
assert d["exe"].endswith("prog-\ufffd\ufffd-\u00e9"), d["exe"]
assert d["argv"].endswith("arg-\ufffd\ufffd\ufffd-\ufffd\ufffd"), d["argv"]
PYEOF
# an exec'd path in dump --json
"$ALLOCRR" record -q -o e.atr -- /bin/sh -c "exec './$bad'" 2>/dev/null || fail "recording an exec"
"$ALLOCRR" dump --json e.atr > d.jsonl 2>/dev/null || fail "dump --json"
$PY - d.jsonl <<'PYEOF' || fail "dump --json: not valid UTF-8 JSON lines"
import json, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8").splitlines()
execs = [e for e in map(json.loads, lines) if e.get("op") == "exec"]
assert execs and any("\ufffd\ufffd-\u00e9" in e["path"] for e in execs), execs
PYEOF
echo ok
