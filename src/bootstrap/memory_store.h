// In-process Store for thread-rank tests: one map guarded by a mutex, waiters sleep on a
// condition variable. Share one instance between threads through std::shared_ptr.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "bootstrap/abort_signal.h"
#include "bootstrap/store.h"

namespace tutti::bootstrap {

class MemoryStore : public Store {
 public:
  MemoryStore() = default;
  void set(const std::string& key, std::span<const std::byte> value) override;
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  // Woken by set() at once; looks at `also` every 10 ms.
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline,
                             const AbortSignal& also) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override;
  size_t erasePrefix(const std::string& prefix) override;
  std::string localHost() override { return "127.0.0.1"; }  // all ranks are in this process
  bool onNetwork() const override { return true; }          // the ring runs over loopback

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<std::byte>> data_;
  bool aborted_ = false;

  std::vector<std::byte> getWith(const std::string& key, const Deadline& deadline,
                                 const AbortSignal* also);
};

}  // namespace tutti::bootstrap
