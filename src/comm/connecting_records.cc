#include "comm/connecting_records.h"

#include <algorithm>
#include <vector>

#include "comm/failure_monitor.h"
#include "exec/executor.h"

namespace tutti {

void ConnectingRecords::check(std::span<const int> connecting) {
  if (connecting.empty()) return;
  std::vector<int> look;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < kInterval) return;
    last_ = now;
    const size_t n = std::min(kPerCheck, connecting.size());
    for (size_t i = 0; i < n; ++i) look.push_back(connecting[(next_ + i) % connecting.size()]);
    next_ = (next_ + n) % connecting.size();
  }
  for (int r : look) {
    if (r == rank_ || !monitor_->recordOf(r)) continue;
    // The record's text is added by the failure attribution ("rank R had failed before: ...").
    throw exec::PeerFailure(r, "rank " + std::to_string(rank_) + ": " + describeRank_(r) +
                                   " gave up while the ranks set up their connections");
  }
}

}  // namespace tutti
