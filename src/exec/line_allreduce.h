// The line all-reduce: a small all-reduce (at most kLineMaxBytes) over the shared window's line
// slots (interfaces/window.h), NCCL's LL protocol on host memory. Each rank writes its window
// tag slots (this call's tag and its two previous calls') and its input into its slot for the
// call's line sequence number and publishes it, then reads every peer's slot -- one cache-line
// transfer per peer for up to 8 bytes, one more per 64 -- checks the peer's tags against its
// own (the same checks as a window program's) and reduces in rank order 0..n-1, so every rank
// gets the same bits (as in deterministic mode). Two slots taken by sequence parity need no other
// synchronisation: a rank rewrites its slot for call k+2 only after it read every peer's call
// k+1, which each peer wrote after it had read call k.
//
// The same errors as a window program: a peer that died, gave up or stalls is named; a peer
// whose slot holds another call (tag) is a CallMismatch.
#pragma once

#include <cstddef>

#include "exec/executor.h"
#include "exec/schedule.h"
#include "interfaces/window.h"

namespace tutti::exec {

// Before the input: the rank's window tag slots (this call's tag and its recent calls').
inline constexpr int kLineTagSlots = transport::Window::kTagSlots;
inline constexpr size_t kLineTagBytes = kLineTagSlots * sizeof(transport::Window::Tag);
inline constexpr size_t kLineMaxBytes = transport::Window::kLinePayloadBytes - kLineTagBytes;
static_assert(kLineMaxBytes == Schedule::kLineMaxBytes);

// Whether an all-reduce of `bytes` may run as a line all-reduce on `window` (null: none).
bool lineAllReduceFits(const transport::Window* window, size_t bytes);

struct LineAllReduce {
  const void* send = nullptr;
  void* recv = nullptr;  // may be send (in place)
  size_t count = 0;
  tuttiDataType_t dtype = tuttiFloat32;
  tuttiRedOp_t op = tuttiSum;  // never tuttiAvg (the caller divides)
  int nranks = 1;
};

// Runs the call on options.window (which lineAllReduceFits) with options.windowState's line
// sequence; options.windowTags (with options.callTag in one slot), or options.callTag alone,
// go into the slot. options.rank is this rank.
void runLineAllReduce(const LineAllReduce& call, const ExecOptions& options);

}  // namespace tutti::exec
