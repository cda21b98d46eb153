#!/usr/bin/env bash
# A real one-node Slurm on this machine (Debian's slurmctld + slurmd + munge), for the tests
# and for trying srun / sbatch by hand. Needs root.
#
#   tools/slurm-local.sh start     configure, start munged (unless one answers), slurmctld and
#                                  slurmd; wait until the node is idle; print the SLURM_CONF line
#   tools/slurm-local.sh stop      stop what start started (pid files in the state directory)
#   tools/slurm-local.sh status    sinfo of the running cluster
#   tools/slurm-local.sh run CMD   start, run CMD with SLURM_CONF set, stop (also when CMD
#                                  fails or the script is interrupted); exit status of CMD
#   tools/slurm-local.sh check     exit 0 when this machine can run it, else print why and
#                                  exit 77 (the tests' skip code)
#
# The cluster: one node named after this host, NodeAddr 127.0.0.1, CPUs=$TUTTI_SLURM_CPUS
# (default 16: oversubscribed, so srun -n 4 fits on 2 cores), select/cons_tres, proctrack
# linuxproc, no cgroups, no accounting, MpiDefault=pmix when the pmix plugin is installed
# (srun --mpi=list). Everything lives in $TUTTI_SLURM_DIR (default /tmp/tutti-slurm) and
# SLURM_CONF points there: /etc/slurm is not touched. One cluster per machine at a time:
# run holds the lock /tmp/tutti-slurm.lock from start to stop, so two test runs (of different
# build trees) take turns; start waits for that lock too but does not keep it.
set -euo pipefail

DIR=${TUTTI_SLURM_DIR:-/tmp/tutti-slurm}
CPUS=${TUTTI_SLURM_CPUS:-16}
CTLD_PORT=${TUTTI_SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${TUTTI_SLURM_SLURMD_PORT:-6818}
LOCK=/tmp/tutti-slurm.lock
CONF=$DIR/slurm.conf
NODE=$(hostname -s)
PLUGINS=/usr/lib/x86_64-linux-gnu/slurm-wlm

log() { echo "slurm-local: $*" >&2; }

why_not() {
  if [ "$(id -u)" -ne 0 ]; then echo "not root (slurmd and munged need root)"; return; fi
  for b in slurmctld slurmd srun sbatch sinfo munged munge; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] ||
      { echo "$b is not installed (apt-get install slurmctld slurmd slurm-client munge)"; return; }
  done
  [ -f /etc/munge/munge.key ] || { echo "/etc/munge/munge.key is missing (reinstall munge)"; return; }
}

check() {
  local why
  why=$(why_not)
  if [ -n "$why" ]; then
    echo "SKIP: $why"
    exit 77
  fi
}

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
  if munge_ok; then return; fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged --pid-file /run/munge/tutti-munged.pid
  for _ in $(seq 50); do
    if munge_ok && [ -s /run/munge/tutti-munged.pid ]; then
      cp /run/munge/tutti-munged.pid "$DIR/munged.pid"
      touch "$DIR/munged.ours"
      return
    fi
    sleep 0.1
  done
  log "munged does not answer (munge -n | unmunge fails)"
  return 1
}

write_conf() {
  local mpi=none
  [ -f "$PLUGINS/mpi_pmix.so" ] && mpi=pmix
  mkdir -p "$DIR/state" "$DIR/spool"
  cat >"$CONF" <<EOF
# Written by tools/slurm-local.sh: one oversubscribed node for tests.
ClusterName=tutti
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=$mpi
ReturnToService=2
KillWait=2
MessageTimeout=10
InactiveLimit=0
MinJobAge=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
}

pid_of() { [ -f "$DIR/$1.pid" ] && cat "$DIR/$1.pid" 2>/dev/null || true; }

stop_daemon() {
  local name=$1 pid
  pid=$(pid_of "$name")
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/$name.pid"
}

stop() {
  stop_daemon slurmd
  stop_daemon slurmctld
  # Steps' processes left behind by a killed slurmd (proctrack/linuxproc tracks them there).
  pkill_steps
  if [ -f "$DIR/munged.ours" ]; then
    stop_daemon munged
    rm -f "$DIR/munged.ours"
  fi
  rm -rf "$DIR/state" "$DIR/spool"
}

pkill_steps() {
  local pid
  for pid in $(pgrep -x slurmstepd 2>/dev/null || true); do
    # Only the stepds of this cluster: their spool directory is ours.
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$DIR" ||
       grep -qs "SLURM_CONF=$CONF" "/proc/$pid/environ"; then
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
}

wait_idle() {
  local state
  for _ in $(seq 150); do
    state=$(SLURM_CONF=$CONF sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
    case "$state" in
      idle | mixed) return 0 ;;
    esac
    sleep 0.2
  done
  log "node $NODE is not idle after 30 s (state '$state'); logs:"
  tail -n 20 "$DIR/slurmctld.log" "$DIR/slurmd.log" >&2 || true
  return 1
}

start() {
  mkdir -p "$DIR"
  # Leftovers of an earlier run that was killed before its stop.
  stop
  write_conf
  start_munge
  /usr/sbin/slurmctld -f "$CONF" -i
  SLURM_CONF=$CONF /usr/sbin/slurmd -f "$CONF" -N "$NODE"
  wait_idle
  echo "export SLURM_CONF=$CONF"
}

take_lock() {
  exec 9>"$LOCK"
  if ! flock -w 600 9; then
    log "another cluster holds $LOCK for more than 600 s"
    exit 1
  fi
}

cmd=${1:-}
case "$cmd" in
  check) check ;;
  start)
    check
    take_lock
    start
    ;;
  stop) stop ;;
  status) SLURM_CONF=$CONF sinfo ;;
  run)
    shift
    [ $# -gt 0 ] || { log "usage: $0 run CMD..."; exit 2; }
    check
    take_lock
    child=
    trap 'stop' EXIT
    trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 130' INT TERM
    start >/dev/null
    export SLURM_CONF=$CONF
    set +e
    "$@" &
    child=$!
    wait "$child"
    rc=$?
    set -e
    exit $rc
    ;;
  *)
    echo "usage: $0 start|stop|status|run CMD...|check" >&2
    exit 2
    ;;
esac
