// PeerProbe: whether the ranks of a communicator still run. A rank on this host (same pid
// namespace) is asked by its pid (LocalLiveness: a rotating slice of them per sweep); a rank
// elsewhere at its standby address (bootstrap/standby.h: a refused connection means gone, no
// answer cannot tell). Errors name ranks as the Membership describes them. It knows nothing
// of connections or calls: the caller says which peers it is connecting.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "bootstrap/standby.h"
#include "comm/local_liveness.h"
#include "comm/membership.h"
#include "common/clock.h"
#include "exec/executor.h"

namespace tutti {

class PeerProbe {
 public:
  explicit PeerProbe(std::shared_ptr<const Membership> membership);

  // While connections are made: throws exec::PeerFailure naming a rank in `connecting`, or one
  // of this sweep's slice of the other ranks on this host, whose process is gone.
  void checkLocal(std::span<const int> connecting);
  // Then the ranks in `connecting` on other hosts, at most every kRemoteInterval (each probe is
  // a TCP handshake at the peer): throws naming one whose standby address refuses connections.
  void checkRemote(std::span<const int> connecting);
  // The ranks on this host found gone in the next sweep's slice (the bootstrap's watch).
  std::vector<int> sweepLocal() { return liveness_.sweep(); }
  // "rank <me>: rank R (host H, pid P) died while the ranks set up their connections (how)".
  exec::PeerFailure diedError(int r, const char* how) const;

  // Whether rank r's pid means something here (same host and pid namespace).
  bool pidVisible(int r) const { return liveness_.visible(r); }
  // Rank r at its standby address (this rank, or one without an address: alive).
  bootstrap::Liveness probe(int r, const Deadline& deadline) const;
  // Whether rank r's process runs: by pid on this host (one that destroyed its communicator
  // after a failure elsewhere is still alive), else at its standby address.
  bool alive(int r, const Deadline& deadline) const;
  // The lowest rank other than this one and `peer` whose process is gone, or -1.
  int firstGoneExcept(int peer, const Deadline& deadline) const;
  // When `peer` is alive: the lowest other rank that is gone (-1 when all run, or when peer
  // does not).
  int firstGoneIfAlive(int peer) const;

  static constexpr std::chrono::milliseconds kRemoteInterval{250};
  static constexpr double kRemoteProbeSeconds = 0.5;  // one probe of checkRemote
  static constexpr double kProbeSeconds = 2.0;        // a connect that takes longer: no answer

 private:
  std::shared_ptr<const Membership> m_;
  LocalLiveness liveness_;
  std::chrono::steady_clock::time_point lastRemote_{};
};

}  // namespace tutti
