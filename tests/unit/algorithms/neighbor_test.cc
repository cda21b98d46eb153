// Neighbour all-reduce graphs and schedules: W of every built-in graph equals the matrix
// built here from the graphs' definitions (harness/mixing_reference.h) and is doubly
// stochastic; the one-peer exponential graph reaches the exact average after log2(n) steps;
// user lists are validated with clear errors; the neighbor and neighbor_hier schedules run
// in the simulator give, bit for bit, the reference sum for every graph at 1-9 ranks, every
// step of the period, all four float types, in place and not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "interfaces/algorithm.h"
#include "algorithms/neighbor_graph.h"
#include "common/dtype.h"
#include "common/error.h"
#include "exec/simulator.h"
#include "harness/mixing_reference.h"

namespace tutti::algo {
namespace {

using test::RefGraph;

struct Kind {
  GraphKind kind;
  RefGraph ref;
};
const Kind kKinds[] = {{GraphKind::kRing, RefGraph::kRing},
                       {GraphKind::kTorus2D, RefGraph::kTorus},
                       {GraphKind::kGrid2D, RefGraph::kGrid},
                       {GraphKind::kHypercube, RefGraph::kHypercube},
                       {GraphKind::kExponential, RefGraph::kExponential},
                       {GraphKind::kOnePeerExponential, RefGraph::kOnePeer}};

bool applies(GraphKind k, int n) { return k != GraphKind::kHypercube || (n & (n - 1)) == 0; }

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NeighborGraph, MatricesMatchDefinitionsAndAreDoublyStochastic) {
  for (const Kind& k : kKinds)
    for (int n = 1; n <= 17; ++n) {
      if (!applies(k.kind, n)) continue;
      NeighborGraph g = NeighborGraph::builtin(k.kind, n);
      EXPECT_EQ(g.period(), k.kind == GraphKind::kOnePeerExponential ? test::refPeriod(n) : 1);
      for (uint64_t step = 0; step < static_cast<uint64_t>(g.period()) + 1; ++step) {
        std::vector<double> w = g.matrix(step);
        std::vector<double> want = test::refMatrix(k.ref, n, step);
        SCOPED_TRACE(g.describe() + " step " + std::to_string(step));
        for (int i = 0; i < n * n; ++i) ASSERT_NEAR(w[i], want[i], 1e-15) << "entry " << i;
        for (int i = 0; i < n; ++i) {
          double row = 0, col = 0;
          for (int j = 0; j < n; ++j) {
            EXPECT_GE(w[i * n + j], 0.0);
            row += w[i * n + j];
            col += w[j * n + i];
          }
          EXPECT_NEAR(row, 1.0, 1e-12) << "row " << i;
          EXPECT_NEAR(col, 1.0, 1e-12) << "column " << i;
        }
      }
    }
}

TEST(NeighborGraph, ExplicitTorusAndGridShapes) {
  for (auto [n, rows] : {std::pair{6, 2}, {6, 3}, {8, 4}, {12, 3}, {5, 5}, {5, 1}}) {
    for (auto [kind, ref] : {std::pair{GraphKind::kTorus2D, RefGraph::kTorus},
                             std::pair{GraphKind::kGrid2D, RefGraph::kGrid}}) {
      NeighborGraph g = NeighborGraph::builtin(kind, n, rows);
      std::vector<double> w = g.matrix(0), want = test::refMatrix(ref, n, 0, rows);
      for (int i = 0; i < n * n; ++i) ASSERT_NEAR(w[i], want[i], 1e-15) << g.describe();
    }
  }
}

// The product W(log2 n - 1) ... W(1) W(0) of the one-peer exponential graph is J/n.
TEST(NeighborGraph, OnePeerExponentialExactAverageAfterLog2Steps) {
  for (int n = 1; n <= 64; n *= 2) {
    NeighborGraph g = NeighborGraph::builtin(GraphKind::kOnePeerExponential, n);
    std::vector<double> p(n * n, 0.0);
    for (int i = 0; i < n; ++i) p[i * n + i] = 1.0;
    for (int t = 0; t < g.period() && n > 1; ++t) {
      std::vector<double> w = g.matrix(t), q(n * n, 0.0);
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k)
          for (int j = 0; j < n; ++j) q[i * n + j] += w[i * n + k] * p[k * n + j];
      p = q;
    }
    for (int i = 0; i < n * n; ++i) ASSERT_EQ(p[i], 1.0 / n) << "n " << n << " entry " << i;
    // One step fewer is not the average (n >= 4).
    if (n >= 4) {
      std::vector<double> w = g.matrix(0);
      EXPECT_NE(w[0], 1.0 / n);
    }
  }
}

TEST(NeighborGraph, BadArgumentsAreClearErrors) {
  EXPECT_NE(errorOf([] {
              NeighborGraph::builtin(GraphKind::kHypercube, 6);
            }).find("hypercube needs a power-of-two rank count (got 6)"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              NeighborGraph::builtin(GraphKind::kTorus2D, 6, 4);
            }).find("rows = 4 does not divide 6 ranks"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              NeighborGraph::builtin(GraphKind::kRing, 6, 2);
            }).find("only 2-D torus and grid take rows"),
            std::string::npos);
  auto lists = [](std::vector<std::vector<int>> in, std::vector<std::vector<int>> out) {
    std::vector<UserLists> l(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      l[i].sources = in[i];
      l[i].destinations = out[i];
    }
    return l;
  };
  EXPECT_NE(errorOf([&] {
              NeighborGraph::fromLists(lists({{1}, {0}, {5}}, {{1}, {0}, {}}));
            }).find("rank 2: sources[0] = 5 is out of range [0, 3)"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              NeighborGraph::fromLists(lists({{1}, {1}}, {{1}, {0}}));
            }).find("rank 1: sources[0] is the rank itself"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              NeighborGraph::fromLists(lists({{1, 1}, {0}}, {{1}, {0}}));
            }).find("rank 0: sources lists rank 1 twice"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              NeighborGraph::fromLists(lists({{1}, {}}, {{1}, {0}}));
            }).find("rank 0 lists rank 1 as a destination but rank 1 does not list 0 as a source"),
            std::string::npos);
  // Directed cycle without weights: Metropolis-Hastings needs an undirected graph.
  EXPECT_NE(errorOf([&] {
              NeighborGraph::fromLists(lists({{2}, {0}, {1}}, {{1}, {2}, {0}}));
            }).find("need an undirected graph"),
            std::string::npos);
  std::vector<UserLists> w = lists({{2}, {0}, {1}}, {{1}, {2}, {0}});
  for (auto& l : w) {
    l.weighted = true;
    l.weights = {0.25};
    l.selfWeight = 0.75;
  }
  EXPECT_EQ(errorOf([&] { NeighborGraph::fromLists(w); }), "");
  w[1].selfWeight = 0.5;
  EXPECT_NE(errorOf([&] {
              NeighborGraph::fromLists(w);
            }).find("rank 1: selfWeight + source weights = 0.75"),
            std::string::npos);
  w[1].weighted = false;
  EXPECT_NE(errorOf([&] {
              NeighborGraph::fromLists(w);
            }).find("rank 1 gives no weights but other ranks do"),
            std::string::npos);
}

// An irregular undirected user graph (a star with a tail) gets Metropolis-Hastings weights:
// symmetric, doubly stochastic.
TEST(NeighborGraph, UserGraphMetropolisHastings) {
  // 0 - 1, 0 - 2, 0 - 3, 3 - 4
  std::vector<std::vector<int>> adj = {{1, 2, 3}, {0}, {0}, {0, 4}, {3}};
  std::vector<UserLists> l(5);
  for (int i = 0; i < 5; ++i) l[i].sources = l[i].destinations = adj[i];
  NeighborGraph g = NeighborGraph::fromLists(l);
  std::vector<double> w = g.matrix(0);
  EXPECT_DOUBLE_EQ(w[0 * 5 + 1], 0.25);  // 1 / (1 + max(3, 1))
  EXPECT_DOUBLE_EQ(w[3 * 5 + 4], 1.0 / 3);
  EXPECT_DOUBLE_EQ(w[4 * 5 + 4], 2.0 / 3);
  for (int i = 0; i < 5; ++i) {
    double row = 0, col = 0;
    for (int j = 0; j < 5; ++j) {
      EXPECT_DOUBLE_EQ(w[i * 5 + j], w[j * 5 + i]);
      row += w[i * 5 + j];
      col += w[j * 5 + i];
    }
    EXPECT_NEAR(row, 1.0, 1e-15);
    EXPECT_NEAR(col, 1.0, 1e-15);
  }
}

// ---- schedules in the simulator ----------------------------------------------------------

double valueOf(int rank, size_t e, uint64_t call) {
  uint64_t h = (rank + 1) * 0x9e3779b97f4a7c15ull ^ (e + 7) * 0xbf58476d1ce4e5b9ull ^
               (call + 3) * 0x94d049bb133111ebull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return static_cast<double>(static_cast<int>(h % 2001) - 1000) / 64.0;
}

void store(std::byte* p, size_t e, tuttiDataType_t t, double v) {
  switch (t) {
    case tuttiFloat32: {
      float f = static_cast<float>(v);
      std::memcpy(p + 4 * e, &f, 4);
      break;
    }
    case tuttiFloat64:
      std::memcpy(p + 8 * e, &v, 8);
      break;
    case tuttiFloat16: {
      uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(p + 2 * e, &h, 2);
      break;
    }
    default: {
      uint16_t h = floatToBf16(static_cast<float>(v));
      std::memcpy(p + 2 * e, &h, 2);
      break;
    }
  }
}
double load(const std::byte* p, size_t e, tuttiDataType_t t) {
  switch (t) {
    case tuttiFloat32: {
      float f;
      std::memcpy(&f, p + 4 * e, 4);
      return f;
    }
    case tuttiFloat64: {
      double d;
      std::memcpy(&d, p + 8 * e, 8);
      return d;
    }
    case tuttiFloat16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * e, 2);
      return halfToFloat(h);
    }
    default: {
      uint16_t h;
      std::memcpy(&h, p + 2 * e, 2);
      return bf16ToFloat(h);
    }
  }
}

// Runs the algorithm on every rank in the simulator (inputs distinct per rank, element and
// call) and compares each output element's bits with the reference over W (nodes: ranks, or
// hosts of `perHost` consecutive ranks for neighbor_hier).
void checkSchedules(const AlgorithmInfo& info, const NeighborGraph& g, const std::vector<double>& w,
                    int n, int perHost, uint64_t step, size_t count, tuttiDataType_t t,
                    bool inPlace) {
  const size_t es = dtypeSize(t);
  std::vector<std::vector<std::byte>> in(n), out(n);
  std::vector<exec::Schedule> scheds;
  std::vector<exec::SimRankBuffers> bufs(n);
  for (int r = 0; r < n; ++r) {
    in[r].resize(count * es);
    out[r].assign(count * es, std::byte{0x5a});
    for (size_t e = 0; e < count; ++e) store(in[r].data(), e, t, valueOf(r, e, step));
    CollArgs a;
    a.coll = Coll::kNeighborAllReduce;
    a.count = count;
    a.dtype = t;
    a.rank = r;
    a.nranks = n;
    a.graph = &g;
    a.graphStep = step;
    if (perHost < n)
      for (int k = 0; k < n; ++k) a.hostOf.push_back(k / perHost);
    scheds.push_back(info.build(a));
    bufs[r] = {in[r].data(), count * es, inPlace ? in[r].data() : out[r].data(), count * es};
  }
  std::vector<std::vector<std::byte>> inputs = in;  // before in-place overwrites
  exec::simulate(scheds, bufs);
  const int nodes = n / perHost;
  for (int r = 0; r < n; ++r) {
    const std::byte* res = inPlace ? in[r].data() : out[r].data();
    for (size_t e = 0; e < count; ++e) {
      double got = load(res, e, t), want;
      if (perHost == 1) {
        if (t == tuttiFloat64) {
          std::vector<double> x(n);
          for (int j = 0; j < n; ++j) x[j] = load(inputs[j].data(), e, t);
          want = test::refMixElement<double>(w, n, r, x);
        } else {
          std::vector<float> x(n);
          for (int j = 0; j < n; ++j) x[j] = static_cast<float>(load(inputs[j].data(), e, t));
          want = test::refMixElement<float>(w, n, r, x);
        }
        std::vector<std::byte> b(es);
        store(b.data(), 0, t, want);  // rounded to the type once
        ASSERT_EQ(std::memcmp(res + e * es, b.data(), es), 0)
            << info.name << " " << g.describe() << " rank " << r << " element " << e << " got "
            << got << " want " << load(b.data(), 0, t) << " step " << step << " type "
            << dtypeName(t) << (inPlace ? " in place" : "");
      } else {
        // Hierarchical: host averages mixed over W; summed in another order, so compared
        // to float64 within the type's rounding.
        double exact = 0;
        const int h = r / perHost;
        for (int k = 0; k < nodes; ++k) {
          double avg = 0;
          for (int m = 0; m < perHost; ++m) avg += load(inputs[k * perHost + m].data(), e, t);
          exact += w[h * nodes + k] * avg / perHost;
        }
        double tol = t == tuttiFloat64 ? 1e-12 : t == tuttiFloat32 ? 1e-4 : 0.2;
        ASSERT_NEAR(got, exact, tol) << info.name << " " << g.describe() << " rank " << r
                                     << " element " << e << " type " << dtypeName(t);
      }
    }
  }
}

TEST(NeighborSchedule, EveryGraphMatchesReferenceAt1To9Ranks) {
  const AlgorithmInfo& flat = neighborAlgorithms()[0];
  int cases = 0;
  for (const Kind& k : kKinds)
    for (int n = 1; n <= 9; ++n) {
      if (!applies(k.kind, n)) continue;
      NeighborGraph g = NeighborGraph::builtin(k.kind, n);
      for (uint64_t step = 0; step < static_cast<uint64_t>(g.period()); ++step) {
        std::vector<double> w = test::refMatrix(k.ref, n, step);
        for (tuttiDataType_t t : {tuttiFloat32, tuttiFloat64, tuttiFloat16, tuttiBfloat16}) {
          const bool inPlace = (n + step + t) % 2 == 1;
          checkSchedules(flat, g, w, n, 1, step, 37 + n, t, inPlace);
          checkSchedules(flat, g, w, n, 1, step, 1, t, !inPlace);
          ++cases;
        }
      }
    }
  EXPECT_GT(cases, 150);
}

TEST(NeighborSchedule, HierarchicalAveragesHostsThenMixes) {
  const AlgorithmInfo& hier = neighborAlgorithms()[1];
  for (auto [hosts, perHost] : {std::pair{1, 3}, {2, 2}, {3, 2}, {4, 3}, {5, 1}, {8, 2}}) {
    const int n = hosts * perHost;
    for (const Kind& k : kKinds) {
      if (!applies(k.kind, hosts)) continue;
      NeighborGraph g = NeighborGraph::builtin(k.kind, hosts);
      for (uint64_t step = 0; step < static_cast<uint64_t>(g.period()); ++step)
        for (tuttiDataType_t t : {tuttiFloat32, tuttiFloat64, tuttiBfloat16}) {
          std::vector<double> w = test::refMatrix(k.ref, hosts, step);
          checkSchedules(hier, g, w, n, perHost, step, 29 + n, t, (hosts + step) % 2 == 0);
          // Fewer elements than ranks per host: some blocks are empty.
          checkSchedules(hier, g, w, n, perHost, step, 1 + step % 2, t, step % 2 == 0);
        }
    }
  }
}

TEST(NeighborSchedule, BadArguments) {
  NeighborGraph g = NeighborGraph::builtin(GraphKind::kRing, 4);
  CollArgs a;
  a.coll = Coll::kNeighborAllReduce;
  a.count = 4;
  a.nranks = 4;
  a.graph = &g;
  a.dtype = tuttiInt32;
  EXPECT_NE(errorOf([&] { neighborAlgorithms()[0].build(a); }).find("not a floating type"),
            std::string::npos);
  a.dtype = tuttiFloat32;
  a.nranks = 5;
  EXPECT_NE(errorOf([&] {
              neighborAlgorithms()[0].build(a);
            }).find("the graph has 4 nodes but there are 5 ranks"),
            std::string::npos);
  a.graph = nullptr;
  EXPECT_NE(errorOf([&] { neighborAlgorithms()[0].build(a); }).find("no graph"), std::string::npos);
}

}  // namespace
}  // namespace tutti::algo
