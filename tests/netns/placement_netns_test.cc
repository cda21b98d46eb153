// Rank placement across network namespaces: ranks interleaved over 2 hosts (h0, h1, h0, ...),
// each host loading its own topology file and each rank standing for one GPU of it. The
// communicator's ring (rank 0's TOPO log) must keep each host's ranks contiguous, enter or
// leave each host through its NIC-nearest rank, give every in-host hop the file's link class,
// and compute right (all_reduce_perf -c 1 with ring, hier, tree and dbtree). With
// TUTTI_NETNS_BENCH=1 it also times the ring at 4 ranks on 1 Gbit/s: well placed, interleaved, and
// interleaved with TUTTI_TOPO_REORDER=0 (docs/topology.md); timing never fails the test. Skips
// unless root.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "netns_cluster.h"
#include "topology/load.h"
#include "topology/paths.h"

namespace {

using tutti::test::runCommand;
namespace topo = tutti::topo;

const std::string kDir = TUTTI_TOPO_DATA_DIR;
// One NIC each: h0's sits under the PCIe switch of GPUs 4-7 (PIX), h1's on the host bridge of
// GPUs 0-3 (PHB).
const std::string kFile0 = "nccl_8xRTX3090_pcie_1xcx6.xml";
const std::string kFile1 = "nccl_azure-ndv2_8xV100_1xib_partial.xml";
// rank -> GPU; ranks 0, 2, 4 on h0 and 1, 3, 5 on h1.
const std::vector<int> kGpuOfRank{0, 5, 4, 0, 1, 6};

// A wrapper that gives each rank its host's file and its GPU, then runs the command.
std::string writeWrapper() {
  char path[] = "/tmp/tutti_placement_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream out(path);
  out << "#!/bin/sh\n"
      << "case \"$(ip netns identify $$)\" in\n"
      << "  tutti-h0) export TUTTI_TOPO_FILE=" << kDir << "/" << kFile0 << " ;;\n"
      << "  *) export TUTTI_TOPO_FILE=" << kDir << "/" << kFile1 << " ;;\n"
      << "esac\n"
      << "case \"$TUTTI_RANK\" in\n";
  for (size_t r = 0; r < kGpuOfRank.size(); ++r)
    out << "  " << r << ") export TUTTI_TOPO_DEVICE=gpu:" << kGpuOfRank[r] << " ;;\n";
  out << "esac\nexec \"$@\"\n";
  out.close();
  chmod(path, 0755);
  return path;
}

struct Hop {
  int from, to;
  std::string cls;
};

std::vector<Hop> ringOf(const std::string& out) {
  std::vector<Hop> hops;
  size_t at = out.find(" ring: ");
  if (at == std::string::npos) return hops;
  std::istringstream words(out.substr(at + 7, out.find('\n', at) - at - 7));
  std::vector<std::string> w;
  for (std::string s; words >> s;) w.push_back(s);
  for (size_t i = 0; i + 2 < w.size(); i += 2)
    hops.push_back({std::stoi(w[i]), std::stoi(w[i + 2]), w[i + 1].substr(1, w[i + 1].size() - 3)});
  return hops;
}

TEST(PlacementNetns, InterleavedRanksAreGroupedAndEnterThroughTheNic) {
  if (std::string(ALL_REDUCE_PERF_PATH).empty()) GTEST_SKIP() << "all_reduce_perf not built";
  tutti::test::NetnsCluster cluster(2, "", "rank placement across hosts");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  const std::string wrapper = writeWrapper();
  std::string cmd = std::string(TUTTIRUN_PATH) +
                    " -np 6 --hosts tutti-h0:1,tutti-h1:1,tutti-h0:1,tutti-h1:1,tutti-h0:1,"
                    "tutti-h1:1 --timeout 240 -x TUTTI_DEBUG=INFO -x TUTTI_DEBUG_SUBSYS=TOPO " +
                    wrapper + " " + ALL_REDUCE_PERF_PATH +
                    " -b 1K -e 1M -f 32 -n 2 -w 1 -c 1 -A ring,hier,tree,dbtree -d float 2>&1";
  int rc = 0;
  std::string out = runCommand(cmd, &rc);
  std::remove(wrapper.c_str());
  ASSERT_EQ(rc, 0) << cmd << "\n" << out;
  EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;
  // Every row checked (-c 1): ring, hier (host groups and leaders from the order) and the
  // trees over its positions compute right with the hosts' ranks interleaved.
  int rows = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::vector<std::string> w;
    for (std::string x; f >> x;) w.push_back(x);
    // "size count type redop root <GB/s per algorithm> auto auto-algo #wrong"
    if (w.size() < 9 || w[0].find_first_not_of("0123456789") != std::string::npos) continue;
    ++rows;
    EXPECT_EQ(w.back(), "0") << "wrong results: " << line;
  }
  EXPECT_GE(rows, 3) << out;
  EXPECT_NE(out.find(" hier "), std::string::npos) << "no hier column\n" << out;
  std::vector<Hop> hops = ringOf(out);
  ASSERT_EQ(hops.size(), 6u) << out;

  topo::Topology files[2] = {topo::loadTopologyFile(kDir + "/" + kFile0),
                             topo::loadTopologyFile(kDir + "/" + kFile1)};
  auto hostOf = [](int r) { return r % 2; };
  auto nicClass = [&](int r) {
    const topo::Topology& t = files[hostOf(r)];
    return static_cast<int>(
        topo::pathBetween(t, {0, topo::DevKind::kGpu, kGpuOfRank[r]}, {0, topo::DevKind::kNic, 0})
            .cls);
  };
  // Hosts contiguous: exactly two NET hops, and every other hop has the file's class.
  int net = 0;
  for (const Hop& h : hops) {
    if (hostOf(h.from) != hostOf(h.to)) {
      ++net;
      EXPECT_EQ(h.cls, "NET");
      continue;
    }
    const topo::Topology& t = files[hostOf(h.from)];
    // Rank 0 knows its own host's topology only; the others' hops come from their own lines
    // ("rank R host H device D (...); ring position P, prev A via X, next B via Y").
    std::string cls = h.cls;
    if (hostOf(h.from) != 0) {
      EXPECT_EQ(cls, "?");
      std::string key = " rank " + std::to_string(h.from) + " host ";
      size_t at = out.find(key);
      ASSERT_NE(at, std::string::npos) << out;
      std::string line = out.substr(at, out.find('\n', at) - at);
      cls = line.substr(line.rfind(" via ") + 5);
    }
    EXPECT_EQ(cls, topo::pathBetween(t, {0, topo::DevKind::kGpu, kGpuOfRank[h.from]},
                                     {0, topo::DevKind::kGpu, kGpuOfRank[h.to]})
                       .label())
        << h.from << "->" << h.to;
  }
  EXPECT_EQ(net, 2) << out;
  // Each host is entered or left through its NIC-nearest rank.
  for (int host = 0; host < 2; ++host) {
    int best = 99;
    for (int r = host; r < 6; r += 2) best = std::min(best, nicClass(r));
    bool nearEnd = false;
    for (const Hop& h : hops) {
      if (hostOf(h.from) == hostOf(h.to)) continue;
      if (hostOf(h.from) == host && nicClass(h.from) == best) nearEnd = true;
      if (hostOf(h.to) == host && nicClass(h.to) == best) nearEnd = true;
    }
    EXPECT_TRUE(nearEnd) << "host " << host << " is not entered or left through its NIC-nearest "
                         << "rank\n"
                         << out;
  }
}

// "size ... time algbw busbw" rows of all_reduce_perf: the out-of-place time in us per size.
std::map<long, double> timesOf(const std::string& out) {
  std::map<long, double> t;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    long size = 0;
    std::string count, type, op, root;
    double us = 0;
    if (f >> size >> count >> type >> op >> root >> us && size > 0) t[size] = us;
  }
  return t;
}

TEST(PlacementNetns, BenchInterleavedPlacementAgainstWellPlaced) {
  const char* bench = std::getenv("TUTTI_NETNS_BENCH");
  if (!bench || std::string(bench) != "1")
    GTEST_SKIP() << "set TUTTI_NETNS_BENCH=1 to time interleaved against well-placed ranks";
  if (std::string(ALL_REDUCE_PERF_PATH).empty()) GTEST_SKIP() << "all_reduce_perf not built";
  tutti::test::NetnsCluster cluster(2, "--rate 1gbit", "placement bench");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  struct Case {
    const char* name;
    const char* hosts;
    int reorder;
  };
  const Case cases[] = {
      {"well placed", "tutti-h0:2,tutti-h1:2", 1},
      {"interleaved", "tutti-h0:1,tutti-h1:1,tutti-h0:1,tutti-h1:1", 1},
      {"interleaved, TUTTI_TOPO_REORDER=0", "tutti-h0:1,tutti-h1:1,tutti-h0:1,tutti-h1:1", 0}};
  std::map<std::string, std::map<long, std::vector<double>>> times;
  for (int rep = 0; rep < 3; ++rep) {
    for (const Case& c : cases) {
      std::string cmd = std::string(TUTTIRUN_PATH) + " -np 4 --hosts " + c.hosts +
                        " --timeout 280 -x TUTTI_TOPO_REORDER=" + std::to_string(c.reorder) + " " +
                        ALL_REDUCE_PERF_PATH + " -b 16M -e 64M -f 4 -n 5 -w 1 -c 1 -A ring 2>&1";
      int rc = 0;
      std::string out = runCommand(cmd, &rc);
      ASSERT_EQ(rc, 0) << out;
      for (auto [size, us] : timesOf(out)) times[c.name][size].push_back(us);
    }
  }
  for (auto& [size, wellTimes] : times["well placed"]) {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    double well = median(wellTimes);
    double inter = median(times["interleaved"][size]);
    double none = median(times["interleaved, TUTTI_TOPO_REORDER=0"][size]);
    std::printf(
        "4 ranks, 2 hosts, 1 Gbit/s, ring, %ld MiB (medians of 3): well placed %.0f us, "
        "interleaved %.0f us (%.0f %% of well placed), interleaved without reordering %.0f us "
        "(%.0f %%)\n",
        size >> 20, well, inter, 100 * well / inter, none, 100 * well / none);
  }
}

}  // namespace
