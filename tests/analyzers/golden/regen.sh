#!/bin/sh
# Re-write the golden documents from a build: only after a deliberate change
# to an analysis, and say which in the commit. Usage: regen.sh BUILD_DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
for n in calls endings fork fork-child; do
	"$1/bin/allocrr" analyze --json --trace-only "$here/../../../traces/$n.atr" | python3 -c '
import json, sys
doc = json.load(sys.stdin)["traces"][0]
doc["trace"].pop("path")
json.dump(doc, open(sys.argv[1], "w"), indent=1)
' "$here/$n.json"
done
