#!/usr/bin/env bash
# check-layering.sh [repo root]: the layers of docs/architecture.md, checked on the sources.
# 1. Each module includes only its own headers and those of the modules below it (the table
#    below, from the CMake targets' links; the include roots of cmake/TuttiModules.cmake make
#    an upward include fail to compile for what is compiled, this also covers headers no
#    target compiles).
# 2. The interface headers (transport.h, window.h, algorithm.h) live in src/interfaces only,
#    and src/interfaces includes nothing of exec but the schedule IR.
# 3. Inside src/comm, the pieces the Communicator wires (CommOptions, Membership,
#    FailureMonitor, PeerProbe, SharedWindow, Planner, FusedPlans, ConnectionSet, the call trace, tags and
#    watch, liveness, places, ring order) know nothing of their owner: none includes
#    communicator.h.
# 4. The torch backend (python/csrc) is a client of the C API: it includes tutti/ headers and
#    its own, nothing of src/.
# Exit 0 when clean, 1 listing every offending include.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
declare -A allowed=(
  [src/common]="common tutti"
  [src/bootstrap]="bootstrap common tutti"
  [src/inspect]="inspect bootstrap common tutti"
  [src/reduce]="reduce common tutti"
  [src/topology]="topology common tutti"
  [src/interfaces]="interfaces bootstrap exec common tutti"
  [src/exec]="exec interfaces reduce common tutti"
  [algorithms]="algorithms interfaces exec common tutti"
  [transports]="transports interfaces bootstrap reduce common tutti"
  [src/compress]="compress reduce common tutti"
  [src/tuning]="tuning interfaces algorithms exec topology reduce common tutti"
  [src/comm]="comm inspect tuning algorithms exec interfaces transports bootstrap reduce compress topology common tutti"
  [src/api]="api comm inspect tuning algorithms exec interfaces transports bootstrap reduce compress topology common tutti"
)
bad=0
for dir in "${!allowed[@]}"; do
  while IFS= read -r line; do
    file=${line%%:*}
    mod=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$line")
    if [[ " ${allowed[$dir]} " != *" $mod "* ]]; then
      echo "layering: $file includes a header of '$mod', above $dir: ${line#*:}"
      bad=1
    fi
  done < <(grep -rnE '#include "[a-z_]+/' "$dir" --include=*.cc --include=*.h --include=*.cu \
             --include=*.cuh | sed -E 's/^([^:]+):[0-9]+:/\1:/' || true)
done
while IFS= read -r line; do
  echo "layering: src/interfaces may include only exec/schedule.h of exec: $line"
  bad=1
done < <(grep -rn '#include "exec/' src/interfaces | grep -v '"exec/schedule.h"' || true)
for name in transport.h window.h algorithm.h; do
  while IFS= read -r f; do
    echo "layering: interface header $f outside src/interfaces"
    bad=1
  done < <(find src algorithms transports include -name "$name" -not -path "src/interfaces/*")
done
while IFS= read -r line; do
  echo "layering: a piece of src/comm includes its owner (communicator.h): $line"
  bad=1
done < <(grep -rn '#include "comm/communicator.h"' src/comm --include=*.h --include=*.cc |
           grep -vE '^src/comm/(communicator|collective_calls|estimate_calls|fused_calls|neighbor_allreduce|self_tuning_calls|any_source)\.(h|cc):' || true)
while IFS= read -r line; do
  echo "layering: python/csrc includes a library header (only tutti/ and its own): $line"
  bad=1
done < <(grep -rnE '#include "[a-z_]+/' python/csrc --include=*.cc --include=*.h |
           grep -v '#include "tutti/' || true)
[ "$bad" = 0 ] && echo "layering: clean (${#allowed[@]} modules)"
exit "$bad"
