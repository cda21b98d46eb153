// Transport-agnostic conformance checks, shared by the shm and tcp transport tests.
//
// Each rank (a thread or a process) calls the same check with its own connections, indexed
// by peer rank (nullptr at its own index). Checks throw ConformanceError with a message on a
// wrong byte, a lost or reordered message, or a timeout; tutti::Error from the transport
// propagates as is. drive() is the blocking helper: it advances a list of operations,
// sleeping in poll(2) on collectWaitFds() after prepareToSleep() when nothing moves.
#pragma once

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "interfaces/transport.h"

namespace tutti::transport::conformance {

// A connect context of the fields transport tests set (the others keep their defaults).
inline Context contextOf(int rank, int nranks, std::span<const PeerInfo> peers,
                         bootstrap::Store* store, const std::atomic<bool>* aborted = nullptr) {
  Context ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.peers = peers;
  ctx.store = store;
  ctx.aborted = aborted;
  return ctx;
}

struct ConformanceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One message to send or receive.
struct Op {
  Connection* conn = nullptr;
  bool send = false;
  std::span<const std::byte> data;  // send
  MsgTag tag{};                     // send
  RecvTarget target;                // receive
  size_t bytes() const { return send ? data.size() : target.bytes; }
};

inline Op sendOp(Connection* c, std::span<const std::byte> data) {
  Op op;
  op.conn = c;
  op.send = true;
  op.data = data;
  return op;
}
inline Op recvOp(Connection* c, std::span<std::byte> into) {
  Op op;
  op.conn = c;
  op.target.direct = into.data();
  op.target.bytes = into.size();
  return op;
}
inline Op consumeOp(Connection* c, size_t bytes,
                    std::function<void(size_t, std::span<const std::byte>)> fn) {
  Op op;
  op.conn = c;
  op.target.bytes = bytes;
  op.target.consume = std::move(fn);
  return op;
}

struct DriveStats {
  int sleeps = 0;    // poll(2) calls that slept
  int timeouts = 0;  // ... woken by the 100 ms poll timeout, not by an fd
  long progressCalls = 0;
};

// Runs ops to completion: per (connection, direction) strictly in the given order, all
// queues concurrently. Sleeps when nothing moved for a few rounds. Throws on timeout.
inline DriveStats drive(std::vector<Op> ops, double timeoutSec = 120) {
  struct Queue {
    Connection* conn;
    bool send;
    std::vector<Op*> ops;
    size_t next = 0;
    bool started = false;
    size_t last = 0;
  };
  std::vector<Queue> queues;
  for (auto& op : ops) {
    auto it = std::find_if(queues.begin(), queues.end(),
                           [&](const Queue& q) { return q.conn == op.conn && q.send == op.send; });
    if (it == queues.end()) {
      queues.push_back(Queue{op.conn, op.send, {}});
      it = queues.end() - 1;
    }
    it->ops.push_back(&op);
  }
  DriveStats stats;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  int idleRounds = 0;
  for (;;) {
    bool moved = false, pending = false;
    for (auto& q : queues) {
      while (q.next < q.ops.size()) {
        Op& op = *q.ops[q.next];
        if (!q.started) {
          if (op.send)
            q.conn->startSend(op.data, op.tag);
          else
            q.conn->startRecv(op.target);
          q.started = true;
          q.last = 0;
          moved = true;
        }
        size_t done = op.send ? q.conn->progressSend() : q.conn->progressRecv();
        ++stats.progressCalls;
        if (done != q.last) moved = true;
        q.last = done;
        if (done != op.bytes()) break;
        q.started = false;
        ++q.next;
        moved = true;
      }
      if (q.next < q.ops.size()) pending = true;
    }
    if (!pending) return stats;
    if (moved) {
      idleRounds = 0;
      continue;
    }
    if (std::chrono::steady_clock::now() > end) {
      std::string msg = "drive: timed out after " + std::to_string(timeoutSec) + " s;";
      for (auto& q : queues)
        if (q.next < q.ops.size())
          msg += " " + std::string(q.send ? "send to" : "recv from") + " rank " +
                 std::to_string(q.conn->peer()) + " op " + std::to_string(q.next) + " at " +
                 std::to_string(q.last) + "/" + std::to_string(q.ops[q.next]->bytes()) + ";";
      throw ConformanceError(msg);
    }
    if (++idleRounds < 16) continue;
    // Sleep on every connection with work left.
    std::vector<Connection*> conns;
    for (auto& q : queues)
      if (q.next < q.ops.size() && std::find(conns.begin(), conns.end(), q.conn) == conns.end())
        conns.push_back(q.conn);
    std::vector<int> fds;
    for (auto* c : conns) c->collectWaitFds(fds);
    size_t armed = 0;
    bool maySleep = true;
    for (; armed < conns.size(); ++armed) {
      if (!conns[armed]->prepareToSleep()) {
        ++armed;
        maySleep = false;
        break;
      }
    }
    if (maySleep) {
      std::vector<pollfd> pfds;
      for (int fd : fds) pfds.push_back(pollfd{fd, POLLIN, 0});
      if (::poll(pfds.data(), pfds.size(), 100) == 0) ++stats.timeouts;
      ++stats.sleeps;
    }
    for (size_t i = 0; i < armed; ++i) conns[i]->afterSleep();
    idleRounds = 0;
  }
}

// ---- data patterns ----

inline uint64_t patternWord(int from, int to, uint64_t salt, uint64_t i) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t(from) << 56) ^ (uint64_t(to) << 48) ^
               (salt * 0xD1B54A32D192ED03ull);
  return x ^ (x >> 29);
}

inline void fillPattern(std::span<std::byte> buf, int from, int to, uint64_t salt) {
  size_t words = buf.size() / 8;
  auto* w = reinterpret_cast<uint64_t*>(buf.data());
  for (size_t i = 0; i < words; ++i) w[i] = patternWord(from, to, salt, i);
  for (size_t i = words * 8; i < buf.size(); ++i)
    buf[i] = std::byte(patternWord(from, to, salt, words + i) & 0xff);
}

// Returns the first wrong byte offset, or SIZE_MAX.
inline size_t firstMismatch(std::span<const std::byte> buf, int from, int to, uint64_t salt) {
  size_t words = buf.size() / 8;
  const auto* w = reinterpret_cast<const uint64_t*>(buf.data());
  for (size_t i = 0; i < words; ++i)
    if (w[i] != patternWord(from, to, salt, i)) {
      for (size_t b = i * 8; b < i * 8 + 8; ++b) {
        uint64_t e = patternWord(from, to, salt, i);
        if (buf[b] != std::byte((e >> (8 * (b - i * 8))) & 0xff)) return b;
      }
      return i * 8;
    }
  for (size_t i = words * 8; i < buf.size(); ++i)
    if (buf[i] != std::byte(patternWord(from, to, salt, words + i) & 0xff)) return i;
  return SIZE_MAX;
}

inline void expectPattern(std::span<const std::byte> buf, int from, int to, uint64_t salt,
                          const std::string& what) {
  size_t bad = firstMismatch(buf, from, to, salt);
  if (bad != SIZE_MAX)
    throw ConformanceError(what + ": " + std::to_string(buf.size()) + "-byte message from rank " +
                           std::to_string(from) + " to rank " + std::to_string(to) +
                           " wrong at byte " + std::to_string(bad));
}

// A rank's view: its connections by peer rank (nullptr for itself and unconnected ranks).
struct RankConns {
  int rank = 0;
  int nranks = 0;
  std::vector<Connection*> byPeer;
  std::vector<int> peers() const {
    std::vector<int> p;
    for (int r = 0; r < nranks; ++r)
      if (byPeer[r]) p.push_back(r);
    return p;
  }
};

// ---- checks ----

// Every rank sends `bytes` to every peer and receives `bytes` from every peer, all at once
// (full duplex on every connection), data verified. Memory: 2 * bytes per peer.
inline void exchangeAll(const RankConns& rc, size_t bytes, uint64_t salt = 0) {
  auto peers = rc.peers();
  std::vector<std::vector<std::byte>> outs(peers.size()), ins(peers.size());
  std::vector<Op> ops;
  for (size_t i = 0; i < peers.size(); ++i) {
    outs[i].resize(bytes);
    fillPattern(outs[i], rc.rank, peers[i], salt);
    ins[i].assign(bytes, std::byte{0x5a});
    ops.push_back(sendOp(rc.byPeer[peers[i]], outs[i]));
    ops.push_back(recvOp(rc.byPeer[peers[i]], ins[i]));
  }
  drive(std::move(ops));
  for (size_t i = 0; i < peers.size(); ++i)
    expectPattern(ins[i], peers[i], rc.rank, salt, "exchangeAll");
}

// Sizes every transport must carry: empty, one byte, odd sizes around pages and FIFOs.
inline std::vector<size_t> standardSizes() { return {0, 1, 7, 64, 4095, 4097, 65537, 1000003}; }

inline void exchangeSizes(const RankConns& rc, std::span<const size_t> sizes) {
  uint64_t salt = 1;
  for (size_t s : sizes) exchangeAll(rc, s, salt++);
}

// Consume-mode receive: each rank receives float32 data from every peer through consume()
// and reduces while receiving (acc = mine + received, element by element as soon as each
// float is complete; views may split a float); checks that offsets arrive in order without
// gaps and the sums. Sends use direct buffers.
inline void consumeReduce(const RankConns& rc, size_t count) {
  auto peers = rc.peers();
  auto value = [](int from, size_t i) { return float(from + 1) + float(i % 1024); };
  std::vector<float> mine(count);
  for (size_t i = 0; i < count; ++i) mine[i] = value(rc.rank, i);
  std::vector<std::vector<float>> staging(peers.size(), std::vector<float>(count, 0.f));
  std::vector<std::vector<float>> acc(peers.size(), std::vector<float>(count, 0.f));
  std::vector<size_t> expectOff(peers.size(), 0), reduced(peers.size(), 0);
  std::vector<Op> ops;
  for (size_t p = 0; p < peers.size(); ++p) {
    ops.push_back(sendOp(rc.byPeer[peers[p]], std::as_bytes(std::span<const float>(mine))));
    ops.push_back(consumeOp(rc.byPeer[peers[p]], count * sizeof(float),
                            [&, p](size_t off, std::span<const std::byte> data) {
                              if (off != expectOff[p])
                                throw ConformanceError("consume: offset " + std::to_string(off) +
                                                       " but expected " +
                                                       std::to_string(expectOff[p]));
                              expectOff[p] += data.size();
                              std::memcpy(reinterpret_cast<std::byte*>(staging[p].data()) + off,
                                          data.data(), data.size());
                              size_t complete = expectOff[p] / sizeof(float);
                              for (size_t i = reduced[p]; i < complete; ++i)
                                acc[p][i] = mine[i] + staging[p][i];
                              reduced[p] = complete;
                            }));
  }
  drive(std::move(ops));
  for (size_t p = 0; p < peers.size(); ++p) {
    if (expectOff[p] != count * sizeof(float) || reduced[p] != count)
      throw ConformanceError("consume: got " + std::to_string(expectOff[p]) + " bytes of " +
                             std::to_string(count * sizeof(float)));
    for (size_t i = 0; i < count; ++i) {
      float want = value(rc.rank, i) + value(peers[p], i);
      if (acc[p][i] != want)
        throw ConformanceError("consume: element " + std::to_string(i) + " from rank " +
                               std::to_string(peers[p]) + " sums to " + std::to_string(acc[p][i]) +
                               ", expected " + std::to_string(want));
    }
  }
}

// Large messages between every pair in n-1 rounds (round r: send to rank+r, receive from
// rank-r, at the same time), so that memory stays at two buffers per rank.
inline void exchangeRounds(const RankConns& rc, size_t bytes, uint64_t salt = 7) {
  std::vector<std::byte> out(bytes), in(bytes);
  for (int r = 1; r < rc.nranks; ++r) {
    int to = (rc.rank + r) % rc.nranks, from = (rc.rank - r + rc.nranks) % rc.nranks;
    if (!rc.byPeer[to] || !rc.byPeer[from]) continue;
    fillPattern(out, rc.rank, to, salt + r);
    std::memset(in.data(), 0x5a, in.size());
    drive({sendOp(rc.byPeer[to], out), recvOp(rc.byPeer[from], in)});
    expectPattern(in, from, rc.rank, salt + r, "exchangeRounds");
  }
}

// Many small messages of varying sizes per peer, both directions at once; each must arrive
// in order with its own content (the size sequence is known to both sides).
inline void manySmall(const RankConns& rc, int count) {
  auto peers = rc.peers();
  auto sizeOf = [](int k) { return size_t((k * 37) % 300); };
  std::vector<std::vector<std::vector<std::byte>>> outs(peers.size()), ins(peers.size());
  std::vector<Op> ops;
  for (size_t p = 0; p < peers.size(); ++p) {
    outs[p].resize(count);
    ins[p].resize(count);
    for (int k = 0; k < count; ++k) {
      outs[p][k].resize(sizeOf(k));
      fillPattern(outs[p][k], rc.rank, peers[p], 1000 + k);
      ins[p][k].assign(sizeOf(k), std::byte{0});
    }
  }
  for (int k = 0; k < count; ++k)
    for (size_t p = 0; p < peers.size(); ++p) {
      ops.push_back(sendOp(rc.byPeer[peers[p]], outs[p][k]));
      ops.push_back(recvOp(rc.byPeer[peers[p]], ins[p][k]));
    }
  drive(std::move(ops));
  for (size_t p = 0; p < peers.size(); ++p)
    for (int k = 0; k < count; ++k)
      expectPattern(ins[p][k], peers[p], rc.rank, 1000 + k,
                    "manySmall message " + std::to_string(k));
}

// peekMessage: every rank sends each peer a tagged 0-byte message, which the peer receives
// (its header may still be owed), then starts a tagged 3000-byte send to each peer. Each rank
// looks at every peer until peekMessage shows that message's tag and size, twice (it takes
// nothing), then receives it whole. Sends progress throughout (a single-copy send waits for
// its receiver).
// Transports without message headers (ibverbs, cuda_ipc) refuse to look: nothing to check.
inline void peekThenReceive(const RankConns& rc) {
  auto peers = rc.peers();
  if (peers.empty()) return;
  try {
    MsgTag tag{};
    size_t size = 0;
    rc.byPeer[peers[0]]->peekMessage(tag, size);  // takes nothing, whatever it finds
  } catch (const Error& e) {
    if (e.code() == tuttiUnsupported) return;
    throw;
  }
  const size_t bytes = 3000;
  auto tagOf = [](int from, int to, int k) {
    return MsgTag{uint64_t(from) << 32 | uint64_t(to), 0x7e57ull + uint64_t(k)};
  };
  std::vector<Op> empties;
  for (int peer : peers) {
    Op out = sendOp(rc.byPeer[peer], {});
    out.tag = tagOf(rc.rank, peer, 0);
    Op in = recvOp(rc.byPeer[peer], {});
    in.target.tag = tagOf(peer, rc.rank, 0);
    empties.insert(empties.end(), {out, in});
  }
  drive(std::move(empties));
  std::vector<std::vector<std::byte>> outs(peers.size()), ins(peers.size());
  for (size_t p = 0; p < peers.size(); ++p) {
    outs[p].resize(bytes);
    fillPattern(outs[p], rc.rank, peers[p], 4242);
    ins[p].assign(bytes, std::byte{0});
    rc.byPeer[peers[p]]->startSend(outs[p], tagOf(rc.rank, peers[p], 1));
  }
  std::vector<bool> seen(peers.size(), false), started(peers.size(), false);
  Deadline deadline(60);
  for (;;) {
    bool done = true;
    for (size_t p = 0; p < peers.size(); ++p) {
      Connection* c = rc.byPeer[peers[p]];
      done = c->progressSend() == bytes && done;
      if (!seen[p]) {
        MsgTag tag{};
        size_t size = 0;
        for (int look = 0; look < 2 && c->peekMessage(tag, size); ++look) {
          if (tag != tagOf(peers[p], rc.rank, 1) || size != bytes)
            throw ConformanceError("peekMessage: wrong tag or size (" + std::to_string(size) +
                                   " bytes)");
          seen[p] = look == 1;  // the second look found it again
        }
      }
      if (seen[p] && !started[p]) {
        RecvTarget t;
        t.direct = ins[p].data();
        t.bytes = bytes;
        t.tag = tagOf(peers[p], rc.rank, 1);
        c->startRecv(t);
        started[p] = true;
      }
      done = started[p] && c->progressRecv() == bytes && done;
    }
    if (done) break;
    if (deadline.expired()) throw ConformanceError("peekThenReceive: timed out");
    std::this_thread::yield();
  }
  for (size_t p = 0; p < peers.size(); ++p)
    expectPattern(ins[p], peers[p], rc.rank, 4242, "the message looked at");
}

// The whole suite; `bigBytes` is the large exchange (256 MiB in the full suite).
inline void runAll(const RankConns& rc, size_t bigBytes) {
  auto sizes = standardSizes();
  exchangeSizes(rc, sizes);
  peekThenReceive(rc);
  consumeReduce(rc, 1 << 20);
  manySmall(rc, 2000);
  if (bigBytes) exchangeRounds(rc, bigBytes);
}

}  // namespace tutti::transport::conformance
