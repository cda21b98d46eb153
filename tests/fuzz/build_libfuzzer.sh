#!/bin/sh
# Builds the libFuzzer targets with clang in their own build directory (configured once, then
# brought up to date). Called by the build (target tutti_libfuzzer_build) and by the ctest
# fixture fuzz_libfuzzer_build.
# Usage: build_libfuzzer.sh CMAKE SOURCE_DIR BUILD_DIR CLANG CLANGXX FUZZ_SECONDS
set -e
cmake=$1 src=$2 dir=$3 cc=$4 cxx=$5 seconds=$6
if [ ! -f "$dir/CMakeCache.txt" ]; then
  "$cmake" -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DTUTTI_FUZZ=ON \
    -DTUTTI_FUZZ_SECONDS="$seconds" -DTUTTI_BUILD_TESTS=OFF -DTUTTI_BUILD_PERF=OFF \
    -DTUTTI_WITH_TORCH=OFF -DTUTTI_WITH_CUDA=OFF -DTUTTI_WITH_MPI=OFF -DTUTTI_WITH_GLOO=OFF \
    >/dev/null
fi
"$cmake" --build "$dir" --target tutti_fuzz_targets -j 2
