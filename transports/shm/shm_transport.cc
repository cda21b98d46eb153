#include "shm_transport.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "host_budget.h"
#include "shm_connection.h"
#include "shm_layout.h"
#include "shm_os.h"
#include "shm_window.h"

namespace tutti::transport {
namespace {

using shm::ConnectionParts;
using shm::SegmentMode;

// What one side publishes about the segment + doorbell it created for one peer.
struct Descriptor {
  SegmentMode mode = SegmentMode::kMemfd;
  pid_t pid = 0;
  size_t bytes = 0;
  std::string seg;
  std::string bell;

  std::string encode() const {
    std::ostringstream os;
    os << shm::modeName(mode) << '\n' << pid << '\n' << bytes << '\n' << seg << '\n' << bell;
    return os.str();
  }
  static Descriptor decode(const std::string& text, const std::string& key) {
    std::istringstream is(text);
    Descriptor d;
    std::string mode, pid, bytes;
    if (!std::getline(is, mode) || !std::getline(is, pid) || !std::getline(is, bytes) ||
        !std::getline(is, d.seg) || !std::getline(is, d.bell))
      fail(tuttiInternalError, "shm: malformed descriptor under store key ", key);
    d.mode = mode == "file" ? SegmentMode::kFile : SegmentMode::kMemfd;
    d.pid = static_cast<pid_t>(std::stoll(pid));
    d.bytes = static_cast<size_t>(std::stoull(bytes));
    return d;
  }
};

struct Pair {
  int peer;
  SegmentMode mode;       // of the segment we created (attempt in progress)
  shm::Segment out;       // ours
  shm::Doorbell bell;     // ours
  shm::Segment in;        // the peer's
  shm::Bell peerBell;     // the peer's
  bool outAcked = false;  // the peer mapped ours
  bool inMapped = false;  // we mapped the peer's
  bool reserved = false;  // its segment's bytes are in the host budget
  std::string lastError;
  int inAttempt = 0;   // connectGrowing: the attempt whose segment of the peer we wait for
  int outAttempt = 0;  // connectGrowing: the attempt of ours whose acknowledgement we wait for
};

// Files a dead process left in TUTTI_SHM_DIR are removed once they are this old (seconds).
constexpr double kStaleNameAgeSec = 30;

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "shm"; }

  void setup(const Context& ctx) override {
    ctx_ = ctx;
    peers_.assign(ctx.peers.begin(), ctx.peers.end());
    ctx_.peers = peers_;
    TUTTI_CHECK_ARG(ctx.store != nullptr, "shm: setup without a store");
    std::string seg = env::getString("TUTTI_SHM_SEGMENT");
    if (seg == "file")
      mode_ = SegmentMode::kFile;
    else if (seg == "memfd" || seg == "auto")
      mode_ = SegmentMode::kMemfd;
    else
      fail(tuttiInvalidArgument, "TUTTI_SHM_SEGMENT=", seg, ": use auto, memfd or file");
    allowFallback_ = seg == "auto";
    dir_ = env::getString("TUTTI_SHM_DIR");
    // Names a process killed during its setup left (the others are unlinked by the peer or at
    // a failure): older than any setup still waiting for its peer's open, of a pid now gone.
    // Once a process (TUTTI_SHM_DIR is read once): not at every communicator's setup.
    static std::once_flag swept;
    std::call_once(swept, [this] {
      if (const int stale = shm::removeStaleNames(dir_, kStaleNameAgeSec); stale > 0)
        TUTTI_INFO(kTransport, "shm: removed " << stale << " file(s) in " << dir_
                                               << " that processes now gone left behind");
    });
    int64_t fifo = env::getInt("TUTTI_SHM_FIFO_BYTES");
    TUTTI_CHECK_ARG(fifo >= 4096, "TUTTI_SHM_FIFO_BYTES=", fifo, " is too small (minimum 4096)");
    TUTTI_CHECK_ARG(fifo <= shm::kMaxFifoBytes, "TUTTI_SHM_FIFO_BYTES=", fifo,
                    " is more than the limit ", shm::kMaxFifoBytes,
                    " (1 GiB; each rank takes one per direction per peer)");
    fifoBytes_ = static_cast<size_t>(fifo) / 4096 * 4096;
    cma_ = env::getBool("TUTTI_SHM_CMA");
    cmaThreshold_ =
        static_cast<size_t>(std::max<int64_t>(1, env::getInt("TUTTI_SHM_CMA_THRESHOLD")));
    // Measured now, before any segment of this communicator exists.
    budget_ = std::make_unique<shm::HostBudget>(ctx.store, peers_[ctx.rank].hostId,
                                                shm::readMemoryRoom());
  }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return !self.hostId.empty() && self.hostId == peer.hostId;
  }

  std::vector<std::unique_ptr<Connection>> connect(std::span<const int> peers,
                                                   const Deadline& deadline) override;
  std::vector<std::pair<int, std::unique_ptr<Connection>>> connectGrowing(
      std::span<const int> peers, const Deadline& deadline, const GrowFn& grow) override;

  std::unique_ptr<Window> createWindow(size_t bytes, const Deadline& deadline) override {
    return shm::createShmWindow(ctx_, shm::WindowConfig{mode_, dir_, bytes, budget_.get()},
                                deadline);
  }

 private:
  std::string key(int from, int to, int attempt) const {
    return "shm/" + std::to_string(from) + "->" + std::to_string(to) + "/" +
           std::to_string(attempt);
  }
  size_t segmentBytes() const { return shm::kCtrlBytes + fifoBytes_; }
  void createOut(Pair& p, SegmentMode mode, int attempt);
  // connect's first step for each peer: checks, then our segment for it, published.
  std::vector<Pair> startPairs(std::span<const int> peers);
  // Reads the peer's acknowledgement `ack` of our segment: done, a retry with a file (attempt
  // 1), or a failure (throws).
  void takeAck(Pair& p, const std::string& ack);
  std::unique_ptr<Connection> finish(Pair& p, bool& anyFile);
  void logConnected(size_t pairs, bool anyFile) const;
  void openIn(Pair& p, int attempt, const Deadline& deadline);
  std::string waitKey(const std::string& k, int peer, const Deadline& deadline);

  Context ctx_;
  std::vector<PeerInfo> peers_;
  SegmentMode mode_ = SegmentMode::kMemfd;
  bool allowFallback_ = true;
  std::string dir_;
  size_t fifoBytes_ = 0;
  bool cma_ = true;
  size_t cmaThreshold_ = 0;
  std::unique_ptr<shm::HostBudget> budget_;  // this host's segments of the communicator
};

std::string ShmTransport::waitKey(const std::string& k, int peer, const Deadline& deadline) {
  try {
    return ctx_.store->getString(k, deadline);
  } catch (const Error& e) {
    if (e.code() != tuttiTimeout) throw;
    const PeerInfo& pi = peers_.at(peer);
    fail(tuttiTimeout, "shm: rank ", ctx_.rank, " timed out after ", deadline.totalSeconds(),
         " s waiting for peer rank ", peer, " (host ", pi.hostname, ", pid ", pi.pid,
         ") to publish its shm endpoint (store key ", k, ")");
  }
}

void ShmTransport::createOut(Pair& p, SegmentMode mode, int attempt) {
  p.mode = mode;
  std::string stem = "shm-" + std::to_string(ctx_.rank) + "to" + std::to_string(p.peer);
  if (!p.reserved) {  // once per pair (a fallback attempt reuses the reservation)
    budget_->reserve(segmentBytes(), "a FIFO segment to rank " + std::to_string(p.peer),
                     "TUTTI_SHM_FIFO_BYTES");
    p.reserved = true;
  }
  if (mode == SegmentMode::kFile) {
    // The segment plus the FIFO doorbell; all pairs' segments were checked before.
    p.out = shm::Segment::create(mode, segmentBytes(), dir_, shm::uniqueName(stem),
                                 "TUTTI_SHM_FIFO_BYTES");
    p.bell = shm::Doorbell::create(mode, dir_, shm::uniqueName(stem + "-bell"));
  } else {
    p.out = shm::Segment::create(mode, segmentBytes(), dir_, shm::uniqueName(stem),
                                 "TUTTI_SHM_FIFO_BYTES");
    p.bell = shm::Doorbell::create(mode, dir_, "");
  }
  auto* ctrl = new (p.out.data()) shm::Ctrl{};
  ctrl->magic = shm::kSegmentMagic;
  ctrl->fifoBytes = fifoBytes_;
  ctrl->fromRank = ctx_.rank;
  ctrl->toRank = p.peer;
  Descriptor d{mode, ::getpid(), segmentBytes(), p.out.path(), p.bell.path()};
  ctx_.store->setString(key(ctx_.rank, p.peer, attempt), d.encode());
}

void ShmTransport::openIn(Pair& p, int attempt, const Deadline& deadline) {
  std::string k = key(p.peer, ctx_.rank, attempt);
  Descriptor d = Descriptor::decode(waitKey(k, p.peer, deadline), k);
  std::string ack = "ok";
  try {
    p.in = shm::Segment::open(d.seg, d.bytes);
    p.peerBell = shm::Bell::open(d.bell);
    auto* ctrl = reinterpret_cast<shm::Ctrl*>(p.in.data());
    if (ctrl->magic != shm::kSegmentMagic || ctrl->toRank != ctx_.rank ||
        ctrl->fromRank != p.peer || ctrl->fifoBytes + shm::kCtrlBytes > d.bytes)
      fail(tuttiInternalError, "shm: segment ", d.seg, " from rank ", p.peer, " has a bad header");
    p.inMapped = true;
    if (d.mode == SegmentMode::kFile) {  // both sides hold it now: remove the names
      ::unlink(d.seg.c_str());
      ::unlink(d.bell.c_str());
    }
  } catch (const Error& e) {
    if (d.mode == SegmentMode::kFile || !allowFallback_) {
      ctx_.store->setString(k + "/ack", std::string("fail ") + e.what());
      throw;
    }
    p.lastError = e.what();
    ack = std::string("retry ") + e.what();
  }
  ctx_.store->setString(k + "/ack", ack);
}

std::vector<Pair> ShmTransport::startPairs(std::span<const int> peers) {
  TUTTI_CHECK_ARG(ctx_.store != nullptr, "shm: connect before setup");
  std::vector<Pair> pairs;
  for (int peer : peers) {
    TUTTI_CHECK_ARG(peer >= 0 && peer < ctx_.nranks && peer != ctx_.rank, "shm: rank ", ctx_.rank,
                    " cannot connect to rank ", peer);
    Pair p{};
    p.peer = peer;
    p.mode = mode_;
    pairs.push_back(std::move(p));
  }
  if (mode_ == SegmentMode::kFile && !pairs.empty())
    shm::checkRoom(dir_, pairs.size() * segmentBytes(),
                   std::to_string(pairs.size()) + " FIFO segments of " +
                       std::to_string(segmentBytes()) + " bytes (TUTTI_SHM_FIFO_BYTES " +
                       std::to_string(fifoBytes_) + " + 4096)");
  // Attempt 0 in the configured mode (a memfd that cannot be made falls back to a file).
  for (auto& p : pairs) {
    SegmentMode m = mode_;
    if (m == SegmentMode::kMemfd && allowFallback_) {
      try {
        createOut(p, m, 0);
        continue;
      } catch (const Error& e) {
        TUTTI_INFO(kTransport,
                   "shm: memfd segment failed (" << e.what() << "), using files in " << dir_);
        m = SegmentMode::kFile;
      }
    }
    createOut(p, m, 0);
  }
  return pairs;
}

void ShmTransport::takeAck(Pair& p, const std::string& ack) {
  if (ack == "ok") {
    p.outAcked = true;
    p.out.release();  // the memfd's fd / the file's name are no longer needed
    p.bell.release();
  } else if (ack.rfind("retry", 0) == 0) {
    TUTTI_INFO(kTransport, "shm: rank " << p.peer << " could not open our memfd (" << ack.substr(6)
                                        << "), retrying with files in " << dir_);
  } else {
    fail(tuttiSystemError, "shm: rank ", p.peer, " could not open the segment of rank ", ctx_.rank,
         ": ", ack.substr(std::min<size_t>(ack.size(), 5)));
  }
}

std::unique_ptr<Connection> ShmTransport::finish(Pair& p, bool& anyFile) {
  if (!p.outAcked || !p.inMapped)
    fail(tuttiSystemError, "shm: rank ", ctx_.rank, " could not share segments with rank ", p.peer,
         ": ", p.lastError);
  anyFile = anyFile || p.mode == SegmentMode::kFile;
  ConnectionParts parts;
  parts.rank = ctx_.rank;
  parts.peer = peers_.at(p.peer);
  parts.out = std::move(p.out);
  parts.in = std::move(p.in);
  parts.bell = std::move(p.bell);
  parts.peerBell = std::move(p.peerBell);
  parts.cma = cma_;
  parts.cmaThreshold = cmaThreshold_;
  return std::make_unique<shm::ShmConnection>(std::move(parts));
}

void ShmTransport::logConnected(size_t pairs, bool anyFile) const {
  if (pairs == 0) return;
  TUTTI_INFO(kTransport,
             "shm: rank " << ctx_.rank << " connected to " << pairs << " peer(s): its segments are "
                          << (anyFile ? "named files in " + dir_ + " (unlinked once mapped)"
                                      : std::string("memfd via /proc/<pid>/fd"))
                          << ", FIFO " << fifoBytes_ << " B per direction, "
                          << (cma_ ? "single-copy process_vm_readv for messages >= " +
                                         std::to_string(cmaThreshold_) + " B"
                                   : std::string("single-copy off"))
                          << ", wake-ups by pipe doorbells + pidfd");
}

std::vector<std::unique_ptr<Connection>> ShmTransport::connect(std::span<const int> peers,
                                                               const Deadline& deadline) {
  std::vector<Pair> pairs = startPairs(peers);
  // Attempt 1 (named files) for pairs whose memfd could not be opened by the peer. Every
  // round publishes for all peers before waiting on any.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool any = attempt == 0 && !pairs.empty();
    if (attempt == 1)
      for (auto& p : pairs) {
        if (p.outAcked || p.mode != SegmentMode::kMemfd) continue;
        shm::checkRoom(dir_, segmentBytes(), "a fallback FIFO segment");
        createOut(p, SegmentMode::kFile, 1);
        any = true;
      }
    // Open the peers' segments (attempt 1 only where we asked for a retry).
    for (auto& p : pairs) {
      if (attempt == 0 || (!p.inMapped && !p.lastError.empty())) openIn(p, attempt, deadline);
    }
    // Collect the peers' acknowledgements for ours.
    for (auto& p : pairs) {
      if (p.outAcked || (attempt == 1 && p.mode == SegmentMode::kMemfd)) continue;
      takeAck(p, waitKey(key(ctx_.rank, p.peer, attempt) + "/ack", p.peer, deadline));
    }
    if (!any && attempt == 1) break;
  }
  std::vector<std::unique_ptr<Connection>> conns;
  bool anyFile = false;
  for (auto& p : pairs) conns.push_back(finish(p, anyFile));
  logConnected(pairs.size(), anyFile);
  return conns;
}

// The same steps as connect, each taken when the key it needs is there (one checkEach per
// pass), so that peers from grow() join while others are awaited.
std::vector<std::pair<int, std::unique_ptr<Connection>>> ShmTransport::connectGrowing(
    std::span<const int> peers, const Deadline& deadline, const GrowFn& grow) {
  if (!grow) return Transport::connectGrowing(peers, deadline, grow);  // the blocking connect
  std::vector<Pair> pairs = startPairs(peers);
  auto pause = std::chrono::microseconds(200);
  auto nextWatch = Clock::now() + std::chrono::milliseconds(250);
  for (;;) {
    // The keys each unfinished pair waits for: the peer's segment, then our acknowledgement.
    std::vector<std::string> keys;
    std::vector<std::pair<size_t, bool>> whose;  // pair index, is an acknowledgement
    for (size_t i = 0; i < pairs.size(); ++i) {
      const Pair& p = pairs[i];
      if (!p.inMapped && (p.inAttempt == 0 || !p.lastError.empty())) {
        keys.push_back(key(p.peer, ctx_.rank, p.inAttempt));
        whose.emplace_back(i, false);
      }
      if (!p.outAcked) {
        keys.push_back(key(ctx_.rank, p.peer, p.outAttempt) + "/ack");
        whose.emplace_back(i, true);
      }
    }
    std::vector<int> more = grow();
    if (keys.empty() && more.empty()) break;
    for (Pair& p : startPairs(more)) pairs.push_back(std::move(p));
    if (!more.empty()) continue;
    const std::vector<bool> there = ctx_.store->checkEach(keys);
    bool progressed = false;
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!there[k]) continue;
      progressed = true;
      Pair& p = pairs[whose[k].first];
      if (!whose[k].second) {
        const int attempt = p.inAttempt;
        p.lastError.clear();
        openIn(p, attempt, deadline);      // the key is there: no wait
        if (!p.inMapped) p.inAttempt = 1;  // asked for a retry: wait for its file
        continue;
      }
      takeAck(p, waitKey(keys[k], p.peer, deadline));
      if (p.outAcked) continue;
      if (p.outAttempt != 0 || p.mode != SegmentMode::kMemfd)
        fail(tuttiSystemError, "shm: rank ", p.peer, " asked rank ", ctx_.rank,
             " to retry a segment that was not a memfd");
      shm::checkRoom(dir_, segmentBytes(), "a fallback FIFO segment");  // a retry, as a file
      createOut(p, SegmentMode::kFile, 1);
      p.outAttempt = 1;
    }
    if (progressed) {
      pause = std::chrono::microseconds(200);
      continue;
    }
    if (ctx_.aborted && ctx_.aborted->load())
      fail(tuttiRemoteError, "shm: rank ", ctx_.rank, " connect aborted (communicator abort)");
    if (deadline.expired()) waitKey(keys.front(), pairs[whose.front().first].peer, deadline);
    if (ctx_.watchPeers && Clock::now() >= nextWatch) {
      ctx_.watchPeers();
      nextWatch = Clock::now() + std::chrono::milliseconds(250);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));  // as Store::get polls
  }
  std::vector<std::pair<int, std::unique_ptr<Connection>>> out;
  bool anyFile = false;
  for (auto& p : pairs) out.emplace_back(p.peer, finish(p, anyFile));
  logConnected(pairs.size(), anyFile);
  return out;
}

}  // namespace

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<ShmTransport>(); }

}  // namespace tutti::transport
