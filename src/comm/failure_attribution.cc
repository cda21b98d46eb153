// Failure attribution (failure_attribution.h).
#include "comm/failure_attribution.h"

namespace tutti {

namespace {

// The peer's record in another communicator of this process: the rank here of the process it
// names, when that process is a member here (-1: no such record).
int recordedElsewhere(int peer, const Membership& membership,
                      const ProcessFailures::Registration& self, std::string& text) {
  auto found = ProcessFailures::instance().recordBy(processOf(membership, peer), self);
  if (!found) return -1;
  const int first = membership.rankOfProcess(found->first.hostId, found->first.pid);
  if (first < 0) return -1;
  text += "; rank " + std::to_string(peer) +
          " had failed before, on another communicator: " + found->text;
  return first;
}

// A process this process's own communicators found to have failed first, other than the
// peer's, that is a member here and gone (-1: none). For a peer that is gone too and left no
// record anywhere this process can read: it most likely gave up because of that failure.
int goneCauseKnownHere(int peer, const Membership& membership, const PeerProbe& probe,
                       std::string& text) {
  const ProcessFailures::Process peerProcess = processOf(membership, peer);
  for (const ProcessFailures::Finding& v : ProcessFailures::instance().verdicts()) {
    if (v.first == peerProcess) continue;
    const int r = membership.rankOfProcess(v.first.hostId, v.first.pid);
    if (r < 0 || r == membership.rank || probe.alive(r, Deadline(PeerProbe::kProbeSeconds)))
      continue;
    text += "; rank " + std::to_string(peer) + " is gone too, after " + membership.describeRank(r) +
            " failed (found on another communicator: " + v.text + ")";
    return r;
  }
  return -1;
}

// The peer closed this communicator on purpose and left no record here: its user aborted or
// destroyed it (the peer is the first), or it gave up after a failure on another communicator
// of its process, whose cause is then a rank that is gone.
int closedOnPurpose(int peer, FailureMonitor& monitor, const PeerProbe& probe,
                    const Membership& membership, std::string& text) {
  int gone = probe.firstGoneExcept(peer, Deadline(2.0));  // as firstGoneIfAlive
  text += "; rank " + std::to_string(peer) + " closed its connections on purpose";
  if (auto late = gone >= 0 ? monitor.recordOf(gone) : std::nullopt; late && late->first >= 0) {
    text += "; rank " + std::to_string(gone) + " had failed before: " + late->text;
    return late->first;  // the gone rank had only given up too (its record came late)
  }
  if (gone >= 0) {
    text += " (after a failure elsewhere: " + membership.describeRank(gone) +
            " died: its process is gone)";
    return gone;
  }
  text += " (aborted or destroyed by its caller; no other rank is gone)";
  return peer;
}

}  // namespace

ProcessFailures::Process processOf(const Membership& membership, int r) {
  const transport::PeerInfo& p = membership.peers[static_cast<size_t>(r)];
  return {p.hostId, p.pid};
}

FailureVerdict attributePeerFailure(const exec::PeerFailure& e, FailureMonitor& monitor,
                                    const PeerProbe& probe, const Membership& membership,
                                    const ProcessFailures::Registration& self) {
  // The peer may only have given up after a failure of its own (it closed its connections
  // then): its record names the rank that failed first.
  const int peer = e.peer();
  int first = peer;
  std::string text = e.what();
  if (auto record = monitor.recordOf(peer); record && record->first >= 0) {
    first = record->first;
    text += "; rank " + std::to_string(peer) + " had failed before: " + record->text;
  } else if (auto other = monitor.anyOtherRecord(peer)) {
    // The peer left no record (a killed rank), but another survivor that saw a failure
    // did: it names the rank that failed first. Asked before the standby probes, which
    // take a survivor that already destroyed its communicator for a dead rank.
    first = other->first;
    text += "; rank " + std::to_string(other->by) + " had failed before: " + other->text;
  } else if (int elsewhere = recordedElsewhere(peer, membership, self, text); elsewhere >= 0) {
    first = elsewhere;
  } else if (e.closedOnPurpose()) {
    first = closedOnPurpose(peer, monitor, probe, membership, text);
  } else if (int dead = probe.firstGoneIfAlive(peer); dead >= 0) {
    // No record (the store may have died with its rank), but the peer is alive: it gave up
    // after a failure elsewhere. The rank that is gone is found at its standby address;
    // it may itself have given up and exited after writing its record (since looked at).
    if (auto late = monitor.recordOf(dead); late && late->first >= 0) {
      first = late->first;
      text += "; rank " + std::to_string(dead) + " had failed before: " + late->text;
    } else {
      first = dead;
      text += "; rank " + std::to_string(peer) + " is alive (it gave up after a failure), " +
              membership.describeRank(dead) + " died (its standby address refuses connections)";
    }
  } else if (int known = goneCauseKnownHere(peer, membership, probe, text); known >= 0) {
    first = known;
  }
  text += " (the first rank to fail: " + (first >= 0 ? std::to_string(first) : "unknown") + ")";
  return {first, text};
}

}  // namespace tutti
