#include "comm/local_liveness.h"

#include <algorithm>
#include <string>

namespace tutti {

LocalLiveness::LocalLiveness(std::vector<pid_t> pids, int self)
    : pids_(std::move(pids)), self_(self) {
  for (int r = 0; r < static_cast<int>(pids_.size()); ++r)
    if (r != self_ && pids_[r] > 0) peers_.push_back(r);
  if (peers_.empty()) return;
  slice_ = std::clamp<size_t>(kHostChecksPerSweep / (peers_.size() + 1), 1, peers_.size());
  // Start just after this rank, so the ranks of a host begin their rotations at different
  // peers and together cover every peer at each sweep.
  cursor_ =
      static_cast<size_t>(std::upper_bound(peers_.begin(), peers_.end(), self_) - peers_.begin()) %
      peers_.size();
}

bool LocalLiveness::visible(int r) const {
  return r >= 0 && r < static_cast<int>(pids_.size()) && pids_[r] > 0;
}

bool LocalLiveness::gone(int r) const { return r != self_ && visible(r) && processGone(pids_[r]); }

std::vector<int> LocalLiveness::sweep() {
  std::vector<int> out;
  for (size_t i = 0; i < slice_; ++i) {
    int r = peers_[cursor_];
    cursor_ = (cursor_ + 1) % peers_.size();
    if (processGone(pids_[r])) out.push_back(r);
  }
  return out;
}

}  // namespace tutti
