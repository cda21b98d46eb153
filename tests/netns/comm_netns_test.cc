// Communicators across network namespaces through `tuttirun --hosts`: 8 ranks on 4 "hosts"
// (tutti-h0..3 from tools/netns-cluster.sh, 2 ranks each). Checks collectives and grouped
// send/recv (netns_allreduce), that ranks on one namespace connect via shm and ranks on
// different namespaces via tcp (from the TUTTI_DEBUG_SUBSYS=TRANSPORT log lines), and runs
// all_reduce_perf over 1 Gbit/s links. Skips unless root with a working `ip netns`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "netns_cluster.h"

namespace {

constexpr int kRanks = 8;
constexpr int kHosts = 4;
const char* kHostList = "tutti-h0,tutti-h1,tutti-h2,tutti-h3";

using tutti::test::runCommand;

std::string tuttirun(const std::string& args) {
  return std::string(TUTTIRUN_PATH) + " -np " + std::to_string(kRanks) + " --hosts " + kHostList +
         " --timeout 90 " + args;
}

int hostOf(int rank) { return rank / (kRanks / kHosts); }

TEST(CommNetns, CollectivesShmWithinTcpAcrossNamespaces) {
  tutti::test::NetnsCluster cluster(kHosts, "", "tuttirun --hosts");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  int rc = 0;
  std::string out = runCommand(tuttirun("-x TUTTI_DEBUG=INFO -x TUTTI_DEBUG_SUBSYS=TRANSPORT " +
                                        std::string(NETNS_ALLREDUCE_PATH)),
                               &rc);
  ASSERT_EQ(rc, 0) << out;
  for (int r = 0; r < kRanks; ++r)
    EXPECT_NE(out.find("rank " + std::to_string(r) + " OK"), std::string::npos)
        << "rank " << r << " did not pass:\n"
        << out;
  std::regex ring(R"(rank \d+ all-reduce ring count \d+ algorithm ring)");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(out.begin(), out.end(), ring), std::sregex_iterator()),
      kRanks)
      << "TUTTI_ALGO allreduce:ring not used on every rank:\n"
      << out;
  // Every rank talks to peers on its own namespace and on others: both transports.
  std::regex transports(R"(rank (\d+) transports (\S+))");
  int nTransports = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), transports), end; it != end; ++it) {
    EXPECT_EQ((*it)[2].str(), "shm,tcp") << (*it)[0].str();
    ++nTransports;
  }
  EXPECT_EQ(nTransports, kRanks) << out;

  // "rank A -> rank B (host ..., pid ...) via shm|tcp" (src/comm/communicator.cc).
  std::regex conn(R"(rank (\d+) -> rank (\d+) \([^)]*\) via (\w+))");
  std::map<std::string, int> count;
  std::set<std::pair<int, int>> pairs;
  for (std::sregex_iterator it(out.begin(), out.end(), conn), end; it != end; ++it) {
    int a = std::stoi((*it)[1].str()), b = std::stoi((*it)[2].str());
    std::string via = (*it)[3].str();
    const char* want = hostOf(a) == hostOf(b) ? "shm" : "tcp";
    EXPECT_EQ(via, want) << "rank " << a << " (tutti-h" << hostOf(a) << ") -> rank " << b
                         << " (tutti-h" << hostOf(b) << ")";
    ++count[via];
    pairs.insert({a, b});
  }
  EXPECT_GT(count["shm"], 0) << out;
  EXPECT_GT(count["tcp"], 0) << out;
  // The grouped all-pairs send/recv connects every ordered pair.
  EXPECT_EQ(pairs.size(), static_cast<size_t>(kRanks * (kRanks - 1))) << out;
  std::printf("connections logged: %d via shm, %d via tcp\n", count["shm"], count["tcp"]);
}

TEST(CommNetns, AllReducePerfOverShapedLinks) {
  if (std::string(ALL_REDUCE_PERF_PATH).empty())
    GTEST_SKIP() << "all_reduce_perf is not built (TUTTI_BUILD_PERF=OFF)";
  tutti::test::NetnsCluster cluster(kHosts, "--rate 1gbit", "tuttirun --hosts");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  int rc = 0;
  std::string out = runCommand(
      tuttirun(std::string(ALL_REDUCE_PERF_PATH) + " -b 1M -e 16M -f 4 -c 1 -n 5 -w 1"), &rc);
  ASSERT_EQ(rc, 0) << out;
  // Data rows: size count type redop root time algbw busbw #wrong time algbw busbw #wrong.
  std::istringstream lines(out);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::vector<std::string> t;
    for (std::string w; f >> w;) t.push_back(w);
    if (t.size() < 13 || t[0].find_first_not_of("0123456789") != std::string::npos) continue;
    ++rows;
    EXPECT_EQ(t[8], "0") << "out-of-place #wrong: " << line;
    EXPECT_EQ(t[12], "0") << "in-place #wrong: " << line;
    std::printf("across namespaces (1gbit): %10s B  busbw %s GB/s (oop) %s GB/s (ip)\n",
                t[0].c_str(), t[7].c_str(), t[11].c_str());
  }
  EXPECT_EQ(rows, 3) << out;  // 1M, 4M, 16M
}

}  // namespace
