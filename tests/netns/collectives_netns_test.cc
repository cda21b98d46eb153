// The tcp slice of the collective correctness matrix: ranks as separate hosts (network
// namespaces tutti-h0..3 of tools/netns-cluster.sh, joined by veth + a bridge), launched by
// `tuttirun --hosts`, each running collectives_netns_rank (every collective x algorithm x
// in/out-of-place x counts, every dtype x op). One rank per namespace means every connection
// is tcp; the 5-rank placement mixes shm inside a namespace with tcp across, and 2 x 2 also runs
// the hierarchical all-gather, reduce-scatter and all-to-all with two ranks per host. Skips unless
// root with a working `ip netns`.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "netns_cluster.h"

namespace {

using tutti::test::runCommand;

// perHost[h] ranks on tutti-h<h>, in rank order (tuttirun --hosts tutti-h0:S0,...).
struct Placement {
  std::vector<int> perHost;
  int ranks() const { return std::accumulate(perHost.begin(), perHost.end(), 0); }
  std::string hosts() const {
    std::string s;
    for (size_t h = 0; h < perHost.size(); ++h)
      s += (h ? ",tutti-h" : "tutti-h") + std::to_string(h) + ":" + std::to_string(perHost[h]);
    return s;
  }
  // What rank r must report: tcp to other namespaces, shm too when it shares its own.
  std::string transportsOf(int r) const {
    for (int h : perHost) {
      if (r < h) return h > 1 ? "shm,tcp" : "tcp";
      r -= h;
    }
    return "?";
  }
};

class CollectivesNetns : public ::testing::TestWithParam<Placement> {};

TEST_P(CollectivesNetns, EveryCollectiveAlgorithmOverTcp) {
  const Placement& p = GetParam();
  tutti::test::NetnsCluster cluster(4, "", "the collectives across namespaces (tcp)");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  std::string cmd = std::string(TUTTIRUN_PATH) + " -np " + std::to_string(p.ranks()) + " --hosts " +
                    p.hosts() + " --timeout 400 " + COLLECTIVES_NETNS_RANK_PATH;
  int rc = 0;
  std::string out = runCommand(cmd, &rc);
  ASSERT_EQ(rc, 0) << cmd << "\n" << out;
  for (int r = 0; r < p.ranks(); ++r) {
    std::string rs = "rank " + std::to_string(r);
    EXPECT_NE(out.find(rs + ": "), std::string::npos) << rs << " did not pass:\n" << out;
    EXPECT_NE(out.find(rs + " transports " + p.transportsOf(r) + "\n"), std::string::npos)
        << rs << " did not use exactly " << p.transportsOf(r) << ":\n"
        << out;
  }
  std::printf("%s", out.c_str());
}

INSTANTIATE_TEST_SUITE_P(Placements, CollectivesNetns,
                         ::testing::Values(Placement{{1, 1}}, Placement{{1, 1, 1}},
                                           Placement{{1, 1, 1, 1}}, Placement{{2, 2, 1}},
                                           Placement{{2, 2}}),
                         [](const ::testing::TestParamInfo<Placement>& info) {
                           return std::to_string(info.param.ranks()) + "RanksOn" +
                                  std::to_string(info.param.perHost.size()) + "Hosts";
                         });

}  // namespace
