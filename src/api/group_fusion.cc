#include "group_fusion.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "arg_checks.h"
#include "common/clock.h"
#include "common/dtype.h"

namespace tutti::api {

namespace {

size_t bytesOf(const FusibleAllReduce& a) { return a.count * dtypeSize(a.dtype); }

bool sameKind(const FusibleAllReduce& a, const FusibleAllReduce& b) {
  return rawEnum(a.dtype) == rawEnum(b.dtype) && rawEnum(a.op) == rawEnum(b.op);
}

bool overlap(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

// Whether call k reads what an earlier call of the run [begin, k) writes: packed, it would read
// the value from before the run, so the run ends before it.
bool readsEarlierResult(const std::vector<RecordedCall>& calls, size_t begin, size_t k) {
  const FusibleAllReduce& a = *calls[k].allReduce;
  for (size_t j = begin; j < k; ++j) {
    const FusibleAllReduce& b = *calls[j].allReduce;
    if (overlap(a.send, bytesOf(a), b.recv, bytesOf(b))) return true;
  }
  return false;
}

// The end of the run of calls fusible with calls[begin] (begin + 1 when it is not).
size_t runEnd(const std::vector<RecordedCall>& calls, size_t begin) {
  const auto& first = calls[begin].allReduce;
  if (!first) return begin + 1;
  size_t bytes = 0, end = begin;
  while (end < calls.size() && end - begin < kFuseRunCalls && calls[end].allReduce &&
         sameKind(*first, *calls[end].allReduce) &&
         bytes + bytesOf(*calls[end].allReduce) <= kFuseRunBytes &&
         !readsEarlierResult(calls, begin, end)) {
    bytes += bytesOf(*calls[end].allReduce);
    ++end;
  }
  return std::max(end, begin + 1);
}

void runPacked(Communicator& comm, const std::vector<RecordedCall>& calls, size_t begin,
               size_t end) {
  const FusibleAllReduce& first = *calls[begin].allReduce;
  size_t total = 0;
  for (size_t k = begin; k < end; ++k) total += calls[k].allReduce->count;
  const size_t es = dtypeSize(first.dtype);
  std::vector<std::byte> packed(total * es);
  size_t at = 0;
  for (size_t k = begin; k < end; ++k) {
    const FusibleAllReduce& a = *calls[k].allReduce;
    if (a.count > 0) std::memcpy(packed.data() + at, a.send, a.count * es);
    at += a.count * es;
  }
  const double t0 = nowSeconds();
  comm.allReduce(packed.data(), packed.data(), total, first.dtype, first.op);
  const double share = (nowSeconds() - t0) / static_cast<double>(end - begin);
  at = 0;
  for (size_t k = begin; k < end; ++k) {
    const FusibleAllReduce& a = *calls[k].allReduce;
    if (a.count > 0) std::memcpy(a.recv, packed.data() + at, a.count * es);
    at += a.count * es;
    if (a.perf != nullptr) a.perf->add("AllReduce", a.count * es, share, true);
  }
}

}  // namespace

void runRecordedCalls(Communicator& comm, const std::vector<RecordedCall>& calls) {
  for (size_t begin = 0; begin < calls.size();) {
    const size_t end = runEnd(calls, begin);
    if (end - begin >= 2)
      runPacked(comm, calls, begin, end);
    else
      calls[begin].run();
    begin = end;
  }
}

}  // namespace tutti::api
