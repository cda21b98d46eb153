#!/usr/bin/env bash
# One call on a GPU machine builds, checks and times tutti's CUDA support:
#   1. configure + build only the needed targets (-j$JOBS, default 16)
#   2. ctest -L gpu (device reduction kernels incl. float32-sum bandwidth vs D2D copy,
#      every collective on device buffers at 1/2/4/8 ranks sharing GPU 0, host/device mix,
#      killed rank) and the cuda_ipc host-logic unit test
#   3. the same device collectives over the cuda_ipc transport (device FIFO, then the
#      host-staging fallback)
#   4. all_reduce_perf --memory cuda at 2/4/8 ranks on one GPU, 8 B .. 1 GiB
# Results go to $OUT/gpu-check (or ./gpu-check-results): logs, JSON of the perf runs and
# summary.txt. Without a GPU it builds, says so, and skips steps 2-4 (exit 0).
# Usage: tools/gpu-check.sh [build-dir]   (env: JOBS, TUTTI_CUDA_ARCHS, BUILD_TYPE, SKIP_BUILD=1)
set -u -o pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$SRC/build-gpu-check}"
RES="${OUT:-$SRC}/gpu-check"
[ -n "${OUT:-}" ] || RES="$SRC/gpu-check-results"
JOBS="${JOBS:-16}"
ARCHS="${TUTTI_CUDA_ARCHS:-80;90}"
mkdir -p "$RES"
SUMMARY="$RES/summary.txt"
: >"$SUMMARY"
T0=$(date +%s)
say() { echo "[gpu-check +$(( $(date +%s) - T0 ))s] $*" | tee -a "$SUMMARY"; }
fails=0
step() {  # step NAME TIMEOUT_S CMD...: runs CMD with a time limit, logs to $RES/NAME.log
  local name=$1 limit=$2
  shift 2
  local t=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$RES/$name.log" 2>&1
  local rc=$?
  say "$name: rc=$rc in $(( $(date +%s) - t ))s (log $RES/$name.log)"
  [ $rc -eq 0 ] || fails=$((fails + 1))
  return $rc
}

say "source $SRC, build $BUILD, results $RES"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader 2>&1 | tee -a "$SUMMARY"

# ---- 1. build ----
TARGETS="tutti tuttirun all_reduce_perf cuda_reduce_test cuda_collectives_test cuda_ipc_fifo_test"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  step configure 300 cmake -S "$SRC" -B "$BUILD" "${GEN[@]}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release}" \
    -DTUTTI_WITH_CUDA=ON "-DTUTTI_CUDA_ARCHS=$ARCHS" \
    || { say "configure failed"; exit 1; }
  step build 600 cmake --build "$BUILD" -j "$JOBS" --target $TARGETS || { say "build failed"; exit 1; }
fi
step cuda_ipc_unit 120 "$BUILD/tests/gpu/cuda_ipc_fifo_test"

# ---- is there a GPU? ----
if ! nvidia-smi -L >/dev/null 2>&1; then
  say "no GPU visible (nvidia-smi -L failed): build checked, GPU steps skipped"
  exit $(( fails > 0 ))
fi

# ---- 2. ctest -L gpu ----
step ctest_gpu 300 ctest --test-dir "$BUILD" -L gpu --output-on-failure
grep -h "\[bandwidth\]" "$RES/ctest_gpu.log" | tee -a "$SUMMARY"

# ---- 3. the same collectives over cuda_ipc (device FIFO, then host staging) ----
COLL="$BUILD/tests/gpu/cuda_collectives_test"
step cuda_ipc_device 240 env TUTTI_CUDA_IPC_ENABLE=1 TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=TRANSPORT \
  "$COLL" --gtest_filter='Ranks/DeviceCollectives.*/1:Ranks/DeviceCollectives.*/2:DeviceBuffers.*'
grep -h "cuda_ipc: rank 0 <->" "$RES/cuda_ipc_device.log" | head -3 | tee -a "$SUMMARY"
step cuda_ipc_hoststaging 240 env TUTTI_CUDA_IPC_ENABLE=1 TUTTI_CUDA_IPC_P2P=0 \
  "$COLL" --gtest_filter='Ranks/DeviceCollectives.*/1'

# ---- 4. all_reduce_perf --memory cuda, 2/4/8 ranks on one GPU ----
RUN="$BUILD/tools/tuttirun/tuttirun"
PERF="$BUILD/perf_tests/all_reduce_perf"
for np in 2 4 8; do
  step "all_reduce_perf_np$np" 240 "$RUN" -np $np --timeout 230 "$PERF" --memory cuda \
    -b 8 -e 1G -f 2 -n 5 -w 2 -c 1 -J "$RES/all_reduce_perf_np$np.json"
  grep -E "^ +(8|1048576|1073741824) |Avg bus" "$RES/all_reduce_perf_np$np.log" | tee -a "$SUMMARY"
done
step all_reduce_perf_np2_cuda_ipc 120 env TUTTI_CUDA_IPC_ENABLE=1 "$RUN" -np 2 --timeout 110 \
  "$PERF" --memory cuda -b 8 -e 256M -f 4 -n 5 -w 2 -c 1 -J "$RES/all_reduce_perf_np2_cuda_ipc.json"
grep -E "Avg bus" "$RES/all_reduce_perf_np2_cuda_ipc.log" | tee -a "$SUMMARY"

say "done: $fails failed step(s)"
exit $(( fails > 0 ))
