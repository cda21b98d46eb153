// Helpers for the ibverbs transport tests: skip without an RDMA device, connect ranks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "interfaces/transport.h"
#include "transport_conformance.h"
#include "transports/ibverbs/ib_transport.h"

namespace tutti::transport::verbstest {

// Skips the current test with the reason when this machine has no active RDMA port.
#define TUTTI_SKIP_WITHOUT_RDMA()                                                   \
  do {                                                                              \
    std::string tutti_why_ = ::tutti::transport::ibProbe();                         \
    if (!tutti_why_.empty())                                                        \
      GTEST_SKIP() << "no RDMA device here (" << tutti_why_                         \
                   << "); run the verbs tests in the Soft-RoCE VM: ctest -L verbs"; \
  } while (0)

inline std::vector<PeerInfo> makePeers(int n) {
  std::vector<PeerInfo> peers(n);
  for (int r = 0; r < n; ++r) peers[r] = PeerInfo{r, "host-a", "localhost", getpid()};
  return peers;
}

struct IbRank {
  std::unique_ptr<Transport> transport;
  std::vector<std::unique_ptr<Connection>> conns;  // by peer; null for self
  conformance::RankConns view(int rank, int n) const {
    conformance::RankConns rc{rank, n, std::vector<Connection*>(n, nullptr)};
    for (int p = 0; p < n; ++p) rc.byPeer[p] = conns[p].get();
    return rc;
  }
};

// Sets up an ibverbs transport for `rank` and connects it to every other rank (odd ranks
// list their peers in descending order, to check that the order does not matter).
inline IbRank connectRank(int rank, std::span<const PeerInfo> peers, bootstrap::Store& store,
                          double timeoutSec = 60) {
  int n = static_cast<int>(peers.size());
  IbRank r;
  r.transport = makeIbTransport();
  r.transport->setup(conformance::contextOf(rank, n, peers, &store));
  std::vector<int> order;
  for (int k = 1; k < n; ++k) order.push_back((rank + k) % n);
  if (rank % 2) std::sort(order.rbegin(), order.rend());
  auto conns = r.transport->connect(order, Deadline(timeoutSec));
  r.conns.resize(n);
  for (size_t i = 0; i < order.size(); ++i) r.conns[order[i]] = std::move(conns[i]);
  return r;
}

}  // namespace tutti::transport::verbstest
