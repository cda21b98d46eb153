// tcp transport with ranks as forked processes rendezvousing through a FileStore.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "bootstrap/file_store.h"
#include "common/error.h"
#include "harness/fork_harness.h"
#include "tcp_test_util.h"

namespace tutti::transport {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::string freshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("tutti-tcp-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(TcpMultiproc, ConformanceAcrossThreeProcesses) {
  std::string dir = freshDir("conf");
  auto peers = tcptest::makePeers(3);
  auto body = [&](int r) {
    bootstrap::FileStore store(dir);
    auto tr = tcptest::connectRank(r, peers, store);
    conformance::runAll(tr.view(r, 3), 64 * kMiB);
  };
  pid_t c1 = tutti::test::forkChild([&] { body(1); });
  pid_t c2 = tutti::test::forkChild([&] { body(2); });
  EXPECT_NO_THROW(body(0));
  EXPECT_EQ(tutti::test::waitChild(c1), 0);
  EXPECT_EQ(tutti::test::waitChild(c2), 0);
  std::filesystem::remove_all(dir);
}

// Rank 1 (a child) is killed with SIGKILL in the middle of a 256 MiB transfer; rank 0 must
// fail within a few seconds with tuttiRemoteError naming rank 1, and leak no fds.
void killDuringTransfer(bool parentSends) {
  std::string dir = freshDir(parentSends ? "kill-send" : "kill-recv");
  auto peers = tcptest::makePeers(2);
  pid_t child = tutti::test::forkChild([&] {
    bootstrap::FileStore store(dir);
    auto tr = tcptest::connectRank(1, peers, store);
    std::vector<std::byte> buf(256 * kMiB);
    // Messages keep coming until the kill, however fast the machine is.
    for (;;) {
      if (parentSends) {
        conformance::drive({conformance::recvOp(tr.conns[0].get(), buf)});
      } else {
        conformance::drive({conformance::sendOp(tr.conns[0].get(), buf)});
      }
    }
  });

  int fdsBefore = tcptest::countOpenFds();
  std::vector<std::byte> buf(256 * kMiB, std::byte{1});
  double detectSec = -1;
  std::string message;
  tuttiResult_t code = tuttiSuccess;
  {
    bootstrap::FileStore store(dir);
    auto tr = tcptest::connectRank(0, peers, store);
    Connection* c = tr.conns[1].get();
    RecvTarget target;
    target.direct = buf.data();
    target.bytes = buf.size();
    if (parentSends) {
      c->startSend(buf);
    } else {
      c->startRecv(target);
    }
    auto progress = [&] { return parentSends ? c->progressSend() : c->progressRecv(); };
    auto start = std::chrono::steady_clock::now();
    while (progress() < 16 * kMiB) {
      ASSERT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
      std::vector<int> fds;
      c->collectWaitFds(fds);
      if (c->prepareToSleep()) {
        pollfd p{fds[0], POLLIN, 0};
        ::poll(&p, 1, 100);
      }
      c->afterSleep();
    }
    if (progress() == buf.size()) {
      // A fast machine finished the first message: kill during the next one.
      if (parentSends) {
        c->startSend(buf);
      } else {
        c->startRecv(target);
      }
    }
    ASSERT_EQ(kill(child, SIGKILL), 0);
    auto killed = std::chrono::steady_clock::now();
    try {
      for (;;) {
        // The killed peer's last system call may still complete the message (SIGKILL acts
        // when a large recv or send returns): then the next one must fail.
        if (progress() == buf.size()) {
          if (parentSends) {
            c->startSend(buf);
          } else {
            c->startRecv(target);
          }
        }
        std::vector<int> fds;
        c->collectWaitFds(fds);
        if (c->prepareToSleep()) {
          pollfd p{fds[0], POLLIN, 0};
          ::poll(&p, 1, 100);
        }
        c->afterSleep();
        if (std::chrono::steady_clock::now() - killed > std::chrono::seconds(20)) break;
      }
    } catch (const Error& e) {
      code = e.code();
      message = e.what();
      detectSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    }
  }
  EXPECT_EQ(tutti::test::waitChild(child), 128 + SIGKILL);
  std::printf("%s: error after %.3f s: %s\n", parentSends ? "sender" : "receiver", detectSec,
              message.c_str());
  EXPECT_EQ(code, tuttiRemoteError) << message;
  EXPECT_GE(detectSec, 0);
  EXPECT_LT(detectSec, 5);
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
  EXPECT_EQ(tcptest::countOpenFds(), fdsBefore) << "fds leaked";
  std::filesystem::remove_all(dir);
}

TEST(TcpMultiproc, KilledReceiverIsReportedToSender) { killDuringTransfer(true); }
TEST(TcpMultiproc, KilledSenderIsReportedToReceiver) { killDuringTransfer(false); }

TEST(TcpMultiproc, LoopbackBandwidthBetweenProcesses) {
  std::string dir = freshDir("bw");
  auto peers = tcptest::makePeers(2);
  pid_t child = tutti::test::forkChild([&] {
    bootstrap::FileStore store(dir);
    auto tr = tcptest::connectRank(1, peers, store);
    tcptest::timedTransfer(*tr.conns[0], true, 256 * kMiB, 1, 0);
  });
  double sec = 0;
  {
    bootstrap::FileStore store(dir);
    auto tr = tcptest::connectRank(0, peers, store);
    sec = tcptest::timedTransfer(*tr.conns[1], false, 256 * kMiB, 1, 0);
  }
  EXPECT_EQ(tutti::test::waitChild(child), 0);
  double gbs = 256.0 * kMiB / sec / 1e9;
  std::printf("tcp loopback 256 MiB between processes (2 sockets): %.3f s, %.2f GB/s\n", sec, gbs);
  EXPECT_GT(gbs, 0.01);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tutti::transport
