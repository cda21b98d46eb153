#include "common/cycle_clock.h"

#include <time.h>

#include <chrono>
#include <mutex>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace tutti {
namespace {

using Steady = std::chrono::steady_clock;

uint64_t steadyNanos() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now().time_since_epoch())
          .count());
}

bool haveInvariantTsc() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000000u));
  if (eax < 0x80000007u) return false;
  __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000007u));
  return (edx >> 8) & 1u;  // CPUID.80000007H:EDX[8]: invariant TSC
#else
  return false;
#endif
}

const bool kUseTsc = haveInvariantTsc();

struct Origin {
  Steady::time_point steady = Steady::now();
  uint64_t ticks = CycleClock::now();
};
// Taken at load time, so secondsPerTick measures over the process's lifetime.
const Origin kOrigin;

}  // namespace

uint64_t CycleClock::now() {
#if defined(__x86_64__)
  if (kUseTsc) return __rdtsc();
#endif
  return steadyNanos();
}

uint64_t CycleClock::coarseNanos() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double CycleClock::secondsPerTick() {
  if (!kUseTsc) return 1e-9;
  static std::mutex mu;
  std::lock_guard lock(mu);
  Steady::time_point t = Steady::now();
  while (t - kOrigin.steady < std::chrono::milliseconds(10)) t = Steady::now();
  uint64_t ticks = now();
  double seconds = std::chrono::duration<double>(t - kOrigin.steady).count();
  return ticks > kOrigin.ticks ? seconds / static_cast<double>(ticks - kOrigin.ticks) : 1e-9;
}

}  // namespace tutti
