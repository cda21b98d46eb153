// Loader errors (malformed, truncated, hwloc v3, unknown format), live discovery, env vars
// (TUTTI_TOPO_FILE / TUTTI_TOPO_DUMP_FILE) and bus id normalisation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "mini_json.h"
#include "topology/load.h"
#include "topology/paths.h"
#include "tutti/config.h"

namespace topo = tutti::topo;

// hwloc's PCI discovery plugin (libpciaccess) leaks a few bytes per live discovery. The
// plugin is unloaded before exit, so the leak can only be matched through hwloc_topology_load,
// which the sanitizer sees only with the slow (DWARF) unwinder.
extern "C" __attribute__((visibility("default"))) const char* __lsan_default_suppressions() {
  return "leak:hwloc_topology_load\n";
}
extern "C" __attribute__((visibility("default"))) const char* __asan_default_options() {
  return "fast_unwind_on_malloc=0";
}

namespace {

std::string fixture(const std::string& name) {
  return std::string(TUTTI_TOPO_FIXTURE_DIR) + "/" + name;
}
std::string data(const std::string& name) { return std::string(TUTTI_TOPO_DATA_DIR) + "/" + name; }

// Loads `file` and returns the error message (fails the test when no error is thrown).
std::string errorOf(const std::string& file) {
  try {
    topo::loadTopologyFile(file);
  } catch (const tutti::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << file << " loaded without error";
  return "";
}

void expectContains(const std::string& s, const std::string& part) {
  EXPECT_NE(s.find(part), std::string::npos) << "message: " << s << "\nmissing: " << part;
}

TEST(TopologyErrors, MalformedNamesFileLineAndProblem) {
  std::string m = errorOf(fixture("malformed_nccl.xml"));
  expectContains(m, "malformed_nccl.xml:5");
  expectContains(m, "closing tag </cpu> does not match <pci>");
}

TEST(TopologyErrors, TruncatedNcclFile) {
  std::string m = errorOf(fixture("truncated_nccl.xml"));
  expectContains(m, "truncated_nccl.xml:");
  expectContains(m, "truncated");
}

TEST(TopologyErrors, TruncatedHwlocFile) {
  std::string m = errorOf(fixture("truncated_hwloc2.xml"));
  expectContains(m, "truncated_hwloc2.xml:");
  expectContains(m, "truncated");
}

TEST(TopologyErrors, HwlocV3IsRejectedClearly) {
  std::string m = errorOf(fixture("hwloc_v3.xml"));
  expectContains(m, "hwloc_v3.xml:3");
  expectContains(m, "hwloc XML version \"3.0\" is not supported");
}

TEST(TopologyErrors, UnknownRootElement) {
  std::string m = errorOf(fixture("unknown_root.xml"));
  expectContains(m, "unknown format: root element <graphs>");
}

TEST(TopologyErrors, UnquotedAttribute) {
  std::string m = errorOf(fixture("hwloc2_broken_attr.xml"));
  expectContains(m, "hwloc2_broken_attr.xml:4");
  expectContains(m, "not quoted");
}

TEST(TopologyErrors, BadBusId) {
  std::string m = errorOf(fixture("bad_busid_nccl.xml"));
  expectContains(m, "bad_busid_nccl.xml:3");
  expectContains(m, "not-a-bus-id");
}

// libhwloc 2.9 dereferences NULL importing a NUMANode without complete_nodeset (lstopo
// crashes on this file): tutti refuses it before hwloc sees it (found by the hwloc fuzz target).
TEST(TopologyErrors, HwlocObjectWithoutItsSets) {
  std::string m = errorOf(fixture("hwloc2_numa_without_nodeset.xml"));
  expectContains(m, "hwloc2_numa_without_nodeset.xml:8");
  expectContains(m, "<object type=\"NUMANode\"> has no complete_nodeset attribute");
}

// hwloc reads an object type by prefix ("NU" is NUMANode); libhwloc 2.9 then crashed on
// `<object type="NU" cpuset=""/>` (found by the hwloc fuzz target, 2026-11-27). tutti accepts
// only the full names hwloc writes, before hwloc sees the file.
TEST(TopologyErrors, UnknownOrAbbreviatedObjectTypeRefused) {
  std::string m = errorOf(fixture("hwloc2_unknown_type.xml"));
  expectContains(m, "hwloc2_unknown_type.xml:4");
  expectContains(m, "<object type=\"NoSuchType\"> is not an hwloc object type");
  try {
    topo::loadTopologyBuffer("<topology><object type=\"NU\" cpuset=\"\"/></topology>", "nu.xml");
    ADD_FAILURE() << "an abbreviated type loaded";
  } catch (const tutti::Error& e) {
    expectContains(e.what(), "nu.xml:1");
    expectContains(e.what(), "<object type=\"NU\"> is not an hwloc object type");
  }
}

// hwloc's libxml import compared a DOCTYPE's missing system id (strcmp on NULL) and crashed
// on `<!DOCTYPEo><topology/>` (found by the hwloc fuzz target): only hwloc's own DOCTYPEs pass.
TEST(TopologyErrors, ForeignDoctypeRefused) {
  try {
    topo::loadTopologyBuffer("<!DOCTYPEo><topology/>", "doctype.xml");
    ADD_FAILURE() << "a foreign DOCTYPE loaded";
  } catch (const tutti::Error& e) {
    expectContains(e.what(), "doctype.xml: the DOCTYPE <!DOCTYPEo> is not hwloc's");
  }
}

TEST(TopologyErrors, HwlocRefusalIsReported) {
  std::string m = errorOf(fixture("hwloc2_rejected.xml"));
  expectContains(m, "hwloc2_rejected.xml");
#if TUTTI_HAVE_HWLOC
  expectContains(m, "hwloc could not import");
#else
  expectContains(m, "built without hwloc");
#endif
}

TEST(TopologyErrors, MissingFile) {
  std::string m = errorOf("/nonexistent/topo.xml");
  expectContains(m, "/nonexistent/topo.xml");
}

TEST(TopologyErrors, EmptyContent) {
  try {
    topo::loadTopologyBuffer("", "empty.xml");
    ADD_FAILURE() << "empty content loaded";
  } catch (const tutti::Error& e) {
    expectContains(e.what(), "empty.xml");
    expectContains(e.what(), "no root element");
  }
}

// An affinity the CPU binding cannot read (a comma-separated word of more than 8 digits) is
// the file's error at load, naming file and line; it used to load and fail later, without the
// file's name, when ranks were bound (found by the NCCL topology fuzz target).
TEST(TopologyErrors, UnreadableAffinity) {
  const std::string xml =
      "<system version=\"1\">\n"
      "  <cpu numaid=\"0\" affinity=\"0000ffff\"/>\n"
      "  <cpu numaid=\"1\" affinity=\"000000000,00fffff\"/>\n"
      "</system>\n";
  try {
    topo::loadTopologyBuffer(xml, "affinity.xml");
    ADD_FAILURE() << "unreadable affinity loaded";
  } catch (const tutti::Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    expectContains(e.what(), "affinity.xml:3");
    expectContains(e.what(), "000000000");
  }
}

TEST(TopologyFormat, Detection) {
  std::ifstream a(data("nccl_aws-p4d_8xA100_4xefa_static.xml"));
  std::stringstream sa;
  sa << a.rdbuf();
  EXPECT_EQ(topo::detectFormat(sa.str(), "p4d"), topo::FileFormat::kNccl);
  std::ifstream b(data("hwloc1_rzmanta-power8_4xP100_cx4.xml"));
  std::stringstream sb;
  sb << b.rdbuf();
  EXPECT_EQ(topo::detectFormat(sb.str(), "rzmanta"), topo::FileFormat::kHwlocV1);
  std::ifstream c(data("hwloc2_pascal_2xP100-pcie_cx5.xml"));
  std::stringstream sc;
  sc << c.rdbuf();
  EXPECT_EQ(topo::detectFormat(sc.str(), "pascal"), topo::FileFormat::kHwlocV2);
}

TEST(BusId, Normalisation) {
  EXPECT_EQ(topo::normaliseBusId("0000:0F:00.0"), "0000:0f:00.0");
  EXPECT_EQ(topo::normaliseBusId("0f:1c.1"), "0000:0f:1c.1");
  EXPECT_EQ(topo::normaliseBusId("ffff:ff:01.0"), "ffff:ff:01.0");
  EXPECT_EQ(topo::normaliseBusId("00000035:03:00.0"), "0035:03:00.0");
  EXPECT_FALSE(topo::normaliseBusId("0000:0f:00").has_value());
  EXPECT_FALSE(topo::normaliseBusId("0000:0f:40.0").has_value());
  EXPECT_FALSE(topo::normaliseBusId("zz:00.0").has_value());
}

TEST(GpuClassification, VendorAndClass) {
  EXPECT_TRUE(topo::isGpuPci(0x0302, 0x10de, 0x20b0));
  EXPECT_TRUE(topo::isGpuPci(0x0300, 0x10de, 0x2204));   // GeForce is VGA class
  EXPECT_TRUE(topo::isGpuPci(0x0380, 0x1002, 0x66a1));   // Radeon Pro VII
  EXPECT_TRUE(topo::isGpuPci(0x0300, 0x1002, 0x6863));   // Vega FE
  EXPECT_FALSE(topo::isGpuPci(0x0300, 0x1002, 0x515e));  // ATI ES1000 BMC VGA
  EXPECT_FALSE(topo::isGpuPci(0x0300, 0x1a03, 0x2000));  // ASPEED
  EXPECT_FALSE(topo::isGpuPci(0x0300, 0x102b, 0x0522));  // Matrox
  EXPECT_FALSE(topo::isGpuPci(0x0680, 0x10de, 0x1ac2));  // NVSwitch
  EXPECT_TRUE(topo::isNvSwitchPci(0x0680, 0x10de, ""));
  EXPECT_TRUE(topo::isNvSwitchPci(0x0000, 0x0000, "NVSwitch"));
}

TEST(LiveDiscovery, FindsCpusAndNuma) {
  topo::Topology t = topo::probeTopology();
  EXPECT_GE(t.packages.size(), 1u);
  EXPECT_GE(t.numaNodes.size(), 1u);
  EXPECT_GT(t.totalCores(), 0);
  for (const auto& n : t.numaNodes) EXPECT_GE(n.osIndex, 0);
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    EXPECT_TRUE(topo::normaliseBusId(t.gpuBusId(int(i))).has_value());
  }
}

class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    setenv(name, value.c_str(), 1);
  }
  ~EnvGuard() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::string tempPath(const std::string& suffix) {
  return ::testing::TempDir() + "tutti_topo_" + std::to_string(getpid()) + suffix;
}

TEST(TopologyEnv, TopoFileReplacesProbing) {
  EnvGuard f("TUTTI_TOPO_FILE", data("nccl_oci-bm-gpu-h100_8xH100_8xcx7-dualport.xml"));
  topo::Topology t = topo::discoverTopology();
  EXPECT_EQ(t.source, topo::Source::kNcclXml);
  EXPECT_EQ(t.gpus.size(), 8u);
}

TEST(TopologyEnv, DumpJsonOfLoadedFile) {
  std::string out = tempPath(".json");
  {
    EnvGuard f("TUTTI_TOPO_FILE", data("nccl_hgx-a100_8xA100-80G_6nvswitch_5xcx6dx.xml"));
    EnvGuard d("TUTTI_TOPO_DUMP_FILE", out);
    topo::discoverTopology();
  }
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  minijson::Value j = minijson::parse(ss.str());
  EXPECT_EQ(j["gpus"].arr.size(), 8u);
  EXPECT_EQ(j["paths"]["0000:13:00.0"]["0000:19:00.0"].str, "NV12");
  std::remove(out.c_str());
}

#if TUTTI_HAVE_HWLOC
TEST(TopologyEnv, DumpHwlocXmlWhenProbingAndReload) {
  std::string out = tempPath(".xml");
  topo::Topology live;
  {
    EnvGuard d("TUTTI_TOPO_DUMP_FILE", out);
    live = topo::discoverTopology();
  }
  EXPECT_EQ(live.source, topo::Source::kHwlocLive);
  topo::Topology again = topo::loadTopologyFile(out);
  EXPECT_EQ(again.source, topo::Source::kHwlocXml);
  EXPECT_EQ(again.numaNodes.size(), live.numaNodes.size());
  EXPECT_EQ(again.totalCores(), live.totalCores());
  EXPECT_EQ(again.nics.size(), live.nics.size());
  std::remove(out.c_str());
}
#endif

TEST(Paths, ClassesOnKnownMachines) {
  topo::Topology t = topo::loadTopologyFile(data("nccl_oci-bm-gpu-h100_8xH100_8xcx7-dualport.xml"));
  auto g = [](int i) { return topo::DeviceRef{0, topo::DevKind::kGpu, i}; };
  topo::Path nv = topo::pathBetween(t, g(0), g(7));
  EXPECT_EQ(nv.label(), "NV18");
  EXPECT_DOUBLE_EQ(nv.bandwidthGBps, 450.0);  // 18 NVLink4 links x 25 GB/s
  int nic = topo::nearestNic(t, 0);
  ASSERT_GE(nic, 0);
  EXPECT_EQ(t.pci[t.nics[nic].pci].busId, "0000:0c:00.0");
  EXPECT_EQ(topo::pathBetween(t, g(0), {0, topo::DevKind::kNic, nic}).label(), "PIX");
  topo::Path net = topo::pathBetween(t, g(0), {1, topo::DevKind::kGpu, 0});
  EXPECT_EQ(net.cls, topo::LinkClass::kNET);
  EXPECT_DOUBLE_EQ(net.bandwidthGBps, 22.5);  // 180 Gb/s

  topo::Topology p = topo::loadTopologyFile(data("nccl_8xRTX3090_pcie_1xcx6.xml"));
  EXPECT_EQ(topo::pathBetween(p, g(0), g(1)).label(), "PIX");
  EXPECT_EQ(topo::pathBetween(p, g(0), g(4)).label(), "SYS");
  EXPECT_LT(topo::pathBetween(p, g(0), g(4)).bandwidthGBps,
            topo::pathBetween(p, g(0), g(1)).bandwidthGBps);

#if TUTTI_HAVE_HWLOC
  topo::Topology h = topo::loadTopologyFile(data("hwloc2_aws-g4dn-metal_8xT4_efa.xml"));
  EXPECT_EQ(topo::pathBetween(h, g(0), g(1)).label(), "PHB");
  EXPECT_EQ(topo::pathBetween(h, g(0), g(2)).label(), "NODE");
  EXPECT_EQ(topo::pathBetween(h, g(0), g(4)).label(), "SYS");
#endif
}

TEST(Warnings, FlatVmTree) {
  topo::Topology t = topo::loadTopologyFile(data("nccl_azure-ndv2_8xV100_1xib_partial.xml"));
  bool flat = false;
  for (const auto& w : topo::topologyWarnings(t))
    flat |= w.find("flat PCI tree") != std::string::npos;
  EXPECT_TRUE(flat);
  topo::Topology b = topo::loadTopologyFile(data("nccl_oci-bm-gpu-h100_8xH100_8xcx7-dualport.xml"));
  for (const auto& w : topo::topologyWarnings(b))
    EXPECT_EQ(w.find("flat PCI tree"), std::string::npos);
}

}  // namespace
