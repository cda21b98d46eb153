#include "comm/peer_probe.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/process_gone.h"

namespace tutti {

PeerProbe::PeerProbe(std::shared_ptr<const Membership> membership)
    : m_(std::move(membership)), liveness_(m_->visiblePids(), m_->rank) {}

exec::PeerFailure PeerProbe::diedError(int r, const char* how) const {
  return exec::PeerFailure(r, "rank " + std::to_string(m_->rank) + ": " + m_->describeRank(r) +
                                  " died while the ranks set up their connections (" + how + ")");
}

void PeerProbe::checkLocal(std::span<const int> connecting) {
  for (int r : connecting)
    if (liveness_.gone(r)) throw diedError(r, "its process is gone");
  for (int r : liveness_.sweep()) throw diedError(r, "its process is gone");
}

void PeerProbe::checkRemote(std::span<const int> connecting) {
  auto now = std::chrono::steady_clock::now();
  if (connecting.empty() || now - lastRemote_ < kRemoteInterval) return;
  lastRemote_ = now;
  for (int r : connecting) {
    if (pidVisible(r)) continue;
    // A host that does not answer at all may be slow or partitioned: only a refusal counts.
    if (probe(r, Deadline(kRemoteProbeSeconds)) == bootstrap::Liveness::kRefused)
      throw diedError(r, "its standby address refuses connections");
  }
}

bootstrap::Liveness PeerProbe::probe(int r, const Deadline& deadline) const {
  if (r == m_->rank) return bootstrap::Liveness::kAlive;
  const auto& a = m_->standbyOf[r];
  if (!a.valid()) return bootstrap::Liveness::kAlive;  // cannot tell: assume it is
  double t = std::max(0.05, std::min(kProbeSeconds, deadline.secondsLeft()));
  return bootstrap::probe(a.addr, t);
}

bool PeerProbe::alive(int r, const Deadline& deadline) const {
  if (pidVisible(r)) return !processGone(m_->peers[r].pid);
  return probe(r, deadline) == bootstrap::Liveness::kAlive;
}

int PeerProbe::firstGoneExcept(int peer, const Deadline& deadline) const {
  try {
    for (int r = 0; r < m_->size(); ++r)
      if (r != m_->rank && r != peer && (m_->standbyOf[r].valid() || pidVisible(r)) &&
          !alive(r, deadline))
        return r;
  } catch (const Error&) {
  }
  return -1;
}

int PeerProbe::firstGoneIfAlive(int peer) const {
  try {
    Deadline deadline(kProbeSeconds);
    if (!alive(peer, deadline)) return -1;
    return firstGoneExcept(peer, deadline);
  } catch (const Error&) {
  }
  return -1;
}

}  // namespace tutti
