// Issue 68's F1 as cases: groups of small all-reduces (packed into one all-reduce) and mixed
// groups (fused into one schedule) whose member counts differ between ranks but add up alike
// (16 + 32 on most ranks, 32 + 16 on one). The packed or fused call's tag must carry every
// member's shape, so every rank fails with a mismatch instead of returning wrong data.
// fused_identity_test.cc runs them as they are; fused_identity_mutation_test.cc with that
// check removed (tuttiTestFusedIdentityOff), where they must return wrong data with
// tuttiSuccess: the cases catch the defect.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::test {

struct IdentityCase {
  const char* name;
  int ranks;
  const char* transport;  // forced on every rank: "shm" or "tcp"
  bool mixed;             // an all-gather first: the group fuses (else the all-reduces pack)
  tuttiDataType_t dtype;  // float32, float64 or int32
  tuttiRedOp_t op;
  std::vector<size_t> counts;     // every rank's all-reduce counts but oddRank's ...
  std::vector<size_t> oddCounts;  // ... which are these (the same sum)
  int oddRank;
};

const std::vector<IdentityCase>& identityCases();

// How the ranks of one run of a case ended.
struct IdentityOutcome {
  int mismatchErrors = 0;     // tuttiGroupEnd failed naming mismatched collective calls
  int otherErrors = 0;        // failed otherwise
  int rightResults = 0;       // tuttiSuccess, every result equal to the calls' reference
  int wrongResults = 0;       // tuttiSuccess with a wrong result: what F1 found
  int touchedOutputs = 0;     // failed, but a packed call's output changed
  double slowestSeconds = 0;  // the longest tuttiGroupEnd of any rank
  std::string firstError;     // one rank's error text
  std::string firstWrong;     // one rank's first wrong element
  bool ranAll = false;        // every rank process ended normally
  std::string ranks;          // the harness's account of the rank processes
};

// Runs the case's group once on fresh communicators (timeoutMs each).
IdentityOutcome runIdentityCase(const IdentityCase& c, int timeoutMs);

}  // namespace tutti::test
