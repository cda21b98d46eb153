#!/usr/bin/env bash
# README command 2: install, build, then every test (ctest).
# Extra arguments go to ctest instead of the default selection (e.g. -L unit, -LE netns).
# By default the long exhaustive matrices (label "matrix": every collective x algorithm x
# dtype x op at 1 Mi+3 elements, ~30+ min on 2 cores) are left out; run them with
#   tools/run-tests.sh -L matrix
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cd build
if [ $# -eq 0 ]; then
  set -- -LE matrix
fi
ctest --output-on-failure --timeout 900 -j 2 "$@"
