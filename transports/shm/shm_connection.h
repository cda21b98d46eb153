// One shm connection: two FIFOs (ours for sending, the peer's for receiving), doorbells for
// sleeping, a pidfd watch on the peer, and optional single-copy (CMA) transfers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interfaces/transport.h"
#include "shm_layout.h"
#include "shm_os.h"

namespace tutti::transport::shm {

struct ConnectionParts {
  int rank = -1;
  PeerInfo peer;
  Segment out;       // created here: this rank -> peer
  Segment in;        // created by the peer: peer -> this rank
  Doorbell bell;     // rung by the peer
  Bell peerBell;     // we ring the peer
  bool cma = false;  // single-copy allowed for our sends
  size_t cmaThreshold = 0;
};

class ShmConnection final : public Connection {
 public:
  explicit ShmConnection(ConnectionParts parts);
  // Marks both segments closed by this side and rings the peer, so that a peer blocked on
  // this connection fails at once (its error says this rank closed the connection).
  ~ShmConnection() override;

  const char* transportName() const override { return "shm"; }
  bool sharesMemory() const override { return true; }
  int peer() const override { return p_.peer.rank; }
  using Connection::startSend;
  void startSend(std::span<const std::byte> data, const MsgTag& tag) override;
  size_t progressSend() override;
  void startRecv(RecvTarget target) override;
  size_t progressRecv() override;
  bool peekMessage(MsgTag& tag, size_t& bytes) override;
  void collectWaitFds(std::vector<int>& fds) override;
  bool prepareToSleep() override;
  void afterSleep() override;

  // True once the peer refused a single-copy read (ptrace restrictions): FIFO only.
  bool cmaDisabled() const { return !cmaOn_; }

 private:
  enum class SendState { kIdle, kHeader, kPayload, kCmaWait, kDone };
  enum class RecvState { kIdle, kHeader, kPayload, kCma, kDone };

  bool stepSend();
  bool stepRecv();
  bool flushZeroSends(bool& moved);
  bool flushZeroRecvs(bool& moved);
  bool writeHeader(uint64_t bytes, bool cma);
  bool readHeader(MsgHeader& h, bool& moved);
  bool recvCma();
  bool canProgress() const;
  bool peerGone();
  bool peerClosedIt();  // reads the peer's closed flags; sets peerClosed_ and peerDead_
  [[noreturn]] void throwPeerDied(const char* during);
  void publishHead();
  void publishTail();
  void wakePeer();
  std::string peerName() const;

  ConnectionParts p_;
  PeerProcess proc_;
  Ctrl* out_;
  std::byte* outRing_;
  uint64_t outSize_;
  Ctrl* in_;
  std::byte* inRing_;
  uint64_t inSize_;
  uint64_t chunk_;
  uint64_t hotBytes_;
  bool cmaOn_;

  SendState sstate_ = SendState::kIdle;
  std::span<const std::byte> sdata_;
  MsgTag stag_{};  // the tag of the message being sent
  size_t ssent_ = 0;
  uint64_t shead_ = 0;
  uint32_t sseq_ = 0;
  bool sCma_ = false;

  RecvState rstate_ = RecvState::kIdle;
  RecvTarget rt_;
  size_t rdone_ = 0;
  uint64_t rtail_ = 0;
  MsgHeader rhdr_{};
  std::vector<std::byte> bounce_;

  // 0-byte messages complete at start (progress cannot report "0 of 0 bytes, not yet"); when
  // the FIFO has no room for their header (send) or the header has not arrived (receive),
  // they are counted here and handled first by the next call on this connection.
  uint32_t pendingZeroSends_ = 0;
  uint32_t pendingZeroRecvs_ = 0;

  uint32_t stalls_ = 0;
  bool peerDead_ = false;  // its process is gone, or (peerClosed_) it closed the connection
  bool peerClosed_ = false;
};

}  // namespace tutti::transport::shm
