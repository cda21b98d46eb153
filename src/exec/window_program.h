// Window programs: a schedule made only of window ops (kWait, kPost, kCopy, kReduce -- the
// `direct` algorithms, which read the peers' shared windows instead of sending messages),
// compiled once per plan against one communicator's window. Every slice is resolved when the
// plan is made (window slices to their mapped addresses), the ops are flattened in the
// executor's order (a round's waits, then its local ops) and the reduction kernel is looked
// up once per call, so a run costs a few instructions per op. A small direct all-reduce is a
// dozen ops and a fraction of a microsecond: the generic executor's per-op dispatch, address
// checks and virtual calls were a third of it.
//
// Same results, synchronisation and errors as exec::execute() on the same schedule.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "exec/schedule.h"
#include "interfaces/window.h"

namespace tutti::exec {

class WindowProgram {
 public:
  // True when the schedule uses the window and has no transfers (kSend, kRecv, kRecvReduce).
  static bool applies(const Schedule& schedule);

  // `window` must be the one the program runs on and outlive it.
  WindowProgram(const Schedule& schedule, transport::Window& window);

  // buffers: as exec::execute() (kInput, kOutput, kScratch, ...); options.window must be the
  // window the program was compiled for.
  void run(std::span<std::byte* const> buffers, const ExecOptions& options) const;

  size_t steps() const { return steps_.size(); }

 private:
  // Where an operand lives: a window address resolved at compile time (plus the call's half
  // offset), or buffers[buf] + offset.
  struct Ref {
    std::byte* window = nullptr;
    size_t buf = 0;
    size_t offset = 0;
    std::byte* at(std::span<std::byte* const> buffers, size_t halfBase) const {
      return window != nullptr ? window + halfBase : buffers[buf] + offset;
    }
  };
  struct Step {
    OpType type = OpType::kWait;
    int peer = -1;       // kWait
    uint32_t phase = 0;  // kWait, kPost
    uint32_t chain = 1;  // kReduce: this and the next chain-1 steps accumulate into dst
    size_t bytes = 0;    // kCopy, kReduce
    Ref dst, src, src2;
  };
  static Step marker(OpType type, int peer, uint32_t phase);
  // The EXEC line (TRACE) of one run that took `seconds`.
  void trace(double seconds) const;
  Ref resolve(const Slice& s, transport::Window& window, size_t regionBytes);

  std::vector<Step> steps_;
  transport::Window* window_;
  std::string algorithm_;
  size_t windowBytes_;
  uint32_t windowPhases_;
  bool finalPostOnlyForNextCall_;
  tuttiDataType_t dtype_;
  tuttiRedOp_t op_;
  size_t elemSize_;
  bool reduces_ = false;
  size_t buffersNeeded_ = 0;  // 1 + the highest buffer index used
};

}  // namespace tutti::exec
