// Namespaces the keys of one communicator: key k becomes "<prefix>/k" in the base store.
// abort() ends this view's waits and refuses its later calls, and leaves the base store
// alone: a base shared by several communicators (a parent and its split children) stays
// usable for the others.
#pragma once

#include <memory>

#include "bootstrap/abort_signal.h"
#include "bootstrap/store.h"

namespace tutti::bootstrap {

class PrefixStore : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> base, std::string prefix);
  void set(const std::string& key, std::span<const std::byte> value) override;
  using Store::get;  // the variant ended by a communicator's abort signal
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  bool check(const std::vector<std::string>& keys) override;
  std::vector<bool> checkEach(const std::vector<std::string>& keys) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override;
  size_t erasePrefix(const std::string& prefix) override;
  std::string localHost() override { return base_->localHost(); }
  bool onNetwork() const override { return base_->onNetwork(); }

  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& base() const { return base_; }

 private:
  std::string full(const std::string& key) const { return prefix_ + "/" + key; }

  void throwIfAborted(const std::string& key) const;

  std::shared_ptr<Store> base_;
  std::string prefix_;
  AbortSignal aborted_;
};

}  // namespace tutti::bootstrap
