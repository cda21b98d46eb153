// The executor's bookkeeping of one shared window across calls, kept by the window's owner
// (the communicator) next to the window: identical on every rank, since all run the same
// window schedules in the same order. A window itself (transports/window.h) only maps memory
// and moves phase counters; which counter values a call's phases mean is decided here.
//
// Phases are 32-bit counters compared modulo 2^32. The executor adds epoch() to the relative
// phases of a schedule and advances the epoch by the phases the call used, so a window is
// reused call after call without resetting its counters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "interfaces/window.h"

namespace tutti::exec {

class WindowState {
 public:
  uint32_t epoch() const { return epoch_; }
  // Schedules that fit in half the region (exec::Schedule::windowHalves) run in the two halves
  // alternately: a rank may overwrite half h once every peer is done with that half's last
  // call, which is the epoch halfFree(h) -- usually long reached, so a small call needs no
  // wait for the peers to finish the previous call.
  static size_t halfBytes(size_t windowBytes) { return windowBytes / 2 / 64 * 64; }
  int nextHalf() const { return nextHalf_; }
  uint32_t halfFree(int half) const { return halfFree_[half]; }
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
  // The line all-reduces' own sequence (exec/line_allreduce.h): 1, 2, ... (a slot's word
  // starts at 0, which no call waits for).
  uint32_t nextLineSeq() { return ++lineSeq_; }
  void postSkippedFinal(transport::Window& window) {
    if (skippedFinal_) window.post(epoch_);
    skippedFinal_ = false;
  }

 private:
  uint32_t epoch_ = 0;
  uint64_t calls_ = 0;
  int nextHalf_ = 0;
  std::array<uint32_t, 2> halfFree_{0, 0};
  bool skippedFinal_ = false;
  uint32_t lineSeq_ = 0;
};

}  // namespace tutti::exec
