// BootstrapRing's setup: the listener, the connections of every level and the pointer doubling
// that finds their addresses (ring.h).
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bootstrap/ring.h"
#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::bootstrap {

namespace {

constexpr char kMagic[8] = {'T', 'U', 'T', 'T', 'I', 'R', 'N', 'G'};
constexpr size_t kTokenBytes = 32;  // hex of a 16-byte secret
constexpr size_t kHelloBytes = sizeof(kMagic) + 4 + kTokenBytes;
constexpr int kLevelShift = 24;  // the hello's u32: rank | level << 24
constexpr double kHelloSeconds = 10.0;
constexpr int kListenBacklog = 64;
constexpr uint64_t kMaxAddressBytes = 4096;

void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

int levelsFor(int nranks) {
  int levels = 0;
  while ((1ll << levels) < nranks) ++levels;
  return levels;
}

}  // namespace

RingListener::RingListener(const std::string& bindHost) {
  SockAddr bind =
      SockAddr::resolve(bindHost.empty() ? "127.0.0.1" : bindHost, 0, "bootstrap ring address");
  fd_.reset(::socket(bind.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_.valid()) throwSystemError("socket for the bootstrap ring");
  if (::bind(fd_.get(), bind.sa(), bind.len) != 0 || ::listen(fd_.get(), kListenBacklog) != 0)
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

void BootstrapRing::connect(RingListener listener, const std::string& nextAddress,
                            const Deadline& deadline) {
  broken_ = true;  // until it succeeds
  links_.clear();
  const int levels = levelsFor(nranks_);
  std::vector<UniqueFd> early(levels);
  std::string address = nextAddress;  // of rank + 2^level
  for (int level = 0; level < levels; ++level) {
    const int d = 1 << level;
    Link link;
    link.outPeer = (rank_ + d) % nranks_;
    link.inPeer = ((rank_ - d) % nranks_ + nranks_) % nranks_;
    link.out = connectLevel(level, address, deadline);
    link.in = acceptLevel(listener.fd_.get(), listener.token_, level, early, deadline);
    links_.push_back(std::move(link));
    if (level + 1 == levels) break;
    // Pointer doubling: rank - 2^level needs the address of rank + 2^level, which this rank
    // just used; rank + 2^level sends the one of rank + 2^(level + 1).
    const std::string what = "learn the address of rank " +
                             std::to_string((rank_ + 2 * d) % nranks_) + " (bootstrap ring)";
    auto got = exchange(links_.back(), std::as_bytes(std::span(address)), deadline, what, level + 1,
                        levels);
    if (got.empty() || got.size() > kMaxAddressBytes)
      fail(tuttiInternalError, name_, ": ", what, ": rank ", links_.back().outPeer, " sent ",
           got.size(), " bytes");
    address.assign(reinterpret_cast<const char*>(got.data()), got.size());
  }
  broken_ = false;
}

UniqueFd BootstrapRing::connectLevel(int level, const std::string& theirs, const Deadline& d) {
  const int peer = (rank_ + (1 << level)) % nranks_;
  size_t bar = theirs.find('|');
  if (bar == std::string::npos || theirs.size() - bar - 1 != kTokenBytes)
    fail(tuttiInternalError, name_, ": rank ", peer, "'s ring address '", theirs, "' is malformed");
  SockAddr addr = SockAddr::parse(theirs.substr(0, bar), "bootstrap ring address");

  // It listens before its address is published or passed on, so no retry is needed.
  UniqueFd fd(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throwSystemError(name_ + ": socket for the bootstrap ring");
  std::string what = "connect to rank " + std::to_string(peer) + " at " + addr.toString();
  int err = ::connect(fd.get(), addr.sa(), addr.len) == 0 ? 0 : errno;
  if (err == EINPROGRESS || err == EINTR) {
    waitFd(fd.get(), POLLOUT, d, what);
    socklen_t len = sizeof(err);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  }
  // A refusal means it is gone; a reset, that it closed its listener with this connection
  // still waiting to be accepted (it failed during init).
  if (err == ECONNREFUSED || err == ECONNRESET)
    fail(tuttiRemoteError, name_, ": rank ", rank_, ": ", what,
         err == ECONNREFUSED ? ": refused (rank " : ": reset (rank ", peer,
         level == 0 ? ", next on the bootstrap ring," : ", on the bootstrap ring,",
         " exited or failed)");
  if (err != 0) throwSystemError(name_ + ": " + what, err);
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint8_t hello[kHelloBytes];
  std::memcpy(hello, kMagic, sizeof(kMagic));
  putU32(hello + sizeof(kMagic),
         static_cast<uint32_t>(rank_) | (static_cast<uint32_t>(level) << kLevelShift));
  std::memcpy(hello + sizeof(kMagic) + 4, theirs.data() + bar + 1, kTokenBytes);
  sendAll(fd.get(), hello, sizeof(hello), d, what, peer);  // a reset: it died since
  return fd;
}

UniqueFd BootstrapRing::acceptLevel(int listenFd, const std::string& token, int level,
                                    std::vector<UniqueFd>& early, const Deadline& d) {
  auto expected = [&](int lv) { return ((rank_ - (1 << lv)) % nranks_ + nranks_) % nranks_; };
  std::string what = "accept the connection of rank " + std::to_string(expected(level));
  while (!early[level].valid()) {
    UniqueFd fd(::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
        waitFd(listenFd, POLLIN, d, what);
        continue;
      }
      throwSystemError(name_ + ": " + what);
    }
    uint8_t hello[kHelloBytes] = {};
    try {
      // A rank sends its hello as soon as it connects: a connection silent for kHelloSeconds
      // is not one (and must not hold up the real one until the deadline).
      Deadline helloDeadline(std::min(d.secondsLeft(), kHelloSeconds));
      recvAll(fd.get(), hello, sizeof(hello), helloDeadline, what);
    } catch (const Error& e) {
      bool notOurs = e.code() == tuttiRemoteError || (e.code() == tuttiTimeout && !d.expired());
      if (!notOurs || aborted_.load()) throw;
      // Closed or silent before its hello: not a ring member (refused below).
    }
    const uint32_t id = getU32(hello + sizeof(kMagic));
    const int from = static_cast<int>(id & ((1u << kLevelShift) - 1));
    const int lv = static_cast<int>(id >> kLevelShift);
    bool ok = std::memcmp(hello, kMagic, sizeof(kMagic)) == 0 &&
              std::memcmp(hello + sizeof(kMagic) + 4, token.data(), kTokenBytes) == 0 &&
              lv >= level && lv < static_cast<int>(early.size()) && from == expected(lv) &&
              !early[lv].valid();
    if (ok) {
      int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      early[lv] = std::move(fd);
      continue;
    }
    TUTTI_WARN(kBootstrap, name_ << ": refused a bootstrap ring connection from "
                                 << SockAddr::peer(fd.get()).toString() << " (not rank "
                                 << expected(level) << " with this ring's token)");
  }
  return std::move(early[level]);
}

}  // namespace tutti::bootstrap
