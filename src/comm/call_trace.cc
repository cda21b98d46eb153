#include "comm/call_trace.h"

#include <cstdio>

#include "common/clock.h"

namespace tutti {

void CallTrace::begin(const transport::Window::Tag& tag, const char* algorithm) {
  std::lock_guard lock(mu_);
  Record& r = ring_[calls_ % ring_.size()];
  r.number = ++calls_;
  r.tag = tag;
  r.algorithm = algorithm ? algorithm : "";
  r.state = State::kRunning;
  r.start = nowSeconds();
  r.end = 0;
}

void CallTrace::end(bool ok) {
  std::lock_guard lock(mu_);
  if (calls_ == 0) return;
  Record& r = ring_[(calls_ - 1) % ring_.size()];
  r.state = ok ? State::kDone : State::kFailed;
  r.end = nowSeconds();
}

std::string CallTrace::line(
    const Record& r, double now,
    const std::function<std::string(const transport::Window::Tag&)>& describe) const {
  char times[96];
  if (r.state == State::kRunning) {
    std::snprintf(times, sizeof times, "running for %.3f s", now - r.start);
  } else {
    std::snprintf(times, sizeof times, "%s after %.1f us, %.3f s ago",
                  r.state == State::kDone ? "done" : "FAILED", (r.end - r.start) * 1e6,
                  now - r.end);
  }
  std::string algo = *r.algorithm ? std::string(" [") + r.algorithm + "]" : "";
  return "#" + std::to_string(r.number) + " " + describe(r.tag) + algo + " " + times;
}

std::string CallTrace::text(
    const std::function<std::string(const transport::Window::Tag&)>& describe) const {
  std::lock_guard lock(mu_);
  double now = nowSeconds();
  std::string out;
  uint64_t first = calls_ > ring_.size() ? calls_ - ring_.size() : 0;
  for (uint64_t i = first; i < calls_; ++i)
    out += line(ring_[i % ring_.size()], now, describe) + "\n";
  return out;
}

std::string CallTrace::current(
    const std::function<std::string(const transport::Window::Tag&)>& describe) const {
  std::lock_guard lock(mu_);
  if (calls_ == 0) return "no call made yet";
  const Record& r = ring_[(calls_ - 1) % ring_.size()];
  double now = nowSeconds();
  char secs[32];
  if (r.state == State::kRunning) {
    std::snprintf(secs, sizeof secs, "%.1f s", now - r.start);
    return "in call #" + std::to_string(r.number) + " " + describe(r.tag) + " for " + secs;
  }
  std::snprintf(secs, sizeof secs, "%.1f s", now - r.end);
  return std::string("between calls, ") + secs + " after call #" + std::to_string(r.number) + " " +
         describe(r.tag) + (r.state == State::kDone ? " (done)" : " (failed)");
}

}  // namespace tutti
