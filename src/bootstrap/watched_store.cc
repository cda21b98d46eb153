#include "bootstrap/watched_store.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace tutti::bootstrap {

WatchedStore::WatchedStore(std::shared_ptr<Store> base, std::function<void()> watch,
                           double sliceSeconds)
    : base_(std::move(base)), watch_(std::move(watch)), slice_(sliceSeconds) {
  TUTTI_CHECK_ARG(base_ != nullptr, "WatchedStore: null base store");
}

void WatchedStore::set(const std::string& key, std::span<const std::byte> value) {
  base_->set(key, value);
}

std::vector<std::byte> WatchedStore::get(const std::string& key, const Deadline& deadline) {
  if (base_->check({key})) return base_->get(key, deadline);
  for (;;) {
    double left = deadline.secondsLeft();
    if (left <= 0) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.1f", deadline.totalSeconds());
      fail(tuttiTimeout, "get(\"", key, "\"): key did not appear within ", secs, " s");
    }
    try {
      return base_->get(key, Deadline(std::min(left, slice_)));
    } catch (const Error& e) {
      if (e.code() != tuttiTimeout) throw;
    }
    if (watch_) watch_();
  }
}

bool WatchedStore::check(const std::vector<std::string>& keys) { return base_->check(keys); }
std::vector<bool> WatchedStore::checkEach(const std::vector<std::string>& keys) {
  return base_->checkEach(keys);
}
int64_t WatchedStore::add(const std::string& key, int64_t delta) { return base_->add(key, delta); }
void WatchedStore::abort() { base_->abort(); }
size_t WatchedStore::erasePrefix(const std::string& prefix) { return base_->erasePrefix(prefix); }

}  // namespace tutti::bootstrap
