// Monotonic time and deadlines.
#pragma once

#include <chrono>

#include "common/env.h"

namespace tutti {

using Clock = std::chrono::steady_clock;

inline double nowSeconds() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// A spin-loop hint (x86 pause): lets a sibling hyperthread run and saves power.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class Deadline {
 public:
  explicit Deadline(double seconds)
      : end_(Clock::now() +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))),
        seconds_(seconds) {}
  // TUTTI_TIMEOUT from now.
  static Deadline fromEnv() { return Deadline(env::getDouble("TUTTI_TIMEOUT")); }
  bool expired() const { return Clock::now() >= end_; }
  double secondsLeft() const { return std::chrono::duration<double>(end_ - Clock::now()).count(); }
  int msLeft() const {
    double s = secondsLeft();
    return s <= 0 ? 0 : static_cast<int>(s * 1000.0) + 1;
  }
  double totalSeconds() const { return seconds_; }

 private:
  Clock::time_point end_;
  double seconds_;
};

}  // namespace tutti
