// BootstrapRing's waits and its two calls, all-gather and barrier (ring.h); setup is in
// ring_connect.cc.
#include "bootstrap/ring.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace tutti::bootstrap {

namespace {

constexpr uint64_t kMaxFrameBytes = 1ull << 30;
constexpr int kMaxRanks = 1 << 24;  // the hello's rank field
constexpr int kWatchMs = 100;
constexpr auto kWatchInterval = std::chrono::milliseconds(kWatchMs);

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

void putU64(std::vector<std::byte>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}
uint64_t getU64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

BootstrapRing::BootstrapRing(std::string name, int rank, int nranks)
    : name_(std::move(name)), rank_(rank), nranks_(nranks) {
  TUTTI_CHECK_ARG(nranks > 0 && nranks < kMaxRanks && rank >= 0 && rank < nranks,
                  "BootstrapRing: rank ", rank, " of ", nranks, " (at most ", kMaxRanks - 1,
                  " ranks)");
  abortFd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!abortFd_.valid()) throwSystemError(name_ + ": eventfd for the bootstrap ring");
}

void BootstrapRing::abort() {
  aborted_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(abortFd_.get(), &one, sizeof(one));
}

void BootstrapRing::sleepUntil(const Deadline& deadline) {
  for (;;) {
    if (aborted_.load()) fail(tuttiRemoteError, name_, ": aborted");
    watch();
    if (deadline.msLeft() == 0) return;
    pollfd pfd{abortFd_.get(), POLLIN, 0};
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
    pollfd fds[2] = {{fd, events, 0}, {abortFd_.get(), POLLIN, 0}};
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
                            const std::string& what, int peer) {
  auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t w = ::send(fd, b, n, MSG_NOSIGNAL);
    if (w > 0) {
      b += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitFd(fd, POLLOUT, d, what);
    } else if (w < 0 && errno != EINTR) {
      if (peer < 0) throwSystemError(name_ + ": " + what);
      if (errno == EPIPE || errno == ECONNRESET) peerGone(peer, what);
      throwSystemError(name_ + ": send to rank " + std::to_string(peer) + " (" + what + ")");
    }
  }
}

void BootstrapRing::recvAll(int fd, void* p, size_t n, const Deadline& d, const std::string& what,
                            int peer) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    ssize_t r = ::recv(fd, b, n, 0);
    if (r > 0) {
      b += r;
      n -= static_cast<size_t>(r);
    } else if (r == 0) {
      if (peer >= 0) peerGone(peer, what);
      fail(tuttiRemoteError, name_, ": ", what, ": connection closed");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      waitFd(fd, POLLIN, d, what);
    } else if (errno != EINTR) {
      if (peer < 0) throwSystemError(name_ + ": " + what);
      if (errno == ECONNRESET) peerGone(peer, what);
      throwSystemError(name_ + ": receive from rank " + std::to_string(peer) + " (" + what + ")");
    }
  }
}

void BootstrapRing::peerGone(int peer, const std::string& what) {
  // How far behind this rank the peer is, around the ring: 1 is the previous rank.
  int behind = ((rank_ - peer) % nranks_ + nranks_) % nranks_;
  std::string where = behind == 1             ? "previous"
                      : behind == nranks_ - 1 ? "next"
                      : behind <= nranks_ / 2 ? std::to_string(behind) + " behind"
                                              : std::to_string(nranks_ - behind) + " ahead";
  fail(tuttiRemoteError, name_, ": rank ", rank_, ": ", what, ": rank ", peer, " (", where,
       " on the bootstrap ring) closed its connection: it exited or failed");
}

std::vector<std::byte> BootstrapRing::exchange(const Link& link, std::span<const std::byte> payload,
                                               const Deadline& deadline, const std::string& what,
                                               int round, int rounds) {
  return transfer({link.in.get(), link.inPeer}, payload, {link.out.get(), link.outPeer}, deadline,
                  what, round, rounds);
}

std::vector<std::byte> BootstrapRing::transfer(Half to, std::span<const std::byte> payload,
                                               Half from, const Deadline& deadline,
                                               const std::string& what, int round, int rounds) {
  std::vector<std::byte> out;
  if (to.fd >= 0) {
    out.reserve(8 + payload.size());
    putU64(out, payload.size());
    out.insert(out.end(), payload.begin(), payload.end());
  }
  size_t outPos = 0;
  std::byte header[8];
  size_t headerGot = 0;
  std::vector<std::byte> in;
  size_t inGot = 0;
  bool haveHeader = false;
  auto received = [&] { return from.fd < 0 || (haveHeader && inGot == in.size()); };
  while (outPos < out.size() || !received()) {
    if (aborted_.load()) fail(tuttiRemoteError, name_, ": ", what, ": aborted");
    watch();
    pollfd fds[3] = {{abortFd_.get(), POLLIN, 0},
                     {outPos < out.size() ? to.fd : -1, POLLOUT, 0},
                     {received() ? -1 : from.fd, POLLIN, 0}};
    if (deadline.msLeft() == 0)
      fail(tuttiTimeout, name_, ": rank ", rank_, ": ", what,
           ": the bootstrap ring stalled at round ", round, " of ", rounds, " (",
           secondsText(deadline.totalSeconds()), " s)");
    int n = ::poll(fds, 3, pollMs(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSystemError(name_ + ": poll (" + what + ")");
    }
    if (n == 0 || fds[0].revents) continue;
    if (fds[1].revents) {
      ssize_t w = ::send(to.fd, out.data() + outPos, out.size() - outPos, MSG_NOSIGNAL);
      if (w > 0) {
        outPos += static_cast<size_t>(w);
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        if (errno == EPIPE || errno == ECONNRESET) peerGone(to.peer, what);
        throwSystemError(name_ + ": send to rank " + std::to_string(to.peer) + " (" + what + ")");
      }
    }
    if (!fds[2].revents) continue;
    // Exactly one frame: what follows it belongs to the next call.
    ssize_t r = haveHeader ? ::recv(from.fd, in.data() + inGot, in.size() - inGot, 0)
                           : ::recv(from.fd, header + headerGot, 8 - headerGot, 0);
    if (r == 0) peerGone(from.peer, what);
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      if (errno == ECONNRESET) peerGone(from.peer, what);
      throwSystemError(name_ + ": receive from rank " + std::to_string(from.peer) + " (" + what +
                       ")");
    }
    if (haveHeader) {
      inGot += static_cast<size_t>(r);
      continue;
    }
    headerGot += static_cast<size_t>(r);
    if (headerGot < 8) continue;
    uint64_t len = getU64(header);
    if (len > kMaxFrameBytes)
      fail(tuttiInternalError, name_, ": ", what, ": a frame of ", len, " bytes from rank ",
           from.peer, " (more than 1 GiB)");
    in.assign(len, std::byte{0});
    inGot = 0;
    haveHeader = true;
  }
  return in;
}

void BootstrapRing::checkUsable(const std::string& what) const {
  if (broken_)
    fail(tuttiRemoteError, name_, ": rank ", rank_, ": ", what,
         ": the bootstrap ring is broken by an earlier failure");
}

void BootstrapRing::barrier(const Deadline& deadline, const std::string& what) {
  checkUsable(what);
  broken_ = true;  // until this barrier completes
  // A binomial tree over the chords: rank r (lowest set bit b; rank 0: all levels) hears the
  // arrival of ranks r + 2^k (k < b) over its level-k connections, reports its subtree's to
  // r - 2^b, hears the release back and passes it on up the same levels, highest first.
  const int top = levels();
  const int low = rank_ == 0 ? top : std::countr_zero(static_cast<unsigned>(rank_));
  int round = 0;
  const int rounds = 2 * top;
  auto expectToken = [&](const std::vector<std::byte>& got, int from) {
    if (!got.empty())
      fail(tuttiInternalError, name_, ": rank ", rank_, ": ", what, ": rank ", from,
           " sent an all-gather's frame where this rank expected the barrier's (the ranks made "
           "different bootstrap calls)");
  };
  for (int k = 0; k < low; ++k, ++round) {
    const Link& l = links_[k];
    if (rank_ + (1 << k) < nranks_)
      expectToken(
          transfer({-1, -1}, {}, {l.out.get(), l.outPeer}, deadline, what, round + 1, rounds),
          l.outPeer);
  }
  if (rank_ != 0) {
    const Link& l = links_[low];
    transfer({l.in.get(), l.inPeer}, {}, {-1, -1}, deadline, what, low + 1, rounds);
    expectToken(
        transfer({-1, -1}, {}, {l.in.get(), l.inPeer}, deadline, what, rounds - low, rounds),
        l.inPeer);
  }
  for (int k = low - 1; k >= 0; --k) {
    const Link& l = links_[k];
    if (rank_ + (1 << k) < nranks_)
      transfer({l.out.get(), l.outPeer}, {}, {-1, -1}, deadline, what, rounds - k, rounds);
  }
  broken_ = false;
}

std::vector<std::vector<std::byte>> BootstrapRing::allGather(std::span<const std::byte> mine,
                                                             const Deadline& deadline,
                                                             const std::string& what) {
  checkUsable(what);
  broken_ = true;  // until this all-gather completes
  std::vector<std::vector<std::byte>> all(nranks_);
  all[rank_].assign(mine.begin(), mine.end());
  for (int level = 0; level < levels(); ++level) {
    // This rank holds the entries of ranks rank .. rank + d - 1; it passes the first `count`
    // of them back to rank - d and gets rank + d's (those of rank + d .. rank + d + count - 1).
    const int d = 1 << level;
    const int count = std::min(d, nranks_ - d);
    std::vector<std::byte> frame;
    for (int i = 0; i < count; ++i) {
      const auto& e = all[(rank_ + i) % nranks_];
      putU64(frame, e.size());
      frame.insert(frame.end(), e.begin(), e.end());
    }
    auto got = exchange(links_[level], frame, deadline, what, level + 1, levels());
    const int from = links_[level].outPeer;
    if (got.empty())
      fail(tuttiInternalError, name_, ": rank ", rank_, ": ", what, ": rank ", from,
           " sent the barrier's frame where this rank expected an all-gather's (the ranks made "
           "different bootstrap calls)");
    size_t pos = 0;
    for (int i = 0; i < count; ++i) {
      uint64_t len = pos + 8 <= got.size() ? getU64(got.data() + pos) : ~0ull;
      if (len > got.size() - std::min(got.size(), pos + 8))
        fail(tuttiInternalError, name_, ": ", what, ": rank ", from, "'s frame of ", got.size(),
             " bytes does not hold ", count, " entries");
      auto first = got.begin() + static_cast<std::ptrdiff_t>(pos + 8);
      all[(from + i) % nranks_].assign(first, first + static_cast<std::ptrdiff_t>(len));
      pos += 8 + len;
    }
    if (pos != got.size())
      fail(tuttiInternalError, name_, ": ", what, ": rank ", from, "'s frame of ", got.size(),
           " bytes holds more than ", count, " entries");
  }
  broken_ = false;
  return all;
}

}  // namespace tutti::bootstrap
