#!/usr/bin/env bash
# README command 1: install, build, then the all-reduce perf test across 4 local ranks with
# the correctness check (nccl-tests table).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build/tools/tuttirun/tuttirun -np 4 build/perf_tests/all_reduce_perf -b 8 -e 64M -f 4 -c 1
