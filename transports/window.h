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

class Window {
 public:
  virtual ~Window() = default;
  // Bytes of each rank's region.
  virtual size_t bytes() const = 0;
  // The region of `rank` (any rank of the communicator, including this one), mapped here.
  virtual std::byte* base(int rank) const = 0;
  // Publishes this rank's phase (release: every write before it is visible to a peer whose
  // wait for this value returned) and wakes peers sleeping on it.
  virtual void post(uint32_t phase) = 0;
  // Blocks until `rank` has posted `phase` or later: spins for spinUs, then sleeps. Throws
  // tuttiRemoteError naming the rank when it died, tuttiTimeout after timeoutSec without the
  // phase, tuttiRemoteError when `aborted` becomes true.
  virtual void wait(int rank, uint32_t phase, double spinUs, double timeoutSec) = 0;
  // A small tag describing this rank's current call (what the caller wants peers to check,
  // e.g. collective / count / dtype). Written before post(), read after wait() returned.
  using Tag = std::array<uint64_t, 2>;
  virtual void setTag(const Tag& tag) = 0;
  virtual Tag tag(int rank) const = 0;

  uint32_t epoch() const { return epoch_; }
  void advance(uint32_t phases) { epoch_ += phases; }

 private:
  uint32_t epoch_ = 0;
};

}  // namespace tutti::transport
