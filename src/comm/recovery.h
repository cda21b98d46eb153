// Recovery after failures (docs/reliability.md, "Shrinking after a failure"): this rank's
// standby store, the survivors' meeting for a shrink, the agreement on the failed ranks, and
// the watch over the survivors while a shrunk communicator is built. Neither uses the
// communicator's store, whose server may have died with its rank, nor waits for failed ranks:
// the ranks meet at the standby store of the lowest rank taking part (bootstrap/standby.h),
// and a rank that does not come is probed at its standby address (PeerProbe). It knows
// nothing of the Communicator: the caller builds the new communicator (buildWatched).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/standby.h"
#include "bootstrap/store.h"
#include "comm/membership.h"
#include "comm/peer_probe.h"
#include "common/clock.h"

namespace tutti {

// This rank's standby store, on the address the rank reaches tutti's TCP store from, else --
// over a caller's store (tuttiCommInitRankStore) or a file store, which tell no address -- on
// the advertised interface (TUTTI_BOOTSTRAP_IFNAME), as the bootstrap ring does. It is the one
// port such a communicator opens besides the transports' own. Null, with a WARN, when it
// cannot listen.
std::unique_ptr<bootstrap::StandbyStore> openStandby(bootstrap::Store& store);

class Recovery {
 public:
  // standby: this rank's standby store (null when it could not listen: shrink and agree then
  // fail with tuttiUnsupported).
  Recovery(int rank, std::shared_ptr<const Membership> membership, const PeerProbe& probe,
           std::unique_ptr<bootstrap::StandbyStore> standby);

  // The ranks not in `exclude`, ascending. Throws tuttiInvalidArgument on a bad list (out of
  // range, twice, every rank, this rank).
  std::vector<int> survivorsWithout(std::span<const int> exclude) const;

  // Where the survivors of a shrink met: the standby store of the lowest of them (`server`
  // holds it on that rank), the new communicator's store prefix and this rank's number in it.
  struct Meeting {
    std::shared_ptr<bootstrap::Store> store;
    std::shared_ptr<void> server;
    std::string prefix;
    int newRank = 0;
    std::vector<int> survivors;  // this communicator's ranks, by new rank
  };
  // Meets the other survivors and checks that all exclude the same ranks (tuttiInvalidUsage
  // on every rank when not); a survivor that has failed is a tuttiRemoteError naming it.
  Meeting meetSurvivors(std::vector<int> survivors, std::span<const int> exclude,
                        const Deadline& deadline);
  // Runs build() (the new communicator's init over meeting.store) while the other survivors
  // are probed at their standby addresses: one that dies meanwhile ends the build at once
  // (its waits would last the whole timeout) and is named in this communicator's numbering.
  void buildWatched(const Meeting& meeting, const std::function<void()>& build);

  // The ranks that have failed, ascending, the same list on every rank that returns
  // (Communicator::agreeFailedRanks).
  std::vector<int> agreeFailedRanks(const Deadline& deadline);

 private:
  // A client of rank r's standby store (r == rank_: this rank's, serving first); null when
  // r's address refuses connections or does not answer (r has failed).
  std::shared_ptr<bootstrap::Store> connectStandby(int r, const Deadline& deadline);
  // Every member sets <base>/<rank> = mine and reads the others'. A member that has failed
  // (PeerProbe::probe) is a tuttiRemoteError naming it, one missing at the deadline a
  // tuttiTimeout.
  std::map<int, std::string> gatherMembers(bootstrap::Store& store, const std::string& base,
                                           const std::vector<int>& members, const std::string& mine,
                                           const Deadline& deadline, const std::string& what);
  // gatherMembers' wait for the pending members' values (failIfOneFailed probes them).
  void gatherPending(bootstrap::Store& store, const std::string& base,
                     std::map<int, std::string>& values, std::vector<int>& pending,
                     const Deadline& deadline, const std::string& what,
                     const std::function<void()>& failIfOneFailed);
  std::vector<int> leadAgreement(bootstrap::Store& store, const std::string& base,
                                 const Deadline& deadline);
  // A follower's part: posts in the leader's current round, follows it to a new one, returns
  // the answer of the round that included this rank.
  std::vector<int> followAgreement(bootstrap::Store& store, int leader, const Deadline& deadline);
  // The leader's round number once it is above `after` (waits for the leader to start one).
  long leaderEpochAfter(bootstrap::Store& store, long after, const Deadline& deadline);
  // Whether the agreement's leader has gone (its process, or its standby address), looking
  // again for a moment when it still seems alive.
  bool leaderGone(int leader, const Deadline& deadline) const;
  std::string describe(int r) const { return membership_->describeRank(r); }

  int rank_;
  int nranks_;
  std::shared_ptr<const Membership> membership_;
  const PeerProbe& probe_;
  std::unique_ptr<bootstrap::StandbyStore> standby_;
  int shrinkCount_ = 0;
  long ledEpochs_ = 0;                  // rounds of the agreement this rank led
  std::map<int, long> followedEpochs_;  // by leader: the last of its rounds this rank finished
};

}  // namespace tutti
