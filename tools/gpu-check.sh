#!/usr/bin/env bash
# One call on a GPU machine builds (or takes a prebuilt, carried tree), checks and times
# tutti's CUDA support and the host path on that machine's cores:
#   1. configure + build only the needed targets (-j$JOBS), unless SKIP_BUILD=1
#   2. the GPU tests (cuda_reduce_test: kernels vs the host kernels and the float32-sum
#      bandwidth vs a D2D copy; cuda_collectives_test: every collective on device buffers at
#      1/2/4/8 ranks sharing GPU 0, host/device mix, killed rank), run directly (the same
#      commands as `ctest -L gpu`, so a carried tree needs no CTest files) + cuda_ipc unit test
#      and the direct device all-reduce (pieces, one-/two-shot, back-to-back calls, a stalled
#      and a killed peer)
#   3. all_reduce_perf --memory cuda at 2/4/8 ranks on one GPU, 8 B .. 512 MiB, direct
#      (TUTTI_CUDA_DIRECT=1, automatic settings); then staged (the default) to $STAGED_MAX
#   4. the device collectives over the cuda_ipc transport (device FIFO, then host staging)
#   5. host all-reduce at 4/8/16 ranks: tutti vs Open MPI vs Gloo (tools/compare/compare.py)
# Every step has a time limit; results go to $RES (default $OUT/gpu-check, else
# ./gpu-check-results): one log per step and summary.txt, and $OUT/gpu-check.tgz of them all
# when $OUT is set (the device tool returns at most 8 files). Without a GPU it says so and
# skips steps 2-4 (exit 0 if the rest passed).
# Usage: tools/gpu-check.sh [build-dir]
#   env: JOBS, TUTTI_CUDA_ARCHS, BUILD_TYPE, SKIP_BUILD=1, RES=dir,
#        STEPS=regex (run only the steps whose names match), PERF_CHECK=0|1 (default 1),
#        DEVROOT=dir (a carried runtime: DEVROOT/lib on LD_LIBRARY_PATH, Open MPI under
#        DEVROOT/usr via OPAL_PREFIX; tools/gpu-pack.sh makes it), HOST_NPS="4 8 16",
#        CUDA_NPS="2 4 8", STAGED_MAX=256M
set -u -o pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$SRC/build-gpu-check}" 2>/dev/null && pwd || echo "${1:-$SRC/build-gpu-check}")"
if [ -n "${OUT:-}" ]; then RES="${RES:-$OUT/gpu-check}"; else RES="${RES:-$SRC/gpu-check-results}"; fi
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
  [[ "$name" =~ ${STEPS:-.} ]] || return 0
  local t=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >"$RES/$name.log" 2>&1
  local rc=$?
  say "$name: rc=$rc in $(( $(date +%s) - t ))s"
  [ $rc -eq 0 ] || { fails=$((fails + 1)); tail -n 15 "$RES/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"; }
  return $rc
}
pack() {
  [ -n "${OUT:-}" ] && tar czf "$OUT/gpu-check.tgz" -C "$(dirname "$RES")" "$(basename "$RES")"
  return 0
}
trap pack EXIT

if [ -n "${DEVROOT:-}" ]; then
  DEVROOT="$(cd "$DEVROOT" && pwd)"
  export LD_LIBRARY_PATH="$DEVROOT/lib:$BUILD/src/api${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OPAL_PREFIX="$DEVROOT/usr" PATH="$DEVROOT/usr/bin:$PATH"
  export OMPI_MCA_mca_base_component_show_load_errors=0 PMIX_MCA_mca_base_component_show_load_errors=0
  export PMIX_INSTALL_PREFIX="$DEVROOT/usr/lib/x86_64-linux-gnu/pmix2"
fi
say "source $SRC, build $BUILD, results $RES, $(nproc) cores"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader 2>&1 | tee -a "$SUMMARY"

# ---- 1. build ----
TARGETS="tutti tuttirun all_reduce_perf cuda_reduce_test cuda_collectives_test cuda_ipc_fifo_test"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  step configure 300 cmake -S "$SRC" -B "$BUILD" "${GEN[@]}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release}" \
    -DTUTTI_WITH_CUDA=ON "-DTUTTI_CUDA_ARCHS=$ARCHS" -DTUTTI_WITH_TORCH=OFF \
    || { say "configure failed"; exit 1; }
  step build 600 cmake --build "$BUILD" -j "$JOBS" --target $TARGETS gloo_allreduce_perf mpi_allreduce_perf \
    || step build 600 cmake --build "$BUILD" -j "$JOBS" --target $TARGETS || { say "build failed"; exit 1; }
fi
step cuda_ipc_unit 60 "$BUILD/tests/gpu/cuda_ipc_fifo_test"

GPU=1
if ! nvidia-smi -L >/dev/null 2>&1; then
  say "no GPU visible (nvidia-smi -L failed): GPU steps skipped"
  GPU=0
fi
RUN="$BUILD/tools/tuttirun/tuttirun"
PERF="$BUILD/perf_tests/all_reduce_perf"
COLL="$BUILD/tests/gpu/cuda_collectives_test"
if [ $GPU = 1 ]; then
  # ---- 2. GPU tests ----
  step cuda_reduce 120 "$BUILD/tests/gpu/cuda_reduce_test"
  grep -h "\[bandwidth\]" "$RES/cuda_reduce.log" 2>/dev/null | tee -a "$SUMMARY"
  for np in 1 2 4 8; do
    idx=$(( np == 1 ? 0 : np == 2 ? 1 : np == 4 ? 2 : 3 ))
    step "cuda_collectives_np$np" "${COLL_LIMIT:-120}" "$COLL" --gtest_filter="Ranks/DeviceCollectives.*/$idx"
  done
  step cuda_collectives_misc 90 "$COLL" --gtest_filter='DeviceBuffers.*'
  step cuda_direct "${COLL_LIMIT:-120}" env TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=INIT "$COLL" \
    --gtest_filter='Ranks/DeviceAllReduceDirect.*:DeviceAllReduceDirectFailure.*:Path/DeviceBuffersKilled.*'
  grep -ho "direct device all-reduce .*" "$RES/cuda_direct.log" 2>/dev/null | sort | uniq -c | tee -a "$SUMMARY"
  # ---- 3. all_reduce_perf --memory cuda, 2/4/8 ranks on one GPU: direct, then staged ----
  for np in ${CUDA_NPS:-2 4 8}; do
    lim=${PERF_LIMIT:-$(( 30 + 10 * np ))}
    step "all_reduce_perf_cuda_np$np" "$lim" env TUTTI_CUDA_DIRECT=1 "$RUN" -np $np --timeout "$lim" \
      "$PERF" --memory cuda -b 8 -e 1G -f 4 -n 5 -w 2 -c "${PERF_CHECK:-1}" -J "$RES/all_reduce_perf_cuda_np$np.json"
    [ -f "$RES/all_reduce_perf_cuda_np$np.log" ] &&
      grep -E "^ +(8|32768|1048576|33554432|268435456|1073741824) |Avg bus" "$RES/all_reduce_perf_cuda_np$np.log" 2>/dev/null | tee -a "$SUMMARY"
    step "all_reduce_perf_cuda_staged_np$np" "$lim" env TUTTI_CUDA_DIRECT=0 "$RUN" -np $np --timeout "$lim" \
      "$PERF" --memory cuda -b 8 -e "${STAGED_MAX:-256M}" -f 4 -n 5 -w 2 -c 0 -J "$RES/all_reduce_perf_cuda_staged_np$np.json"
    [ -f "$RES/all_reduce_perf_cuda_staged_np$np.log" ] &&
      grep -E "^ +(8|32768|1048576|33554432|268435456) |Avg bus" "$RES/all_reduce_perf_cuda_staged_np$np.log" 2>/dev/null | tee -a "$SUMMARY"
  done
  # The direct path's variants at one size range: two-shot from 256 KiB (automatic on one shared
  # GPU: never), and the streams ordered by kernels instead of the driver's memory operations.
  step all_reduce_perf_cuda_twoshot_np4 60 env TUTTI_CUDA_DIRECT=1 TUTTI_CUDA_TWO_SHOT_BYTES=262144 "$RUN" -np 4 \
    --timeout 55 "$PERF" --memory cuda -b 8 -e 256M -f 4 -n 5 -w 2 -c 0
  grep -E "^ +(8|32768|1048576|33554432|268435456) " "$RES/all_reduce_perf_cuda_twoshot_np4.log" 2>/dev/null | tee -a "$SUMMARY"
  step all_reduce_perf_cuda_kernels_np2 60 env TUTTI_CUDA_DIRECT=1 TUTTI_CUDA_STREAM_MEMOPS=0 "$RUN" -np 2 \
    --timeout 55 "$PERF" --memory cuda -b 8 -e 256M -f 4 -n 5 -w 2 -c 0
  grep -E "^ +(8|32768|1048576|33554432|268435456) " "$RES/all_reduce_perf_cuda_kernels_np2.log" 2>/dev/null | tee -a "$SUMMARY"
  # ---- 4. cuda_ipc: device FIFO, then the host-staging fallback ----
  # Forced (TUTTI_TRANSPORT) and without the shared window, which would carry every
  # collective that fits it between ranks of one host and leave the transport unused.
  IPC=(env TUTTI_TRANSPORT=cuda_ipc TUTTI_SHM_WINDOW_BYTES=0)
  step cuda_ipc_device 90 "${IPC[@]}" TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=TRANSPORT \
    "$COLL" --gtest_filter='Ranks/DeviceCollectives.*/1:Ranks/DeviceCollectives.*/2:DeviceBuffers.*'
  grep -ho "cuda_ipc: rank [0-9]* <-> .*" "$RES/cuda_ipc_device.log" 2>/dev/null | cut -c1-160 | sort | uniq -c | sort -rn | head -5 | tee -a "$SUMMARY"
  step cuda_ipc_hoststaging 60 "${IPC[@]}" TUTTI_CUDA_IPC_P2P=0 \
    "$COLL" --gtest_filter='Ranks/DeviceCollectives.*/1'
  step all_reduce_perf_cuda_np2_cuda_ipc 60 "${IPC[@]}" TUTTI_CUDA_DIRECT=0 "$RUN" -np 2 --timeout 55 \
    "$PERF" --memory cuda -b 8 -e 256M -f 4 -n 5 -w 2 -c 1 -J "$RES/all_reduce_perf_cuda_np2_cuda_ipc.json"
  grep -E "^ +(1048576|268435456) |Avg bus" "$RES/all_reduce_perf_cuda_np2_cuda_ipc.log" 2>/dev/null | tee -a "$SUMMARY"
fi

# ---- 5. host all-reduce on this machine's cores: tutti vs Open MPI vs Gloo ----
for np in ${HOST_NPS-4 8 16}; do
  step "host_compare_np$np" "${HOST_LIMIT:-100}" python3 "$SRC/tools/compare/compare.py" --build "$BUILD" \
    -np $np -b 8 -e 128M -f 8 -n 10 -w 2 --small-max 64K --small-n 200 --small-w 20 \
    --gloo-small-n 20 --gloo-small-w 2 --reps 1 --gloo-algo ring --timeout "${HOST_LIMIT:-100}"
  grep -E "^ *(8|32768|1048576|67108864) " "$RES/host_compare_np$np.log" 2>/dev/null | tee -a "$SUMMARY"
done

say "done: $fails failed step(s)"
exit $(( fails > 0 ))
