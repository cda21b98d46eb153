#!/usr/bin/env bash
# run-verbs-vm.sh TRANSPORT_TEST COLLECTIVES_TEST
# The `verbs` ctest: boots one Soft-RoCE VM (rxe-vm.sh next to this file) and runs the
# ibverbs gtest binaries inside it, on rxe0. Exit 0: all passed; 77: the VM cannot run here
# (no qemu / not root to install it / no kernel package): ctest reports the test skipped.
# A test that skips inside the VM (no device after all) counts as a failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
T=$(readlink -f "$1")
C=$(readlink -f "$2")
export RXE_WORK=${RXE_WORK:-$(dirname "$(dirname "$(dirname "$T")")")}
export RXE_CACHE=${RXE_CACHE:-$RXE_WORK/rxe-vm-cache}
export RXE_TIMEOUT=${RXE_TIMEOUT:-900}
LOG=$RXE_WORK/verbs-vm-log
mkdir -p "$LOG"
rm -f "$LOG"/*.txt
start=$(date +%s)
set +e
bash "$here/rxe-vm.sh" -c "
export TUTTI_TIMEOUT=120
ls /sys/class/infiniband/ >'$LOG/devices.txt' 2>&1
[ -e /sys/class/infiniband/rxe0 ] || { echo 'RXE_VM: no rxe0 device'; exit 3; }
rc=0
'$T' --gtest_filter=-IbTransportHost.* >'$LOG/transport.txt' 2>&1 || rc=1
tail -n 30 '$LOG/transport.txt'
'$C' >'$LOG/collectives.txt' 2>&1 || rc=1
tail -n 12 '$LOG/collectives.txt'
exit \$rc
"
rc=$?
set -e
echo "verbs VM run: exit $rc after $(( $(date +%s) - start )) s (logs in $LOG)"
[ "$rc" = 77 ] && exit 77
for f in "$LOG/transport.txt" "$LOG/collectives.txt"; do
  if [ "$rc" = 0 ] && grep -q '^\[  SKIPPED \]' "$f" 2>/dev/null; then
    echo "FAIL: tests skipped inside the VM ($f):"; grep '^\[  SKIPPED \]' "$f"; rc=1
  fi
  [ -s "$f" ] && grep -E '^\[  (PASSED|FAILED) +\]|tests? ran' "$f" || true
done
exit "$rc"
