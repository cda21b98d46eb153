#include "exec/executor.h"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>

#include "common/calls_in_flight.h"
#include "common/clock.h"
#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "common/error.h"
#include "common/log.h"
#include "common/spin_gate.h"
#include "reduce/reduce.h"
#include "window_call.h"

namespace tutti::exec {

namespace {

using detail::kReduceBlockBytes;
using detail::WindowUse;

std::byte* addressOf(std::span<std::byte* const> buffers, const Slice& s, const WindowUse& w) {
  if (s.buf == Buf::kWindow) {
    TUTTI_ASSERT(w.window != nullptr && w.base + s.offset + s.bytes <= w.window->bytes());
    return w.window->base(s.rank) + w.base + s.offset;
  }
  size_t index = static_cast<size_t>(s.buf);
  TUTTI_ASSERT(index < buffers.size());
  if (s.bytes == 0) return buffers[index];  // may be null for empty buffers
  TUTTI_ASSERT(buffers[index] != nullptr);
  return buffers[index] + s.offset;
}

// Reduces incoming bytes into dst = src (op) incoming as they arrive. Transports may split
// a message at any byte; partial elements are carried to the next call.
class ReducingSink {
 public:
  ReducingSink(std::byte* dst, const std::byte* src, tuttiDataType_t dtype, tuttiRedOp_t op)
      : dst_(dst), src_(src), dtype_(dtype), op_(op), esize_(dtypeSize(dtype)) {}

  void consume(size_t offset, std::span<const std::byte> data) {
    TUTTI_ASSERT(offset == done_ + carried_);
    size_t pos = 0;
    if (carried_ > 0) {  // complete the partial element first
      size_t need = esize_ - carried_;
      size_t take = std::min(need, data.size());
      std::memcpy(carry_ + carried_, data.data(), take);
      carried_ += take;
      pos += take;
      if (carried_ < esize_) return;
      reduce::reduce(dst_ + done_, src_ + done_, carry_, 1, dtype_, op_);
      done_ += esize_;
      carried_ = 0;
    }
    size_t whole = (data.size() - pos) / esize_;
    if (whole > 0) {
      reduce::reduce(dst_ + done_, src_ + done_, data.data() + pos, whole, dtype_, op_);
      done_ += whole * esize_;
      pos += whole * esize_;
    }
    size_t rest = data.size() - pos;
    if (rest > 0) {
      std::memcpy(carry_, data.data() + pos, rest);
      carried_ = rest;
    }
  }

 private:
  std::byte* dst_;
  const std::byte* src_;
  tuttiDataType_t dtype_;
  tuttiRedOp_t op_;
  size_t esize_;
  size_t done_ = 0;
  size_t carried_ = 0;
  std::byte carry_[16];
};

struct PeerQueues {
  std::deque<const Op*> sends;
  std::deque<const Op*> recvs;
  const Op* activeSend = nullptr;
  const Op* activeRecv = nullptr;
  std::unique_ptr<ReducingSink> sink;
  size_t sendDone = 0;
  size_t recvDone = 0;
};

class RoundRunner {
 public:
  RoundRunner(const Schedule& s, std::span<std::byte* const> buffers,
              std::span<transport::Connection* const> conns, const ExecOptions& o,
              const WindowUse& w)
      : schedule_(s), buffers_(buffers), conns_(conns), options_(o), win_(w) {}

  void run(const Round& round) {
    for (const Op& op : round.ops) {
      if (op.type != OpType::kWait) continue;
      blamingPeer(op.peer, [&] {
        win_.window->wait(
            op.peer, win_.target(op.phase),
            {options_.spinUs, options_.spinYield, options_.timeoutSec, &options_.onStall});
      });
      if (op.phase >= 1 && options_.windowTags) detail::checkPeerCall(win_, op.peer, options_);
    }
    for (size_t i = 0; i < round.ops.size(); ++i) {
      const Op& op = round.ops[i];
      switch (op.type) {
        case OpType::kCopy:
          runCopy(op);
          break;
        case OpType::kReduce:
          i += runReduceChain(round.ops, i) - 1;
          break;
        case OpType::kMix:
          runMix(op);
          break;
        case OpType::kPost:
          if (win_.skipFinalPost && op.phase == schedule_.windowPhases) break;
          win_.window->post(win_.epoch + op.phase);
          break;
        case OpType::kWait:
          break;
        case OpType::kSend:
          queueOf(op.peer).sends.push_back(&op);
          break;
        case OpType::kRecv:
        case OpType::kRecvReduce:
          queueOf(op.peer).recvs.push_back(&op);
          break;
      }
    }
    if (queues_.empty()) return;
    driveTransfers();
    queues_.clear();
  }

  // A round of transfers that grows while it runs (executeOpenRound).
  void runOpen(std::deque<Op>& ops, std::vector<std::byte*>& buffers, const OpenRoundSource& more,
               int wakeFd) {
    open_ = &ops;
    openWakeFd_ = wakeFd;
    openBuffers_ = &buffers;
    openMore_ = &more;
    queueOpenOps();
    driveTransfers();
    queues_.clear();
  }

 private:
  // Queues the open round's ops not queued yet (their buffers may have grown too).
  void queueOpenOps() {
    buffers_ = std::span<std::byte* const>(*openBuffers_);
    for (; openQueued_ < open_->size(); ++openQueued_) {
      const Op& op = (*open_)[openQueued_];
      TUTTI_ASSERT(op.type == OpType::kSend || op.type == OpType::kRecv);
      (op.type == OpType::kSend ? queueOf(op.peer).sends : queueOf(op.peer).recvs).push_back(&op);
    }
  }
  // Asks the open round's source for more ops; true when it added some.
  bool pullOpenOps() {
    if (openMore_ == nullptr || !(*openMore_)(*open_, *openBuffers_)) return false;
    queueOpenOps();
    return true;
  }

  PeerQueues& queueOf(int peer) {
    TUTTI_ASSERT(peer >= 0 && static_cast<size_t>(peer) < conns_.size() && conns_[peer] != nullptr);
    return queues_[peer];
  }

  void runCopy(const Op& op) {
    TUTTI_ASSERT(op.src.bytes == op.dst.bytes);
    if (op.dst.bytes == 0) return;
    std::byte* dst = addressOf(buffers_, op.dst, win_);
    const std::byte* src = addressOf(buffers_, op.src, win_);
    copyBytes(dst, src, op.dst.bytes);
  }

  // Runs ops[first] and the kReduce ops after it that accumulate into the same destination
  // (dst = dst op x), block by block so the destination stays in cache; returns how many.
  size_t runReduceChain(const std::vector<Op>& ops, size_t first) {
    const Op& head = ops[first];
    const size_t n = detail::reduceChainLength(ops, first);
    if (n == 1 || head.dst.bytes <= kReduceBlockBytes) {
      for (size_t k = 0; k < n; ++k) runReduce(ops[first + k]);
      return n;
    }
    size_t esize = dtypeSize(schedule_.dtype);
    size_t block = kReduceBlockBytes / esize * esize;
    for (size_t off = 0; off < head.dst.bytes; off += block) {
      size_t len = std::min(block, head.dst.bytes - off);
      for (size_t k = 0; k < n; ++k) {
        const Op& o = ops[first + k];
        reduce::reduce(
            addressOf(buffers_, o.dst, win_) + off, addressOf(buffers_, o.src, win_) + off,
            addressOf(buffers_, o.src2, win_) + off, len / esize, schedule_.dtype, schedule_.op);
      }
    }
    return n;
  }

  void runMix(const Op& op) {
    TUTTI_ASSERT(op.mix < schedule_.mixes.size());
    const Mix& m = schedule_.mixes[op.mix];
    if (op.dst.bytes == 0) return;
    mixSrcs_.clear();
    for (const Slice& s : m.srcs) {
      TUTTI_ASSERT(s.bytes == op.dst.bytes);
      mixSrcs_.push_back(addressOf(buffers_, s, win_));
    }
    reduce::weightedSum(addressOf(buffers_, op.dst, win_), mixSrcs_, m.weights,
                        op.dst.bytes / dtypeSize(schedule_.dtype), schedule_.dtype);
  }

  void runReduce(const Op& op) {
    size_t esize = dtypeSize(schedule_.dtype);
    TUTTI_ASSERT(op.src.bytes == op.dst.bytes && op.src2.bytes == op.dst.bytes);
    if (op.dst.bytes == 0) return;
    reduce::reduce(addressOf(buffers_, op.dst, win_), addressOf(buffers_, op.src, win_),
                   addressOf(buffers_, op.src2, win_), op.dst.bytes / esize, schedule_.dtype,
                   schedule_.op);
  }

  void startNext(int peer, PeerQueues& q) {
    transport::Connection& c = *conns_[peer];
    if (q.activeSend == nullptr && !q.sends.empty()) {
      q.activeSend = q.sends.front();
      q.sends.pop_front();
      q.sendDone = 0;
      const Slice& s = q.activeSend->src;
      c.startSend({addressOf(buffers_, s, win_), s.bytes}, options_.callTag);
    }
    if (q.activeRecv == nullptr && !q.recvs.empty()) {
      q.activeRecv = q.recvs.front();
      q.recvs.pop_front();
      q.recvDone = 0;
      const Op& op = *q.activeRecv;
      transport::RecvTarget target;
      target.bytes = op.dst.bytes;
      target.tag = options_.callTag;
      if (op.type == OpType::kRecv) {
        target.direct = addressOf(buffers_, op.dst, win_);
        std::byte* base = target.direct;
        target.consume = [base](size_t off, std::span<const std::byte> d) {
          copyBytes(base + off, d.data(), d.size());
        };
      } else {
        TUTTI_ASSERT(op.src.bytes == op.dst.bytes);
        q.sink = std::make_unique<ReducingSink>(addressOf(buffers_, op.dst, win_),
                                                addressOf(buffers_, op.src, win_), schedule_.dtype,
                                                schedule_.op);
        ReducingSink* sink = q.sink.get();
        target.consume = [sink](size_t off, std::span<const std::byte> d) {
          sink->consume(off, d);
        };
      }
      c.startRecv(std::move(target));
    }
  }

  // Advances every peer once; returns true if anything moved.
  bool progressAll(bool& allDone) {
    bool moved = false;
    allDone = true;
    for (auto& [peer, q] : queues_) {
      blamingPeer(peer, [&] { progressPeer(peer, q, moved); });
      if (q.activeSend || q.activeRecv || !q.sends.empty() || !q.recvs.empty()) allDone = false;
    }
    return moved;
  }

  void progressPeer(int peer, PeerQueues& q, bool& moved) {
    {
      transport::Connection& c = *conns_[peer];
      for (;;) {
        startNext(peer, q);
        bool finishedOne = false;
        if (q.activeSend != nullptr) {
          size_t done = c.progressSend();
          if (done != q.sendDone) moved = true;
          q.sendDone = done;
          if (done == q.activeSend->src.bytes) {
            q.activeSend = nullptr;
            finishedOne = true;
            moved = true;
          }
        }
        if (q.activeRecv != nullptr) {
          size_t done = c.progressRecv();
          if (done != q.recvDone) moved = true;
          q.recvDone = done;
          if (done == q.activeRecv->dst.bytes) {
            q.activeRecv = nullptr;
            q.sink.reset();
            finishedOne = true;
            moved = true;
          }
        }
        if (!finishedOne) break;
      }
    }
  }

  // What a peer's queue waits for: "receive 0/1328 B", "send 4096/8192 B" or both.
  static std::string stepOf(const PeerQueues& q) {
    std::string s;
    if (q.activeRecv)
      s = "receive " + std::to_string(q.recvDone) + "/" + std::to_string(q.activeRecv->dst.bytes) +
          " B";
    if (q.activeSend)
      s += (s.empty() ? "send " : ", send ") + std::to_string(q.sendDone) + "/" +
           std::to_string(q.activeSend->src.bytes) + " B";
    return s;
  }

  std::string pendingPeers() {
    std::ostringstream os;
    bool first = true;
    for (auto& [peer, q] : queues_) {
      if (!(q.activeSend || q.activeRecv || !q.sends.empty() || !q.recvs.empty())) continue;
      os << (first ? "" : ", ")
         << (options_.describePeer ? options_.describePeer(peer) : "rank " + std::to_string(peer));
      if (q.activeRecv) os << " (receive " << q.recvDone << "/" << q.activeRecv->dst.bytes << " B)";
      if (q.activeSend) os << " (send " << q.sendDone << "/" << q.activeSend->src.bytes << " B)";
      first = false;
    }
    return os.str();
  }

  void checkAbort() {
    if (options_.aborted && options_.aborted->load(std::memory_order_relaxed))
      fail(tuttiRemoteError, "rank ", options_.rank, ": communicator aborted while waiting for ",
           pendingPeers());
  }

  void sleepOnce(double msLeft) {
    // A peer may sleep on one of this call's window posts (deferred wake-ups, window.h).
    if (win_.window) win_.window->flushPosts();
    fds_.clear();
    bool canSleep = true;
    for (auto& [peer, q] : queues_) {
      if (!(q.activeSend || q.activeRecv)) continue;
      blamingPeer(peer, [&] {
        if (!conns_[peer]->prepareToSleep()) canSleep = false;
        conns_[peer]->collectWaitFds(fds_);
      });
    }
    if (canSleep) {
      pollfds_.clear();
      for (int fd : fds_) pollfds_.push_back({fd, POLLIN, 0});
      if (options_.abortFd >= 0) pollfds_.push_back({options_.abortFd, POLLIN, 0});
      if (openWakeFd_ >= 0) pollfds_.push_back({openWakeFd_, POLLIN, 0});
      int ms = static_cast<int>(std::clamp(msLeft, 1.0, 1000.0));
      int rc = ::poll(pollfds_.data(), pollfds_.size(), ms);
      if (rc < 0 && errno != EINTR) throwSystemError("poll in executor");
    }
    for (auto& [peer, q] : queues_) {
      if (!(q.activeSend || q.activeRecv)) continue;
      blamingPeer(peer, [&] { conns_[peer]->afterSleep(); });
    }
  }

  // Whether a transfer in progress is with a peer over memory this process shares.
  bool waitsOnSharedMemory() const {
    for (const auto& [peer, q] : queues_)
      if ((q.activeSend || q.activeRecv) && conns_[peer]->sharesMemory()) return true;
    return false;
  }

  void driveTransfers() {
    double lastProgress = nowSeconds();
    double spinSec = options_.spinUs * 1e-6;
    for (;;) {
      bool allDone = false;
      if (pullOpenOps()) allDone = false, lastProgress = nowSeconds();
      if (progressAll(allDone)) lastProgress = nowSeconds();
      if (allDone && !pullOpenOps()) return;
      checkAbort();
      double now = nowSeconds();
      double idle = now - lastProgress;
      if (idle > options_.timeoutSec)
        fail(tuttiTimeout, "rank ", options_.rank, ": no progress for ", options_.timeoutSec,
             " s (the communicator's timeout: TUTTI_TIMEOUT, config, tuttiCommSetTimeout) waiting "
             "for ",
             pendingPeers());
      if (idle >= transport::WaitPolicy::kStallReportSec && options_.onStall)
        for (auto& [peer, q] : queues_)
          if (q.activeSend || q.activeRecv) options_.onStall(peer, stepOf(q));
      // On a host stream's worker with nobody waiting, a network link's messages are not worth
      // the caller's core (common/spin_gate.h); a peer over shared memory answers within it.
      if (idle < spinSec && (SpinGate::open() || waitsOnSharedMemory())) {
        // More ranks than cores: give the core to the peer we are waiting for; otherwise
        // every rank has its own core and a yield would only hand it to other processes.
        if (CallsInFlight::shouldYield(options_.spinYield, options_.yieldAboveCalls))
          sched_yield();
        else
          cpuRelax();
        continue;
      }
      sleepOnce((options_.timeoutSec - idle) * 1000.0);
    }
  }

  const Schedule& schedule_;
  std::span<std::byte* const> buffers_;
  std::span<transport::Connection* const> conns_;
  const ExecOptions& options_;
  WindowUse win_;
  std::map<int, PeerQueues> queues_;
  // An open round (runOpen): its ops, how many are queued, its buffers and its source.
  std::deque<Op>* open_ = nullptr;
  size_t openQueued_ = 0;
  std::vector<std::byte*>* openBuffers_ = nullptr;
  const OpenRoundSource* openMore_ = nullptr;
  int openWakeFd_ = -1;
  std::vector<int> fds_;
  std::vector<pollfd> pollfds_;
  std::vector<const void*> mixSrcs_;
};

// The EXEC line of one executed schedule: what it ran and how long it took.
void traceExecuted(const Schedule& s, double seconds) {
  size_t ops = 0, sends = 0, sendBytes = 0, recvs = 0, recvBytes = 0, reducing = 0, copies = 0,
         copyBytes = 0, reduces = 0, reduceBytes = 0, waits = 0, posts = 0;
  for (const Round& r : s.rounds) {
    for (const Op& op : r.ops) {
      ++ops;
      switch (op.type) {
        case OpType::kSend:
          ++sends;
          sendBytes += op.src.bytes;
          break;
        case OpType::kRecvReduce:
          ++reducing;
          [[fallthrough]];
        case OpType::kRecv:
          ++recvs;
          recvBytes += op.dst.bytes;
          break;
        case OpType::kCopy:
          ++copies;
          copyBytes += op.dst.bytes;
          break;
        case OpType::kReduce:
        case OpType::kMix:
          ++reduces;
          reduceBytes += op.dst.bytes;
          break;
        case OpType::kWait:
          ++waits;
          break;
        case OpType::kPost:
          ++posts;
          break;
      }
    }
  }
  char reduction[64] = "";
  if (reducing + reduces > 0)
    snprintf(reduction, sizeof(reduction), " (%s %s)", dtypeName(s.dtype), opName(s.op));
  char text[320];
  snprintf(
      text, sizeof(text),
      "executed %s%s: %zu rounds, %zu ops: sends %zu (%zu B), recvs %zu (%zu B, %zu reducing), "
      "copies %zu (%zu B), reduces %zu (%zu B), window waits %zu, posts %zu; %.2f us",
      s.algorithm.empty() ? "?" : s.algorithm.c_str(), reduction, s.rounds.size(), ops, sends,
      sendBytes, recvs, recvBytes, reducing, copies, copyBytes, reduces, reduceBytes, waits, posts,
      seconds * 1e6);
  log::write(log::Level::kTrace, log::Subsys::kExec, text);
}

}  // namespace

void execute(const Schedule& schedule, std::span<std::byte* const> buffers,
             std::span<transport::Connection* const> connections, const ExecOptions& options) {
  const CallsInFlight counted;
  const bool trace = log::enabled(log::Level::kTrace, log::Subsys::kExec);
  const double t0 = trace ? nowSeconds() : 0;
  const detail::WindowNeeds needs = detail::WindowNeeds::of(schedule);
  WindowUse use = detail::beginWindowCall(options.window, options.windowState, needs);
  RoundRunner runner(schedule, buffers, connections, options, use);
  try {
    for (const Round& round : schedule.rounds) runner.run(round);
  } catch (const transport::TagMismatch& e) {
    if (!options.describeCall) throw;
    // The peer's message belongs to another call: name both calls.
    std::string peer =
        options.describePeer ? options.describePeer(e.peer()) : "rank " + std::to_string(e.peer());
    throw CallMismatch(tuttiInvalidUsage, "rank " + std::to_string(options.rank) +
                                              ": mismatched collective calls: this rank called " +
                                              options.describeCall(e.expected()) + " but " + peer +
                                              " called " + options.describeCall(e.sent()));
  }
  detail::endWindowCall(use, needs);
  if (trace) traceExecuted(schedule, nowSeconds() - t0);
}

void executeOpenRound(std::deque<Op>& ops, std::vector<std::byte*>& buffers,
                      std::span<transport::Connection* const> connections,
                      const ExecOptions& options, const OpenRoundSource& more, int wakeFd) {
  const CallsInFlight counted;
  Schedule transfers;  // the runner's datatype and name: plain transfers reduce nothing
  transfers.algorithm = "p2p";
  transfers.dtype = tuttiUint8;
  RoundRunner runner(transfers, buffers, connections, options, WindowUse{});
  runner.runOpen(ops, buffers, more, wakeFd);
}

}  // namespace tutti::exec
