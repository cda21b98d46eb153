// Communicator::fusedCollectives: a group's collectives as one call running one schedule
// (comm/fused_plans.h), tagged as a fused group (by its members' shapes and what a packed member
// stands for) so that ranks whose groups differ stop with a mismatch naming both.
#include <vector>

#include "comm/communicator.h"
#include "comm/fused_plans.h"
#include "comm/planner.h"
#include "common/dtype.h"
#include "common/log.h"
#include "reduce/reduce.h"

namespace tutti {

bool Communicator::fusedCollectives(std::span<const FusedCall> calls, uint64_t membersDigest) {
  log::setThreadRank(rank_);
  std::vector<algo::CollArgs> members;
  members.reserve(calls.size());
  for (const FusedCall& c : calls) {
    if (!fusible(c.coll)) return false;
    algo::CollArgs a = baseArgs(c.coll, c.count, c.dtype);  // windowBytes 0: no window
    if (algo::reduces(c.coll)) a.op = c.op == tuttiAvg ? tuttiSum : c.op;
    a.inPlace = c.coll == algo::Coll::kAllToAll && c.send == c.recv;
    members.push_back(std::move(a));
  }
  const FusedPlans::Plan* plan = fused_->plan(members, *planner_, options_.algo);
  if (plan == nullptr) return false;
  ensureWindow();
  const uint64_t digest = membersDigest == 0
                              ? plan->digest
                              : ShapeDigest().add(plan->digest).add(membersDigest).value();
  const CallTag tag = calls_.nextFused(calls.size(), digest);
  const bool calibrating = collectiveCallNumber(tag) == 1 && planner_->selfTuning() != nullptr;
  calls_.setLastAlgorithm("fused");
  runTaggedCall(tag, "fused", [&] {
    if (calibrating) calibrate();
    std::vector<std::byte*> buffers(static_cast<size_t>(fusedInputBuf(calls.size())), nullptr);
    buffers[static_cast<size_t>(exec::Buf::kScratch)] = calls_.scratch(plan->schedule.scratchBytes);
    for (size_t j = 0; j < calls.size(); ++j) {
      buffers[static_cast<size_t>(fusedInputBuf(j))] =
          const_cast<std::byte*>(static_cast<const std::byte*>(calls[j].send));
      buffers[static_cast<size_t>(fusedOutputBuf(j))] = static_cast<std::byte*>(calls[j].recv);
    }
    execute(plan->schedule, plan->peers, buffers);
  });
  // Average: all-reduce and reduce-scatter have `count` elements out.
  for (const FusedCall& c : calls)
    if (algo::reduces(c.coll) && c.op == tuttiAvg && c.count > 0)
      reduce::divide(c.recv, c.count, c.dtype, nranks_);
  return true;
}

}  // namespace tutti
