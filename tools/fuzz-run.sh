#!/usr/bin/env bash
# Runs one libFuzzer target of a TUTTI_FUZZ build for a total time, restarting it after each
# crash (libFuzzer stops at the first), and sums the executions (docs/fuzzing.md).
# Usage: tools/fuzz-run.sh BUILD_DIR TARGET SECONDS [OUT_DIR]
#   TARGET is a name under tests/fuzz (topology_nccl, store_protocol, ...). New corpus entries
#   go to OUT_DIR/corpus/TARGET (default: BUILD_DIR/fuzz-out), crashes to OUT_DIR/artifacts,
#   each run's log to OUT_DIR/logs; the summary line is appended to OUT_DIR/summary.txt.
set -euo pipefail
build=$1 target=$2 total=$3
out=${4:-$build/fuzz-out}
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/tests/fuzz/${target}_fuzz
[ -x "$bin" ] || { echo "fuzz-run: $bin not built (configure with -DTUTTI_FUZZ=ON)" >&2; exit 2; }
mkdir -p "$out/corpus/$target" "$out/artifacts" "$out/logs"
start=$(date +%s) execs=0 crashes=0 run=0
while :; do
  left=$((total - ($(date +%s) - start)))
  [ "$left" -gt 0 ] || break
  run=$((run + 1))
  log=$out/logs/$target.$run.log
  set +e
  "$bin" -max_total_time="$left" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$target-" "$out/corpus/$target" \
    "$repo/tests/fuzz/corpus/$target" >"$log" 2>&1
  rc=$?
  set -e
  n=$(grep -a 'stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
  execs=$((execs + ${n:-0}))
  if [ "$rc" -ne 0 ]; then
    crashes=$((crashes + 1))
    echo "fuzz-run: $target run $run stopped (rc $rc): $(grep -a -m1 -E 'ERROR|runtime error|fuzz target:' "$log" || true)"
    grep -a 'Test unit written' "$log" || true
    sleep 1
  fi
done
line="$target seconds=$total executions=$execs stops=$crashes runs=$run"
echo "$line" | tee -a "$out/summary.txt"
