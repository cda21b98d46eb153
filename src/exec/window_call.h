// Internal to the executor: how one call uses the communicator's shared window -- where its
// window slices start (0, or the half it runs in) and which counter values its relative
// phases mean. Shared by the generic executor and the compiled window programs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/executor.h"
#include "exec/schedule.h"
#include "interfaces/window.h"

namespace tutti::exec::detail {

// Fused reduce chains (dst = dst op x, ...) larger than this run block by block so the
// destination stays in cache.
inline constexpr size_t kReduceBlockBytes = 32u << 10;

// How many ops from ops[first] (a kReduce) on accumulate into its destination (dst = dst op
// x, never reading dst through x): the fused reduce chain the executor runs block by block.
size_t reduceChainLength(const std::vector<Op>& ops, size_t first);

struct WindowUse {
  transport::Window* window = nullptr;
  WindowState* state = nullptr;
  size_t base = 0;          // offset of the part of each region the call uses
  int half = -1;            // the half it runs in, -1: the whole region
  uint32_t epoch = 0;       // phase p means counter epoch + p ...
  uint32_t zeroTarget = 0;  // ... except phase 0: the peers are done with this part
  bool skipFinalPost = false;

  uint32_t target(uint32_t phase) const { return phase == 0 ? zeroTarget : epoch + phase; }
};

// What a call needs to know of its schedule's window use.
struct WindowNeeds {
  const char* algorithm = "";
  size_t bytes = 0;
  uint32_t phases = 0;
  bool finalPostOnlyForNextCall = false;

  static WindowNeeds of(const Schedule& s) {
    return {s.algorithm.c_str(), s.windowBytes, s.windowPhases, s.finalPostOnlyForNextCall};
  }
};

// Before the call's first op: checks the window is there and large enough, picks the half.
WindowUse beginWindowCall(transport::Window* window, WindowState* state, const WindowNeeds& needs);
// After a wait for `peer` at phase 1 or later (options.windowTags set): the peer's tag slots
// against this rank's; a slot holding the same call number with another call throws
// CallMismatch (tuttiInvalidUsage) naming both calls. Catches a mismatch of a recent call
// that used no window, too (both ranks wrote its tag at its start).
void checkPeerCall(const WindowUse& use, int peer, const ExecOptions& options);
[[noreturn]] void reportMismatch(const transport::Window::Tag& mine,
                                 const transport::Window::Tag& theirs, int peer,
                                 const ExecOptions& options);
// After its last op: advances the window's epoch (state) and wakes peers sleeping on its
// posts.
void endWindowCall(const WindowUse& use, const WindowNeeds& needs);

}  // namespace tutti::exec::detail
