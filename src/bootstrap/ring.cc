#include "bootstrap/ring.h"

#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::bootstrap {

namespace {

constexpr char kMagic[8] = {'T', 'U', 'T', 'T', 'I', 'R', 'N', 'G'};
constexpr size_t kTokenBytes = 32;  // hex of a 16-byte secret
constexpr size_t kHelloBytes = sizeof(kMagic) + 4 + kTokenBytes;
constexpr uint64_t kMaxFrameBytes = 1ull << 30;
constexpr double kHelloSeconds = 10.0;
constexpr int kWatchMs = 100;
constexpr auto kWatchInterval = std::chrono::milliseconds(kWatchMs);

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

BootstrapRing::BootstrapRing(std::string name, int rank, int nranks)
    : name_(std::move(name)), rank_(rank), nranks_(nranks) {
  abortFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (abortFd_ < 0) throwSystemError(name_ + ": eventfd for the bootstrap ring");
}

BootstrapRing::~BootstrapRing() {
  closeFd(next_);
  closeFd(prev_);
  closeFd(abortFd_);
}

void BootstrapRing::abort() {
  aborted_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(abortFd_, &one, sizeof(one));
}

void BootstrapRing::sleepUntil(const Deadline& deadline) {
  for (;;) {
    if (aborted_.load()) fail(tuttiRemoteError, name_, ": aborted");
    watch();
    if (deadline.msLeft() == 0) return;
    pollfd pfd{abortFd_, POLLIN, 0};
    ::poll(&pfd, 1, pollMs(deadline));
  }
}

void BootstrapRing::watch() {
  if (!watch_) return;
  auto now = Clock::now();
  if (now - lastWatch_ < kWatchInterval) return;
  lastWatch_ = now;
  watch_();
}

int BootstrapRing::pollMs(const Deadline& d) const {
  int left = d.msLeft();
  return watch_ ? std::min(left, kWatchMs) : left;
}

void BootstrapRing::waitFd(int fd, short events, const Deadline& d, const std::string& what) {
  for (;;) {
    if (aborted_.load()) fail(tuttiRemoteError, name_, ": ", what, ": aborted");
    watch();
    pollfd fds[2] = {{fd, events, 0}, {abortFd_, POLLIN, 0}};
    if (d.msLeft() == 0)
      fail(tuttiTimeout, name_, ": ", what, ": no progress within ", secondsText(d.totalSeconds()),
           " s");
    int n = ::poll(fds, 2, pollMs(d));
    if (n < 0 && errno != EINTR) throwSystemError(name_ + ": poll (" + what + ")");
    if (n > 0 && fds[1].revents) continue;  // aborted: reported at the loop's top
    if (n > 0 && fds[0].revents) return;
  }
}

void BootstrapRing::sendAll(int fd, const void* p, size_t n, const Deadline& d,
                            const std::string& what, int neighbour) {
  auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t w = ::send(fd, b, n, MSG_NOSIGNAL);
    if (w > 0) {
      b += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitFd(fd, POLLOUT, d, what);
    } else if (w < 0 && errno != EINTR) {
      if (neighbour < 0) throwSystemError(name_ + ": " + what);
      if (errno == EPIPE || errno == ECONNRESET) neighbourGone(neighbour, "next", what);
      throwSystemError(name_ + ": send to rank " + std::to_string(neighbour) + " (" + what + ")");
    }
  }
}

void BootstrapRing::recvAll(int fd, void* p, size_t n, const Deadline& d, const std::string& what,
                            int neighbour) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    ssize_t r = ::recv(fd, b, n, 0);
    if (r > 0) {
      b += r;
      n -= static_cast<size_t>(r);
    } else if (r == 0) {
      if (neighbour >= 0) neighbourGone(neighbour, "previous", what);
      fail(tuttiRemoteError, name_, ": ", what, ": connection closed");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      waitFd(fd, POLLIN, d, what);
    } else if (errno != EINTR) {
      if (neighbour < 0) throwSystemError(name_ + ": " + what);
      if (errno == ECONNRESET) neighbourGone(neighbour, "previous", what);
      throwSystemError(name_ + ": receive from rank " + std::to_string(neighbour) + " (" + what +
                       ")");
    }
  }
}

RingListener::RingListener(const std::string& bindHost) {
  SockAddr bind =
      SockAddr::resolve(bindHost.empty() ? "127.0.0.1" : bindHost, 0, "bootstrap ring address");
  fd_.reset(::socket(bind.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_.valid()) throwSystemError("socket for the bootstrap ring");
  if (::bind(fd_.get(), bind.sa(), bind.len) != 0 || ::listen(fd_.get(), 16) != 0)
    throwSystemError("cannot listen for the bootstrap ring on " + bind.toString());
  token_ = secretToHex(randomSecret());
  address_ = SockAddr::local(fd_.get()).toString() + "|" + token_;
}

void BootstrapRing::connect(Store& store, const std::string& myKey, const std::string& nextKey,
                            const std::string& bindHost, const Deadline& deadline) {
  broken_ = true;  // until it succeeds
  RingListener listener(bindHost);
  store.setString(myKey, listener.address());
  std::string next = store.getString(nextKey, deadline);
  connect(std::move(listener), next, deadline);
}

void BootstrapRing::connect(RingListener listener, const std::string& theirs,
                            const Deadline& deadline) {
  broken_ = true;  // until it succeeds
  int next = (rank_ + 1) % nranks_;
  size_t bar = theirs.find('|');
  if (bar == std::string::npos || theirs.size() - bar - 1 != kTokenBytes)
    fail(tuttiInternalError, name_, ": rank ", next, "'s ring address '", theirs, "' is malformed");
  SockAddr nextAddr = SockAddr::parse(theirs.substr(0, bar), "bootstrap ring address");

  // Connect to the next rank (it listens before it publishes, so no retry is needed).
  next_ = ::socket(nextAddr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (next_ < 0) throwSystemError(name_ + ": socket for the bootstrap ring");
  std::string what = "connect to rank " + std::to_string(next) + " at " + nextAddr.toString();
  int err = ::connect(next_, nextAddr.sa(), nextAddr.len) == 0 ? 0 : errno;
  if (err == EINPROGRESS || err == EINTR) {
    waitFd(next_, POLLOUT, deadline, what);
    socklen_t len = sizeof(err);
    ::getsockopt(next_, SOL_SOCKET, SO_ERROR, &err, &len);
  }
  // It listened before its address was published: a refusal means it is gone.
  if (err == ECONNREFUSED)
    fail(tuttiRemoteError, name_, ": rank ", rank_, ": ", what, ": refused (rank ", next,
         ", next on the bootstrap ring, exited or failed)");
  if (err != 0) throwSystemError(name_ + ": " + what, err);
  int one = 1;
  ::setsockopt(next_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint8_t hello[kHelloBytes];
  std::memcpy(hello, kMagic, sizeof(kMagic));
  putU32(hello + sizeof(kMagic), static_cast<uint32_t>(rank_));
  std::memcpy(hello + sizeof(kMagic) + 4, theirs.data() + bar + 1, kTokenBytes);
  sendAll(next_, hello, sizeof(hello), deadline, what, next);  // a reset: it died since

  prev_ = acceptPrev(listener.fd_.get(), listener.token_, deadline);
  ::setsockopt(prev_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  broken_ = false;
}

int BootstrapRing::acceptPrev(int listenFd, const std::string& token, const Deadline& d) {
  int prev = (rank_ + nranks_ - 1) % nranks_;
  std::string what = "accept the connection of rank " + std::to_string(prev);
  for (;;) {
    int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
        waitFd(listenFd, POLLIN, d, what);
        continue;
      }
      throwSystemError(name_ + ": " + what);
    }
    uint8_t hello[kHelloBytes] = {};
    try {
      // The previous rank sends its hello as soon as it connects: a connection silent for
      // kHelloSeconds is not it (and must not hold up the real one until the deadline).
      Deadline helloDeadline(std::min(d.secondsLeft(), kHelloSeconds));
      recvAll(fd, hello, sizeof(hello), helloDeadline, what);
    } catch (const Error& e) {
      bool notOurs = e.code() == tuttiRemoteError || (e.code() == tuttiTimeout && !d.expired());
      if (!notOurs || aborted_.load()) {
        ::close(fd);
        throw;
      }
      // Closed or silent before its hello: not our neighbour (refused below).
    }
    bool ok = std::memcmp(hello, kMagic, sizeof(kMagic)) == 0 &&
              getU32(hello + sizeof(kMagic)) == static_cast<uint32_t>(prev) &&
              std::memcmp(hello + sizeof(kMagic) + 4, token.data(), kTokenBytes) == 0;
    if (ok) return fd;
    TUTTI_WARN(kBootstrap, name_ << ": refused a bootstrap ring connection from "
                                 << SockAddr::peer(fd).toString() << " (not rank " << prev
                                 << " with this ring's token)");
    ::close(fd);
  }
}

void BootstrapRing::neighbourGone(int peer, const char* side, const std::string& what) {
  fail(tuttiRemoteError, name_, ": rank ", rank_, ": ", what, ": rank ", peer, " (", side,
       " on the bootstrap ring) closed its connection: it exited or failed");
}

void BootstrapRing::sendToken(const Deadline& d, const std::string& what) {
  const uint8_t frame[8] = {};  // len 0
  sendAll(next_, frame, sizeof(frame), d, what, (rank_ + 1) % nranks_);
}

void BootstrapRing::recvToken(const Deadline& d, const std::string& what) {
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  uint8_t frame[8];
  recvAll(prev_, frame, sizeof(frame), d, what, prev);
  for (uint8_t b : frame)
    if (b != 0)
      fail(tuttiInternalError, name_, ": rank ", rank_, ": ", what, ": rank ", prev,
           " sent an all-gather's frame where this rank expected the barrier's token (the "
           "ranks made different bootstrap calls)");
}

void BootstrapRing::barrier(const Deadline& deadline, const std::string& what) {
  if (broken_)
    fail(tuttiRemoteError, name_, ": rank ", rank_, ": ", what,
         ": the bootstrap ring is broken by an earlier failure");
  broken_ = true;  // until this barrier completes
  if (rank_ == 0) {
    sendToken(deadline, what);  // arrival: around the ring and back
    recvToken(deadline, what);
    sendToken(deadline, what);  // release: rank n-1 keeps it
  } else {
    recvToken(deadline, what);
    sendToken(deadline, what);
    recvToken(deadline, what);
    if (rank_ != nranks_ - 1) sendToken(deadline, what);
  }
  broken_ = false;
}

std::vector<std::vector<std::byte>> BootstrapRing::allGather(std::span<const std::byte> mine,
                                                             const Deadline& deadline,
                                                             const std::string& what) {
  if (broken_)
    fail(tuttiRemoteError, name_, ": rank ", rank_, ": ", what,
         ": the bootstrap ring is broken by an earlier failure");
  broken_ = true;  // until this all-gather completes
  std::vector<std::vector<std::byte>> all(nranks_);
  all[rank_].assign(mine.begin(), mine.end());
  const int steps = nranks_ - 1;
  const int next = (rank_ + 1) % nranks_;
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  // Step s sends the entry of rank (rank - s) and receives that of rank (rank - s - 1).
  auto entryOf = [&](int s) { return ((rank_ - s) % nranks_ + nranks_) % nranks_; };
  int sent = 0, received = 0;
  std::vector<uint8_t> out;  // the frame being sent
  size_t outPos = 0;
  uint8_t header[8];
  size_t headerGot = 0;
  std::vector<std::byte> in;
  size_t inGot = 0;
  bool haveHeader = false;
  while (sent < steps || received < steps) {
    if (aborted_.load()) fail(tuttiRemoteError, name_, ": ", what, ": aborted");
    // Start the next frame once its entry is here (step s needs s receives).
    if (out.empty() && sent < steps && received >= sent) {
      const auto& e = all[entryOf(sent)];
      out.resize(8 + e.size());
      uint64_t len = e.size();
      for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(len >> (8 * i));
      if (!e.empty()) std::memcpy(out.data() + 8, e.data(), e.size());
      outPos = 0;
    }
    watch();
    pollfd fds[3] = {{abortFd_, POLLIN, 0},
                     {out.empty() ? -1 : next_, POLLOUT, 0},
                     {received < steps ? prev_ : -1, POLLIN, 0}};
    if (deadline.msLeft() == 0)
      fail(tuttiTimeout, name_, ": rank ", rank_, ": ", what,
           ": the bootstrap ring stalled at step ", std::min(sent, received) + 1, " of ", steps,
           " (", secondsText(deadline.totalSeconds()), " s)");
    int n = ::poll(fds, 3, pollMs(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSystemError(name_ + ": poll (" + what + ")");
    }
    if (n == 0 || fds[0].revents) continue;
    if (fds[1].revents) {
      ssize_t w = ::send(next_, out.data() + outPos, out.size() - outPos, MSG_NOSIGNAL);
      if (w > 0) {
        outPos += static_cast<size_t>(w);
        if (outPos == out.size()) {
          out.clear();
          ++sent;
        }
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        if (errno == EPIPE || errno == ECONNRESET) neighbourGone(next, "next", what);
        throwSystemError(name_ + ": send to rank " + std::to_string(next) + " (" + what + ")");
      }
    }
    if (fds[2].revents) {
      ssize_t r;
      if (!haveHeader) {
        r = ::recv(prev_, header + headerGot, 8 - headerGot, 0);
      } else {
        r = ::recv(prev_, in.data() + inGot, in.size() - inGot, 0);
      }
      if (r == 0) neighbourGone(prev, "previous", what);
      if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        if (errno == ECONNRESET) neighbourGone(prev, "previous", what);
        throwSystemError(name_ + ": receive from rank " + std::to_string(prev) + " (" + what + ")");
      }
      if (!haveHeader) {
        headerGot += static_cast<size_t>(r);
        if (headerGot == 8) {
          uint64_t len = 0;
          for (int i = 0; i < 8; ++i) len |= static_cast<uint64_t>(header[i]) << (8 * i);
          if (len > kMaxFrameBytes)
            fail(tuttiInternalError, name_, ": ", what, ": a frame of ", len, " bytes from rank ",
                 prev, " (more than 1 GiB)");
          in.assign(len, std::byte{0});
          inGot = 0;
          haveHeader = true;
        }
      } else {
        inGot += static_cast<size_t>(r);
      }
      if (haveHeader && inGot == in.size()) {
        all[entryOf(received + 1)] = std::move(in);
        in.clear();
        haveHeader = false;
        headerGot = 0;
        ++received;
      }
    }
  }
  broken_ = false;
  return all;
}

}  // namespace tutti::bootstrap
