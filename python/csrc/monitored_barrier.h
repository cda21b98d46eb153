// monitored_barrier as gloo runs it, over torch's store: every rank other than 0 checks in
// and waits for rank 0's verdict; rank 0 waits for the ranks in order within the timeout and
// names the first that did not arrive ("Rank 2 failed to pass monitoredBarrier in 100 ms"),
// or with waitAllRanks every one ("Ranks 1, 2 failed to pass monitoredBarrier in 100 ms");
// a timeout of 0 expires at once. The other ranks then fail with rank 0's verdict instead of
// waiting out their timeout. Knows nothing of the process group.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace tutti::torch_backend {

class MonitoredBarrier {
 public:
  // keyPrefix names the group in the store (the same on every rank, distinct per group).
  MonitoredBarrier(c10::intrusive_ptr<c10d::Store> store, std::string keyPrefix, int rank,
                   int size);
  // Throws std::runtime_error with the verdict when a rank did not arrive in time.
  void run(std::chrono::milliseconds timeout, bool waitAllRanks);

 private:
  std::string key(uint64_t round, const std::string& what) const;
  // Rank 0: the ranks that did not check in by the deadline (the first one only unless
  // waitAllRanks); "" when all did.
  std::string verdict(uint64_t round, std::chrono::steady_clock::time_point deadline,
                      int64_t timeoutMs, bool waitAllRanks);
  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  int rank_, size_;
  uint64_t round_ = 0;  // every rank's calls, in order
};

}  // namespace tutti::torch_backend
