// The JSON document printed by `tutti-topo --json` and written by TUTTI_TOPO_DUMP_FILE=*.json
// (field list in docs/topology.md).
#pragma once

#include <string>

#include "topology/model.h"

namespace tutti::topo {

// ringRanks > 0 adds "ring" and "tree" for that many ranks.
std::string topologyJson(const Topology& t, int ringRanks = 0);

}  // namespace tutti::topo
