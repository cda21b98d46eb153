#include "tcp_transport.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "interfaces.h"
#include "socket_util.h"
#include "tcp_connection.h"

namespace tutti::transport {

namespace tcp {
namespace {

constexpr uint64_t kHelloMagic = 0x74757474692d7463ULL;  // "tutti-tc"

// First bytes on every dialled socket: who is calling, for which listener, which socket.
struct Hello {
  uint64_t magic;
  uint64_t nonce;  // the acceptor's nonce from the store: filters strays from other jobs
  int32_t from;
  int32_t to;
  int32_t index;
  int32_t nsocks;
  uint64_t chunk;
};
static_assert(sizeof(Hello) == 40);

std::string addrKey(int rank) { return "tcp/addr/" + std::to_string(rank); }
std::string nonceKey(int rank) { return "tcp/nonce/" + std::to_string(rank); }

class TcpTransport : public Transport {
 public:
  explicit TcpTransport(TcpOptions o) : opts_(o) {}
  const char* name() const override { return "tcp"; }
  void setup(const Context& ctx) override;
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  std::vector<std::unique_ptr<Connection>> connect(std::span<const int> peers,
                                                   const Deadline& deadline) override;

  std::string listenAddr_;
  std::string ifname_;

 private:
  struct Pending {  // accepted, hello not complete yet
    Fd fd;
    Hello hello{};
    size_t got = 0;
  };
  struct Dial {
    int peer = -1;
    int index = 0;
    SockAddr addr;
    uint64_t nonce = 0;
    Fd fd;
    enum State { kIdle, kConnecting, kHello, kDone } state = kIdle;
    Hello hello{};
    size_t sent = 0;
    double retryAt = 0;
    std::string lastError;
    short revents = 0;
  };

  void startDial(Dial& d);
  void dialFailed(Dial& d, int err);
  void advanceDial(Dial& d);
  void acceptNew();
  void readHellos();
  [[noreturn]] void timeout(const std::vector<int>& peers, const std::vector<Dial>& dials,
                            const Deadline& deadline);
  // The dials to the higher ranks among peers (nsocks_ each), from their published addresses.
  std::vector<Dial> dialsTo(const std::vector<int>& peers, const Deadline& deadline);
  // Whether every dial is done and every lower peer's sockets have been accepted.
  bool allConnected(const std::vector<int>& peers, const std::vector<Dial>& dials) const;
  // Sleeps in poll(2) until the listener, a pending hello or a dial may move (100 ms at most).
  void waitForSockets(std::vector<Dial>& dials, const Deadline& deadline);
  // The connections by peer, from the accepted and dialled sockets.
  std::vector<std::unique_ptr<Connection>> takeConnections(const std::vector<int>& peers,
                                                           std::vector<Dial>& dials);
  std::string who(int peer) const {
    return "rank " + std::to_string(peer) + " (host " + peers_[peer].hostname + ")";
  }

  TcpOptions opts_;
  int rank_ = -1;
  int nranks_ = 0;
  std::vector<PeerInfo> peers_;
  bootstrap::Store* store_ = nullptr;
  const std::atomic<bool>* aborted_ = nullptr;
  std::function<void()> watchPeers_;
  int nsocks_ = 2;
  size_t chunk_ = 0;
  Fd listen_;
  uint64_t nonce_ = 0;
  std::vector<Pending> pending_;
  std::map<int, std::vector<Fd>> accepted_;  // peer -> socket by index
};

void TcpTransport::setup(const Context& ctx) {
  TUTTI_CHECK_ARG(ctx.store, "tcp setup: no store");
  TUTTI_CHECK_ARG(ctx.rank >= 0 && ctx.rank < ctx.nranks, "tcp setup: rank ", ctx.rank,
                  " out of range for ", ctx.nranks, " ranks");
  TUTTI_CHECK_ARG(ctx.peers.size() == static_cast<size_t>(ctx.nranks),
                  "tcp setup: ", ctx.peers.size(), " PeerInfo entries for ", ctx.nranks, " ranks");
  rank_ = ctx.rank;
  nranks_ = ctx.nranks;
  peers_.assign(ctx.peers.begin(), ctx.peers.end());
  store_ = ctx.store;
  aborted_ = ctx.aborted;
  watchPeers_ = ctx.watchPeers;

  int64_t ns = opts_.nsocks > 0 ? opts_.nsocks : env::getInt("TUTTI_NSOCKS");
  if (ns < 1 || ns > 64) fail(tuttiInvalidArgument, "TUTTI_NSOCKS=", ns, ": use 1..64");
  nsocks_ = static_cast<int>(ns);
  int64_t ch = opts_.chunkBytes > 0 ? opts_.chunkBytes : env::getInt("TUTTI_TCP_CHUNK_BYTES");
  if (ch < 4096 || ch > (int64_t{1} << 30)) {
    fail(tuttiInvalidArgument, "TUTTI_TCP_CHUNK_BYTES=", ch, ": use 4096..1073741824");
  }
  chunk_ = static_cast<size_t>(ch);

  const std::string& myHost = peers_[rank_].hostId;
  bool singleHost = std::all_of(peers_.begin(), peers_.end(),
                                [&](const PeerInfo& p) { return p.hostId == myHost; });
  std::string spec = env::getString("TUTTI_SOCKET_IFNAME");
  auto all = listInterfaces();
  auto chosen = tcp::selectInterfaces(all, spec, singleHost, ctx.preferredNics);
  const Interface& ifc = chosen.front();

  SockAddr addr = ifc.addr;
  addr.setPort(static_cast<uint16_t>(opts_.port));
  Fd fd = makeStreamSocket(addr.family());
  if (opts_.port != 0) {
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }
  if (opts_.bufBytes > 0) tuneDataSocket(fd.get(), opts_.bufBytes);  // inherited by accept
  if (::bind(fd.get(), addr.sa(), addr.len) != 0) {
    int err = errno;
    fail(tuttiSystemError, "tcp: rank ", rank_, " cannot listen on ", ifc.name, " ",
         addr.toString(), ": bind() failed: ", std::string(std::strerror(err)),
         err == EADDRINUSE ? " (the port is taken; choose another or 0 for any)" : "");
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    throwSystemError("tcp: rank " + std::to_string(rank_) + " listen() on " + addr.toString());
  }
  listen_ = std::move(fd);
  SockAddr bound;
  bound.len = sizeof bound.storage;
  TUTTI_SYSCHECK(getsockname(listen_.get(), bound.sa(), &bound.len), "tcp: getsockname()");
  listenAddr_ = bound.toString();
  ifname_ = ifc.name;

  std::random_device rd;
  nonce_ = (uint64_t{rd()} << 32) ^ rd() ^ (static_cast<uint64_t>(getpid()) << 16);
  std::ostringstream hex;
  hex << std::hex << nonce_;
  store_->setString(nonceKey(rank_), hex.str());
  store_->setString(addrKey(rank_), listenAddr_);

  std::string names;
  for (const auto& i : chosen) names += (names.empty() ? "" : ",") + i.name;
  TUTTI_INFO(kTransport, "tcp: rank " << rank_ << " listening on " << ifc.name << " " << listenAddr_
                                      << " (candidates " << names << "; "
                                      << (singleHost ? "single host" : "multi-host") << "; nsocks "
                                      << nsocks_ << ", chunk " << chunk_ << " B)");
}

void TcpTransport::startDial(Dial& d) {
  d.fd = makeStreamSocket(d.addr.family());
  tuneDataSocket(d.fd.get(), opts_.bufBytes);
  d.sent = 0;
  int r = ::connect(d.fd.get(), d.addr.sa(), d.addr.len);
  if (r == 0) {
    d.state = Dial::kHello;
  } else if (errno == EINPROGRESS || errno == EINTR) {
    d.state = Dial::kConnecting;
  } else {
    dialFailed(d, errno);
  }
}

void TcpTransport::dialFailed(Dial& d, int err) {
  d.lastError = std::strerror(err);
  d.fd.reset();
  d.state = Dial::kIdle;
  if (err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == EHOSTUNREACH ||
      err == EAGAIN || err == EPIPE || err == ECONNABORTED) {
    d.retryAt = nowSeconds() + 0.1;  // the peer may be restarting its listener; retry
    TUTTI_TRACE(kTransport, "tcp: rank " << rank_ << " dial " << d.index << " to " << who(d.peer)
                                         << " at " << d.addr.toString() << ": " << d.lastError
                                         << "; retrying");
    return;
  }
  fail(tuttiSystemError, "tcp: rank ", rank_, " cannot connect to ", who(d.peer), " at ",
       d.addr.toString(), ": ", d.lastError, " (check TUTTI_SOCKET_IFNAME on both hosts)");
}

void TcpTransport::advanceDial(Dial& d) {
  if (d.state == Dial::kIdle) {
    if (nowSeconds() >= d.retryAt) startDial(d);
    return;
  }
  if (d.state == Dial::kConnecting) {
    if (!(d.revents & (POLLOUT | POLLERR | POLLHUP))) return;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(d.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return dialFailed(d, err);
    d.state = Dial::kHello;
  }
  if (d.state == Dial::kHello) {
    const auto* p = reinterpret_cast<const char*>(&d.hello);
    while (d.sent < sizeof(Hello)) {
      ssize_t n = ::send(d.fd.get(), p + d.sent, sizeof(Hello) - d.sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0) return dialFailed(d, errno);
      d.sent += static_cast<size_t>(n);
    }
    d.state = Dial::kDone;
  }
}

void TcpTransport::acceptNew() {
  for (;;) {
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      throwSystemError("tcp: rank " + std::to_string(rank_) + " accept() on " + listenAddr_);
    }
    Pending p;
    p.fd = Fd(fd);
    tuneDataSocket(fd, 0);
    pending_.push_back(std::move(p));
  }
}

void TcpTransport::readHellos() {
  for (size_t i = 0; i < pending_.size();) {
    Pending& p = pending_[i];
    auto* buf = reinterpret_cast<char*>(&p.hello);
    bool drop = false;
    while (p.got < sizeof(Hello)) {
      ssize_t n = ::recv(p.fd.get(), buf + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        drop = true;
        break;
      }
      p.got += static_cast<size_t>(n);
    }
    if (!drop && p.got < sizeof(Hello)) {
      ++i;
      continue;
    }
    const Hello& h = p.hello;
    if (!drop) {
      if (h.magic != kHelloMagic || h.nonce != nonce_ || h.to != rank_ || h.from < 0 ||
          h.from >= nranks_ || h.index < 0 || h.index >= nsocks_) {
        TUTTI_WARN(kTransport, "tcp: rank " << rank_ << " dropped a connection from "
                                            << peerAddrOf(p.fd.get())
                                            << " with a bad hello (another job?)");
        drop = true;
      } else if (h.nsocks != nsocks_ || h.chunk != chunk_) {
        fail(tuttiInvalidUsage, "tcp: rank ", h.from, " uses TUTTI_NSOCKS=", h.nsocks,
             ", TUTTI_TCP_CHUNK_BYTES=", h.chunk, " but rank ", rank_, " uses ", nsocks_, ", ",
             chunk_, "; set them to the same values on every rank");
      } else {
        auto& slots = accepted_[h.from];
        slots.resize(nsocks_);
        if (slots[h.index].valid()) {
          TUTTI_WARN(kTransport, "tcp: rank " << rank_ << " got socket " << h.index << " of rank "
                                              << h.from << " twice; keeping the newer one");
        }
        slots[h.index] = std::move(p.fd);
        drop = true;  // filed: remove from pending
      }
    }
    pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
  }
}

void TcpTransport::timeout(const std::vector<int>& peers, const std::vector<Dial>& dials,
                           const Deadline& deadline) {
  std::string missing;
  for (int p : peers) {
    std::string why;
    if (p < rank_) {
      int have = 0;
      auto it = accepted_.find(p);
      if (it != accepted_.end()) {
        for (const Fd& f : it->second) have += f.valid();
      }
      if (have < nsocks_) {
        why = "accepted " + std::to_string(have) + " of " + std::to_string(nsocks_) +
              " sockets on " + listenAddr_;
      }
    } else {
      for (const Dial& d : dials) {
        if (d.peer == p && d.state != Dial::kDone) {
          why = "dialling " + d.addr.toString() + (d.lastError.empty() ? "" : ": " + d.lastError);
          break;
        }
      }
    }
    if (!why.empty()) missing += (missing.empty() ? "" : "; ") + who(p) + ": " + why;
  }
  fail(tuttiTimeout, "tcp: rank ", rank_, " timed out after ", deadline.totalSeconds(),
       " s connecting to ", missing);
}

std::vector<TcpTransport::Dial> TcpTransport::dialsTo(const std::vector<int>& peers,
                                                      const Deadline& deadline) {
  // Our half (the listener) was published in setup(); now fetch the higher ranks' addresses.
  std::vector<Dial> dials;
  for (int p : peers) {
    if (p < rank_) continue;
    std::string text;
    std::string nonceText;
    try {
      text = store_->getString(addrKey(p), deadline);
      nonceText = store_->getString(nonceKey(p), deadline);
    } catch (const Error& e) {
      if (e.code() != tuttiTimeout) throw;
      fail(tuttiTimeout, "tcp: rank ", rank_, " timed out after ", deadline.totalSeconds(),
           " s waiting for ", who(p), " to publish its address (", e.what(), ")");
    }
    SockAddr addr = SockAddr::parse(text, "tcp address of rank " + std::to_string(p), true);
    uint64_t nonce = std::stoull(nonceText, nullptr, 16);
    for (int i = 0; i < nsocks_; ++i) {
      Dial d;
      d.peer = p;
      d.index = i;
      d.addr = addr;
      d.hello = Hello{kHelloMagic, nonce, rank_, p, i, nsocks_, chunk_};
      dials.push_back(std::move(d));
    }
  }
  return dials;
}

bool TcpTransport::allConnected(const std::vector<int>& peers,
                                const std::vector<Dial>& dials) const {
  if (!std::all_of(dials.begin(), dials.end(),
                   [](const Dial& d) { return d.state == Dial::kDone; }))
    return false;
  for (int p : peers) {
    if (p > rank_) continue;
    auto it = accepted_.find(p);
    if (it == accepted_.end() ||
        !std::all_of(it->second.begin(), it->second.end(), [](const Fd& f) { return f.valid(); }))
      return false;
  }
  return true;
}

void TcpTransport::waitForSockets(std::vector<Dial>& dials, const Deadline& deadline) {
  std::vector<pollfd> pfds;
  pfds.push_back({listen_.get(), POLLIN, 0});
  for (Pending& p : pending_) pfds.push_back({p.fd.get(), POLLIN, 0});
  size_t dialBase = pfds.size();
  for (Dial& d : dials) {
    short ev = (d.state == Dial::kConnecting || d.state == Dial::kHello) ? POLLOUT : 0;
    pfds.push_back({d.fd.valid() ? d.fd.get() : -1, ev, 0});
  }
  int ms = std::min(deadline.msLeft(), 100);
  int r = ::poll(pfds.data(), pfds.size(), ms);
  if (r < 0 && errno != EINTR) throwSystemError("tcp: poll() while connecting");
  for (size_t i = 0; i < dials.size(); ++i)
    dials[i].revents = r > 0 ? pfds[dialBase + i].revents : 0;
}

std::vector<std::unique_ptr<Connection>> TcpTransport::takeConnections(
    const std::vector<int>& peers, std::vector<Dial>& dials) {
  std::vector<std::unique_ptr<Connection>> out;
  for (int p : peers) {
    std::vector<Fd> socks(nsocks_);
    if (p < rank_) {
      auto it = accepted_.find(p);
      socks = std::move(it->second);
      accepted_.erase(it);
    } else {
      for (Dial& d : dials) {
        if (d.peer == p) socks[d.index] = std::move(d.fd);
      }
    }
    std::string local = localAddrOf(socks[0].get());
    std::string remote = peerAddrOf(socks[0].get());
    auto conn =
        std::make_unique<TcpConnection>(rank_, p, peers_[p].hostname, std::move(socks), chunk_);
    TUTTI_INFO(kTransport, "tcp: rank " << rank_ << " connected to " << who(p) << " " << local
                                        << " -> " << remote << " with " << nsocks_ << " socket(s)");
    out.push_back(std::move(conn));
  }
  return out;
}

std::vector<std::unique_ptr<Connection>> TcpTransport::connect(std::span<const int> peerSpan,
                                                               const Deadline& deadline) {
  TUTTI_CHECK_ARG(listen_.valid(), "tcp connect before setup");
  std::vector<int> peers(peerSpan.begin(), peerSpan.end());
  std::set<int> seen;
  for (int p : peers) {
    TUTTI_CHECK_ARG(p >= 0 && p < nranks_ && p != rank_, "tcp connect: bad peer rank ", p,
                    " (rank ", rank_, " of ", nranks_, ")");
    TUTTI_CHECK_ARG(seen.insert(p).second, "tcp connect: peer ", p, " listed twice");
  }
  std::vector<Dial> dials = dialsTo(peers, deadline);
  for (Dial& d : dials) startDial(d);
  // The first look for dead peers after a quarter second: a healthy connect is done by then.
  auto nextWatch = Clock::now() + std::chrono::milliseconds(250);
  for (;;) {
    for (Dial& d : dials) advanceDial(d);
    acceptNew();
    readHellos();
    if (allConnected(peers, dials)) break;
    if (aborted_ && aborted_->load()) {
      fail(tuttiRemoteError, "tcp: rank ", rank_, " connect aborted (communicator abort)");
    }
    if (deadline.expired()) timeout(peers, dials, deadline);
    if (watchPeers_ && Clock::now() >= nextWatch) {
      watchPeers_();
      nextWatch = Clock::now() + std::chrono::milliseconds(250);
    }
    waitForSockets(dials, deadline);
  }
  return takeConnections(peers, dials);
}

}  // namespace
}  // namespace tcp

std::unique_ptr<Transport> makeTcpTransport(TcpOptions options) {
  return std::make_unique<tcp::TcpTransport>(options);
}

std::string tcpListenAddress(const Transport& t) {
  auto* tcp = dynamic_cast<const tcp::TcpTransport*>(&t);
  TUTTI_CHECK_ARG(tcp, "tcpListenAddress: not a tcp transport");
  return tcp->listenAddr_;
}

std::string tcpListenInterface(const Transport& t) {
  auto* tcp = dynamic_cast<const tcp::TcpTransport*>(&t);
  TUTTI_CHECK_ARG(tcp, "tcpListenInterface: not a tcp transport");
  return tcp->ifname_;
}

}  // namespace tutti::transport
