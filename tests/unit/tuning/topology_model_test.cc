// The cost model on a topology file (tuning::applyTopology), for ranks on GPUs and for
// host-memory ranks on NUMA nodes: each pair costs what the file's path between the two
// devices says, worked out here from topo::pathBetween and the model's own fitted links.
#include "tuning/topology_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "topology/load.h"
#include "topology/paths.h"

namespace tutti::tuning {
namespace {

topo::Topology load(const std::string& file) {
  return topo::loadTopologyFile(std::string(TUTTI_TOPO_DATA_DIR) + "/" + file);
}

// Two NUMA nodes, GPUs and NICs; the CPU ranks sit on the NUMA nodes round robin.
const char* const kTwoSocketFile = "nccl_aws-p4d_8xA100_4xefa_static.xml";

TEST(TopologyModel, CpuRanksPayTheInterSocketLinkOnlyAcrossNumaNodes) {
  topo::Topology t = load(kTwoSocketFile);
  ASSERT_GE(t.numaNodes.size(), 2u);
  CostModel fitted;
  CostModel m;
  auto devOf = [](int r) { return topo::DeviceRef{0, topo::DevKind::kCpu, r % 2}; };
  std::string desc = applyTopology(m, t, devOf, 4);
  EXPECT_NE(desc.find("CPU ranks"), std::string::npos) << desc;
  ASSERT_TRUE(m.intraPair);
  // Same NUMA node (ranks 0 and 2): the fitted shm link, unchanged.
  LinkCost same = m.intraPair(0, 2);
  EXPECT_DOUBLE_EQ(same.alpha, fitted.intraHost.alpha);
  EXPECT_DOUBLE_EQ(same.beta, fitted.intraHost.beta);
  // Across (ranks 0 and 1): shm plus the SYS path's latency, and the slower of the two links.
  topo::Path sys = topo::pathBetween(t, devOf(0), devOf(1));
  ASSERT_EQ(sys.label(), "SYS");
  LinkCost across = m.intraPair(0, 1);
  EXPECT_DOUBLE_EQ(across.alpha, fitted.intraHost.alpha + sys.latencyUs * 1e-6);
  EXPECT_DOUBLE_EQ(across.beta, std::max(fitted.intraHost.beta, 1.0 / (sys.bandwidthGBps * 1e9)));
  EXPECT_GT(across.alpha, same.alpha);
  // The GPU model's settings stay off for CPU ranks.
  EXPECT_EQ(m.coresPerHost, fitted.coresPerHost);
  EXPECT_DOUBLE_EQ(m.gammaPerByte, fitted.gammaPerByte);
}

TEST(TopologyModel, CpuRanksTcpIsNeverFasterThanTheNicOrTheFittedLink) {
  topo::Topology t = load(kTwoSocketFile);
  auto cpu = [](int r) { return topo::DeviceRef{r / 2, topo::DevKind::kCpu, r % 2}; };
  topo::Path net = topo::pathBetween(t, {0, topo::DevKind::kCpu, 0}, {1, topo::DevKind::kCpu, 0});
  double nicBeta = 1.0 / (net.bandwidthGBps * 1e9);
  for (double tcpGBps : {0.1, 1000.0}) {  // slower than the NIC, then faster
    CostModel m;
    m.interHost = {5e-6, 1.0 / (tcpGBps * 1e9)};
    applyTopology(m, t, cpu, 4);
    EXPECT_DOUBLE_EQ(m.interHost.beta, std::max(nicBeta, 1.0 / (tcpGBps * 1e9))) << tcpGBps;
    EXPECT_DOUBLE_EQ(m.interHost.alpha, std::max(5e-6, net.latencyUs * 1e-6)) << tcpGBps;
  }
  // GPU ranks take the NIC's path as it is (RDMA).
  CostModel g;
  g.interHost = {5e-6, 1.0 / 1000e9};
  applyTopology(
      g, t,
      [](int r) {
        return topo::DeviceRef{r / 2, topo::DevKind::kGpu, r % 2};
      },
      4);
  EXPECT_DOUBLE_EQ(g.interHost.beta, nicBeta);
}

TEST(TopologyModel, OneNumaNodeLeavesCpuPairsAlone) {
  // Every file here has two or more NUMA nodes: keep the first only.
  topo::Topology t = load(kTwoSocketFile);
  t.numaNodes.resize(1);
  CostModel m;
  std::string desc = applyTopology(
      m, t,
      [](int) {
        return topo::DeviceRef{0, topo::DevKind::kCpu, 0};
      },
      2);
  EXPECT_FALSE(m.intraPair);
  EXPECT_EQ(desc, "");
}

}  // namespace
}  // namespace tutti::tuning
