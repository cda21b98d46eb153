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

ProcessFailures::Registration ProcessFailures::add(RecordLookup lookup) {
  auto entry = std::make_shared<Entry>();
  entry->lookup = std::move(lookup);
  entry->pid = ::getpid();
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(entry);
  return Registration(this, std::move(entry));
}

void ProcessFailures::remove(const std::shared_ptr<Entry>& entry) {
  {
    std::lock_guard<std::mutex> retire(entry->mutex);  // after a lookup in progress
    entry->live = false;
    entry->lookup = nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase(entries_, entry);
}

std::optional<ProcessFailures::Finding> ProcessFailures::recordBy(
    const Process& peer, const Registration& asking) const {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entries = entries_;
  }
  for (const auto& entry : entries) {
    // A forked child's copy of its parent's communicators must not touch their stores.
    if (entry == asking.entry_ || entry->pid != ::getpid()) continue;
    std::lock_guard<std::mutex> hold(entry->mutex);
    if (!entry->live) continue;
    if (auto found = entry->lookup(peer)) return found;
  }
  return std::nullopt;
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

ProcessFailures::Registration& ProcessFailures::Registration::operator=(
    Registration&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

ProcessFailures::Registration::~Registration() { release(); }

void ProcessFailures::Registration::release() {
  if (owner_ != nullptr && entry_) owner_->remove(entry_);
  owner_ = nullptr;
  entry_.reset();
}

}  // namespace tutti
