// Communicator::neighborAllReduce: a neighbour all-reduce schedule (algorithms/neighbor.cc),
// cached per graph, step and size, run by the executor like every collective.
#include <algorithm>
#include <string>

#include "algorithms/neighbor_graph.h"
#include "comm/communicator.h"
#include "comm/planner.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti {

int Communicator::hostCount() const { return membership_->hosts; }

void Communicator::neighborAllReduce(const void* send, void* recv, size_t count,
                                     tuttiDataType_t dtype, const algo::NeighborGraph& graph,
                                     bool hierarchical, uint64_t graphId, uint64_t step) {
  log::setThreadRank(rank_);
  algo::CollArgs a = baseArgs(algo::Coll::kNeighborAllReduce, count, dtype);
  a.graph = &graph;
  a.graphStep = step % static_cast<uint64_t>(graph.period());
  const algo::AlgorithmInfo& info = algo::neighborAlgorithms()[hierarchical ? 1 : 0];
  const Planner::Planned& planned = planner_->neighborPlan(info, a, graphId);
  CallTag tag = calls_.next(a, tuttiSum);
  calls_.setLastAlgorithm(info.name);
  std::byte* buffers[3] = {const_cast<std::byte*>(static_cast<const std::byte*>(send)),
                           static_cast<std::byte*>(recv),
                           calls_.scratch(planned.schedule.scratchBytes)};
  runTaggedCall(tag, info.name, [&] { execute(planned.schedule, planned.peers, buffers); });
}

}  // namespace tutti
