// What the recovery tests share: a unique id made in rank 0's process (so that its death takes
// the store with it), inputs distinct per rank, element and call, and verified collectives on
// a shrunk communicator.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <new>
#include <vector>

#include "comm_test_util.h"
#include "tutti/tutti.h"

namespace tutti::test {

// A unique id made by rank 0's process, handed to the other ranks through shared memory
// mapped before the fork (the test process stays single-threaded).
class Rank0Id {
 public:
  Rank0Id() {
    void* mem =
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(mem, MAP_FAILED);
    shared_ = new (mem) Shared{};
  }
  ~Rank0Id() { munmap(shared_, sizeof(Shared)); }
  Rank0Id(const Rank0Id&) = delete;
  Rank0Id& operator=(const Rank0Id&) = delete;
  // In rank `rank`'s process: rank 0 makes the id, the others wait for it.
  bool get(int rank, tuttiUniqueId* id) {
    if (rank == 0) {
      tuttiResult_t r = tuttiGetUniqueId(&shared_->id);
      shared_->state.store(r == tuttiSuccess ? 1 : 2);
    }
    for (int i = 0; i < 30000 && shared_->state.load() == 0; ++i) usleep(1000);
    *id = shared_->id;
    return shared_->state.load() == 1;
  }

 private:
  struct Shared {
    std::atomic<int> state{0};  // 0 pending, 1 ok, 2 failed
    tuttiUniqueId id{};
  };
  Shared* shared_ = nullptr;
};

inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Element i of the input of the rank that was rank `old` of the parent, in call `call`:
// distinct per rank, element and call, exact in a double.
inline double input(int old, size_t i, int call) {
  return (old + 1) * 1e6 + static_cast<double>(i % 9973) * 7 + call * 0.5;
}

// Verified all-reduce, all-gather and broadcast (two roots) on `comm`, whose rank r was
// rank members[r] of the parent.
inline void checkCollectives(tuttiComm_t comm, const std::vector<int>& members) {
  int n = 0, me = -1;
  TUTTI_ASSERT_OK(tuttiCommCount(comm, &n), comm);
  TUTTI_ASSERT_OK(tuttiCommUserRank(comm, &me), comm);
  ASSERT_EQ(n, static_cast<int>(members.size()));
  const size_t count = 5003;
  for (int call = 0; call < 3; ++call) {
    std::vector<double> in(count), out(count, -1);
    for (size_t i = 0; i < count; ++i) in[i] = input(members[me], i, call);
    TUTTI_ASSERT_OK(
        tuttiAllReduce(in.data(), out.data(), count, tuttiFloat64, tuttiSum, comm, nullptr), comm);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      for (int old : members) want += input(old, i, call);
      wrong += out[i] != want;
    }
    EXPECT_EQ(wrong, 0u) << "all-reduce call " << call;

    std::vector<double> gathered(count * n, -1);
    TUTTI_ASSERT_OK(tuttiAllGather(in.data(), gathered.data(), count, tuttiFloat64, comm, nullptr),
                    comm);
    wrong = 0;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        wrong += gathered[r * count + i] != input(members[r], i, call);
    EXPECT_EQ(wrong, 0u) << "all-gather call " << call;

    const int root = (call + 1) % n;
    std::vector<double> b(count, -1);
    TUTTI_ASSERT_OK(tuttiBroadcast(in.data(), b.data(), count, tuttiFloat64, root, comm, nullptr),
                    comm);
    wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += b[i] != input(members[root], i, call);
    EXPECT_EQ(wrong, 0u) << "broadcast root " << root << " call " << call;
  }
}

}  // namespace tutti::test
