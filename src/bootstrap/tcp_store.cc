// TcpStore client: one blocking request at a time over a non-blocking socket; every wait
// is a poll(2) on the socket and an abort eventfd, bounded by the deadline.
#include "bootstrap/tcp_store.h"

#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "bootstrap/abort_signal.h"
#include "bootstrap/store_util.h"
#include "bootstrap/tcp_store_protocol.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::bootstrap {

namespace {

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

bool retryableConnectError(int err) {
  switch (err) {
    case ECONNREFUSED:
    case ETIMEDOUT:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ECONNRESET:
    case ECONNABORTED:
    case EAGAIN:
    case EADDRNOTAVAIL:
    case ENETDOWN:
      return true;
    default:
      return false;
  }
}

}  // namespace

TcpStore::TcpStore(const std::string& serverHostPort, const Secret& secret,
                   const Deadline& connectDeadline)
    : TcpStore(SockAddr::parse(serverHostPort, "TcpStore server address"), secret,
               connectDeadline) {}

TcpStore::TcpStore(const SockAddr& server, const Secret& secret, const Deadline& connectDeadline)
    : TcpStore(server, secret, timeoutFromEnv()) {
  connect(connectDeadline);
}

std::shared_ptr<Store> TcpStore::separateClient() {
  auto c = std::shared_ptr<TcpStore>(new TcpStore(server_, secret_, opTimeout_));
  // The same server: if it served this client, a refusal to the new one means its process has
  // ended too (a split child's store dying with the parent's rank 0 is an error at once, not
  // retried until the timeout).
  std::lock_guard lock(mu_);
  c->servedBefore_ = servedBefore_;
  return c;
}

TcpStore::TcpStore(const SockAddr& server, const Secret& secret, double opTimeout)
    : server_(server), secret_(secret), opTimeout_(opTimeout) {
  abortFd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!abortFd_.valid()) throwSystemError("TcpStore: eventfd");
}

TcpStore::~TcpStore() = default;

void TcpStore::disconnect() { fd_.reset(); }

void TcpStore::abort() {
  aborted_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(abortFd_.get(), &one, sizeof(one));
}

void TcpStore::waitFd(short events, const Deadline& d, const std::string& what) {
  for (;;) {
    if (aborted_.load()) fail(tuttiRemoteError, "TcpStore ", what, ": store aborted");
    if (also_ != nullptr && also_->raised())
      fail(tuttiRemoteError, "TcpStore ", what, ": communicator aborted");
    pollfd fds[3] = {{fd_.get(), events, 0}, {abortFd_.get(), POLLIN, 0}, {-1, POLLIN, 0}};
    if (also_ != nullptr) fds[2].fd = also_->fd();
    int left = d.msLeft();
    if (left <= 0)
      fail(tuttiTimeout, "TcpStore ", what, ": no answer from the server at ", address(),
           " within ", secondsText(d.totalSeconds()), " s");
    int n = ::poll(fds, 3, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSystemError("TcpStore " + what + ": poll");
    }
    if (fds[1].revents || fds[2].revents) continue;  // aborted: reported at the top
    if (fds[0].revents) return;
  }
}

void TcpStore::connectSocket(const Deadline& deadline) {
  int backoffMs = 10;
  int lastErr = 0;
  for (;;) {
    if (aborted_.load()) fail(tuttiRemoteError, "TcpStore connect to ", address(), ": aborted");
    int fd = ::socket(server_.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throwSystemError("TcpStore: socket");
    fd_.reset(fd);
    int err = 0;
    if (::connect(fd, server_.sa(), server_.len) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        try {
          waitFd(POLLOUT, deadline, "connect to " + address());
        } catch (const Error& e) {
          disconnect();
          if (e.code() == tuttiTimeout) {
            fail(tuttiTimeout, "TcpStore: cannot reach the store server at ", address(), " within ",
                 secondsText(deadline.totalSeconds()), " s (connect pending)");
          }
          throw;
        }
        socklen_t len = sizeof(err);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err == 0) break;
    disconnect();
    lastErr = err;
    // Refused after this client was served before: the server's process has ended (a
    // restarted server would not hold the keys either), so waiting for it only delays the
    // error, e.g. a failure record written to the store of a rank that died.
    if (servedBefore_ && err == ECONNREFUSED)
      fail(tuttiRemoteError, "TcpStore: the store server at ", address(),
           " refuses connections (it served this client before: its process has ended)");
    if (!retryableConnectError(err)) {
      throwSystemError("TcpStore: connect to the store server at " + address(), err);
    }
    if (deadline.expired()) {
      fail(tuttiTimeout, "TcpStore: cannot reach the store server at ", address(), " within ",
           secondsText(deadline.totalSeconds()),
           " s (last error: ", std::string(std::strerror(lastErr)), ")");
    }
    // Sleep with backoff, woken early by abort().
    pollfd pfd{abortFd_.get(), POLLIN, 0};
    ::poll(&pfd, 1, std::min(backoffMs, deadline.msLeft()));
    backoffMs = std::min(backoffMs * 2, 1000);
  }
  int one = 1;
  ::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::lock_guard lock(localMu_);
  localHost_ = SockAddr::local(fd_.get()).host();
}

void TcpStore::connect(const Deadline& deadline) {
  // A connection closed before the handshake's answer was shed by a server flooded with idle
  // connections or out of descriptors: try again (with backoff) until the deadline. An
  // explicit refusal (kHelloRefused) is final.
  int backoffMs = 10;
  int shed = 0;
  for (;;) {
    connectSocket(deadline);
    if (handshake(deadline)) return;
    ++shed;
    if (deadline.expired())
      fail(tuttiRemoteError, "TcpStore: the store server at ", address(), " closed ", shed,
           " connection(s) before answering the handshake within ",
           secondsText(deadline.totalSeconds()),
           " s (a tutti store sheds connections when flooded with idle ones or out of file "
           "descriptors; or it is not a tutti store)");
    pollfd pfd{abortFd_.get(), POLLIN, 0};
    ::poll(&pfd, 1, std::min(backoffMs, deadline.msLeft()));
    backoffMs = std::min(backoffMs * 2, 500);
  }
}

bool TcpStore::handshake(const Deadline& deadline) {
  try {
    std::vector<uint8_t> hello;
    proto::Writer w(hello);
    w.bytes(proto::kMagic, sizeof(proto::kMagic));
    w.u32(proto::kVersion);
    w.bytes(secret_.data(), secret_.size());
    uint8_t ack = 0;
    try {
      sendAll(hello, deadline, "handshake with " + address());
      recvAll(&ack, 1, deadline, "handshake with " + address());
    } catch (const Error& e) {
      if (e.code() != tuttiRemoteError || aborted_.load()) throw;
      disconnect();
      return false;  // closed without an answer: shed
    }
    if (ack == proto::kHelloRefused)
      fail(tuttiRemoteError, "TcpStore: the store server at ", address(),
           " refused the connection (wrong secret, or another protocol version)");
    if (ack != proto::kHelloOk)
      fail(tuttiRemoteError, "TcpStore: unexpected handshake answer from ", address(),
           " (not a tutti store?)");
    servedBefore_ = true;
    return true;
  } catch (...) {
    disconnect();
    throw;
  }
}

void TcpStore::sendAll(const std::vector<uint8_t>& data, const Deadline& d,
                       const std::string& what) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t w = ::send(fd_.get(), data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitFd(POLLOUT, d, what);
      continue;
    }
    fail(tuttiRemoteError, "TcpStore ", what, ": connection to the store server at ", address(),
         " lost (", std::string(std::strerror(errno)), ")");
  }
}

void TcpStore::recvAll(void* p, size_t n, const Deadline& d, const std::string& what) {
  auto* b = static_cast<uint8_t*>(p);
  size_t off = 0;
  while (off < n) {
    ssize_t r = ::recv(fd_.get(), b + off, n - off, 0);
    if (r > 0) {
      off += static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitFd(POLLIN, d, what);
      continue;
    }
    fail(tuttiRemoteError, "TcpStore ", what, ": the store server at ", address(),
         " closed the connection", r < 0 ? std::string(" (") + std::strerror(errno) + ")" : "");
  }
}

uint64_t TcpStore::recvU64(const Deadline& d, const std::string& what) {
  uint8_t b[8];
  recvAll(b, 8, d, what);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
  return v;
}

void TcpStore::recvStatus(const Deadline& d, const std::string& what) {
  uint8_t status = 0;
  recvAll(&status, 1, d, what);
  if (status == proto::kOk) return;
  uint8_t lenBytes[4];
  recvAll(lenBytes, 4, d, what);
  uint32_t len = lenBytes[0] | lenBytes[1] << 8 | lenBytes[2] << 16 | uint32_t(lenBytes[3]) << 24;
  std::string msg(std::min<uint32_t>(len, 1 << 20), '\0');
  recvAll(msg.data(), msg.size(), d, what);
  fail(tuttiInvalidUsage, msg);
}

template <typename F>
auto TcpStore::withConnection(const Deadline& d, const AbortSignal* also, F&& f) -> decltype(f()) {
  std::lock_guard lock(mu_);
  if (aborted_.load()) fail(tuttiRemoteError, "TcpStore at ", address(), ": store aborted");
  struct AlsoScope {
    const AbortSignal*& slot;
    ~AlsoScope() { slot = nullptr; }
  } scope{also_};
  also_ = also;
  if (!fd_.valid()) connect(d);
  try {
    return f();
  } catch (const Error& e) {
    // A server-side error (tuttiInvalidUsage) leaves the stream in sync; anything else
    // (timeout, abort, lost connection) may not: drop the connection, a later call
    // reconnects.
    if (e.code() != tuttiInvalidUsage) disconnect();
    throw;
  }
}

void TcpStore::set(const std::string& key, std::span<const std::byte> value) {
  Deadline d(opTimeout_);
  withConnection(d, nullptr, [&] {
    std::vector<uint8_t> req;
    proto::Writer w(req);
    w.u8(proto::kSet);
    w.key(key);
    w.u64(value.size());
    w.bytes(value.data(), value.size());
    std::string what = "set(\"" + key + "\")";
    sendAll(req, d, what);
    recvStatus(d, what);
  });
}

std::vector<std::byte> TcpStore::get(const std::string& key, const Deadline& deadline) {
  return getWith(key, deadline, nullptr);
}

std::vector<std::byte> TcpStore::getWith(const std::string& key, const Deadline& deadline,
                                         const AbortSignal* also) {
  return withConnection(deadline, also, [&] {
    std::vector<uint8_t> req;
    proto::Writer w(req);
    w.u8(proto::kGet);
    w.key(key);
    std::string what = "get(\"" + key + "\")";
    try {
      sendAll(req, deadline, what);
      recvStatus(deadline, what);
      std::vector<std::byte> value(recvU64(deadline, what));
      recvAll(value.data(), value.size(), deadline, what);
      return value;
    } catch (const Error& e) {
      if (e.code() == tuttiTimeout)
        throwGetTimeout("TcpStore(" + address() + ")", key, deadline.totalSeconds());
      throw;
    }
  });
}

std::vector<std::byte> TcpStore::get(const std::string& key, const Deadline& deadline,
                                     const AbortSignal& also) {
  return getWith(key, deadline, &also);
}

void TcpStore::wait(const std::vector<std::string>& keys, const Deadline& deadline) {
  withConnection(deadline, nullptr, [&] {
    std::vector<uint8_t> req;
    proto::Writer w(req);
    w.u8(proto::kWait);
    w.u32(static_cast<uint32_t>(keys.size()));
    for (const auto& k : keys) w.key(k);
    std::string what = "wait(" + std::to_string(keys.size()) + " keys" +
                       (keys.empty() ? "" : ", first \"" + keys[0] + "\"") + ")";
    sendAll(req, deadline, what);
    recvStatus(deadline, what);
  });
}

std::vector<uint8_t> TcpStore::askPresence(uint8_t op, const std::vector<std::string>& keys,
                                           size_t answerBytes, const char* what) {
  Deadline d(opTimeout_);
  return withConnection(d, nullptr, [&] {
    std::vector<uint8_t> req;
    proto::Writer w(req);
    w.u8(op);
    w.u32(static_cast<uint32_t>(keys.size()));
    for (const auto& k : keys) w.key(k);
    sendAll(req, d, what);
    recvStatus(d, what);
    std::vector<uint8_t> answer(answerBytes);
    recvAll(answer.data(), answer.size(), d, what);
    return answer;
  });
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  return askPresence(proto::kCheck, keys, 1, "check")[0] != 0;
}

std::vector<bool> TcpStore::checkEach(const std::vector<std::string>& keys) {
  std::vector<uint8_t> present = askPresence(proto::kCheckEach, keys, keys.size(), "check each");
  return std::vector<bool>(present.begin(), present.end());
}

std::string TcpStore::localHost() {
  std::lock_guard lock(localMu_);
  return localHost_;
}

size_t TcpStore::erasePrefix(const std::string& prefix) {
  Deadline d(opTimeout_);
  return withConnection(d, nullptr, [&] {
    std::vector<uint8_t> req;
    proto::Writer w(req);
    w.u8(proto::kErase);
    w.key(prefix);
    std::string what = "erasePrefix(\"" + prefix + "\")";
    sendAll(req, d, what);
    recvStatus(d, what);
    return static_cast<size_t>(recvU64(d, what));
  });
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  Deadline d(opTimeout_);
  return withConnection(d, nullptr, [&] {
    std::vector<uint8_t> req;
    proto::Writer w(req);
    w.u8(proto::kAdd);
    w.key(key);
    w.u64(static_cast<uint64_t>(delta));
    std::string what = "add(\"" + key + "\")";
    sendAll(req, d, what);
    recvStatus(d, what);
    return static_cast<int64_t>(recvU64(d, what));
  });
}

}  // namespace tutti::bootstrap
