#!/usr/bin/env bash
# Prints the last lines of each failed test's output from ctest's logs.
# Usage: tools/failed-test-tails.sh LastTest.log LastTestsFailed.log [LINES]
set -uo pipefail
log=$1 failed=$2 lines=${3:-25}
[ -f "$log" ] && [ -f "$failed" ] || exit 0
echo "==== the end of each failed test's output (from $log) ===="
while IFS=: read -r _ name; do
  [ -n "$name" ] || continue
  echo "---- $name"
  # The test's section: from its "Testing: name" line to its "end time" line; the output part
  # lies between "Output:" and "<end of output>".
  awk -v t="$name" '
    /^[0-9]+\/[0-9]+ Testing: / { line = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", line)
                                  if (line == t) { on = 1; out = 0; next } }
    on && /^<end of output>/ { on = 0 }
    on && out { print }
    on && /^Output:/ { out = 1; getline }
  ' "$log" | tail -n "$lines"
done <"$failed"
