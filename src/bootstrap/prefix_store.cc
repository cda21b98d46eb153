#include "bootstrap/prefix_store.h"

#include "common/error.h"

namespace tutti::bootstrap {

PrefixStore::PrefixStore(std::shared_ptr<Store> base, std::string prefix)
    : base_(std::move(base)), prefix_(std::move(prefix)) {
  TUTTI_CHECK_ARG(base_ != nullptr, "PrefixStore: null base store");
}

void PrefixStore::set(const std::string& key, std::span<const std::byte> value) {
  base_->set(full(key), value);
}

std::vector<std::byte> PrefixStore::get(const std::string& key, const Deadline& deadline) {
  return base_->get(full(key), deadline);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> fulls;
  fulls.reserve(keys.size());
  for (const auto& k : keys) fulls.push_back(full(k));
  return base_->check(fulls);
}

int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return base_->add(full(key), delta);
}

void PrefixStore::abort() { base_->abort(); }

size_t PrefixStore::erasePrefix(const std::string& prefix) {
  return base_->erasePrefix(full(prefix));
}

}  // namespace tutti::bootstrap
