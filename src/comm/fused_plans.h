// The schedules of fused groups (exec/schedule_merge.h): the collectives of a group that run
// as one schedule whose rounds interleave. Each member runs the cost model's best algorithm
// among those whose schedules merge (round-aligned on every rank, no shared window, no mixes),
// or the forced one when it merges; the merged schedule is cached by the members' shapes. A
// member with no algorithm that merges leaves the group to run call by call. Every rank plans
// alike from the same calls. Knows nothing of the communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/planner.h"
#include "exec/schedule.h"
#include "interfaces/algorithm.h"

namespace tutti {

class FusedPlans {
 public:
  // Above this many ranks groups are not fused: checking that a member's schedules are
  // round-aligned builds every rank's schedule.
  static constexpr int kMaxRanks = 64;

  struct Plan {
    exec::Schedule schedule;  // buffers: member j's input kFirstUserBuf + 2j, output + 1
    std::vector<int> peers;
    uint64_t digest = 0;  // of the members' shapes (the fused call's tag carries it)
  };
  // members: the calls' arguments for this rank, in call order, with no shared window. Null
  // when some member has no algorithm that merges. The reference stays valid until the next
  // call.
  const Plan* plan(std::span<const algo::CollArgs> members, Planner& planner,
                   std::string_view spec);

 private:
  // info's schedule of args for this rank when every rank's merges and is round-aligned.
  std::optional<exec::Schedule> mergeableSchedule(const algo::AlgorithmInfo& info,
                                                  const algo::CollArgs& args);
  std::map<std::string, std::optional<Plan>> plans_;
};

// The members' buffer indices in a fused plan's schedule.
inline int fusedInputBuf(size_t member) {
  return exec::kFirstUserBuf + 2 * static_cast<int>(member);
}
inline int fusedOutputBuf(size_t member) { return fusedInputBuf(member) + 1; }

}  // namespace tutti
