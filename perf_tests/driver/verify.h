// Exactly predictable data (nccl-tests style): every rank's input and every expected result
// is a small integer that each element type represents exactly, so any reduction order gives
// bit-identical results. Integer types wrap modulo 2^bits, which is order independent too.
//
//   no reduction (gather, broadcast, alltoall, sendrecv):  v(r,i) = (7i + 13r + seed) mod 127
//   sum:  v(r,i) = (7i + 3r + seed) mod K,  K = clamp(240/n, 2, 16)       (sum <= 240 < 2^8)
//   prod: v(r,i) = 2 if (i + r + seed) mod P == 0 else 1, P = max(4, ceil(n/14)) (<= 2^14)
//   min/max: v(r,i) = (5i + 3r + seed) mod 11, minus 5 for signed types
//   avg:  v(r,i) = w(i) + d(r), w(i) = 1 + (7i + seed) mod (Kavg-1), sum over r of d(r) = 0
//         (d = +1,-1,+1,-1,...,0 for an odd last rank), so avg = w(i) exactly.
// Only avg on floating types is compared with a tolerance (n * epsilon of the type) because
// a library may pre-multiply each input by 1/n; everything else is compared exactly.
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

int64_t inputValue(const Pattern& p, int rank, size_t i);
// The reduction over all ranks of inputValue(.., i) before wrapping (avg: the average).
int64_t reducedValue(const Pattern& p, size_t i);

// buf[k] = inputValue(p, rank, offset + k) for k < count.
void fillInput(const Pattern& p, int rank, void* buf, size_t count, size_t offset);
// buf[k] = reducedValue(p, offset + k).
void fillReduced(const Pattern& p, void* buf, size_t count, size_t offset);

// Number of elements of got that differ from expected.
int64_t countWrong(const Pattern& p, const void* got, const void* expected, size_t count);

}  // namespace tutti_perf
