#!/usr/bin/env bash
# Dense ring all-reduce vs compressed all-reduce across 4 "hosts" (network namespaces joined by
# a bridge, each host's egress shaped to 1 Gbit/s with tbf), one rank per host, in one job.
#
#   tools/compressed-netns-bench.sh [BUILD_DIR (build)] [-- compressed_allreduce_perf args]
#
# Defaults: 64 MiB float32, 7 timed iterations after 1 warm-up (as the runs in
# docs/compressed_allreduce.md), variants dense ring,
# top-k 1% + EF (exact and approximate selection) and QSGD s=4, B=512 without EF. Env: HOSTS (4),
# RATE (1gbit), ALGO (TUTTI_ALGO, default allreduce:ring;allgather:ring: dense ring all-reduce
# vs compressed payloads by ring all-gather).
# Needs root (network namespaces) and iproute2 + tc; uses tools/netns-cluster.sh (namespaces
# tutti-h0..): it waits while a netns test holds them, and removes them on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
if [[ $# -gt 0 && $1 != -- ]]; then build=$1; shift; fi
[[ ${1:-} == -- ]] && shift
hosts=${HOSTS:-4}
rate=${RATE:-1gbit}
run=$build/tools/tuttirun/tuttirun
perf=$build/perf_tests/compressed_allreduce_perf
[[ -x $run ]] || { echo "no $run (build the tuttirun target)" >&2; exit 1; }
[[ -x $perf ]] || { echo "no $perf (build with -DTUTTI_BUILD_PERF=ON, target compressed_allreduce_perf)" >&2; exit 1; }
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(-b 64M -n 7 -w 1)

# tools/netns-cluster.sh `up` removes any cluster first: wait (up to 10 min) until no netns
# test holds tutti-h* namespaces rather than break it (and be disturbed by it).
for ((t = 0; t < 600; t += 5)); do
  ip netns list 2>/dev/null | grep -q '^tutti-h[0-9]' || break
  ((t == 0)) && echo "# tutti-h* namespaces in use (a netns test?); waiting" >&2
  sleep 5
done
ip netns list 2>/dev/null | grep -q '^tutti-h[0-9]' && { echo "tutti-h* namespaces still in use" >&2; exit 1; }
trap '"$here/netns-cluster.sh" down >/dev/null 2>&1 || true' EXIT
"$here/netns-cluster.sh" up "$hosts" --rate "$rate"
list=""
for ((i = 0; i < hosts; i++)); do list+="${list:+,}tutti-h$i"; done
echo "# $hosts hosts at $rate (tbf), 1 rank per host: $(uname -r), $(nproc) cores"
"$run" -np "$hosts" --hosts "$list" --timeout 900 -x "TUTTI_ALGO=${ALGO:-allreduce:ring;allgather:ring}" "$perf" "${args[@]}"
