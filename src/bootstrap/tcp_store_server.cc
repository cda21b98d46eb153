// TcpStoreServer: one thread, poll(2) over the listening socket, an eventfd (stop) and the
// client connections, all non-blocking. Blocked GET/WAIT requests park their connection
// until a SET/ADD makes them answerable; nothing spins.
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "bootstrap/store_util.h"
#include "bootstrap/tcp_store.h"
#include "bootstrap/tcp_store_protocol.h"
#include "common/error.h"
#include "common/log.h"
#include "common/unique_fd.h"

namespace tutti::bootstrap {

namespace {

constexpr double kHandshakeSeconds = 10.0;
// Connections that have not sent their hello yet: at most this many are kept; beyond it (or
// when out of descriptors) the one idle longest, if idle for kShedAfterSeconds, is closed to
// make room, so idle strangers cannot lock ranks out (real clients send the hello at once);
// while every pending one is younger, new connections wait in the listen queue.
constexpr size_t kMaxPendingHandshakes = 64;
constexpr double kShedAfterSeconds = 0.25;
constexpr double kDrainSeconds = 1.0;

struct Conn {
  UniqueFd fd;
  std::string peer;
  bool authed = false;
  bool closed = false;
  std::chrono::steady_clock::time_point since;
  std::vector<uint8_t> in;
  size_t inPos = 0;
  std::vector<uint8_t> out;
  size_t outPos = 0;
  // A parked GET (one key) or WAIT (several keys).
  uint8_t pendingOp = 0;
  std::vector<std::string> pendingKeys;
};

}  // namespace

struct TcpStoreServer::Impl {
  SockAddr addr;
  Secret secret;
  UniqueFd listenFd;
  UniqueFd stopFd;
  // Out of file descriptors (EMFILE/ENFILE), accept() fails and leaves the connection pending,
  // so the listener stays readable: a spare fd is closed to accept and drop it, then reopened
  // (the classic reserve-fd trick). Without a spare, the listener is not polled for a while.
  // The warning is printed at most every kFdWarnSeconds with the count since the last one.
  UniqueFd spareFd;
  std::chrono::steady_clock::time_point listenPausedUntil{};
  std::chrono::steady_clock::time_point lastFdWarn{};
  uint64_t fdDropsSinceWarn = 0;
  static constexpr double kFdWarnSeconds = 10.0;
  static constexpr auto kListenPause = std::chrono::milliseconds(200);
  // How long the listener rests when kMaxPendingHandshakes young connections are pending.
  static constexpr auto kFullPause = std::chrono::milliseconds(5);
  void onOutOfFds(int err);
  // Closes the unauthenticated connection idle longest, if idle for kShedAfterSeconds;
  // returns whether it closed one.
  bool shedIdleStranger(const char* why);
  size_t pendingHandshakes() const {
    size_t n = 0;
    for (const auto& c : conns) n += !c->closed && !c->authed;
    return n;
  }
  uint64_t shedSinceWarn = 0;
  std::chrono::steady_clock::time_point lastShedWarn{};
  std::thread thread;
  std::atomic<size_t> live{0};
  std::atomic<uint64_t> refused{0};
  // Written by the server thread, read by stats().
  std::atomic<uint64_t> requests[8] = {};
  std::atomic<uint64_t> keyCount{0}, peakKeys{0}, heldBytes{0}, peakBytes{0};
  void noteSize() {
    keyCount.store(data.size());
    if (data.size() > peakKeys.load()) peakKeys.store(data.size());
    if (heldBytes.load() > peakBytes.load()) peakBytes.store(heldBytes.load());
  }
  // Owned by the server thread:
  std::map<std::string, std::vector<uint8_t>> data;
  std::vector<std::unique_ptr<Conn>> conns;

  void run();
  // On stop: replies already queued (say, the OK of the last rank's leave SET) still go out,
  // waiting up to kDrainSeconds for slow readers, so that a client whose request was served
  // never sees the connection close instead of its answer.
  void drainReplies();
  void acceptAll();
  void readFrom(Conn& c);
  void flush(Conn& c);
  bool handshake(Conn& c);
  // Serves buffered requests until one parks or the buffer runs dry; returns whether the
  // map changed.
  bool serve(Conn& c);
  // One request, its opcode read: whether r held all of it (else nothing was done) and
  // whether the map changed.
  struct Served {
    bool complete = false;
    bool changed = false;
  };
  Served serveSet(Conn& c, proto::Reader& r);
  Served serveGet(Conn& c, proto::Reader& r);
  Served serveCheckOrWait(Conn& c, proto::Reader& r, uint8_t op);
  Served serveAdd(Conn& c, proto::Reader& r);
  Served serveErase(Conn& c, proto::Reader& r);
  bool tryUnpark(Conn& c);
  // What the loop does with a connection's newly received bytes: the handshake, then its
  // requests; returns whether the map changed.
  bool handleInput(Conn& c) {
    if (!c.closed && !c.authed) handshake(c);
    return !c.closed && c.authed && serve(c);
  }
  // A SET/ADD may unpark waiters, whose further requests may change the map again.
  void releaseParked(bool changed) {
    while (changed) {
      changed = false;
      for (auto& c : conns) {
        if (!c->closed && c->pendingOp && tryUnpark(*c)) changed |= serve(*c);
      }
    }
  }
  // Appends received bytes to c.in (dropping what was already served).
  static void append(Conn& c, const uint8_t* p, size_t n) {
    if (c.inPos > 0 && c.inPos == c.in.size()) {
      c.in.clear();
      c.inPos = 0;
    }
    c.in.insert(c.in.end(), p, p + n);
  }
  void replyOk(Conn& c) { c.out.push_back(proto::kOk); }
  void replyError(Conn& c, const std::string& msg) {
    proto::Writer w(c.out);
    w.u8(proto::kError);
    w.u32(static_cast<uint32_t>(msg.size()));
    w.bytes(msg.data(), msg.size());
  }
  void replyValue(Conn& c, const std::vector<uint8_t>& v) {
    proto::Writer w(c.out);
    w.u8(proto::kOk);
    w.u64(v.size());
    w.bytes(v.data(), v.size());
  }
  void close(Conn& c, const char* why) {
    if (c.closed) return;
    TUTTI_TRACE(kBootstrap, "TcpStore server " << addr.toString() << ": closing connection from "
                                               << c.peer << " (" << why << ")");
    c.fd.reset();
    c.closed = true;
    if (c.authed) live.fetch_sub(1);
  }
  bool has(const std::string& k) const { return data.count(k) != 0; }
};

TcpStoreServer::TcpStoreServer(const std::string& bindHostPort, const Secret& secret)
    : TcpStoreServer(SockAddr::parse(bindHostPort, "TcpStoreServer bind address", true), secret) {}

namespace {
// A bound, listening, non-blocking socket on bindAddr (port 0: an ephemeral port).
int listenOn(const SockAddr& bindAddr, int backlog) {
  UniqueFd fd(::socket(bindAddr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throwSystemError("TcpStoreServer: socket for " + bindAddr.toString());
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), bindAddr.sa(), bindAddr.len) != 0 || ::listen(fd.get(), backlog) != 0) {
    int err = errno;
    throwSystemError("TcpStoreServer: cannot listen on " + bindAddr.toString() +
                         (err == EADDRINUSE ? " (the port is taken; pick another one)" : ""),
                     err);
  }
  return fd.release();
}
}  // namespace

TcpStoreServer::TcpStoreServer(const SockAddr& bindAddr, const Secret& secret)
    : TcpStoreServer(listenOn(bindAddr, 1024), secret) {}

int TcpStoreServer::listenSocket(const SockAddr& bindAddr) { return listenOn(bindAddr, 1024); }

TcpStoreServer::TcpStoreServer(int listeningFd, const Secret& secret)
    : impl_(std::make_unique<Impl>()) {
  impl_->secret = secret;
  impl_->listenFd.reset(listeningFd);  // closed with impl_ if the rest throws
  impl_->addr = SockAddr::local(listeningFd);
  impl_->stopFd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl_->stopFd.valid()) throwSystemError("TcpStoreServer: eventfd");
  impl_->spareFd.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
  TUTTI_INFO(kBootstrap, "TcpStore server listening on " << impl_->addr.toString());
}

TcpStoreServer::~TcpStoreServer() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(impl_->stopFd.get(), &one, sizeof(one));
  impl_->thread.join();
  for (auto& c : impl_->conns) impl_->close(*c, "server shutting down");
}  // impl_ closes the listening socket and the fds it holds

const SockAddr& TcpStoreServer::sockAddr() const { return impl_->addr; }
const Secret& TcpStoreServer::secret() const { return impl_->secret; }
size_t TcpStoreServer::connectionCount() const { return impl_->live.load(); }
uint64_t TcpStoreServer::refusedCount() const { return impl_->refused.load(); }

TcpStoreStats TcpStoreServer::stats() const {
  TcpStoreStats s;
  for (int i = 0; i < 8; ++i) {
    s.byOp[i] = impl_->requests[i].load();
    s.requests += s.byOp[i];
  }
  s.keys = impl_->keyCount.load();
  s.peakKeys = impl_->peakKeys.load();
  s.bytes = impl_->heldBytes.load();
  s.peakBytes = impl_->peakBytes.load();
  return s;
}

void TcpStoreServer::Impl::run() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({stopFd.get(), POLLIN, 0});
    // A paused listener (fd -1) is ignored by poll.
    auto pauseLeft = std::chrono::ceil<std::chrono::milliseconds>(listenPausedUntil -
                                                                  std::chrono::steady_clock::now());
    bool paused = pauseLeft.count() > 0;
    fds.push_back({paused ? -1 : listenFd.get(), POLLIN, 0});
    for (auto& c : conns) {
      short ev = POLLIN;
      if (c->outPos < c->out.size()) ev |= POLLOUT;
      fds.push_back({c->fd.get(), ev, 0});
    }
    int n = ::poll(fds.data(), fds.size(),
                   paused ? static_cast<int>(std::min<int64_t>(pauseLeft.count(), 50)) : 1000);
    if (n < 0 && errno != EINTR) {
      TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString()
                                                << ": poll failed: " << std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (n > 0 && fds[0].revents) return drainReplies();
    if (n > 0 && fds[1].revents) acceptAll();
    bool changed = false;
    for (size_t i = 0; n > 0 && i + 2 < fds.size(); ++i) {
      Conn& c = *conns[i];
      short re = fds[i + 2].revents;
      if (re & POLLOUT) flush(c);
      if (re & (POLLIN | POLLHUP | POLLERR)) {
        readFrom(c);
        changed |= handleInput(c);
      }
    }
    releaseParked(changed);
    auto now = std::chrono::steady_clock::now();
    for (auto& c : conns) {
      if (!c->closed && c->outPos < c->out.size()) flush(*c);
      if (!c->closed && !c->authed &&
          std::chrono::duration<double>(now - c->since).count() > kHandshakeSeconds) {
        TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString() << ": connection from "
                                                  << c->peer << " sent no handshake within "
                                                  << kHandshakeSeconds << " s; closed");
        refused.fetch_add(1);
        close(*c, "handshake timeout");
      }
    }
    std::erase_if(conns, [](const auto& c) { return c->closed; });
  }
}

void TcpStoreServer::Impl::drainReplies() {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kDrainSeconds);
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    for (auto& c : conns) {
      if (!c->closed && c->outPos < c->out.size()) flush(*c);
      if (!c->closed && c->outPos < c->out.size()) fds.push_back({c->fd.get(), POLLOUT, 0});
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (fds.empty() || left.count() <= 0) return;
    ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
  }
}

void TcpStoreServer::Impl::acceptAll() {
  for (;;) {
    if (pendingHandshakes() >= kMaxPendingHandshakes &&
        !shedIdleStranger("too many connections without a handshake")) {
      // Every pending one is young (a burst of ranks starting at once, whose hellos this
      // thread has not read yet): leave the rest in the listen queue for a moment rather
      // than close them (each would retry with backoff).
      listenPausedUntil = std::chrono::steady_clock::now() + kFullPause;
      return;
    }
    int fd = ::accept4(listenFd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && shedIdleStranger("out of file descriptors"))
        continue;
      if (errno == EMFILE || errno == ENFILE) return onOutOfFds(errno);
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString()
                                                  << ": accept failed: " << std::strerror(errno));
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Conn>();
    c->fd.reset(fd);
    c->peer = SockAddr::peer(fd).toString();
    c->since = std::chrono::steady_clock::now();
    conns.push_back(std::move(c));
  }
}

bool TcpStoreServer::Impl::shedIdleStranger(const char* why) {
  auto now = std::chrono::steady_clock::now();
  Conn* oldest = nullptr;
  for (auto& c : conns)
    if (!c->closed && !c->authed && (!oldest || c->since < oldest->since)) oldest = c.get();
  if (!oldest || std::chrono::duration<double>(now - oldest->since).count() < kShedAfterSeconds)
    return false;
  close(*oldest, "shed: idle without a handshake");
  refused.fetch_add(1);
  ++shedSinceWarn;
  if (lastShedWarn == std::chrono::steady_clock::time_point{} ||
      std::chrono::duration<double>(now - lastShedWarn).count() >= kFdWarnSeconds) {
    TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString() << ": " << why << ": closed "
                                              << shedSinceWarn
                                              << " idle connection(s) that sent no handshake "
                                                 "since the last warning (last from "
                                              << oldest->peer << ")");
    lastShedWarn = now;
    shedSinceWarn = 0;
  }
  return true;
}

void TcpStoreServer::Impl::onOutOfFds(int err) {
  bool dropped = false;
  if (spareFd.valid()) {
    spareFd.reset();
    // Accepted and closed at once, before the spare takes its slot back.
    dropped = UniqueFd(::accept4(listenFd.get(), nullptr, nullptr, SOCK_CLOEXEC)).valid();
    spareFd.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  // No spare (it could not be reopened, or ENFILE took it): stop polling the listener for a
  // moment instead of spinning on a connection that cannot be accepted.
  if (!dropped) listenPausedUntil = std::chrono::steady_clock::now() + kListenPause;
  ++fdDropsSinceWarn;
  if (dropped) refused.fetch_add(1);
  auto now = std::chrono::steady_clock::now();
  if (lastFdWarn != std::chrono::steady_clock::time_point{} &&
      std::chrono::duration<double>(now - lastFdWarn).count() < kFdWarnSeconds)
    return;
  TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString()
                                            << ": accept failed: " << std::strerror(err) << " ("
                                            << fdDropsSinceWarn << " connection(s) "
                                            << (dropped ? "dropped" : "left pending")
                                            << " since the last warning; raise ulimit -n); "
                                               "connected clients are still served");
  lastFdWarn = now;
  fdDropsSinceWarn = 0;
}

void TcpStoreServer::Impl::readFrom(Conn& c) {
  uint8_t buf[65536];
  for (;;) {
    ssize_t r = ::recv(c.fd.get(), buf, sizeof(buf), 0);
    if (r > 0) {
      append(c, buf, static_cast<size_t>(r));
      continue;
    }
    if (r == 0) return close(c, "peer closed");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    return close(c, std::strerror(errno));
  }
}

void TcpStoreServer::Impl::flush(Conn& c) {
  while (c.outPos < c.out.size()) {
    ssize_t w = ::send(c.fd.get(), c.out.data() + c.outPos, c.out.size() - c.outPos, MSG_NOSIGNAL);
    if (w > 0) {
      c.outPos += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return close(c, "send failed");
  }
  c.out.clear();
  c.outPos = 0;
}

bool TcpStoreServer::Impl::handshake(Conn& c) {
  if (c.in.size() - c.inPos < proto::kHelloBytes) return false;
  const uint8_t* p = c.in.data() + c.inPos;
  uint32_t version = 0;
  for (int i = 0; i < 4; ++i) version |= static_cast<uint32_t>(p[8 + i]) << (8 * i);
  Secret presented;
  std::memcpy(presented.data(), p + 12, presented.size());
  bool ok = secretEqual(presented, secret);  // constant time, evaluated in every case
  const char* why = nullptr;
  if (std::memcmp(p, proto::kMagic, sizeof(proto::kMagic)) != 0) {
    why = "not a tutti store client (bad magic)";
  } else if (version != proto::kVersion) {
    why = "protocol version mismatch";
  } else if (!ok) {
    why = "wrong secret";
  }
  if (why) {
    TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString() << ": refused a connection from "
                                              << c.peer << ": " << why);
    refused.fetch_add(1);
    c.out.push_back(proto::kHelloRefused);  // a refusal, not a shed: the client gives up
    flush(c);
    close(c, why);
    return false;
  }
  c.inPos += proto::kHelloBytes;
  c.authed = true;
  live.fetch_add(1);
  c.out.push_back(proto::kHelloOk);
  return true;
}

bool TcpStoreServer::Impl::tryUnpark(Conn& c) {
  for (const auto& k : c.pendingKeys)
    if (!has(k)) return false;
  if (c.pendingOp == proto::kGet) {
    replyValue(c, data[c.pendingKeys[0]]);
  } else {
    replyOk(c);
  }
  c.pendingOp = 0;
  c.pendingKeys.clear();
  return true;
}

TcpStoreServer::Impl::Served TcpStoreServer::Impl::serveSet(Conn& c, proto::Reader& r) {
  std::string key;
  std::vector<uint8_t> value;
  if (!r.key(key) || !r.value(value)) return {};
  auto [it, fresh] = data.try_emplace(key);
  heldBytes += (fresh ? key.size() : 0) + value.size() - it->second.size();
  it->second = std::move(value);
  noteSize();
  replyOk(c);
  return {true, true};
}

TcpStoreServer::Impl::Served TcpStoreServer::Impl::serveGet(Conn& c, proto::Reader& r) {
  std::string key;
  if (!r.key(key)) return {};
  auto it = data.find(key);
  if (it != data.end()) {
    replyValue(c, it->second);
  } else {
    c.pendingOp = proto::kGet;
    c.pendingKeys = {std::move(key)};
  }
  return {true, false};
}

TcpStoreServer::Impl::Served TcpStoreServer::Impl::serveCheckOrWait(Conn& c, proto::Reader& r,
                                                                    uint8_t op) {
  uint32_t n = 0;
  std::vector<std::string> keys;
  bool all = r.count(n);
  for (uint32_t i = 0; all && i < n; ++i) {
    std::string k;
    all = r.key(k);
    keys.push_back(std::move(k));
  }
  if (!all) return {};
  bool present = true;
  for (const auto& k : keys) present = present && has(k);
  if (op == proto::kCheckEach) {
    replyOk(c);
    for (const auto& k : keys) c.out.push_back(has(k) ? 1 : 0);
  } else if (op == proto::kCheck) {
    replyOk(c);
    c.out.push_back(present ? 1 : 0);
  } else if (present) {
    replyOk(c);
  } else {
    c.pendingOp = proto::kWait;
    c.pendingKeys = std::move(keys);
  }
  return {true, false};
}

TcpStoreServer::Impl::Served TcpStoreServer::Impl::serveAdd(Conn& c, proto::Reader& r) {
  std::string key;
  uint64_t delta = 0;
  if (!r.key(key) || !r.u64(delta)) return {};
  try {
    auto [it, fresh] = data.try_emplace(key);
    auto& slot = it->second;
    if (fresh) heldBytes += key.size();
    int64_t v = addToCounter(key, std::as_bytes(std::span(slot)), static_cast<int64_t>(delta));
    auto text = formatCounter(v);
    auto* b = reinterpret_cast<const uint8_t*>(text.data());
    heldBytes += text.size() - slot.size();
    slot.assign(b, b + text.size());
    noteSize();
    proto::Writer w(c.out);
    w.u8(proto::kOk);
    w.u64(static_cast<uint64_t>(v));
    return {true, true};
  } catch (const Error& e) {
    replyError(c, e.what());
    return {true, false};
  }
}

TcpStoreServer::Impl::Served TcpStoreServer::Impl::serveErase(Conn& c, proto::Reader& r) {
  std::string prefix;
  if (!r.key(prefix)) return {};
  uint64_t n = 0;
  for (auto it = data.lower_bound(prefix);
       it != data.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    heldBytes -= it->first.size() + it->second.size();
    it = data.erase(it);
    ++n;
  }
  noteSize();
  proto::Writer w(c.out);
  w.u8(proto::kOk);
  w.u64(n);
  return {true, false};
}

bool TcpStoreServer::Impl::serve(Conn& c) {
  bool changed = false;
  while (!c.closed && !c.pendingOp && c.inPos < c.in.size()) {
    proto::Reader r(c.in.data() + c.inPos, c.in.size() - c.inPos);
    uint8_t op = 0;
    r.u8(op);
    Served served;
    switch (op) {
      case proto::kSet:
        served = serveSet(c, r);
        break;
      case proto::kGet:
        served = serveGet(c, r);
        break;
      case proto::kCheck:
      case proto::kCheckEach:
      case proto::kWait:
        served = serveCheckOrWait(c, r, op);
        break;
      case proto::kAdd:
        served = serveAdd(c, r);
        break;
      case proto::kErase:
        served = serveErase(c, r);
        break;
      default:
        TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString() << ": unknown request "
                                                  << int(op) << " from " << c.peer
                                                  << "; connection closed");
        close(c, "protocol error");
        return changed;
    }
    changed |= served.changed;
    if (r.bad()) {
      TUTTI_WARN(kBootstrap, "TcpStore server " << addr.toString() << ": oversized request from "
                                                << c.peer << "; connection closed");
      close(c, "protocol error");
      return changed;
    }
    if (!served.complete) break;
    if (op < 8) requests[op].fetch_add(1);
    c.inPos += r.pos();
  }
  if (c.inPos == c.in.size()) {
    c.in.clear();
    c.inPos = 0;
  }
  return changed;
}

// ---- TcpStoreServerDriver: the same request handling, fed without sockets ----

TcpStoreServerDriver::TcpStoreServerDriver(const Secret& secret)
    : impl_(std::make_unique<TcpStoreServer::Impl>()) {
  impl_->secret = secret;
}

TcpStoreServerDriver::~TcpStoreServerDriver() = default;

size_t TcpStoreServerDriver::connect() {
  auto c = std::make_unique<Conn>();
  c->peer = "driver connection " + std::to_string(impl_->conns.size());
  c->since = std::chrono::steady_clock::now();
  impl_->conns.push_back(std::move(c));
  return impl_->conns.size() - 1;
}

void TcpStoreServerDriver::receive(size_t conn, std::span<const uint8_t> bytes) {
  Conn& c = *impl_->conns.at(conn);
  if (c.closed) return;
  TcpStoreServer::Impl::append(c, bytes.data(), bytes.size());
  impl_->releaseParked(impl_->handleInput(c));
}

void TcpStoreServerDriver::disconnect(size_t conn) {
  impl_->close(*impl_->conns.at(conn), "driver disconnect");
}

bool TcpStoreServerDriver::closed(size_t conn) const { return impl_->conns.at(conn)->closed; }

std::vector<uint8_t> TcpStoreServerDriver::takeOutput(size_t conn) {
  Conn& c = *impl_->conns.at(conn);
  std::vector<uint8_t> out(c.out.begin() + static_cast<std::ptrdiff_t>(c.outPos), c.out.end());
  c.out.clear();
  c.outPos = 0;
  return out;
}

bool TcpStoreServerDriver::parked(size_t conn) const {
  return impl_->conns.at(conn)->pendingOp != 0;
}

size_t TcpStoreServerDriver::keyCount() const { return impl_->data.size(); }

}  // namespace tutti::bootstrap
