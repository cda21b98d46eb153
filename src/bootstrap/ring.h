// The bootstrap ring (as NCCL's): after one exchange of addresses through the store, every
// rank holds a TCP connection to the next rank and one from the previous, and an all-gather
// passes each contribution around the ring in nranks - 1 steps without asking the store
// anything. Rank 0's store then serves O(1) requests per rank per all-gather instead of
// nranks - 1 GETs per rank.
//
// Setup: listen on bindHost at an ephemeral port (RingListener; its address is
// "<addr>|<token>", token: 16 random bytes, hex); learn the next rank's address (through the
// store, or from a parent communicator's all-gather for a split child); connect to the next
// rank and send "TUTTIRNG", this rank, the next rank's token; accept connections until one
// presents this rank's own token and the previous rank's number (a stranger's is closed with
// a WARN).
// Frames on the ring: len u64 | bytes, little-endian, one per step.
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
  // "<addr>|<token>": what the previous rank needs to connect here.
  const std::string& address() const { return address_; }

 private:
  friend class BootstrapRing;
  UniqueFd fd_;
  std::string token_;
  std::string address_;
};

class BootstrapRing {
 public:
  // `name` prefixes error messages ("bootstrap comm0").
  BootstrapRing(std::string name, int rank, int nranks);
  ~BootstrapRing();
  BootstrapRing(const BootstrapRing&) = delete;
  BootstrapRing& operator=(const BootstrapRing&) = delete;

  // Throws tuttiTimeout when a step passes the deadline (the caller names missing ranks),
  // tuttiRemoteError when a neighbour closes or after abort(), tuttiSystemError on socket
  // errors.
  // Publishes this rank's address as myKey and reads the next rank's from nextKey.
  void connect(Store& store, const std::string& myKey, const std::string& nextKey,
               const std::string& bindHost, const Deadline& deadline);
  // The same with the listener made earlier and the next rank's RingListener::address()
  // learnt elsewhere: no store request.
  void connect(RingListener listener, const std::string& nextAddress, const Deadline& deadline);
  // Called at least every 100 ms while a connect or an all-gather waits (it may throw, to end
  // the wait: e.g. a check that names a rank whose process is gone). Between calls.
  void setWatch(std::function<void()> watch) { watch_ = std::move(watch); }
  // Every rank's contribution, indexed by rank; `what` names the call in errors. After a
  // failed connect or all-gather every later one throws tuttiRemoteError at once.
  std::vector<std::vector<std::byte>> allGather(std::span<const std::byte> mine,
                                                const Deadline& deadline, const std::string& what);
  // Returns once every rank has called it: an arrival token goes from rank 0 around the ring
  // and back, then a release token from rank 0 to rank n-1 (2n - 1 hops, one 8-byte frame per
  // rank and token, where an empty all-gather forwards n - 1 frames per rank: n^2 on a host,
  // 1.5-2 s at 1024 ranks on 2 cores). Errors as allGather's.
  void barrier(const Deadline& deadline, const std::string& what);
  // Wakes every current and future wait (any thread).
  void abort();
  // Sleeps until the deadline (watching); throws tuttiRemoteError when aborted first.
  void sleepUntil(const Deadline& deadline);

 private:
  // poll() timeout: what is left of the deadline, at most one watch interval when watching.
  int pollMs(const Deadline& d) const;
  // poll() on fd (events) and the abort eventfd until ready; throws on deadline or abort.
  void waitFd(int fd, short events, const Deadline& d, const std::string& what);
  // neighbour >= 0: fd is the connection to that ring neighbour (next for sendAll, previous
  // for recvAll), whose close or reset is reported as neighbourGone.
  void sendAll(int fd, const void* p, size_t n, const Deadline& d, const std::string& what,
               int neighbour = -1);
  void recvAll(int fd, void* p, size_t n, const Deadline& d, const std::string& what,
               int neighbour = -1);
  int acceptPrev(int listenFd, const std::string& token, const Deadline& d);
  // The barrier's token: an empty frame, to the next rank or from the previous one.
  void sendToken(const Deadline& d, const std::string& what);
  void recvToken(const Deadline& d, const std::string& what);
  void watch();
  [[noreturn]] void neighbourGone(int peer, const char* side, const std::string& what);

  std::string name_;
  int rank_;
  int nranks_;
  int next_ = -1;  // connected to rank + 1
  int prev_ = -1;  // accepted from rank - 1
  int abortFd_ = -1;
  std::atomic<bool> aborted_{false};
  std::function<void()> watch_;
  Clock::time_point lastWatch_{};
  bool broken_ = true;  // not connected yet, or connect / an all-gather failed
};

}  // namespace tutti::bootstrap
