#!/usr/bin/env bash
# Prepares a prebuilt tree for tools/gpu-check.sh on a lent GPU machine that has CUDA and
# nothing else (no hwloc, Open MPI, PMIx or Gloo): builds the GPU targets here, then copies
# the binaries (stripped) into $DEST/build and the shared libraries they need that such an
# image lacks, with Open MPI's tree (mpirun, plugins, help files), into $DEST/lib and
# $DEST/usr. Run there: DEVROOT=$DEST SKIP_BUILD=1 tools/gpu-check.sh $DEST/build
# Usage: tools/gpu-pack.sh [build-dir] [dest]   (default build-gpu, .devroot)
set -euo pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$SRC/build-gpu}"
DEST="${2:-$SRC/.devroot}"
cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUTTI_WITH_CUDA=ON \
  "-DTUTTI_CUDA_ARCHS=${TUTTI_CUDA_ARCHS:-90}" -DTUTTI_WITH_TORCH=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target tutti tuttirun all_reduce_perf cuda_reduce_test \
  cuda_collectives_test cuda_ipc_fifo_test gloo_allreduce_perf mpi_allreduce_perf
rm -rf "$DEST"
mkdir -p "$DEST/lib" "$DEST/usr/bin" "$DEST/usr/lib/x86_64-linux-gnu" "$DEST/usr/share"
bins=(src/api/libtutti.so.0 tools/tuttirun/tuttirun perf_tests/all_reduce_perf
      perf_tests/gloo_allreduce_perf perf_tests/mpi_allreduce_perf tests/gpu/cuda_reduce_test
      tests/gpu/cuda_collectives_test tests/gpu/cuda_ipc_fifo_test)
for b in "${bins[@]}"; do
  mkdir -p "$DEST/build/$(dirname "$b")"
  cp -L "$BUILD/$b" "$DEST/build/$b"
  strip --strip-debug "$DEST/build/$b"
done
ompi=/usr/lib/x86_64-linux-gnu/openmpi
# Libraries the binaries and Open MPI's plugins load, less those every glibc image has.
for f in "${bins[@]/#/$BUILD/}" /usr/bin/orterun "$ompi"/lib/openmpi3/*.so; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -Ev '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|libz|libudev|libuuid|libatomic)\.so|ld-linux|libtutti' |
  while read -r l; do cp -L "$l" "$DEST/lib/"; done
cp -a "$ompi" /usr/lib/x86_64-linux-gnu/pmix2 "$DEST/usr/lib/x86_64-linux-gnu/"
[ -d /usr/lib/x86_64-linux-gnu/ucx ] && cp -a /usr/lib/x86_64-linux-gnu/ucx "$DEST/usr/lib/x86_64-linux-gnu/"
cp -a /usr/share/openmpi "$DEST/usr/share/"
[ -d /usr/share/pmix ] && cp -a /usr/share/pmix "$DEST/usr/share/"
cp -L /usr/bin/orterun /usr/bin/orted "$DEST/usr/bin/"
ln -sf orterun "$DEST/usr/bin/mpirun"
find "$DEST" -name '*.a' -delete
du -sh "$DEST"
