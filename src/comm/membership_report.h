// What a communicator's Membership means for its collectives and links: the arguments every
// schedule is built from (rank, hosts, ring order), the TOPO log of the ranks' placement (rank
// 0: the ring with each hop's link class, the trees over it, hier's host groups; every rank:
// its place and ring neighbours) and the cost model of its links from the topology.
#pragma once

#include <memory>
#include <string>

#include "comm/membership.h"
#include "interfaces/algorithm.h"

namespace tutti {
namespace tuning {
struct CostModel;
}

// A collective's arguments with this rank, the rank count, the hosts (when more than one) and
// the ring order filled in: what every schedule of the communicator is built from.
algo::CollArgs placedArgs(const Membership& m);
// TOPO INFO lines (nothing unless TOPO logs at INFO); prefix names the communicator.
void logPlacement(const Membership& m, const std::string& prefix);
// The cost model on the communicator's links when every rank stands for a GPU or NUMA node of
// one topology (tuning/topology_model.h), as tutti-sim builds it; null: the fitted model.
std::unique_ptr<tuning::CostModel> topologyCostModel(const Membership& m);

}  // namespace tutti
