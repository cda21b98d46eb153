#!/usr/bin/env bash
# Makes the tables of docs/perf/tables.md: all-reduce tutti vs Open MPI vs Gloo at 2, 4 and 8
# local ranks (8 B .. 256 MiB, float32 sum, interleaved, medians), the per-algorithm sweep
# (-A all) and the other collectives, into an output directory (default docs/perf), and their
# markdown tables (tables.md, tools/compare/perf_markdown.py) with the commit in README.txt.
# docs/performance.md links tables.md; the run of 2026-11-27 is kept in
# docs/perf/allreduce-mpi-gloo-2026-11-27.md.
#   tools/perf-report.sh [build-dir] [out-dir]
# Environment: RANKS="2 4 8", MAXBYTES=256M, ALGOMAXBYTES=64M (-A all sweep), REPS=3,
# SMALLITERS=10000 / LARGEITERS=5 (all-reduce comparison calls per size up to / above 32 KiB),
# ITERS=10 (the -A all sweeps and the other collectives).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/perf}
ranks=${RANKS:-2 4 8}
maxb=${MAXBYTES:-256M}
algomax=${ALGOMAXBYTES:-64M}
reps=${REPS:-3}
iters=${ITERS:-10}
# (10000 small calls: a size of 1000 sub-microsecond calls lasts ~1 ms, and one disturbance
# of the VM then moved a whole size's median)
smalliters=${SMALLITERS:-10000}
largeiters=${LARGEITERS:-5}
mkdir -p "$out"
run=$build/tools/tuttirun/tuttirun
pt=$build/perf_tests

{
  echo "# perf-report $(date -u +%Y-%m-%dT%H:%MZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
  echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/README.txt"

for n in $ranks; do
  # One interleaved sweep 8 B .. MAXBYTES: factor 2 up to 32 KiB with SMALLITERS calls
  # (latency; Gloo 50), then factor 4 with LARGEITERS (bandwidth); tutti, MPI, Gloo ring, hd.
  python3 tools/compare/compare.py --build "$build" -np "$n" -b 8 -e "$maxb" -f 2 \
      -n "$largeiters" -w 1 --small-max 32K --small-n "$smalliters" --small-w $((smalliters / 10)) --large-f 4 \
      --reps "$reps" --csv "$out/allreduce_np$n.csv" \
      --plot "$out/allreduce_np$n.png" > "$out/allreduce_np$n.txt"
  "$run" -np "$n" "$pt/all_reduce_perf" -b 8 -e "$algomax" -f 4 -n "$iters" -w 2 -A all \
      2>/dev/null > "$out/allreduce_algos_np$n.txt"
done

n=4
for coll in all_gather reduce_scatter broadcast reduce alltoall; do
  "$run" -np "$n" "$pt/${coll}_perf" -b 1K -e 64M -f 8 -n "$iters" -w 2 --limit 1 -A all \
      2>/dev/null > "$out/${coll}_np$n.txt" ||
    "$run" -np "$n" "$pt/${coll}_perf" -b 1K -e 64M -f 8 -n "$iters" -w 2 --limit 1 \
      2>/dev/null > "$out/${coll}_np$n.txt"
done
"$run" -np 2 "$pt/sendrecv_perf" -b 1K -e 64M -f 8 -n "$iters" -w 2 --limit 1 \
    2>/dev/null > "$out/sendrecv_np2.txt"
# The markdown tables (docs/perf/tables.md by default), from the files above.
python3 tools/compare/perf_markdown.py "$out" > "$out/tables.md"
echo "perf-report: results in $out (tables: $out/tables.md)"
