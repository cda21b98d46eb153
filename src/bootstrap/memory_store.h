// In-process Store for thread-rank tests: one map guarded by a mutex, waiters sleep on a
// condition variable. Share one instance between threads through std::shared_ptr.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "bootstrap/store.h"

namespace tutti::bootstrap {

class MemoryStore : public Store {
 public:
  MemoryStore() = default;
  void set(const std::string& key, std::span<const std::byte> value) override;
  using Store::get;  // the variant ended by a communicator's abort signal
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override;
  size_t erasePrefix(const std::string& prefix) override;
  std::string localHost() override { return "127.0.0.1"; }  // all ranks are in this process

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<std::byte>> data_;
  bool aborted_ = false;
};

}  // namespace tutti::bootstrap
