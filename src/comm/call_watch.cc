#include "comm/call_watch.h"

#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "exec/executor.h"

namespace tutti {

namespace {
std::string recordKey(int rank) { return "calls/" + std::to_string(rank); }
}  // namespace

CallWatch::CallWatch(bootstrap::Store* store, int rank, const CallTag* current,
                     const CallTrace* trace, std::function<std::string(int peer)> describePeer)
    : store_(store),
      rank_(rank),
      current_(current),
      trace_(trace),
      describePeer_(std::move(describePeer)) {}

void CallWatch::stalledOn(int peer) {
  const CallTag mine = *current_;
  const uint64_t number = collectiveCallNumber(mine);
  if (number == 0 || peer == rank_) return;
  auto now = std::chrono::steady_clock::now();
  if (mine != watchedCall_) {
    watchedCall_ = mine;
    lastRead_.clear();
  }
  auto [it, first] = lastRead_.try_emplace(peer, now);
  if (!first && now - it->second < kInterval) return;
  it->second = now;
  try {
    publish();
    for (const CallTag& theirs : recordOf(peer)) {
      if (collectiveCallNumber(theirs) != number || theirs == mine) continue;
      throw exec::CallMismatch(
          tuttiInvalidUsage,
          "rank " + std::to_string(rank_) + ": mismatched collective calls: this rank called " +
              describeCallTag(mine) + " but " + describePeer_(peer) + " called " +
              describeCallTag(theirs) + " (seen in its call record while this rank waited for it)");
    }
  } catch (const exec::CallMismatch&) {
    throw;
  } catch (const std::exception& e) {
    TUTTI_INFO(kInit, "rank " << rank_ << ": call record of rank " << peer << ": " << e.what());
  }
}

void CallWatch::publish() {
  const CallTag mine = *current_;
  if (mine == lastPublished_) return;
  std::vector<CallTag> tags(kPublished);
  size_t n = trace_ ? trace_->recentTags(tags) : 0;
  tags.resize(n);
  if (n == 0 || tags.back() != mine) tags.push_back(mine);
  std::vector<std::byte> bytes(tags.size() * sizeof(CallTag));
  std::memcpy(bytes.data(), tags.data(), bytes.size());
  store_->set(recordKey(rank_), bytes);
  lastPublished_ = mine;
}

std::vector<CallTag> CallWatch::recordOf(int peer) {
  const std::string key = recordKey(peer);
  if (!store_->check({key})) return {};
  std::vector<std::byte> bytes = store_->get(key, Deadline(1.0));
  std::vector<CallTag> tags(bytes.size() / sizeof(CallTag));
  std::memcpy(tags.data(), bytes.data(), tags.size() * sizeof(CallTag));
  return tags;
}

}  // namespace tutti
