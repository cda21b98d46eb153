// The Transport / Connection interface. Transports move bytes between two ranks and know
// nothing about collectives; the executor (src/exec) drives connections.
//
// A Connection is a bidirectional, message-ordered channel to one peer. At most one send and
// one receive are active at a time; both are non-blocking and advanced by progress calls.
// Messages are matched in order; the receiver states how many bytes it expects, and a
// transport that frames messages reports a size mismatch as tuttiInvalidUsage.
//
// Every message carries a tag of 16 opaque bytes from the sender; the receiver states the tag
// it expects. Transports that frame messages (tcp, shm) compare the two and throw TagMismatch
// when they differ; an all-zero expected tag matches anything, and zero-byte messages are not
// compared. The caller gives tags their meaning (the executor: which collective call this is);
// transports never interpret them. ibverbs and cuda_ipc carry no tags (nothing is compared).
//
// Errors are thrown as tutti::Error: tuttiRemoteError when the peer closed / reset / died
// (naming the peer rank and host), tuttiSystemError for local failures.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/store.h"
#include "common/clock.h"
#include "common/error.h"
#include "interfaces/window.h"

namespace tutti::transport {

using MsgTag = std::array<uint64_t, 2>;

// A received message's tag differed from the expected one (tuttiInvalidUsage). The caller may
// turn the two tags into words; the connection stays broken (the stream is out of step).
class TagMismatch : public Error {
 public:
  TagMismatch(int peer, const MsgTag& sent, const MsgTag& expected, std::string message)
      : Error(tuttiInvalidUsage, std::move(message)),
        peer_(peer),
        sent_(sent),
        expected_(expected) {}
  int peer() const { return peer_; }
  const MsgTag& sent() const { return sent_; }
  const MsgTag& expected() const { return expected_; }

 private:
  int peer_;
  MsgTag sent_, expected_;
};

// A peer closed the connection or gave up its window on purpose (its communicator failed or
// was destroyed) rather than dying (tuttiRemoteError): it is then not the rank that failed
// first, and its communicator knows which one did.
class PeerClosed : public Error {
 public:
  explicit PeerClosed(std::string message) : Error(tuttiRemoteError, std::move(message)) {}
};

// Throws TagMismatch unless `expected` is all zero or equals `sent`.
inline void checkTag(int self, int peer, const char* transportName, const MsgTag& sent,
                     const MsgTag& expected) {
  if (expected == MsgTag{} || sent == expected) return;
  auto hex = [](const MsgTag& t) {
    char b[48];
    std::snprintf(b, sizeof b, "%016llx:%016llx", static_cast<unsigned long long>(t[0]),
                  static_cast<unsigned long long>(t[1]));
    return std::string(b);
  };
  throw TagMismatch(peer, sent, expected,
                    std::string(transportName) + ": rank " + std::to_string(self) +
                        " received a message tagged " + hex(sent) + " from rank " +
                        std::to_string(peer) + " but expected the tag " + hex(expected));
}

// Facts every rank publishes about itself at communicator init.
struct PeerInfo {
  int rank = -1;
  std::string hostId;    // equal for ranks on one host (boot id + net namespace, TUTTI_HOSTID)
  std::string hostname;  // for messages
  pid_t pid = 0;
  uint64_t pidNs = 0;     // inode of its pid namespace: pids compare only within one
  std::string inspect{};  // its process's tutti-inspect responder, "host:port|token" ("": none)
};

// Where received bytes go. If `direct` is non-null the transport may write the message
// straight there (e.g. process_vm_readv, recv(2) into the user buffer). Otherwise it calls
// `consume(offset, bytes)` in order with views into its own staging memory, valid only during
// the call; the executor uses this to reduce while receiving.
struct RecvTarget {
  std::byte* direct = nullptr;
  size_t bytes = 0;
  std::function<void(size_t offset, std::span<const std::byte> data)> consume;
  MsgTag tag{};  // the tag the message must carry (all zero: any)
};

class Connection {
 public:
  virtual ~Connection() = default;
  virtual const char* transportName() const = 0;
  virtual int peer() const = 0;
  // Whether the peer's side is memory this process shares (shm, cuda_ipc): its answer usually
  // comes within a spin. Over a network the link paces the messages, and a spin between them
  // mostly burns a core (a host stream's worker then spins only while someone waits for it:
  // common/spin_gate.h).
  virtual bool sharesMemory() const { return false; }

  // Starts sending `data` (possibly empty) with `tag`. The buffer must stay valid and
  // unchanged until progressSend() returns data.size(). Precondition: no send active.
  virtual void startSend(std::span<const std::byte> data, const MsgTag& tag) = 0;
  void startSend(std::span<const std::byte> data) { startSend(data, MsgTag{}); }
  // Advances the active send without blocking; returns the bytes completed so far.
  virtual size_t progressSend() = 0;

  // Starts receiving target.bytes (possibly 0). Precondition: no receive active.
  virtual void startRecv(RecvTarget target) = 0;
  // Advances the active receive without blocking; returns the bytes delivered so far.
  virtual size_t progressRecv() = 0;
  // With no receive active and none owed: whether the next message from the peer has arrived
  // (its header at least), with its tag and size, without taking it; the next startRecv
  // receives it. Non-blocking. Transports that carry no tags (ibverbs, cuda_ipc) throw
  // tuttiUnsupported. A receive from any source (tuttiRecvAny) looks with it.
  virtual bool peekMessage(MsgTag& tag, size_t& bytes);

  // Sleeping support (so idle ranks do not burn the CPU they share):
  // fds that become readable when this connection may progress (data, space, peer death).
  virtual void collectWaitFds(std::vector<int>& fds) = 0;
  // Called before sleeping on those fds: arms wake-ups, returns false if progress is
  // possible right now (then the caller must not sleep).
  virtual bool prepareToSleep() = 0;
  // Called after waking: disarms and drains.
  virtual void afterSleep() = 0;
};

inline bool Connection::peekMessage(MsgTag&, size_t&) {
  throw Error(tuttiUnsupported, std::string(transportName()) + ": the connection to rank " +
                                    std::to_string(peer()) +
                                    " carries no message headers to look at before receiving");
}

// What a transport may use while connecting.
struct Context {
  int rank = 0;
  int nranks = 0;
  std::span<const PeerInfo> peers;    // indexed by rank
  bootstrap::Store* store = nullptr;  // namespaced to this communicator
  const std::atomic<bool>* aborted = nullptr;
  // OS names of the NIC nearest this rank's device in the topology (netdev and RDMA device
  // names, e.g. "eth2", "mlx5_1"); network transports prefer it. Empty: no preference.
  std::vector<std::string> preferredNics;
  // Called now and then by waits for peers during connect and window setup (the store's
  // waits already call it): throws tuttiRemoteError naming a rank that can no longer come
  // (its process is gone), so such a wait ends at once instead of at its deadline. May be
  // empty.
  std::function<void()> watchPeers;
  // All-gather over the communicator's ranks over its bootstrap ring (one store request per
  // rank) for collective setup steps such as createWindow, which every rank reaches in the
  // same order; entries by rank. A rank on this host whose process is gone before it arrived
  // ends the wait with an error naming it (after the wait's first second). Empty when the
  // communicator has no bootstrap ring: the transport then gathers through the store, whose
  // waits call watchPeers.
  std::function<std::vector<std::vector<std::byte>>(
      const std::string& tag, std::span<const std::byte> mine, const Deadline& deadline)>
      allGather;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Once per communicator, before any connect; may publish local endpoints in the store.
  virtual void setup(const Context& ctx) = 0;
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  // Connects to every rank in `peers` (each of which calls connect with this rank in its
  // list, in any order). Publishes this rank's half for all peers before waiting on any, so
  // differing orders cannot deadlock. Throws tuttiTimeout naming the missing peers.
  virtual std::vector<std::unique_ptr<Connection>> connect(std::span<const int> peers,
                                                           const Deadline& deadline) = 0;
  // As connect, and while it waits it asks grow() (when set; empty: just connect) for more
  // peers (not connected, not listed before) to connect together with these: a first contact that
  // waits for its peer then cannot hold back the first contact that peer waits for (sends and
  // receives posted while a round connects). The connections by peer, in the order the peers came.
  // This default asks grow() only after each connect has finished, which is enough for a transport
  // whose connect never waits for a peer that waits for it.
  using GrowFn = std::function<std::vector<int>()>;
  virtual std::vector<std::pair<int, std::unique_ptr<Connection>>> connectGrowing(
      std::span<const int> peers, const Deadline& deadline, const GrowFn& grow) {
    std::vector<std::pair<int, std::unique_ptr<Connection>>> out;
    std::vector<int> next(peers.begin(), peers.end());
    while (!next.empty()) {
      auto conns = connect(next, deadline);
      TUTTI_ASSERT(conns.size() == next.size());
      for (size_t i = 0; i < next.size(); ++i) out.emplace_back(next[i], std::move(conns[i]));
      next = grow ? grow() : std::vector<int>{};
    }
    return out;
  }
  // Collective over every rank of the communicator (all call it, after setup, with the same
  // bytes): a shared Window of `bytes` per rank, or nullptr on every rank when this transport
  // cannot offer one to these ranks (e.g. they span hosts, or one could not map the others).
  virtual std::unique_ptr<Window> createWindow(size_t bytes, const Deadline& deadline) {
    return nullptr;
  }
};

}  // namespace tutti::transport
