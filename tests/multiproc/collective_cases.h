// The collective correctness cases shared by the multi-process tests (shm/tcp in
// collectives_test.cc, tcp across namespaces in tests/netns, ibverbs in tests/verbs): which
// collectives and algorithms exist, and one runner that calls the public API with verifiable
// data (tests/support/verifiable.h: different on every call, rank and element) and checks the
// result against a reference loop, the guard bytes around both buffers and the untouched input.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "interfaces/algorithm.h"
#include "tutti/tutti.h"

namespace tutti::test {

enum class C {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  // The V-collectives with the uniform layout (every count the case's, displacements r *
  // count): the plain collective's data and expected values through the V entry point.
  kAllGatherV,
  kReduceScatterV,
  kGatherV,
  kScatterV,
  kAllToAllV,
};

struct CollDesc {
  C coll;
  const char* name;  // TUTTI_ALGO collective name
  std::vector<const char*> algos;
  bool hasOp;
  algo::Coll algoColl;  // the registry's name for it
};

// Every collective with every algorithm of the registry (algo::registry(), so a new one is
// tested without a change here) plus "auto", all-reduce first.
const std::vector<CollDesc>& colls();

struct Case {
  const CollDesc* coll;
  const char* algo;  // "auto": no TUTTI_ALGO
  tuttiDataType_t dtype;
  tuttiRedOp_t op;
  size_t count;
  bool inPlace;
  int root;
  // Rank-order data (verifiable::Kind::kSumInOrder, sums that round): only for a communicator
  // in deterministic mode (TUTTI_DETERMINISTIC=1), op sum, floating types.
  bool inOrder = false;
};

std::string describe(const Case& c, int n);
// Runs one case on this rank; returns "" (right, or the algorithm does not apply here: the
// same decision on every rank, and *notApplicable is set) or a description of the first
// wrong element / the failure. With a host stream (tuttiStreamCreate) the call is enqueued
// there, and the result checked after tuttiStreamSynchronize.
std::string runCase(tuttiComm_t comm, const Case& c, int rank, int n,
                    bool* notApplicable = nullptr, tuttiStream_t stream = nullptr);
// The matrix: every collective x algorithm x dtype x op x count {0, 1, 7, 1023, large (not
// the V-collectives in the core matrix: they run the plain ones' code at that size)} x
// in/out-of-place x roots (0 and n-1 for broadcast, reduce, gather and scatter; all-to-all in
// place too). The large count is 1 Mi+3; in kCore, at n > 2 ranks, 2 Mi / n + 3 for the
// collectives whose buffers hold n counts (all-gather, reduce-scatter, all-to-all, gather,
// scatter).
// kFull runs the whole product (every dtype, int16 and uint16 included, and every op, the
// bitwise ones on the integer types). kCore runs the product of the other types and the ops
// sum, prod, min, max, avg at the small counts and, at the large count, float32 sum plus one
// type per element width (int8/uint8, float16/bfloat16, 32-bit, 64-bit) with the op and
// in-place rotated by the rank count: the rank counts of the default run (1, 2, 3, 4, 5, 8)
// together cover every type and op at the large count, and 7 (label extended) adds its own
// rotation. kCore adds, rotated rather than multiplied out, int16 / uint16 and the bitwise
// ops: per collective with an op and algorithm band, bor and bxor on rotated integer types and
// one arithmetic op on a 16-bit type; per collective without one and algorithm a 16-bit type;
// counts 1, 7, 1023 and 65539.
enum class Matrix { kCore, kFull };
std::vector<Case> buildCases(int n, Matrix matrix);

}  // namespace tutti::test
