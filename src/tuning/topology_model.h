// The cost model on a topology: intra-host pairs of GPU ranks cost their link class
// (topo::pathBetween: NVLink, PCIe, SYS), reductions run at GPU speed; CPU ranks' pairs
// across NUMA nodes cost the inter-socket link; the network is the NET path of the NICs.
// One function for tutti-sim and the communicator, so both rank algorithms with the same
// model (docs/tuning.md).
#pragma once

#include <functional>
#include <string>

#include "topology/paths.h"
#include "tuning/cost_model.h"

namespace tutti::tuning {

// Applies `t` to `m` for ranks whose devices devOf(rank) gives (DeviceRef::host = the rank's
// host; every host is assumed to have topology `t`; all ranks are GPUs or all are CPU ranks
// on NUMA nodes). GPU pairs cost their path; CPU pairs on one NUMA node keep the fitted shm
// link and pairs across NUMA nodes are slowed to the inter-socket link where it is slower;
// the network is the NIC's path (for CPU ranks no faster than the fitted tcp link). Returns a
// one-line description of the intra-host model it set ("" when none).
std::string applyTopology(CostModel& m, const topo::Topology& t,
                          const std::function<topo::DeviceRef(int)>& devOf, int nranks);

}  // namespace tutti::tuning
