// The collective calls of one communicator, one at a time: their numbers (each call's tag
// carries one, call_tag.h), the tag of the call being executed (its messages and the shared
// window's tag slots carry it), the watch that names a peer stalled in another call
// (call_watch.h, which reads that tag), whether the call being planned is a barrier (its tag
// says so), the scratch memory the calls run with, and the algorithm of the last call. It
// knows nothing of the communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/call_tag.h"
#include "comm/call_watch.h"

namespace tutti {

class CallState {
 public:
  // The tag of the next collective call: numbers it (a barrier's inside asBarrier, a packed
  // all-reduce's inside asPacked).
  CallTag next(const algo::CollArgs& args, tuttiRedOp_t userOp) {
    if (packedMembers_ > 0)
      return packedCallTag(args.dtype, userOp, packedMembers_, packedDigest_, ++calls_);
    return collectiveCallTag(args, userOp, barrier_, ++calls_);
  }
  // The tag of the next fused group (call_tag.h): numbers it.
  CallTag nextFused(size_t members, uint64_t digest) {
    return fusedCallTag(members, digest, ++calls_);
  }
  // Runs body() as a barrier: the call it makes is tagged as one.
  template <typename Body>
  void asBarrier(Body&& body) {
    barrier_ = true;
    Reset<bool> reset{barrier_, false};
    body();
  }
  // Runs body() as a packed all-reduce of `members` calls whose shapes give `digest`: the
  // all-reduce it makes is tagged as one (call_tag.h).
  template <typename Body>
  void asPacked(size_t members, uint64_t digest, Body&& body) {
    packedMembers_ = members;
    packedDigest_ = digest;
    Reset<size_t> reset{packedMembers_, 0};
    body();
  }
  // The tag of the call being executed ({0, 0}: none; p2pMessageTag: a point-to-point batch).
  const CallTag& current() const { return current_; }
  // Runs body() with current() == tag.
  template <typename Body>
  void executing(const CallTag& tag, Body&& body) {
    current_ = tag;
    Reset<CallTag> reset{current_, CallTag{}};
    body();
  }
  // Starts the call watch over `store` (the communicator's), publishing this rank's recent
  // calls from `trace`; null before.
  void startWatch(bootstrap::Store* store, int rank, const CallTrace* trace,
                  std::function<std::string(int peer)> describePeer) {
    watch_ = std::make_unique<CallWatch>(store, rank, &current_, trace, std::move(describePeer));
  }
  CallWatch* watch() const { return watch_.get(); }
  // At least `bytes` of scratch memory for the call about to run (kept for the next ones).
  std::byte* scratch(size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }
  const char* lastAlgorithm() const { return lastAlgorithm_; }
  void setLastAlgorithm(const char* name) { lastAlgorithm_ = name; }

 private:
  template <typename T>
  struct Reset {
    T& value;
    T to;
    ~Reset() { value = to; }
  };

  uint64_t calls_ = 0;  // collective calls made (the tags' call numbers)
  CallTag current_{};
  bool barrier_ = false;
  size_t packedMembers_ = 0;  // inside asPacked: the packed all-reduce's members
  uint64_t packedDigest_ = 0;
  const char* lastAlgorithm_ = "none";
  std::unique_ptr<CallWatch> watch_;
  std::vector<std::byte> scratch_;
};

}  // namespace tutti
