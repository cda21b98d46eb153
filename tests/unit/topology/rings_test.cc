// Rings: bestRing matches brute force on the stated measure for 8 GPUs of every file, crosses
// sockets exactly twice on two-socket machines, keeps NVLink pairs adjacent; trees; host rings.
#include "topology/rings.h"

#include "tutti/config.h"

// hwloc files need hwloc: skipped (not failed) in a build without it.
#define TUTTI_SKIP_WITHOUT_HWLOC(file)                                   \
  do {                                                                   \
    if (!TUTTI_HAVE_HWLOC && std::string(file).rfind("hwloc", 0) == 0) { \
      GTEST_SKIP() << "built without hwloc";                             \
    }                                                                    \
  } while (0)

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>

#include "topology/load.h"

namespace topo = tutti::topo;

namespace {

const char* kFiles[] = {
    "hwloc1_chimera-workstation_GTX1070+RadeonVega.xml",
    "hwloc1_rzmanta-power8_4xP100_cx4.xml",
    "hwloc2_aws-g4dn-metal_8xT4_efa.xml",
    "hwloc2_corona-amd_8xRadeonProVII_cx6.xml",
    "hwloc2_dgx2h_16xV100_nvswitch.xml",
    "hwloc2_hp-sl390s_3xM2070_mlx4-qdr.xml",
    "hwloc2_lassen-ac922_4xV100_cx5.xml",
    "hwloc2_pascal_2xP100-pcie_cx5.xml",
    "hwloc2_power8-minsky_4xP100_nvlink.xml",
    "nccl_8xRTX3090_pcie_1xcx6.xml",
    "nccl_aws-p4d_8xA100_4xefa_static.xml",
    "nccl_azure-ndv2_8xV100_1xib_partial.xml",
    "nccl_azure-ndv4_8xA100_8xib_partial.xml",
    "nccl_hgx-a100_8xA100-80G_6nvswitch_5xcx6dx.xml",
    "nccl_oci-bm-gpu-h100_8xH100_8xcx7-dualport.xml",
};

topo::Topology load(const std::string& f) {
  return topo::loadTopologyFile(std::string(TUTTI_TOPO_DATA_DIR) + "/" + f);
}

std::vector<topo::DeviceRef> gpus(const topo::Topology& t, size_t max, size_t step = 1) {
  std::vector<topo::DeviceRef> d;
  for (size_t i = 0; i < t.gpus.size() && d.size() < max; i += step) {
    d.push_back({0, topo::DevKind::kGpu, static_cast<int>(i)});
  }
  return d;
}

// The measure, computed here independently of rings.cc from pathBetween.
struct Matrix {
  int n;
  std::vector<int64_t> bw;
  std::vector<int> slow, sock;
};

Matrix matrix(const topo::Topology& t, const std::vector<topo::DeviceRef>& d) {
  Matrix m{static_cast<int>(d.size()), {}, {}, {}};
  for (int i = 0; i < m.n; ++i) {
    for (int j = 0; j < m.n; ++j) {
      topo::Path p = topo::pathBetween(t, d[i], d[j]);
      m.bw.push_back(std::llround(p.bandwidthGBps * 1000.0));
      m.slow.push_back(p.cls == topo::LinkClass::kSYS || p.cls == topo::LinkClass::kNET);
      auto sock = [&](topo::DeviceRef x) {
        return t.socketOfNuma(t.numaOfPci(t.gpus[x.index].pci));
      };
      m.sock.push_back(d[i].host != d[j].host || sock(d[i]) != sock(d[j]));
    }
  }
  return m;
}

topo::RingScore score(const Matrix& m, const std::vector<int>& r) {
  topo::RingScore s;
  s.bottleneckMBps = INT64_MAX;
  int edges = m.n == 2 ? 1 : m.n;
  for (int k = 0; k < edges; ++k) {
    int a = r[k], b = r[(k + 1) % m.n];
    s.bottleneckMBps = std::min(s.bottleneckMBps, m.bw[a * m.n + b]);
    s.slowEdges += m.slow[a * m.n + b];
    s.socketChanges += m.sock[a * m.n + b];
    s.totalMBps += m.bw[a * m.n + b];
  }
  return s;
}

topo::RingScore bruteForce(const Matrix& m) {
  std::vector<int> perm(m.n);
  std::iota(perm.begin(), perm.end(), 0);
  topo::RingScore best = score(m, perm);
  while (std::next_permutation(perm.begin() + 1, perm.end())) {
    topo::RingScore s = score(m, perm);
    if (s.betterThan(best)) best = s;
  }
  return best;
}

int socketChanges(const topo::Topology& t, const std::vector<topo::DeviceRef>& d,
                  const std::vector<int>& ring) {
  int n = 0;
  for (size_t k = 0; k < ring.size(); ++k) {
    int a = t.socketOfNuma(t.numaOfPci(t.gpus[d[ring[k]].index].pci));
    int b = t.socketOfNuma(t.numaOfPci(t.gpus[d[ring[(k + 1) % ring.size()]].index].pci));
    n += a != b;
  }
  return n;
}

void expectPermutation(const std::vector<int>& ring, size_t n) {
  ASSERT_EQ(ring.size(), n);
  std::set<int> s(ring.begin(), ring.end());
  EXPECT_EQ(s.size(), n);
  EXPECT_EQ(*s.begin(), 0);
  EXPECT_EQ(*s.rbegin(), static_cast<int>(n) - 1);
  EXPECT_EQ(ring[0], 0);
}

class RingFiles : public ::testing::TestWithParam<const char*> {};

TEST_P(RingFiles, OptimalAgainstBruteForceUpTo8Gpus) {
  TUTTI_SKIP_WITHOUT_HWLOC(GetParam());
  topo::Topology t = load(GetParam());
  // Up to 8 GPUs; on the 16-GPU DGX-2 take every other GPU so both baseboards appear.
  auto d = gpus(t, 8, t.gpus.size() > 8 ? 2 : 1);
  if (d.size() < 2) GTEST_SKIP() << "fewer than 2 GPUs";
  auto ring = topo::bestRing(t, d);
  expectPermutation(ring, d.size());
  Matrix m = matrix(t, d);
  topo::RingScore got = score(m, ring);
  topo::RingScore want = bruteForce(m);
  EXPECT_EQ(got, topo::scoreRing(t, d, ring));
  EXPECT_EQ(got, want) << "bottleneck " << got.bottleneckMBps << " vs " << want.bottleneckMBps
                       << ", slow " << got.slowEdges << " vs " << want.slowEdges << ", sockets "
                       << got.socketChanges << " vs " << want.socketChanges << ", total "
                       << got.totalMBps << " vs " << want.totalMBps;
}

TEST_P(RingFiles, TwoSocketRingCrossesExactlyTwice) {
  TUTTI_SKIP_WITHOUT_HWLOC(GetParam());
  topo::Topology t = load(GetParam());
  auto d = gpus(t, t.gpus.size());
  std::set<int> sockets;
  for (const auto& x : d) sockets.insert(t.socketOfNuma(t.numaOfPci(t.gpus[x.index].pci)));
  if (sockets.size() != 2) GTEST_SKIP() << "GPUs on " << sockets.size() << " socket(s)";
  auto ring = topo::bestRing(t, d);
  expectPermutation(ring, d.size());
  EXPECT_EQ(socketChanges(t, d, ring), 2);
}

INSTANTIATE_TEST_SUITE_P(Files, RingFiles, ::testing::ValuesIn(kFiles), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
});

TEST(Rings, NvlinkPairsAdjacent) {
  TUTTI_SKIP_WITHOUT_HWLOC("hwloc2_power8-minsky_4xP100_nvlink.xml");
  topo::Topology t = load("hwloc2_power8-minsky_4xP100_nvlink.xml");
  auto d = gpus(t, 4);
  auto ring = topo::bestRing(t, d);
  auto adjacent = [&](int a, int b) {
    for (size_t k = 0; k < ring.size(); ++k) {
      int x = ring[k], y = ring[(k + 1) % ring.size()];
      if ((x == a && y == b) || (x == b && y == a)) return true;
    }
    return false;
  };
  EXPECT_TRUE(adjacent(0, 1));
  EXPECT_TRUE(adjacent(2, 3));
}

TEST(Rings, Dgx2SixteenGpusExact) {
  TUTTI_SKIP_WITHOUT_HWLOC("hwloc2_dgx2h_16xV100_nvswitch.xml");
  topo::Topology t = load("hwloc2_dgx2h_16xV100_nvswitch.xml");
  auto d = gpus(t, 16);
  auto ring = topo::bestRing(t, d);
  expectPermutation(ring, 16);
  EXPECT_EQ(socketChanges(t, d, ring), 2);
  topo::RingScore s = topo::scoreRing(t, d, ring);
  EXPECT_EQ(s.slowEdges, 2);  // the two baseboards meet only through the CPUs in this file
}

TEST(Rings, MultiHostHeuristicKeepsHostsContiguous) {
  topo::Topology t = load("nccl_hgx-a100_8xA100-80G_6nvswitch_5xcx6dx.xml");
  auto d = topo::devicesForRanks(t, 32);  // 4 hosts x 8 GPUs: beyond the exact limit
  auto ring = topo::bestRing(t, d);
  expectPermutation(ring, 32);
  topo::RingScore s = topo::scoreRing(t, d, ring);
  EXPECT_EQ(s.slowEdges, 4);  // one NET edge into each host
  int hostChanges = 0;
  for (size_t k = 0; k < ring.size(); ++k) {
    hostChanges += d[ring[k]].host != d[ring[(k + 1) % ring.size()]].host;
  }
  EXPECT_EQ(hostChanges, 4);
}

TEST(Trees, BinaryTreeOverRing) {
  for (int n : {1, 2, 3, 7, 8, 16, 33}) {
    std::vector<int> ring(n);
    std::iota(ring.begin(), ring.end(), 0);
    std::reverse(ring.begin() + 1, ring.end());
    topo::Tree tree = topo::binaryTree(ring);
    EXPECT_EQ(tree.root, 0);
    int roots = 0;
    for (int i = 0; i < n; ++i) {
      EXPECT_LE(tree.children[i].size(), 2u);
      if (tree.parent[i] < 0) ++roots;
      for (int c : tree.children[i]) EXPECT_EQ(tree.parent[c], i);
    }
    EXPECT_EQ(roots, 1);
    // Depth: 1 (root's single child) + ceil(log2(n)) at most.
    int bound = 1;
    while ((1 << (bound - 1)) < n) ++bound;
    EXPECT_LE(tree.depth, bound) << n;
  }
}

TEST(HostRing, RanksOfAHostAreContiguous) {
  std::vector<std::string> hosts = {"b", "a", "b", "a", "c", "b"};
  auto r = topo::hostRing(hosts);
  EXPECT_EQ(r, (std::vector<int>{0, 2, 5, 1, 3, 4}));
  std::vector<uint64_t> ids = {7, 7, 9, 9};
  EXPECT_EQ(topo::hostRing(ids), (std::vector<int>{0, 1, 2, 3}));
  std::vector<uint64_t> none;
  EXPECT_TRUE(topo::hostRing(none).empty());
}

TEST(Rings, CpuOnlyRanksSpreadOverNuma) {
  TUTTI_SKIP_WITHOUT_HWLOC("hwloc2_pascal_2xP100-pcie_cx5.xml");
  topo::Topology t = load("hwloc2_pascal_2xP100-pcie_cx5.xml");
  t.gpus.clear();
  t.nvlinks.clear();
  auto d = topo::devicesForRanks(t, 6);
  auto ring = topo::bestRing(t, d);
  expectPermutation(ring, 6);
  int changes = 0;
  for (size_t k = 0; k < ring.size(); ++k) {
    changes += d[ring[k]].index != d[ring[(k + 1) % ring.size()]].index;
  }
  EXPECT_EQ(changes, 2);
}

}  // namespace
