// tuttiCommInitRankStore: the rendezvous through a caller's key-value store (here a real
// directory shared by forked ranks, as a framework's store would be), no port of tutti's own
// for the rendezvous.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "dir_store.h"
#include "harness/fork_harness.h"
#include "harness/temp_dir.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

// TCP sockets of this process (from /proc/self/net/tcp{,6} and its fds' inodes): listening
// ones only, or in any state.
int tcpSockets(bool listeningOnly) {
  std::vector<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[256];
      std::string link = std::string("/proc/self/fd/") + e->d_name;
      ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = 0;
      std::string t = target;
      if (t.rfind("socket:[", 0) == 0) inodes.push_back(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  int listening = 0;
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >>
          inode;
      if (listeningOnly && state != "0A") continue;  // TCP_LISTEN
      for (const auto& i : inodes) listening += i == inode;
    }
  }
  return listening;
}

TEST(StoreInit, CollectivesAndSplitWithoutAPort) {
  for (int n : {1, 2, 3, 4}) {
    TempDir dir("tutti-store");
    auto result = runRanks(
        n,
        [&](int rank) {
          // shm only: the tcp transport listens for its data connections (not the rendezvous);
          // no tutti-inspect responder (its own listening socket, docs/reliability.md).
          setenv("TUTTI_TRANSPORT", "shm", 1);
          setenv("TUTTI_INSPECT", "0", 1);
          DirStore s{dir.path()};
          tuttiStore_t store = storeOf(s);
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitRankStore(&comm, n, rank, &store, nullptr), nullptr);
          // One rank needs no rendezvous (no barrier, no all-gather) and asks nothing.
          if (n > 1) {
            EXPECT_GT(s.calls, 0) << "the rendezvous did not use the caller's store";
          }
          // One listening socket: the rank's standby socket (recovery: tuttiCommShrink), no
          // port for the rendezvous.
          EXPECT_EQ(tcpSockets(true), 1) << "a port besides the standby socket";
          // Not even for a while: the bootstrap's all-gathers went through the store, not
          // around a TCP ring of the ranks (whose connections would stay open).
          EXPECT_EQ(tcpSockets(false), 1) << "the rendezvous made TCP connections";
          for (int call = 0; call < 3; ++call) {
            std::vector<double> v(1000 + call);
            for (size_t i = 0; i < v.size(); ++i) v[i] = (rank + 1) * 1000.0 + i * 3 + call;
            TUTTI_ASSERT_OK(
                tuttiAllReduce(v.data(), v.data(), v.size(), tuttiFloat64, tuttiSum, comm, nullptr),
                comm);
            for (size_t i = 0; i < v.size(); ++i) {
              double expected = 0;
              for (int r = 0; r < n; ++r) expected += (r + 1) * 1000.0 + i * 3 + call;
              ASSERT_EQ(v[i], expected) << "call " << call << " element " << i;
            }
          }
          // A split goes through the same store after init.
          tuttiComm_t half = nullptr;
          TUTTI_ASSERT_OK(tuttiCommSplit(comm, rank % 2, rank, &half, nullptr), comm);
          int halfSize = 0;
          TUTTI_ASSERT_OK(tuttiCommCount(half, &halfSize), half);
          EXPECT_EQ(halfSize, (n + 1 - rank % 2) / 2);
          int64_t x = rank + 7, sum = 0;
          TUTTI_ASSERT_OK(tuttiAllReduce(&x, &sum, 1, tuttiInt64, tuttiSum, half, nullptr), half);
          int64_t expected = 0;
          for (int r = rank % 2; r < n; r += 2) expected += r + 7;
          EXPECT_EQ(sum, expected);
          TUTTI_ASSERT_OK(tuttiCommDestroy(half), nullptr);
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        120);
    EXPECT_TRUE(result.allOk()) << n << " ranks: " << result.describe();
  }
}

TEST(StoreInit, MissingRankTimesOutNamingIt) {
  TempDir dir("tutti-store");
  auto result = runRanks(
      2,
      [&](int rank) {
        if (rank == 1) return;  // never joins
        DirStore s{dir.path()};
        tuttiStore_t store = storeOf(s);
        tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
        config.timeoutMs = 1500;
        tuttiComm_t comm = nullptr;
        tuttiResult_t r = tuttiCommInitRankStore(&comm, 3, rank, &store, &config);
        EXPECT_EQ(r, tuttiTimeout) << tuttiGetLastError(nullptr);
        std::string msg = tuttiGetLastError(nullptr);
        EXPECT_NE(msg.find("rank(s) 1, 2"), std::string::npos) << msg;
      },
      60);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

TEST(StoreInit, BadArguments) {
  tuttiComm_t comm = nullptr;
  EXPECT_EQ(tuttiCommInitRankStore(&comm, 2, 0, nullptr, nullptr), tuttiInvalidArgument);
  EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("store is NULL"), std::string::npos);
  DirStore s{"/nonexistent"};
  tuttiStore_t store = storeOf(s);
  store.add = nullptr;
  EXPECT_EQ(tuttiCommInitRankStore(&comm, 2, 0, &store, nullptr), tuttiInvalidArgument);
  EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("callbacks are all required"),
            std::string::npos);
  store = storeOf(s);  // every set fails: the directory does not exist
  EXPECT_EQ(tuttiCommInitRankStore(&comm, 1, 0, &store, nullptr), tuttiRemoteError);
  EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("caller's store: set"), std::string::npos)
      << tuttiGetLastError(nullptr);
}

}  // namespace
}  // namespace tutti::test
