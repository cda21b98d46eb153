// Membership: who the ranks of a communicator are. Every rank's peer record (host id, host
// name, pid), its place (device and NIC closeness, rank_place.h) and its standby store's
// address (recovery), the hosts (an index per rank, in order of first appearance) and the ring
// order (ring_order.h). Made once at init -- exchanged over the bootstrap, or handed down by a
// split parent -- and never changed afterwards: the communicator shares it, const, with the
// layers that need it. It knows nothing of collectives, connections or failures.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/standby.h"
#include "comm/rank_place.h"
#include "common/clock.h"
#include "interfaces/transport.h"

namespace tutti {

struct Membership {
  int rank = 0;  // this rank
  std::vector<transport::PeerInfo> peers;
  std::vector<RankPlace> places;
  std::vector<bootstrap::StandbyAddress> standbyOf;  // invalid where a rank has none
  std::vector<int> hostOf;                           // host index of each rank
  int hosts = 1;
  std::vector<int> ringOrder;  // ranks in ring order; empty = 0..n-1

  int size() const { return static_cast<int>(peers.size()); }
  bool multiHost() const { return hosts > 1; }
  // Ranks on rank r's host (r included).
  int ranksOnHostOf(int r) const;
  // "host H, pid P" of rank r, for messages.
  std::string describe(int r) const;
  // "rank R (host H, pid P)" ("rank R" for a rank out of range), for messages.
  std::string describeRank(int r) const;
  // Each rank's pid where it means something to this rank (same host and pid namespace), else 0.
  std::vector<pid_t> visiblePids() const;
  // The rank whose process is `pid` on host `hostId`, or -1 (names processes across
  // communicators, whose ranks differ).
  int rankOfProcess(const std::string& hostId, pid_t pid) const;
};

// This process's peer record as rank `rank`.
transport::PeerInfo localPeerInfo(int rank);

// Every rank's record, all-gathered over the bootstrap ("peers"): this rank sends `me`, its
// standby store's address (empty when it has none) and its place. Then as fromRecords.
Membership exchangeMembership(bootstrap::Bootstrap& bootstrap, const transport::PeerInfo& me,
                              const std::string& myStandby, const RankPlace& myPlace, bool reorder,
                              const Deadline& deadline);
// From records already known (a split child's, from its parent): numbers the hosts and, when
// reorder (TUTTI_TOPO_REORDER), orders the ring by host and place (empty when that is the
// identity).
Membership membershipFromRecords(int rank, std::vector<transport::PeerInfo> peers,
                                 std::vector<RankPlace> places,
                                 std::vector<bootstrap::StandbyAddress> standbyOf, bool reorder);

}  // namespace tutti
