// tuttiCommInitRankStore: the rendezvous through a caller's key-value store (here a real
// directory shared by forked ranks, as a framework's store would be), no port of tutti's own.
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
#include "harness/fork_harness.h"
#include "harness/temp_dir.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

// Keys become file names ('/' escaped); a value is written to a temporary file and renamed
// into place, so a reader never sees half of it. add() holds an flock on a lock file.
struct DirStore {
  std::string dir;
  int calls = 0;  // callbacks made by this rank
  std::string path(const char* key) const {
    std::string name = key;
    for (char& c : name)
      if (c == '/') c = '%';
    return dir + "/" + name;
  }
};

int dirSet(void* ctx, const char* key, const void* value, size_t size) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  std::string final = s->path(key), tmp = final + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(tmp.c_str(), "wb");
  if (f == nullptr) return 1;
  bool ok = size == 0 || fwrite(value, 1, size, f) == size;
  ok = fclose(f) == 0 && ok;
  return ok && rename(tmp.c_str(), final.c_str()) == 0 ? 0 : 1;
}

int dirGet(void* ctx, const char* key, void (*sink)(void*, const void*, size_t), void* sinkCtx) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  std::ifstream in(s->path(key), std::ios::binary);
  if (!in) return 1;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  sink(sinkCtx, bytes.data(), bytes.size());
  return 0;
}

int dirCheck(void* ctx, const char* key, int* exists) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  *exists = access(s->path(key).c_str(), F_OK) == 0 ? 1 : 0;
  return 0;
}

int dirAdd(void* ctx, const char* key, int64_t delta, int64_t* result) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  int lock = open((s->dir + "/.lock").c_str(), O_CREAT | O_RDWR, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) return 1;
  int64_t value = 0;
  {
    std::ifstream in(s->path(key));
    if (in) in >> value;
  }
  value += delta;
  std::string text = std::to_string(value);
  int r = dirSet(ctx, key, text.data(), text.size());
  close(lock);
  *result = value;
  return r;
}

tuttiStore_t storeOf(DirStore& s) { return tuttiStore_t{&s, dirSet, dirGet, dirCheck, dirAdd}; }

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
          // shm only: the tcp transport listens for its data connections (not the rendezvous).
          setenv("TUTTI_TRANSPORT", "shm", 1);
          DirStore s{dir.path()};
          tuttiStore_t store = storeOf(s);
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitRankStore(&comm, n, rank, &store, nullptr), nullptr);
          // One rank needs no rendezvous (no barrier, no all-gather) and asks nothing.
          if (n > 1) EXPECT_GT(s.calls, 0) << "the rendezvous did not use the caller's store";
          EXPECT_EQ(tcpSockets(true), 0) << "the rendezvous opened a listening port";
          // Not even for a while: the bootstrap's all-gathers went through the store, not
          // around a TCP ring of the ranks (whose connections would stay open).
          EXPECT_EQ(tcpSockets(false), 0) << "the rendezvous made TCP connections";
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
