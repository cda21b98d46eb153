// ConnectingRecords: while connections are made, whether a peer being connected has given up on
// its own side. A rank whose setup fails locally (its shm memory check, too few descriptors)
// publishes a failure record and may live on; without this its peers would wait for its
// connection until their timeout. Reads the records through a FailureMonitor, a few ranks per
// interval (each check is a store round trip). Knows nothing of connections or calls: the
// caller says which peers it is connecting.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <span>
#include <string>

namespace tutti {

class FailureMonitor;

class ConnectingRecords {
 public:
  // describeRank: "rank R (host H, pid P)".
  ConnectingRecords(FailureMonitor* monitor, int rank, std::function<std::string(int)> describeRank)
      : monitor_(monitor), rank_(rank), describeRank_(std::move(describeRank)) {}

  // Throws exec::PeerFailure naming a rank in `connecting` that left a failure record; looks
  // at most kPerCheck of them, at most every kInterval (rotating through the list). Any thread.
  void check(std::span<const int> connecting);

  static constexpr std::chrono::milliseconds kInterval{100};
  static constexpr size_t kPerCheck = 4;

 private:
  FailureMonitor* monitor_;
  int rank_;
  std::function<std::string(int)> describeRank_;
  std::mutex mu_;  // the two below
  size_t next_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tutti
