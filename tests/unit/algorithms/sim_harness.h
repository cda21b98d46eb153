// Runs one collective through the schedule builders and the in-process simulator with
// verifiable data (tests/support/verifiable.h: new values on every run), and checks the exact
// result against a reference loop, the guard bytes around every rank's buffers and the
// untouched inputs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "interfaces/algorithm.h"
#include "exec/simulator.h"

namespace tutti::algo::testing {

struct Case {
  const AlgorithmInfo* algo = nullptr;
  int n = 1;
  size_t count = 0;
  tuttiDataType_t dtype = tuttiFloat32;
  tuttiRedOp_t op = tuttiSum;
  bool inPlace = false;
  bool deterministic = false;
  int root = 0;
  std::vector<int> ringOrder;
  std::vector<int> hostOf;
  // Shared window per rank (direct algorithms); small so that they run many chunks.
  size_t windowBytes = 1024;
  bool moveData = true;
  uint64_t seed = 0;  // mixed with a per-process run counter into the call seed
  exec::LinkCostFn cost;
};

struct Outcome {
  std::string error;  // empty when the results are right
  exec::SimResult stats;
  std::vector<std::vector<std::byte>> outputs;  // per rank: the output bytes
};

std::string describe(const Case& c);
CollArgs argsFor(const Case& c, int rank);
Outcome run(const Case& c);

// Permutation used as a non-trivial ring order: even ranks first, then odd ranks.
std::vector<int> evensThenOdds(int n);

}  // namespace tutti::algo::testing
