#include "exec/simulator.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "common/dtype.h"
#include "common/error.h"
#include "reduce/reduce.h"

namespace tutti::exec {

size_t SimResult::maxBytesSent() const {
  size_t m = 0;
  for (const SimRankStats& r : ranks) m = std::max(m, r.bytesSent);
  return m;
}

namespace {

struct OpRef {
  int rank = -1;
  size_t round = 0;
  size_t index = 0;
};

std::string str(const Slice& s) { return toString(s); }
std::string str(const Op& op) { return toString(op); }

bool isTransfer(OpType t) {
  return t == OpType::kSend || t == OpType::kRecv || t == OpType::kRecvReduce;
}

// Resolved memory interval [lo, hi) in a common address space (real addresses when the
// buffers exist, synthetic per-buffer ranges otherwise).
struct Interval {
  uintptr_t lo = 0, hi = 0;
  bool overlaps(const Interval& o) const {
    return lo < o.hi && o.lo < hi && lo < hi && o.lo < o.hi;
  }
  bool operator==(const Interval& o) const { return lo == o.lo && hi == o.hi; }
};

class Sim {
 public:
  Sim(std::span<const Schedule> s, std::span<const SimRankBuffers> b, const SimOptions& o)
      : sched_(s), bufs_(b), opt_(o), n_(static_cast<int>(s.size())) {}

  SimResult run() {
    TUTTI_CHECK_ARG(n_ >= 1, "simulate: no schedules");
    TUTTI_CHECK_ARG(bufs_.size() == sched_.size(), "simulate: ", sched_.size(), " schedules but ",
                    bufs_.size(), " buffer sets");
    es_ = dtypeSize(sched_[0].dtype);
    TUTTI_CHECK_ARG(es_ > 0, "simulate: invalid datatype in rank 0's schedule");
    scratch_.resize(n_);
    windows_.resize(n_);
    posted_.assign(n_, 0);
    for (int r = 0; r < n_; ++r) {
      const Schedule& s = sched_[r];
      if (s.dtype != sched_[0].dtype || s.op != sched_[0].op)
        fail(tuttiInternalError, "simulate: rank ", r, " schedule '", s.algorithm,
             "' has dtype/op ", static_cast<int>(s.dtype), "/", static_cast<int>(s.op),
             " but rank 0 has ", static_cast<int>(sched_[0].dtype), "/",
             static_cast<int>(sched_[0].op));
      if (opt_.moveData) {
        scratch_[r].assign(s.scratchBytes, std::byte{0xA5});
        windows_[r].assign(s.windowBytes, std::byte{0xA5});
        if ((bufs_[r].inputBytes && !bufs_[r].input) || (bufs_[r].outputBytes && !bufs_[r].output))
          fail(tuttiInvalidArgument, "simulate: rank ", r, " has null buffers with moveData");
      }
    }
    validate();
    match();
    SimResult res = statistics();
    execute();
    return res;
  }

 private:
  [[noreturn]] void opError(const OpRef& ref, const std::string& what) const {
    const Schedule& s = sched_[ref.rank];
    fail(tuttiInternalError, "simulate '", s.algorithm, "': rank ", ref.rank, " round ", ref.round,
         " op ", ref.index, " ", str(op(ref)), ": ", what);
  }
  const Op& op(const OpRef& ref) const { return sched_[ref.rank].rounds[ref.round].ops[ref.index]; }

  size_t bufSize(int r, const Slice& s) const {
    if (s.buf == Buf::kWindow) return s.rank >= 0 && s.rank < n_ ? sched_[s.rank].windowBytes : 0;
    switch (s.buf) {
      case Buf::kInput:
        return bufs_[r].inputBytes;
      case Buf::kOutput:
        return bufs_[r].outputBytes;
      case Buf::kScratch:
        return sched_[r].scratchBytes;
      case Buf::kWindow:
        break;
    }
    return 0;
  }
  std::byte* base(int r, Buf b) {
    switch (b) {
      case Buf::kInput:
        return bufs_[r].input;
      case Buf::kOutput:
        return bufs_[r].output;
      case Buf::kScratch:
        return scratch_[r].data();
      case Buf::kWindow:
        break;
    }
    return nullptr;
  }
  std::byte* ptr(int r, const Slice& s) {
    if (s.buf == Buf::kWindow) return windows_[s.rank].data() + s.offset;
    return base(r, s.buf) + s.offset;
  }
  Interval where(int r, const Slice& s) const {
    const std::byte* p = nullptr;
    if (s.buf == Buf::kInput) p = bufs_[r].input;
    if (s.buf == Buf::kOutput) p = bufs_[r].output;
    if (s.buf == Buf::kScratch && !scratch_[r].empty()) p = scratch_[r].data();
    uintptr_t synthetic = static_cast<uintptr_t>(r * 3 + static_cast<int>(s.buf) + 1) << 44;
    if (s.buf == Buf::kWindow) {  // shared: the same interval whichever rank addresses it
      if (s.rank >= 0 && s.rank < n_ && !windows_[s.rank].empty()) p = windows_[s.rank].data();
      synthetic = static_cast<uintptr_t>(3 * n_ + s.rank + 1) << 44;
    }
    uintptr_t b = p ? reinterpret_cast<uintptr_t>(p) : synthetic;
    return Interval{b + s.offset, b + s.offset + s.bytes};
  }

  void checkSlice(const OpRef& ref, const Slice& s, const char* role) const {
    if (s.buf == Buf::kWindow && (s.rank < 0 || s.rank >= n_))
      opError(ref, std::string(role) + " " + str(s) + " names the window of an invalid rank");
    size_t size = bufSize(ref.rank, s);
    if (s.offset > size || s.bytes > size - s.offset)
      opError(ref, std::string(role) + " " + str(s) + " exceeds the " + bufName(s.buf) +
                       " buffer of " + std::to_string(size) + " bytes");
    if (s.bytes % es_ != 0)
      opError(ref, std::string(role) + " " + str(s) + " is not a multiple of the element size " +
                       std::to_string(es_));
  }

  // Either identical or disjoint (what memmove-free kernels accept).
  void checkAlias(const OpRef& ref, const Slice& a, const Slice& b, const char* what) const {
    Interval x = where(ref.rank, a), y = where(ref.rank, b);
    if (x.overlaps(y) && !(x == y))
      opError(ref, std::string(what) + " overlap partially (must be identical or disjoint)");
  }

  void validate() {
    for (int r = 0; r < n_; ++r) {
      const Schedule& s = sched_[r];
      for (size_t t = 0; t < s.rounds.size(); ++t) {
        const Round& rd = s.rounds[t];
        std::vector<std::pair<Interval, size_t>> writes, reads;
        for (size_t i = 0; i < rd.ops.size(); ++i) {
          OpRef ref{r, t, i};
          const Op& o = rd.ops[i];
          if ((isTransfer(o.type) || o.type == OpType::kWait) &&
              (o.peer < 0 || o.peer >= n_ || o.peer == r))
            opError(ref, "invalid peer " + std::to_string(o.peer) + " for " + std::to_string(n_) +
                             " ranks");
          switch (o.type) {
            case OpType::kSend:
              checkSlice(ref, o.src, "source");
              reads.push_back({where(r, o.src), i});
              break;
            case OpType::kRecv:
              checkSlice(ref, o.dst, "destination");
              writes.push_back({where(r, o.dst), i});
              break;
            case OpType::kRecvReduce:
              checkSlice(ref, o.src, "source");
              checkSlice(ref, o.dst, "destination");
              if (o.src.bytes != o.dst.bytes) opError(ref, "source and destination sizes differ");
              checkAlias(ref, o.src, o.dst, "source and destination");
              writes.push_back({where(r, o.dst), i});
              if (!(where(r, o.src) == where(r, o.dst))) reads.push_back({where(r, o.src), i});
              break;
            case OpType::kCopy:
              checkSlice(ref, o.src, "source");
              checkSlice(ref, o.dst, "destination");
              if (o.src.bytes != o.dst.bytes) opError(ref, "source and destination sizes differ");
              checkAlias(ref, o.src, o.dst, "source and destination");
              break;
            case OpType::kReduce:
              checkSlice(ref, o.src, "source");
              checkSlice(ref, o.src2, "second source");
              checkSlice(ref, o.dst, "destination");
              if (o.src.bytes != o.dst.bytes || o.src2.bytes != o.dst.bytes)
                opError(ref, "operand sizes differ");
              checkAlias(ref, o.src, o.dst, "source and destination");
              checkAlias(ref, o.src2, o.dst, "second source and destination");
              break;
            case OpType::kMix: {
              if (o.mix >= s.mixes.size()) opError(ref, "names a mix the schedule does not have");
              const Mix& m = s.mixes[o.mix];
              checkSlice(ref, o.dst, "destination");
              if (m.srcs.empty() || m.srcs.size() != m.weights.size())
                opError(ref, "has " + std::to_string(m.srcs.size()) + " sources for " +
                                 std::to_string(m.weights.size()) + " weights");
              for (const Slice& src : m.srcs) {
                checkSlice(ref, src, "source");
                if (src.bytes != o.dst.bytes) opError(ref, "operand sizes differ");
                checkAlias(ref, src, o.dst, "source and destination");
              }
              break;
            }
            case OpType::kPost:
              if (o.phase == 0 || o.phase > s.windowPhases)
                opError(ref, "posts phase " + std::to_string(o.phase) +
                                 " outside the schedule's 1.." + std::to_string(s.windowPhases));
              break;
            case OpType::kWait:
              if (o.phase > s.windowPhases)
                opError(ref, "waits for phase " + std::to_string(o.phase) +
                                 " beyond the schedule's " + std::to_string(s.windowPhases));
              break;
          }
        }
        for (size_t a = 0; a < writes.size(); ++a) {
          for (size_t b = a + 1; b < writes.size(); ++b)
            if (writes[a].first.overlaps(writes[b].first))
              opError({r, t, writes[b].second}, "writes bytes that op " +
                                                    std::to_string(writes[a].second) +
                                                    " of the same round also receives into");
          for (const auto& rdx : reads)
            if (rdx.second != writes[a].second && rdx.first.overlaps(writes[a].first))
              opError({r, t, rdx.second}, "reads bytes that op " +
                                              std::to_string(writes[a].second) +
                                              " of the same round receives into");
        }
      }
    }
  }

  void match() {
    std::vector<std::vector<OpRef>> sends(n_ * n_), recvs(n_ * n_);  // index src*n + dst
    partner_.resize(n_);
    for (int r = 0; r < n_; ++r) {
      const Schedule& s = sched_[r];
      partner_[r].resize(s.rounds.size());
      for (size_t t = 0; t < s.rounds.size(); ++t) {
        partner_[r][t].resize(s.rounds[t].ops.size());
        for (size_t i = 0; i < s.rounds[t].ops.size(); ++i) {
          const Op& o = s.rounds[t].ops[i];
          if (o.type == OpType::kSend) sends[r * n_ + o.peer].push_back({r, t, i});
          if (o.type == OpType::kRecv || o.type == OpType::kRecvReduce)
            recvs[o.peer * n_ + r].push_back({r, t, i});
        }
      }
    }
    for (int a = 0; a < n_; ++a) {
      for (int b = 0; b < n_; ++b) {
        const auto& ss = sends[a * n_ + b];
        const auto& rr = recvs[a * n_ + b];
        for (size_t k = 0; k < std::max(ss.size(), rr.size()); ++k) {
          if (k >= rr.size())
            opError(ss[k], "is send #" + std::to_string(k) + " from " + std::to_string(a) + " to " +
                               std::to_string(b) + " but rank " + std::to_string(b) +
                               " posts only " + std::to_string(rr.size()) + " receives from " +
                               std::to_string(a));
          if (k >= ss.size())
            opError(rr[k], "is receive #" + std::to_string(k) + " from " + std::to_string(a) +
                               " but rank " + std::to_string(a) + " posts only " +
                               std::to_string(ss.size()) + " sends to " + std::to_string(b));
          size_t sb = op(ss[k]).src.bytes, rb = op(rr[k]).dst.bytes;
          if (sb != rb)
            opError(rr[k], "receives " + std::to_string(rb) + " bytes but the matching send #" +
                               std::to_string(k) + " of rank " + std::to_string(a) + " (round " +
                               std::to_string(ss[k].round) + ") sends " + std::to_string(sb));
          partner_[a][ss[k].round][ss[k].index] = rr[k];
          partner_[b][rr[k].round][rr[k].index] = ss[k];
        }
      }
    }
  }

  SimResult statistics() const {
    SimResult res;
    res.ranks.resize(n_);
    size_t maxRounds = 0;
    for (const Schedule& s : sched_) maxRounds = std::max(maxRounds, s.rounds.size());
    res.roundSeconds.assign(maxRounds, 0.0);
    for (int r = 0; r < n_; ++r) {
      SimRankStats& st = res.ranks[r];
      const Schedule& s = sched_[r];
      st.rounds = s.rounds.size();
      for (size_t t = 0; t < s.rounds.size(); ++t) {
        std::map<int, std::pair<size_t, size_t>> out, in;  // peer -> (messages, bytes)
        double local = 0;
        for (const Op& o : s.rounds[t].ops) {
          switch (o.type) {
            case OpType::kSend:
              st.bytesSent += o.src.bytes;
              st.messagesSent++;
              out[o.peer].first++;
              out[o.peer].second += o.src.bytes;
              break;
            case OpType::kRecvReduce:
              st.reducedBytes += o.dst.bytes;
              local += opt_.reduceSecondsPerByte * o.dst.bytes;
              [[fallthrough]];
            case OpType::kRecv:
              st.bytesRecv += o.dst.bytes;
              st.messagesRecv++;
              in[o.peer].first++;
              in[o.peer].second += o.dst.bytes;
              break;
            case OpType::kCopy:
              st.copiedBytes += o.dst.bytes;
              local += opt_.copySecondsPerByte * o.dst.bytes;
              break;
            case OpType::kReduce:
              st.reducedBytes += o.dst.bytes;
              local += opt_.reduceSecondsPerByte * o.dst.bytes;
              break;
            case OpType::kMix:
              st.reducedBytes += o.dst.bytes;
              local += opt_.reduceSecondsPerByte * o.dst.bytes * s.mixes[o.mix].srcs.size();
              break;
            case OpType::kWait:  // a synchronisation: the latency of the link, no bytes
              in[o.peer].first++;
              break;
            case OpType::kPost:
              break;
          }
        }
        double wire = 0;
        if (opt_.cost) {
          for (auto& [peer, mb] : out) {
            LinkCost c = opt_.cost(r, peer);
            wire = std::max(wire, c.alpha * mb.first + c.beta * mb.second);
          }
          for (auto& [peer, mb] : in) {
            LinkCost c = opt_.cost(peer, r);
            wire = std::max(wire, c.alpha * mb.first + c.beta * mb.second);
          }
        }
        double secs = wire + local;
        st.busySeconds += secs;
        res.roundSeconds[t] = std::max(res.roundSeconds[t], secs);
      }
      res.totalBytes += st.bytesSent;
    }
    for (double x : res.roundSeconds) res.predictedSeconds += x;
    return res;
  }

  void runLocal(int r, const Op& o) {
    if (!opt_.moveData) return;
    if (o.type == OpType::kCopy) {
      if (o.dst.bytes) std::memmove(ptr(r, o.dst), ptr(r, o.src), o.dst.bytes);
    } else if (o.type == OpType::kReduce) {
      if (o.dst.bytes)
        reduce::reduce(ptr(r, o.dst), ptr(r, o.src), ptr(r, o.src2), o.dst.bytes / es_,
                       sched_[r].dtype, sched_[r].op);
    } else if (o.type == OpType::kMix) {
      const Mix& m = sched_[r].mixes[o.mix];
      std::vector<const void*> srcs;
      for (const Slice& s : m.srcs) srcs.push_back(ptr(r, s));
      if (o.dst.bytes)
        reduce::weightedSum(ptr(r, o.dst), srcs, m.weights, o.dst.bytes / es_, sched_[r].dtype);
    }
  }

  void transfer(const OpRef& sref, const OpRef& rref) {
    if (!opt_.moveData) return;
    const Op& so = op(sref);
    const Op& ro = op(rref);
    if (!ro.dst.bytes) return;
    const std::byte* data = ptr(sref.rank, so.src);
    if (ro.type == OpType::kRecv) {
      std::memmove(ptr(rref.rank, ro.dst), data, ro.dst.bytes);
    } else {
      reduce::reduce(ptr(rref.rank, ro.dst), ptr(rref.rank, ro.src), data, ro.dst.bytes / es_,
                     sched_[rref.rank].dtype, sched_[rref.rank].op);
    }
  }

  void execute() {
    std::vector<size_t> cur(n_, 0), pending(n_, 0);
    std::vector<char> entered(n_, 0);
    std::vector<std::vector<std::vector<char>>> done(n_);
    for (int r = 0; r < n_; ++r) {
      done[r].resize(sched_[r].rounds.size());
      for (size_t t = 0; t < sched_[r].rounds.size(); ++t)
        done[r][t].assign(sched_[r].rounds[t].ops.size(), 0);
    }
    for (;;) {
      bool progress = false, finished = true;
      for (int r = 0; r < n_; ++r) {
        if (cur[r] >= sched_[r].rounds.size() || entered[r]) continue;
        const Round& rd = sched_[r].rounds[cur[r]];
        if (!waitsMet(rd)) continue;
        pending[r] = 0;
        for (const Op& o : rd.ops) {
          if (isTransfer(o.type))
            ++pending[r];
          else if (o.type == OpType::kPost)
            posted_[r] = o.phase;
          else
            runLocal(r, o);
        }
        entered[r] = 1;
        progress = true;
      }
      for (int r = 0; r < n_; ++r) {
        if (!entered[r]) continue;
        size_t t = cur[r];
        const Round& rd = sched_[r].rounds[t];
        for (size_t i = 0; i < rd.ops.size(); ++i) {
          if (rd.ops[i].type != OpType::kSend || done[r][t][i]) continue;
          const OpRef& m = partner_[r][t][i];
          if (!entered[m.rank] || cur[m.rank] != m.round) continue;
          transfer({r, t, i}, m);
          done[r][t][i] = 1;
          done[m.rank][m.round][m.index] = 1;
          --pending[r];
          --pending[m.rank];
          progress = true;
        }
      }
      for (int r = 0; r < n_; ++r) {
        if (entered[r] && pending[r] == 0) {
          entered[r] = 0;
          ++cur[r];
          progress = true;
        }
        finished = finished && cur[r] >= sched_[r].rounds.size();
      }
      if (finished) return;
      if (!progress) deadlock(cur, done);
    }
  }

  bool waitsMet(const Round& rd) const {
    for (const Op& o : rd.ops)
      if (o.type == OpType::kWait && posted_[o.peer] < o.phase) return false;
    return true;
  }

  [[noreturn]] void deadlock(const std::vector<size_t>& cur,
                             const std::vector<std::vector<std::vector<char>>>& done) const {
    std::ostringstream os;
    os << "simulate '" << sched_[0].algorithm << "': deadlock:";
    int shown = 0;
    for (int r = 0; r < n_ && shown < 8; ++r) {
      if (cur[r] >= sched_[r].rounds.size()) continue;
      const Round& rd = sched_[r].rounds[cur[r]];
      for (size_t i = 0; i < rd.ops.size(); ++i) {
        const Op& w = rd.ops[i];
        if (w.type == OpType::kWait && posted_[w.peer] < w.phase) {
          os << " [rank " << r << " round " << cur[r] << " waits for rank " << w.peer
             << " to post phase " << w.phase << "; it posted " << posted_[w.peer] << "]";
          ++shown;
          break;
        }
        if (!isTransfer(rd.ops[i].type) || done[r][cur[r]][i]) continue;
        const OpRef& m = partner_[r][cur[r]][i];
        os << " [rank " << r << " round " << cur[r] << " waits on " << str(rd.ops[i]) << "; rank "
           << m.rank << " posts the match in round " << m.round << " but is in round "
           << cur[m.rank];
        if (cur[m.rank] >= sched_[m.rank].rounds.size()) os << " (finished)";
        os << "]";
        ++shown;
        break;
      }
    }
    fail(tuttiInternalError, os.str());
  }

  std::span<const Schedule> sched_;
  std::span<const SimRankBuffers> bufs_;
  const SimOptions& opt_;
  int n_;
  size_t es_ = 0;
  std::vector<std::vector<std::byte>> scratch_;
  std::vector<std::vector<std::byte>> windows_;
  std::vector<uint32_t> posted_;  // window phase each rank posted last
  std::vector<std::vector<std::vector<OpRef>>> partner_;
};

}  // namespace

SimResult simulate(std::span<const Schedule> schedules, std::span<const SimRankBuffers> buffers,
                   const SimOptions& options) {
  return Sim(schedules, buffers, options).run();
}

}  // namespace tutti::exec
