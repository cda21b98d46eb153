#!/usr/bin/env bash
# Installs tutti's dependencies (Debian bookworm, as root) and builds it into ./build.
# Usage: tools/setup.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config git python3
          libgtest-dev libgmock-dev libbenchmark-dev
          libhwloc-dev hwloc libibverbs-dev ibverbs-utils rdma-core
          ibverbs-providers qemu-system-x86 busybox-static cpio kmod xz-utils
          libopenmpi-dev openmpi-bin libpmix-dev libgloo-dev
          slurmctld slurmd slurm-client munge
          iproute2 procps util-linux gnuplot-nox
          python3-torch libtorch-dev pybind11-dev python3-dev python3-pytest
          clang libfuzzer-14-dev libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages: ${missing[*]} (run as root or install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j "$jobs"
