// tcp transport, ranks as threads over loopback with a MemoryStore.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <barrier>
#include <cstdio>
#include <thread>

#include "bootstrap/memory_store.h"
#include "common/error.h"
#include "tcp_test_util.h"
#include "transports/tcp/interfaces.h"

namespace tutti::transport {
namespace {

using conformance::contextOf;
using conformance::drive;
using conformance::recvOp;
using conformance::sendOp;
using tcptest::connectRank;
using tcptest::onThreads;
using tcptest::TcpRank;

constexpr size_t kMiB = size_t{1} << 20;

// Connects n thread ranks and runs fn(rank, TcpRank&) on each.
void withRanks(int n, TcpOptions opts, const std::function<void(int, TcpRank&)>& fn) {
  bootstrap::MemoryStore store;
  auto peers = tcptest::makePeers(n);
  onThreads(n, [&](int r) {
    TcpRank tr = connectRank(r, peers, store, opts);
    fn(r, tr);
  });
}

struct ConformanceCase {
  int nranks;
  int nsocks;
  size_t bigBytes;
};

void runConformance(const ConformanceCase& c) {
  TcpOptions opts;
  opts.nsocks = c.nsocks;
  withRanks(c.nranks, opts, [&](int r, TcpRank& tr) {
    auto rc = tr.view(r, c.nranks);
    for (int p : rc.peers()) {
      EXPECT_STREQ(rc.byPeer[p]->transportName(), "tcp");
      EXPECT_EQ(rc.byPeer[p]->peer(), p);
    }
    conformance::runAll(rc, c.bigBytes);
  });
}

class TcpConformance : public ::testing::TestWithParam<ConformanceCase> {};
TEST_P(TcpConformance, AllSizesAllPairs) { runConformance(GetParam()); }

auto caseName = [](const ::testing::TestParamInfo<ConformanceCase>& info) {
  return std::to_string(info.param.nranks) + "ranks_" + std::to_string(info.param.nsocks) +
         "socks_" + std::to_string(info.param.bigBytes >> 20) + "MiB";
};

// Unit-sized: 256 MiB between the two ranks of the default setup; smaller big messages for
// more ranks and for NSOCKS 1 and 4 (each big message still spans many stripes).
INSTANTIATE_TEST_SUITE_P(Unit, TcpConformance,
                         ::testing::Values(ConformanceCase{2, 2, 256 * kMiB},
                                           ConformanceCase{3, 2, 32 * kMiB},
                                           ConformanceCase{4, 2, 16 * kMiB},
                                           ConformanceCase{2, 1, 64 * kMiB},
                                           ConformanceCase{3, 4, 32 * kMiB}),
                         caseName);

// The full matrix: 256 MiB between every pair of 2..4 ranks, NSOCKS 1, 2 and 4. Disabled in
// the unit run; ctest runs it as tcp_matrix_test (label matrix).
class TcpMatrix : public ::testing::TestWithParam<ConformanceCase> {};
TEST_P(TcpMatrix, DISABLED_AllSizesAllPairs) { runConformance(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Matrix, TcpMatrix,
                         ::testing::Values(ConformanceCase{3, 2, 256 * kMiB},
                                           ConformanceCase{4, 2, 256 * kMiB},
                                           ConformanceCase{4, 1, 256 * kMiB},
                                           ConformanceCase{4, 4, 256 * kMiB}),
                         caseName);

// A tiny stripe unit makes every message of a few KiB striped over 3 sockets, in both receive
// modes, with sizes that end mid-chunk.
TEST(Tcp, SmallChunksStripeCorrectly) {
  TcpOptions opts;
  opts.nsocks = 3;
  opts.chunkBytes = 4096;
  withRanks(3, opts, [&](int r, TcpRank& tr) {
    auto rc = tr.view(r, 3);
    std::vector<size_t> sizes = {0, 4095, 4096, 4097, 8192 * 3 + 1, 12289, 1000003};
    conformance::exchangeSizes(rc, sizes);
    conformance::consumeReduce(rc, 300001);
    conformance::manySmall(rc, 300);
    conformance::exchangeRounds(rc, 5 * kMiB + 3);
  });
}

// Each rank connects to one peer per call, in an order that makes rank 2 accept rank 0's
// sockets while it is connecting to rank 1 (they must be stashed, not lost).
TEST(Tcp, SeparateConnectCallsInDifferentOrders) {
  bootstrap::MemoryStore store;
  auto peers = tcptest::makePeers(3);
  const std::vector<std::vector<int>> orders = {{2, 1}, {0, 2}, {1, 0}};
  onThreads(3, [&](int r) {
    auto t = makeTcpTransport();
    Context ctx = contextOf(r, 3, peers, &store);
    t->setup(ctx);
    std::vector<std::unique_ptr<Connection>> conns(3);
    for (int p : orders[r]) {
      int one[] = {p};
      auto c = t->connect(one, Deadline(20));
      ASSERT_EQ(c.size(), 1u);
      conns[p] = std::move(c[0]);
    }
    conformance::RankConns rc{r, 3, {conns[0].get(), conns[1].get(), conns[2].get()}};
    conformance::exchangeSizes(rc, std::vector<size_t>{0, 5, 1 << 20});
  });
}

TEST(Tcp, PeerCloseDuringReceiveNamesTheRank) {
  std::barrier sync(2);
  withRanks(2, {}, [&](int r, TcpRank& tr) {
    if (r == 1) {
      sync.arrive_and_wait();
      tr.conns.clear();
      tr.transport.reset();
      sync.arrive_and_wait();
      return;
    }
    std::vector<std::byte> buf(kMiB);
    sync.arrive_and_wait();
    sync.arrive_and_wait();  // rank 1's sockets are closed now
    try {
      drive({recvOp(tr.conns[1].get(), buf)}, 10);
      FAIL() << "receive from a closed peer succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiRemoteError) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
      // The connection stays broken: the next call reports the same error.
      EXPECT_THROW(tr.conns[1]->progressRecv(), Error);
    }
  });
}

TEST(Tcp, PeerCloseDuringSendNamesTheRank) {
  std::barrier sync(2);
  withRanks(2, {}, [&](int r, TcpRank& tr) {
    if (r == 1) {
      sync.arrive_and_wait();
      tr.conns.clear();
      sync.arrive_and_wait();
      return;
    }
    std::vector<std::byte> buf(64 * kMiB);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    try {
      drive({sendOp(tr.conns[1].get(), buf)}, 10);
      FAIL() << "64 MiB send to a closed peer succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiRemoteError) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    }
  });
}

TEST(Tcp, SizeMismatchIsInvalidUsageNamingBothSizes) {
  withRanks(2, {}, [&](int r, TcpRank& tr) {
    std::vector<std::byte> buf(200);
    if (r == 0) {
      drive({sendOp(tr.conns[1].get(), std::span(buf).first(100))});
      return;
    }
    try {
      drive({recvOp(tr.conns[0].get(), buf)}, 10);
      FAIL() << "a 100-byte message was accepted as 200 bytes";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_EQ(e.code(), tuttiInvalidUsage) << m;
      EXPECT_NE(m.find("100 bytes"), std::string::npos) << m;
      EXPECT_NE(m.find("expected 200 bytes"), std::string::npos) << m;
      EXPECT_NE(m.find("rank 0"), std::string::npos) << m;
    }
  });
}

// A zero-byte receive completes at once; its header is consumed later and still checked.
TEST(Tcp, ZeroByteMessagesAreMatched) {
  withRanks(2, {}, [&](int r, TcpRank& tr) {
    Connection* c = tr.conns[1 - r].get();
    std::vector<std::byte> small(3, std::byte{7});
    if (r == 0) {
      drive({sendOp(c, {}), sendOp(c, {}), sendOp(c, small)});
      return;
    }
    std::vector<std::byte> got(3);
    drive({recvOp(c, {}), recvOp(c, {}), recvOp(c, got)});
    EXPECT_EQ(got, small);
  });
  // A zero-byte receive against a non-empty message is caught by the next receive.
  withRanks(2, {}, [&](int r, TcpRank& tr) {
    Connection* c = tr.conns[1 - r].get();
    std::vector<std::byte> five(5);
    if (r == 0) {
      // The receiver gives up at the mismatch and closes: a reset here is expected.
      try {
        drive({sendOp(c, five), sendOp(c, five)});
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), tuttiRemoteError) << e.what();
      }
      return;
    }
    try {
      drive({recvOp(c, {}), recvOp(c, five)}, 10);
      FAIL() << "mismatch not detected";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidUsage) << e.what();
      EXPECT_NE(std::string(e.what()).find("5 bytes"), std::string::npos) << e.what();
    }
  });
}

TEST(Tcp, IdleReceiverUsesNoCpu) {
  withRanks(2, {}, [&](int r, TcpRank& tr) {
    std::vector<std::byte> buf(4096);
    if (r == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      conformance::fillPattern(buf, 0, 1, 5);
      drive({sendOp(tr.conns[1].get(), buf)});
      return;
    }
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    auto t0 = std::chrono::steady_clock::now();
    auto stats = drive({recvOp(tr.conns[0].get(), buf)});
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    getrusage(RUSAGE_THREAD, &after);
    auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec * 1e-6; };
    double cpu =
        sec(after.ru_utime) - sec(before.ru_utime) + sec(after.ru_stime) - sec(before.ru_stime);
    std::printf("idle receiver: %.3f s CPU over %.3f s wall, %d sleeps\n", cpu, wall, stats.sleeps);
    EXPECT_GT(wall, 0.8);
    EXPECT_LT(cpu, 0.1);
    conformance::expectPattern(buf, 0, 1, 5, "idle");
  });
}

// Data for a later message must not keep a sleeping rank awake (no spin while the next
// receive is not posted yet).
TEST(Tcp, PendingDataForLaterMessageDoesNotSpin) {
  withRanks(2, {}, [&](int r, TcpRank& tr) {
    Connection* c = tr.conns[1 - r].get();
    std::vector<std::byte> buf(1000);
    if (r == 0) {
      drive({sendOp(c, buf)});
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // data is waiting
    std::vector<int> fds;
    c->collectWaitFds(fds);
    ASSERT_EQ(fds.size(), 1u);
    ASSERT_TRUE(c->prepareToSleep());
    pollfd p{fds[0], POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 50), 0) << "woken with no receive posted";
    c->afterSleep();
    drive({recvOp(c, buf)});
  });
}

double loopbackBandwidth(int nsocks) {
  TcpOptions opts;
  opts.nsocks = nsocks;
  double sec = 0;
  withRanks(2, opts, [&](int r, TcpRank& tr) {
    double s = tcptest::timedTransfer(*tr.conns[1 - r], r == 0, 256 * kMiB, 0, 1);
    if (r == 1) sec = s;
  });
  double gbs = 256.0 * kMiB / sec / 1e9;
  std::printf("tcp loopback 256 MiB (threads), %d socket(s): %.3f s, %.2f GB/s\n", nsocks, sec,
              gbs);
  ::testing::Test::RecordProperty("loopback_GBps_nsocks" + std::to_string(nsocks),
                                  std::to_string(gbs));
  return gbs;
}

TEST(Tcp, LoopbackBandwidth256MiB) { EXPECT_GT(loopbackBandwidth(2), 0.01); }

TEST(Tcp, DISABLED_MatrixLoopbackBandwidthBySockets) {
  for (int nsocks : {1, 2, 4, 8}) EXPECT_GT(loopbackBandwidth(nsocks), 0.01);
}

TEST(Tcp, ConnectTimeoutNamesTheMissingRank) {
  bootstrap::MemoryStore store;
  auto peers = tcptest::makePeers(3);
  std::vector<std::unique_ptr<Transport>> ts;
  for (int r = 0; r < 3; ++r) {
    ts.push_back(makeTcpTransport());
    ts.back()->setup(contextOf(r, 3, peers, &store));
  }
  // Rank 0 never dials rank 2.
  int peer0[] = {0};
  try {
    ts[2]->connect(peer0, Deadline(0.3));
    FAIL() << "connect succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiTimeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
  // An abort flag stops a connect promptly.
  std::atomic<bool> aborted{true};
  auto t = makeTcpTransport();
  t->setup(contextOf(1, 3, peers, &store, &aborted));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(t->connect(peer0, Deadline(10)), Error);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2);
}

TEST(Tcp, TakenPortIsAClearError) {
  bootstrap::MemoryStore store;
  auto peers = tcptest::makePeers(2);
  auto a = makeTcpTransport();
  a->setup(contextOf(0, 2, peers, &store));
  std::string addr = tcpListenAddress(*a);
  int port = std::stoi(addr.substr(addr.rfind(':') + 1));
  TcpOptions opts;
  opts.port = port;
  auto b = makeTcpTransport(opts);
  try {
    b->setup(contextOf(1, 2, peers, &store));
    FAIL() << "second listener on port " << port << " succeeded";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.code(), tuttiSystemError) << m;
    EXPECT_NE(m.find(std::to_string(port)), std::string::npos) << m;
    EXPECT_NE(m.find("taken"), std::string::npos) << m;
  }
}

TEST(Tcp, SingleHostJobListensOnLoopbackAndPublishesIt) {
  bootstrap::MemoryStore store;
  auto peers = tcptest::makePeers(2);
  auto t = makeTcpTransport();
  t->setup(contextOf(0, 2, peers, &store));
  EXPECT_EQ(tcpListenAddress(*t).rfind("127.", 0), 0u) << tcpListenAddress(*t);
  EXPECT_EQ(store.getString("tcp/addr/0", Deadline(1)), tcpListenAddress(*t));
  EXPECT_TRUE(t->canConnect(peers[0], peers[1]));
}

// ---- interface selection ----

tcp::Interface iface(const std::string& name, const std::string& ip, bool lo = false) {
  return tcp::Interface{name, tcp::SockAddr::parse(ip + ":0", "test", true), lo};
}

std::vector<std::string> names(const std::vector<tcp::Interface>& v) {
  std::vector<std::string> out;
  for (const auto& i : v) out.push_back(i.name);
  return out;
}

// The topology's nearest NIC (Context::preferredNics) comes first among the default choices;
// TUTTI_SOCKET_IFNAME and the single-host loopback still win.
TEST(TcpInterfaces, TopologyNearestNicIsPreferred) {
  std::vector<tcp::Interface> all = {iface("lo", "127.0.0.1", true), iface("eth0", "10.0.0.2"),
                                     iface("eth1", "10.2.0.2"), iface("ib0", "10.1.0.2")};
  using V = std::vector<std::string>;
  EXPECT_EQ(names(tcp::selectInterfaces(all, "", false, {"mlx5_1", "ib0"})),
            (V{"ib0", "eth0", "eth1"}));
  EXPECT_EQ(names(tcp::selectInterfaces(all, "", false, {"eth1"})), (V{"eth1", "eth0", "ib0"}));
  EXPECT_EQ(names(tcp::selectInterfaces(all, "", false, {"nothere"})), (V{"eth0", "eth1", "ib0"}));
  EXPECT_EQ(names(tcp::selectInterfaces(all, "eth", false, {"ib0"})), (V{"eth0", "eth1"}));
  EXPECT_EQ(names(tcp::selectInterfaces(all, "", true, {"ib0"})), V{"lo"});
}

TEST(TcpInterfaces, DefaultSelection) {
  std::vector<tcp::Interface> all = {iface("lo", "127.0.0.1", true), iface("docker0", "172.17.0.1"),
                                     iface("eth0", "10.0.0.2"), iface("ib0", "10.1.0.2")};
  using V = std::vector<std::string>;
  EXPECT_EQ(names(tcp::selectInterfaces(all, "", true)), V{"lo"});
  EXPECT_EQ(names(tcp::selectInterfaces(all, "", false)), (V{"eth0", "ib0"}));
  EXPECT_EQ(names(tcp::selectInterfaces(all, "ib", false)), V{"ib0"});
  EXPECT_EQ(names(tcp::selectInterfaces(all, "^eth,docker", false)), V{"ib0"});
  EXPECT_EQ(names(tcp::selectInterfaces(all, "=eth0", false)), V{"eth0"});
  EXPECT_EQ(names(tcp::selectInterfaces(all, "^=eth0", true)), (V{"lo", "docker0", "ib0"}));
  // Loopback never serves a job that spans hosts, even when asked for.
  EXPECT_EQ(names(tcp::selectInterfaces(all, "lo,eth", false)), V{"eth0"});
  try {
    tcp::selectInterfaces(all, "lo", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("spans hosts"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tcp::selectInterfaces(all, "=eth", false), Error);
  // Only loopback up and several hosts: no silent loopback.
  std::vector<tcp::Interface> loOnly = {iface("lo", "127.0.0.1", true)};
  EXPECT_THROW(tcp::selectInterfaces(loOnly, "", false), Error);
}

TEST(TcpInterfaces, ListsLoopback) {
  auto all = tcp::listInterfaces();
  bool lo = std::any_of(all.begin(), all.end(), [](const auto& i) { return i.loopback; });
  EXPECT_TRUE(lo);
}

}  // namespace
}  // namespace tutti::transport
