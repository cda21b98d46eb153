#!/usr/bin/env bash
# README command 2: install, build, then every test (ctest).
# Extra arguments go to ctest instead of the default selection (e.g. -L unit, -LE netns).
# By default everything but the opt-in label "long" (the simulator matrix at 1 Mi elements,
# ~9 min, and the 256 MiB tcp pair matrix) runs, the full collectives matrix (label "matrix",
# ~400 s of test time) included; run the long ones with
#   tools/run-tests.sh -L long
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cd build
if [ $# -eq 0 ]; then
  set -- -LE long
fi
ctest --output-on-failure --timeout 900 -j 2 "$@"
