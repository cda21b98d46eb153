// shm transport between forked processes (FileStore rendezvous): conformance with 2..4
// ranks, peers killed with SIGKILL mid-transfer, a tiny tmpfs, idle CPU.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "bootstrap/file_store.h"
#include "bootstrap/memory_store.h"
#include "common/error.h"
#include "harness/fork_harness.h"
#include "harness/temp_dir.h"
#include "harness/threads_harness.h"
#include "shm_connection.h"
#include "shm_os.h"
#include "shm_test_util.h"

namespace tutti::transport {
namespace {

using conformance::drive;
using conformance::recvOp;
using conformance::sendOp;
using shmtest::connectShm;
using shmtest::ScopedEnv;

constexpr size_t kBig = 256u << 20;
constexpr int kExitSkip = 77;

std::set<std::string> tuttiShmEntries() {
  std::set<std::string> s;
  for (auto& n : shmtest::listDir("/dev/shm"))
    if (n.rfind("tutti-", 0) == 0) s.insert(n);
  return s;
}

void runConformance(int nranks, size_t big) {
  test::TempDir dir("tutti-shm-mp");
  auto r = test::runRanks(
      nranks,
      [&](int rank) {
        bootstrap::FileStore store(dir.path());
        auto c = connectShm(rank, nranks, store);
        conformance::runAll(c->rc, big);
      },
      240);
  EXPECT_RANKS_OK(r);
}

TEST(ShmMultiprocTest, ConformanceTwoRanks256MiB) {
  ScopedEnv cma("TUTTI_SHM_CMA", "1");  // opt-in single copy for messages >= 1 MiB
  runConformance(2, kBig);
}
TEST(ShmMultiprocTest, ConformanceFourRanks256MiB) { runConformance(4, kBig); }
TEST(ShmMultiprocTest, ConformanceThreeRanksFifoOnly) {
  ScopedEnv cma("TUTTI_SHM_CMA", "0");
  runConformance(3, 32u << 20);
}

// Rank `victim` dies with SIGKILL in the middle of a 256 MiB transfer with rank `survivor`;
// the survivor must get tuttiRemoteError naming the victim within a few seconds, and nothing
// may be left in /dev/shm or in the survivor's fd table.
void killDuringTransfer(bool victimSends, bool cma, bool consume) {
  ScopedEnv c("TUTTI_SHM_CMA", cma ? "1" : "0");
  test::TempDir dir("tutti-shm-kill");
  auto shmBefore = tuttiShmEntries();
  const int victim = 1, survivor = 0;
  auto r = test::runRanks(2, [&](int rank) {
    size_t fds0 = shmtest::countOpenFds();
    {
      bootstrap::FileStore store(dir.path());
      auto conn = connectShm(rank, 2, store);
      Connection* peer = conn->rc.byPeer[1 - rank];
      std::vector<std::byte> buf(kBig, std::byte{3});
      if (rank == victim) {
        if (victimSends) {
          peer->startSend(buf);
          if (cma) {  // the survivor reads our memory slowly: die in the middle
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
          } else {
            while (peer->progressSend() < (32u << 20)) {
            }
          }
        } else {
          RecvTarget t;
          t.direct = buf.data();
          t.bytes = buf.size();
          peer->startRecv(t);
          while (peer->progressRecv() < (32u << 20)) {
          }
        }
        ::raise(SIGKILL);
      }
      auto t0 = std::chrono::steady_clock::now();
      try {
        if (victimSends) {  // a slow consumer, so the sender cannot finish before it dies
          drive({conformance::consumeOp(peer, kBig, [consume](size_t, std::span<const std::byte>) {
            std::this_thread::sleep_for(std::chrono::milliseconds(consume ? 2 : 1));
          })});
        } else {
          drive({sendOp(peer, buf)});
        }
        ADD_FAILURE() << "the transfer completed although the peer was killed";
      } catch (const Error& e) {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_EQ(e.code(), tuttiRemoteError) << e.what();
        EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("died"), std::string::npos) << e.what();
        EXPECT_LT(s, 5.0) << "death noticed only after " << s << " s";
        std::fprintf(stderr, "[survivor] after %.3f s: %s\n", s, e.what());
      }
    }
    EXPECT_EQ(shmtest::countOpenFds(), fds0) << "fds leaked by the survivor";
  });
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_TRUE(r.ranks[survivor].ok()) << r.describe();
  EXPECT_EQ(r.ranks[victim].signal, SIGKILL) << r.describe();
  EXPECT_EQ(tuttiShmEntries(), shmBefore) << "entries left in /dev/shm";
}

TEST(ShmMultiprocTest, SenderKilledDuringFifoTransfer) { killDuringTransfer(true, false, true); }
TEST(ShmMultiprocTest, SenderKilledDuringCmaTransfer) { killDuringTransfer(true, true, true); }
TEST(ShmMultiprocTest, ReceiverKilledDuringFifoTransfer) {
  killDuringTransfer(false, false, false);
}

TEST(ShmMultiprocTest, NamedFilesLeaveNothingWhenPeerKilled) {
  ScopedEnv mode("TUTTI_SHM_SEGMENT", "file");
  ScopedEnv cma("TUTTI_SHM_CMA", "0");
  test::TempDir shmDir("tutti-shm-named");
  ScopedEnv where("TUTTI_SHM_DIR", shmDir.path());
  test::TempDir dir("tutti-shm-store");
  auto r = test::runRanks(2, [&](int rank) {
    bootstrap::FileStore store(dir.path());
    auto conn = connectShm(rank, 2, store);
    EXPECT_TRUE(shmtest::listDir(shmDir.path()).empty());
    std::vector<std::byte> buf(64u << 20);
    if (rank == 1) {
      conn->rc.byPeer[0]->startSend(buf);
      while (conn->rc.byPeer[0]->progressSend() < (8u << 20)) {
      }
      ::raise(SIGKILL);
    }
    try {
      drive({conformance::consumeOp(conn->rc.byPeer[1], buf.size(),
                                    [](size_t, std::span<const std::byte>) {
                                      std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                    })});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiRemoteError) << e.what();
    }
  });
  EXPECT_TRUE(r.ranks[0].ok()) << r.describe();
  EXPECT_TRUE(shmtest::listDir(shmDir.path()).empty());
}

// A 1 MiB tmpfs in a private mount namespace: connecting with 4 MiB FIFOs must fail with a
// message naming the shortfall (not SIGBUS); 64 KiB FIFOs fit and work.
TEST(ShmMultiprocTest, TinyTmpfsFailsClearly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs in a mount namespace";
  test::TempDir mnt("tutti-shm-tiny");
  auto r = test::runRanks(1, [&](int) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", mnt.path().c_str(), "tmpfs", 0, "size=1m") != 0) {
      std::fprintf(stderr, "cannot mount a tmpfs in a new mount namespace: %s\n",
                   std::strerror(errno));
      std::_Exit(kExitSkip);
    }
    ScopedEnv mode("TUTTI_SHM_SEGMENT", "file");
    ScopedEnv where("TUTTI_SHM_DIR", mnt.path());
    {
      bootstrap::MemoryStore store;
      test::runThreads(2, [&](int rank) {
        try {
          connectShm(rank, 2, store, 2);
          ADD_FAILURE() << "connect fit 4 MiB FIFOs into a 1 MiB tmpfs";
        } catch (const Error& e) {
          std::string m = e.what();
          EXPECT_EQ(e.code(), tuttiSystemError) << m;
          EXPECT_NE(m.find("4198400 bytes"), std::string::npos) << m;
          EXPECT_NE(m.find("free"), std::string::npos) << m;
          EXPECT_NE(m.find("--shm-size"), std::string::npos) << m;
          EXPECT_NE(m.find("TUTTI_SHM_FIFO_BYTES"), std::string::npos) << m;
          if (rank == 0) std::fprintf(stderr, "[tiny tmpfs] %s\n", m.c_str());
        }
      });
    }
    // Past the statvfs check (racing allocations): fallocate must fail, not SIGBUS later.
    try {
      shm::Segment::create(shm::SegmentMode::kFile, 2u << 20, mnt.path(), "seg");
      ADD_FAILURE() << "2 MiB segment created on a 1 MiB tmpfs";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("short by"), std::string::npos) << e.what();
    }
    ScopedEnv fifo("TUTTI_SHM_FIFO_BYTES", "65536");
    bootstrap::MemoryStore store2;
    test::runThreads(2, [&](int rank) {
      auto c = connectShm(rank, 2, store2);
      conformance::exchangeAll(c->rc, 300000);
    });
    EXPECT_TRUE(shmtest::listDir(mnt.path()).empty());
  });
  if (r.ranks.at(0).exited && r.ranks[0].exitCode == kExitSkip)
    GTEST_SKIP() << "no mount namespace here (unshare/mount refused)";
  EXPECT_RANKS_OK(r);
}

TEST(ShmMultiprocTest, IdleReceiverUsesLittleCpu) {
  test::TempDir dir("tutti-shm-idle");
  auto r = test::runRanks(2, [&](int rank) {
    bootstrap::FileStore store(dir.path());
    auto c = connectShm(rank, 2, store);
    std::vector<std::byte> buf(4u << 20);
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      drive({sendOp(c->rc.byPeer[1], buf)});
    } else {
      double cpu0 = shmtest::cpuSeconds(RUSAGE_SELF);
      auto t0 = std::chrono::steady_clock::now();
      drive({recvOp(c->rc.byPeer[0], buf)});
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double cpu = shmtest::cpuSeconds(RUSAGE_SELF) - cpu0;
      EXPECT_GT(wall, 0.8);
      EXPECT_LT(cpu, 0.1) << "receiver used " << cpu << " s CPU in " << wall << " s";
    }
  });
  EXPECT_RANKS_OK(r);
}

// Rank 0 is not dumpable and rank 1 lacks CAP_SYS_PTRACE, so rank 1 may neither open rank
// 0's memfd through /proc/<pid>/fd nor process_vm_readv its memory: the pair must fall back
// to a named file and to the FIFO copy path, and still pass the conformance suite.
TEST(ShmMultiprocTest, PtraceRestrictionsFallBackToFilesAndFifo) {
  ScopedEnv cma("TUTTI_SHM_CMA", "1");
  test::TempDir dir("tutti-shm-noptrace");
  auto r = test::runRanks(2, [&](int rank) {
    if (rank == 0) {
      ASSERT_EQ(::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), 0);
    } else {
      __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct data[2] = {};
      ASSERT_EQ(::syscall(SYS_capget, &hdr, data), 0);
      data[0].effective &= ~(1u << CAP_SYS_PTRACE);
      ASSERT_EQ(::syscall(SYS_capset, &hdr, data), 0) << std::strerror(errno);
    }
    bootstrap::FileStore store(dir.path());
    auto c = connectShm(rank, 2, store);
    conformance::runAll(c->rc, 16u << 20);
    auto* conn = dynamic_cast<shm::ShmConnection*>(c->rc.byPeer[1 - rank]);
    ASSERT_NE(conn, nullptr);
    EXPECT_TRUE(conn->cmaDisabled()) << "rank " << rank << ": single-copy still on";
  });
  EXPECT_RANKS_OK(r);
}

// Prints (does not assert) the bandwidth of one 256 MiB transfer between two processes on
// the FIFO path and the single-copy path, direct and consume receives, next to memcpy.
TEST(ShmMultiprocTest, BandwidthReport) {
  test::TempDir dir("tutti-shm-bw");
  auto r = test::runRanks(2, [&](int rank) {
    std::vector<std::byte> buf(kBig, std::byte(rank + 1)), other(kBig, std::byte(9));
    auto seconds = [](auto t0) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    std::memcpy(other.data(), buf.data(), kBig);  // warm up (page faults)
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(other.data(), buf.data(), kBig);
    double memcpyS = seconds(t0);
    double results[2][2] = {};
    for (int cma = 0; cma < 2; ++cma) {
      ScopedEnv c("TUTTI_SHM_CMA", cma ? "1" : "0");
      bootstrap::FileStore store(dir.file(cma ? "cma" : "fifo"));
      auto conn = connectShm(rank, 2, store);
      Connection* peer = conn->rc.byPeer[1 - rank];
      for (int consume = 0; consume < 2; ++consume) {
        for (int rep = 0; rep < 2; ++rep) {  // the first one warms up page tables
          std::vector<std::byte> ack(1);
          if (rank == 0) {
            drive({sendOp(peer, buf), recvOp(peer, ack)});
            continue;
          }
          uint64_t sum = 0;
          auto t1 = std::chrono::steady_clock::now();
          if (consume)
            drive({conformance::consumeOp(peer, kBig, [&](size_t, std::span<const std::byte> v) {
              sum += uint64_t(v[0]);  // touch the view, as a reduction would
            })});
          else
            drive({recvOp(peer, buf)});
          results[cma][consume] = seconds(t1);
          drive({sendOp(peer, ack)});
          EXPECT_TRUE(consume ? sum > 0 : buf[kBig - 1] == std::byte(1));
        }
      }
    }
    if (rank == 1) {
      auto gbs = [](double s) { return kBig / s / 1e9; };
      std::printf(
          "[shm bandwidth] 256 MiB: memcpy %.2f GB/s | FIFO direct %.2f, FIFO consume %.2f | "
          "CMA direct %.2f, CMA consume (1 MiB bounce) %.2f GB/s\n",
          gbs(memcpyS), gbs(results[0][0]), gbs(results[0][1]), gbs(results[1][0]),
          gbs(results[1][1]));
      std::fflush(stdout);
    }
  });
  EXPECT_RANKS_OK(r);
}

}  // namespace
}  // namespace tutti::transport
