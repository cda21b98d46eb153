// Rank placement across network namespaces: ranks interleaved over 2 and 4 hosts (h0, h1, h0,
// ...), each host loading its own topology file and each rank standing for one GPU of it. The
// communicator's ring (rank 0's TOPO log) must keep each host's ranks contiguous, enter or
// leave each host through its NIC-nearest rank, give every in-host hop the file's link class,
// hier must group each host's ranks under a NIC-nearest leader, and all must compute right
// (all_reduce_perf -c 1 with ring, hier, tree and dbtree). With
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

// A job: rank r runs on namespace host hostOf[r] (tutti-hH), which loads files[H], and stands
// for GPU gpuOf[r] of it.
struct Layout {
  std::vector<std::string> files;
  std::vector<int> hostOf, gpuOf;
  int ranks() const { return static_cast<int>(hostOf.size()); }
  int hosts() const { return static_cast<int>(files.size()); }
};

// 2 hosts, ranks interleaved h0, h1, h0, ...: one NIC each, h0's under the PCIe switch of GPUs
// 4-7 (PIX), h1's on the host bridge of GPUs 0-3 (PHB).
Layout twoHosts() {
  return {{"nccl_8xRTX3090_pcie_1xcx6.xml", "nccl_azure-ndv2_8xV100_1xib_partial.xml"},
          {0, 1, 0, 1, 0, 1},
          {0, 5, 4, 0, 1, 6}};
}

// 4 hosts, 3 ranks each, interleaved round robin; the two more hosts have several NICs (4 EFA,
// 5 ConnectX-6 Dx), so the host's NIC is the library's choice among them.
Layout fourHosts() {
  return {
      {"nccl_8xRTX3090_pcie_1xcx6.xml", "nccl_azure-ndv2_8xV100_1xib_partial.xml",
       "nccl_aws-p4d_8xA100_4xefa_static.xml", "nccl_hgx-a100_8xA100-80G_6nvswitch_5xcx6dx.xml"},
      {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3},
      {0, 5, 1, 6, 5, 0, 7, 2, 4, 6, 4, 0}};
}

// A wrapper that gives each rank its host's file and its GPU, then runs the command.
std::string writeWrapper(const Layout& l) {
  char path[] = "/tmp/tutti_placement_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream out(path);
  out << "#!/bin/sh\n"
      << "case \"$(ip netns identify $$)\" in\n";
  for (int h = 0; h < l.hosts(); ++h)
    out << "  tutti-h" << h << ") export TUTTI_TOPO_FILE=" << kDir << "/" << l.files[h] << " ;;\n";
  out << "esac\n"
      << "case \"$TUTTI_RANK\" in\n";
  for (int r = 0; r < l.ranks(); ++r)
    out << "  " << r << ") export TUTTI_TOPO_DEVICE=gpu:" << l.gpuOf[r] << " ;;\n";
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

// hier's host groups from rank 0's "hier hosts (leader first): [a b] [c d]" line.
std::vector<std::vector<int>> hierGroupsOf(const std::string& out) {
  std::vector<std::vector<int>> groups;
  size_t at = out.find("hier hosts (leader first):");
  if (at == std::string::npos) return groups;
  std::string line = out.substr(at, out.find('\n', at) - at);
  for (size_t open = line.find('['); open != std::string::npos; open = line.find('[', open + 1)) {
    std::istringstream members(line.substr(open + 1, line.find(']', open) - open - 1));
    groups.emplace_back();
    for (int r; members >> r;) groups.back().push_back(r);
  }
  return groups;
}

// The host's NIC as the library picks it (RDMA first, then the fastest port, then the lowest
// index), worked out here from the file.
int hostNic(const topo::Topology& t) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(t.nics.size()); ++i) {
    auto key = [&](int k) {
      return std::make_pair(t.nics[k].rdma ? 0 : 1, -t.nics[k].speedMbps.value_or(0));
    };
    if (best < 0 || key(i) < key(best)) best = i;
  }
  return best;
}

// Runs the layout's job (ring, hier, tree and dbtree all-reduces, checked) and checks the
// placement in rank 0's TOPO log: hosts contiguous in the ring, every in-host hop of the
// host file's class, each host entered or left through a NIC-nearest rank, and hier's groups
// are the hosts with a NIC-nearest leader.
void checkPlacement(const Layout& l) {
  if (std::string(ALL_REDUCE_PERF_PATH).empty()) GTEST_SKIP() << "all_reduce_perf not built";
  tutti::test::NetnsCluster cluster(l.hosts(), "", "rank placement across hosts");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  const std::string wrapper = writeWrapper(l);
  std::string hosts;
  for (int r = 0; r < l.ranks(); ++r)
    hosts += (r ? ",tutti-h" : "tutti-h") + std::to_string(l.hostOf[r]) + ":1";
  std::string cmd = std::string(TUTTIRUN_PATH) + " -np " + std::to_string(l.ranks()) + " --hosts " +
                    hosts + " --timeout 240 -x TUTTI_DEBUG=INFO -x TUTTI_DEBUG_SUBSYS=TOPO " +
                    wrapper + " " + ALL_REDUCE_PERF_PATH +
                    " -b 1K -e 64K -f 8 -n 2 -w 1 -c 1 -A ring,hier,tree,dbtree -d float 2>&1";
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
  ASSERT_EQ(hops.size(), static_cast<size_t>(l.ranks())) << out;

  std::vector<topo::Topology> files;
  for (const std::string& f : l.files) files.push_back(topo::loadTopologyFile(kDir + "/" + f));
  auto nicClass = [&](int r) {
    const topo::Topology& t = files[l.hostOf[r]];
    return static_cast<int>(topo::pathBetween(t, {0, topo::DevKind::kGpu, l.gpuOf[r]},
                                              {0, topo::DevKind::kNic, hostNic(t)})
                                .cls);
  };
  auto bestOf = [&](int host) {
    int best = 99;
    for (int r = 0; r < l.ranks(); ++r)
      if (l.hostOf[r] == host) best = std::min(best, nicClass(r));
    return best;
  };
  // Hosts contiguous: exactly one NET hop per host, and every other hop has the file's class.
  int net = 0;
  for (const Hop& h : hops) {
    if (l.hostOf[h.from] != l.hostOf[h.to]) {
      ++net;
      EXPECT_EQ(h.cls, "NET");
      continue;
    }
    const topo::Topology& t = files[l.hostOf[h.from]];
    // Rank 0 knows its own host's topology only; the others' hops come from their own lines
    // ("rank R host H device D (...); ring position P, prev A via X, next B via Y").
    std::string cls = h.cls;
    if (l.hostOf[h.from] != l.hostOf[0]) {
      EXPECT_EQ(cls, "?");
      std::string key = " rank " + std::to_string(h.from) + " host ";
      size_t at = out.find(key);
      ASSERT_NE(at, std::string::npos) << out;
      std::string line = out.substr(at, out.find('\n', at) - at);
      cls = line.substr(line.rfind(" via ") + 5);
    }
    EXPECT_EQ(cls, topo::pathBetween(t, {0, topo::DevKind::kGpu, l.gpuOf[h.from]},
                                     {0, topo::DevKind::kGpu, l.gpuOf[h.to]})
                       .label())
        << h.from << "->" << h.to;
  }
  EXPECT_EQ(net, l.hosts()) << out;
  // Each host is entered or left through its NIC-nearest rank.
  for (int host = 0; host < l.hosts(); ++host) {
    int best = bestOf(host);
    bool nearEnd = false;
    for (const Hop& h : hops) {
      if (l.hostOf[h.from] == l.hostOf[h.to]) continue;
      if (l.hostOf[h.from] == host && nicClass(h.from) == best) nearEnd = true;
      if (l.hostOf[h.to] == host && nicClass(h.to) == best) nearEnd = true;
    }
    EXPECT_TRUE(nearEnd) << "host " << host << " is not entered or left through its NIC-nearest "
                         << "rank\n"
                         << out;
  }
  // hier: one group per host holding exactly its ranks, led by a NIC-nearest rank.
  std::vector<std::vector<int>> groups = hierGroupsOf(out);
  ASSERT_EQ(groups.size(), static_cast<size_t>(l.hosts())) << out;
  for (const auto& g : groups) {
    ASSERT_FALSE(g.empty()) << out;
    int host = l.hostOf[g[0]];
    std::vector<int> mine, want;
    for (int r : g) mine.push_back(r);
    for (int r = 0; r < l.ranks(); ++r)
      if (l.hostOf[r] == host) want.push_back(r);
    std::sort(mine.begin(), mine.end());
    EXPECT_EQ(mine, want) << "hier group of host " << host << "\n" << out;
    EXPECT_EQ(nicClass(g[0]), bestOf(host))
        << "hier leader " << g[0] << " of host " << host << " is not NIC-nearest\n"
        << out;
  }
}

TEST(PlacementNetns, InterleavedRanksAreGroupedAndEnterThroughTheNic) {
  checkPlacement(twoHosts());
}

TEST(PlacementNetns, FourHostsEachWithItsOwnFile) { checkPlacement(fourHosts()); }

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
