#include "tuning/tuner.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "common/dtype.h"
#include "common/log.h"

namespace tutti::tuning {

namespace {

// The ALGO line of an automatic choice (rankCandidates runs once per distinct call shape of a
// communicator: the communicator caches its choice).
void logTunedChoice(const algo::CollArgs& args, const std::vector<Candidate>& out) {
  std::ostringstream os;
  os << algo::collName(args.coll) << " count " << args.count << " datatype "
     << dtypeName(args.dtype);
  if (args.coll == algo::Coll::kAllReduce || args.coll == algo::Coll::kReduce ||
      args.coll == algo::Coll::kReduceScatter)
    os << " op " << opName(args.op);
  if (args.coll == algo::Coll::kBroadcast || args.coll == algo::Coll::kReduce ||
      args.coll == algo::Coll::kGather || args.coll == algo::Coll::kScatter)
    os << " root " << args.root;
  os << " nranks " << args.nranks << ": ";
  if (out.empty()) {
    os << "no algorithm applies";
  } else {
    char text[64];
    snprintf(text, sizeof(text), "%.2f us", out[0].predictedSec * 1e6);
    os << "algorithm " << out[0].info->name << " (tuner: predicted " << text;
    if (out.size() > 1) {
      snprintf(text, sizeof(text), "%.2f us", out[1].predictedSec * 1e6);
      os << "; next best " << out[1].info->name << " " << text;
    } else {
      os << "; the only applicable one";
    }
    os << ")";
  }
  log::write(log::Level::kInfo, log::Subsys::kAlgo, os.str());
}

// The ALGO line of a forced algorithm, once per (rank, collective, spec) in the process: the
// communicator asks at every change of call shape, which may be every call.
void logForcedChoice(const std::string& spec, algo::Coll coll, const std::string& name) {
  static std::mutex mutex;
  static std::set<std::tuple<int, int, std::string>> logged;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (logged.size() >= 4096) logged.clear();
    if (!logged.emplace(log::threadRank(), static_cast<int>(coll), spec).second) return;
  }
  TUTTI_INFO(kAlgo, algo::collName(coll)
                        << ": algorithm " << name << " (forced by the algorithm spec '" << spec
                        << "': TUTTI_ALGO, the config's algo or tuttiCommSetAlgorithm)");
}

}  // namespace

const algo::AlgorithmInfo* ruleChoice(const algo::CollArgs& args) {
  const algo::AlgorithmInfo* line =
      args.coll == algo::Coll::kAllReduce ? algo::find(args.coll, "line") : nullptr;
  return line != nullptr && line->applicable(args) ? line : nullptr;
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
  if (const algo::AlgorithmInfo* rule = ruleChoice(args)) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const Candidate& c) { return c.info == rule; });
    if (it != out.end()) std::rotate(out.begin(), it, it + 1);
  }
  if (log::enabled(log::Level::kInfo, log::Subsys::kAlgo)) logTunedChoice(args, out);
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

ForcedAlgorithm forcedAlgorithm(const std::string& spec, algo::Coll coll) {
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
  ForcedAlgorithm forced{mine ? *mine : all, mine.has_value()};
  // A bare name this collective has no algorithm of leaves the choice to the tuner.
  if (!forced.name.empty() && log::enabled(log::Level::kInfo, log::Subsys::kAlgo) &&
      algo::find(coll, forced.name) != nullptr)
    logForcedChoice(spec, coll, forced.name);
  return forced;
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
