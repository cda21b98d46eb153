// Every file in tests/data/topologies: the loaded model and `tutti-topo --json` recover the
// facts of ground_truth.json (GPUs and NUMA, NICs with names/speed, NVLink pairs and
// counts/bandwidth, GPU-NIC pairs sharing a PCIe switch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "mini_json.h"
#include "topology/load.h"
#include "topology/paths.h"
#include "tutti/config.h"

// hwloc files need hwloc: skipped (not failed) in a build without it.
#define TUTTI_SKIP_WITHOUT_HWLOC(file)                                   \
  do {                                                                   \
    if (!TUTTI_HAVE_HWLOC && std::string(file).rfind("hwloc", 0) == 0) { \
      GTEST_SKIP() << "built without hwloc";                             \
    }                                                                    \
  } while (0)

namespace topo = tutti::topo;

namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const minijson::Value& groundTruth() {
  static const minijson::Value v =
      minijson::parse(readAll(std::string(TUTTI_TOPO_DATA_DIR) + "/ground_truth.json"));
  return v;
}

std::vector<std::string> fileNames() {
  std::vector<std::string> r;
  for (const auto& [k, v] : groundTruth().obj) r.push_back(k);
  return r;
}

std::string norm(const std::string& s) {
  auto n = topo::normaliseBusId(s);
  EXPECT_TRUE(n.has_value()) << s;
  return n.value_or(s);
}

bool isNcclEntry(const minijson::Value& e) { return e.has("cpus"); }

std::string numaOs(const topo::Topology& t, int numaIndex) {
  return numaIndex >= 0 ? std::to_string(t.numaNodes[numaIndex].osIndex) : "none";
}

// "nvml0@0002:01:00.0" / "PCI@0000:65:00.0[1ac2]" -> bus id; "Package#1" -> "cpu1".
std::string endpoint(const std::string& s) {
  if (s.rfind("Package#", 0) == 0) return "cpu" + s.substr(8);
  size_t at = s.find('@');
  std::string bus = s.substr(at + 1);
  size_t br = bus.find('[');
  if (br != std::string::npos) bus = bus.substr(0, br);
  return norm(bus);
}

std::string peerKey(const topo::Topology& t, const topo::NvLink& l) {
  if (l.peerKind == topo::LinkPeer::kGpu) return t.gpuBusId(l.peer);
  if (l.peerKind == topo::LinkPeer::kNvSwitch) return t.nvSwitches[l.peer].busId;
  return "cpu" + std::to_string(t.packages[l.peer].osIndex);
}

class GroundTruth : public ::testing::TestWithParam<std::string> {
 protected:
  std::string path() const { return std::string(TUTTI_TOPO_DATA_DIR) + "/" + GetParam(); }
  const minijson::Value& entry() const { return groundTruth()[GetParam()]; }
};

TEST_P(GroundTruth, GpusAndNuma) {
  TUTTI_SKIP_WITHOUT_HWLOC(GetParam());
  topo::Topology t = topo::loadTopologyFile(path());
  const auto& e = entry();
  std::set<std::string> want, got;
  for (const auto& g : e["gpus"].arr) {
    std::string bus = norm(g["busid"].str);
    want.insert(bus);
    int idx = t.findGpu(bus);
    ASSERT_GE(idx, 0) << "GPU " << bus << " not found";
    EXPECT_EQ(numaOs(t, t.numaOfPci(t.gpus[idx].pci)), g["numa"].str) << bus;
    std::string pciId = g["pci_id"].str;
    if (pciId.find("10de") != std::string::npos) {
      EXPECT_EQ(t.gpus[idx].vendor, topo::GpuVendor::kNvidia) << bus;
    } else if (pciId.find("1002") != std::string::npos) {
      EXPECT_EQ(t.gpus[idx].vendor, topo::GpuVendor::kAmd) << bus;
    }
  }
  for (size_t i = 0; i < t.gpus.size(); ++i) got.insert(t.gpuBusId(static_cast<int>(i)));
  EXPECT_EQ(got, want) << "GPU set (BMC VGA chips must not count)";

  // NUMA nodes and packages.
  std::set<long long> numaWant, numaGot;
  if (isNcclEntry(e)) {
    for (const auto& c : e["cpus"].arr) numaWant.insert(c["numaid"].asInt());
  } else {
    for (const auto& n : e["numa_nodes"].arr) numaWant.insert(n.asInt());
    EXPECT_EQ(static_cast<long long>(t.packages.size()), e["packages"].asInt());
  }
  for (const auto& n : t.numaNodes) numaGot.insert(n.osIndex);
  // hwloc 2 drops memory-less NUMA nodes of v1 files (chimera: 1 and 3): subset there.
  for (long long n : numaGot) EXPECT_TRUE(numaWant.count(n)) << "unexpected NUMA " << n;
  if (isNcclEntry(e) || GetParam().rfind("hwloc2", 0) == 0) {
    EXPECT_EQ(numaGot, numaWant);
  }
  EXPECT_GT(t.totalCores(), 0);
}

TEST_P(GroundTruth, Nics) {
  TUTTI_SKIP_WITHOUT_HWLOC(GetParam());
  topo::Topology t = topo::loadTopologyFile(path());
  const auto& e = entry();
  std::set<std::string> want, got;
  for (const auto& n : e["nics"].arr) {
    std::string bus = norm(n["busid"].str);
    want.insert(bus);
    int idx = t.findNic(bus);
    ASSERT_GE(idx, 0) << "NIC " << bus << " not found";
    const topo::Nic& nic = t.nics[idx];
    EXPECT_EQ(numaOs(t, nic.numa), n["numa"].str) << bus;
    std::set<std::string> names(nic.names.begin(), nic.names.end()), wantNames;
    if (n.has("nets")) {
      for (const auto& net : n["nets"].arr) {
        wantNames.insert(net["name"].str);
        ASSERT_TRUE(nic.speedMbps.has_value()) << bus;
        EXPECT_EQ(*nic.speedMbps, net["speed"].asInt()) << bus;
      }
      if (n["nets"].arr.empty()) {
        EXPECT_FALSE(nic.speedMbps.has_value()) << bus;
      }
      std::string cls = n["class"].str;
      if (cls == "0x020700") {
        EXPECT_EQ(nic.kind, topo::NicKind::kInfiniBand) << bus;
      }
      if (n["pci_id"].str.rfind("0x1d0f:0xefa", 0) == 0) {
        EXPECT_EQ(nic.kind, topo::NicKind::kEfa);
      }
    } else {
      for (const auto& o : n["osdevs"].arr) wantNames.insert(o.str.substr(0, o.str.find(':')));
      EXPECT_FALSE(nic.speedMbps.has_value()) << "hwloc files carry no port rate";
      std::string cls = n["class"].str;
      if (cls == "0207" || cls == "0c06") {
        EXPECT_EQ(nic.kind, topo::NicKind::kInfiniBand) << bus;
      }
      if (n["pci_id"].str == "1d0f:efa0") {
        EXPECT_EQ(nic.kind, topo::NicKind::kEfa) << bus;
      }
      bool ofed = false;
      for (const auto& o : n["osdevs"].arr) ofed |= o.str.find(":openfabrics") != std::string::npos;
      EXPECT_EQ(nic.rdma, ofed) << bus;
    }
    EXPECT_EQ(names, wantNames) << bus;
  }
  for (const auto& n : t.nics) {
    if (n.pci >= 0) got.insert(t.pci[n.pci].busId);
  }
  EXPECT_EQ(got, want);
}

TEST_P(GroundTruth, NvLinks) {
  TUTTI_SKIP_WITHOUT_HWLOC(GetParam());
  topo::Topology t = topo::loadTopologyFile(path());
  const auto& e = entry();
  std::set<std::string> got, want;
  for (const auto& l : t.nvlinks) {
    std::string a = t.gpuBusId(l.gpu), b = peerKey(t, l);
    if (isNcclEntry(e)) {
      got.insert(a + "|" + b + "|" + std::to_string(l.links));
    } else {
      got.insert(std::min(a, b) + "|" + std::max(a, b) + "|" + std::to_string(l.bandwidthMBps));
    }
  }
  if (isNcclEntry(e)) {
    for (const auto& l : e["nvlink"].arr) {
      want.insert(norm(l["gpu"].str) + "|" + norm(l["target"].str) + "|" +
                  std::to_string(l["count"].asInt()));
    }
  } else {
    for (const auto& l : e["nvlink_edges"].arr) {
      std::string a = endpoint(l["a"].str), b = endpoint(l["b"].str);
      want.insert(std::min(a, b) + "|" + std::max(a, b) + "|" +
                  std::to_string(l["bandwidth_MBps"].asInt()));
    }
    std::set<std::string> switches;
    for (const auto& s : t.nvSwitches) switches.insert(s.busId);
    for (const auto& s : e["nvswitch_pci"].arr) EXPECT_TRUE(switches.count(norm(s.str))) << s.str;
  }
  EXPECT_EQ(got, want);
}

TEST_P(GroundTruth, GpuNicSharingPcieSwitch) {
  TUTTI_SKIP_WITHOUT_HWLOC(GetParam());
  topo::Topology t = topo::loadTopologyFile(path());
  const auto& e = entry();
  std::set<std::pair<int, int>> listed;
  for (const auto& p : e["nic_gpu_same_pcie_switch"].arr) {
    int nic = t.findNic(norm(p["nic"].str));
    int gpu = t.findGpu(norm(p["gpu"].str));
    ASSERT_GE(nic, 0);
    ASSERT_GE(gpu, 0);
    listed.insert({gpu, nic});
    std::string lca;
    if (p.has("common_switch")) {
      lca = p["common_switch"].str;
    } else {  // "SWITCH(lca=0000:02:00.0[10b5:8796],hops=1+1)"
      std::string r = p["relation"].str;
      size_t b = r.find("lca=") + 4;
      lca = r.substr(b, r.find('[', b) - b);
    }
    topo::PciRelation rel = topo::pciRelation(t, t.gpus[gpu].pci, t.nics[nic].pci);
    ASSERT_GE(rel.lca, 0);
    EXPECT_EQ(t.pci[rel.lca].busId, norm(lca));
    topo::Path path =
        topo::pathBetween(t, {0, topo::DevKind::kGpu, gpu}, {0, topo::DevKind::kNic, nic});
    EXPECT_TRUE(path.cls == topo::LinkClass::kPIX || path.cls == topo::LinkClass::kPXB)
        << path.label();
  }
  // Every other GPU-NIC pair shares no switch.
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    for (size_t n = 0; n < t.nics.size(); ++n) {
      if (listed.count({int(g), int(n)})) continue;
      topo::Path path =
          topo::pathBetween(t, {0, topo::DevKind::kGpu, int(g)}, {0, topo::DevKind::kNic, int(n)});
      EXPECT_TRUE(path.cls != topo::LinkClass::kPIX && path.cls != topo::LinkClass::kPXB)
          << t.gpuBusId(int(g)) << " vs NIC " << n << ": " << path.label();
    }
  }
}

std::string runTool(const std::string& args) {
  std::string cmd = std::string(TUTTI_TOPO_BIN) + " " + args;
  FILE* f = popen(cmd.c_str(), "r");
  EXPECT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  if (f) {
    EXPECT_EQ(pclose(f), 0) << cmd;
  }
  return out;
}

TEST_P(GroundTruth, ToolJson) {
  TUTTI_SKIP_WITHOUT_HWLOC(GetParam());
  minijson::Value j = minijson::parse(runTool("--json --file '" + path() + "'"));
  const auto& e = entry();
  std::map<std::string, std::string> gpus;
  for (const auto& g : j["gpus"].arr) {
    gpus[g["busid"].str] = g["numa"].isNull() ? "none" : std::to_string(g["numa"].asInt());
    EXPECT_TRUE(g["vendor"].str == "nvidia" || g["vendor"].str == "amd");
  }
  std::map<std::string, std::string> wantGpus;
  for (const auto& g : e["gpus"].arr) wantGpus[norm(g["busid"].str)] = g["numa"].str;
  EXPECT_EQ(gpus, wantGpus);
  std::map<std::string, const minijson::Value*> nics;
  for (const auto& n : j["nics"].arr) nics[n["busid"].str] = &n;
  EXPECT_EQ(nics.size(), e["nics"].arr.size());
  for (const auto& n : e["nics"].arr) {
    auto it = nics.find(norm(n["busid"].str));
    ASSERT_NE(it, nics.end()) << n["busid"].str;
    const auto& got = *it->second;
    EXPECT_EQ(std::to_string(got["numa"].asInt()), n["numa"].str);
    if (n.has("nets") && !n["nets"].arr.empty()) {
      EXPECT_EQ(got["speed_mbps"].asInt(), n["nets"].arr[0]["speed"].asInt());
      EXPECT_EQ(got["names"].arr.size(), n["nets"].arr.size());
    } else {
      EXPECT_TRUE(got["speed_mbps"].isNull());
    }
    EXPECT_FALSE(got["kind"].str.empty());
  }
  size_t wantLinks = isNcclEntry(e) ? e["nvlink"].arr.size() : e["nvlink_edges"].arr.size();
  EXPECT_EQ(j["nvlink"].arr.size(), wantLinks);
  for (const auto& l : j["nvlink"].arr) {
    EXPECT_TRUE(gpus.count(l["a"].str)) << l["a"].str;
    EXPECT_FALSE(l["b"].str.empty());
  }
  for (const auto& p : e["nic_gpu_same_pcie_switch"].arr) {
    std::string cls = j["paths"][norm(p["gpu"].str)][norm(p["nic"].str)].str;
    EXPECT_TRUE(cls == "PIX" || cls == "PXB") << cls;
  }
  std::set<long long> numa;
  for (const auto& n : j["numa_nodes"].arr) numa.insert(n.asInt());
  EXPECT_FALSE(numa.empty());
}

INSTANTIATE_TEST_SUITE_P(Files, GroundTruth, ::testing::ValuesIn(fileNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

TEST(GroundTruthFiles, EveryDataFileHasFacts) {
  // The directory holds exactly the files ground_truth.json describes (plus README/JSON).
  EXPECT_EQ(fileNames().size(), 15u);
  for (const auto& f : fileNames()) {
    std::ifstream in(std::string(TUTTI_TOPO_DATA_DIR) + "/" + f);
    EXPECT_TRUE(in.good()) << f;
  }
}

}  // namespace
