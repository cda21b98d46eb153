// The stores of one communicator: the store it was made from (a split child's store is a
// client of it), its own view under its prefix, and that view as the transports see it (its
// waits watch the peers being connected, D7), plus the names of its split children. Knows
// nothing of the communicator.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "bootstrap/store.h"

namespace tutti {

class CommStores {
 public:
  CommStores(std::shared_ptr<bootstrap::Store> base, std::string prefix);

  const std::string& prefix() const { return prefix_; }
  // The communicator's keys: the base store under prefix + "/".
  const std::shared_ptr<bootstrap::Store>& own() const { return own_; }
  // own() whose waits run `watch` between slices; made once, before the transports' setup.
  bootstrap::Store* watched(std::function<void()> watch);

  // The next split: its tag ("split<k>", k counting this communicator's splits).
  std::string nextSplitTag() { return "split" + std::to_string(splits_++); }
  // A split child's prefix, and the store it is made from: a separate client of the base
  // store where the store needs one (a TCP connection: parent and child may wait on the store
  // at the same time), else the base store itself.
  std::string childPrefix(const std::string& tag, int color) const;
  std::shared_ptr<bootstrap::Store> childStore() const;

 private:
  std::shared_ptr<bootstrap::Store> base_;
  std::string prefix_;
  std::shared_ptr<bootstrap::Store> own_;
  std::shared_ptr<bootstrap::Store> watched_;
  int splits_ = 0;
};

}  // namespace tutti
