// What the communicators of this process know about failures (process_failures.h).
#include "comm/process_failures.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace tutti {

ProcessFailures& ProcessFailures::instance() {
  // Never destroyed: communicators may outlive static destruction (a process exiting with
  // communicators still open).
  static ProcessFailures* const failures = new ProcessFailures();
  return *failures;
}

std::optional<ProcessFailures::Finding> ProcessFailures::recordBy(
    const Process& peer, const Registration& asking) const {
  std::optional<Finding> found;
  lookups_.visit(
      [&](const RecordLookup& lookup) {
        found = lookup(peer);
        return found.has_value();
      },
      &asking);
  return found;
}

void ProcessFailures::noteVerdict(const Process& first, const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (verdictsPid_ != ::getpid()) verdicts_.clear(), verdictsPid_ = ::getpid();
  if (verdicts_.size() < kMaxVerdicts) verdicts_.push_back({first, text});
}

std::vector<ProcessFailures::Finding> ProcessFailures::verdicts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (verdictsPid_ != ::getpid()) return {};
  return verdicts_;
}

}  // namespace tutti
