#!/usr/bin/env bash
# Compute/communication overlap through a host stream across network-namespace hosts
# (issue 32): one rank per host, each host's egress shaped with tbf, tutti-overlap-bench's
# four step times (comm alone, compute alone, blocking, overlapped) in one run per host count.
#
#   tools/overlap-netns-bench.sh [--build build] [--hosts 2,4] [--rate 1gbit] [--bench lanes]
#                                [bench args...]
#
# bench args go to tutti-overlap-bench (--bytes 16M --steps 8 --compute-ms MS), or with
# --bench lanes to tutti-lanes-bench (two streams on one communicator of one lane and of two:
# --bytes 16M --small 8 --reps 10). Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build hosts=2,4 rate=1gbit bench=overlap
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "overlap-netns-bench: needs root (network namespaces)" >&2; exit 2; }
trap '"$here/netns-cluster.sh" down >/dev/null 2>&1 || true' EXIT
echo "# commit $(git -C "$here" rev-parse --short HEAD), $(nproc) cores, rate $rate per host"
for h in ${hosts//,/ }; do
  "$here/netns-cluster.sh" up "$h" --rate "$rate" >/dev/null
  list=$(for ((i = 0; i < h; i++)); do printf 'tutti-h%d:1,' "$i"; done)
  echo "## $h hosts x 1 rank"
  "$build/tools/tuttirun/tuttirun" -np "$h" --hosts "${list%,}" --timeout 900 \
    "$build/tools/overlap-bench/tutti-$bench-bench" "$@"
done
