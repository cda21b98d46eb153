#include "bootstrap/memory_store.h"

#include <algorithm>

#include "bootstrap/store_util.h"

namespace tutti::bootstrap {

void MemoryStore::set(const std::string& key, std::span<const std::byte> value) {
  {
    std::lock_guard lock(mu_);
    data_[key] = std::vector<std::byte>(value.begin(), value.end());
  }
  cv_.notify_all();
}

std::vector<std::byte> MemoryStore::get(const std::string& key, const Deadline& deadline) {
  return getWith(key, deadline, nullptr);
}

std::vector<std::byte> MemoryStore::get(const std::string& key, const Deadline& deadline,
                                        const AbortSignal& also) {
  return getWith(key, deadline, &also);
}

std::vector<std::byte> MemoryStore::getWith(const std::string& key, const Deadline& deadline,
                                            const AbortSignal* also) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (aborted_ || (also != nullptr && also->raised())) throwAborted("MemoryStore", key);
    auto it = data_.find(key);
    if (it != data_.end()) return it->second;
    double left = deadline.secondsLeft();
    if (left <= 0) throwGetTimeout("MemoryStore", key, deadline.totalSeconds());
    if (also != nullptr) left = std::min(left, 0.01);
    cv_.wait_for(lock, std::chrono::duration<double>(left));
  }
}

bool MemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  for (const auto& k : keys)
    if (!data_.count(k)) return false;
  return true;
}

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  int64_t value;
  {
    std::lock_guard lock(mu_);
    auto& slot = data_[key];
    value = addToCounter(key, slot, delta);
    slot = formatCounter(value);
  }
  cv_.notify_all();
  return value;
}

void MemoryStore::abort() {
  {
    std::lock_guard lock(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

size_t MemoryStore::erasePrefix(const std::string& prefix) {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (auto it = data_.lower_bound(prefix);
       it != data_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    it = data_.erase(it);
    ++n;
  }
  return n;
}

}  // namespace tutti::bootstrap
