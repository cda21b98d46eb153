// Algorithm builders: from a collective's arguments, emit one rank's Schedule. Builders are
// pure functions; they never touch transports. The registry lists every builder with its
// metadata; the tuner (src/tuning) picks among the applicable ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "exec/schedule.h"
#include "tutti/tutti.h"

namespace tutti::algo {

enum class Coll {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kGather,
  kScatter,
  kAllGatherV,
  kReduceScatterV,
  kGatherV,
  kScatterV,
  kAllToAllV,
  kNeighborAllReduce,  // neighborAlgorithms() only: registry() holds none
};
// The collectives of registry() (0 .. kNumColls-1); kNeighborAllReduce follows them.
constexpr int kNumColls = 13;
const char* collName(Coll c);  // "allreduce", "allgather", "reducescatter", "broadcast", ...
// allgatherv, reducescatterv, gatherv, scatterv, alltoallv: blocks of their own size per rank.
bool isUneven(Coll c);
// The collective whose layout a V-collective has with uniform blocks (allgatherv ->
// allgather, ...); any other collective itself.
Coll plainOf(Coll c);
// Takes a reduction op: all-reduce, reduce-scatter(-v), reduce.
bool reduces(Coll c);
// One block per rank in one buffer (all-gather, reduce-scatter, all-to-all, gather, scatter and
// their V forms): count is a rank's block, the buffer nranks blocks.
bool blockPerRank(Coll c);

class NeighborGraph;  // neighbor_graph.h

struct CollArgs {
  Coll coll = Coll::kAllReduce;
  // Elements: all-reduce/broadcast/reduce: the buffer; all-gather: per-rank send count;
  // reduce-scatter: per-rank receive count; all-to-all: per-peer count; gather / scatter: the
  // block of one rank (the root's buffer holds nranks blocks); the V-collectives: the block of
  // every rank when `counts` is empty (the uniform case the simulator and tuner use), else the
  // total of `counts` (all-to-all-v: 0), which only the call tag reads.
  size_t count = 0;
  tuttiDataType_t dtype = tuttiFloat32;
  tuttiRedOp_t op = tuttiSum;  // never tuttiAvg here
  int root = 0;
  int rank = 0;
  int nranks = 1;
  bool deterministic = false;  // reduce every element in rank order 0..n-1
  // All-to-all: the input and output are one buffer (the builder stages the input in scratch
  // before blocks arrive over it). The other collectives' in-place layouts need no flag.
  bool inPlace = false;
  // The order ranks should follow around a ring (topology-aware); empty = 0..n-1.
  std::vector<int> ringOrder;
  // Host index of each rank (for hierarchical algorithms); empty = all on one host.
  std::vector<int> hostOf;
  // Bytes of each rank's shared window (transport::Window, every rank on one host over shm);
  // 0 = none, and algorithms that need one (direct) do not apply.
  size_t windowBytes = 0;
  // Neighbour all-reduce: the graph (over ranks; over hosts for neighbor_hier) and the call's
  // step (the dynamic graphs' call counter).
  const NeighborGraph* graph = nullptr;
  uint64_t graphStep = 0;
  // The V-collectives' blocks in elements, nranks entries each (empty: `count` each, at r *
  // count). counts/displs: the buffer with a block per rank (all-gather-v and gather-v: the
  // output; reduce-scatter-v and scatter-v: the input; all-to-all-v: the output, the block from
  // each peer); sendCounts/sendDispls: all-to-all-v's input, the block to each peer. A rank's
  // own output of reduce-scatter-v / scatter-v (its input of gather-v) is counts[rank]
  // elements at offset 0.
  std::vector<size_t> counts, displs, sendCounts, sendDispls;
  // All-to-all-v with an algorithm that needsHostSendCounts: the sendCounts of every member of
  // this rank's host, member p's at [p * nranks, (p + 1) * nranks), members in the order of
  // hierHostGroups (what hostSendCountsExchange gathers). Empty with no counts at all (the
  // uniform case).
  std::vector<size_t> hostSendCounts;
};

struct AlgorithmInfo {
  Coll coll;
  const char* name;         // "ring", "tree", ... (selected by TUTTI_ALGO=allreduce:ring)
  const char* description;  // one line, printed by tutti-info
  bool (*applicable)(const CollArgs&);
  exec::Schedule (*build)(const CollArgs&);
  // The builder needs CollArgs::hostSendCounts (all-to-all-v across hosts): the caller runs
  // hostSendCountsExchange inside the call first.
  bool needsHostSendCounts = false;
};

// Every builder compiled in, except the neighbour all-reduce's (they need a graph).
std::span<const AlgorithmInfo> registry();
// The neighbour all-reduce builders: "neighbor" (graph over ranks) and "neighbor_hier" (exact
// average inside each host, graph over hosts).
std::span<const AlgorithmInfo> neighborAlgorithms();
// nullptr when no algorithm of that name exists for the collective.
const AlgorithmInfo* find(Coll coll, std::string_view name);
// The host groups the hierarchical algorithms (hier, neighbor_hier) build for a's hostOf and
// ring order: each host's ranks in ring order, the host's leader first (for introspection).
std::vector<std::vector<int>> hierHostGroups(const CollArgs& a);
// The exchange that fills CollArgs::hostSendCounts: every rank sends its sendCounts (nranks
// uint64 values, the input) to every other member of its host and receives theirs; member p's
// land at [p * nranks, (p + 1) * nranks) of the output. Needs a's ranks on a grid of hosts.
exec::Schedule hostSendCountsExchange(const CollArgs& a);

}  // namespace tutti::algo
