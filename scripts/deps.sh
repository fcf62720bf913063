#!/usr/bin/env bash
# Install what allocrr needs to build and test on Debian, when run as root;
# otherwise say what is missing.
#   scripts/deps.sh                  build, test and demo
#   ALLOCRR_DEPS=bench scripts/deps.sh   also what `make bench` compares against
#                                    (heaptrack)
#   ALLOCRR_DEPS=full scripts/deps.sh    all of it, plus clang's libFuzzer
# Required packages missing without root: exit 1. Optional ones (the other
# allocators, chromium for the page's test) missing without root: a note,
# exit 0 — the demo and the tests skip what is not there.
set -euo pipefail
need=(cmake pkg-config gcc g++ make libzstd-dev libxxhash-dev libyaml-dev libdw-dev libunwind-dev sqlite3 python3 git
      libjs-dygraphs libjs-chart.js) # g++: libstdc++, whose __cxa_demangle names C++ frames
# the other allocators replays compare against; chromium: the report page's test;
# the allocators' -dev packages and redis: the recorder's tests of programs linked
# against another allocator, and of a real server; clang-format: style.format
optional=(libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 chromium libjemalloc-dev libmimalloc-dev
          libgoogle-perftools-dev redis-server redis-tools clang-format)
bench=(heaptrack)
case "${ALLOCRR_DEPS:-}" in
bench) need+=("${bench[@]}") ;;
full) need+=("${bench[@]}" clang libclang-rt-14-dev hyperfine) ;;
esac
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=() missing_opt=()
for p in "${need[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${optional[@]}"; do installed "$p" || missing_opt+=("$p"); done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  all=("${missing[@]}" "${missing_opt[@]}")
  echo "installing: ${all[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq --no-install-recommends "${all[@]}" >/dev/null
  exit 0
fi
if [ ${#missing_opt[@]} -gt 0 ]; then
  echo "allocrr: optional, skipped without them: ${missing_opt[*]} (sudo apt-get install ${missing_opt[*]})" >&2
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "allocrr needs these Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
