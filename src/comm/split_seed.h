// What a split child takes from its parent instead of a rendezvous of its own
// (Communicator::split): its members' peer records, and what each member made before the
// parent's split all-gather and passed through it: its standby store and the listening half
// of the child's bootstrap ring. The record a member contributes to that all-gather, and the
// child's seed made from all of them, are this file's job; it knows nothing of the
// Communicator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/ring.h"
#include "bootstrap/standby.h"
#include "comm/membership.h"
#include "comm/rank_place.h"
#include "interfaces/transport.h"

namespace tutti {

struct SplitSeed {
  std::vector<transport::PeerInfo> peers;  // by child rank (rank fields renumbered)
  std::vector<RankPlace> places;
  std::vector<bootstrap::StandbyAddress> standbyOf;
  std::unique_ptr<bootstrap::StandbyStore> myStandby;
  std::unique_ptr<bootstrap::RingListener> ring;  // null: the child's bootstrap uses the store
  std::string nextRing;                           // the next member's RingListener::address()
};

// This member's record for the split all-gather: "color key", and for a member of a color its
// child ring listener's and standby store's addresses (seed's, either may be absent).
std::string splitRecord(int color, int key, const SplitSeed& seed);

// The child of `color` from every parent rank's record (indexed by parent rank): fills seed's
// peers, places, standby addresses and the next member's ring address (when seed has a ring
// listener), ordered by key then parent rank; returns this rank's child rank. Throws
// tuttiInternalError on a malformed record, naming its rank.
int seedFromRecords(const std::vector<std::vector<std::byte>>& records, int color, int myRank,
                    const Membership& parent, SplitSeed& seed);

}  // namespace tutti
