// The communicator orders its ring by the topology: host-memory ranks stand for the devices
// of a topology file (TUTTI_TOPO_FILE + TUTTI_TOPO_DEVICE), and the ring the communicator
// reports (TUTTI_DEBUG_SUBSYS=TOPO) must be the one `tutti-topo --ranks N` prints for that
// file, every hop's link class must be the file's, and no ring over the same devices may have
// a faster bottleneck (or, as fast, fewer SYS/NET hops) -- checked by brute force.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "harness/temp_dir.h"
#include "topology/load.h"
#include "topology/paths.h"

namespace tutti::test {
namespace {

std::vector<std::string> topologyFiles() {
  std::vector<std::string> out;
  DIR* d = opendir(TUTTI_TOPO_DATA_DIR);
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".xml") out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Runs tutti-topo with `args`, or `command` when given; stdout.
std::string runTool(const std::string& args, const std::string& command = "") {
  std::string cmd =
      (command.empty() ? std::string(TUTTI_TOPO_BIN) + " " + args : command) + " 2>/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  pclose(p);
  return out;
}

// "Ring for N ranks: 0 3 2 1" from tutti-topo.
std::vector<int> toolRing(const std::string& file, int n) {
  std::string out = runTool("--file " + std::string(TUTTI_TOPO_DATA_DIR) + "/" + file +
                            " --ranks " + std::to_string(n));
  std::string key = "Ring for " + std::to_string(n) + " ranks:";
  size_t at = out.find(key);
  std::vector<int> ring;
  if (at == std::string::npos) return ring;
  std::istringstream in(out.substr(at + key.size(), out.find('\n', at) - at - key.size()));
  for (int r; in >> r;) ring.push_back(r);
  return ring;
}

struct Hop {
  int from = -1, to = -1;
  std::string cls;
};

// Rank 0's "ring: 0[gpu:0] -NV2-> 3[gpu:3] -PIX-> ... 0" line from the logs in `dir`.
std::vector<Hop> loggedRing(const TempDir& dir) {
  std::vector<Hop> hops;
  DIR* d = opendir(dir.path().c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    std::string name = e->d_name;
    if (name.rfind("log.", 0) != 0) continue;
    std::ifstream in(dir.file(name));
    for (std::string line; std::getline(in, line);) {
      size_t at = line.find(" ring: ");
      if (at == std::string::npos) continue;
      std::istringstream words(line.substr(at + 7));
      std::vector<std::string> w;
      for (std::string s; words >> s;) w.push_back(s);
      // rank, -CLS->, rank, -CLS->, ..., rank (the first again)
      for (size_t i = 0; i + 2 < w.size(); i += 2) {
        Hop h;
        h.from = std::stoi(w[i]);
        h.to = std::stoi(w[i + 2]);
        h.cls = w[i + 1].substr(1, w[i + 1].size() - 3);
        hops.push_back(h);
      }
    }
  }
  if (d) closedir(d);
  return hops;
}

// Rank 0's tree lines ("tree: root 0, depth 2, rank->parent ...") from the logs in `dir`.
std::vector<std::string> loggedTrees(const TempDir& dir) {
  std::vector<std::string> trees;
  DIR* d = opendir(dir.path().c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    std::ifstream in(dir.file(e->d_name));
    for (std::string line; std::getline(in, line);) {
      for (const char* name : {" tree: ", " dbtree[0]: ", " dbtree[1]: ", " binomial(root 0): "})
        if (size_t at = line.find(name); at != std::string::npos)
          trees.push_back(line.substr(at + 1));
    }
  }
  if (d) closedir(d);
  return trees;
}

// tutti-topo's "Tree <line>" lines for `file` at n ranks.
std::vector<std::string> toolTrees(const std::string& file, int n) {
  std::istringstream out(runTool("--file " + std::string(TUTTI_TOPO_DATA_DIR) + "/" + file +
                                 " --ranks " + std::to_string(n)));
  std::vector<std::string> trees;
  for (std::string line; std::getline(out, line);)
    if (line.rfind("Tree ", 0) == 0) trees.push_back(line.substr(5));
  return trees;
}

// Every rank stands for device `deviceOf(rank)` of `file`; returns the logged ring (and the
// logged trees in *trees when given).
std::vector<Hop> runPlaced(const std::string& file, int n, const std::string& kind,
                           std::function<int(int)> deviceOf,
                           std::vector<std::string>* trees = nullptr) {
  TempDir dir;
  tuttiUniqueId id = makeId();
  auto r = runRanks(n, [&](int rank) {
    setenv("TUTTI_TOPO_FILE", (std::string(TUTTI_TOPO_DATA_DIR) + "/" + file).c_str(), 1);
    setenv("TUTTI_TOPO_DEVICE", (kind + ":" + std::to_string(deviceOf(rank))).c_str(), 1);
    setenv("TUTTI_DEBUG", "INFO", 1);
    setenv("TUTTI_DEBUG_SUBSYS", "TOPO", 1);
    setenv("TUTTI_DEBUG_FILE", dir.file("log.%p").c_str(), 1);
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    // The reordered communicator still computes right: a sum of distinct values per rank.
    std::vector<double> v(1000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = rank * 1000.0 + i * 0.5;
    TUTTI_ASSERT_OK(
        tuttiAllReduce(v.data(), v.data(), v.size(), tuttiFloat64, tuttiSum, comm, nullptr), comm);
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_EQ(v[i], 1000.0 * n * (n - 1) / 2 + n * i * 0.5) << "element " << i;
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(r.allOk()) << file << ": " << r.describe();
  if (trees != nullptr) *trees = loggedTrees(dir);
  return loggedRing(dir);
}

struct RingValue {
  double bottleneck = 0;
  int slow = 0;
};

RingValue valueOf(const topo::Topology& t, topo::DevKind kind, const std::vector<int>& ring) {
  RingValue v{1e300, 0};
  for (size_t i = 0; i < ring.size(); ++i) {
    topo::Path p = topo::pathBetween(t, {0, kind, ring[i]}, {0, kind, ring[(i + 1) % ring.size()]});
    v.bottleneck = std::min(v.bottleneck, p.bandwidthGBps);
    if (p.cls == topo::LinkClass::kSYS || p.cls == topo::LinkClass::kNET) ++v.slow;
  }
  return v;
}

// One topology file per case, loaded (or the case skipped where this build cannot load it).
class Placement : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      t = topo::loadTopologyFile(std::string(TUTTI_TOPO_DATA_DIR) + "/" + file);
    } catch (const std::exception& e) {
      GTEST_SKIP() << file << " does not load in this build: " << e.what();
    }
  }
  const std::string file = GetParam();
  topo::Topology t;
};

TEST_P(Placement, RingIsTheToolsRingOverTheFilesBestLinks) {
  const bool gpus = !t.gpus.empty();
  const int n = gpus ? static_cast<int>(t.gpus.size()) : static_cast<int>(t.numaNodes.size());
  if (n < 2) GTEST_SKIP() << file << ": one device, no ring to order";
  const topo::DevKind kind = gpus ? topo::DevKind::kGpu : topo::DevKind::kCpu;
  const std::string kindName = gpus ? "gpu" : "numa";

  std::vector<std::string> trees;
  std::vector<Hop> hops = runPlaced(
      file, n, kindName, [](int r) { return r; }, &trees);
  ASSERT_EQ(hops.size(), static_cast<size_t>(n)) << file << ": no ring line logged";
  std::vector<int> ring;
  for (const Hop& h : hops) ring.push_back(h.from);
  for (size_t i = 0; i < hops.size(); ++i) {
    EXPECT_EQ(hops[i].to, hops[(i + 1) % hops.size()].from);
    // Rank r stands for device r: every hop's class is the file's.
    topo::Path p = topo::pathBetween(t, {0, kind, hops[i].from}, {0, kind, hops[i].to});
    EXPECT_EQ(hops[i].cls, p.label()) << file << ": hop " << hops[i].from << "->" << hops[i].to;
  }
  std::vector<int> sorted = ring;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i) << file << ": not a permutation";
  EXPECT_EQ(ring, toolRing(file, n)) << file;
  // The trees the communicator reports are the ones tutti-topo prints for that ring.
  std::vector<std::string> expectedTrees = toolTrees(file, n);
  EXPECT_EQ(expectedTrees.size(), 4u) << file;
  EXPECT_EQ(trees, expectedTrees) << file;

  // No ring over these devices has a faster bottleneck, or as fast with fewer SYS/NET hops.
  if (n <= 9) {
    RingValue mine = valueOf(t, kind, ring);
    std::vector<int> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    do {
      RingValue v = valueOf(t, kind, perm);
      ASSERT_FALSE(v.bottleneck > mine.bottleneck + 1e-9)
          << file << ": a ring with bottleneck " << v.bottleneck << " GB/s exists, the "
          << "communicator's has " << mine.bottleneck;
      if (v.bottleneck >= mine.bottleneck - 1e-9) {
        ASSERT_GE(v.slow, mine.slow) << file << ": a ring as fast with fewer SYS/NET hops";
      }
    } while (std::next_permutation(perm.begin() + 1, perm.end()));
  }
}

// Runs n ranks on `file` (rank r on device deviceOf(r)), an all-reduce of every size, and
// checks that the live tuner (rank 0's TUNING lines) and `tutti-sim --topo file -n n simArgs`
// choose the same algorithm at every size, and that the communicator used the topology's cost
// model (its "cost model from the topology" line, which must contain modelWord).
void expectTunerMatchesSimulator(const std::string& file, int n,
                                 const std::function<std::string(int)>& deviceOf,
                                 const std::string& simArgs, const std::string& modelWord) {
  const std::vector<size_t> counts{2, 32, 512, 8192, 131072, 2097152};  // 8 B .. 8 MiB
  TempDir dir;
  tuttiUniqueId id = makeId();
  auto r = runRanks(n, [&](int rank) {
    setenv("TUTTI_TOPO_FILE", (std::string(TUTTI_TOPO_DATA_DIR) + "/" + file).c_str(), 1);
    setenv("TUTTI_TOPO_DEVICE", deviceOf(rank).c_str(), 1);
    setenv("TUTTI_DEBUG", "INFO", 1);
    setenv("TUTTI_DEBUG_SUBSYS", "TUNING", 1);
    setenv("TUTTI_DEBUG_FILE", dir.file("log.%p").c_str(), 1);
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<float> v(counts.back(), 1.0f);
    for (size_t c : counts)
      TUTTI_ASSERT_OK(tuttiAllReduce(v.data(), v.data(), c, tuttiFloat32, tuttiSum, comm, nullptr),
                      comm);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  ASSERT_TRUE(r.allOk()) << file << " n=" << n << ": " << r.describe();
  // Rank 0's choices: "allreduce count C -> ALGO (predicted: ...)".
  std::map<size_t, std::string> live;
  std::string model;
  DIR* d = opendir(dir.path().c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    std::ifstream in(dir.file(e->d_name));
    for (std::string line; std::getline(in, line);) {
      if (line.find(":0 tutti INFO TUNING cost model from the topology") != std::string::npos)
        model = line;
      if (line.find(":0 tutti INFO TUNING allreduce count ") == std::string::npos) continue;
      std::istringstream w(line.substr(line.find("allreduce count ") + 16));
      size_t count = 0;
      std::string arrow, algo;
      w >> count >> arrow >> algo;
      live[count] = algo;
    }
  }
  if (d) closedir(d);
  EXPECT_NE(model.find(modelWord), std::string::npos)
      << file << " n=" << n << ": the communicator did not use the topology's model ("
      << (model.empty() ? "no model line" : model) << ")";
  std::string sim = runTool("", std::string(TUTTI_SIM_BIN) + " --topo " + TUTTI_TOPO_DATA_DIR +
                                    "/" + file + " -n " + std::to_string(n) + " " + simArgs +
                                    " --coll allreduce -b 8 -e 8M -f 16");
  std::map<size_t, std::string> simBest;
  std::istringstream rows(sim);
  for (std::string line; std::getline(rows, line);) {
    std::istringstream w(line);
    size_t bytes = 0;
    if (line.empty() || line[0] == '#' || !(w >> bytes)) continue;
    simBest[bytes / 4] = line.substr(line.find_last_of(' ') + 1);
  }
  for (size_t c : counts) {
    ASSERT_TRUE(live.count(c)) << file << " n=" << n << ": no TUNING line for count " << c;
    ASSERT_TRUE(simBest.count(c)) << file << " n=" << n << ": no simulator row for " << c * 4
                                  << " B\n"
                                  << sim;
    EXPECT_EQ(live[c], simBest[c]) << file << " n=" << n << " " << c * 4 << " B";
  }
}

// GPU files at 2, 4, 8 and 16 ranks (one per GPU). The direct chunk is set to the whole
// window on both sides: the communicator uses the whole window when its ranks outnumber this
// machine's cores, the simulated GPU machine has a core per rank.
TEST_P(Placement, LiveTunerAndSimulatorChooseAlike) {
  if (t.gpus.size() < 2)
    GTEST_SKIP() << file << ": fewer than 2 GPUs (CPU ranks are the ForCpuRanks case)";
  setenv("TUTTI_CHUNK_BYTES", "4194304", 1);
  setenv("TUTTI_SHM_WINDOW_BYTES", "4194304", 1);
  for (int n : {2, 4, 8, 16}) {
    if (n > static_cast<int>(t.gpus.size())) break;
    expectTunerMatchesSimulator(
        file, n, [](int rank) { return "gpu:" + std::to_string(rank); }, "", "GPU");
  }
}

// Host-memory ranks on the file's NUMA nodes (round robin, one host) at 2 and 4 ranks: pairs
// across NUMA nodes cost the inter-socket link in both models.
TEST_P(Placement, LiveTunerAndSimulatorChooseAlikeForCpuRanks) {
  const int numa = static_cast<int>(t.numaNodes.size());
  if (numa < 2) GTEST_SKIP() << file << ": one NUMA node, CPU ranks keep the fitted shm model";
  setenv("TUTTI_CHUNK_BYTES", "4194304", 1);
  setenv("TUTTI_SHM_WINDOW_BYTES", "4194304", 1);
  for (int n : {2, 4}) {
    expectTunerMatchesSimulator(
        file, n, [numa](int rank) { return "numa:" + std::to_string(rank % numa); },
        "--devices cpu --ranks-per-host " + std::to_string(n), "CPU ranks");
  }
}

std::string caseName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param.substr(0, info.param.size() - 4);
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Files, Placement, ::testing::ValuesIn(topologyFiles()), caseName);

// Two processes per GPU: the ranks of one device sit next to each other, and the devices
// follow the same ring as with one process each.
TEST(PlacementTwoPerDevice, RanksOfADeviceAreAdjacentInTheDevicesRing) {
  const std::string file = "hwloc2_power8-minsky_4xP100_nvlink.xml";
  topo::Topology t;
  try {
    t = topo::loadTopologyFile(std::string(TUTTI_TOPO_DATA_DIR) + "/" + file);
  } catch (const std::exception& e) {
    GTEST_SKIP() << file << " does not load in this build: " << e.what();
  }
  const int g = static_cast<int>(t.gpus.size());
  ASSERT_GE(g, 2);
  std::vector<Hop> hops = runPlaced(file, 2 * g, "gpu", [g](int r) { return r % g; });
  ASSERT_EQ(hops.size(), static_cast<size_t>(2 * g));
  std::vector<int> devices;
  for (size_t i = 0; i < hops.size(); ++i) {
    int dev = hops[i].from % g;
    if (devices.empty() || devices.back() != dev) devices.push_back(dev);
    // A hop between the two ranks of one device is LOC.
    if (hops[i].from % g == hops[i].to % g) {
      EXPECT_EQ(hops[i].cls, "LOC");
    }
  }
  if (devices.size() > 1 && devices.front() == devices.back()) devices.pop_back();
  ASSERT_EQ(devices.size(), static_cast<size_t>(g)) << "a device's ranks are not adjacent";
  std::vector<int> expected = toolRing(file, g);
  std::rotate(devices.begin(), std::find(devices.begin(), devices.end(), 0), devices.end());
  EXPECT_EQ(devices, expected);
}

// The communicator writes TUTTI_TOPO_DUMP_FILE: the topology it placed its ranks by.
TEST(PlacementDump, CommunicatorWritesTheTopologyDump) {
  TempDir dir;
  tuttiUniqueId id = makeId();
  const std::string dump = dir.file("topo.json");
  auto r = runRanks(2, [&](int rank) {
    setenv("TUTTI_TOPO_FILE",
           (std::string(TUTTI_TOPO_DATA_DIR) + "/hwloc2_power8-minsky_4xP100_nvlink.xml").c_str(),
           1);
    setenv("TUTTI_TOPO_DEVICE", rank == 0 ? "gpu:0" : "gpu:1", 1);
    setenv("TUTTI_TOPO_DUMP_FILE", dump.c_str(), 1);
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 2, id, rank), nullptr);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  ASSERT_TRUE(r.allOk()) << r.describe();
  std::ifstream in(dump);
  ASSERT_TRUE(in.is_open()) << dump << " was not written";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"gpus\""), std::string::npos) << text.substr(0, 400);
  EXPECT_NE(text.find("minsky"), std::string::npos) << text.substr(0, 400);
}

TEST(PlacementErrors, UnusableDeviceSettingIsAnInitError) {
  tuttiUniqueId id = makeId();
  auto r = runRanks(1, [&](int) {
    setenv("TUTTI_TOPO_FILE",
           (std::string(TUTTI_TOPO_DATA_DIR) + "/nccl_8xRTX3090_pcie_1xcx6.xml").c_str(), 1);
    for (const char* bad : {"gpu:8", "numa:9", "banana", "0000:ff:00.0"}) {
      setenv("TUTTI_TOPO_DEVICE", bad, 1);
      tuttiComm_t comm = nullptr;
      EXPECT_EQ(tuttiCommInitRank(&comm, 1, id, 0), tuttiInvalidArgument) << bad;
      EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("TUTTI_TOPO_DEVICE"),
                std::string::npos)
          << bad << ": " << tuttiGetLastError(nullptr);
    }
  });
  EXPECT_TRUE(r.allOk()) << r.describe();
}

}  // namespace
}  // namespace tutti::test
