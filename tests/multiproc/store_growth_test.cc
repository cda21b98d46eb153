// D13: a communicator created and destroyed leaves nothing in rank 0's store. Three forked
// ranks run Communicators over a TcpStore whose server lives in rank 0 (as in a launch from
// the environment, where every communicator of the job shares rank 0's store); rank 0 counts
// the keys and bytes the server holds between cycles, while every rank waits in a barrier of
// a world communicator (barriers go over its connections, not the store).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bootstrap/secret.h"
#include "bootstrap/tcp_store.h"
#include "comm/communicator.h"
#include "harness/fork_harness.h"

namespace tutti::test {
namespace {

struct Shared {
  std::atomic<int> port{0};
  bootstrap::Secret secret;
};

constexpr int kRanks = 3;
constexpr int kCycles = 20;

CommOptions options() {
  CommOptions o;
  o.timeoutSec = 30;
  return o;
}

// A cycle: an all-reduce with values distinct per rank and element, checked.
void checkAllReduce(Communicator& c) {
  std::vector<int32_t> v(257);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (c.rank() + 1) * 1000 + static_cast<int32_t>(i);
  c.allReduce(v.data(), v.data(), v.size(), tuttiInt32, tuttiSum);
  int n = c.size();
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], 1000 * n * (n + 1) / 2 + n * static_cast<int32_t>(i)) << "element " << i;
}

template <typename Cycle>
void runCycles(const char* what, Cycle cycle) {
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* shared = new (mem) Shared{};
  shared->secret = bootstrap::randomSecret();
  auto r = runRanks(kRanks, [&](int rank) {
    std::unique_ptr<bootstrap::TcpStoreServer> server;
    if (rank == 0) {
      server = std::make_unique<bootstrap::TcpStoreServer>("127.0.0.1:0", shared->secret);
      shared->port.store(server->sockAddr().port());
    }
    while (shared->port.load() == 0) usleep(1000);
    auto store = std::make_shared<bootstrap::TcpStore>(
        "127.0.0.1:" + std::to_string(shared->port.load()), shared->secret, Deadline(30));
    Communicator world(store, "world", rank, kRanks, options());
    world.barrier();
    std::vector<bootstrap::TcpStoreStats> after;
    for (int i = 0; i <= kCycles; ++i) {
      cycle(world, store, i);
      world.barrier();  // every rank's cycle is over
      if (rank == 0) after.push_back(server->stats());
      world.barrier();  // rank 0 has counted
    }
    if (rank == 0) {
      // Cycle 0 warms up (the world's first connections); 20 more must add nothing.
      EXPECT_EQ(after[kCycles].keys, after[0].keys)
          << what << ": keys after cycle 1: " << after[0].keys << ", after " << kCycles + 1 << ": "
          << after[kCycles].keys;
      EXPECT_EQ(after[kCycles].bytes, after[0].bytes)
          << what << ": bytes after cycle 1: " << after[0].bytes << ", after " << kCycles + 1
          << ": " << after[kCycles].bytes;
      std::printf("%s: keys %llu, bytes %llu after the first cycle; %llu, %llu after %d more\n",
                  what, static_cast<unsigned long long>(after[0].keys),
                  static_cast<unsigned long long>(after[0].bytes),
                  static_cast<unsigned long long>(after[kCycles].keys),
                  static_cast<unsigned long long>(after[kCycles].bytes), kCycles);
    }
    world.leave();
    if (rank == 0) EXPECT_EQ(server->stats().keys, 0u) << what << ": keys left after the world";
  });
  EXPECT_TRUE(r.allOk()) << r.describe();
  munmap(mem, sizeof(Shared));
}

// Communicators of all ranks made and destroyed on the shared store, one after another.
TEST(StoreGrowth, CommunicatorsCreatedAndDestroyedLeaveNoKeys) {
  runCycles("init/destroy", [](Communicator& world, const std::shared_ptr<bootstrap::Store>& store,
                               int i) {
    Communicator c(store, "cycle" + std::to_string(i), world.rank(), world.size(), options());
    checkAllReduce(c);
    c.barrier();
    c.leave();
  });
}

// Splits of the world (two colors, one rank left out every third cycle), used and destroyed.
TEST(StoreGrowth, SplitsCreatedAndDestroyedLeaveNoKeys) {
  runCycles("split/destroy",
            [](Communicator& world, const std::shared_ptr<bootstrap::Store>&, int i) {
              int color = world.rank() % 2;
              if (i % 3 == 2 && world.rank() == 1) color = TUTTI_SPLIT_NOCOLOR;
              auto child = world.split(color, world.size() - world.rank(), options());
              if (child == nullptr) return;
              checkAllReduce(*child);
              child->leave();
            });
}

}  // namespace
}  // namespace tutti::test
