// What the stream benchmarks share: the clock, medians, the slowest rank's value and byte
// sizes as "16M".
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "tutti/tutti.hpp"

namespace tutti::bench {

// Seconds on the steady clock.
inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The largest of every rank's `mine` (a blocking all-reduce).
inline double slowest(const tutti::Comm& comm, double mine) {
  double out = 0;
  comm.allReduce(&mine, &out, 1, tuttiFloat64, tuttiMax);
  return out;
}

// "16M", "4K", "1G" or a plain number of bytes.
inline size_t parseBytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  const char unit = end && *end ? *end : ' ';
  const double mult = unit == 'K' ? 1 << 10 : unit == 'M' ? 1 << 20 : unit == 'G' ? 1 << 30 : 1;
  return static_cast<size_t>(v * mult);
}

}  // namespace tutti::bench
