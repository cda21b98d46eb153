// tcp across network namespaces: each rank is a forked process that joins its own namespace
// (tutti-h<i>, made by tools/netns-cluster.sh) before creating sockets, so the ranks are
// "hosts" 10.77.0.(i+1) joined by a bridge. Rendezvous through a FileStore (the filesystem
// is shared). Skips unless run as root with working `ip netns`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bootstrap/file_store.h"
#include "common/error.h"
#include "netns_cluster.h"
#include "tcp_test_util.h"

namespace tutti::transport {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

using tutti::test::runCommand;

void enterNamespace(int host) {
  std::string path = "/var/run/netns/tutti-h" + std::to_string(host);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throwSystemError("open " + path);
  if (setns(fd, CLONE_NEWNET) != 0) throwSystemError("setns " + path);
  close(fd);
}

struct Job {
  std::string dir;
  int n;
  // Per rank, after connecting; returns a figure to report (written to dir/result-<rank>).
  std::function<double(int, tcptest::TcpRank&)> body;
};

// Runs every rank in its own namespace; returns the ranks' figures.
std::vector<double> runJob(const Job& job) {
  std::filesystem::remove_all(job.dir);
  std::filesystem::create_directories(job.dir);
  auto peers = tcptest::makePeers(job.n, "tutti-h", /*oneHost=*/false);
  std::vector<pid_t> pids;
  fflush(nullptr);
  for (int r = 0; r < job.n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(120);  // a hung rank dies instead of hanging the test (and the namespaces)
      int rc = 0;
      try {
        enterNamespace(r);  // before any socket exists
        bootstrap::FileStore store(job.dir + "/store");
        auto tr = tcptest::connectRank(r, peers, store);
        std::string addr = tcpListenAddress(*tr.transport);
        std::string want = "10.77.0." + std::to_string(r + 1) + ":";
        if (addr.rfind(want, 0) != 0 || tcpListenInterface(*tr.transport) != "eth0") {
          throw std::runtime_error("rank " + std::to_string(r) + " listens on " +
                                   tcpListenInterface(*tr.transport) + " " + addr +
                                   ", expected eth0 " + want + "*");
        }
        double figure = job.body(r, tr);
        std::ofstream(job.dir + "/result-" + std::to_string(r)) << figure << "\n";
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d (namespace tutti-h%d): %s\n", r, r, e.what());
        rc = 1;
      }
      fflush(nullptr);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  std::vector<double> figures(job.n, -1);
  for (int r = 0; r < job.n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " failed";
    std::ifstream in(job.dir + "/result-" + std::to_string(r));
    in >> figures[r];
  }
  std::filesystem::remove_all(job.dir);
  return figures;
}

std::string jobDir(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tutti-netns-" + name + "-" + std::to_string(getpid())))
      .string();
}

TEST(TcpNetns, ConformanceAcrossFourNamespaces) {
  tutti::test::NetnsCluster cluster(4, "", "tcp across namespaces");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  runJob({jobDir("conf"), 4, [](int r, tcptest::TcpRank& tr) {
            conformance::runAll(tr.view(r, 4), 16 * kMiB);
            return 0.0;
          }});
}

TEST(TcpNetns, UnshapedBandwidth256MiB) {
  tutti::test::NetnsCluster cluster(2, "", "tcp across namespaces");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  auto f = runJob({jobDir("bw"), 2, [](int r, tcptest::TcpRank& tr) {
                     return tcptest::timedTransfer(*tr.conns[1 - r], r == 0, 256 * kMiB, 0, 1);
                   }});
  ASSERT_GT(f[1], 0);
  double gbs = 256.0 * kMiB / f[1] / 1e9;
  std::printf("tcp across namespaces (veth + bridge, unshaped) 256 MiB: %.3f s, %.2f GB/s\n", f[1],
              gbs);
  EXPECT_GT(gbs, 0.01);
}

TEST(TcpNetns, ShapedTo1GbitReaches85Percent) {
  tutti::test::NetnsCluster cluster(2, "--rate 1gbit", "tcp across namespaces");
  if (!cluster.up()) GTEST_SKIP() << cluster.why();
  auto f = runJob({jobDir("shaped"), 2, [](int r, tcptest::TcpRank& tr) {
                     return tcptest::timedTransfer(*tr.conns[1 - r], r == 0, 64 * kMiB, 0, 1);
                   }});
  ASSERT_GT(f[1], 0);
  double gbit = 64.0 * kMiB * 8 / f[1] / 1e9;
  std::printf("tcp across namespaces shaped to 1 Gbit/s, 64 MiB: %.3f s, %.3f Gbit/s (%.1f%%)\n",
              f[1], gbit, gbit * 100);
  EXPECT_GE(gbit, 0.85);
}

}  // namespace
}  // namespace tutti::transport
