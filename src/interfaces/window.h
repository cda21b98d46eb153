// A shared window: every rank of a communicator exposes one region of host memory that all
// the others map, plus one phase counter per rank for ordering (post / wait). Transports that
// can share memory between all ranks (shm on one host) offer it; algorithms such as `direct`
// read peers' windows instead of sending messages. Like connections, a window knows nothing
// about collectives: it moves no bytes by itself.
//
// Phases are 32-bit counters compared modulo 2^32 (a wait for v is satisfied by any value
// at or "after" v). Which values a call's phases mean is the executor's bookkeeping
// (exec/window_state.h), kept by the window's owner.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/clock.h"

namespace tutti::transport {

// How a waiting rank spends the time before it sleeps.
struct WaitPolicy {
  double spinUs = 50.0;  // poll this long before sleeping (TUTTI_SPIN_US)
  // true: sched_yield between polls (more ranks than cores: hand the core to a peer);
  // false: pause-spin (every rank has a core; a yield would hand it to unrelated processes).
  bool yield = false;
  double timeoutSec = 60.0;  // no progress for this long -> tuttiTimeout
  // Called with the awaited rank and what is awaited ("window phase 12, it reached 11") about
  // once a second once a wait has made no progress for kStallReportSec (the communicator
  // compares the rank's call with this one); may throw, ending the wait. Null or empty: not
  // called.
  const std::function<void(int rank, const std::string& step)>* onStall = nullptr;
  // Also yield while this process has more calls in flight than this (common/
  // calls_in_flight.h; 0: only as `yield` says).
  int yieldAboveCalls = 0;
  static constexpr double kStallReportSec = 1.0;
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
  // Throws tuttiRemoteError naming the rank when it died or marked itself failed,
  // tuttiTimeout after policy.timeoutSec without progress, tuttiRemoteError when the
  // communicator is aborted.
  virtual void wait(int rank, uint32_t phase, const WaitPolicy& policy) = 0;
  // This rank's communicator has failed and will post no more: peers waiting on this rank
  // (now or later) fail at once, naming it, instead of at their timeout. Irreversible.
  virtual void markFailed() {}
  // Line slots: small exchanges whose data and readiness share a cache line, so that a peer's
  // wait and its read of the data are one line transfer (NCCL's LL protocol; the executor's
  // line all-reduce, exec/line_allreduce.h). Each rank owns kLineSlots slots of kLineSlotBytes;
  // a slot is a 32-bit sequence word (the window's), 4 bytes of padding, then
  // kLinePayloadBytes for the caller, whose first 56 bytes share the word's cache line.
  static constexpr int kLineSlots = 2;
  static constexpr size_t kLineSlotBytes = 256;
  static constexpr size_t kLinePayloadBytes = kLineSlotBytes - 8;
  // The payload of `rank`'s slot (mapped here), or nullptr: this window has no line slots.
  virtual std::byte* linePayload(int /*rank*/, int /*slot*/) const { return nullptr; }
  // Publishes this rank's slot with sequence number seq (release: what was written to its
  // payload before is visible to a peer whose waitLine for seq returned). Wakes are deferred
  // as post()'s are.
  virtual void postLine(int /*slot*/, uint32_t /*seq*/) {}
  // Blocks until `rank`'s slot holds seq or a later sequence (modulo 2^32): as wait(), with
  // the same errors.
  virtual void waitLine(int /*rank*/, int /*slot*/, uint32_t /*seq*/,
                        const WaitPolicy& /*policy*/) {}

  // Small tags describing this rank's recent calls (what the caller wants peers to check,
  // e.g. collective / count / dtype / call number). Written before post(), read after wait()
  // returned. The caller picks the slot (the communicator: call number modulo kTagSlots, so
  // a peer one or two calls ahead has not overwritten the call being checked).
  using Tag = std::array<uint64_t, 2>;  // the same words as a message's MsgTag
  static constexpr int kTagSlots = 3;
  // Peers read a slot at any time, also while its owner rewrites it: tag() returns false
  // (and the caller skips the slot) rather than half of each.
  virtual void setTag(int slot, const Tag& tag) = 0;
  virtual bool tag(int rank, int slot, Tag* out) const = 0;
};

}  // namespace tutti::transport
