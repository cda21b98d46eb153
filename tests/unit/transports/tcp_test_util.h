// Helpers for tcp transport tests: ranks as threads (MemoryStore) or as processes (FileStore),
// each with a tcp transport connected to every other rank.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.h"
#include "transport_conformance.h"
#include "transports/tcp/tcp_transport.h"

namespace tutti::transport::tcptest {

inline std::vector<PeerInfo> makePeers(int n, const std::string& hostPrefix = "",
                                       bool oneHost = true) {
  std::vector<PeerInfo> peers(n);
  for (int r = 0; r < n; ++r) {
    peers[r].rank = r;
    peers[r].hostId = oneHost ? "host-a" : hostPrefix + std::to_string(r);
    peers[r].hostname = oneHost ? "localhost" : hostPrefix + std::to_string(r);
    peers[r].pid = getpid();
  }
  return peers;
}

// One rank: its transport and its connections indexed by peer.
struct TcpRank {
  std::unique_ptr<Transport> transport;
  std::vector<std::unique_ptr<Connection>> conns;  // by peer; null for self
  conformance::RankConns view(int rank, int n) const {
    conformance::RankConns rc;
    rc.rank = rank;
    rc.nranks = n;
    rc.byPeer.resize(n, nullptr);
    for (int p = 0; p < n; ++p) rc.byPeer[p] = conns[p].get();
    return rc;
  }
};

// Sets up a tcp transport for `rank` and connects it to every other rank. Ranks list their
// peers in different orders (odd ranks descending, even ranks rotated) to check that the
// order does not matter.
inline TcpRank connectRank(int rank, std::span<const PeerInfo> peers, bootstrap::Store& store,
                           TcpOptions opts = {}, double timeoutSec = 30) {
  int n = static_cast<int>(peers.size());
  TcpRank tr;
  tr.transport = makeTcpTransport(opts);
  tr.transport->setup(conformance::contextOf(rank, n, peers, &store));
  std::vector<int> order;
  for (int k = 1; k < n; ++k) order.push_back((rank + k) % n);
  if (rank % 2) std::sort(order.rbegin(), order.rend());
  auto conns = tr.transport->connect(order, Deadline(timeoutSec));
  tr.conns.resize(n);
  for (size_t i = 0; i < order.size(); ++i) tr.conns[order[i]] = std::move(conns[i]);
  return tr;
}

// Runs fn(rank) on n threads; rethrows the first failure (by rank) after all joined.
inline void onThreads(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

inline int countOpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the directory stream itself
}

// One timed transfer of `bytes` from the sender to the receiver (call on both sides). The
// sender first fills its buffer and sends a 1-byte "ready" message; the receiver pre-touches
// its buffer, waits for "ready" and times the big receive. Data verified. Returns seconds on
// the receiver, 0 on the sender.
inline double timedTransfer(Connection& c, bool send, size_t bytes, int from, int to) {
  std::vector<std::byte> buf(bytes, std::byte{0});
  std::byte ready[1] = {std::byte{1}};
  if (send) {
    conformance::fillPattern(buf, from, to, 99);
    conformance::drive({conformance::sendOp(&c, ready), conformance::sendOp(&c, buf)});
    return 0;
  }
  conformance::drive({conformance::recvOp(&c, ready)});
  auto t0 = std::chrono::steady_clock::now();
  conformance::drive({conformance::recvOp(&c, buf)});
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  conformance::expectPattern(buf, from, to, 99, "timedTransfer");
  return sec;
}

}  // namespace tutti::transport::tcptest
