// Failure attribution (failure_attribution.h).
#include "comm/failure_attribution.h"

namespace tutti {

FailureVerdict attributePeerFailure(const exec::PeerFailure& e, FailureMonitor& monitor,
                                    const PeerProbe& probe, const Membership& membership) {
  // The peer may only have given up after a failure of its own (it closed its connections
  // then): its record names the rank that failed first.
  int first = e.peer();
  std::string text = e.what();
  if (auto record = monitor.recordOf(e.peer()); record && record->first >= 0) {
    first = record->first;
    text += "; rank " + std::to_string(e.peer()) + " had failed before: " + record->text;
  } else if (auto other = monitor.anyOtherRecord(e.peer())) {
    // The peer left no record (a killed rank), but another survivor that saw a failure
    // did: it names the rank that failed first. Asked before the standby probes, which
    // take a survivor that already destroyed its communicator for a dead rank.
    first = other->first;
    text += "; rank " + std::to_string(other->by) + " had failed before: " + other->text;
  } else if (e.closedOnPurpose()) {
    // The peer closed this communicator on purpose and left no record here: its user
    // aborted or destroyed it (the peer is the first), or it gave up after a failure on
    // another communicator of its process, whose cause is then a rank that is gone.
    int gone = probe.firstGoneExcept(e.peer(), Deadline(2.0));  // as firstGoneIfAlive
    text += "; rank " + std::to_string(e.peer()) + " closed its connections on purpose";
    if (auto late = gone >= 0 ? monitor.recordOf(gone) : std::nullopt; late && late->first >= 0) {
      first = late->first;  // the gone rank had only given up too (its record came late)
      text += "; rank " + std::to_string(gone) + " had failed before: " + late->text;
    } else if (gone >= 0) {
      first = gone;
      text += " (after a failure elsewhere: " + membership.describeRank(gone) +
              " died: its process is gone)";
    } else {
      text += " (aborted or destroyed by its caller; no other rank is gone)";
    }
  } else if (int dead = probe.firstGoneIfAlive(e.peer()); dead >= 0) {
    // No record (the store may have died with its rank), but the peer is alive: it gave up
    // after a failure elsewhere. The rank that is gone is found at its standby address;
    // it may itself have given up and exited after writing its record (since looked at).
    if (auto late = monitor.recordOf(dead); late && late->first >= 0) {
      first = late->first;
      text += "; rank " + std::to_string(dead) + " had failed before: " + late->text;
    } else {
      first = dead;
      text += "; rank " + std::to_string(e.peer()) + " is alive (it gave up after a failure), " +
              membership.describeRank(dead) + " died (its standby address refuses connections)";
    }
  }
  text += " (the first rank to fail: " + (first >= 0 ? std::to_string(first) : "unknown") + ")";
  return {first, text};
}

}  // namespace tutti
