// Namespaces the keys of one communicator: key k becomes "<prefix>/k" in the base store.
// abort() forwards to the base store (waits block inside the base, so only it can wake
// them); a base shared by several communicators is aborted for all of them.
#pragma once

#include <memory>

#include "bootstrap/store.h"

namespace tutti::bootstrap {

class PrefixStore : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> base, std::string prefix);
  void set(const std::string& key, std::span<const std::byte> value) override;
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override;
  size_t erasePrefix(const std::string& prefix) override;
  std::string localHost() override { return base_->localHost(); }

  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& base() const { return base_; }

 private:
  std::string full(const std::string& key) const { return prefix_ + "/" + key; }

  std::shared_ptr<Store> base_;
  std::string prefix_;
};

}  // namespace tutti::bootstrap
