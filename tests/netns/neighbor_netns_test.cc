// tuttiNeighborAllReduce across network namespaces (tools/netns-cluster.sh hosts, tcp between
// them, shm inside): every built-in graph and the hierarchical one-peer graph checked against
// the reference (netns_neighbor check) with 8 ranks on 4 hosts, 6 ranks on 3 hosts and 3 ranks
// on 3 hosts (non-powers of two). With TUTTI_NETNS_BENCH=1 also times the one-peer neighbour
// all-reduce against tutti's all-reduce algorithms on 8 hosts at 100 Mbit/s, 4 MiB float32 per
// rank, and prints the ratios (never fails on timing). Skips unless root.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "netns_cluster.h"

namespace {

using tutti::test::runCommand;

std::string hostList(int hosts) {
  std::string s;
  for (int h = 0; h < hosts; ++h) s += (h ? ",tutti-h" : "tutti-h") + std::to_string(h);
  return s;
}

void runCheck(int ranks, int hosts) {
  int rc = 0;
  std::string cmd = std::string(TUTTIRUN_PATH) + " -np " + std::to_string(ranks) + " --hosts " +
                    hostList(hosts) + " --timeout 120 " + NETNS_NEIGHBOR_PATH + " check " +
                    std::to_string(ranks / hosts);
  std::string out = runCommand(cmd, &rc);
  ASSERT_EQ(rc, 0) << cmd << "\n" << out;
  for (int r = 0; r < ranks; ++r)
    EXPECT_NE(out.find("rank " + std::to_string(r) + " OK"), std::string::npos)
        << "rank " << r << " did not pass:\n"
        << out;
  const std::string want = ranks > hosts ? "shm,tcp" : "tcp";
  EXPECT_NE(out.find("transports " + want), std::string::npos) << out;
}

TEST(NeighborNetns, EveryGraphAcrossHosts) {
  tutti::test::NetnsCluster cluster(4, "", "the neighbour all-reduce across hosts");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  runCheck(8, 4);
  runCheck(6, 3);
  runCheck(3, 3);
}

TEST(NeighborNetns, BenchOnePeerVsAllReduce) {
  const char* bench = std::getenv("TUTTI_NETNS_BENCH");
  if (!bench || std::string(bench) != "1")
    GTEST_SKIP() << "set TUTTI_NETNS_BENCH=1 to time the one-peer neighbour all-reduce";
  tutti::test::NetnsCluster cluster(8, "--rate 100mbit", "one-peer vs all-reduce");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  int rc = 0;
  std::string cmd = std::string(TUTTIRUN_PATH) + " -np 8 --hosts " + hostList(8) +
                    " --timeout 500 " + NETNS_NEIGHBOR_PATH + " bench 4194304 5";
  std::string out = runCommand(cmd, &rc);
  ASSERT_EQ(rc, 0) << cmd << "\n" << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("neighbor one-peer"), std::string::npos) << out;
}

}  // namespace
