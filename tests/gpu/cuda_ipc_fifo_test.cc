// Host-side logic of the cuda_ipc transport, on host memory (label unit, no GPU needed):
// descriptor (de)serialisation, FIFO geometry and credits, and the FifoConnection itself
// over shared memfd segments, in one process and across a fork.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "common/error.h"
#include "transports/cuda_ipc/fifo.h"
#include "transports/cuda_ipc/fifo_connection.h"
#include "transports/cuda_ipc/ipc_desc.h"
#include "transports/cuda_ipc/shared_segment.h"

namespace tutti::transport::cudaipc {
namespace {

RxDesc sampleDesc() {
  RxDesc d;
  d.rank = 3;
  d.pid = 4242;
  d.device = 1;
  d.busId = "0000:3b:00.0";
  d.slots = 4;
  d.slotBytes = 1 << 20;
  d.ctlFd = 17;
  d.ctlBytes = 4096 + (4 << 20);
  d.hasIpcHandle = true;
  for (size_t i = 0; i < d.ipcHandle.size(); ++i) d.ipcHandle[i] = static_cast<uint8_t>(i * 3);
  return d;
}

TEST(CudaIpcDesc, RoundTrips) {
  RxDesc d = sampleDesc();
  auto bytes = serialize(d);
  EXPECT_EQ(deserialize(bytes, 3), d);
  d.hasIpcHandle = false;
  d.device = -1;
  d.busId.clear();
  EXPECT_EQ(deserialize(serialize(d), 3), d);
}

void expectMalformed(std::vector<std::byte> bytes, int from, const char* what) {
  try {
    deserialize(bytes, from);
    ADD_FAILURE() << "accepted: " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInternalError);
    EXPECT_NE(std::string(e.what()).find("malformed descriptor from rank"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(CudaIpcDesc, RejectsMalformed) {
  auto good = serialize(sampleDesc());
  expectMalformed(good, 2, "names rank 3");
  auto bad = good;
  bad[0] = std::byte{0};
  expectMalformed(bad, 3, "bad magic");
  bad = good;
  bad[4] = std::byte{9};
  expectMalformed(bad, 3, "version 9");
  bad = good;
  bad.pop_back();
  expectMalformed(bad, 3, "truncated");
  bad = good;
  bad.push_back(std::byte{0});
  expectMalformed(bad, 3, "trailing bytes");
  RxDesc d = sampleDesc();
  d.slots = 0;
  expectMalformed(serialize(d), 3, "slots 0");
  d = sampleDesc();
  d.slots = kMaxSlots + 1;
  expectMalformed(serialize(d), 3, "slots 65");
  d = sampleDesc();
  d.device = -1;
  expectMalformed(serialize(d), 3, "IPC handle without a device");
  d = sampleDesc();
  d.busId = std::string(40, 'x');
  EXPECT_THROW(serialize(d), Error);
  EXPECT_NE(rxKey(1, 2), rxKey(2, 1));
  EXPECT_NE(modeKey(1, 2), modeKey(2, 1));
}

TEST(CudaIpcFifo, GeometryAndCredits) {
  FifoGeometry g{4, 1000};
  EXPECT_EQ(g.slotOffset(0), 0u);
  EXPECT_EQ(g.slotOffset(5), 1000u);
  EXPECT_EQ(g.slotAreaBytes(), 4000u);
  EXPECT_EQ(g.chunksFor(0), 1u);
  EXPECT_EQ(g.chunksFor(1), 1u);
  EXPECT_EQ(g.chunksFor(1000), 1u);
  EXPECT_EQ(g.chunksFor(1001), 2u);
  EXPECT_EQ(g.chunkBytes(2500, 0), 1000u);
  EXPECT_EQ(g.chunkBytes(2500, 2), 500u);
  EXPECT_EQ(g.chunkBytes(2500, 3), 0u);
  EXPECT_TRUE(hasCredit(3, 0, 4));
  EXPECT_FALSE(hasCredit(4, 0, 4));
  EXPECT_TRUE(hasCredit(7, 4, 4));
  // Counters are 64-bit and keep working across wrap-around of the slot index.
  EXPECT_TRUE(hasCredit(UINT64_MAX, UINT64_MAX - 3, 4));
  EXPECT_FALSE(hasData(5, 5));
  EXPECT_TRUE(hasData(6, 5));
  EXPECT_EQ(decodeBytes(encodeSize(777, true)), 777u);
  EXPECT_TRUE(decodeLast(encodeSize(777, true)));
  EXPECT_FALSE(decodeLast(encodeSize(777, false)));
  EXPECT_EQ(controlSegmentBytes(g) - hostSlotsOffset(), 4000u);
  EXPECT_EQ(hostSlotsOffset() % 4096, 0u);
}

// One receive FIFO (control + host slots) in a memfd segment.
struct HostFifo {
  FifoGeometry g;
  SharedSegment seg;
  explicit HostFifo(FifoGeometry geom)
      : g(geom), seg(SharedSegment::create(controlSegmentBytes(geom), "cuda-ipc-test")) {
    new (seg.data()) FifoControl();
  }
  FifoEnd end(SharedSegment& s) const {
    return FifoEnd{reinterpret_cast<FifoControl*>(s.data()), s.data() + hostSlotsOffset(), true, g};
  }
};

std::unique_ptr<FifoConnection> makeConn(int peer, pid_t pid, FifoEnd send, FifoEnd recv,
                                         bool hostVisibleRecv) {
  FifoConnectionParts p;
  p.peer = peer;
  p.peerName = "rank " + std::to_string(peer);
  p.peerPid = pid;
  p.send = send;
  p.recv = recv;
  p.recv.slotsHostVisible = hostVisibleRecv;
  p.sendCopy = std::make_unique<HostCopyEngine>();
  p.recvCopy = std::make_unique<HostCopyEngine>();
  if (!hostVisibleRecv) {
    auto bounce = std::shared_ptr<std::byte[]>(new std::byte[recv.geometry.slotBytes]);
    p.bounce = bounce.get();
    p.keepAlive.push_back(std::shared_ptr<void>(bounce, bounce.get()));
  }
  return std::make_unique<FifoConnection>(std::move(p));
}

std::vector<std::byte> pattern(size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

// Sends `a` from x to y and `b` from y to x at the same time, receiving directly or through
// consume(); returns when both directions completed.
void exchange(Connection& x, Connection& y, const std::vector<std::byte>& a,
              const std::vector<std::byte>& b, bool direct) {
  std::vector<std::byte> gotA(a.size()), gotB(b.size());
  size_t consumedA = 0, consumedB = 0;
  auto target = [&](std::vector<std::byte>& dst, size_t& consumed) {
    RecvTarget t;
    t.bytes = dst.size();
    if (direct) {
      t.direct = dst.data();
    } else {
      t.consume = [&dst, &consumed](size_t off, std::span<const std::byte> data) {
        ASSERT_EQ(off, consumed);
        std::memcpy(dst.data() + off, data.data(), data.size());
        consumed += data.size();
      };
    }
    return t;
  };
  x.startSend(a);
  y.startSend(b);
  y.startRecv(target(gotA, consumedA));
  x.startRecv(target(gotB, consumedB));
  size_t sa = 0, sb = 0, ra = 0, rb = 0;
  for (int spins = 0;
       sa < a.size() || sb < b.size() || ra < a.size() || rb < b.size() || spins == 0; ++spins) {
    ASSERT_LT(spins, 10000000) << "no progress";
    sa = x.progressSend();
    sb = y.progressSend();
    ra = y.progressRecv();
    rb = x.progressRecv();
  }
  // Empty messages still complete (and consume their chunk).
  EXPECT_EQ(y.progressRecv(), a.size());
  EXPECT_EQ(gotA, a);
  EXPECT_EQ(gotB, b);
  if (!direct) {
    EXPECT_EQ(consumedA, a.size());
    EXPECT_EQ(consumedB, b.size());
  }
}

class FifoPair : public ::testing::TestWithParam<bool> {};  // param: receive slots host visible

TEST_P(FifoPair, MessagesOfEverySizeBothDirections) {
  FifoGeometry g{3, 4096};
  HostFifo toX(g), toY(g);
  auto x = makeConn(1, getpid(), toY.end(toY.seg), toX.end(toX.seg), GetParam());
  auto y = makeConn(0, getpid(), toX.end(toX.seg), toY.end(toY.seg), GetParam());
  const size_t sizes[] = {0, 1, 4095, 4096, 4097, 3 * 4096, 3 * 4096 + 5, 100000};
  unsigned seed = 1;
  for (bool direct : {true, false}) {
    for (size_t n : sizes) {
      SCOPED_TRACE("bytes " + std::to_string(n) + (direct ? " direct" : " consume"));
      exchange(*x, *y, pattern(n, seed), pattern(n / 3 + 7, seed + 1000), direct);
      ++seed;
    }
  }
  // 2 x 16 messages went each way; the counters only ever grow.
  auto* ctl = reinterpret_cast<FifoControl*>(toY.seg.data());
  EXPECT_EQ(ctl->tail.load(), ctl->head.load());
  EXPECT_GE(ctl->tail.load(), 32u);
}

INSTANTIATE_TEST_SUITE_P(HostSlots, FifoPair, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Visible" : "Bounce"; });

TEST(CudaIpcFifo, SizeMismatchIsInvalidUsage) {
  FifoGeometry g{2, 4096};
  HostFifo toX(g), toY(g);
  auto x = makeConn(1, getpid(), toY.end(toY.seg), toX.end(toX.seg), true);
  auto y = makeConn(0, getpid(), toX.end(toX.seg), toY.end(toY.seg), true);
  auto msg = pattern(100, 5);
  x->startSend(msg);
  while (x->progressSend() < msg.size()) {
  }
  std::vector<std::byte> got(200);
  y->startRecv(RecvTarget{got.data(), got.size(), nullptr});
  try {
    y->progressRecv();
    ADD_FAILURE() << "a 100-byte message was accepted for a 200-byte receive";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("expected 200 bytes"), std::string::npos) << e.what();
  }
}

TEST(CudaIpcFifo, DeadPeerIsRemoteError) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // reaped: the pid no longer exists
  FifoGeometry g{2, 4096};
  HostFifo toX(g), toY(g);
  auto x = makeConn(1, child, toY.end(toY.seg), toX.end(toX.seg), true);
  std::vector<std::byte> got(10);
  x->startRecv(RecvTarget{got.data(), got.size(), nullptr});
  try {
    for (int i = 0; i < 1000000; ++i) {
      x->progressRecv();
      usleep(10);
    }
    ADD_FAILURE() << "no error for a peer that exited";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiRemoteError);
    EXPECT_NE(std::string(e.what()).find("rank 1 exited during a receive"), std::string::npos)
        << e.what();
  }
}

// The receiver's segments are opened by another process through /proc/<pid>/fd/<n>, as the
// transport does; 8 MiB cross in both directions.
TEST(CudaIpcFifo, AcrossProcesses) {
  FifoGeometry g{4, 64 << 10};
  HostFifo toParent(g), toChild(g);
  const pid_t parent = getpid();
  const int fdToParent = toParent.seg.fd(), fdToChild = toChild.seg.fd();
  const size_t bytes = 8 << 20;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int rc = 0;
    try {
      // Map the parent's segments by path, as a peer process would.
      SharedSegment sendSeg = SharedSegment::openPeer(parent, fdToParent, controlSegmentBytes(g));
      SharedSegment recvSeg = SharedSegment::openPeer(parent, fdToChild, controlSegmentBytes(g));
      HostFifo& h = toParent;  // geometry only
      auto c = makeConn(0, parent, h.end(sendSeg), h.end(recvSeg), true);
      std::vector<std::byte> got(bytes);
      c->startRecv(RecvTarget{got.data(), got.size(), nullptr});
      while (c->progressRecv() < bytes) {
      }
      c->startSend(got);  // echo
      while (c->progressSend() < bytes) {
      }
    } catch (const std::exception& e) {
      fprintf(stderr, "child: %s\n", e.what());
      rc = 2;
    }
    _exit(rc);
  }
  auto c = makeConn(1, child, toChild.end(toChild.seg), toParent.end(toParent.seg), true);
  auto msg = pattern(bytes, 99);
  std::vector<std::byte> echo(bytes);
  c->startSend(msg);
  c->startRecv(RecvTarget{echo.data(), echo.size(), nullptr});
  size_t s = 0, r = 0;
  while (s < bytes || r < bytes) {
    s = c->progressSend();
    r = c->progressRecv();
  }
  EXPECT_EQ(echo, msg);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace tutti::transport::cudaipc
