// Runs one collective through the schedule builders and the in-process simulator with real
// data, and checks the result against a reference computed in float64 / exact integers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
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
