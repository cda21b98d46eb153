#include "bootstrap/prefix_store.h"

#include "bootstrap/store_util.h"
#include "common/error.h"

namespace tutti::bootstrap {

PrefixStore::PrefixStore(std::shared_ptr<Store> base, std::string prefix)
    : base_(std::move(base)), prefix_(std::move(prefix)) {
  TUTTI_CHECK_ARG(base_ != nullptr, "PrefixStore: null base store");
}

void PrefixStore::throwIfAborted(const std::string& key) const {
  if (aborted_.raised()) throwAborted("store " + prefix_, key);
}

void PrefixStore::set(const std::string& key, std::span<const std::byte> value) {
  throwIfAborted(key);
  base_->set(full(key), value);
}

std::vector<std::byte> PrefixStore::get(const std::string& key, const Deadline& deadline) {
  throwIfAborted(key);
  return base_->get(full(key), deadline, aborted_);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> fulls;
  fulls.reserve(keys.size());
  for (const auto& k : keys) fulls.push_back(full(k));
  return base_->check(fulls);
}

std::vector<bool> PrefixStore::checkEach(const std::vector<std::string>& keys) {
  std::vector<std::string> fulls;
  fulls.reserve(keys.size());
  for (const auto& k : keys) fulls.push_back(full(k));
  return base_->checkEach(fulls);
}

int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  throwIfAborted(key);
  return base_->add(full(key), delta);
}

void PrefixStore::abort() { aborted_.raise(); }

size_t PrefixStore::erasePrefix(const std::string& prefix) {
  return base_->erasePrefix(full(prefix));
}

}  // namespace tutti::bootstrap
