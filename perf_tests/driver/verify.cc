#include "driver/verify.h"

#include "support/verifiable.h"

namespace tutti_perf {

namespace {
tutti::verifiable::Spec specOf(const Pattern& p) {
  return {p.type, tutti::verifiable::kindOf(p.reduce, p.op), p.nranks,
          tutti::verifiable::seedOf({p.seed})};
}
}  // namespace

double inputValue(const Pattern& p, int rank, size_t i) {
  return tutti::verifiable::value(specOf(p), rank, i);
}

double reducedValue(const Pattern& p, size_t i) { return tutti::verifiable::reduced(specOf(p), i); }

void fillInput(const Pattern& p, int rank, void* buf, size_t count, size_t offset) {
  tutti::verifiable::fill(specOf(p), rank, buf, count, offset);
}

void fillReduced(const Pattern& p, void* buf, size_t count, size_t offset) {
  tutti::verifiable::fillReduced(specOf(p), buf, count, offset);
}

int64_t countWrong(const Pattern& p, const void* got, const void* expected, size_t count) {
  return static_cast<int64_t>(tutti::verifiable::countWrong(specOf(p), got, expected, count));
}

}  // namespace tutti_perf
