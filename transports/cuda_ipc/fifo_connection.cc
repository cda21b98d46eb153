#include "transports/cuda_ipc/fifo_connection.h"

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "common/error.h"

namespace tutti::transport::cudaipc {

void HostCopyEngine::start(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

FifoConnection::FifoConnection(FifoConnectionParts parts)
    : p_(std::move(parts)), watch_(p_.peerPid) {
  TUTTI_ASSERT(p_.send.ctl && p_.recv.ctl && p_.sendCopy && p_.recvCopy);
  TUTTI_ASSERT(p_.recv.slotsHostVisible || p_.bounce);
  sendSeq_ = p_.send.ctl->tail.load(std::memory_order_relaxed);
  recvSeq_ = p_.recv.ctl->head.load(std::memory_order_relaxed);
}

FifoConnection::~FifoConnection() = default;

void FifoConnection::checkPeer(const char* during) {
  double now = nowSeconds();
  if (now - lastPeerCheck_ < 0.005) return;
  lastPeerCheck_ = now;
  if (!watch_.alive()) fail(tuttiRemoteError, "cuda_ipc: ", p_.peerName, " exited during ", during);
}

void FifoConnection::startSend(std::span<const std::byte> data, const MsgTag& /*tag*/) {
  TUTTI_ASSERT(!sendActive_);
  sendActive_ = true;
  sdata_ = data;
  schunk_ = 0;
  schunks_ = p_.send.geometry.chunksFor(data.size());
  sdone_ = 0;
  scopying_ = false;
}

size_t FifoConnection::progressSend() {
  if (!sendActive_) return sdone_;
  const FifoGeometry& g = p_.send.geometry;
  FifoControl& ctl = *p_.send.ctl;
  for (;;) {
    if (scopying_) {
      if (!p_.sendCopy->idle()) return sdone_;
      const bool last = schunk_ + 1 == schunks_;
      ctl.sizes[sendSeq_ % g.slots].store(encodeSize(scopyBytes_, last), std::memory_order_relaxed);
      ctl.tail.store(sendSeq_ + 1, std::memory_order_release);
      ++sendSeq_;
      ++schunk_;
      sdone_ += scopyBytes_;
      scopying_ = false;
    }
    if (schunk_ == schunks_) {
      sendActive_ = false;
      return sdone_;
    }
    if (!hasCredit(sendSeq_, ctl.head.load(std::memory_order_acquire), g.slots)) {
      checkPeer("a send (waiting for a free slot)");
      return sdone_;
    }
    scopyBytes_ = g.chunkBytes(sdata_.size(), schunk_);
    p_.sendCopy->start(p_.send.slots + g.slotOffset(sendSeq_), sdata_.data() + sdone_, scopyBytes_);
    scopying_ = true;
  }
}

void FifoConnection::startRecv(RecvTarget target) {
  TUTTI_ASSERT(!recvActive_);
  TUTTI_ASSERT(target.direct || target.consume || target.bytes == 0);
  recvActive_ = true;
  rtarget_ = std::move(target);
  rdone_ = 0;
  rfinished_ = false;
  rcopying_ = false;
}

size_t FifoConnection::progressRecv() {
  if (!recvActive_) return rdone_;
  const FifoGeometry& g = p_.recv.geometry;
  FifoControl& ctl = *p_.recv.ctl;
  for (;;) {
    if (rcopying_) {
      if (!p_.recvCopy->idle()) return rdone_;
      if (!rtarget_.direct && rcopyBytes_ > 0)
        rtarget_.consume(rdone_, std::span<const std::byte>(p_.bounce, rcopyBytes_));
      rdone_ += rcopyBytes_;
      ctl.head.store(recvSeq_ + 1, std::memory_order_release);
      ++recvSeq_;
      rcopying_ = false;
      rfinished_ = rcopyLast_;
    }
    if (rfinished_) {
      recvActive_ = false;
      rtarget_.consume = nullptr;
      return rdone_;
    }
    if (!hasData(ctl.tail.load(std::memory_order_acquire), recvSeq_)) {
      checkPeer("a receive (waiting for data)");
      return rdone_;
    }
    const uint64_t word = ctl.sizes[recvSeq_ % g.slots].load(std::memory_order_relaxed);
    const uint64_t n = decodeBytes(word);
    const bool last = decodeLast(word);
    const size_t left = rtarget_.bytes - rdone_;
    if (n > left || n > g.slotBytes || (last && n != left) || (!last && n == left))
      fail(tuttiInvalidUsage, "cuda_ipc: message size mismatch with ", p_.peerName, ": expected ",
           rtarget_.bytes, " bytes, the peer's message ", last ? "ends after " : "continues past ",
           rdone_ + n, " bytes");
    const std::byte* src = p_.recv.slots + g.slotOffset(recvSeq_);
    rcopyBytes_ = n;
    rcopyLast_ = last;
    if (rtarget_.direct) {
      p_.recvCopy->start(rtarget_.direct + rdone_, src, n);
    } else if (p_.recv.slotsHostVisible) {
      if (n > 0) rtarget_.consume(rdone_, std::span<const std::byte>(src, n));
      rdone_ += n;
      ctl.head.store(recvSeq_ + 1, std::memory_order_release);
      ++recvSeq_;
      rfinished_ = last;
      continue;
    } else {
      p_.recvCopy->start(p_.bounce, src, n);
    }
    rcopying_ = true;
  }
}

void FifoConnection::collectWaitFds(std::vector<int>& fds) {
  if (watch_.fd() >= 0) fds.push_back(watch_.fd());
}

}  // namespace tutti::transport::cudaipc
