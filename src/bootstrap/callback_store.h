// Store over a caller's callbacks (tuttiStore_t): lets a framework's own key-value store
// (torch's c10d::Store, ...) carry the rendezvous, so tutti opens no port of its own.
// get() polls check() with a growing pause (50 us to 10 ms) until the deadline or abort.
#pragma once

#include <atomic>

#include "bootstrap/store.h"
#include "tutti/tutti.h"

namespace tutti::bootstrap {

class CallbackStore : public Store {
 public:
  // Throws tuttiInvalidArgument when a callback is missing.
  explicit CallbackStore(const tuttiStore_t& callbacks);
  void set(const std::string& key, std::span<const std::byte> value) override;
  using Store::get;  // the variant ended by a communicator's abort signal
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override { aborted_ = true; }

 private:
  bool exists(const std::string& key);
  tuttiStore_t cb_;
  std::atomic<bool> aborted_{false};
};

}  // namespace tutti::bootstrap
