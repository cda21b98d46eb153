#include "shm_connection.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/copy_bytes.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::transport::shm {

namespace {

constexpr size_t kCmaPiece = 8u << 20;     // bytes per process_vm_readv call
constexpr size_t kCmaPerCall = 32u << 20;  // bytes per progressRecv call
constexpr size_t kBounceBytes = 1u << 20;  // consume-mode CMA bounce buffer
constexpr uint32_t kStallsPerDeathCheck = 64;
constexpr uint64_t kFifoBytesPerCall = 8u << 20;  // fairness between connections

std::atomic<bool> cmaRefusedLogged{false};

Ctrl* ctrlOf(const Segment& s) { return reinterpret_cast<Ctrl*>(s.data()); }

// The first position of the lap after the one holding x (x itself if it starts a lap).
uint64_t nextLap(uint64_t x, uint64_t lap) { return (x + lap - 1) / lap * lap; }

}  // namespace

ShmConnection::ShmConnection(ConnectionParts parts)
    : p_(std::move(parts)),
      proc_(p_.peer.pid),
      out_(ctrlOf(p_.out)),
      outRing_(p_.out.data() + kCtrlBytes),
      outSize_(out_->fifoBytes),
      in_(ctrlOf(p_.in)),
      inRing_(p_.in.data() + kCtrlBytes),
      inSize_(in_->fifoBytes),
      cmaOn_(p_.cma) {
  chunk_ = std::clamp<uint64_t>(outSize_ / 8, 4096, 1u << 20);
  hotBytes_ = std::min<uint64_t>(kFifoHotBytes, outSize_ / 2);
}

ShmConnection::~ShmConnection() {
  out_->senderClosed.store(1, std::memory_order_release);
  in_->receiverClosed.store(1, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  p_.peerBell.ringMaybeClosed();  // it may sleep on its bell in a send or receive here
}

std::string ShmConnection::peerName() const {
  return "rank " + std::to_string(p_.peer.rank) + " (host " + p_.peer.hostname + ", pid " +
         std::to_string(p_.peer.pid) + ")";
}

void ShmConnection::throwPeerDied(const char* during) {
  if (peerClosed_)
    throw PeerClosed("shm: rank " + std::to_string(p_.rank) + ": peer " + peerName() +
                     " closed the connection (its communicator failed or was destroyed) during " +
                     during);
  fail(tuttiRemoteError, "shm: rank ", p_.rank, ": peer ", peerName(), " died during ", during);
}

bool ShmConnection::peerClosedIt() {
  if (!peerClosed_ && (in_->senderClosed.load(std::memory_order_acquire) != 0 ||
                       out_->receiverClosed.load(std::memory_order_acquire) != 0))
    peerClosed_ = peerDead_ = true;
  return peerClosed_;
}

// Called when a step made no progress: the peer's closed flags (two loads), and a
// rate-limited check of the peer process.
bool ShmConnection::peerGone() {
  if (peerDead_ || peerClosedIt()) return true;
  if (++stalls_ % kStallsPerDeathCheck == 0) peerDead_ = proc_.exited();
  return peerDead_;
}

void ShmConnection::wakePeer() {
  // seq_cst fence between our release store (data / space / ack) and the load of the peer's
  // sleeping flag; the sleeper does flag store, fence, condition load (Dekker): one of us sees
  // the other's store, so a wake-up is never lost.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (in_->ownerSleeping.load(std::memory_order_relaxed)) p_.peerBell.ring();
}

void ShmConnection::publishHead() {
  out_->head.store(shead_, std::memory_order_release);
  wakePeer();
}

void ShmConnection::publishTail() {
  in_->tail.store(rtail_, std::memory_order_release);
  wakePeer();
}

// ---- send ----

void ShmConnection::startSend(std::span<const std::byte> data, const MsgTag& tag) {
  if (sstate_ != SendState::kIdle && sstate_ != SendState::kDone)
    fail(tuttiInvalidUsage, "shm: rank ", p_.rank, ": startSend to rank ", p_.peer.rank,
         " while a send is active");
  sdata_ = data;
  stag_ = tag;
  ssent_ = 0;
  sCma_ = cmaOn_ && !data.empty() && data.size() >= p_.cmaThreshold;
  sstate_ = SendState::kHeader;
  stepSend();
  if (data.empty() && sstate_ != SendState::kDone) {
    ++pendingZeroSends_;
    sstate_ = SendState::kDone;
  }
}

size_t ShmConnection::progressSend() {
  if (sstate_ == SendState::kIdle || sstate_ == SendState::kDone) {
    bool moved = false;
    if (pendingZeroSends_ > 0) flushZeroSends(moved);
    return ssent_;
  }
  if (stepSend() || !peerGone()) return ssent_;
  if (stepSend()) return ssent_;  // it may have acknowledged before dying
  if (sstate_ == SendState::kDone) return ssent_;
  throwPeerDied("a send");
}

// Writes a message header at the next record position if there is room.
bool ShmConnection::writeHeader(uint64_t bytes, bool cma) {
  uint64_t pos = roundUpRecord(shead_);
  uint64_t tail = out_->tail.load(std::memory_order_acquire);
  if (pos + kRecord > tail + outSize_) return false;
  if (tail == shead_ && pos % outSize_ >= hotBytes_) {
    // Empty and past the hot start: a restart record, then the next lap's start (whose
    // pos % outSize_ bytes are free: the receiver has consumed everything before tail).
    MsgHeader r{};
    r.kind = static_cast<uint32_t>(MsgKind::kRestart);
    std::memcpy(outRing_ + pos % outSize_, &r, kRecord);
    pos = nextLap(pos + kRecord, outSize_);
  }
  MsgHeader h{};
  h.bytes = bytes;
  h.seq = ++sseq_;
  h.tag[0] = stag_[0];
  h.tag[1] = stag_[1];
  if (cma) {
    h.kind = static_cast<uint32_t>(MsgKind::kCma);
    h.cmaAddr = reinterpret_cast<uint64_t>(sdata_.data());
    h.cmaPid = ::getpid();
  } else {
    h.kind = static_cast<uint32_t>(MsgKind::kInline);
  }
  std::memcpy(outRing_ + pos % outSize_, &h, kRecord);
  shead_ = pos + kRecord;
  return true;
}

// Returns false while zero-byte headers are still waiting for room.
bool ShmConnection::flushZeroSends(bool& moved) {
  while (pendingZeroSends_ > 0) {
    if (!writeHeader(0, false)) return false;
    --pendingZeroSends_;
    publishHead();
    moved = true;
  }
  return true;
}

// Returns true if anything moved.
bool ShmConnection::stepSend() {
  bool moved = false;
  if (!flushZeroSends(moved)) return moved;
  uint64_t budget = kFifoBytesPerCall;
  for (;;) {
    if (sstate_ == SendState::kHeader) {
      if (!writeHeader(sdata_.size(), sCma_)) break;
      moved = true;
      if (sCma_) {
        publishHead();
        sstate_ = SendState::kCmaWait;
        continue;
      }
      sstate_ = SendState::kPayload;
      if (sdata_.empty()) {
        publishHead();
        sstate_ = SendState::kDone;
        break;
      }
    }
    if (sstate_ == SendState::kPayload) {
      uint64_t tail = out_->tail.load(std::memory_order_acquire);
      uint64_t space = tail + outSize_ - shead_;
      if (space == 0 || budget == 0) break;
      size_t n = std::min<uint64_t>({space, sdata_.size() - ssent_, chunk_, budget});
      budget -= n;
      uint64_t pos = shead_ % outSize_;
      size_t first = std::min<uint64_t>(n, outSize_ - pos);
      copyBytes(outRing_ + pos, sdata_.data() + ssent_, first);
      copyBytes(outRing_, sdata_.data() + ssent_ + first, n - first);
      shead_ += n;
      ssent_ += n;
      publishHead();
      moved = true;
      if (ssent_ == sdata_.size()) {
        sstate_ = SendState::kDone;
        break;
      }
      continue;
    }
    if (sstate_ == SendState::kCmaWait) {
      uint64_t ack = out_->cmaAck.load(std::memory_order_acquire);
      if ((ack >> 1) != sseq_) break;
      moved = true;
      if (ack & 1) {  // the receiver may not read our memory: resend through the FIFO
        cmaOn_ = false;
        sCma_ = false;
        sstate_ = SendState::kHeader;
        continue;
      }
      ssent_ = sdata_.size();
      sstate_ = SendState::kDone;
    }
    break;
  }
  if (moved) stalls_ = 0;
  return moved;
}

// ---- receive ----

void ShmConnection::startRecv(RecvTarget target) {
  if (rstate_ != RecvState::kIdle && rstate_ != RecvState::kDone)
    fail(tuttiInvalidUsage, "shm: rank ", p_.rank, ": startRecv from rank ", p_.peer.rank,
         " while a receive is active");
  if (!target.direct && !target.consume && target.bytes > 0)
    fail(tuttiInvalidArgument, "shm: rank ", p_.rank, ": startRecv from rank ", p_.peer.rank,
         " with neither a direct buffer nor a consume callback");
  rt_ = std::move(target);
  rdone_ = 0;
  rstate_ = RecvState::kHeader;
  stepRecv();
  if (rt_.bytes == 0 && rstate_ != RecvState::kDone) {
    ++pendingZeroRecvs_;
    rstate_ = RecvState::kDone;
  }
}

// Consumes the headers of zero-byte receives that completed early; false while waiting.
bool ShmConnection::flushZeroRecvs(bool& moved) {
  while (pendingZeroRecvs_ > 0) {
    MsgHeader h;
    if (!readHeader(h, moved)) return false;
    publishTail();
    --pendingZeroRecvs_;
    moved = true;
    if (h.bytes != 0)
      fail(tuttiInvalidUsage, "shm: rank ", p_.rank, " expected a message of 0 bytes from peer ",
           peerName(), " but the peer sent ", h.bytes, " bytes");
  }
  return true;
}

bool ShmConnection::peekMessage(MsgTag& tag, size_t& bytes) {
  if (rstate_ != RecvState::kIdle && rstate_ != RecvState::kDone)
    fail(tuttiInvalidUsage, "shm: rank ", p_.rank, ": peekMessage from rank ", p_.peer.rank,
         " while a receive is active");
  bool moved = false;
  MsgHeader h;
  if (flushZeroRecvs(moved) && readHeader(h, moved)) {
    rtail_ -= kRecord;  // not taken: the next receive reads this header again
    tag = {h.tag[0], h.tag[1]};
    bytes = h.bytes;
    return true;
  }
  if (moved) publishTail();
  if (peerGone()) throwPeerDied("a look for a message");
  return false;
}

// Reads the next message header, skipping restart records; false if none has arrived.
bool ShmConnection::readHeader(MsgHeader& h, bool& moved) {
  for (;;) {
    uint64_t pos = roundUpRecord(rtail_);
    if (in_->head.load(std::memory_order_acquire) < pos + kRecord) return false;
    std::memcpy(&h, inRing_ + pos % inSize_, kRecord);
    rtail_ = pos + kRecord;
    if (h.kind != static_cast<uint32_t>(MsgKind::kRestart)) return true;
    rtail_ = nextLap(rtail_, inSize_);
    publishTail();
    moved = true;
  }
}

size_t ShmConnection::progressRecv() {
  if (rstate_ == RecvState::kIdle || rstate_ == RecvState::kDone) {
    bool moved = false;
    if (pendingZeroRecvs_ > 0) flushZeroRecvs(moved);
    return rdone_;
  }
  if (stepRecv() || !peerGone()) return rdone_;
  if (stepRecv()) return rdone_;  // data written just before it died
  if (rstate_ == RecvState::kDone) return rdone_;
  throwPeerDied("a receive");
}

bool ShmConnection::stepRecv() {
  bool moved = false;
  if (!flushZeroRecvs(moved)) return moved;
  uint64_t budget = kFifoBytesPerCall;
  for (;;) {
    if (rstate_ == RecvState::kHeader) {
      if (!readHeader(rhdr_, moved)) break;
      moved = true;
      if (rt_.bytes > 0 &&
          !(rt_.tag == MsgTag{} || rt_.tag == MsgTag{rhdr_.tag[0], rhdr_.tag[1]})) {
        publishTail();
        rstate_ = RecvState::kIdle;
        checkTag(p_.rank, p_.peer.rank, "shm", {rhdr_.tag[0], rhdr_.tag[1]}, rt_.tag);
      }
      if (rhdr_.bytes != rt_.bytes) {
        publishTail();
        rstate_ = RecvState::kIdle;
        fail(tuttiInvalidUsage, "shm: rank ", p_.rank, " expected a message of ", rt_.bytes,
             " bytes from peer ", peerName(), " but the peer sent ", rhdr_.bytes, " bytes");
      }
      if (rhdr_.kind == static_cast<uint32_t>(MsgKind::kCma)) {
        publishTail();
        rstate_ = RecvState::kCma;
        continue;
      }
      rstate_ = RecvState::kPayload;
      if (rt_.bytes == 0) {
        publishTail();
        rstate_ = RecvState::kDone;
        break;
      }
    }
    if (rstate_ == RecvState::kPayload) {
      uint64_t head = in_->head.load(std::memory_order_acquire);
      uint64_t avail = head - rtail_;
      if (avail == 0 || budget == 0) break;
      size_t n = std::min<uint64_t>({avail, rt_.bytes - rdone_, chunk_, budget});
      budget -= n;
      uint64_t pos = rtail_ % inSize_;
      size_t first = std::min<uint64_t>(n, inSize_ - pos);
      if (rt_.direct) {
        copyBytes(rt_.direct + rdone_, inRing_ + pos, first);
        copyBytes(rt_.direct + rdone_ + first, inRing_, n - first);
      } else {
        rt_.consume(rdone_, std::span<const std::byte>(inRing_ + pos, first));
        if (n > first) rt_.consume(rdone_ + first, std::span<const std::byte>(inRing_, n - first));
      }
      rtail_ += n;
      rdone_ += n;
      publishTail();
      moved = true;
      if (rdone_ == rt_.bytes) {
        rstate_ = RecvState::kDone;
        break;
      }
      continue;
    }
    if (rstate_ == RecvState::kCma) {
      moved = recvCma() || moved;
      if (rstate_ == RecvState::kHeader) continue;  // refused: the FIFO copy follows
    }
    break;
  }
  if (moved) stalls_ = 0;
  return moved;
}

// Reads up to kCmaPerCall bytes of the sender's buffer with process_vm_readv.
bool ShmConnection::recvCma() {
  size_t budget = kCmaPerCall;
  bool moved = false;
  while (rdone_ < rt_.bytes && budget > 0) {
    size_t n = std::min({rt_.bytes - rdone_, kCmaPiece, budget});
    std::byte* dst = rt_.direct ? rt_.direct + rdone_ : nullptr;
    if (!dst) {
      if (bounce_.empty()) bounce_.resize(kBounceBytes);
      n = std::min(n, bounce_.size());
      dst = bounce_.data();
    }
    struct iovec local {
      dst, n
    };
    struct iovec remote {
      reinterpret_cast<void*>(rhdr_.cmaAddr + rdone_), n
    };
    ssize_t r = ::process_vm_readv(rhdr_.cmaPid, &local, 1, &remote, 1, 0);
    if (r < 0) {
      int err = errno;
      if ((err == EPERM || err == EACCES) && rdone_ == 0) {
        if (!cmaRefusedLogged.exchange(true))
          TUTTI_INFO(kTransport, "shm: process_vm_readv from " << peerName() << " not permitted ("
                                                               << std::strerror(err)
                                                               << "): single-copy disabled, "
                                                                  "using the FIFO copy path");
        cmaOn_ = false;
        in_->cmaAck.store((uint64_t{rhdr_.seq} << 1) | 1, std::memory_order_release);
        wakePeer();
        rstate_ = RecvState::kHeader;
        return true;
      }
      if (err == ESRCH) throwPeerDied("a single-copy receive");
      throwSystemError("shm: rank " + std::to_string(p_.rank) + ": process_vm_readv of " +
                           std::to_string(n) + " bytes from " + peerName(),
                       err);
    }
    if (r == 0) break;
    if (!rt_.direct) rt_.consume(rdone_, std::span<const std::byte>(dst, static_cast<size_t>(r)));
    rdone_ += static_cast<size_t>(r);
    budget -= std::min(budget, static_cast<size_t>(r));
    moved = true;
  }
  if (rdone_ == rt_.bytes) {
    in_->cmaAck.store(uint64_t{rhdr_.seq} << 1, std::memory_order_release);
    wakePeer();
    rstate_ = RecvState::kDone;
    moved = true;
  }
  return moved;
}

// ---- sleeping ----

void ShmConnection::collectWaitFds(std::vector<int>& fds) {
  fds.push_back(p_.bell.waitFd());
  if (proc_.waitFd() >= 0 && !peerDead_) fds.push_back(proc_.waitFd());
}

bool ShmConnection::canProgress() const {
  bool sendActive = sstate_ != SendState::kIdle && sstate_ != SendState::kDone;
  bool recvActive = rstate_ != RecvState::kIdle && rstate_ != RecvState::kDone;
  if ((sendActive || recvActive) &&
      (peerDead_ || in_->senderClosed.load(std::memory_order_relaxed) != 0 ||
       out_->receiverClosed.load(std::memory_order_relaxed) != 0))
    return true;
  if (pendingZeroSends_ > 0 && roundUpRecord(shead_) + kRecord <= out_->tail.load() + outSize_)
    return true;
  if (pendingZeroRecvs_ > 0 && in_->head.load() >= roundUpRecord(rtail_) + kRecord) return true;
  switch (sstate_) {
    case SendState::kHeader:
      if (roundUpRecord(shead_) + kRecord <= out_->tail.load() + outSize_) return true;
      break;
    case SendState::kPayload:
      if (out_->tail.load() + outSize_ > shead_) return true;
      break;
    case SendState::kCmaWait:
      if ((out_->cmaAck.load() >> 1) == sseq_) return true;
      break;
    default:
      break;
  }
  switch (rstate_) {
    case RecvState::kHeader:
      return in_->head.load() >= roundUpRecord(rtail_) + kRecord;
    case RecvState::kPayload:
      return in_->head.load() > rtail_;
    case RecvState::kCma:
      return true;
    default:
      return false;
  }
}

bool ShmConnection::prepareToSleep() {
  out_->ownerSleeping.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (canProgress()) {
    out_->ownerSleeping.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void ShmConnection::afterSleep() {
  out_->ownerSleeping.store(0, std::memory_order_relaxed);
  p_.bell.drain();
  if (!peerDead_ && !peerClosedIt() && proc_.waitFd() >= 0) peerDead_ = proc_.exited();
}

}  // namespace tutti::transport::shm
