// The cost model on a topology: intra-host pairs of GPU ranks cost their link class
// (topo::pathBetween: NVLink, PCIe, SYS), reductions run at GPU speed, and the network is
// the NET path of the file's NICs. One function for tutti-sim and the communicator, so both
// rank algorithms with the same model (docs/tuning.md).
#pragma once

#include <functional>
#include <string>

#include "topology/paths.h"
#include "tuning/cost_model.h"

namespace tutti::tuning {

// Applies `t` to `m` for ranks whose devices devOf(rank) gives (DeviceRef::host = the rank's
// host; every host is assumed to have topology `t`). Only GPU devices change the intra-host
// links (CPU ranks keep the fitted shm model); returns a one-line description of what it set
// ("" when nothing).
std::string applyTopology(CostModel& m, const topo::Topology& t,
                          const std::function<topo::DeviceRef(int)>& devOf, int nranks);

}  // namespace tutti::tuning
