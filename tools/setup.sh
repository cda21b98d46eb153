#!/usr/bin/env bash
# Installs tutti's dependencies on a fresh Debian 12 (bookworm) or 13 (trixie) machine, as
# root, and builds tutti into ./build.
#   - Debian packages: the build tools and libraries (names chosen by release where they
#     differ: clang's libFuzzer runtime is version 14 on Debian 12 and 19 on Debian 13);
#     packages only some releases carry (Gloo, for the comparison driver) are installed
#     when available and skipped with a note otherwise.
#   - Python: torch==2.13.0 (a CPU build), pytest, numpy and expecttest with pip, for the `python3` on PATH
#     (the PyTorch backend and its tests use that interpreter); never plain `torch`, which
#     would fetch a CUDA build of several GB.
# Usage: tools/setup.sh [extra cmake args...]     (env: TUTTI_SETUP_NO_PIP=1 skips pip)
set -euo pipefail
cd "$(dirname "$0")/.."

release=12
if [ -r /etc/os-release ]; then
  release=$(. /etc/os-release && echo "${VERSION_ID:-12}")
fi
case "$release" in
  12) llvm=14 ;;
  13) llvm=19 ;;
  *) llvm=""; echo "setup: Debian $release is untested; trying the Debian 13 package names" >&2; llvm=19 ;;
esac

required=(build-essential cmake ninja-build pkg-config git python3
          libgtest-dev libgmock-dev libbenchmark-dev
          libhwloc-dev hwloc libibverbs-dev ibverbs-utils rdma-core
          ibverbs-providers qemu-system-x86 busybox-static cpio kmod xz-utils
          libopenmpi-dev openmpi-bin libpmix-dev mpich
          slurmctld slurmd slurm-client munge
          iproute2 procps util-linux gnuplot-nox
          clang "libfuzzer-$llvm-dev" "libclang-rt-$llvm-dev")
optional=(libgloo-dev)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${required[@]}"; do installed "$p" || missing+=("$p"); done
opt_missing=()
for p in "${optional[@]}"; do installed "$p" || opt_missing+=("$p"); done
if [ $((${#missing[@]} + ${#opt_missing[@]})) -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages: ${missing[*]} ${opt_missing[*]} (run as root or install them)" >&2
    [ ${#missing[@]} -eq 0 ] || exit 1
  else
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    [ ${#missing[@]} -eq 0 ] ||
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    for p in "${opt_missing[@]}"; do
      apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
        echo "setup: optional package $p is not available on Debian $release; skipped" >&2
    done
  fi
fi

# Python packages for the python3 on PATH (pyenv's on the project's machines).
# torch==2.13.0 is pinned: the project's machines keep its CPU wheel for Python 3.11 on disk;
# for another Python pip would download a build of several GB, so it is skipped there (the
# torch tests then report as skipped, naming the reason). A pip that refuses (an externally
# managed system Python) does not stop the build either.
if [ "${TUTTI_SETUP_NO_PIP:-0}" != 1 ]; then
  if ! python3 -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null ||
     ! python3 -c 'import pytest, numpy, scikit_build_core, expecttest' 2>/dev/null; then
    # expecttest: torch's own test suite (tests/torch/suite) imports it.
    pkgs=(pytest numpy scikit-build-core expecttest)
    if python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      pkgs=(torch==2.13.0 "${pkgs[@]}")
    else
      echo "setup: $(python3 --version 2>&1) is not 3.11: torch==2.13.0 not installed" >&2
    fi
    python3 -m pip install -q --disable-pip-version-check "${pkgs[@]}" ||
      echo "setup: pip install ${pkgs[*]} failed; the torch backend and its tests are skipped" >&2
  fi
fi

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j "$jobs"
