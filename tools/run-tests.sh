#!/usr/bin/env bash
# README command 2: install, build, then every test (ctest).
# Extra arguments go to ctest instead of the default selection (e.g. -L unit, -LE netns).
# By default everything but the opt-in labels runs: "extended" (what CI runs after this
# selection: the Soft-RoCE VM, the mutation run, the 7-rank core matrix, the torch digits
# example), "matrix" (the full product of the collectives matrix, ~11 min on 2 cores; the
# default run has its core) and "long" (the simulator matrix at 1 Mi elements, the 256 MiB tcp
# pair matrix, the 5-minute soak, the wheel build, 512 ranks' init). Run them with
#   tools/run-tests.sh -L extended
#   tools/run-tests.sh -L matrix
#   tools/run-tests.sh -L long
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cd build
if [ $# -eq 0 ]; then
  set -- -LE 'long|matrix|extended'
fi
rc=0
ctest --output-on-failure --timeout 900 -j 2 "$@" || rc=$?
if [ "$rc" -ne 0 ]; then
  # A CI log is often shown as its head and tail only: repeat the end of each failed test's
  # output here, where the tail keeps it.
  ../tools/failed-test-tails.sh Testing/Temporary/LastTest.log Testing/Temporary/LastTestsFailed.log
fi
exit "$rc"
