#include "sync_use.h"

#include <time.h>

namespace tutti::torch_backend {

namespace {
std::chrono::nanoseconds threadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}
}  // namespace

bool SyncUse::submitted(const void* op, bool idle) {
  std::lock_guard lock(mu_);
  // The previous one never waited for, or this one behind another: asynchronous use.
  if (!lastWaited_ || !idle) streak_ = 0;
  last_ = op;
  lastWaited_ = false;
  return idle && streak_ >= kStreak;
}

void SyncUse::waited(const void* op, bool early) {
  std::lock_guard lock(mu_);
  if (op != last_ || lastWaited_) return;
  lastWaited_ = true;
  streak_ = early ? streak_ + 1 : 0;
}

void SyncUse::async() {
  std::lock_guard lock(mu_);
  streak_ = 0;
}

void SyncUse::Submit::mark() {
  at_ = std::chrono::steady_clock::now();
  cpu_ = threadCpuTime();
  thread_ = std::this_thread::get_id();
}

bool SyncUse::Submit::waitedRightAway() const {
  return std::this_thread::get_id() == thread_ && threadCpuTime() - cpu_ < kCpuGap &&
         std::chrono::steady_clock::now() - at_ < kWallGap;
}

}  // namespace tutti::torch_backend
