// TUTTI_BIND planning: cpuset parsing in the hwloc and NCCL forms, block distribution over
// NUMA nodes, core shares (disjoint when there are enough cores, evenly shared otherwise),
// layouts from the topology files, and binding this process for real.
#include "topology/binding.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "common/error.h"
#include "topology/load.h"

namespace tutti::topo {
namespace {

// nodes x cores x pus, PU ids numbered like Linux on SMT machines: the first thread of every
// core first, the siblings after (core c of the machine has PUs c and c + totalCores).
CpuLayout synthetic(int nodes, int coresPerNode, int pusPerCore) {
  CpuLayout l;
  int total = nodes * coresPerNode;
  for (int n = 0; n < nodes; ++n) {
    CpuLayout::Node node;
    node.osIndex = n;
    for (int c = 0; c < coresPerNode; ++c) {
      std::vector<int> pus;
      for (int t = 0; t < pusPerCore; ++t) pus.push_back(n * coresPerNode + c + t * total);
      node.cores.push_back(pus);
    }
    l.nodes.push_back(node);
  }
  return l;
}

TEST(Binding, ParsesCpusetsAsHwlocAndNcclWriteThem) {
  EXPECT_EQ(parseCpuset("0x00000003"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parseCpuset("0x03000003"), (std::vector<int>{0, 1, 24, 25}));
  EXPECT_EQ(parseCpuset("0x00000001,0x80000000"), (std::vector<int>{31, 32}));
  EXPECT_EQ(
      parseCpuset("00000000,ffffffff,00000000,0000000f"),
      (std::vector<int>{0,  1,  2,  3,  64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
                        78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95}));
  EXPECT_EQ(parseCpuset("0x1,,0x1"), (std::vector<int>{0, 64}));  // hwloc elides zero words
  EXPECT_EQ(parseCpuset("0xf00000000"), (std::vector<int>{32, 33, 34, 35}));
  EXPECT_TRUE(parseCpuset("0x0").empty());
  EXPECT_THROW(parseCpuset("0xzz"), Error);
  EXPECT_THROW(parseCpuset("123456789,0"), Error);
  EXPECT_EQ(cpuListString({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpuListString({}), "");
}

TEST(Binding, ModesParseAndBadValuesAreErrorsNamingTheVariable) {
  EXPECT_EQ(parseBindMode("none"), BindMode::kNone);
  EXPECT_EQ(parseBindMode(""), BindMode::kNone);
  EXPECT_EQ(parseBindMode("numa"), BindMode::kNuma);
  EXPECT_EQ(parseBindMode("core"), BindMode::kCore);
  try {
    parseBindMode("socket");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TUTTI_BIND=socket"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(planBinding(synthetic(2, 4, 2), 4, BindMode::kNone).empty());
}

TEST(Binding, NumaIsABlockDistributionOverNodes) {
  for (int nodes : {1, 2, 3, 4})
    for (int ranks = 1; ranks <= 20; ++ranks) {
      CpuLayout l = synthetic(nodes, 4, 2);
      auto plan = planBinding(l, ranks, BindMode::kNuma);
      ASSERT_EQ(plan.size(), size_t(ranks));
      std::map<int, int> perNode;
      for (int i = 0; i < ranks; ++i) {
        if (i > 0) {
          EXPECT_GE(plan[i].node, plan[i - 1].node) << "neighbours stay together";
        }
        ++perNode[plan[i].node];
        std::vector<int> all;
        for (auto& core : l.nodes[plan[i].node].cores)
          all.insert(all.end(), core.begin(), core.end());
        std::sort(all.begin(), all.end());
        EXPECT_EQ(plan[i].cpus, all) << "a numa-bound rank gets its whole node";
      }
      int lo = ranks, hi = 0;
      for (int n = 0; n < nodes; ++n) {
        lo = std::min(lo, perNode[n]);
        hi = std::max(hi, perNode[n]);
      }
      EXPECT_LE(hi - lo, 1) << nodes << " nodes, " << ranks << " ranks: balanced";
    }
}

TEST(Binding, CoreSharesAreDisjointOrEvenlyShared) {
  for (int nodes : {1, 2})
    for (int ranks = 1; ranks <= 24; ++ranks) {
      CpuLayout l = synthetic(nodes, 4, 2);
      auto plan = planBinding(l, ranks, BindMode::kCore);
      ASSERT_EQ(plan.size(), size_t(ranks));
      std::map<int, int> users;  // cpu -> ranks bound to it
      for (int i = 0; i < ranks; ++i) {
        ASSERT_FALSE(plan[i].cpus.empty());
        EXPECT_EQ(plan[i].cpus.size() % 2, 0u) << "whole cores: both hardware threads";
        for (int c : plan[i].cpus) {
          ++users[c];
          bool inNode = false;
          for (auto& core : l.nodes[plan[i].node].cores)
            inNode = inNode || std::count(core.begin(), core.end(), c) > 0;
          EXPECT_TRUE(inNode) << "cpu " << c << " outside rank " << i << "'s node";
        }
      }
      int cores = nodes * 4;
      if (ranks <= cores) {
        for (auto& [cpu, n] : users) EXPECT_EQ(n, 1) << ranks << " ranks: cpu " << cpu << " shared";
        if (ranks == cores || ranks == nodes) {
          EXPECT_EQ(users.size(), size_t(l.cpuCount())) << "every cpu used";
        }
      } else {
        int lo = ranks, hi = 0;
        for (auto& [cpu, n] : users) {
          lo = std::min(lo, n);
          hi = std::max(hi, n);
        }
        EXPECT_EQ(users.size(), size_t(l.cpuCount())) << "every core used";
        EXPECT_LE(hi - lo, 1) << ranks << " ranks on " << cores << " cores: even";
      }
    }
}

TEST(Binding, LayoutsFromTopologyFiles) {
  std::string dir = TUTTI_TOPO_DATA_DIR;
  CpuLayout hgx =
      cpuLayoutOf(loadTopologyFile(dir + "/nccl_hgx-a100_8xA100-80G_6nvswitch_5xcx6dx.xml"));
  ASSERT_EQ(hgx.nodes.size(), 2u);
  EXPECT_EQ(hgx.cpuCount(), 128);
  auto plan = planBinding(hgx, 8, BindMode::kNuma);
  EXPECT_EQ(cpuListString(plan[0].cpus), "0-31,64-95");
  EXPECT_EQ(cpuListString(plan[7].cpus), "32-63,96-127");
  CpuLayout power8 = cpuLayoutOf(loadTopologyFile(dir + "/hwloc1_rzmanta-power8_4xP100_cx4.xml"));
  ASSERT_EQ(power8.nodes.size(), 2u);
  EXPECT_EQ(cpuListString(planBinding(power8, 2, BindMode::kNuma)[1].cpus), "80-159");
}

TEST(Binding, LiveLayoutHasTheAllowedCpusAndBindingApplies) {
  std::vector<int> before = currentAffinity();
  CpuLayout l = liveCpuLayout();
  std::set<int> layoutCpus;
  for (auto& n : l.nodes)
    for (auto& core : n.cores) layoutCpus.insert(core.begin(), core.end());
  EXPECT_EQ(std::vector<int>(layoutCpus.begin(), layoutCpus.end()), before);
  auto plan = planBinding(l, 1, BindMode::kCore);
  ASSERT_EQ(plan.size(), 1u);
  applyBinding(plan[0].cpus);
  EXPECT_EQ(currentAffinity(), plan[0].cpus);
  applyBinding(before);
  EXPECT_EQ(currentAffinity(), before);
  EXPECT_THROW(applyBinding({}), Error);
}

}  // namespace
}  // namespace tutti::topo
