// The communicator's rank order (rings, and trees built over ring positions), from every
// rank's host and place. Pure: the same inputs give the same order on every rank.
//   - hosts in order of their lowest rank, each host's ranks contiguous (the ring crosses
//     each host boundary once);
//   - within a host, ranks by their device's position in the host's device ring (GPUs along
//     NVLink / PCIe switches, NUMA nodes of a socket together), ranks of one device adjacent,
//     then by rank; ranks of unknown place after the known ones, by rank;
//   - with several hosts, each host's part of the ring is cut where its two ends (the ranks
//     the ring enters and leaves the host through) are nearest the host's NIC, and walked so
//     that it starts at its nearer end (the host's leader in hierarchical algorithms).
#pragma once

#include <vector>

#include "comm/rank_place.h"

namespace tutti {

std::vector<int> ringOrderFromPlaces(const std::vector<int>& hostOf,
                                     const std::vector<RankPlace>& places);

}  // namespace tutti
