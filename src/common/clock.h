// Monotonic time and deadlines.
#pragma once

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/env.h"
#include "common/error.h"

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

// Longest wait a Deadline represents (about 31 years): longer ones (and inf) are this long,
// so time points and millisecond counts never overflow.
constexpr double kMaxWaitSeconds = 1e9;

// A timeout as given by the user: a positive number of seconds (inf: no limit in practice).
// 0, negative values and nan are refused (they would make every wait fail at once), naming
// `name` (the variable or config field).
inline double checkTimeout(const char* name, double seconds) {
  if (!(seconds > 0)) {  // also nan
    char text[32];
    std::snprintf(text, sizeof(text), "%g", seconds);
    fail(tuttiInvalidArgument, name, "=", text,
         " is not a valid timeout: use a positive number of seconds");
  }
  return seconds;
}

// TUTTI_TIMEOUT, checked.
inline double timeoutFromEnv() {
  return checkTimeout("TUTTI_TIMEOUT", env::getDouble("TUTTI_TIMEOUT"));
}

class Deadline {
 public:
  explicit Deadline(double seconds)
      : end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(clampSeconds(seconds)))),
        seconds_(seconds) {}
  // TUTTI_TIMEOUT from now.
  static Deadline fromEnv() { return Deadline(timeoutFromEnv()); }
  bool expired() const { return Clock::now() >= end_; }
  double secondsLeft() const { return std::chrono::duration<double>(end_ - Clock::now()).count(); }
  // Milliseconds left, rounded up, 0 once expired; saturates at INT_MAX (poll's timeouts are
  // ints: about 24.8 days).
  int msLeft() const {
    double s = secondsLeft();
    if (!(s > 0)) return 0;
    double ms = s * 1000.0 + 1.0;
    return ms >= static_cast<double>(INT_MAX) ? INT_MAX : static_cast<int>(ms);
  }
  double totalSeconds() const { return seconds_; }

 private:
  static double clampSeconds(double s) {
    if (std::isnan(s) || s < 0) return 0;
    return s > kMaxWaitSeconds ? kMaxWaitSeconds : s;
  }
  Clock::time_point end_;
  double seconds_;
};

}  // namespace tutti
