#include "driver/verify.h"

#include <algorithm>
#include <cmath>

#include "driver/types.h"

namespace tutti_perf {

namespace {
int64_t sumModulus(int n) { return std::clamp<int64_t>(240 / std::max(n, 1), 2, 16); }
int64_t avgModulus(int n) { return std::clamp<int64_t>(120 / std::max(n, 1), 2, 16); }
int64_t prodPeriod(int n) { return std::max<int64_t>(4, (n + 13) / 14); }
int64_t avgDelta(int rank, int n) {
  if (n % 2 == 1 && rank == n - 1) return 0;
  return rank % 2 == 0 ? 1 : -1;
}
double epsilon(tuttiDataType_t t) {
  switch (t) {
    case tuttiFloat16:
      return std::ldexp(1.0, -10);
    case tuttiBfloat16:
      return std::ldexp(1.0, -7);
    case tuttiFloat32:
      return std::ldexp(1.0, -23);
    default:
      return std::ldexp(1.0, -52);
  }
}
}  // namespace

int64_t inputValue(const Pattern& p, int rank, size_t i) {
  const uint64_t s = p.seed;
  const uint64_t r = static_cast<uint64_t>(rank);
  if (!p.reduce) return static_cast<int64_t>((7 * i + 13 * r + s) % 127);
  switch (p.op) {
    case tuttiSum:
      return static_cast<int64_t>((7 * i + 3 * r + s) % sumModulus(p.nranks));
    case tuttiProd:
      return (i + r + s) % prodPeriod(p.nranks) == 0 ? 2 : 1;
    case tuttiMax:
    case tuttiMin:
      return static_cast<int64_t>((5 * i + 3 * r + s) % 11) - (isSigned(p.type) ? 5 : 0);
    case tuttiAvg: {
      const int64_t w = 1 + static_cast<int64_t>((7 * i + s) % (avgModulus(p.nranks) - 1));
      return w + avgDelta(rank, p.nranks);
    }
    default:
      return 0;
  }
}

int64_t reducedValue(const Pattern& p, size_t i) {
  int64_t acc = inputValue(p, 0, i);
  for (int r = 1; r < p.nranks; ++r) {
    const int64_t v = inputValue(p, r, i);
    switch (p.op) {
      case tuttiSum:
      case tuttiAvg:
        acc += v;
        break;
      case tuttiProd:
        acc *= v;
        break;
      case tuttiMax:
        acc = std::max(acc, v);
        break;
      case tuttiMin:
        acc = std::min(acc, v);
        break;
      default:
        break;
    }
  }
  if (p.op == tuttiAvg) acc /= p.nranks;  // exact: the sum is n * w(i)
  return acc;
}

void fillInput(const Pattern& p, int rank, void* buf, size_t count, size_t offset) {
  for (size_t k = 0; k < count; ++k) storeValue(p.type, buf, k, inputValue(p, rank, offset + k));
}

void fillReduced(const Pattern& p, void* buf, size_t count, size_t offset) {
  for (size_t k = 0; k < count; ++k) storeValue(p.type, buf, k, reducedValue(p, offset + k));
}

int64_t countWrong(const Pattern& p, const void* got, const void* expected, size_t count) {
  int64_t wrong = 0;
  if (!isFloat(p.type)) {
    for (size_t k = 0; k < count; ++k) {
      wrong += loadInt(p.type, got, k) != loadInt(p.type, expected, k);
    }
    return wrong;
  }
  const double tol = (p.reduce && p.op == tuttiAvg) ? p.nranks * epsilon(p.type) : 0.0;
  for (size_t k = 0; k < count; ++k) {
    const double g = loadFloat(p.type, got, k);
    const double e = loadFloat(p.type, expected, k);
    if (tol == 0.0) {
      wrong += !(g == e);
    } else {
      wrong += !(std::fabs(g - e) <= tol * std::fabs(e));
    }
  }
  return wrong;
}

}  // namespace tutti_perf
