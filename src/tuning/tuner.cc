#include "tuning/tuner.h"

#include <algorithm>

#include "common/dtype.h"

namespace tutti::tuning {

double predict(const exec::Schedule& s, const algo::CollArgs& args, const CostModel& m) {
  return predictRank(s, args, m);
}

std::vector<Candidate> rankCandidates(const algo::CollArgs& args, const CostModel& m) {
  std::vector<Candidate> out;
  for (const algo::AlgorithmInfo& info : algo::registry()) {
    if (info.coll != args.coll || !info.applicable(args)) continue;
    TimedOptions opt;
    opt.exactUpTo = 16;
    double worst = timeCollective(info, args, m, opt).seconds;
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
