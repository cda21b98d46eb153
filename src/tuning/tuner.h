// Algorithm choice: a latency/bandwidth (alpha-beta-gamma) cost model evaluated on the
// schedule each candidate would run, plus the TUTTI_ALGO override. docs/tuning.md.
#pragma once

#include <string>
#include <vector>

#include "exec/schedule.h"
#include "interfaces/algorithm.h"
#include "tuning/cost_model.h"
#include "tuning/timed_sim.h"

namespace tutti::tuning {

struct Candidate {
  const algo::AlgorithmInfo* info;
  double predictedSec;
};

// Every applicable algorithm for args, cheapest first, timed by timeCollective (exact up to
// 16 ranks, symmetric beyond). Identical on every rank (does not depend on args.rank).
// The line all-reduce comes first wherever it applies (ruleChoice).
std::vector<Candidate> rankCandidates(const algo::CollArgs& args, const CostModel& m);

// The algorithm chosen for args whatever the model predicts, or null: the line all-reduce,
// a protocol of the direct one-shot whose schedule (what the model prices) it shares, and
// measured faster than every algorithm wherever it applies
// (docs/perf/line-allreduce-2026-12-07.md), as NCCL's LL protocol is below its threshold.
const algo::AlgorithmInfo* ruleChoice(const algo::CollArgs& args);

// The algorithm forced by spec for coll ("ring" or "allreduce:ring;broadcast:chain"):
// name is "" when spec names none for that collective; perCollective tells that it came from
// a "coll:name" item (a bare name the collective has no algorithm of leaves it automatic,
// even in a spec that also has per-collective items).
struct ForcedAlgorithm {
  std::string name;
  bool perCollective = false;
};
ForcedAlgorithm forcedAlgorithm(const std::string& spec, algo::Coll coll);

// The first item of spec that names no algorithm ("allreduce:bogus", "nosuchcoll:ring", or a
// bare name no collective has), or "" when every item names one.
std::string unknownAlgorithmItem(const std::string& spec);

}  // namespace tutti::tuning
