#include "tcp_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace tutti::transport::tcp {

namespace {
constexpr uint32_t kMagic = 0x54435032;  // "TCP2": headers carry a message tag
constexpr size_t kMinStage = 256 << 10;
}  // namespace

void Layout::first(int s, size_t& pos, size_t& end) const {
  if (!striped) {
    pos = s == 0 ? 0 : n;
    end = n;
    return;
  }
  pos = std::min(n, static_cast<size_t>(s) * chunk);
  end = std::min(n, pos + chunk);
}

void Layout::next(size_t& pos, size_t& end) const {
  if (!striped || end >= n) {
    pos = end = n;
    return;
  }
  pos = std::min(n, end + static_cast<size_t>(nsocks - 1) * chunk);
  end = std::min(n, pos + chunk);
}

TcpConnection::TcpConnection(int selfRank, int peer, std::string peerHost, std::vector<Fd> socks,
                             size_t chunkBytes)
    : self_(selfRank),
      peer_(peer),
      peerHost_(std::move(peerHost)),
      chunk_(chunkBytes),
      stageCap_(std::max(chunkBytes, kMinStage)) {
  TUTTI_ASSERT(!socks.empty());
  peerAddr_ = peerAddrOf(socks[0].get());
  socks_.resize(socks.size());
  for (size_t i = 0; i < socks.size(); ++i) socks_[i].fd = std::move(socks[i]);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throwSystemError("tcp: epoll_create1()");
  epfd_ = Fd(ep);
  for (size_t i = 0; i < socks_.size(); ++i) {
    epoll_event ev{};
    ev.events = 0;
    ev.data.u32 = static_cast<uint32_t>(i);
    TUTTI_SYSCHECK(epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, socks_[i].fd.get(), &ev),
                   "tcp: epoll_ctl(ADD)");
  }
}

TcpConnection::~TcpConnection() = default;

std::string TcpConnection::describePeer() const {
  return "rank " + std::to_string(peer_) + " (host " + peerHost_ + ", addr " + peerAddr_ + ")";
}

void TcpConnection::rethrowBroken() const {
  if (brokenCode_ != tuttiSuccess) throw Error(brokenCode_, broken_);
}

void TcpConnection::failRemote(int s, const char* what, const char* op) {
  std::string progress;
  if (std::strcmp(op, "recv") == 0 && recvActive_) {
    progress = ", " + std::to_string(recvCompleted()) + " of " + std::to_string(target_.bytes) +
               " bytes received";
  } else if (sendActive_) {
    progress = ", " + std::to_string(sendCompleted()) + " of " + std::to_string(sendData_.size()) +
               " bytes sent";
  }
  brokenCode_ = tuttiRemoteError;
  broken_ = "tcp: connection to " + describePeer() + " " + what + " (" + op + " on socket " +
            std::to_string(s) + progress + "; rank " + std::to_string(self_) + ")";
  throw Error(brokenCode_, broken_);
}

ssize_t TcpConnection::checkIo(ssize_t n, int s, const char* op) {
  if (n > 0) return n;
  if (n == 0) failRemote(s, "closed by the peer", op);
  int err = errno;
  if (err == EAGAIN || err == EWOULDBLOCK) return -1;
  if (err == ECONNRESET || err == EPIPE || err == ECONNABORTED || err == ETIMEDOUT ||
      err == EHOSTUNREACH || err == ENETUNREACH) {
    std::string what = std::string("reset: ") + std::strerror(err);
    failRemote(s, what.c_str(), op);
  }
  brokenCode_ = tuttiSystemError;
  broken_ = std::string("tcp: ") + op + " to " + describePeer() + " on socket " +
            std::to_string(s) + ": " + std::strerror(err);
  throw Error(brokenCode_, broken_);
}

// ---------------------------------------------------------------- send

void TcpConnection::startSend(std::span<const std::byte> data, const MsgTag& tag) {
  rethrowBroken();
  if (sendActive_)
    fail(tuttiInvalidUsage, "tcp: startSend to rank ", peer_, " while a send is active");
  Header h{kMagic, sendSeq_++, data.size(), tag};
  auto* hb = reinterpret_cast<const std::byte*>(&h);
  outbox_.insert(outbox_.end(), hb, hb + sizeof h);
  sendData_ = data;
  sendLayout_ = Layout(data.size(), chunk_, numSockets());
  for (int s = 0; s < numSockets(); ++s) {
    sendLayout_.first(s, socks_[s].sendPos, socks_[s].sendEnd);
  }
  sendActive_ = !data.empty();
  progressSend();
}

bool TcpConnection::pushSocket(int s) {
  Sock& k = socks_[s];
  for (;;) {
    bool haveOut = s == 0 && outboxSent_ < outbox_.size();
    if (sendActive_ && k.sendPos == k.sendEnd && k.sendPos < sendLayout_.n) {
      sendLayout_.next(k.sendPos, k.sendEnd);
      continue;
    }
    bool havePayload = sendActive_ && k.sendPos < k.sendEnd;
    if (!haveOut && !havePayload) return true;
    iovec iov[2];
    int cnt = 0;
    size_t outLeft = haveOut ? outbox_.size() - outboxSent_ : 0;
    if (haveOut) iov[cnt++] = {outbox_.data() + outboxSent_, outLeft};
    if (havePayload) {
      iov[cnt++] = {const_cast<std::byte*>(sendData_.data()) + k.sendPos, k.sendEnd - k.sendPos};
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = cnt;
    ssize_t r;
    do {
      r = ::sendmsg(k.fd.get(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    if (r == 0) continue;
    r = checkIo(r, s, "send");
    if (r < 0) return false;
    size_t n = static_cast<size_t>(r);
    if (haveOut) {
      size_t take = std::min(n, outLeft);
      outboxSent_ += take;
      n -= take;
      if (outboxSent_ == outbox_.size()) {
        outbox_.clear();
        outboxSent_ = 0;
      }
    }
    k.sendPos += n;
  }
}

void TcpConnection::flushOutbox() {
  if (outboxSent_ < outbox_.size()) pushSocket(0);
}

size_t TcpConnection::sendCompleted() const {
  if (!sendActive_) return sendData_.size();
  size_t done = sendLayout_.n;
  for (const Sock& k : socks_) done = std::min(done, k.sendPos);
  return done;
}

size_t TcpConnection::progressSend() {
  rethrowBroken();
  if (!sendActive_) {
    flushOutbox();
    return sendData_.size();
  }
  for (int s = 0; s < numSockets(); ++s) pushSocket(s);
  size_t done = sendCompleted();
  if (done == sendLayout_.n) sendActive_ = false;
  return done;
}

// ---------------------------------------------------------------- receive

void TcpConnection::startRecv(RecvTarget target) {
  rethrowBroken();
  if (recvActive_) {
    fail(tuttiInvalidUsage, "tcp: startRecv from rank ", peer_, " while a receive is active");
  }
  if (!target.direct && !target.consume && target.bytes > 0) {
    fail(tuttiInvalidArgument, "tcp: startRecv from rank ", peer_,
         " with neither a direct buffer nor a consume callback");
  }
  target_ = std::move(target);
  if (target_.bytes == 0) {
    ++owedZero_;
    readOwedHeaders();
    return;
  }
  recvLayout_ = Layout(target_.bytes, chunk_, numSockets());
  for (int s = 0; s < numSockets(); ++s) {
    Sock& k = socks_[s];
    recvLayout_.first(s, k.recvPos, k.recvEnd);
    k.stageBase = k.recvPos;
    k.stageLen = 0;
    if (!target_.direct && k.recvPos < recvLayout_.n && k.stage.empty()) {
      k.stage.resize(stageCap_);
    }
  }
  delivered_ = 0;
  headerDone_ = false;
  recvActive_ = true;
}

// Where socket s's next received payload bytes go (length 0: nowhere right now).
namespace {
iovec destination(std::byte* direct, std::vector<std::byte>& stage, size_t stageLen,
                  size_t stageCap, size_t pos, size_t end) {
  if (pos >= end) return {nullptr, 0};
  if (direct) return {direct + pos, end - pos};
  size_t room = stageCap - stageLen;
  return {stage.data() + stageLen, std::min(room, end - pos)};
}
}  // namespace

bool TcpConnection::readHeader(uint64_t expected, bool withPayload) {
  Sock& k = socks_[0];
  iovec iov[2];
  int cnt = 0;
  iov[cnt++] = {reinterpret_cast<std::byte*>(&hdr_) + hdrGot_, sizeof(Header) - hdrGot_};
  if (withPayload) {
    iovec d = destination(target_.direct, k.stage, k.stageLen, stageCap_, k.recvPos, k.recvEnd);
    if (d.iov_len > 0) iov[cnt++] = d;
  }
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = cnt;
  ssize_t r;
  do {
    r = ::recvmsg(k.fd.get(), &m, MSG_DONTWAIT);
  } while (r < 0 && errno == EINTR);
  r = checkIo(r, 0, "recv");
  if (r < 0) return false;
  size_t n = static_cast<size_t>(r);
  size_t take = std::min(n, sizeof(Header) - hdrGot_);
  hdrGot_ += take;
  n -= take;
  if (hdrGot_ < sizeof(Header)) return false;
  hdrGot_ = 0;
  checkInSync(hdr_);
  ++recvSeq_;
  // The tag first: a message of another call usually differs in size too, and the tag says
  // which call it came from.
  if (expected > 0) {
    try {
      checkTag(self_, peer_, "tcp", hdr_.tag, target_.tag);
    } catch (const TagMismatch& e) {
      brokenCode_ = tuttiInvalidUsage;
      broken_ = e.what();
      throw;
    }
  }
  if (hdr_.size != expected) {
    brokenCode_ = tuttiInvalidUsage;
    broken_ = "tcp: size mismatch: rank " + std::to_string(peer_) + " sent a message of " +
              std::to_string(hdr_.size) + " bytes but rank " + std::to_string(self_) +
              " expected " + std::to_string(expected) + " bytes (message #" +
              std::to_string(recvSeq_ - 1) + " from " + describePeer() + ")";
    throw Error(brokenCode_, broken_);
  }
  if (n > 0) {
    k.recvPos += n;
    if (!target_.direct) k.stageLen += n;
  }
  return true;
}

bool TcpConnection::readOwedHeaders() {
  while (owedZero_ > 0) {
    if (!readHeader(0, false)) return false;
    --owedZero_;
  }
  return true;
}

void TcpConnection::checkInSync(const Header& h) {
  if (h.magic == kMagic && h.seq == recvSeq_) return;
  brokenCode_ = tuttiInternalError;
  broken_ = "tcp: stream from " + describePeer() + " out of sync (message #" +
            std::to_string(recvSeq_) + ": magic " + std::to_string(h.magic) + ", seq " +
            std::to_string(h.seq) + ")";
  throw Error(brokenCode_, broken_);
}

bool TcpConnection::peekMessage(MsgTag& tag, size_t& bytes) {
  rethrowBroken();
  if (recvActive_)
    fail(tuttiInvalidUsage, "tcp: peekMessage from rank ", peer_, " while a receive is active");
  if (!readOwedHeaders() || hdrGot_ != 0) return false;
  Header h;
  ssize_t r;
  do {
    r = ::recv(socks_[0].fd.get(), &h, sizeof h, MSG_PEEK | MSG_DONTWAIT);
  } while (r < 0 && errno == EINTR);
  r = checkIo(r, 0, "recv");
  if (r < static_cast<ssize_t>(sizeof h)) return false;
  checkInSync(h);
  tag = h.tag;
  bytes = h.size;
  return true;
}

bool TcpConnection::pullSocket(int s) {
  Sock& k = socks_[s];
  bool progress = false;
  for (;;) {
    if (k.recvPos == k.recvEnd) {
      if (k.recvPos >= recvLayout_.n) break;
      if (!target_.direct && k.stageLen > 0) break;  // segment read, awaiting delivery
      recvLayout_.next(k.recvPos, k.recvEnd);
      k.stageBase = k.recvPos;
      continue;
    }
    iovec d = destination(target_.direct, k.stage, k.stageLen, stageCap_, k.recvPos, k.recvEnd);
    if (d.iov_len == 0) break;  // staging full
    ssize_t r;
    do {
      r = ::recv(k.fd.get(), d.iov_base, d.iov_len, MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    r = checkIo(r, s, "recv");
    if (r < 0) break;
    progress = true;
    k.recvPos += static_cast<size_t>(r);
    if (!target_.direct) {
      k.stageLen += static_cast<size_t>(r);
      if (k.stageBase == delivered_) deliverStaged();
    }
  }
  return progress;
}

bool TcpConnection::deliverStaged() {
  bool any = false;
  bool progress = true;
  while (progress) {
    progress = false;
    for (Sock& k : socks_) {
      if (k.stageLen > 0 && k.stageBase == delivered_) {
        size_t len = k.stageLen;
        k.stageLen = 0;  // before the callback, in case it throws
        target_.consume(k.stageBase, std::span<const std::byte>(k.stage.data(), len));
        delivered_ += len;
        k.stageBase += len;
        progress = any = true;
      }
    }
  }
  return any;
}

size_t TcpConnection::recvCompleted() const {
  if (!recvActive_) return target_.bytes;
  if (!headerDone_) return 0;
  if (!target_.direct) return delivered_;
  size_t done = recvLayout_.n;
  for (const Sock& k : socks_) done = std::min(done, k.recvPos);
  return done;
}

size_t TcpConnection::progressRecv() {
  rethrowBroken();
  flushOutbox();
  if (!readOwedHeaders()) return recvActive_ ? 0 : target_.bytes;
  if (!recvActive_) return target_.bytes;
  if (!headerDone_) {
    if (!readHeader(target_.bytes, true)) return 0;
    headerDone_ = true;
    if (!target_.direct) deliverStaged();
  }
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < numSockets(); ++s) progress |= pullSocket(s);
    if (!target_.direct) progress |= deliverStaged();
  }
  size_t done = recvCompleted();
  if (done == recvLayout_.n) recvActive_ = false;
  return done;
}

// ---------------------------------------------------------------- sleeping

bool TcpConnection::wantsRead(int s) const {
  if (s == 0 && (owedZero_ > 0 || (recvActive_ && !headerDone_))) return true;
  if (!recvActive_ || !headerDone_) return false;
  const Sock& k = socks_[s];
  if (k.recvPos >= recvLayout_.n) return false;
  if (target_.direct) return true;
  return k.stageLen < stageCap_ && !(k.recvPos == k.recvEnd && k.stageLen > 0);
}

bool TcpConnection::wantsWrite(int s) const {
  if (s == 0 && outboxSent_ < outbox_.size()) return true;
  return sendActive_ && socks_[s].sendPos < sendLayout_.n;
}

void TcpConnection::collectWaitFds(std::vector<int>& fds) { fds.push_back(epfd_.get()); }

bool TcpConnection::prepareToSleep() {
  if (brokenCode_ != tuttiSuccess) return false;
  bool canSleep = true;
  for (int s = 0; s < numSockets(); ++s) {
    Sock& k = socks_[s];
    uint32_t want = (wantsRead(s) ? EPOLLIN : 0u) | (wantsWrite(s) ? EPOLLOUT : 0u);
    if (!k.inEpoll) {
      if (want) canSleep = false;  // progress will surface the hang-up at once
      continue;
    }
    if (want != k.armed) {
      epoll_event ev{};
      ev.events = want;
      ev.data.u32 = static_cast<uint32_t>(s);
      TUTTI_SYSCHECK(epoll_ctl(epfd_.get(), EPOLL_CTL_MOD, k.fd.get(), &ev), "tcp: epoll_ctl(MOD)");
      k.armed = want;
    }
  }
  return canSleep;
}

void TcpConnection::afterSleep() {
  epoll_event ev[16];
  int n;
  do {
    n = epoll_wait(epfd_.get(), ev, 16, 0);
  } while (n < 0 && errno == EINTR);
  for (int i = 0; i < n; ++i) {
    Sock& k = socks_[ev[i].data.u32];
    // A hang-up on a socket nobody waits on would keep the epoll fd readable: stop watching
    // it; the next operation that needs the socket reports the error.
    if ((ev[i].events & (EPOLLERR | EPOLLHUP)) && k.armed == 0 && k.inEpoll) {
      epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, k.fd.get(), nullptr);
      k.inEpoll = false;
    }
  }
  if (brokenCode_ == tuttiSuccess) flushOutbox();
}

}  // namespace tutti::transport::tcp
