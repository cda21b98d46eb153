// The list of every builder with its metadata.
#include <array>
#include <string_view>

#include "builder.h"
#include "builders.h"
#include "interfaces/algorithm.h"

namespace tutti::algo {
namespace {

bool always(const CollArgs&) { return true; }
bool pow2Ranks(const CollArgs& a) { return patterns::isPow2(a.nranks); }
// Needs the shared window (shm, every rank on one host) big enough for one element per rank
// (reduce-scatter copies n blocks into it).
bool hasWindow(const CollArgs& a) {
  size_t need = dtypeSize(a.dtype) * (a.coll == Coll::kReduceScatter ? a.nranks : 1);
  return a.windowBytes >= need && a.windowBytes > 0;
}
// The line all-reduce: a window, and a buffer that fits a line slot.
bool lineSized(const CollArgs& a) {
  return hasWindow(a) && a.count * dtypeSize(a.dtype) <= exec::Schedule::kLineMaxBytes;
}
// Gather / scatter trees: up to 64 KiB in the root's buffer. Above that the store-and-forward
// rounds lost to the linear exchange in every measurement (docs/algorithms.md), which the cost
// model does not see yet (it prices each rank's copies, not the host's cores' total work).
constexpr size_t kRootedTreeMaxBytes = size_t{64} << 10;
bool smallRootedBuffer(const CollArgs& a) {
  const size_t es = dtypeSize(a.dtype), n = static_cast<size_t>(a.nranks);
  return a.count <= kRootedTreeMaxBytes / es / n;
}
bool multiHost(const CollArgs& a) {
  return static_cast<int>(a.hostOf.size()) == a.nranks && detail::numHosts(a) > 1;
}

using namespace detail;

const std::array kRegistry = {
    AlgorithmInfo{Coll::kAllReduce, "naive",
                  "every rank sends its buffer to every other and reduces in rank order", always,
                  allReduceNaive},
    AlgorithmInfo{Coll::kAllReduce, "ps",
                  "parameter server: reduce at rank 0 in rank order, then rank 0 sends to all",
                  always, allReducePs},
    AlgorithmInfo{Coll::kAllReduce, "ring",
                  "ring reduce-scatter + ring all-gather along the ring order", always,
                  allReduceRing},
    AlgorithmInfo{Coll::kAllReduce, "tree",
                  "pipelined binary tree: chunks reduced up, then broadcast down", always,
                  allReduceTree},
    AlgorithmInfo{Coll::kAllReduce, "dbtree",
                  "double binary tree: half of the buffer on each of two complementary trees",
                  always, allReduceDbtree},
    AlgorithmInfo{Coll::kAllReduce, "butterfly",
                  "recursive doubling, whole buffer per step (small messages)", always,
                  allReduceButterfly},
    AlgorithmInfo{Coll::kAllReduce, "rabenseifner",
                  "recursive halving reduce-scatter + recursive doubling all-gather", always,
                  allReduceRabenseifner},
    AlgorithmInfo{Coll::kAllReduce, "hier",
                  "hierarchical: intra-host reduce-scatter, inter-host ring, intra-host "
                  "all-gather (needs > 1 host)",
                  multiHost, allReduceHier},
    AlgorithmInfo{Coll::kAllReduce, "direct",
                  "shm only: reduce straight from every peer's shared window (one-shot up to "
                  "32 KiB, then two-shot reduce-scatter + all-gather)",
                  hasWindow, allReduceDirect},
    AlgorithmInfo{
        Coll::kAllReduce, "line",
        "shm only, up to 200 bytes: each rank writes its input and the call's tags into "
        "one cache line (up to 8 bytes) of its shared window, then reduces the peers' lines (the "
        "automatic choice at these sizes)",
        lineSized, allReduceLine},
    AlgorithmInfo{Coll::kAllGather, "ring", "ring all-gather along the ring order", always,
                  allGatherRing},
    AlgorithmInfo{Coll::kAllGather, "rd", "recursive doubling (power-of-two rank counts)",
                  pow2Ranks, allGatherRd},
    AlgorithmInfo{Coll::kAllGather, "bruck", "Bruck: ceil(log2 n) steps for any rank count", always,
                  allGatherBruck},
    AlgorithmInfo{Coll::kAllGather, "direct",
                  "shm only: copy every block straight from the peers' shared windows", hasWindow,
                  allGatherDirect},
    AlgorithmInfo{Coll::kAllGather, "hier",
                  "hierarchical: ring along each rail across hosts, then columns around each "
                  "host (needs > 1 host, equally many ranks on each)",
                  gridHosts, allGatherHier},
    AlgorithmInfo{Coll::kReduceScatter, "ring", "ring reduce-scatter along the ring order", always,
                  reduceScatterRing},
    AlgorithmInfo{Coll::kReduceScatter, "rhalving",
                  "recursive halving (non-power-of-two ranks folded first)", always,
                  reduceScatterRhalving},
    AlgorithmInfo{Coll::kReduceScatter, "direct",
                  "shm only: reduce the own block straight from every peer's shared window",
                  hasWindow, reduceScatterDirect},
    AlgorithmInfo{Coll::kReduceScatter, "hier",
                  "hierarchical: columns reduced around each host, then a ring along each rail "
                  "across hosts (needs > 1 host, equally many ranks on each)",
                  gridHosts, reduceScatterHier},
    AlgorithmInfo{Coll::kBroadcast, "chain", "pipelined chain from the root, in chunks", always,
                  broadcastChain},
    AlgorithmInfo{Coll::kBroadcast, "binomial", "binomial tree from the root", always,
                  broadcastBinomial},
    AlgorithmInfo{Coll::kReduce, "chain", "pipelined chain towards the root, in chunks", always,
                  reduceChain},
    AlgorithmInfo{Coll::kReduce, "binomial", "binomial tree towards the root", always,
                  reduceBinomial},
    AlgorithmInfo{Coll::kAllToAll, "linear",
                  "every block straight to its rank in one round (every peer at once; listed "
                  "first: it wins the cost model's ties with pairwise)",
                  always, allToAllLinear},
    AlgorithmInfo{Coll::kAllToAll, "pairwise", "n-1 rounds of pairwise exchange", always,
                  allToAllPairwise},
    AlgorithmInfo{Coll::kAllToAll, "hier",
                  "hierarchical: one packed message to each member of the host, then one to "
                  "each rail peer on the other hosts (needs > 1 host, equally many ranks on each)",
                  gridHosts, allToAllHier},
    AlgorithmInfo{Coll::kGather, "linear", "every rank sends its block straight to the root",
                  always, gatherLinear},
    AlgorithmInfo{Coll::kGather, "binomial",
                  "binomial tree towards the root, subtrees' blocks forwarded as one message "
                  "(root buffer up to 64 KiB)",
                  smallRootedBuffer, gatherBinomial},
    AlgorithmInfo{Coll::kScatter, "linear", "the root sends every block straight to its rank",
                  always, scatterLinear},
    AlgorithmInfo{Coll::kScatter, "binomial",
                  "binomial tree from the root, each subtree's blocks sent as one message (root "
                  "buffer up to 64 KiB)",
                  smallRootedBuffer, scatterBinomial},
    AlgorithmInfo{Coll::kAllGatherV, "linear",
                  "every rank sends its block straight to every other, in one round", always,
                  allGatherVLinear},
    AlgorithmInfo{Coll::kReduceScatterV, "linear",
                  "each block straight to its rank, reduced there in rank order", always,
                  reduceScatterVLinear},
    AlgorithmInfo{Coll::kGatherV, "linear", "every rank sends its block straight to the root",
                  always, gatherVLinear},
    AlgorithmInfo{Coll::kScatterV, "linear", "the root sends every block straight to its rank",
                  always, scatterVLinear},
    AlgorithmInfo{Coll::kAllToAllV, "linear", "every block straight to its rank in one round",
                  always, allToAllVLinear},
    AlgorithmInfo{Coll::kAllToAllV, "hier",
                  "hierarchical: one packed message to each member of the host, then one to "
                  "each rail peer on the other hosts (needs > 1 host, equally many ranks on each; "
                  "the host's members exchange their send counts first)",
                  gridHosts, allToAllVHier, true},
};

const std::array kNeighbor = {
    AlgorithmInfo{Coll::kNeighborAllReduce, "neighbor",
                  "weighted average with the graph's in-neighbours: one round of sends to "
                  "out-neighbours, then a fixed-order weighted sum",
                  always, neighborAllReduceFlat},
    AlgorithmInfo{Coll::kNeighborAllReduce, "neighbor_hier",
                  "exact average inside each host (ring reduce-scatter / all-gather), weighted "
                  "average between hosts over a graph of hosts (same ranks per host)",
                  always, neighborAllReduceHier},
};

}  // namespace

std::span<const AlgorithmInfo> neighborAlgorithms() { return kNeighbor; }

const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllReduce:
      return "allreduce";
    case Coll::kAllGather:
      return "allgather";
    case Coll::kReduceScatter:
      return "reducescatter";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kReduce:
      return "reduce";
    case Coll::kAllToAll:
      return "alltoall";
    case Coll::kGather:
      return "gather";
    case Coll::kScatter:
      return "scatter";
    case Coll::kAllGatherV:
      return "allgatherv";
    case Coll::kReduceScatterV:
      return "reducescatterv";
    case Coll::kGatherV:
      return "gatherv";
    case Coll::kScatterV:
      return "scatterv";
    case Coll::kAllToAllV:
      return "alltoallv";
    case Coll::kNeighborAllReduce:
      return "neighborallreduce";
  }
  return "?";
}

bool isUneven(Coll c) {
  return c == Coll::kAllGatherV || c == Coll::kReduceScatterV || c == Coll::kGatherV ||
         c == Coll::kScatterV || c == Coll::kAllToAllV;
}

Coll plainOf(Coll c) {
  switch (c) {
    case Coll::kAllGatherV:
      return Coll::kAllGather;
    case Coll::kReduceScatterV:
      return Coll::kReduceScatter;
    case Coll::kGatherV:
      return Coll::kGather;
    case Coll::kScatterV:
      return Coll::kScatter;
    case Coll::kAllToAllV:
      return Coll::kAllToAll;
    default:
      return c;
  }
}

bool reduces(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce ||
         c == Coll::kReduceScatterV;
}

bool blockPerRank(Coll c) {
  c = plainOf(c);
  return c == Coll::kAllGather || c == Coll::kReduceScatter || c == Coll::kAllToAll ||
         c == Coll::kGather || c == Coll::kScatter;
}

std::span<const AlgorithmInfo> registry() { return kRegistry; }

const AlgorithmInfo* find(Coll coll, std::string_view name) {
  for (const AlgorithmInfo& info : kRegistry)
    if (info.coll == coll && name == info.name) return &info;
  return nullptr;
}

std::vector<std::vector<int>> hierHostGroups(const CollArgs& a) { return detail::hostGroups(a); }

exec::Schedule hostSendCountsExchange(const CollArgs& a) {
  return detail::hostSendCountsExchange(a);
}

}  // namespace tutti::algo
