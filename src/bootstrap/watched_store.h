// A store whose waits look around while they wait: get() waits on the base store in slices
// and calls `watch` between them, which throws when the awaited key can no longer come (the
// communicator's check that no peer process has died). Everything else forwards to the base.
#pragma once

#include <functional>
#include <memory>

#include "bootstrap/store.h"

namespace tutti::bootstrap {

class WatchedStore : public Store {
 public:
  // sliceSeconds: how long each wait on the base lasts before `watch` runs.
  WatchedStore(std::shared_ptr<Store> base, std::function<void()> watch, double sliceSeconds = 0.5);
  void set(const std::string& key, std::span<const std::byte> value) override;
  // A timeout names the key and the whole deadline, as the base's would.
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  bool check(const std::vector<std::string>& keys) override;
  std::vector<bool> checkEach(const std::vector<std::string>& keys) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override;
  size_t erasePrefix(const std::string& prefix) override;
  std::string localHost() override { return base_->localHost(); }
  bool onNetwork() const override { return base_->onNetwork(); }

 private:
  std::shared_ptr<Store> base_;
  std::function<void()> watch_;
  double slice_;
};

}  // namespace tutti::bootstrap
