// Ring and tree construction over the topology's link classes.
//
// Ring measure (lexicographic, see docs/topology.md):
//   1. maximise the bottleneck: the smallest edge bandwidth on the ring;
//   2. minimise the number of slow edges (class SYS or NET);
//   3. minimise the number of socket (or host) changes along the ring;
//   4. maximise the total bandwidth of the ring's edges.
// bestRing is exact for up to 16 devices (Held-Karp over subsets for the best bottleneck
// threshold) and uses a grouped greedy + 2-opt heuristic beyond.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "topology/paths.h"

namespace tutti::topo {

struct RingScore {
  int64_t bottleneckMBps = 0;
  int slowEdges = 0;
  int socketChanges = 0;
  int64_t totalMBps = 0;
  bool betterThan(const RingScore& o) const;
  bool operator==(const RingScore& o) const = default;
};

// Score of the ring devs[order[0]] -> devs[order[1]] -> ... -> devs[order[0]].
RingScore scoreRing(const Topology& t, std::span<const DeviceRef> devs, std::span<const int> order);

// Order (indices into devs) of the best ring; order[0] == 0.
std::vector<int> bestRing(const Topology& t, std::span<const DeviceRef> devs);

// Binary tree over a ring order by recursive bisection: each subtree is a contiguous segment
// of the ring, so subtrees stay inside a socket / host when the ring does. Indices are
// positions into `devs` (the same indices as in `ringOrder`).
struct Tree {
  int root = -1;
  std::vector<int> parent;                 // -1 for the root
  std::vector<std::vector<int>> children;  // at most 2 each
  int depth = 0;                           // edges on the longest root-leaf path
};
Tree binaryTree(std::span<const int> ringOrder);

// Ring for ranks given only their host ids: ranks of one host are contiguous (in rank order),
// hosts in order of their first rank. Returns the ranks in ring order.
std::vector<int> hostRing(std::span<const std::string> hostOfRank);
std::vector<int> hostRing(std::span<const uint64_t> hostOfRank);

// Position of every GPU (kind kGpu) or every NUMA node (kCpu) of one host in bestRing over
// all of them: pos[index] (the communicator orders a host's ranks by it; tutti-sim too).
std::vector<int> devicePositions(const Topology& t, DevKind kind);

// The devices that `nranks` ranks would use with this topology on every host: GPUs first
// (rank r -> host r / G, GPU r % G), else CPU ranks spread over NUMA nodes.
std::vector<DeviceRef> devicesForRanks(const Topology& t, int nranks);

}  // namespace tutti::topo
