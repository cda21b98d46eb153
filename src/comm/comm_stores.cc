#include "comm_stores.h"

#include <utility>

#include "bootstrap/prefix_store.h"
#include "bootstrap/watched_store.h"

namespace tutti {

CommStores::CommStores(std::shared_ptr<bootstrap::Store> base, std::string prefix)
    : base_(std::move(base)),
      prefix_(std::move(prefix)),
      own_(std::make_shared<bootstrap::PrefixStore>(base_, prefix_ + "/")) {}

bootstrap::Store* CommStores::watched(std::function<void()> watch) {
  watched_ = std::make_shared<bootstrap::WatchedStore>(own_, std::move(watch));
  return watched_.get();
}

std::string CommStores::childPrefix(const std::string& tag, int color) const {
  return prefix_ + "/" + tag + "c" + std::to_string(color);
}

std::shared_ptr<bootstrap::Store> CommStores::childStore() const {
  std::shared_ptr<bootstrap::Store> child = base_->separateClient();
  return child != nullptr ? child : base_;
}

}  // namespace tutti
