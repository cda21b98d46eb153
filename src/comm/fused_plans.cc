#include "comm/fused_plans.h"

#include <string>
#include <utility>

#include "comm/call_tag.h"
#include "common/dtype.h"
#include "common/log.h"
#include "exec/schedule_merge.h"

namespace tutti {

namespace {

std::string shapeOf(const algo::CollArgs& a) {
  return std::to_string(static_cast<int>(a.coll)) + "/" + std::to_string(a.count) + "/" +
         std::to_string(a.dtype) + "/" + std::to_string(a.op) + "/" + std::to_string(a.root) + "/" +
         std::to_string(a.inPlace) + "/" + std::to_string(a.deterministic);
}

constexpr size_t kMaxCachedPlans = 64;

}  // namespace

std::optional<exec::Schedule> FusedPlans::mergeableSchedule(const algo::AlgorithmInfo& info,
                                                            const algo::CollArgs& args) {
  if (!info.applicable(args)) return std::nullopt;
  std::vector<exec::Schedule> all;
  all.reserve(static_cast<size_t>(args.nranks));
  for (int r = 0; r < args.nranks; ++r) {
    algo::CollArgs a = args;
    a.rank = r;
    all.push_back(info.build(a));
    if (!exec::mergeable(all.back())) return std::nullopt;
  }
  if (!exec::roundsAligned(all)) return std::nullopt;
  return std::move(all[static_cast<size_t>(args.rank)]);
}

const FusedPlans::Plan* FusedPlans::plan(std::span<const algo::CollArgs> members, Planner& planner,
                                         std::string_view spec) {
  if (members.empty() || members[0].nranks > kMaxRanks) return nullptr;
  std::string key(spec);
  for (const auto& m : members) key += "|" + shapeOf(m);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second ? &*it->second : nullptr;
  if (plans_.size() >= kMaxCachedPlans) plans_.clear();
  std::vector<exec::Schedule> schedules;
  std::string names;
  for (const auto& args : members) {
    std::optional<exec::Schedule> s;
    const char* name = nullptr;
    for (const algo::AlgorithmInfo* info : planner.fusionCandidates(args, spec))
      if ((s = mergeableSchedule(*info, args))) {
        name = info->name;
        break;
      }
    if (!s) {
      TUTTI_INFO(kTuning, "fused group of " << members.size() << ": " << algo::collName(args.coll)
                                            << " count " << args.count
                                            << " has no algorithm that merges: call by call");
      plans_[key] = std::nullopt;
      return nullptr;
    }
    names += std::string(names.empty() ? "" : " ") + name;
    schedules.push_back(std::move(*s));
  }
  std::vector<exec::MergeMember> parts;
  for (size_t j = 0; j < schedules.size(); ++j)
    parts.push_back({&schedules[j], static_cast<uint16_t>(fusedInputBuf(j)),
                     static_cast<uint16_t>(fusedOutputBuf(j))});
  Plan p;
  p.schedule = exec::mergeSchedules(parts, "fused");
  p.peers = exec::peersOf(p.schedule);
  p.digest = ShapeDigest().addBytes(key).value();
  TUTTI_INFO(kTuning, "fused group of " << members.size() << " -> " << p.schedule.rounds.size()
                                        << " rounds (" << names << ")");
  return &*(plans_[key] = std::move(p));
}

}  // namespace tutti
