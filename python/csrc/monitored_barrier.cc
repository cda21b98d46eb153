#include "monitored_barrier.h"

#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace tutti::torch_backend {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(1);

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}
}  // namespace

MonitoredBarrier::MonitoredBarrier(c10::intrusive_ptr<c10d::Store> store, std::string keyPrefix,
                                   int rank, int size)
    : store_(std::move(store)), prefix_(std::move(keyPrefix)), rank_(rank), size_(size) {}

std::string MonitoredBarrier::key(uint64_t round, const std::string& what) const {
  return prefix_ + "/" + std::to_string(round) + "/" + what;
}

std::string MonitoredBarrier::verdict(uint64_t round, Clock::time_point deadline, int64_t timeoutMs,
                                      bool waitAllRanks) {
  std::vector<int> missing, processed;
  for (int r = 1; r < size_; ++r) {
    const std::string arrived = key(round, "arrived/" + std::to_string(r));
    bool in = store_->check({arrived});
    while (!in && Clock::now() < deadline) {
      std::this_thread::sleep_for(kPoll);
      in = store_->check({arrived});
    }
    if (in) {
      processed.push_back(r);
      continue;
    }
    missing.push_back(r);
    if (waitAllRanks) continue;
    const std::string ms = std::to_string(timeoutMs);
    if (timeoutMs == 0)  // gloo's words for a deadline gone before any wait
      return "Rank 0 timed out in monitoredBarrier after 0 ms: rank " + std::to_string(r) +
             " has not reached it (ranks that had: " +
             (processed.empty() ? "none" : rankList(processed)) + ")";
    return "Rank " + std::to_string(r) + " failed to pass monitoredBarrier in " + ms + " ms";
  }
  if (missing.empty()) return "";
  return (missing.size() == 1 ? "Rank " : "Ranks ") + rankList(missing) +
         " failed to pass monitoredBarrier in " + std::to_string(timeoutMs) + " ms";
}

void MonitoredBarrier::run(std::chrono::milliseconds timeout, bool waitAllRanks) {
  const auto deadline = Clock::now() + timeout;
  const uint64_t round = round_++;
  const std::string verdictKey = key(round, "verdict");
  if (rank_ == 0) {
    const std::string v = verdict(round, deadline, timeout.count(), waitAllRanks);
    store_->set(verdictKey, std::vector<uint8_t>(v.begin(), v.end()));
    if (!v.empty()) throw std::runtime_error("[Rank 0]: " + v);
    return;
  }
  store_->set(key(round, "arrived/" + std::to_string(rank_)), std::vector<uint8_t>{1});
  for (;;) {
    if (store_->check({verdictKey})) {
      const auto bytes = store_->get(verdictKey);
      if (bytes.empty()) return;
      throw std::runtime_error(
          "Rank " + std::to_string(rank_) +
          " successfully reached monitoredBarrier, but received errors while waiting for "
          "send/recv from rank 0. Please check rank 0 logs for faulty rank. Rank 0: " +
          std::string(bytes.begin(), bytes.end()));
    }
    if (Clock::now() >= deadline)
      throw std::runtime_error(
          "Rank " + std::to_string(rank_) +
          " successfully reached monitoredBarrier, but received errors while waiting for "
          "send/recv from rank 0. Please check rank 0 logs for faulty rank (no verdict from "
          "rank 0 within " +
          std::to_string(timeout.count()) + " ms).");
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace tutti::torch_backend
