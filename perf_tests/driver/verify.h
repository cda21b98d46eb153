// The correctness check (-c) on verifiable data (tests/support/verifiable.h, shared with every
// other correctness check): pseudo-random values, different per call seed, rank and element,
// bounded so that every reduction is exact in every element type and order; the expected
// values by a plain loop over the ranks. Only avg on floating types is compared with a
// tolerance (two ulps) because a library may pre-multiply by 1/n; everything else exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tutti/tutti.h"

namespace tutti_perf {

struct Pattern {
  bool reduce = false;  // false: plain data movement
  tuttiRedOp_t op = tuttiSum;
  tuttiDataType_t type = tuttiFloat32;
  int nranks = 1;
  uint64_t seed = 0;
};

double inputValue(const Pattern& p, int rank, size_t i);
// The reduction over all ranks of inputValue(.., i) (avg: the exact average).
double reducedValue(const Pattern& p, size_t i);

// buf[k] = inputValue(p, rank, offset + k) for k < count.
void fillInput(const Pattern& p, int rank, void* buf, size_t count, size_t offset);
// buf[k] = reducedValue(p, offset + k).
void fillReduced(const Pattern& p, void* buf, size_t count, size_t offset);

// Number of elements of got that differ from expected.
int64_t countWrong(const Pattern& p, const void* got, const void* expected, size_t count);

}  // namespace tutti_perf
