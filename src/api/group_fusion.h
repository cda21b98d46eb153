// A group's recorded collectives on one communicator, and how they run at tuttiGroupEnd, with
// the results of the calls one after another:
// - Fused (Communicator::fusedCollectives): a run of consecutive all-reduces, all-gathers,
//   reduce-scatters and all-to-alls on host buffers (each within fuseLimit, the run at most
//   kFuseRunBytes and kFuseRunCalls calls; the reducing ones of one datatype and op; no call
//   reading or writing what another call of the run writes, or writing what another reads)
//   runs as one call whose schedule interleaves the members' rounds, when the run holds
//   something besides all-reduces and its members' algorithms merge.
// - Packed: small all-reduces of one datatype and op (each at most kFuseMemberBytes) run as one
//   all-reduce of a packed buffer (their inputs copied in, the one call, their results copied
//   out): inside a fused run as one of its members, elsewhere on their own (consecutive, ending
//   before a call that reads what an earlier one writes).
// - Everything else one call after another.
// One call's latency for the run instead of one per call, as NCCL aggregates a group's
// operations. Every rank records the same calls, so every rank fuses and packs alike. A packed
// or fused call's tag carries a digest of every member's shape (collective, count, datatype,
// op, in call order): ranks whose calls differ in any member, even with counts that add up
// alike, fail with a mismatch that names both calls and this rank's members, before any data
// is combined. Knows nothing of groups or streams.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "call_log.h"
#include "comm/communicator.h"
#include "tutti/tutti.h"

namespace tutti::api {

// An all-reduce packs and fuses when it holds at most kFuseMemberBytes; the other fusible calls
// fuse when their buffers hold at most kFuseMixedMemberBytes. A packed or fused run holds at
// most kFuseRunBytes and kFuseRunCalls calls: above them the bandwidth term dominates (and
// packing's copies would cost more than the latency saved; a larger all-reduce alone may use
// the shared window, which fused schedules do not).
constexpr size_t kFuseMemberBytes = 8 << 10;
constexpr size_t kFuseMixedMemberBytes = 16 << 10;
constexpr size_t kFuseRunBytes = 512 << 10;
constexpr size_t kFuseRunCalls = 1024;

inline size_t fuseLimit(algo::Coll c) {
  return c == algo::Coll::kAllReduce ? kFuseMemberBytes : kFuseMixedMemberBytes;
}

struct FusibleCall {
  algo::Coll coll = algo::Coll::kAllReduce;  // all-reduce, all-gather, reduce-scatter, all-to-all
  const void* send = nullptr;
  size_t sendBytes = 0;
  void* recv = nullptr;
  size_t recvBytes = 0;
  size_t count = 0;  // as the single call takes it
  tuttiDataType_t dtype{};
  tuttiRedOp_t op = tuttiSum;  // the caller's (all-reduce, reduce-scatter)
  PerfStats* perf = nullptr;   // PERF counters of the communicator, when they log
  const char* perfName = "";   // the call's name in them
};

struct RecordedCall {
  std::function<void()> run;           // the call alone
  std::optional<FusibleCall> fusible;  // set for a host call within fuseLimit
  // The cost model's time of the call in seconds (tuttiGroupSimulateEnd); null: the call has
  // no estimate.
  std::function<double(Communicator&)> estimate;
};

// Runs the calls in order, fusing and packing as described above.
void runRecordedCalls(Communicator& comm, const std::vector<RecordedCall>& calls);

}  // namespace tutti::api
