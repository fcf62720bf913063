#!/bin/sh
# check-format.sh [SOURCE_DIR] - is every C file formatted as .clang-format says?
#
# Checks the files `git ls-files '*.c' '*.h'` lists (none are vendored or
# generated: generated sources live in the build tree), prints the ones
# clang-format would change and the command that fixes them. Exit 0 when
# all are formatted, 1 when some are not, 77 (ctest's skip) when
# clang-format or git is missing or SOURCE_DIR is not a git work tree.
cd "${1:-$(dirname "$0")/..}" || exit 1
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
	echo "check-format: skipped: $CLANG_FORMAT is not installed (apt-get install clang-format)"
	exit 77
fi
if ! command -v git >/dev/null 2>&1 || ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "check-format: skipped: $(pwd) is not a git work tree"
	exit 77
fi
bad=$(git ls-files '*.c' '*.h' | while read -r f; do
	[ -f "$f" ] || continue
	"$CLANG_FORMAT" --style=file --dry-run "$f" 2>&1 | grep -q . && echo "$f"
done)
if [ -n "$bad" ]; then
	n=$(echo "$bad" | wc -l)
	echo "check-format: $n file(s) not formatted as .clang-format says:"
	echo "$bad" | sed 's/^/  /'
	echo "fix them with:"
	echo "  (cd $(pwd) && $CLANG_FORMAT -i $(echo "$bad" | tr '\n' ' '))"
	exit 1
fi
echo "check-format: $(git ls-files '*.c' '*.h' | wc -l) files formatted"
