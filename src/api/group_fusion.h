// A group's recorded collectives on one communicator, and how they run at tuttiGroupEnd: in
// call order, except that consecutive small all-reduces of host buffers with one datatype and
// op (each at most kFuseMemberBytes) run as one all-reduce of a packed buffer (their inputs copied
// in, the one call, their results copied out): one call's latency for the run instead of one per
// call, as NCCL aggregates a group's operations. Every rank records the same calls, so every rank
// packs the same runs; ranks whose calls differ pack runs of different sizes, and the packed call's
// mismatch check names the difference (as the packed all-reduce's count). Knows nothing of
// groups or streams.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "call_log.h"
#include "comm/communicator.h"
#include "tutti/tutti.h"

namespace tutti::api {

// A member may hold at most this many bytes, and a packed run at most kFuseRunBytes: above
// them the bandwidth term dominates and the copies would cost more than the latency saved.
// A run also ends at kFuseRunCalls calls, and before a call that reads what an earlier call of
// the run writes (so a packed run gives the results of the calls one after another).
constexpr size_t kFuseMemberBytes = 8 << 10;
constexpr size_t kFuseRunBytes = 512 << 10;
constexpr size_t kFuseRunCalls = 1024;

struct FusibleAllReduce {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  tuttiDataType_t dtype{};
  tuttiRedOp_t op{};
  PerfStats* perf = nullptr;  // PERF counters of the communicator, when they log
};

struct RecordedCall {
  std::function<void()> run;                  // the call alone
  std::optional<FusibleAllReduce> allReduce;  // set for a host all-reduce within the limits
};

// Runs the calls in order, fusing as described above.
void runRecordedCalls(Communicator& comm, const std::vector<RecordedCall>& calls);

}  // namespace tutti::api
