// shm transport, ranks as threads of one process sharing a MemoryStore. Shared segments
// mapped twice in one process exercise the same FIFO/doorbell/CMA mechanism as processes.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "bootstrap/memory_store.h"
#include "common/error.h"
#include "harness/temp_dir.h"
#include "harness/threads_harness.h"
#include "shm_os.h"
#include "shm_test_util.h"

namespace tutti::transport {
namespace {

using conformance::drive;
using conformance::expectPattern;
using conformance::fillPattern;
using conformance::recvOp;
using conformance::sendOp;
using shmtest::connectShm;
using shmtest::ScopedEnv;

void runConformance(int nranks, size_t big) {
  bootstrap::MemoryStore store;
  test::runThreads(nranks, [&](int rank) {
    auto r = connectShm(rank, nranks, store);
    conformance::runAll(r->rc, big);
  });
}

TEST(ShmTest, CanConnectOnlySameHost) {
  auto t = makeShmTransport();
  PeerInfo a{0, "boot-a/net-1", "a", 1}, b{1, "boot-a/net-1", "a", 2}, c{2, "boot-b/net-1", "b", 3};
  EXPECT_TRUE(t->canConnect(a, b));
  EXPECT_FALSE(t->canConnect(a, c));
  EXPECT_STREQ(t->name(), "shm");
}

TEST(ShmTest, ConformanceTwoRanks) { runConformance(2, 32u << 20); }
TEST(ShmTest, ConformanceThreeRanks) { runConformance(3, 16u << 20); }
TEST(ShmTest, ConformanceFourRanks) { runConformance(4, 8u << 20); }

TEST(ShmTest, ConformanceFifoPathTinyFifo) {
  // 4 KiB FIFO, no CMA: every message wraps the ring many times.
  ScopedEnv fifo("TUTTI_SHM_FIFO_BYTES", "4096");
  ScopedEnv cma("TUTTI_SHM_CMA", "0");
  runConformance(3, 8u << 20);
}

TEST(ShmTest, PingPongRestartsAtTheHotStartOfTheFifo) {
  // Every send finds the FIFO drained, so past the hot start it writes a restart record and
  // continues at the next lap: sizes 0..9000 (odd, record-unaligned) over a 256 KiB FIFO pass
  // the restart path hundreds of times in both directions, interleaved with zero-byte and
  // streamed (non-drained) messages that must not restart.
  ScopedEnv fifo("TUTTI_SHM_FIFO_BYTES", "262144");
  ScopedEnv cma("TUTTI_SHM_CMA", "0");
  bootstrap::MemoryStore store;
  test::runThreads(2, [&](int rank) {
    auto r = connectShm(rank, 2, store);
    Connection* peer = r->rc.byPeer[1 - rank];
    for (int k = 0; k < 3000; ++k) {
      size_t bytes = (size_t(k) * 613) % 9001;
      bool iSend = (k % 2) == rank;
      std::vector<std::byte> buf(bytes, std::byte{0x5a});
      int from = iSend ? rank : 1 - rank, to = iSend ? 1 - rank : rank;
      if (iSend) fillPattern(buf, from, to, k);
      drive({iSend ? sendOp(peer, buf) : recvOp(peer, buf)});
      if (!iSend) expectPattern(buf, from, to, k, "ping-pong message " + std::to_string(k));
      if (k % 500 == 499) conformance::manySmall(r->rc, 300);  // both directions at once
    }
  });
}

TEST(ShmTest, ConformanceCmaForEverythingAndConsumeMode) {
  // Threshold 1: every non-empty message goes single-copy, including consume-mode receives.
  ScopedEnv on("TUTTI_SHM_CMA", "1");
  ScopedEnv thr("TUTTI_SHM_CMA_THRESHOLD", "1");
  runConformance(2, 32u << 20);
}

TEST(ShmTest, ConformanceNamedFiles) {
  test::TempDir dir("tutti-shm-files");
  ScopedEnv mode("TUTTI_SHM_SEGMENT", "file");
  ScopedEnv where("TUTTI_SHM_DIR", dir.path());
  bootstrap::MemoryStore store;
  test::runThreads(3, [&](int rank) {
    auto r = connectShm(rank, 3, store);
    conformance::runAll(r->rc, 4u << 20);
  });
  EXPECT_TRUE(shmtest::listDir(dir.path()).empty()) << "named segments were not unlinked";
}

TEST(ShmTest, SizeMismatchIsInvalidUsageNamingBothSizesAndPeer) {
  bootstrap::MemoryStore store;
  test::runThreads(2, [&](int rank) {
    auto r = connectShm(rank, 2, store);
    std::vector<std::byte> buf(200);
    if (rank == 0) {
      drive({sendOp(r->rc.byPeer[1], std::span(buf).first(100))});
    } else {
      try {
        drive({recvOp(r->rc.byPeer[0], buf)});
        ADD_FAILURE() << "size mismatch not detected";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), tuttiInvalidUsage) << e.what();
        std::string m = e.what();
        EXPECT_NE(m.find("200"), std::string::npos) << m;
        EXPECT_NE(m.find("100"), std::string::npos) << m;
        EXPECT_NE(m.find("rank 0"), std::string::npos) << m;
      }
    }
  });
}

TEST(ShmTest, SizeMismatchOnZeroByteReceive) {
  bootstrap::MemoryStore store;
  test::runThreads(2, [&](int rank) {
    auto r = connectShm(rank, 2, store);
    std::vector<std::byte> buf(8);
    if (rank == 0) {
      drive({sendOp(r->rc.byPeer[1], buf)});
    } else {
      try {
        drive({recvOp(r->rc.byPeer[0], std::span(buf).first(0)), recvOp(r->rc.byPeer[0], buf)});
        ADD_FAILURE() << "size mismatch not detected";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), tuttiInvalidUsage) << e.what();
      }
    }
  });
}

TEST(ShmTest, IdleReceiverSleepsInsteadOfSpinning) {
  bootstrap::MemoryStore store;
  test::runThreads(2, [&](int rank) {
    auto r = connectShm(rank, 2, store);
    std::vector<std::byte> buf(1000);
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      drive({sendOp(r->rc.byPeer[1], buf)});
    } else {
      double cpu0 = shmtest::cpuSeconds(RUSAGE_THREAD);
      auto t0 = std::chrono::steady_clock::now();
      auto stats = drive({recvOp(r->rc.byPeer[0], buf)});
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double cpu = shmtest::cpuSeconds(RUSAGE_THREAD) - cpu0;
      EXPECT_GT(wall, 0.8);
      EXPECT_LT(cpu, 0.1) << "receiver burned CPU while idle; polls slept " << stats.sleeps;
      EXPECT_LT(stats.sleeps, 30) << "woke too often (each sleep is at most 100 ms)";
    }
  });
}

TEST(ShmTest, NoFdsOrShmEntriesLeftAfterClose) {
  auto shmBefore = shmtest::listDir("/dev/shm");
  size_t fdsBefore = shmtest::countOpenFds();
  {
    bootstrap::MemoryStore store;
    test::runThreads(3, [&](int rank) {
      auto r = connectShm(rank, 3, store);
      conformance::exchangeAll(r->rc, 100000);
    });
  }
  EXPECT_EQ(shmtest::countOpenFds(), fdsBefore);
  auto shmAfter = shmtest::listDir("/dev/shm");
  for (auto& n : shmAfter)
    if (n.rfind("tutti-", 0) == 0) {
      EXPECT_TRUE(shmBefore.count(n)) << "leaked /dev/shm/" << n;
    }
}

TEST(ShmTest, ConnectTimesOutNamingTheMissingPeer) {
  bootstrap::MemoryStore store;
  // Rank 1 never arrives.
  store.setString("pid/1", std::to_string(::getpid()));
  try {
    connectShm(0, 2, store, 0.3);
    FAIL() << "connect did not time out";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiTimeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
}

TEST(ShmTest, FullTmpfsIsAnErrorNotSigbus) {
  // A directory on a filesystem with less room than asked: Segment::create must fail in
  // posix_fallocate with the shortfall, never map a hole that SIGBUSes when touched.
  // /dev/shm is a tmpfs: asking more than its total size fails in fallocate at once.
  std::string dir = "/dev/shm/tutti-test-full-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0) << std::strerror(errno);
  struct statvfs st {};
  ASSERT_EQ(::statvfs(dir.c_str(), &st), 0);
  size_t tooMuch = size_t(st.f_blocks) * st.f_frsize + (1u << 30);
  try {
    auto seg = shm::Segment::create(shm::SegmentMode::kFile, tooMuch, dir, "big");
    FAIL() << "created a segment larger than the filesystem";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(std::to_string(tooMuch)), std::string::npos) << m;
    EXPECT_NE(m.find("TUTTI_SHM_FIFO_BYTES"), std::string::npos) << m;
  }
  EXPECT_TRUE(shmtest::listDir(dir).empty());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace tutti::transport
