// Algorithm choice: a latency/bandwidth (alpha-beta-gamma) cost model evaluated on the
// schedule each candidate would run, plus the TUTTI_ALGO override. docs/tuning.md.
#pragma once

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "exec/schedule.h"

namespace tutti::tuning {

struct LinkCost {
  double alpha;  // seconds per message
  double beta;   // seconds per byte
};

struct CostModel {
  LinkCost intraHost{3e-6, 1.0 / 3.0e9};   // shm: ~3 GB/s per copy on a shared core
  LinkCost interHost{40e-6, 1.0 / 1.0e9};  // tcp: ~1 GB/s
  double gammaPerByte = 1.0 / 4.0e9;       // local reduction
};

struct Candidate {
  const algo::AlgorithmInfo* info;
  double predictedSec;
};

// Predicted time of one rank's schedule: per round, alpha of the slowest link used plus the
// larger of the bytes sent and received times beta, plus reduced bytes times gamma.
double predict(const exec::Schedule& schedule, const algo::CollArgs& args, const CostModel& m);

// Every applicable algorithm for args, cheapest first. Identical on every rank (the
// prediction does not depend on args.rank).
std::vector<Candidate> rankCandidates(const algo::CollArgs& args, const CostModel& m);

// The algorithm forced by spec for coll ("ring" or "allreduce:ring;broadcast:chain"),
// or "" when spec names none for that collective.
std::string forcedAlgorithm(const std::string& spec, algo::Coll coll);

}  // namespace tutti::tuning
