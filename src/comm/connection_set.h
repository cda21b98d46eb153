// ConnectionSet: a communicator's transports and its connections to peers, made lazily. Each
// peer gets the first transport, in priority order (comm/transport_registry.h), whose
// canConnect accepts the pair; both sides make the same choice from the same PeerInfo. It
// knows nothing of collectives: the communicator asks it to connect the peers a schedule uses
// and hands its connection table to the executor.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "interfaces/transport.h"

namespace tutti {

class ConnectionSet {
 public:
  // forcedTransport: TUTTI_TRANSPORT's value (named in errors; "" = by priority).
  // describePeer: "rank R (host H, pid P)", for messages.
  ConnectionSet(int rank, int nranks, std::vector<std::unique_ptr<transport::Transport>> transports,
                std::string forcedTransport, std::function<std::string(int)> describePeer);
  ~ConnectionSet();
  ConnectionSet(const ConnectionSet&) = delete;
  ConnectionSet& operator=(const ConnectionSet&) = delete;

  // Once, before any connect: every transport's setup (they may publish endpoints).
  void setup(const transport::Context& ctx);
  // Connects the peers in `peers` not connected yet (each must call connect with this rank
  // in its list), one transport at a time, each within timeoutSec. While a transport
  // connects, connecting() lists its peers. Throws what the transport throws.
  void connect(std::span<const int> peers, double timeoutSec);
  // The same, and while connecting asks grow() (when set) for more peers (any, connected or
  // not) to connect with them (transport::Transport::connectGrowing): a peer whose transport
  // is not the one connecting now is connected after it.
  void connect(std::span<const int> peers, double timeoutSec,
               const transport::Transport::GrowFn& grow);
  // The peers being connected now (empty outside connect).
  std::span<const int> connecting() const { return connectingTo_; }
  // Whether any peer in `peers` still needs a connection.
  bool needsConnection(std::span<const int> peers) const;
  // The connections by peer (null: none yet), as the executor takes them.
  std::span<transport::Connection* const> table() const { return pointers_; }
  // Closes every connection (the peers' waits on this rank then fail); later calls connect
  // again.
  void closeAll();
  // The first shared window a transport offers these ranks (collective; nullptr when none).
  std::unique_ptr<transport::Window> createWindow(size_t bytes, const Deadline& deadline);
  // The names of the transports of the connections made, comma-separated ("none").
  std::string inUse() const;

 private:
  // The first transport that accepts the pair; tuttiUnsupported when none does.
  transport::Transport* transportFor(int peer);

  int rank_;
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  std::string forcedTransport_;
  std::function<std::string(int)> describePeer_;
  std::span<const transport::PeerInfo> peers_;  // set by setup (the communicator's)
  std::vector<std::unique_ptr<transport::Connection>> connections_;  // by peer
  std::vector<transport::Connection*> pointers_;
  std::vector<int> connectingTo_;
};

}  // namespace tutti
