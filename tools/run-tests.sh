#!/usr/bin/env bash
# README command 2: install, build, then every test (ctest).
# Extra arguments go to ctest (e.g. -L unit, -LE netns).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cd build
ctest --output-on-failure --timeout 600 -j 2 "$@"
