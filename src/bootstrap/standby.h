// A store server each rank of a communicator holds in reserve, for the rendezvous that must
// not depend on the communicator's own store (tuttiCommShrink, tuttiCommAgreeFailedRanks: the
// rank serving that store may be the one that failed). At init every rank binds a listening
// socket (one fd, no thread) and publishes its address and a secret of its own in its peer
// record; the server thread starts only when the rank leads such a rendezvous (serve()). The
// kernel queues connections until then, so a client may connect before.
//
// The same socket answers liveness probes without any thread: a connect to a live rank's
// address completes (the kernel's backlog), a connect to a dead rank's is refused (the kernel
// closed its socket with the process).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "common/unique_fd.h"

namespace tutti::bootstrap {

class TcpStoreServer;

// Where a rank's standby store listens and the secret its clients present.
struct StandbyAddress {
  SockAddr addr;
  Secret secret{};
  bool valid() const { return addr.len != 0; }
  // "host:port|<secret hex>" ("" for an invalid one) and back; parse throws
  // tuttiInvalidArgument on malformed text.
  std::string encode() const;
  static StandbyAddress parse(const std::string& text);
};

class StandbyStore {
 public:
  // Binds bindHost:0 and listens; throws tuttiSystemError when it cannot.
  explicit StandbyStore(const std::string& bindHost);
  ~StandbyStore();
  StandbyStore(const StandbyStore&) = delete;
  StandbyStore& operator=(const StandbyStore&) = delete;

  const StandbyAddress& address() const { return address_; }
  // Starts serving on the socket (the first call) and returns the server; later calls return
  // the same one. Any thread.
  std::shared_ptr<TcpStoreServer> serve();

 private:
  StandbyAddress address_;
  std::mutex mu_;
  UniqueFd listenFd_;  // until serve() hands it to the server
  std::shared_ptr<TcpStoreServer> server_;
};

enum class Liveness {
  kAlive,     // the connection completed
  kRefused,   // refused or unreachable: nothing listens there any more
  kNoAnswer,  // no answer within the timeout (a host that is gone, or a partition)
};
// One connect to addr, closed at once (no data sent).
Liveness probe(const SockAddr& addr, double timeoutSec);
const char* livenessName(Liveness l);

}  // namespace tutti::bootstrap
