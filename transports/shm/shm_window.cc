#include "shm_window.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <new>
#include <sstream>

#include "common/calls_in_flight.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::transport::shm {

namespace {

constexpr uint64_t kWindowMagic = 0x6e69777474747574ull;  // "tuttwin"
constexpr size_t kWindowCtrlBytes = 4096;
// Up to this many bytes of peers' windows are mapped with MAP_POPULATE (see the setup).
constexpr uint64_t kPopulatePeersBytes = uint64_t{256} << 20;
constexpr long kSleepSliceNs = 10'000'000;  // re-check peer / abort / deadline every 10 ms

static_assert(sizeof(WindowCtrl) <= kWindowCtrlBytes);

// Pause-spinning before the policy's polling: 2000 polls (tens of microseconds: a pause costs
// 10-40 ns depending on the CPU) when every rank has a core, a handful when ranks outnumber
// cores: the peer we wait for may be queued behind us on this core, and every pause is time
// it cannot run.
constexpr int kPurePolls = 2000;
constexpr int kPurePollsYielding = 16;

bool reached(uint32_t current, uint32_t wanted) {
  return static_cast<int32_t>(current - wanted) >= 0;
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

class ShmWindow final : public Window {
 public:
  ShmWindow(int rank, std::span<const PeerInfo> peers, const std::atomic<bool>* aborted,
            size_t bytes, std::vector<Segment> segments)
      : rank_(rank),
        peers_(peers.begin(), peers.end()),
        aborted_(aborted),
        bytes_(bytes),
        segments_(std::move(segments)) {
    for (const PeerInfo& p : peers_)
      procs_.push_back(p.rank == rank_ ? nullptr : std::make_unique<PeerProcess>(p.pid));
    seen_.assign(peers_.size(), 0);
  }

  size_t bytes() const override { return bytes_; }
  std::byte* base(int rank) const override {
    TUTTI_ASSERT(rank >= 0 && static_cast<size_t>(rank) < segments_.size());
    return segments_[rank].data() + kWindowCtrlBytes;
  }

  void post(uint32_t phase) override {
    ctrl(rank_)->phase.store(phase, std::memory_order_release);
    // The wake-up check needs a full fence (below), which would stall here until this store
    // and the window writes before it have reached the peers' caches: a cross-core round trip
    // right after the post, on every call. Deferred to flushPosts(), it runs after this rank's
    // next wait began or at the end of the call, when the stores have long drained.
    wakePending_ = true;
  }

  void flushPosts() override {
    if (!wakePending_) return;
    wakePending_ = false;
    WindowCtrl* c = ctrl(rank_);
    // Dekker with the waiter (waiters++ then word load): one of us sees the other's store.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (c->waiters.load(std::memory_order_relaxed) != 0) wakeAll(c);
  }

  void markFailed() override {
    WindowCtrl* c = ctrl(rank_);
    if (c->failed.exchange(1, std::memory_order_seq_cst) != 0) return;
    // Waiters sleep on the phase or a line's word: wake them all so that they see the flag.
    wakeAll(c);
  }

  std::byte* linePayload(int rank, int slot) const override {
    TUTTI_ASSERT(slot >= 0 && slot < kLineSlots);
    return ctrl(rank)->lines[slot].payload;
  }
  void postLine(int slot, uint32_t seq) override {
    ctrl(rank_)->lines[slot].seq.store(seq, std::memory_order_release);
    wakePending_ = true;  // as post()
  }
  void waitLine(int rank, int slot, uint32_t seq, const WaitPolicy& policy) override {
    std::atomic<uint32_t>& word = ctrl(rank)->lines[slot].seq;
    if (reached(word.load(std::memory_order_acquire), seq)) return;
    // The wake-up check (flushPosts' fence) waits until this rank's line has reached the
    // peers: run right after postLine it would stall the poll by a cross-core round trip, on
    // every call. A peer sleeps only after polling for spinUs; it is woken once the pure polls
    // are over (waitFor), or at the end of this call.
    waitFor(rank, word, seq, policy, [slot, seq](uint32_t cur) {
      return "line slot " + std::to_string(slot) + " sequence " + std::to_string(seq) +
             ", it holds " + std::to_string(cur);
    });
  }

  void setTag(int slot, const Tag& t) override {
    TUTTI_ASSERT(slot >= 0 && slot < kTagSlots);
    WindowCtrl* c = ctrl(rank_);
    const uint32_t seq = c->tagSeq[slot].load(std::memory_order_relaxed);
    c->tagSeq[slot].store(seq + 1, std::memory_order_relaxed);  // odd: being written
    std::atomic_thread_fence(std::memory_order_release);
    c->tag[slot][0].store(t[0], std::memory_order_relaxed);
    c->tag[slot][1].store(t[1], std::memory_order_relaxed);
    c->tagSeq[slot].store(seq + 2, std::memory_order_release);
  }
  bool tag(int rank, int slot, Tag* out) const override {
    TUTTI_ASSERT(slot >= 0 && slot < kTagSlots);
    const WindowCtrl* c = ctrl(rank);
    const uint32_t before = c->tagSeq[slot].load(std::memory_order_acquire);
    if (before % 2 != 0) return false;
    *out = {c->tag[slot][0].load(std::memory_order_relaxed),
            c->tag[slot][1].load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    return c->tagSeq[slot].load(std::memory_order_relaxed) == before;
  }

  void wait(int rank, uint32_t phase, const WaitPolicy& policy) override {
    // The last value seen from this peer answers waits for earlier phases without touching
    // its counter's cache line (which it has written since: a miss). A call's phase-0 wait
    // in a stream of calls is one of those.
    if (reached(seen_[rank], phase)) return;
    WindowCtrl* c = ctrl(rank);
    if (reached(seen_[rank] = c->phase.load(std::memory_order_acquire), phase)) return;
    // About to wait: a peer may sleep on this rank's last post and be the one we wait for.
    flushPosts();
    seen_[rank] = waitFor(rank, c->phase, phase, policy, [phase](uint32_t cur) {
      return "phase " + std::to_string(phase) + ", it reached " + std::to_string(cur);
    });
  }

 private:
  // Until `word` (rank's phase or line sequence) reaches target: polls, then yields or
  // pause-spins for policy.spinUs, then sleeps on the word, checking the peer's process, its
  // failed flag, the abort flag and the timeout. Returns the value reached; `what(current)`
  // says what was awaited, for errors.
  template <class What>
  uint32_t waitFor(int rank, std::atomic<uint32_t>& word, uint32_t target, const WaitPolicy& policy,
                   What what) {
    // A peer on another core usually posts within a microsecond or two: poll without
    // syscalls first, then yield the core between polls (ranks often share cores).
    const bool yield = CallsInFlight::shouldYield(policy.yield, policy.yieldAboveCalls);
    const int purePolls = yield ? kPurePollsYielding : kPurePolls;
    uint32_t cur = 0;
    for (int i = 0; i < purePolls; ++i) {
      cpuRelax();
      if (reached(cur = word.load(std::memory_order_acquire), target)) return cur;
    }
    flushPosts();  // (done already by wait(); waitLine's peers may sleep on its line)
    double start = nowSeconds();
    double spinEnd = start + policy.spinUs * 1e-6;
    while (nowSeconds() < spinEnd) {
      if (yield)
        sched_yield();  // more ranks than cores: give the core to the rank we wait for
      else
        cpuRelax();
      if (reached(cur = word.load(std::memory_order_acquire), target)) return cur;
    }
    WindowCtrl* c = ctrl(rank);
    uint32_t last = word.load(std::memory_order_acquire);
    double lastChange = nowSeconds();
    for (;;) {
      c->waiters.fetch_add(1, std::memory_order_seq_cst);
      cur = word.load(std::memory_order_seq_cst);
      if (!reached(cur, target)) {
        timespec ts{0, kSleepSliceNs};
        futex(&word, FUTEX_WAIT, cur, &ts);
      }
      c->waiters.fetch_sub(1, std::memory_order_relaxed);
      cur = word.load(std::memory_order_acquire);
      if (reached(cur, target)) return cur;
      double now = nowSeconds();
      if (cur != last) {
        last = cur;
        lastChange = now;
      }
      if (aborted_ && aborted_->load(std::memory_order_relaxed))
        fail(tuttiRemoteError, "shm window: rank ", rank_,
             ": communicator aborted while waiting for ", describe(rank));
      // A peer that gave up and then exited is one that gave up: the flag first.
      if (c->failed.load(std::memory_order_acquire) != 0)
        throw PeerClosed("shm window: rank " + std::to_string(rank_) + ": peer " + describe(rank) +
                         " gave up (its call failed or it was aborted) while this rank waited "
                         "for it (" +
                         what(cur) + ")");
      if (procs_[rank] && procs_[rank]->exited())
        fail(tuttiRemoteError, "shm window: rank ", rank_, ": peer ", describe(rank),
             " died while this rank waited for it (", what(cur), ")");
      if (policy.onStall && *policy.onStall && now - lastChange >= policy.kStallReportSec)
        (*policy.onStall)(rank, "window " + what(cur));
      if (now - lastChange > policy.timeoutSec)
        fail(tuttiTimeout, "shm window: rank ", rank_, ": no progress for ", policy.timeoutSec,
             " s (the communicator's timeout: TUTTI_TIMEOUT, config, tuttiCommSetTimeout) waiting "
             "for ",
             describe(rank), " (", what(cur), "): mismatched collective calls or a stuck rank");
    }
  }

  void wakeAll(WindowCtrl* c) {
    futex(&c->phase, FUTEX_WAKE, INT_MAX, nullptr);
    for (LineSlot& line : c->lines) futex(&line.seq, FUTEX_WAKE, INT_MAX, nullptr);
  }

  WindowCtrl* ctrl(int rank) const { return reinterpret_cast<WindowCtrl*>(segments_[rank].data()); }
  std::string describe(int rank) const {
    const PeerInfo& p = peers_[rank];
    return "rank " + std::to_string(rank) + " (host " + p.hostname + ", pid " +
           std::to_string(p.pid) + ")";
  }

  int rank_;
  std::vector<PeerInfo> peers_;
  const std::atomic<bool>* aborted_;
  size_t bytes_;
  std::vector<Segment> segments_;
  std::vector<std::unique_ptr<PeerProcess>> procs_;
  std::vector<uint32_t> seen_;  // by rank: the last phase read from its counter
  bool wakePending_ = false;    // posted since the last flushPosts()
};

std::string key(int rank) { return "win/" + std::to_string(rank); }

// Every rank's `mine` (text), by rank: through ctx.allGather, else through the store
// (nranks - 1 GETs per rank).
std::vector<std::string> gatherText(const Context& ctx, const std::string& tag,
                                    const std::string& mine, const Deadline& deadline) {
  std::vector<std::string> all(ctx.nranks);
  if (ctx.allGather) {
    auto entries = ctx.allGather(tag, std::as_bytes(std::span(mine.data(), mine.size())), deadline);
    for (int r = 0; r < ctx.nranks; ++r)
      all[r].assign(reinterpret_cast<const char*>(entries[r].data()), entries[r].size());
    return all;
  }
  ctx.store->setString(key(ctx.rank) + "/" + tag, mine);
  for (int r = 0; r < ctx.nranks; ++r) {
    if (r == ctx.rank) {
      all[r] = mine;
      continue;
    }
    try {
      all[r] = ctx.store->getString(key(r) + "/" + tag, deadline);
    } catch (const Error& e) {
      if (e.code() != tuttiTimeout) throw;
      // A rank late to its first call with this window: name it.
      fail(tuttiTimeout, "shm window: rank ", r, " did not publish its window's ", tag,
           " in time (", e.what(), ")");
    }
  }
  return all;
}

}  // namespace

std::unique_ptr<Window> createShmWindow(const Context& ctx, const WindowConfig& cfg,
                                        const Deadline& deadline) {
  TUTTI_CHECK_ARG(ctx.store != nullptr || ctx.allGather, "shm window: no store");
  const PeerInfo& self = ctx.peers[ctx.rank];
  for (const PeerInfo& p : ctx.peers)
    if (self.hostId.empty() || p.hostId != self.hostId) return nullptr;  // same on every rank

  const size_t region = (cfg.bytes + 4095) / 4096 * 4096;
  const size_t segBytes = kWindowCtrlBytes + region;
  std::vector<Segment> segs(ctx.nranks);
  std::string problem;
  try {
    if (cfg.budget) cfg.budget->reserve(segBytes, "its window", "TUTTI_SHM_WINDOW_BYTES");
    segs[ctx.rank] =
        Segment::create(cfg.mode, segBytes, cfg.dir, uniqueName("win" + std::to_string(ctx.rank)),
                        "TUTTI_SHM_WINDOW_BYTES");
    auto* c = new (segs[ctx.rank].data()) WindowCtrl{};
    c->magic = kWindowMagic;
    c->bytes = region;
    c->rank = ctx.rank;
  } catch (const Error& e) {
    problem = e.what();
  }
  auto paths = gatherText(ctx, "segment",
                          problem.empty() ? segs[ctx.rank].path() : "fail " + problem, deadline);
  // Peers' windows are mapped page by page at first touch once they add up to more than
  // kPopulatePeersBytes: populating every peer's window costs each rank n x window pages of
  // page tables, n^2 on the host (at 512 ranks and 4 MiB windows, 537 M page-table entries:
  // the setup took more than a minute on 2 cores).
  const bool populate = static_cast<uint64_t>(ctx.nranks - 1) * segBytes <= kPopulatePeersBytes;
  for (int r = 0; r < ctx.nranks; ++r) {
    if (r == ctx.rank || !problem.empty()) continue;
    const std::string& path = paths[r];
    if (path.rfind("fail ", 0) == 0) {
      problem = "rank " + std::to_string(r) + ": " + path.substr(5);
      continue;
    }
    try {
      segs[r] = Segment::open(path, segBytes, populate);
      auto* c = reinterpret_cast<const WindowCtrl*>(segs[r].data());
      if (c->magic != kWindowMagic || c->rank != r || c->bytes != region)
        fail(tuttiInternalError, "shm window: segment ", path, " of rank ", r, " has a bad header");
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  // Everyone mapped everyone (or failed) before the creators close their fds / names.
  auto states = gatherText(ctx, "mapped", problem.empty() ? "ok" : "fail " + problem, deadline);
  for (const std::string& st : states)
    if (st != "ok" && problem.empty()) problem = st.substr(std::min<size_t>(st.size(), 5));
  if (!segs[ctx.rank].path().empty()) segs[ctx.rank].release();
  if (!problem.empty()) {
    TUTTI_INFO(kTransport, "shm window of " << region << " bytes per rank unavailable (" << problem
                                            << "): algorithms that need it are off");
    return nullptr;
  }
  TUTTI_INFO(kTransport,
             "shm window: " << region << " bytes per rank, " << ctx.nranks << " ranks mapped");
  return std::make_unique<ShmWindow>(ctx.rank, ctx.peers, ctx.aborted, region, std::move(segs));
}

}  // namespace tutti::transport::shm
