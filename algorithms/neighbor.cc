// Neighbour all-reduce (partial averaging over a graph, decentralized SGD):
//   x_i <- W_ii x_i + sum_{j in in(i)} W_ij x_j          (W = CollArgs::graph at graphStep)
// neighbor: round 0 sends the input to every out-neighbour and receives every in-neighbour's
// input into scratch; round 1 is one kMix op, self first, then in-neighbours by ascending
// rank (so the sum is the same bits on every run). Per rank: out-degree x M bytes sent,
// in-degree x M received, one round of messages.
// neighbor_hier: hosts (CollArgs::hostOf, in ring order as hostGroups gives them) are the
// graph's nodes; every host must have the same number L of ranks. Intra-host ring
// reduce-scatter (local position p then holds block (p+1)%L of the host sum), then the ranks
// at position p of neighbouring hosts exchange that block, mix it with weights W_hh'/L (the
// host average, then the graph), and an intra-host ring all-gather spreads the blocks.
// Per rank: 2(L-1)/L x M inside the host, out-degree x M/L between hosts.
#include <algorithm>

#include "algorithms/neighbor_graph.h"
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {
namespace {

void checkNeighborArgs(const CollArgs& a, int nodes, const char* what) {
  TUTTI_CHECK_ARG(a.graph != nullptr, "neighbor all-reduce: no graph");
  TUTTI_CHECK_ARG(a.graph->size() == nodes, "neighbor all-reduce: the graph has ", a.graph->size(),
                  " nodes but there are ", nodes, " ", what);
  TUTTI_CHECK_ARG(a.dtype == tuttiFloat32 || a.dtype == tuttiFloat64 || a.dtype == tuttiFloat16 ||
                      a.dtype == tuttiBfloat16,
                  "neighbor all-reduce: datatype ", dtypeName(a.dtype),
                  " is not a floating type (float32, float64, float16, bfloat16)");
}

// Exchanges [off, off+cnt) of src with the step's neighbours (ranks given by peerOf(node)) in
// round t, then mixes into dst in round t+1 with the weights scaled by `scale`.
void exchangeAndMix(Schedule& s, size_t t, const Ctx& c, const NeighborStep& st,
                    const std::function<int(int)>& peerOf, Slice src, Slice dst, double scale) {
  const size_t cnt = src.bytes / c.es;
  Round& ex = at(s, t);
  for (int j : st.out) send(ex, peerOf(j), src);
  exec::Mix m;
  m.srcs.push_back(src);
  m.weights.push_back(st.selfWeight * scale);
  for (size_t k = 0; k < st.in.size(); ++k) {
    Slice tmp = c.tmp(k * cnt, cnt);
    recv(ex, peerOf(st.in[k].rank), tmp);
    m.srcs.push_back(tmp);
    m.weights.push_back(st.in[k].weight * scale);
  }
  needScratch(s, st.in.size() * cnt * c.es);
  if (st.in.empty() && m.weights[0] == 1.0) {
    copy(at(s, t + 1), src, dst);
    return;
  }
  exec::Op op = s.mixOp(dst, std::move(m));
  at(s, t + 1).ops.push_back(op);
}

}  // namespace

Schedule neighborAllReduceFlat(const CollArgs& a) {
  checkNeighborArgs(a, a.nranks, "ranks");
  Schedule s = start(a, "neighbor");
  Ctx c(a);
  if (a.count == 0) return s;
  NeighborStep st = a.graph->at(c.r, a.graphStep);
  exchangeAndMix(
      s, 0, c, st, [](int j) { return j; }, c.in(0, a.count), c.out(0, a.count), 1.0);
  trim(s);
  return s;
}

Schedule neighborAllReduceHier(const CollArgs& a) {
  std::vector<std::vector<int>> hosts = hostGroups(a);
  const int nh = static_cast<int>(hosts.size());
  checkNeighborArgs(a, nh, "hosts");
  Schedule s = start(a, "neighbor_hier");
  Ctx c(a);
  int myHost = 0;
  while (std::find(hosts[myHost].begin(), hosts[myHost].end(), c.r) == hosts[myHost].end())
    ++myHost;
  const std::vector<int>& local = hosts[myHost];
  const int L = static_cast<int>(local.size());
  for (const auto& h : hosts)
    TUTTI_CHECK_ARG(static_cast<int>(h.size()) == L,
                    "neighbor_hier: hosts have different rank "
                    "counts (",
                    L, " and ", h.size(), "); every host needs the same number of ranks");
  if (a.count == 0) return s;
  const int lpos = static_cast<int>(std::find(local.begin(), local.end(), c.r) - local.begin());
  const size_t m = a.count;
  auto lblock = [&](int k) { return c.block(m, L, k); };
  // Phase 1: the host sum of block (lpos+1) % L lands in kOutput (L = 1: the input itself).
  ringReduceScatter(s, 0, c, local, lpos, 0, m, Buf::kInput);
  const size_t t = static_cast<size_t>(L - 1);
  const Range own = lblock((lpos + 1) % L);
  Slice src = L > 1 ? c.out(own) : c.in(own);
  // Phase 2: the block's host average mixed with the neighbouring hosts' (same position).
  NeighborStep st = a.graph->at(myHost, a.graphStep);
  exchangeAndMix(
      s, t, c, st, [&](int h) { return hosts[h][lpos]; }, src, c.out(own), 1.0 / L);
  // Phase 3: intra-host ring all-gather of the mixed blocks.
  ringAllGather(s, t + 1, local, lpos, 1, [&](int k) { return c.out(lblock(k)); });
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
