// The ibverbs transport. Tests that need an RDMA device skip without one (the host); the
// `verbs` ctest runs this binary inside a Soft-RoCE VM (tests/verbs/rxe-vm.sh).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "bootstrap/file_store.h"
#include "bootstrap/memory_store.h"
#include "common/error.h"
#include "harness/fork_harness.h"
#include "harness/scoped_env.h"
#include "harness/temp_dir.h"
#include "harness/threads_harness.h"
#include "transports/ibverbs/ib_device.h"
#include "verbs_test_util.h"

namespace tutti::transport {
namespace {

using conformance::contextOf;
using conformance::drive;
using conformance::recvOp;
using conformance::sendOp;
using verbstest::connectRank;
using verbstest::IbRank;

constexpr size_t kMiB = size_t{1} << 20;

using test::ScopedEnv;

void withRanks(int n, const std::function<void(int, IbRank&)>& fn) {
  bootstrap::MemoryStore store;
  auto peers = verbstest::makePeers(n);
  test::runThreads(n, [&](int r) {
    IbRank ir = connectRank(r, peers, store);
    fn(r, ir);
  });
}

// ---- host tests (no device needed) ----

TEST(IbDeviceSelection, HcaFilterPrefixExactExcludeAndPorts) {
  auto f = ib::parseHcaFilter("mlx5");
  EXPECT_TRUE(f.accepts("mlx5_0", 1));
  EXPECT_TRUE(f.accepts("mlx5_10", 2));
  EXPECT_FALSE(f.accepts("rxe0", 1));
  f = ib::parseHcaFilter("=mlx5_1");
  EXPECT_TRUE(f.accepts("mlx5_1", 1));
  EXPECT_FALSE(f.accepts("mlx5_10", 1));
  f = ib::parseHcaFilter("^mlx5_1:2,rxe");
  EXPECT_TRUE(f.accepts("mlx5_1", 1));
  EXPECT_FALSE(f.accepts("mlx5_1", 2));
  EXPECT_FALSE(f.accepts("rxe0", 1));
  EXPECT_TRUE(f.accepts("mlx5_0", 2));
  f = ib::parseHcaFilter("^=rxe");
  EXPECT_TRUE(f.accepts("rxe0", 1));
  EXPECT_FALSE(f.accepts("rxe", 1));
  EXPECT_TRUE(ib::parseHcaFilter("").accepts("anything", 3));
  EXPECT_THROW(ib::parseHcaFilter("mlx5_0:x"), Error);
}

ibv_gid gidOf(std::initializer_list<int> bytes) {
  ibv_gid g{};
  int i = 0;
  for (int b : bytes) g.raw[i++] = static_cast<uint8_t>(b);
  return g;
}

// A rank takes a port on its own NUMA node when there is one, spreading the ranks of a host
// over those; otherwise (unknown nodes, no local port) over all candidates.
TEST(IbDeviceSelection, NearestPortByNumaThenSpreadByLocalIndex) {
  EXPECT_EQ(ib::chooseNearestPort({}, 0, 0), -1);
  // Two NICs on node 0, two on node 1.
  std::vector<int> numa = {0, 1, 0, 1};
  EXPECT_EQ(ib::chooseNearestPort(numa, 1, 0), 1);
  EXPECT_EQ(ib::chooseNearestPort(numa, 1, 1), 3);
  EXPECT_EQ(ib::chooseNearestPort(numa, 1, 2), 1);
  EXPECT_EQ(ib::chooseNearestPort(numa, 0, 1), 2);
  // No NIC on the rank's node, or the rank's node unknown: all candidates by local index.
  EXPECT_EQ(ib::chooseNearestPort(numa, 2, 3), 3);
  EXPECT_EQ(ib::chooseNearestPort(numa, -1, 5), 1);
  // NIC nodes unknown (virtual devices such as rxe): by local index.
  EXPECT_EQ(ib::chooseNearestPort({-1, -1}, 0, 1), 1);
}

TEST(IbDeviceSelection, AutomaticGidPrefersIpv4MappedRoceV2) {
  ibv_gid ll = gidOf({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8});
  ibv_gid v4 = gidOf({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1});
  EXPECT_TRUE(ib::gidIsIpv4Mapped(v4));
  EXPECT_FALSE(ib::gidIsIpv4Mapped(ll));
  EXPECT_EQ(ib::gidToString(v4), "::ffff:10.77.0.1");
  std::vector<ib::GidEntry> t = {
      {0, ll, "IB/RoCE v1"}, {1, ll, "RoCE v2"}, {2, v4, "IB/RoCE v1"}, {3, v4, "RoCE v2"}};
  EXPECT_EQ(ib::chooseGidIndex(t, true), 3);
  t.pop_back();
  EXPECT_EQ(ib::chooseGidIndex(t, true), 1);
  EXPECT_EQ(ib::chooseGidIndex(t, false), 0);
  EXPECT_EQ(ib::chooseGidIndex({}, true), -1);
}

// Without a device the transport sets up, declines every peer (so tcp is used), and says
// why; forcing it with TUTTI_TRANSPORT=ibverbs is a clear error.
TEST(IbTransportHost, WithoutDeviceDeclinesOrFailsClearly) {
  if (ibProbe().empty()) GTEST_SKIP() << "this machine has an RDMA device";
  bootstrap::MemoryStore store;
  auto peers = verbstest::makePeers(2);
  auto t = makeIbTransport();
  Context ctx = contextOf(0, 2, peers, &store);
  t->setup(ctx);
  EXPECT_FALSE(t->canConnect(peers[0], peers[1]));
  std::string why = ibUnavailableReason(*t);
  std::printf("ibverbs unavailable here: %s\n", why.c_str());
  EXPECT_FALSE(why.empty());
  ScopedEnv env({{"TUTTI_TRANSPORT", "ibverbs"}});
  auto forced = makeIbTransport();
  try {
    forced->setup(ctx);
    ADD_FAILURE() << "setup with TUTTI_TRANSPORT=ibverbs and no device did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiUnsupported);
    EXPECT_NE(std::string(e.what()).find("no usable RDMA device"), std::string::npos) << e.what();
  }
}

// ---- device tests (Soft-RoCE VM or real hardware) ----

struct ConformanceCase {
  int nranks;
  size_t bigBytes;
};

class IbConformance : public ::testing::TestWithParam<ConformanceCase> {};
TEST_P(IbConformance, AllSizesAllPairs) {
  TUTTI_SKIP_WITHOUT_RDMA();
  const auto c = GetParam();
  withRanks(c.nranks, [&](int r, IbRank& ir) {
    auto rc = ir.view(r, c.nranks);
    for (int p : rc.peers()) {
      EXPECT_STREQ(rc.byPeer[p]->transportName(), "ibverbs");
      EXPECT_EQ(rc.byPeer[p]->peer(), p);
    }
    conformance::runAll(rc, c.bigBytes);
    // Large direct receives went zero-copy.
    auto k = ibCounters(*ir.transport, *rc.byPeer[rc.peers()[0]]);
    if (c.bigBytes) {
      EXPECT_GT(k.zeroCopyRecvs, 0);
    }
  });
}
INSTANTIATE_TEST_SUITE_P(Verbs, IbConformance,
                         ::testing::Values(ConformanceCase{2, 64 * kMiB},
                                           ConformanceCase{3, 8 * kMiB},
                                           ConformanceCase{4, 4 * kMiB}),
                         [](const auto& info) {
                           return std::to_string(info.param.nranks) + "ranks_" +
                                  std::to_string(info.param.bigBytes >> 20) + "MiB";
                         });

// Tiny slots, few credits, 4 QPs, a low zero-copy threshold and the registration cache:
// every message spans many chunks, credits run out constantly, writes stripe over 4 QPs.
TEST(IbTransport, SmallSlotsManyQpsAndRegistrationCache) {
  TUTTI_SKIP_WITHOUT_RDMA();
  ScopedEnv env({{"TUTTI_IB_QPS_PER_PEER", "4"},
                 {"TUTTI_IB_CHUNK_BYTES", "4096"},
                 {"TUTTI_IB_SLOTS", "4"},
                 {"TUTTI_IB_RNDV_BYTES", "65536"},
                 {"TUTTI_IB_REG_CACHE", "1"}});
  withRanks(3, [&](int r, IbRank& ir) {
    auto rc = ir.view(r, 3);
    std::vector<size_t> sizes = {0, 4095, 4096, 4097, 65535, 65536, 65537, 1000003};
    conformance::exchangeSizes(rc, sizes);
    conformance::consumeReduce(rc, 300001);
    conformance::manySmall(rc, 300);
    conformance::exchangeRounds(rc, 3 * kMiB + 5);
    conformance::exchangeRounds(rc, 3 * kMiB + 5);  // same buffers' sizes: cache hits
    auto k = ibCounters(*ir.transport, *rc.byPeer[(r + 1) % 3]);
    EXPECT_GT(k.zeroCopySends, 0);
    EXPECT_GT(k.cacheHits, 0);
  });
}

TEST(IbTransport, SizeMismatchIsInvalidUsage) {
  TUTTI_SKIP_WITHOUT_RDMA();
  for (size_t sent : {size_t{100}, size_t{1} << 20}) {
    withRanks(2, [&](int r, IbRank& ir) {
      Connection* c = ir.conns[1 - r].get();
      std::vector<std::byte> buf(sent + 8);
      if (r == 0) {
        // The receiver fails; the sender's message is eager (done) or waits for an RTR that
        // never comes, so only drive it briefly.
        c->startSend(std::span<const std::byte>(buf.data(), sent));
        auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        while (std::chrono::steady_clock::now() < end) c->progressSend();
        return;
      }
      try {
        drive({recvOp(c, std::span<std::byte>(buf.data(), sent + 8))}, 30);
        ADD_FAILURE() << "a " << sent << "-byte message received as " << sent + 8;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), tuttiInvalidUsage) << e.what();
        EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
      }
    });
  }
}

TEST(IbTransport, AutomaticGidIsIpv4MappedRoceV2) {
  TUTTI_SKIP_WITHOUT_RDMA();
  bootstrap::MemoryStore store;
  auto peers = verbstest::makePeers(1);
  auto t = makeIbTransport();
  Context ctx = contextOf(0, 1, peers, &store);
  t->setup(ctx);
  std::string d = ibDeviceDescription(*t);
  std::printf("device: %s\n", d.c_str());
  if (d.find("RoCE") == std::string::npos) GTEST_SKIP() << "not RoCE: " << d;
  EXPECT_NE(d.find("::ffff:"), std::string::npos) << d;
  EXPECT_NE(d.find("RoCE v2"), std::string::npos) << d;
}

void expectSetupError(const char* var, const char* value, const char* mustContain) {
  ScopedEnv env({{var, value}});
  bootstrap::MemoryStore store;
  auto peers = verbstest::makePeers(1);
  auto t = makeIbTransport();
  Context ctx = contextOf(0, 1, peers, &store);
  try {
    t->setup(ctx);
    ADD_FAILURE() << var << "=" << value << " was accepted";
  } catch (const Error& e) {
    std::printf("%s=%s -> %s\n", var, value, e.what());
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(mustContain), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(value), std::string::npos) << e.what();
  }
}

TEST(IbTransport, WrongHcaOrGidIndexListsWhatExists) {
  TUTTI_SKIP_WITHOUT_RDMA();
  bootstrap::MemoryStore store;
  auto peers = verbstest::makePeers(1);
  auto t = makeIbTransport();
  Context ctx = contextOf(0, 1, peers, &store);
  t->setup(ctx);
  std::string dev = ibDeviceDescription(*t);
  std::string name = dev.substr(0, dev.find(':'));
  expectSetupError("TUTTI_IB_HCA", "nosuchhca", ("ports found: " + name).c_str());
  expectSetupError("TUTTI_IB_HCA", ("^" + name).c_str(), "matches no active port");
  expectSetupError("TUTTI_IB_HCA", ("=" + name.substr(0, name.size() - 1)).c_str(),
                   "matches no active port");
  expectSetupError("TUTTI_IB_GID_INDEX", "77", "GIDs present: ");
  ScopedEnv ok({{"TUTTI_IB_HCA", ("=" + name + ":1").c_str()}});
  auto t2 = makeIbTransport();
  EXPECT_NO_THROW(t2->setup(ctx));
  EXPECT_EQ(ibDeviceDescription(*t2).substr(0, name.size()), name);
}

// An idle receiver sleeps on the completion channel (few progress calls) and wakes when
// the message arrives.
TEST(IbTransport, IdleReceiverSleepsOnCompletionChannel) {
  TUTTI_SKIP_WITHOUT_RDMA();
  withRanks(2, [&](int r, IbRank& ir) {
    Connection* c = ir.conns[1 - r].get();
    std::vector<std::byte> buf(4096, std::byte{7});
    if (r == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      drive({sendOp(c, buf)});
      return;
    }
    std::vector<int> fds;
    c->collectWaitFds(fds);
    ASSERT_EQ(fds.size(), 1u);
    auto stats = drive({recvOp(c, buf)});
    std::printf("receiver: %d sleeps (%d ended by timeout), %ld progress calls\n", stats.sleeps,
                stats.timeouts, stats.progressCalls);
    EXPECT_GE(stats.sleeps, 1);
    EXPECT_LT(stats.progressCalls, 5000);
    EXPECT_EQ(buf[4095], std::byte{7});
  });
}

// ---- processes ----

// Rank 1 (a child process) is killed in the middle of a transfer; rank 0 fails with
// tuttiRemoteError naming rank 1 instead of hanging.
void killDuringTransfer(bool parentSends) {
  test::TempDir dir("tutti-ib-kill");
  auto peers = verbstest::makePeers(2);
  const size_t bytes = 64 * kMiB;
  pid_t child = tutti::test::forkChild(
      [&] {
        bootstrap::FileStore store(dir.path());
        auto ir = connectRank(1, peers, store);
        std::vector<std::byte> buf(bytes);
        for (;;) {
          if (parentSends)
            drive({recvOp(ir.conns[0].get(), buf)});
          else
            drive({sendOp(ir.conns[0].get(), buf)});
        }
      },
      240);  // the Soft-RoCE VM runs without KVM: slow
  std::vector<std::byte> buf(bytes, std::byte{1});
  std::string message;
  tuttiResult_t code = tuttiSuccess;
  double detectSec = -1;
  {
    bootstrap::FileStore store(dir.path());
    auto ir = connectRank(0, peers, store);
    Connection* c = ir.conns[1].get();
    RecvTarget target;
    target.direct = buf.data();
    target.bytes = buf.size();
    auto start = [&] { parentSends ? c->startSend(buf) : c->startRecv(target); };
    auto progress = [&] { return parentSends ? c->progressSend() : c->progressRecv(); };
    auto sleepOnce = [&] {
      std::vector<int> fds;
      c->collectWaitFds(fds);
      if (c->prepareToSleep()) {
        pollfd p{fds[0], POLLIN, 0};
        ::poll(&p, 1, 100);
      }
      c->afterSleep();
    };
    start();
    // One full message first (the connection works), then kill during the second.
    auto t0 = std::chrono::steady_clock::now();
    while (progress() < bytes) {
      ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(120));
      sleepOnce();
    }
    start();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    progress();
    ASSERT_EQ(kill(child, SIGKILL), 0);
    auto killed = std::chrono::steady_clock::now();
    try {
      for (;;) {
        if (progress() == bytes) start();  // keep traffic going until the failure shows
        sleepOnce();
        if (std::chrono::steady_clock::now() - killed > std::chrono::seconds(60)) break;
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
  EXPECT_LT(detectSec, 30);
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
}

TEST(IbTransportProcesses, KilledReceiverIsReportedToSender) {
  TUTTI_SKIP_WITHOUT_RDMA();
  killDuringTransfer(true);
}
TEST(IbTransportProcesses, KilledSenderIsReportedToReceiver) {
  TUTTI_SKIP_WITHOUT_RDMA();
  killDuringTransfer(false);
}

// Sanity figures only (Soft-RoCE in an emulated VM says nothing about real hardware):
// 8-byte ping-pong latency and one-way bandwidth of a 32 MiB message between processes.
TEST(IbTransportProcesses, PingPongLatencyAndBandwidthSanity) {
  TUTTI_SKIP_WITHOUT_RDMA();
  test::TempDir dir("tutti-ib-lat");
  auto peers = verbstest::makePeers(2);
  const int iters = 200;
  const size_t big = 32 * kMiB;
  pid_t child = tutti::test::forkChild(
      [&] {
        bootstrap::FileStore store(dir.path());
        auto ir = connectRank(1, peers, store);
        Connection* c = ir.conns[0].get();
        std::byte b[8] = {};
        for (int i = 0; i < iters; ++i) {
          drive({recvOp(c, b)});
          drive({sendOp(c, b)});
        }
        std::vector<std::byte> buf(big);
        conformance::fillPattern(buf, 1, 0, 5);
        drive({sendOp(c, buf)});
      },
      240);
  bootstrap::FileStore store(dir.path());
  auto ir = connectRank(0, peers, store);
  Connection* c = ir.conns[1].get();
  std::byte b[8] = {};
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    drive({sendOp(c, b)});
    drive({recvOp(c, b)});
  }
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      iters / 2;
  std::vector<std::byte> buf(big);
  auto t1 = std::chrono::steady_clock::now();
  drive({recvOp(c, buf)});
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  conformance::expectPattern(buf, 1, 0, 5, "bandwidth");
  EXPECT_EQ(tutti::test::waitChild(child), 0);
  std::printf(
      "ibverbs sanity: 8 B one-way latency %.1f us (ping-pong/2), 32 MiB in %.3f s = "
      "%.1f MB/s\n",
      us, sec, big / sec / 1e6);
  RecordProperty("latency_us", std::to_string(us));
  EXPECT_GT(us, 0);
}

}  // namespace
}  // namespace tutti::transport
