// The topology behind the rank places (rank_place.h), for the communicator's .cc files only
// (the public headers of comm do not expose topology types).
#pragma once

#include <optional>

#include "comm/rank_place.h"
#include "topology/model.h"
#include "topology/paths.h"

namespace tutti {

// The host topology describeLocalPlace() used (TUTTI_TOPO_FILE's or hwloc's, cached per
// process); nullptr when none could be had.
const topo::Topology* localTopology();

// The device a place names, on host `host`; nullopt when unknown.
std::optional<topo::DeviceRef> deviceOfPlace(const RankPlace& place, int host);

}  // namespace tutti
