#include "ib_transport.h"

#include <cstring>
#include <map>
#include <set>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "ib_connection.h"
#include "ib_device.h"
#include "ib_regcache.h"

namespace tutti::transport {

namespace ib {
namespace {

std::string devKey(int rank) { return "ib/dev/" + std::to_string(rank); }
std::string qpKey(int from, int to) {
  return "ib/qp/" + std::to_string(from) + "/" + std::to_string(to);
}
std::string readyKey(int from, int to) {
  return "ib/ready/" + std::to_string(from) + "/" + std::to_string(to);
}

int64_t rangedEnv(const char* name, int64_t lo, int64_t hi) {
  int64_t v = env::getInt(name);
  if (v < lo || v > hi) fail(tuttiInvalidArgument, name, "=", v, ": use ", lo, "..", hi);
  return v;
}

class IbTransport : public Transport {
 public:
  const char* name() const override { return "ibverbs"; }
  void setup(const Context& ctx) override;
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override;
  std::vector<std::unique_ptr<Connection>> connect(std::span<const int> peers,
                                                   const Deadline& deadline) override;

  std::string why_;
  std::shared_ptr<IbDevice> dev_;
  std::shared_ptr<RegCache> reg_;

 private:
  std::string who(int p) const {
    return "rank " + std::to_string(p) + " (host " + peers_[p].hostname + ")";
  }
  int rank_ = -1;
  int nranks_ = 0;
  std::vector<PeerInfo> peers_;
  bootstrap::Store* store_ = nullptr;
  IbOptions opts_;
  mutable std::map<int, bool> peerHasDev_;
};

void IbTransport::setup(const Context& ctx) {
  TUTTI_CHECK_ARG(ctx.store, "ibverbs setup: no store");
  TUTTI_CHECK_ARG(ctx.rank >= 0 && ctx.rank < ctx.nranks && ctx.peers.size() == size_t(ctx.nranks),
                  "ibverbs setup: bad rank ", ctx.rank, " of ", ctx.nranks);
  rank_ = ctx.rank;
  nranks_ = ctx.nranks;
  peers_.assign(ctx.peers.begin(), ctx.peers.end());
  store_ = ctx.store;

  opts_.nqp = static_cast<int>(rangedEnv("TUTTI_IB_QPS_PER_PEER", 1, kMaxQps));
  opts_.slotBytes = static_cast<uint32_t>(rangedEnv("TUTTI_IB_CHUNK_BYTES", 4096, 512 * 1024));
  opts_.nslots = static_cast<uint32_t>(rangedEnv("TUTTI_IB_SLOTS", 2, 512));
  opts_.rndvBytes = static_cast<uint64_t>(rangedEnv("TUTTI_IB_RNDV_BYTES", 0, int64_t{1} << 40));
  opts_.timeout = static_cast<int>(rangedEnv("TUTTI_IB_TIMEOUT", 1, 31));
  opts_.retryCnt = static_cast<int>(rangedEnv("TUTTI_IB_RETRY_CNT", 0, 7));
  int64_t gidIndex = rangedEnv("TUTTI_IB_GID_INDEX", -1, 65535);
  std::string hca = env::getString("TUTTI_IB_HCA");

  int localIndex = 0;
  for (int r = 0; r < rank_; ++r) localIndex += peers_[r].hostId == peers_[rank_].hostId;
  dev_ = openIbDevice(hca, gidIndex, localIndex, &why_, ctx.preferredNics);
  if (dev_) {
    reg_ = std::make_shared<RegCache>(
        dev_, env::getBool("TUTTI_IB_REG_CACHE"),
        static_cast<size_t>(rangedEnv("TUTTI_IB_REG_CACHE_ENTRIES", 1, 1 << 20)));
    TUTTI_INFO(kTransport, "ibverbs: rank " << rank_ << " on " << dev_->describe() << "; "
                                            << opts_.nqp << " QP(s) per peer, " << opts_.nslots
                                            << " x " << opts_.slotBytes
                                            << " B slots, zero-copy from " << opts_.rndvBytes
                                            << " B; host memory only (no "
                                            << "GPUDirect RDMA registration)");
  } else {
    TUTTI_INFO(kTransport, "ibverbs: rank " << rank_ << " has no usable RDMA device: " << why_);
    if (env::getString("TUTTI_TRANSPORT") == "ibverbs")
      fail(tuttiUnsupported, "ibverbs: TUTTI_TRANSPORT=ibverbs but rank ", rank_,
           " has no usable RDMA device: ", why_);
  }
  store_->setString(devKey(rank_), dev_ ? "1" : "0");
}

bool IbTransport::canConnect(const PeerInfo& self, const PeerInfo& peer) const {
  if (!dev_) return false;
  (void)self;
  auto it = peerHasDev_.find(peer.rank);
  if (it != peerHasDev_.end()) return it->second;
  // Every rank published its answer in setup(), before the communicator's setup barrier.
  bool ok = store_->getString(devKey(peer.rank), Deadline(30)) == "1";
  peerHasDev_[peer.rank] = ok;
  return ok;
}

std::vector<std::unique_ptr<Connection>> IbTransport::connect(std::span<const int> peerSpan,
                                                              const Deadline& deadline) {
  if (!dev_) fail(tuttiUnsupported, "ibverbs: rank ", rank_, " cannot connect: ", why_);
  std::vector<int> peers(peerSpan.begin(), peerSpan.end());
  std::set<int> seen;
  for (int p : peers) {
    TUTTI_CHECK_ARG(p >= 0 && p < nranks_ && p != rank_, "ibverbs connect: bad peer rank ", p,
                    " (rank ", rank_, " of ", nranks_, ")");
    TUTTI_CHECK_ARG(seen.insert(p).second, "ibverbs connect: peer ", p, " listed twice");
  }
  // Publish every local half first, so peers listing each other in any order cannot deadlock.
  std::vector<std::unique_ptr<IbConnection>> conns;
  for (int p : peers) {
    conns.push_back(
        std::make_unique<IbConnection>(dev_, reg_, rank_, p, peers_[p].hostname, opts_));
    WireParams w = conns.back()->localParams();
    store_->set(qpKey(rank_, p), std::as_bytes(std::span<const WireParams>(&w, 1)));
  }
  auto wait = [&](const std::string& key, int p, const char* what) {
    try {
      return store_->get(key, deadline);
    } catch (const Error& e) {
      if (e.code() != tuttiTimeout) throw;
      fail(tuttiTimeout, "ibverbs: rank ", rank_, " timed out after ", deadline.totalSeconds(),
           " s waiting for ", who(p), " to ", what, " (", e.what(), ")");
    }
  };
  for (size_t i = 0; i < peers.size(); ++i) {
    int p = peers[i];
    auto bytes = wait(qpKey(p, rank_), p, "publish its queue pairs");
    WireParams w{};
    if (bytes.size() != sizeof w)
      fail(tuttiInvalidUsage, "ibverbs: ", who(p), " published ", bytes.size(),
           "-byte connection data, expected ", sizeof w, " (mixed tutti versions?)");
    std::memcpy(&w, bytes.data(), sizeof w);
    conns[i]->connectTo(w);
    store_->setString(readyKey(rank_, p), "1");
  }
  // Both QPs must be past RTR before either side sends.
  for (int p : peers) wait(readyKey(p, rank_), p, "bring its queue pairs up");
  std::vector<std::unique_ptr<Connection>> out;
  for (size_t i = 0; i < peers.size(); ++i) {
    TUTTI_INFO(kTransport, "ibverbs: rank " << rank_ << " connected to " << who(peers[i])
                                            << " with " << opts_.nqp << " RC QP(s)");
    out.push_back(std::move(conns[i]));
  }
  return out;
}

}  // namespace
}  // namespace ib

std::unique_ptr<Transport> makeIbTransport() { return std::make_unique<ib::IbTransport>(); }

namespace {
const ib::IbTransport& asIb(const Transport& t) {
  auto* ib = dynamic_cast<const ib::IbTransport*>(&t);
  TUTTI_CHECK_ARG(ib, "not an ibverbs transport");
  return *ib;
}
}  // namespace

std::string ibUnavailableReason(const Transport& t) { return asIb(t).why_; }

std::string ibDeviceDescription(const Transport& t) {
  const auto& ib = asIb(t);
  return ib.dev_ ? ib.dev_->describe() : "";
}

IbCounters ibCounters(const Transport& t, const Connection& c) {
  IbCounters out;
  const auto& ib = asIb(t);
  if (ib.reg_) {
    out.registrations = ib.reg_->registrations();
    out.cacheHits = ib.reg_->hits();
  }
  if (auto* ic = dynamic_cast<const ib::IbConnection*>(&c)) {
    out.zeroCopySends = ic->zeroCopySends();
    out.zeroCopyRecvs = ic->zeroCopyRecvs();
  }
  return out;
}

std::string ibProbe() {
  std::string why;
  try {
    auto dev = ib::openIbDevice(env::getString("TUTTI_IB_HCA"), -1, 0, &why);
    return dev ? "" : why;
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace tutti::transport
