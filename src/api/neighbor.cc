// Neighbour all-reduce entry points: graph handles (built-in or user lists, checked on every
// rank after an all-gather) and tuttiNeighborAllReduce (argument checks, then the
// communicator or the open group).
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "algorithms/neighbor_graph.h"
#include "api_guard.h"
#include "arg_checks.h"
#include "comm_handle.h"
#include "common/dtype.h"
#include "group.h"
#include "issue.h"

struct tuttiGraph {
  uint64_t commSerial = 0;
  uint64_t id = 0;
  bool hierarchical = false;
  std::shared_ptr<const tutti::algo::NeighborGraph> graph;
  uint64_t calls = 0;  // issued tuttiNeighborAllReduce calls (the dynamic graph's step)
};

using tutti::api::guarded;
using tutti::api::ready;

namespace {

uint64_t nextGraphId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

void notInGroup(const char* fn) {
  if (tutti::api::groupDepth() > 0)
    tutti::fail(tuttiInvalidUsage, fn,
                " inside tuttiGroupStart/End: making a graph is a collective that runs at once; "
                "make it before the group");
}

// Every rank's row of `width` int64 values, all-gathered.
std::vector<int64_t> gatherRows(tutti::Communicator& c, const std::vector<int64_t>& mine) {
  std::vector<int64_t> all(mine.size() * static_cast<size_t>(c.size()));
  c.allGather(mine.data(), all.data(), mine.size(), tuttiInt64);
  return all;
}

tuttiGraph_t makeHandle(tuttiComm_t comm, tutti::algo::NeighborGraph g, bool hierarchical) {
  auto h = std::make_unique<tuttiGraph>();
  h->commSerial = comm->serial;
  h->id = nextGraphId();
  h->hierarchical = hierarchical;
  h->graph = std::make_shared<const tutti::algo::NeighborGraph>(std::move(g));
  return h.release();
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiGraphCreate(tuttiComm_t comm, tuttiGraphKind_t kind, int rows,
                                         int hierarchical, tuttiGraph_t* graph) {
  return guarded(comm, "tuttiGraphCreate", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(graph != nullptr, "graph is NULL");
    *graph = nullptr;
    notInGroup("tuttiGraphCreate");
    auto& c = ready(comm);
    const int k = tutti::api::rawEnum(kind);
    // Every rank must ask for the same graph: compared after an all-gather, so that a rank
    // with other arguments is named on every rank instead of hanging a later call.
    std::vector<int64_t> all = gatherRows(c, {k, rows, hierarchical != 0});
    for (int r = 0; r < c.size(); ++r)
      for (int f = 0; f < 3; ++f)
        TUTTI_CHECK_ARG(all[3 * r + f] == all[f], "tuttiGraphCreate: rank ", r, " passed (kind ",
                        all[3 * r], ", rows ", all[3 * r + 1], ", hierarchical ", all[3 * r + 2],
                        ") but rank 0 passed (kind ", all[0], ", rows ", all[1], ", hierarchical ",
                        all[2], "); every rank must pass the same");
    TUTTI_CHECK_ARG(k >= 0 && k < tuttiNumGraphKinds, "invalid graph kind ", k);
    const int nodes = hierarchical ? c.hostCount() : c.size();
    auto g =
        tutti::algo::NeighborGraph::builtin(static_cast<tutti::algo::GraphKind>(k), nodes, rows);
    *graph = makeHandle(comm, std::move(g), hierarchical != 0);
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiGraphCreateAdjacent(tuttiComm_t comm, int indegree, const int* sources,
                                                 const double* sourceWeights, double selfWeight,
                                                 int outdegree, const int* destinations,
                                                 tuttiGraph_t* graph) {
  return guarded(comm, "tuttiGraphCreateAdjacent", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(graph != nullptr, "graph is NULL");
    *graph = nullptr;
    notInGroup("tuttiGraphCreateAdjacent");
    auto& c = ready(comm);
    // A rank with bad pointers or degrees still takes part in the all-gathers (others would
    // wait for it): its row says so, and every rank fails naming it.
    std::string local;
    if (indegree < 0 || indegree > c.size()) local = "indegree out of range";
    if (outdegree < 0 || outdegree > c.size()) local = "outdegree out of range";
    if (local.empty() && indegree > 0 && sources == nullptr) local = "sources is NULL";
    if (local.empty() && outdegree > 0 && destinations == nullptr) local = "destinations is NULL";
    const bool bad = !local.empty();
    const int in = bad ? 0 : indegree, out = bad ? 0 : outdegree;
    // Row: bad, weighted, in, out, selfWeight bits, sources, weight bits, destinations.
    std::vector<int64_t> row = {bad, sourceWeights != nullptr, in, out, 0};
    std::memcpy(&row[4], &selfWeight, sizeof(double));
    for (int k = 0; k < in; ++k) row.push_back(sources[k]);
    for (int k = 0; k < in; ++k) {
      int64_t bits = 0;
      if (sourceWeights) std::memcpy(&bits, &sourceWeights[k], sizeof(double));
      row.push_back(bits);
    }
    for (int k = 0; k < out; ++k) row.push_back(destinations[k]);
    uint64_t width = row.size(), maxWidth = 0;
    c.allReduce(&width, &maxWidth, 1, tuttiUint64, tuttiMax);
    row.resize(maxWidth, 0);
    std::vector<int64_t> all = gatherRows(c, row);
    std::vector<tutti::algo::UserLists> lists(c.size());
    for (int r = 0; r < c.size(); ++r) {
      const int64_t* p = &all[static_cast<size_t>(r) * maxWidth];
      if (p[0])
        tutti::fail(tuttiInvalidArgument, "tuttiGraphCreateAdjacent: rank ", r,
                    " passed bad arguments",
                    r == c.rank() ? " (" + local + ")" : std::string(" (its error names them)"));
      tutti::algo::UserLists& l = lists[r];
      l.weighted = p[1] != 0;
      const int64_t rin = p[2], rout = p[3];
      std::memcpy(&l.selfWeight, &p[4], sizeof(double));
      for (int64_t k = 0; k < rin; ++k) l.sources.push_back(static_cast<int>(p[5 + k]));
      if (l.weighted)
        for (int64_t k = 0; k < rin; ++k) {
          double w;
          std::memcpy(&w, &p[5 + rin + k], sizeof(double));
          l.weights.push_back(w);
        }
      for (int64_t k = 0; k < rout; ++k)
        l.destinations.push_back(static_cast<int>(p[5 + 2 * rin + k]));
    }
    *graph = makeHandle(comm, tutti::algo::NeighborGraph::fromLists(std::move(lists)), false);
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiGraphDestroy(tuttiGraph_t graph) {
  delete graph;
  return tuttiSuccess;
}

TUTTI_API tuttiResult_t tuttiNeighborAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                               tuttiDataType_t datatype, tuttiGraph_t graph,
                                               tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiNeighborAllReduce", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(graph != nullptr, "graph is NULL");
    int dtype;
    std::memcpy(&dtype, &datatype, sizeof(dtype));
    TUTTI_CHECK_ARG(dtype == tuttiFloat32 || dtype == tuttiFloat64 || dtype == tuttiFloat16 ||
                        dtype == tuttiBfloat16,
                    "datatype ",
                    tutti::dtypeValid(dtype) ? tutti::dtypeName(datatype) : std::to_string(dtype),
                    " is not a floating type (float32, float64, float16, bfloat16)");
    TUTTI_CHECK_ARG(count == 0 || sendbuff != nullptr, "sendbuff is NULL with a non-zero count");
    TUTTI_CHECK_ARG(count == 0 || recvbuff != nullptr, "recvbuff is NULL with a non-zero count");
    TUTTI_CHECK_ARG(graph->commSerial == comm->serial,
                    "graph was made for another communicator (a graph serves the communicator "
                    "it was created on)");
    ready(comm);  // initialised, not failed
    const size_t bytes = tutti::api::bufferBytes("count", count, datatype);
    const uint64_t step = graph->calls++;
    std::shared_ptr<const tutti::algo::NeighborGraph> g = graph->graph;
    const bool hier = graph->hierarchical;
    const uint64_t id = graph->id;
    return tutti::api::issue(
        comm, "tuttiNeighborAllReduce", {count, datatype, tuttiNumOps},
        {sendbuff, bytes, recvbuff, bytes}, stream,
        [count, datatype, g, hier, id, step](tutti::Communicator& c, const void* send, void* recv) {
          c.neighborAllReduce(send, recv, count, datatype, *g, hier, id, step);
        });
  });
}

}  // extern "C"
