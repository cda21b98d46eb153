// The bootstrap ring with chords at powers of two: after one exchange of addresses through the
// store, every rank holds, for each k with 2^k < nranks, a TCP connection to rank + 2^k and one
// from rank - 2^k (level k; level 0 is the ring of NCCL's bootstrap). All-gathers (Bruck's)
// and barriers (dissemination) then take ceil(log2 nranks) rounds without asking the store
// anything, where a plain ring takes nranks - 1 steps.
//
// Setup: listen on bindHost at an ephemeral port (RingListener; its address is
// "<addr>|<token>", token: 16 random bytes, hex); learn the next rank's address (through the
// store, or from a parent communicator's all-gather for a split child). Level k connects to
// rank + 2^k and sends "TUTTIRNG", this rank and k (u32: rank | k << 24), that rank's token;
// it accepts connections until one presents this rank's own token, rank - 2^k and k (a
// stranger's is closed with a WARN; an early one of a later level is kept for it). Then the
// address of rank + 2^(k+1) comes by pointer doubling: rank + 2^k sends what it learnt at level
// k, the address of its own rank + 2^k, back over the level-k connection.
// Frames: len u64 | bytes, little-endian. An all-gather sends one per level towards rank - 2^k
// and receives one from rank + 2^k; a barrier's arrivals go the same way, its releases back.
// A barrier's frame is empty, an all-gather's never is.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "common/clock.h"
#include "common/unique_fd.h"

namespace tutti::bootstrap {

// The listening half of a ring member, made before the member knows its neighbours.
class RingListener {
 public:
  // Listens on bindHost (empty: 127.0.0.1) at an ephemeral port; throws tuttiSystemError.
  explicit RingListener(const std::string& bindHost);
  // "<addr>|<token>": what the ranks behind this one need to connect here.
  const std::string& address() const { return address_; }

 private:
  friend class BootstrapRing;
  UniqueFd fd_;
  std::string token_;
  std::string address_;
};

class BootstrapRing {
 public:
  // `name` prefixes error messages ("bootstrap comm0"). nranks < 2^24.
  BootstrapRing(std::string name, int rank, int nranks);
  BootstrapRing(const BootstrapRing&) = delete;
  BootstrapRing& operator=(const BootstrapRing&) = delete;

  // Throws tuttiTimeout when a step passes the deadline (the caller names missing ranks),
  // tuttiRemoteError when a peer closes or after abort(), tuttiSystemError on socket errors.
  // Publishes this rank's address as myKey and reads the next rank's from nextKey (the only
  // store requests: the other levels' addresses come over the ring).
  void connect(Store& store, const std::string& myKey, const std::string& nextKey,
               const std::string& bindHost, const Deadline& deadline);
  // The same with the listener made earlier and the next rank's RingListener::address()
  // learnt elsewhere: no store request.
  void connect(RingListener listener, const std::string& nextAddress, const Deadline& deadline);
  // Called at least every 100 ms while a connect or an all-gather waits (it may throw, to end
  // the wait: e.g. a check that names a rank whose process is gone). Between calls.
  void setWatch(std::function<void()> watch) { watch_ = std::move(watch); }
  // Every rank's contribution, indexed by rank; `what` names the call in errors. Bruck's
  // all-gather: at level k a rank sends the min(2^k, n - 2^k) entries it holds from its own on
  // to rank - 2^k and receives as many from rank + 2^k (n - 1 entries in all, as around a
  // ring, in ceil(log2 n) rounds). After a failed connect or all-gather every later one throws
  // tuttiRemoteError at once.
  std::vector<std::vector<std::byte>> allGather(std::span<const std::byte> mine,
                                                const Deadline& deadline, const std::string& what);
  // Returns once every rank has called it: empty frames up a binomial tree over the chords to
  // rank 0 (arrival) and back down (release): 2 ceil(log2 n) rounds, 2 (n - 1) frames in all
  // (a dissemination barrier sends n ceil(log2 n): 2-4x slower at 512-900 thread ranks on 2
  // cores). Errors as allGather's.
  void barrier(const Deadline& deadline, const std::string& what);
  // Wakes every current and future wait (any thread).
  void abort();
  // Sleeps until the deadline (watching); throws tuttiRemoteError when aborted first.
  void sleepUntil(const Deadline& deadline);
  // Connections per direction (ceil(log2 nranks); 0 before connect).
  int levels() const { return static_cast<int>(links_.size()); }

 private:
  // Level k's two connections: to rank + 2^k (out) and from rank - 2^k (in).
  struct Link {
    UniqueFd out, in;
    int outPeer = -1, inPeer = -1;
  };

  // poll() timeout: what is left of the deadline, at most one watch interval when watching.
  int pollMs(const Deadline& d) const;
  // poll() on fd (events) and the abort eventfd until ready; throws on deadline or abort.
  void waitFd(int fd, short events, const Deadline& d, const std::string& what);
  // peer >= 0: fd is a connection to that rank, whose close or reset is reported as
  // peerGone.
  void sendAll(int fd, const void* p, size_t n, const Deadline& d, const std::string& what,
               int peer = -1);
  void recvAll(int fd, void* p, size_t n, const Deadline& d, const std::string& what,
               int peer = -1);
  // Connects level k to `address` (rank + 2^k's RingListener::address()) and says hello.
  UniqueFd connectLevel(int level, const std::string& address, const Deadline& d);
  // Level k's connection from rank - 2^k; connections of later levels that come first are
  // kept in `early`.
  UniqueFd acceptLevel(int listenFd, const std::string& token, int level,
                       std::vector<UniqueFd>& early, const Deadline& d);
  // One side of a connection: its fd (-1: none) and the rank at the other end.
  struct Half {
    int fd;
    int peer;
  };
  // One frame to `to` and one from `from` (either may be none), at the same time; returns the
  // one received (empty when none). `round` (1-based) and `rounds` name the step in a timeout.
  std::vector<std::byte> transfer(Half to, std::span<const std::byte> payload, Half from,
                                  const Deadline& d, const std::string& what, int round,
                                  int rounds);
  // transfer() to link.inPeer and from link.outPeer.
  std::vector<std::byte> exchange(const Link& link, std::span<const std::byte> payload,
                                  const Deadline& d, const std::string& what, int round,
                                  int rounds);
  // Throws unless a barrier or an all-gather may start (connected, no earlier failure).
  void checkUsable(const std::string& what) const;
  void watch();
  // "rank P (<where> on the bootstrap ring) closed its connection": next, previous, or how
  // far ahead or behind.
  [[noreturn]] void peerGone(int peer, const std::string& what);

  std::string name_;
  int rank_;
  int nranks_;
  std::vector<Link> links_;
  UniqueFd abortFd_;
  std::atomic<bool> aborted_{false};
  std::function<void()> watch_;
  Clock::time_point lastWatch_{};
  bool broken_ = true;  // not connected yet, or connect / an all-gather failed
};

}  // namespace tutti::bootstrap
