#include "tuning/timed_sim.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/dtype.h"

namespace tutti::tuning {
namespace {

// One rank's traffic in one round.
struct RoundStat {
  double intraAlpha = 0;
  // Intra-host messages are handled one after another by the rank's core (FIFO header,
  // doorbell, wake-up): the round pays alpha per message on the busier side. Waits on a
  // shared window (kWait) overlap: one alpha per round however many peers.
  int intraSends = 0;
  int intraRecvs = 0;
  bool sync = false;
  double intraSendSec = 0;  // sum of bytes * beta over intra-host sends
  double intraRecvSec = 0;
  bool intra = false;
  bool inter = false;
  double interSent = 0;  // bytes
  double interRecv = 0;
  double local = 0;  // gamma-weighted bytes: reduced + copied / 2
};

struct RankStats {
  std::vector<RoundStat> rounds;
  size_t bytesSent = 0;
  size_t messagesSent = 0;
};

// Reading another rank's shared window moves its bytes between cores like a FIFO receive
// (they are not in this core's cache): charged at the pair's beta, on top of the local work.
// Not when the window chunks are small enough to stay in the shared cache (the communicator's
// 256 KiB chunks with a core per rank): there the read is a cache hit that the local gamma
// work already covers. Oversubscribed ranks use the whole 4 MiB window and pay it in full.
constexpr size_t kCacheResidentWindow = size_t{1} << 20;

// Where calibration measured the read, `readPrice` (windowReadPrice for the call's size) holds.
void readPeerWindow(RoundStat& st, const exec::Slice& src, int rank, const CostModel& m,
                    size_t windowBytes, double readPrice) {
  if (src.buf != exec::Buf::kWindow || src.rank < 0 || src.rank == rank) return;
  if (readPrice > 0) {
    st.intra = true;
    st.intraRecvSec += static_cast<double>(src.bytes) * readPrice;
    return;
  }
  if (windowBytes <= kCacheResidentWindow) return;
  LinkCost lc = m.intraPair ? m.intraPair(rank, src.rank) : m.intraHost;
  st.intra = true;
  st.intraAlpha = std::max(st.intraAlpha, lc.alpha);
  st.intraRecvSec += static_cast<double>(src.bytes) * lc.beta;
}

// readPrice: the price of reading a peer's window in this call (windowReadPrice; <= 0: none
// measured).
RankStats statsOf(const exec::Schedule& s, int rank, const std::vector<int>& hostOf,
                  const CostModel& m, double readPrice) {
  RankStats out;
  out.rounds.resize(s.rounds.size());
  for (size_t k = 0; k < s.rounds.size(); ++k) {
    RoundStat& st = out.rounds[k];
    for (const exec::Op& op : s.rounds[k].ops) {
      size_t bytes = 0;
      bool isSend = false;
      switch (op.type) {
        case exec::OpType::kSend:
          bytes = op.src.bytes;
          isSend = true;
          break;
        case exec::OpType::kRecv:
          bytes = op.dst.bytes;
          break;
        case exec::OpType::kRecvReduce:
          bytes = op.dst.bytes;
          st.local += static_cast<double>(op.dst.bytes);
          break;
        case exec::OpType::kReduce:
          st.local += static_cast<double>(op.dst.bytes);
          readPeerWindow(st, op.src, rank, m, s.windowBytes, readPrice);
          readPeerWindow(st, op.src2, rank, m, s.windowBytes, readPrice);
          continue;
        case exec::OpType::kMix:  // one multiply-add pass per source
          st.local +=
              static_cast<double>(op.dst.bytes) * static_cast<double>(s.mixes[op.mix].srcs.size());
          continue;
        case exec::OpType::kCopy:
          st.local += 0.5 * static_cast<double>(op.dst.bytes);
          readPeerWindow(st, op.src, rank, m, s.windowBytes, readPrice);
          continue;
        case exec::OpType::kWait:  // a synchronisation with peer: its latency, no bytes
          st.sync = true;
          break;
        default:  // kPost and other local bookkeeping
          continue;
      }
      if (op.peer < 0) continue;
      if (isSend) {
        out.bytesSent += bytes;
        ++out.messagesSent;
      }
      bool same = hostOf.empty() || hostOf[op.peer] == hostOf[rank];
      if (same) {
        LinkCost lc = m.intraPair ? m.intraPair(rank, op.peer) : m.intraHost;
        st.intra = true;
        st.intraAlpha = std::max(st.intraAlpha, lc.alpha);
        if (op.type != exec::OpType::kWait) ++(isSend ? st.intraSends : st.intraRecvs);
        (isSend ? st.intraSendSec : st.intraRecvSec) += static_cast<double>(bytes) * lc.beta;
      } else {
        st.inter = true;
        (isSend ? st.interSent : st.interRecv) += static_cast<double>(bytes);
      }
    }
  }
  return out;
}

// A phase of the shared window when ranks outnumber cores: every rank of the host must be
// scheduled before it completes, but the waiters yield at once, so the ranks of a core pass
// it round by round (4 ranks on 2 cores: a two-phase one-shot all-reduce 10-13 us, 8 ranks:
// 40-50 us; about 0.8 scaled alphas per phase either way).
constexpr double kOversubscribedSyncAlphas = 0.8;

// Alphas of a round that only waits on the shared window: with a core per rank a waited-for
// store arrives within a microsecond (windowSyncFactor); with more ranks than cores every rank
// of the host must be scheduled before the phase completes (kOversubscribedSyncAlphas, in
// alphas scaled like a message round's).
double syncAlphas(const CostModel& m, double oversub) {
  return oversub <= 1.0 ? m.windowSyncFactor : kOversubscribedSyncAlphas;
}

// With more ranks than cores a message's latency includes waiting for the receiver (or
// sender) to be scheduled: fitted on 4 and 8 ranks on 2 cores, a pairwise FIFO round costs
// alpha * oversub^1.5 (8-14 us at oversub 2, 23-33 us at oversub 4, with alpha 3 us).
double alphaScale(double oversub) { return oversub <= 1.0 ? 1.0 : oversub * std::sqrt(oversub); }

double roundTime(const RoundStat& st, double hostSent, double hostRecv, double oversub,
                 const CostModel& m, double syncCost) {
  double intra = 0, inter = 0;
  if (st.intra) {
    int messages = std::max(st.intraSends, st.intraRecvs);
    double alphas = messages > 0 ? messages : (st.sync ? syncCost : 0.0);
    intra = st.intraAlpha * alphas * alphaScale(oversub) +
            std::max(st.intraSendSec, st.intraRecvSec) * oversub;
  }
  if (st.inter) {
    double nics = std::max(1, m.nicsPerHost);
    double bytes = std::max({st.interSent, st.interRecv, hostSent / nics, hostRecv / nics});
    inter = m.interHost.alpha + bytes * m.interHost.beta;
  }
  // Local copies and reductions share the cores too.
  return std::max(intra, inter) + st.local * m.gammaPerByte * oversub;
}

// The price of reading a peer's window in a call of args (windowReadPrice of its message size).
double readPriceOf(const CostModel& m, const algo::CollArgs& args) {
  return windowReadPrice(m, args.count * dtypeSize(args.dtype));
}

double oversubscription(const CostModel& m, size_t ranksOnHost) {
  if (m.coresPerHost <= 0) return 1.0;
  return std::max(1.0, static_cast<double>(ranksOnHost) / m.coresPerHost);
}

}  // namespace

TimedResult timeCollective(const algo::AlgorithmInfo& info, const algo::CollArgs& args,
                           const CostModel& m, const TimedOptions& options) {
  const double readPrice = readPriceOf(m, args);
  TimedResult res;
  int n = args.nranks;
  std::vector<int> hostOf = args.hostOf;
  std::map<int, std::vector<int>> byHost;
  for (int r = 0; r < n; ++r) byHost[hostOf.empty() ? 0 : hostOf[r]].push_back(r);
  std::vector<const std::vector<int>*> hosts;
  for (auto& [h, ranks] : byHost) hosts.push_back(&ranks);
  int nh = static_cast<int>(hosts.size());
  res.exact = n <= options.exactUpTo;
  std::vector<int> chosen;
  if (res.exact) {
    for (int h = 0; h < nh; ++h) chosen.push_back(h);
  } else {
    for (int h : {0, 1, nh / 4, nh / 2, (3 * nh) / 4, nh - 1})
      if (h >= 0 && h < nh && std::find(chosen.begin(), chosen.end(), h) == chosen.end())
        chosen.push_back(h);
  }
  std::vector<double> roundMax;
  for (int h : chosen) {
    const std::vector<int>& ranks = *hosts[h];
    size_t L = ranks.size();
    std::vector<int> sample;
    double scale = 1.0;
    if (res.exact || L <= 64) {
      sample = ranks;
    } else {
      for (size_t p : {size_t{0}, size_t{1}, L / 2, L - 1})
        if (std::find(sample.begin(), sample.end(), ranks[p]) == sample.end())
          sample.push_back(ranks[p]);
      scale = static_cast<double>(L) / static_cast<double>(sample.size());
    }
    std::vector<RankStats> stats;
    stats.reserve(sample.size());
    size_t maxRounds = 0;
    for (int r : sample) {
      algo::CollArgs a = args;
      a.rank = r;
      exec::Schedule s = info.build(a);
      stats.push_back(statsOf(s, r, hostOf, m, readPrice));
      const RankStats& st = stats.back();
      maxRounds = std::max(maxRounds, st.rounds.size());
      res.maxBytesSent = std::max(res.maxBytesSent, st.bytesSent);
      res.maxMessagesSent = std::max(res.maxMessagesSent, st.messagesSent);
      res.totalBytesSent += st.bytesSent;
      ++res.ranksBuilt;
    }
    std::vector<double> hostSent(maxRounds, 0), hostRecv(maxRounds, 0);
    for (const RankStats& st : stats)
      for (size_t k = 0; k < st.rounds.size(); ++k) {
        hostSent[k] += st.rounds[k].interSent * scale;
        hostRecv[k] += st.rounds[k].interRecv * scale;
      }
    if (roundMax.size() < maxRounds) roundMax.resize(maxRounds, 0.0);
    double over = oversubscription(m, L);
    for (const RankStats& st : stats)
      for (size_t k = 0; k < st.rounds.size(); ++k)
        roundMax[k] = std::max(roundMax[k], roundTime(st.rounds[k], hostSent[k], hostRecv[k], over,
                                                      m, syncAlphas(m, over)));
  }
  res.rounds = roundMax.size();
  for (double t : roundMax) res.seconds += t;
  return res;
}

double predictRank(const exec::Schedule& schedule, const algo::CollArgs& args, const CostModel& m) {
  RankStats st = statsOf(schedule, args.rank, args.hostOf, m, readPriceOf(m, args));
  size_t L = 0;
  for (int r = 0; r < args.nranks; ++r)
    if (args.hostOf.empty() || args.hostOf[r] == args.hostOf[args.rank]) ++L;
  double over = oversubscription(m, L);
  double total = 0;
  for (const RoundStat& r : st.rounds)
    total += roundTime(r, r.interSent, r.interRecv, over, m, syncAlphas(m, over));
  return total;
}

}  // namespace tutti::tuning
