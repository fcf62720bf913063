#!/usr/bin/env bash
# Install what allocrr needs to build and test on Debian, when run as root;
# otherwise say what is missing.
set -euo pipefail
# libjs-dygraphs, libjs-chart.js: the report page's charts, embedded at build time;
# chromium: the page's test (skipped without it); the -dev allocators and redis:
# recording programs linked against another allocator, and a real server.
need=(cmake pkg-config gcc make libzstd-dev libxxhash-dev libyaml-dev libunwind-dev libdw-dev sqlite3 python3 git libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
      libjs-dygraphs libjs-chart.js chromium libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev redis-server redis-tools)
[ "${ALLOCRR_DEPS:-}" = "full" ] && need+=(clang libclang-rt-14-dev heaptrack hyperfine)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "allocrr needs these Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
