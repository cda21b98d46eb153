// A cheap timestamp for hot paths (the flight recorder stamps every call twice): the CPU's
// time-stamp counter where it is invariant (x86-64), else the steady clock in nanoseconds.
// Ticks become seconds only when printed, through CycleClock::secondsPerTick().
#pragma once

#include <cstdint>

namespace tutti {

class CycleClock {
 public:
  static uint64_t now();
  // Seconds per tick, measured against the steady clock over the process's lifetime so far
  // (at least 10 ms: the first call may wait that long). For printing, not for hot paths.
  static double secondsPerTick();
  // The steady clock at its coarse resolution (CLOCK_MONOTONIC_COARSE: a few milliseconds),
  // in nanoseconds: about half a tick read's cost, for "how long ago" rather than "how long".
  static uint64_t coarseNanos();
};

}  // namespace tutti
