#!/usr/bin/env bash
# A small "cluster" of network namespaces on one machine, for multi-host tcp tests.
#
#   netns-cluster.sh up N [--rate 1gbit] [--burst 256kb] [--delay 1ms]   create tutti-h0..h{N-1}
#   netns-cluster.sh down                                remove everything this script made
#   netns-cluster.sh exec I cmd...                       run cmd inside tutti-hI
#   netns-cluster.sh status                              list namespaces and addresses
#
# Host i is namespace tutti-h<i> with interface eth0 = 10.77.0.(i+1)/24 (a veth pair whose
# other end, tutti-v<i>, is enslaved to the bridge tutti-br0 in the root namespace) and
# loopback up. --rate shapes each namespace's eth0 egress with tbf; --delay adds netem delay
# (netem needs the sch_netem kernel module). `up` first tears down any previous cluster, so
# it is idempotent. Needs root (CAP_NET_ADMIN) and iproute2.
set -euo pipefail

PREFIX=tutti-h
BRIDGE=tutti-br0
SUBNET=10.77.0
STATE_DIR=/run/tutti-netns

die() { echo "netns-cluster: error: $*" >&2; exit 1; }

need_root() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces need CAP_NET_ADMIN); try: sudo $0 $*"
  command -v ip >/dev/null || die "'ip' (iproute2) not found"
}

down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${PREFIX}[0-9]*$" || true); do
    ip netns del "$ns" 2>/dev/null || true  # deleting the namespace removes its veth pair
  done
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
                grep '^tutti-v[0-9]*$' || true); do
    ip link del "$link" 2>/dev/null || true
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
  rm -rf "$STATE_DIR"
}

shape() {  # shape NS RATE DELAY [BURST]
  local ns=$1 rate=$2 delay=$3 burst=${4:-256kb}
  [[ -z $rate && -z $delay ]] && return 0
  local parent="root"
  if [[ -n $delay ]]; then
    ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: netem delay "$delay" ||
      die "cannot add netem delay on $ns (is the sch_netem kernel module available?)"
    parent="parent 1:1"
  fi
  if [[ -n $rate ]]; then
    # burst (default 256kb): at least 1 ms worth of bytes at the rate, so the token bucket does
    # not starve the line rate; a call of up to about that much per host runs faster than the
    # rate. latency bounds the queue.
    ip netns exec "$ns" tc qdisc add dev eth0 $parent handle 10: tbf rate "$rate" \
      burst "$burst" latency 50ms ||
      die "cannot add tbf rate $rate on $ns (is the sch_tbf kernel module available?)"
  fi
}

up() {
  local n=${1:-}; shift || true
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 250)) || die "up: N must be 1..250 (got '${n}')"
  local rate="" delay="" burst=256kb
  while (($#)); do
    case $1 in
      --rate) rate=${2:?--rate needs a value}; shift 2 ;;
      --burst) burst=${2:?--burst needs a value}; shift 2 ;;
      --delay) delay=${2:?--delay needs a value}; shift 2 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  down
  # On failure part-way (a failed command or die), leave nothing behind.
  UP_IN_PROGRESS=1
  trap 'if [[ ${UP_IN_PROGRESS:-0} == 1 ]]; then echo "netns-cluster: up failed; cleaning up" >&2; down; fi' EXIT
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  local i ns
  for ((i = 0; i < n; i++)); do
    ns=${PREFIX}${i}
    ip netns add "$ns"
    ip link add "tutti-v${i}" type veth peer name "tutti-p${i}"
    ip link set "tutti-v${i}" master "$BRIDGE"
    ip link set "tutti-v${i}" up
    ip link set "tutti-p${i}" netns "$ns"
    ip -n "$ns" link set "tutti-p${i}" name eth0
    ip -n "$ns" addr add "${SUBNET}.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    shape "$ns" "$rate" "$delay" "$burst"
  done
  UP_IN_PROGRESS=0
  mkdir -p "$STATE_DIR"
  echo "$n ${rate:-unshaped} ${delay:-0}" >"$STATE_DIR/cluster"
  echo "netns-cluster: up: $n namespace(s) ${PREFIX}0..${PREFIX}$((n - 1)) on ${SUBNET}.0/24" \
       "(rate ${rate:-unshaped}, delay ${delay:-none})"
}

status() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${PREFIX}[0-9]*$" | sort -V); do
    echo "$ns: $(ip -n "$ns" -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}')" \
         "$(ip netns exec "$ns" tc qdisc show dev eth0 2>/dev/null | tr '\n' ' ')"
  done
}

cmd=${1:-}
shift || true
case $cmd in
  up) need_root up; up "$@" ;;
  down) need_root down; down; echo "netns-cluster: down" ;;
  exec)
    need_root exec
    i=${1:?exec needs a host index}; shift
    [[ $i =~ ^[0-9]+$ ]] || die "exec: host index must be a number (got '$i')"
    ip netns list | awk '{print $1}' | grep -qx "${PREFIX}${i}" || die "exec: ${PREFIX}${i} does not exist (run: $0 up N)"
    (($#)) || die "exec: no command given"
    exec ip netns exec "${PREFIX}${i}" "$@" ;;
  status) need_root status; status ;;
  *) echo "usage: $0 up N [--rate 1gbit] [--burst 256kb] [--delay 1ms] | down | exec I cmd... | status" >&2; exit 2 ;;
esac
