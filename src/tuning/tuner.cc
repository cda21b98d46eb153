#include "tuning/tuner.h"

#include <algorithm>
#include <optional>
#include <string_view>

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

namespace {

// Calls fn(item, collective part or "", algorithm part) for each ';'/','-separated item of a
// TUTTI_ALGO spec, in order, until fn returns true.
template <class Fn>
void forEachItem(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t semi = text.find_first_of(";,");
    std::string_view item = text.substr(0, semi);
    size_t colon = item.find(':');
    if (!item.empty()) {
      std::string_view coll = colon == std::string_view::npos ? "" : item.substr(0, colon);
      std::string_view name = colon == std::string_view::npos ? item : item.substr(colon + 1);
      if (fn(item, coll, name)) return;
    }
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
}

}  // namespace

std::string forcedAlgorithm(const std::string& spec, algo::Coll coll) {
  std::string all;
  std::optional<std::string> mine;  // "allreduce:" (empty) forces nothing, like no item
  forEachItem(spec, [&](std::string_view, std::string_view c, std::string_view name) {
    if (c.empty()) {
      all = std::string(name);
    } else if (c == algo::collName(coll)) {
      mine = std::string(name);
      return true;
    }
    return false;
  });
  return mine ? *mine : all;
}

std::string unknownAlgorithmItem(const std::string& spec) {
  std::string unknown;
  forEachItem(spec, [&](std::string_view item, std::string_view c, std::string_view name) {
    bool known = false;
    for (int i = 0; i < algo::kNumColls && !known; ++i) {
      auto coll = static_cast<algo::Coll>(i);
      if (c.empty() || c == algo::collName(coll)) known = algo::find(coll, name) != nullptr;
    }
    if (!known) unknown = std::string(item);
    return !known;
  });
  return unknown;
}

}  // namespace tutti::tuning
