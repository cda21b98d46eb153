#include "comm/planner.h"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "common/dtype.h"
#include "common/error.h"
#include "common/log.h"
#include "tuning/self_tuning.h"
#include "tuning/tuner.h"

// Test-only fault injection (tests/mutation): a mutation test program defines this function to
// alter every schedule the communicator builds, and shows that the correctness matrix then
// fails. Neither the library nor any other program defines it, so the weak reference is null
// and the call below never happens (default visibility: a hidden weak reference would be
// settled, as null, when libtutti.so is linked).
extern "C" __attribute__((weak, visibility("default"))) void tuttiTestMutateSchedule(
    tutti::exec::Schedule* schedule, const tutti::algo::CollArgs* args);

namespace tutti {

Planner::Planner(std::unique_ptr<tuning::CostModel> topologyModel, int hosts)
    : topologyModel_(std::move(topologyModel)), hosts_(hosts) {}

Planner::~Planner() = default;

const Planner::CallPlan& Planner::plan(const algo::CollArgs& args, std::string_view spec) {
  if (!args.counts.empty() || !args.sendCounts.empty()) return planUneven(args, spec);
  LastPlan& l = last_;
  if ((l.valid || l.reuse > 0) && l.coll == args.coll && l.count == args.count &&
      l.dtype == args.dtype && l.op == args.op && l.root == args.root &&
      l.windowBytes == args.windowBytes && l.inPlace == args.inPlace && l.spec == spec) {
    if (l.valid) return l.plan;
    --l.reuse;
    ++l.reused;
    l.plan.refining = false;  // a reused pick is untimed (its sample is -1)
    return l.plan;
  }
  dropLastPlan();
  l.spec.assign(spec);
  const Choice choice = choose(args, l.spec);
  const algo::AlgorithmInfo& info = *choice.info;
  const Planned& planned = build(info, args);
  l.coll = args.coll;
  l.count = args.count;
  l.dtype = args.dtype;
  l.op = args.op;
  l.root = args.root;
  l.windowBytes = args.windowBytes;
  l.inPlace = args.inPlace;
  l.plan = {&info, &planned, choice.refining, choice.sample, choice.key};
  l.valid = choice.final;
  l.reuse = choice.refining && choice.sample < 0 ? choice.sameNext : 0;
  return l.plan;
}

void Planner::dropLastPlan() {
  if (last_.reused > 0 && selfTuning_) selfTuning_->tuner().skip(last_.plan.key, last_.reused);
  last_.valid = false;
  last_.reuse = last_.reused = 0;
}

void Planner::setSelfTuning(std::unique_ptr<tuning::SelfTuning> selfTuning) {
  dropLastPlan();  // its calls were the old tuner's
  selfTuning_ = std::move(selfTuning);
  choices_.clear();
  unevenValid_ = false;
}

tuning::CostModel Planner::model(const algo::CollArgs& args) const {
  tuning::CostModel model = topologyModel_                                   ? *topologyModel_
                            : selfTuning_ && selfTuning_->model() != nullptr ? *selfTuning_->model()
                                                                             : tuning::CostModel();
  // The topology knows the network by its NICs' speed; a calibration measured it.
  if (topologyModel_ && selfTuning_)
    if (const tuning::LinkCost* net = selfTuning_->calibratedNetwork()) model.interHost = *net;
  // Ranks on one host share its cores (same machine: every rank computes the same value, so
  // the choice stays rank-independent); across hosts core counts may differ: leave it out.
  if (!topologyModel_ && model.coresPerHost == 0 && args.hostOf.empty())
    model.coresPerHost = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return model;
}

namespace {
// A forced algorithm that does not apply to args: tuttiInvalidArgument naming both.
[[noreturn]] void failNotApplicable(const std::string& forced, const algo::CollArgs& args) {
  fail(tuttiInvalidArgument, "algorithm '", forced, "' does not apply to this ",
       algo::collName(args.coll), " (", args.nranks, " ranks, ", args.count, " elements)");
}

// Calls whose choice online refinement may refine: not forced (checked before), not
// deterministic (the choice must not depend on timing), not a V-collective (its blocks differ
// from call to call and between ranks), more than one rank.
bool refinable(const algo::CollArgs& args) {
  return !args.deterministic && !algo::isUneven(args.coll) && args.nranks > 1;
}
}  // namespace

Planner::Choice Planner::chooseByRefinement(const algo::CollArgs& args, const std::string& spec) {
  Choice c;
  c.key = tuning::tuneKeyOf(args.coll, args.nranks, hosts_, args.count * dtypeSize(args.dtype),
                            args.windowBytes > 0);
  tuning::OnlineTuner::Pick pick = selfTuning_->tuner().next(c.key, [&] {
    std::vector<tuning::TuneOption> ranked;
    for (const auto& cand : rankingFor(args, spec))
      ranked.push_back({cand.info->name, cand.predictedSec});
    return ranked;
  });
  c.final = pick.settled;
  c.refining = !pick.settled;
  c.sameNext = pick.sameNext;
  if (pick.algo.empty()) return c;
  const algo::AlgorithmInfo* info = algo::find(args.coll, pick.algo);
  // A winner of another count in the bucket (or an older cache) that does not apply here: the
  // model's choice, untimed.
  if (info == nullptr || !info->applicable(args)) return c;
  c.info = info;
  c.sample = pick.sample;
  return c;
}

Planner::Choice Planner::choose(const algo::CollArgs& args, const std::string& spec) {
  auto [forced, perCollective] = tuning::forcedAlgorithm(spec, args.coll);
  if (!forced.empty()) {
    const algo::AlgorithmInfo* info = algo::find(args.coll, forced);
    if (info == nullptr && perCollective) {
      std::string names;
      for (const auto& a : algo::registry())
        if (a.coll == args.coll) names += std::string(names.empty() ? "" : ", ") + a.name;
      fail(tuttiInvalidArgument, "TUTTI_ALGO: no ", algo::collName(args.coll), " algorithm '",
           forced, "' (available: ", names, ")");
    }
    if (info != nullptr) {
      if (!info->applicable(args)) failNotApplicable(forced, args);
      Choice c;
      c.info = info;
      return c;
    }
  }
  if (selfTuning_ && refinable(args)) {
    Choice c = chooseByRefinement(args, spec);
    if (c.info == nullptr) c.info = &chooseByModel(args, spec);
    return c;
  }
  Choice c;
  c.info = &chooseByModel(args, spec);
  return c;
}

tuning::Candidate Planner::estimate(const algo::CollArgs& args, std::string_view spec) {
  const std::string specText(spec);
  const std::vector<tuning::Candidate>& ranking = rankingFor(args, specText);
  auto [forced, perCollective] = tuning::forcedAlgorithm(specText, args.coll);
  if (forced.empty() || algo::find(args.coll, forced) == nullptr) return ranking[0];
  for (const tuning::Candidate& c : ranking)
    if (forced == c.info->name) return c;
  failNotApplicable(forced, args);
}

const algo::AlgorithmInfo& Planner::chooseByModel(const algo::CollArgs& args,
                                                  const std::string& spec) {
  return *rankingFor(args, spec)[0].info;
}

const std::vector<tuning::Candidate>& Planner::rankingFor(const algo::CollArgs& args,
                                                          const std::string& spec) {
  std::string key = std::to_string(static_cast<int>(args.coll)) + "/" + std::to_string(args.count) +
                    "/" + std::to_string(args.dtype) + "/" + std::to_string(args.op) + "/" +
                    std::to_string(args.root) + "/" + spec;
  if (auto it = choices_.find(key); it != choices_.end()) return it->second;
  const tuning::CostModel m = model(args);
  // A V-collective's arrays: the model times the uniform call of the same total instead. An
  // all-to-all-v's differ between ranks (each rank knows only its own row and column), so no
  // size is known alike on every rank: it is timed at kAllToAllVNominalBytes per rank.
  algo::CollArgs uniform;
  const bool uneven = algo::isUneven(args.coll);
  if (uneven) {
    uniform = args;
    size_t total = 0;
    for (size_t c : args.counts) total += c;
    const size_t n = static_cast<size_t>(std::max(1, args.nranks));
    uniform.count = args.coll == algo::Coll::kAllToAllV
                        ? std::max<size_t>(1, kAllToAllVNominalBytes / dtypeSize(args.dtype) / n)
                        : total / n;
    uniform.counts.clear();
    uniform.displs.clear();
    uniform.sendCounts.clear();
    uniform.sendDispls.clear();
    uniform.hostSendCounts.clear();
  }
  auto candidates = tuning::rankCandidates(uneven ? uniform : args, m);
  if (candidates.empty())
    fail(tuttiInternalError, "no algorithm applies to ", algo::collName(args.coll));
  if (log::enabled(log::Level::kInfo, log::Subsys::kTuning)) {
    std::ostringstream os;
    for (const auto& c : candidates)
      os << " " << c.info->name << "=" << c.predictedSec * 1e6 << "us";
    TUTTI_INFO(kTuning, algo::collName(args.coll)
                            << " count " << args.count << " -> " << candidates[0].info->name
                            << " (predicted:" << os.str() << ")");
  }
  if (choices_.size() > 4096) choices_.clear();
  return choices_[key] = std::move(candidates);
}

std::vector<const algo::AlgorithmInfo*> Planner::fusionCandidates(const algo::CollArgs& args,
                                                                  std::string_view spec) const {
  std::vector<const algo::AlgorithmInfo*> out;
  auto [forced, perCollective] = tuning::forcedAlgorithm(std::string(spec), args.coll);
  if (!forced.empty()) {
    if (const algo::AlgorithmInfo* info = algo::find(args.coll, forced)) {
      if (info->applicable(args)) out.push_back(info);
      return out;
    }
  }
  for (const auto& c : tuning::rankCandidates(args, model(args))) out.push_back(c.info);
  return out;
}

namespace {
bool sameUnevenCall(const algo::CollArgs& a, const algo::CollArgs& b) {
  return a.coll == b.coll && a.dtype == b.dtype && a.op == b.op && a.root == b.root &&
         a.inPlace == b.inPlace && a.windowBytes == b.windowBytes && a.counts == b.counts &&
         a.displs == b.displs && a.sendCounts == b.sendCounts && a.sendDispls == b.sendDispls &&
         a.hostSendCounts == b.hostSendCounts;
}
}  // namespace

const algo::AlgorithmInfo* Planner::needsHostSendCounts(const algo::CollArgs& args,
                                                        std::string_view spec) {
  if (args.coll != algo::Coll::kAllToAllV || args.hostOf.empty()) return nullptr;
  const algo::AlgorithmInfo* info = choose(args, std::string(spec)).info;
  return info->needsHostSendCounts ? info : nullptr;
}

const Planner::CallPlan& Planner::planUneven(const algo::CollArgs& args, std::string_view spec) {
  if (unevenValid_ && unevenSpec_ == spec && sameUnevenCall(args, unevenArgs_)) return unevenPlan_;
  unevenValid_ = false;
  dropLastPlan();  // the last plan is no longer the one in use
  const algo::AlgorithmInfo& info = *choose(args, std::string(spec)).info;
  uneven_.schedule = info.build(args);
  if (tuttiTestMutateSchedule != nullptr) tuttiTestMutateSchedule(&uneven_.schedule, &args);
  uneven_.peers = exec::peersOf(uneven_.schedule);
  uneven_.program.reset();  // direct transfers: never a window-only program
  unevenPlan_ = CallPlan{};
  unevenPlan_.info = &info;
  unevenPlan_.planned = &uneven_;
  unevenArgs_ = args;
  unevenSpec_.assign(spec);
  unevenValid_ = true;
  return unevenPlan_;
}

const Planner::Planned& Planner::build(const algo::AlgorithmInfo& info,
                                       const algo::CollArgs& args) {
  std::string key = std::string(info.name) + "/" + std::to_string(static_cast<int>(args.coll)) +
                    "/" + std::to_string(args.count) + "/" + std::to_string(args.dtype) + "/" +
                    std::to_string(args.op) + "/" + std::to_string(args.root) + "/" +
                    std::to_string(args.windowBytes) + "/" + std::to_string(args.deterministic) +
                    "/" + std::to_string(args.inPlace);
  if (auto it = schedules_.find(key); it != schedules_.end()) return it->second;
  if (schedules_.size() >= 256) {
    schedules_.clear();
    dropLastPlan();  // it pointed into the cache
  }
  Planned p;
  p.schedule = info.build(args);
  if (tuttiTestMutateSchedule != nullptr) tuttiTestMutateSchedule(&p.schedule, &args);
  p.peers = exec::peersOf(p.schedule);
  if (window_ && exec::WindowProgram::applies(p.schedule))
    p.program = std::make_unique<exec::WindowProgram>(p.schedule, *window_);
  return schedules_.emplace(key, std::move(p)).first->second;
}

const Planner::Planned& Planner::neighborPlan(const algo::AlgorithmInfo& info,
                                              const algo::CollArgs& args, uint64_t graphId) {
  std::string key = std::string(info.name) + "/" + std::to_string(graphId) + "/" +
                    std::to_string(args.graphStep) + "/" + std::to_string(args.count) + "/" +
                    std::to_string(args.dtype);
  auto it = neighborSchedules_.find(key);
  if (it == neighborSchedules_.end()) {
    if (neighborSchedules_.size() >= 256) neighborSchedules_.clear();
    Planned p;
    p.schedule = info.build(args);
    p.peers = exec::peersOf(p.schedule);
    it = neighborSchedules_.emplace(key, std::move(p)).first;
  }
  return it->second;
}

}  // namespace tutti
