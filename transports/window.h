// A shared window: every rank of a communicator exposes one region of host memory that all
// the others map, plus one phase counter per rank for ordering (post / wait). Transports that
// can share memory between all ranks (shm on one host) offer it; algorithms such as `direct`
// read peers' windows instead of sending messages. Like connections, a window knows nothing
// about collectives: it moves no bytes by itself.
//
// Phases are 32-bit counters compared modulo 2^32 (a wait for v is satisfied by any value
// at or "after" v). The executor adds epoch() to the relative phases of a schedule and
// advances the epoch by the phases the schedule used, so windows can be reused call after
// call without resetting the counters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/clock.h"

namespace tutti::transport {

// How a waiting rank spends the time before it sleeps.
struct WaitPolicy {
  double spinUs = 50.0;  // poll this long before sleeping (TUTTI_SPIN_US)
  // true: sched_yield between polls (more ranks than cores: hand the core to a peer);
  // false: pause-spin (every rank has a core; a yield would hand it to unrelated processes).
  bool yield = false;
  double timeoutSec = 60.0;  // no progress for this long -> tuttiTimeout
};

class Window {
 public:
  virtual ~Window() = default;
  // Bytes of each rank's region.
  virtual size_t bytes() const = 0;
  // The region of `rank` (any rank of the communicator, including this one), mapped here.
  virtual std::byte* base(int rank) const = 0;
  // Publishes this rank's phase (release: every write before it is visible to a peer whose
  // wait for this value returned). Waking peers that sleep on it may be deferred until
  // flushPosts() or this rank's next wait that does not return at once.
  virtual void post(uint32_t phase) = 0;
  // Wakes the peers sleeping on this rank's posts (the executor calls it at the end of every
  // call, so no peer sleeps on a post past the call that made it).
  virtual void flushPosts() {}
  // Blocks until `rank` has posted `phase` or later: polls for policy.spinUs, then sleeps.
  // Throws tuttiRemoteError naming the rank when it died, tuttiTimeout after
  // policy.timeoutSec without progress, tuttiRemoteError when the communicator is aborted.
  virtual void wait(int rank, uint32_t phase, const WaitPolicy& policy) = 0;
  // A small tag describing this rank's current call (what the caller wants peers to check,
  // e.g. collective / count / dtype). Written before post(), read after wait() returned.
  // Two slots, used by alternate calls: a peer may already be one call ahead (see halves)
  // and must not overwrite the tag this rank is about to check.
  using Tag = std::array<uint64_t, 2>;  // the same words as a message's MsgTag
  static constexpr int kTagSlots = 2;
  virtual void setTag(int slot, const Tag& tag) = 0;
  virtual Tag tag(int rank, int slot) const = 0;

  // The executor's bookkeeping, identical on every rank since all run the same window
  // schedules in the same order.
  uint32_t epoch() const { return epoch_; }
  uint64_t calls() const { return calls_; }
  int tagSlot() const { return static_cast<int>(calls_ % kTagSlots); }
  // Schedules that fit in half the region (exec::Schedule::windowHalves) run in the two halves
  // alternately: a rank may overwrite half h once every peer is done with that half's last
  // call, which is the epoch halfFree(h) -- usually long reached, so a small call needs no
  // wait for the peers to finish the previous call.
  int nextHalf() const { return nextHalf_; }
  uint32_t halfFree(int half) const { return halfFree_[half]; }
  size_t halfBytes() const { return bytes() / 2 / 64 * 64; }
  // After a call that used `phases` phases and half `half` (-1: the whole region).
  // finalPostSkipped: the call did not post its last phase (only the next call's phase-0
  // waits need it); postSkippedFinal() posts it before a call that does need it.
  void finishCall(uint32_t phases, int half, bool finalPostSkipped) {
    epoch_ += phases;
    ++calls_;
    skippedFinal_ = finalPostSkipped;
    if (half < 0) {
      halfFree_ = {epoch_, epoch_};
    } else {
      halfFree_[half] = epoch_;
      nextHalf_ = 1 - half;
    }
  }
  bool finalPostPending() const { return skippedFinal_; }
  void postSkippedFinal() {
    if (skippedFinal_) post(epoch_);
    skippedFinal_ = false;
  }

 private:
  uint32_t epoch_ = 0;
  uint64_t calls_ = 0;
  int nextHalf_ = 0;
  std::array<uint32_t, 2> halfFree_{0, 0};
  bool skippedFinal_ = false;
};

}  // namespace tutti::transport
