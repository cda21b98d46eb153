#include "tuning/tuner.h"

#include <algorithm>
#include <map>

#include "common/dtype.h"

namespace tutti::tuning {

double predict(const exec::Schedule& s, const algo::CollArgs& args, const CostModel& m) {
  auto sameHost = [&](int peer) {
    return args.hostOf.empty() || args.hostOf[peer] == args.hostOf[args.rank];
  };
  double total = 0;
  for (const exec::Round& r : s.rounds) {
    double sent = 0, received = 0, reduced = 0, alpha = 0, beta = 0;
    for (const exec::Op& op : r.ops) {
      if (op.peer >= 0) {
        const LinkCost& lc = sameHost(op.peer) ? m.intraHost : m.interHost;
        alpha = std::max(alpha, lc.alpha);
        beta = std::max(beta, lc.beta);
      }
      switch (op.type) {
        case exec::OpType::kSend:
          sent += op.src.bytes;
          break;
        case exec::OpType::kRecv:
          received += op.dst.bytes;
          break;
        case exec::OpType::kRecvReduce:
          received += op.dst.bytes;
          reduced += op.dst.bytes;
          break;
        case exec::OpType::kReduce:
          reduced += op.dst.bytes;
          break;
        case exec::OpType::kCopy:
          reduced += op.dst.bytes * 0.5;
          break;
      }
    }
    total += alpha + std::max(sent, received) * beta + reduced * m.gammaPerByte;
  }
  return total;
}

std::vector<Candidate> rankCandidates(const algo::CollArgs& args, const CostModel& m) {
  std::vector<Candidate> out;
  for (const algo::AlgorithmInfo& info : algo::registry()) {
    if (info.coll != args.coll || !info.applicable(args)) continue;
    // The choice must be the same on every rank: predict the slowest of a few
    // representative ranks, a function of the arguments only.
    double worst = 0;
    for (int r : {0, 1, args.nranks / 2, args.nranks - 1}) {
      if (r < 0 || r >= args.nranks) continue;
      algo::CollArgs a = args;
      a.rank = r;
      worst = std::max(worst, predict(info.build(a), a, m));
    }
    out.push_back({&info, worst});
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.predictedSec < b.predictedSec;
  });
  return out;
}

std::string forcedAlgorithm(const std::string& spec, algo::Coll coll) {
  std::string_view text = spec;
  std::string all;
  while (!text.empty()) {
    size_t semi = text.find_first_of(";,");
    std::string_view item = text.substr(0, semi);
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      all = std::string(item);
    } else if (item.substr(0, colon) == algo::collName(coll)) {
      return std::string(item.substr(colon + 1));
    }
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
  return all;
}

}  // namespace tutti::tuning
