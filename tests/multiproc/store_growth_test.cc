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

// Rank 0 serves the job's store in its process (as a launch from the environment does);
// every rank, rank 0 too, is a client.
struct JobStore {
  std::unique_ptr<bootstrap::TcpStoreServer> server;  // rank 0's
  std::shared_ptr<bootstrap::Store> store;
};
JobStore joinJobStore(int rank, Shared& shared) {
  JobStore j;
  if (rank == 0) {
    j.server = std::make_unique<bootstrap::TcpStoreServer>("127.0.0.1:0", shared.secret);
    shared.port.store(j.server->sockAddr().port());
  }
  while (shared.port.load() == 0) usleep(1000);
  j.store = std::make_shared<bootstrap::TcpStore>("127.0.0.1:" + std::to_string(shared.port.load()),
                                                  shared.secret, Deadline(30));
  return j;
}

constexpr int kRanks = 3;
constexpr int kCycles = 20;

CommOptions options() {
  CommOptions o;
  o.timeoutSec = 30;
  // Online refinement tries other algorithms in later cycles, and their first calls connect
  // peers the first cycle did not (a bounded number of keys, once): the growth counted here
  // must come from the cycles alone, so the world plans with the cost model.
  o.selfTune = false;
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
    auto [server, store] = joinJobStore(rank, *shared);
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
    if (rank == 0) {
      EXPECT_EQ(server->stats().keys, 0u) << what << ": keys left after the world";
    }
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

// A split child takes its members' peer records from the parent and connects its bootstrap
// ring through addresses passed in the split's own all-gather: no roll call, no exchange of
// peer records, no store request for the ring. Rank 0's store serves a split child (split,
// init, an all-reduce, leave) fewer requests than a communicator made afresh over the same
// ranks, and no more per rank at 6 ranks than at 3 (the requests of each do not depend on n).
struct Requests {
  uint64_t fresh = 0, split = 0;
};

Requests measure(int n) {
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(mem, MAP_FAILED);
  auto* shared = new (mem) Shared{};
  shared->secret = bootstrap::randomSecret();
  auto* out = static_cast<Requests*>(
      mmap(nullptr, sizeof(Requests), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  auto r = runRanks(n, [&](int rank) {
    auto [server, store] = joinJobStore(rank, *shared);
    Communicator world(store, "world", rank, n, options());
    checkAllReduce(world);  // the world's connections, before counting
    world.barrier();
    uint64_t before = rank == 0 ? server->stats().requests : 0;
    {
      Communicator c(store, "fresh", rank, n, options());
      checkAllReduce(c);
      c.leave();
    }
    world.barrier();
    uint64_t mid = rank == 0 ? server->stats().requests : 0;
    {
      auto child = world.split(0, rank, options());
      checkAllReduce(*child);
      child->leave();
    }
    world.barrier();
    if (rank == 0) {
      out->fresh = mid - before;
      out->split = server->stats().requests - mid;
    }
    world.leave();
  });
  EXPECT_TRUE(r.allOk()) << r.describe();
  Requests got = *out;
  munmap(out, sizeof(Requests));
  munmap(mem, sizeof(Shared));
  return got;
}

TEST(StoreGrowth, SplitChildAsksTheStoreLessThanAFreshCommunicator) {
  Requests three = measure(3);
  Requests six = measure(6);
  std::printf("store requests per rank: fresh %.1f (3 ranks), %.1f (6); split child %.1f, %.1f\n",
              three.fresh / 3.0, six.fresh / 6.0, three.split / 3.0, six.split / 6.0);
  EXPECT_LT(three.split, three.fresh);
  EXPECT_LT(six.split, six.fresh);
  // Constant per rank (rank 0's leave reads one key of each other rank: within 1 per rank).
  EXPECT_LE(six.split / 6.0, three.split / 3.0 + 1.0);
}

}  // namespace
}  // namespace tutti::test
