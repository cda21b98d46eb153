// Communicator::recvAny: a receive from any source. Point-to-point messages are matched per
// peer in order, so the receive looks at the head of each connection (without taking it) for a
// point-to-point message (call_tag.h: p2pMessageTag), and then receives it from that peer as
// tuttiRecv would. Peers not connected yet are connected when they announce a first contact
// (a store key that runP2p and runP2pOpen write before they connect).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/connection_set.h"
#include "comm/failure_monitor.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti {

namespace {

std::string contactKey(int from, int to) {
  return "p2p-contact/" + std::to_string(from) + "/" + std::to_string(to);
}

// How often the store is asked for first contacts while no message has arrived: every 2 ms
// at first, every 50 ms after a long wait (each look is a store request).
constexpr auto kFirstContactLook = std::chrono::milliseconds(2);
constexpr auto kMaxContactLook = std::chrono::milliseconds(50);

// Idle passes spin this many times, then sleep a little longer each time up to kMaxNap.
constexpr int kSpinPasses = 200;
constexpr auto kMaxNap = std::chrono::microseconds(500);

}  // namespace

void Communicator::announceP2pContact(std::span<const int> peers) {
  for (int p : peers) {
    if (p == rank_ || !links_->needsConnection({&p, 1})) continue;
    stores_.own()->set(contactKey(rank_, p), {});
  }
}

bool Communicator::connectAnnouncedPeers() {
  std::vector<int> unconnected;
  std::vector<std::string> keys;
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_ || !links_->needsConnection({&p, 1})) continue;
    unconnected.push_back(p);
    keys.push_back(contactKey(p, rank_));
  }
  if (keys.empty()) return false;
  std::vector<int> announced;
  std::vector<bool> posted = stores_.own()->checkEach(keys);
  for (size_t k = 0; k < keys.size(); ++k)
    if (posted[k]) announced.push_back(unconnected[k]);
  if (announced.empty()) return false;
  connect(announced);
  return true;
}

std::pair<int, size_t> Communicator::waitAnyP2pMessage() {
  const Deadline deadline(options_.timeoutSec);
  const transport::MsgTag wanted = p2pMessageTag();
  auto nextContactLook = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration lookEvery = kFirstContactLook;
  std::chrono::microseconds nap{1};
  for (int idle = 0;; ++idle) {
    monitor_->throwIfFailed();
    std::span<transport::Connection* const> table = links_->table();
    for (int i = 0; i < nranks_; ++i) {
      const int p = (anySourceFirst_ + i) % nranks_;
      transport::MsgTag tag{};
      size_t bytes = 0;
      if (p == rank_ || table[p] == nullptr || !table[p]->peekMessage(tag, bytes)) continue;
      if (tag != wanted) continue;  // a collective's: it waits for its collective
      anySourceFirst_ = (p + 1) % nranks_;
      return {p, bytes};
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= nextContactLook) {
      nextContactLook = now + lookEvery;
      lookEvery = std::min<std::chrono::steady_clock::duration>(lookEvery * 2, kMaxContactLook);
      if (connectAnnouncedPeers()) {
        idle = 0;
        lookEvery = kFirstContactLook;
        continue;
      }
    }
    if (deadline.expired())
      fail(tuttiTimeout, "tuttiRecvAny: rank ", rank_,
           ": no point-to-point message arrived from any rank within ", options_.timeoutSec, " s");
    if (idle < kSpinPasses) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, kMaxNap);
  }
}

int Communicator::recvAny(std::byte* buffer, size_t bytes) {
  log::setThreadRank(rank_);
  std::pair<int, size_t> found;
  monitor_->trace().begin(p2pCallTag(1), "p2p-any");  // a rank waiting here shows so
  try {
    found = waitAnyP2pMessage();
  } catch (const Error& e) {
    if (e.code() == tuttiUnsupported) {  // a connection without message headers: nothing ran
      monitor_->trace().end(false);
      throw;
    }
    rethrowCallFailure();
  }
  monitor_->trace().end(true);
  const auto [peer, arrived] = found;
  if (arrived != bytes)
    fail(tuttiInvalidUsage, "tuttiRecvAny: rank ", rank_, " expected a message of ", bytes,
         " bytes but the first to arrive, from rank ", peer, ", has ", arrived,
         " bytes (it stays for a receive of that size)");
  const P2pOp op{false, peer, buffer, bytes};
  runP2p({&op, 1});
  return peer;
}

}  // namespace tutti
